package provider

import (
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// MaxRetryAfter caps what RetryAfter returns: a larger value (or one that
// would overflow time.Duration) is clamped to it.
const MaxRetryAfter = 24 * time.Hour

// RetryAfter reads how long an upstream asks the caller to wait, in the order
// the providers' own SDKs read it: retry-after-ms (milliseconds, fractions
// accepted; OpenAI and Azure), then Retry-After as delta seconds (fractions
// accepted) or as an HTTP date relative to now. It reports false when no
// header holds a usable value; a date in the past gives (0, true). Values
// are clamped to MaxRetryAfter.
func RetryAfter(h http.Header, now time.Time) (time.Duration, bool) {
	if v := strings.TrimSpace(h.Get("Retry-After-Ms")); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && !math.IsNaN(ms) && ms >= 0 {
			return clampSeconds(ms / 1e3), true
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0, false
	}
	if secs, err := strconv.ParseFloat(v, 64); err == nil {
		if math.IsNaN(secs) || secs < 0 {
			return 0, false
		}
		return clampSeconds(secs), true
	}
	if t, err := http.ParseTime(v); err == nil {
		d := t.Sub(now)
		if d <= 0 {
			return 0, true
		}
		return min(d, MaxRetryAfter), true
	}
	return 0, false
}

func clampSeconds(secs float64) time.Duration {
	if secs >= MaxRetryAfter.Seconds() {
		return MaxRetryAfter
	}
	return time.Duration(secs * float64(time.Second))
}
