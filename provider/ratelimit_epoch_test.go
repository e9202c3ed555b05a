package provider_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/pgw-go/pgw/provider"
)

// Some OpenAI-compatible servers (proxies such as LiteLLM) send the reset
// as the Unix time at which the window resets, in seconds or milliseconds,
// under OpenAI's header names. Read as "seconds from now" it would hold a
// spent source off for MaxReset and report a clamp; it is the instant it
// names.
func TestUnixTimeResetsAreInstants(t *testing.T) {
	in := now.Add(20 * time.Second)
	for name, v := range map[string]string{
		"seconds":      strconv.FormatInt(in.Unix(), 10),
		"milliseconds": strconv.FormatInt(in.UnixMilli(), 10),
		"fractional":   strconv.FormatFloat(float64(in.UnixMilli())/1e3, 'f', 3, 64),
	} {
		t.Run(name, func(t *testing.T) {
			r := provider.ParseRateLimits(provider.DialectOpenAI, header(
				"x-ratelimit-limit-requests", "60", "x-ratelimit-remaining-requests", "0",
				"x-ratelimit-reset-requests", v), now)
			assert.Equal(t, 20*time.Second, r.Requests.Reset)
			assert.Empty(t, r.Clamped)
			assert.Empty(t, r.Malformed)
		})
	}
	t.Run("a Unix time in the past is a past reset", func(t *testing.T) {
		r := provider.ParseRateLimits(provider.DialectOpenAI, header(
			"x-ratelimit-limit-requests", "60", "x-ratelimit-remaining-requests", "0",
			"x-ratelimit-reset-requests", strconv.FormatInt(now.Add(-time.Minute).Unix(), 10)), now)
		assert.Equal(t, provider.MinReset, r.Requests.Reset)
		assert.Empty(t, r.Clamped)
	})
	t.Run("plain seconds to wait are still seconds", func(t *testing.T) {
		d, ok := provider.ParseReset("86400", now)
		assert.True(t, ok)
		assert.Equal(t, 24*time.Hour, d)
	})
}
