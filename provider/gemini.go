package provider

import (
	"encoding/json"
	"net/http"
	"strings"
	"time"
)

// GeminiHold is what a Gemini 429 body says about when to try again.
type GeminiHold struct {
	// Delay is how long to hold the source off: RetryInfo's retryDelay, or
	// for a per-day quota the time until that quota resets (midnight
	// Pacific time) when that is later. At most MaxRetryAfter.
	Delay time.Duration
	// QuotaID is the first violated quota's id, e.g.
	// "GenerateRequestsPerDayPerProjectPerModel-FreeTier"; empty when the
	// body names none.
	QuotaID string
	// PerDay reports a daily quota: retrying after a short delay cannot
	// succeed before it resets.
	PerDay bool
}

// geminiReset is where Gemini's daily quotas reset: midnight Pacific time.
var geminiReset = func() *time.Location {
	if loc, err := time.LoadLocation("America/Los_Angeles"); err == nil {
		return loc
	}
	return time.FixedZone("PST", -8*3600)
}()

// ParseGeminiError reads google.rpc.RetryInfo and google.rpc.QuotaFailure
// from a Gemini error body ({"error": {"details": [...]}}, or the same
// object inside a one-element array, as the OpenAI-compatible endpoint
// sends it), received at now. ok is false when the body holds neither.
func ParseGeminiError(body []byte, now time.Time) (GeminiHold, bool) {
	type detail struct {
		Type       string `json:"@type"`
		RetryDelay string `json:"retryDelay"`
		Violations []struct {
			QuotaID     string `json:"quotaId"`
			QuotaMetric string `json:"quotaMetric"`
		} `json:"violations"`
	}
	type envelope struct {
		Error struct {
			Details []detail `json:"details"`
		} `json:"error"`
	}
	var e envelope
	if json.Unmarshal(body, &e) != nil {
		var list []envelope
		if json.Unmarshal(body, &list) != nil || len(list) == 0 {
			return GeminiHold{}, false
		}
		e = list[0]
	}
	var g GeminiHold
	found := false
	for _, d := range e.Error.Details {
		switch {
		case strings.HasSuffix(d.Type, "google.rpc.RetryInfo"):
			if v, err := time.ParseDuration(strings.TrimSpace(d.RetryDelay)); err == nil && v >= 0 {
				g.Delay, found = min(v, MaxRetryAfter), true
			}
		case strings.HasSuffix(d.Type, "google.rpc.QuotaFailure"):
			for _, v := range d.Violations {
				if g.QuotaID == "" {
					g.QuotaID = v.QuotaID
				}
				if strings.Contains(v.QuotaID, "PerDay") || strings.Contains(strings.ToLower(v.QuotaMetric), "per_day") {
					g.PerDay, g.QuotaID = true, v.QuotaID
				}
			}
			found = found || g.QuotaID != ""
		}
	}
	if g.PerDay {
		local := now.In(geminiReset)
		midnight := time.Date(local.Year(), local.Month(), local.Day()+1, 0, 0, 0, 0, geminiReset)
		g.Delay = min(max(g.Delay, midnight.Sub(now)), MaxRetryAfter)
	}
	return g, found
}

// ErrorRetryAfter is how long an error answer of status asks the caller to
// wait: its Retry-After headers (RetryAfter), and for a 429 whose body is
// Gemini's (ParseGeminiError) the body's retry delay — for a per-day quota,
// the time until it resets — when that is later. It reports false when
// the answer says nothing about when to try again.
func ErrorRetryAfter(status int, h http.Header, body []byte, now time.Time) (time.Duration, bool) {
	ra, ok := RetryAfter(h, now)
	if status == http.StatusTooManyRequests {
		if g, found := ParseGeminiError(body, now); found && (g.Delay > 0 || g.PerDay) {
			ra, ok = max(ra, g.Delay), true
		}
	}
	return ra, ok
}
