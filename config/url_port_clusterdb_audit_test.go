package config_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/pgw-go/pgw/config"
)

// TestURLsThatCannotBeDialledAreReported: url.Parse takes any digits as a
// port and an empty host name before one, so BASE_URL and PGW_REDIS_URL
// check them: a port outside [1, 65535] (or a BASE_URL with no host name)
// is a problem naming the key, the value and why, not a dial error on
// every attempt later.
func TestURLsThatCannotBeDialledAreReported(t *testing.T) {
	for _, tc := range []struct{ key, raw, shown, why string }{
		{"CHAT__A__BASE_URL", "https://api.example.com:99999/v1", "https://api.example.com:99999/v1", "port 99999 is not in [1, 65535]"},
		{"CHAT__A__BASE_URL", "http://h:0/v1", "http://h:0/v1", "port 0 is not in [1, 65535]"},
		{"CHAT__A__BASE_URL", "https://:8443/v1", "https://:8443/v1", "no host name before the port"},
		{"CHAT__A__BASE_URL", "https://u:pw@h:70000/v1?key=k", "https://<redacted>@h:70000/v1?<redacted>", "with a host"},
		{"PGW_REDIS_URL", "redis://:pw@h:65536/0", "redis://<redacted>@h:65536/0", "port 65536 is not in [1, 65535]"},
	} {
		t.Run(tc.raw, func(t *testing.T) {
			ce := mustFail(t, base(tc.key, tc.raw))
			assert.Equal(t, []string{tc.key}, keys(ce), "%v", ce)
			p := problem(t, ce, tc.key)
			assert.Equal(t, tc.shown, p.Value)
			assert.Contains(t, p.Legal, tc.why)
		})
	}
	for _, ok := range []string{"https://h:1/v1", "https://h:65535/v1", "https://h:/v1", "http://[::1]:8080/v1"} {
		mustLoad(t, base("CHAT__A__BASE_URL", ok))
	}
	mustLoad(t, base("PGW_REDIS_URL", "redis://h:6380/2"))
	mustLoad(t, base("PGW_REDIS_URL", "unix:///tmp/redis.sock?db=1"))

	in := codeSettings()
	in.Scopes[0].Sources[0].BaseURL = "https://h:99999/v1"
	assert.Contains(t, keys(validateErr(t, in)), "CHAT__"+config.Key(in.Scopes[0].Sources[0].Name)+"__BASE_URL")
}

// TestClusterWithANonZeroDatabaseIsReported: Redis Cluster has database 0
// only, and the cluster client takes no database from PGW_REDIS_URL, so a
// URL naming another one would share database 0 with whoever else uses
// it, silently. That pair is a problem of PGW_REDIS_URL, its password
// hidden.
func TestClusterWithANonZeroDatabaseIsReported(t *testing.T) {
	ce := mustFail(t, base("PGW_BREAKER_BACKEND", "redis",
		"PGW_REDIS_URL", "redis://:hunter2@h:6379/3", "PGW_REDIS_CLUSTER_ADDRS", "a:7000,b:7000"))
	assert.Equal(t, []string{"PGW_REDIS_URL"}, keys(ce), "%v", ce)
	p := problem(t, ce, "PGW_REDIS_URL")
	assert.Equal(t, "redis://<redacted>@h:6379/3", p.Value)
	assert.Contains(t, p.Legal, "database 0")
	assert.Contains(t, p.Legal, "PGW_REDIS_PREFIX")
	assert.NotContains(t, ce.Error(), "hunter2")

	mustLoad(t, base("PGW_REDIS_URL", "redis://:pw@h:6379/0", "PGW_REDIS_CLUSTER_ADDRS", "a:7000"))
	mustLoad(t, base("PGW_REDIS_URL", "redis://:pw@h:6379", "PGW_REDIS_CLUSTER_ADDRS", "a:7000"))
	mustLoad(t, base("PGW_REDIS_URL", "redis://:pw@h:6379/3"))

	in := codeSettings()
	in.Redis.URL = config.NewSecret("redis://h/5")
	in.Redis.ClusterAddrs = []string{"a:7000"}
	assert.Equal(t, []string{"PGW_REDIS_URL"}, keys(validateErr(t, in)))
}
