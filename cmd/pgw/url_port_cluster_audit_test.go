package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestCLIRedisURLThatCannotServeIsReportedWhereItCameFrom: a Redis URL whose
// port no dial can use, or that names a database other than 0 for a
// cluster, is a usage error naming where the URL came from — not a dial
// error, nor a cluster command silently run against database 0 — and its
// password shows nowhere.
func TestCLIRedisURLThatCannotServeIsReportedWhereItCameFrom(t *testing.T) {
	t.Setenv("PGW_REDIS_URL", "redis://:hunter2@127.0.0.1:99999/0")
	code, out, errOut := pgw("status")
	assert.Equal(t, exitUsage, code)
	assert.Empty(t, out)
	assert.Contains(t, errOut, "invalid PGW_REDIS_URL: port 99999 is not in [1, 65535]")
	assert.NotContains(t, errOut, "hunter2")

	code, _, errOut = pgw("-redis", "redis://:hunter2@127.0.0.1:6379/3", "-cluster", "127.0.0.1:1", "status")
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, errOut, "invalid -redis: database 3 with a cluster")
	assert.NotContains(t, errOut, "hunter2")

	t.Setenv("PGW_REDIS_URL", "redis://:hunter2@127.0.0.1:6379/2")
	t.Setenv("PGW_REDIS_CLUSTER_ADDRS", "127.0.0.1:1")
	code, _, errOut = pgw("status")
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, errOut, "invalid PGW_REDIS_URL: database 2 with a cluster")
	assert.NotContains(t, errOut, "hunter2")
}
