package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// A Redis URL pasted where the cluster seeds belong (PGW_REDIS_CLUSTER_ADDRS
// or -cluster) carries its password: the command refuses it as a usage
// error naming where it came from and what is legal, and never prints the
// password.
func TestClusterAddressesWithAPasswordAreRefusedWithoutShowingIt(t *testing.T) {
	const marker = "MRKclu7Q"
	for _, v := range []string{
		"redis://:" + marker + "@127.0.0.1:1",
		"u:" + marker + "@127.0.0.1:1",
		marker + "@127.0.0.1:1",
		"127.0.0.1:1,rediss://default:" + marker + "@127.0.0.1:2",
		"127.0.0.1",
	} {
		t.Setenv("PGW_REDIS_CLUSTER_ADDRS", v)
		code, out, errOut := pgw("-timeout", "1s", "status")
		assert.Equal(t, exitUsage, code, v)
		assert.NotContains(t, out+errOut, marker, v)
		assert.Contains(t, errOut, "invalid PGW_REDIS_CLUSTER_ADDRS", v)
		assert.Contains(t, errOut, "host:port", v)

		t.Setenv("PGW_REDIS_CLUSTER_ADDRS", "")
		code, out, errOut = pgw("-timeout", "1s", "-cluster", v, "open", "CHAT", "a")
		assert.Equal(t, exitUsage, code, v)
		assert.NotContains(t, out+errOut, marker, v)
		assert.Contains(t, errOut, "invalid -cluster", v)
	}
}
