package config_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw"
	"github.com/pgw-go/pgw/config"
)

// A Redis URL pasted into PGW_REDIS_CLUSTER_ADDRS (where host:port seeds
// belong) carries its password with it: the problem names the key, says
// what is legal, and never shows the password, neither from the environment
// nor from Settings built in code.
func TestClusterAddrsWithAPasswordNeverShowIt(t *testing.T) {
	const mark = "hunter2CLUSTER"
	for _, v := range []string{
		"redis://:" + mark + "@10.0.0.1:7000",
		"redis://user:" + mark + "@10.0.0.1:7000,10.0.0.2:7000",
		"rediss://default:" + mark + "@10.0.0.1:7000?dial_timeout=1s",
		"user:" + mark + "@10.0.0.1:7000",
		mark + "@10.0.0.1:7000",
		"10.0.0.1:7000?password=" + mark,
	} {
		env := map[string]string{
			"PGW_BREAKER_BACKEND":     "redis",
			"PGW_REDIS_CLUSTER_ADDRS": v,
			"CHAT__SOURCES":           "primary",
			"CHAT__PRIMARY__BASE_URL": "https://api.openai.com/v1",
		}
		_, err := config.FromMap(env)
		require.Error(t, err, v)
		var ce *pgw.ConfigError
		require.ErrorAs(t, err, &ce)
		assert.Contains(t, err.Error(), "PGW_REDIS_CLUSTER_ADDRS", v)
		assert.Contains(t, err.Error(), "host:port", v)
		js, _ := json.Marshal(ce)
		for _, out := range []string{err.Error(), fmt.Sprintf("%+v", err), fmt.Sprintf("%#v", ce), string(js)} {
			assert.NotContains(t, out, mark, "value %q", v)
		}

		s := config.Settings{BreakerBackend: config.BackendRedis,
			Redis:  config.RedisSettings{ClusterAddrs: strings.Split(v, ",")},
			Scopes: []config.ScopeSettings{{Name: "CHAT", Sources: []config.Source{{Name: "primary"}}}}}
		err = s.Validate()
		require.Error(t, err, v)
		assert.NotContains(t, err.Error(), mark, "Validate, value %q", v)
	}
}
