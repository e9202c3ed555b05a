package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestAMalformedRedisURLSaysWhatIsWrongAndHidesIt: a Redis URL that is not
// even a URL (Go's URL parser refuses it, and its error quotes the whole
// value) is reported by the parser's reason, with exit status 2, never by a
// cut fragment of the quote and never with the value or any part of the
// password.
func TestAMalformedRedisURLSaysWhatIsWrongAndHidesIt(t *testing.T) {
	for _, tc := range []struct {
		url, why string
	}{
		{"::hunter2", "missing protocol scheme"},
		{"redis://:hun%zzter2@127.0.0.1:6379/0", "invalid URL escape"},
		{"redis://:hunter2@127.0.0.1:63x9/0", "invalid port"},
	} {
		t.Setenv("PGW_REDIS_URL", tc.url)
		code, out, errOut := pgw("status")
		assert.Equal(t, exitUsage, code, tc.url)
		assert.Empty(t, out, tc.url)
		assert.Contains(t, errOut, "invalid PGW_REDIS_URL: "+tc.why+" (legal: redis://", tc.url)
		assert.NotContains(t, errOut, "hunter2", tc.url)
		assert.NotContains(t, errOut, "hun%", tc.url)
		assert.NotContains(t, errOut, "%zz", tc.url)
		assert.NotContains(t, errOut, "63x9", tc.url)
		assert.NotContains(t, errOut, `parse "`, tc.url)
	}
}

// TestARedisURLWithoutSlashesIsRefused: "redis:pw@host" parses as a URL with
// no host, which go-redis would dial as its default 127.0.0.1:6379, so
// that pgw open could force a state in a Redis the operator never named. It
// is a usage error instead, from the flag and from the environment alike.
func TestARedisURLWithoutSlashesIsRefused(t *testing.T) {
	t.Setenv("PGW_REDIS_URL", "redis:hunter2@10.255.255.1:6379")
	code, out, errOut := pgw("open", "CHAT", "primary")
	assert.Equal(t, exitUsage, code)
	assert.Empty(t, out)
	assert.Contains(t, errOut, "invalid PGW_REDIS_URL: missing // after the scheme (legal: redis://")
	assert.NotContains(t, errOut, "hunter2")
	assert.NotContains(t, errOut, "6379")

	t.Setenv("PGW_REDIS_URL", "")
	code, _, errOut = pgw("-redis", "rediss:hunter2@10.255.255.1:6379", "status")
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, errOut, "invalid -redis: missing // after the scheme")
	assert.NotContains(t, errOut, "hunter2")
}
