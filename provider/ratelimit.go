package provider

import (
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/pgw-go/pgw/config"
)

// MaxReset caps how far ahead a rate-limit header's reset may hold a source
// off: a per-minute (or per-day) window that claims to reset later than
// this is taken to reset at MaxReset, and the value is reported as clamped.
// An explicit Retry-After (or Gemini's retry delay) is capped by
// MaxRetryAfter instead.
const MaxReset = 15 * time.Minute

// MinReset is the reset given to advertised figures whose reset is missing,
// unreadable or already past (clock skew): they hold for this long, until a
// newer answer says more.
const MinReset = time.Second

// Dialect is the rate-limit vocabulary of a source: which headers (and
// error bodies) tell its limits, and over which window they count.
type Dialect string

// The dialects pgw reads.
const (
	// DialectOpenAI: x-ratelimit-{limit,remaining,reset}-{requests,tokens},
	// resets as Go-like durations ("6m0s", "120ms", "1s"); limits per
	// minute.
	DialectOpenAI Dialect = "openai"
	// DialectAzure: the OpenAI headers, plus retry-after-ms on a 429.
	DialectAzure Dialect = "azure"
	// DialectAnthropic: anthropic-ratelimit-{requests,tokens,input-tokens,
	// output-tokens}-{limit,remaining,reset}, resets as RFC 3339 instants.
	DialectAnthropic Dialect = "anthropic"
	// DialectGroq: the OpenAI header names, but the requests limit counts
	// per day (the tokens limit per minute).
	DialectGroq Dialect = "groq"
	// DialectGemini: Google's OpenAI-compatible endpoint; no rate-limit
	// headers, a 429 body with google.rpc.RetryInfo and QuotaFailure.
	DialectGemini Dialect = "gemini"
)

// DialectOf returns the dialect of a source of provider p at baseURL: the
// provider's own for azure and anthropic; for OpenAI-compatible sources the
// host tells Groq (groq.com) and Gemini (generativelanguage.googleapis.com)
// from OpenAI proper.
func DialectOf(p config.Provider, baseURL string) Dialect {
	switch p {
	case config.ProviderAzure:
		return DialectAzure
	case config.ProviderAnthropic:
		return DialectAnthropic
	}
	host := ""
	if u, err := url.Parse(strings.TrimSpace(baseURL)); err == nil {
		host = strings.ToLower(u.Hostname())
	}
	switch {
	case host == "groq.com" || strings.HasSuffix(host, ".groq.com"):
		return DialectGroq
	case host == "generativelanguage.googleapis.com":
		return DialectGemini
	}
	return DialectOpenAI
}

// Window is what one answer advertises about one limit: its size, what is
// left of it and when it is whole again. Fields that were absent (or
// unreadable, or a -1 "no limit" sentinel) are -1 (Limit, Remaining) or 0
// (Reset).
type Window struct {
	// Limit is the window's size (requests or tokens); -1 unknown.
	Limit int64
	// Remaining is what is left of it; -1 unknown.
	Remaining int64
	// Reset is how long until the window is whole again, measured from the
	// answer, at most MaxReset; MinReset when Remaining is known but the
	// reset is missing, unreadable or past.
	Reset time.Duration
	// PerDay reports a daily limit (Groq's requests): it is not comparable
	// with a per-minute RPM.
	PerDay bool
}

// Known reports whether the answer said what is left.
func (w Window) Known() bool { return w.Remaining >= 0 }

// RateLimits is what one upstream answer says about the source's limits.
type RateLimits struct {
	// Requests and Tokens are the request and token windows. For Anthropic,
	// Tokens is the tokens window (input and output together, as a call's
	// estimate counts them), or when the answer carries none the tighter of
	// its input-tokens and output-tokens windows.
	Requests, Tokens Window
	// RetryAfter is the answer's explicit wait (Retry-After, retry-after-ms,
	// Gemini's retry delay), 0 when none; HasRetryAfter tells an explicit 0.
	RetryAfter    time.Duration
	HasRetryAfter bool
	// Malformed names the headers (or body fields) whose values were
	// ignored because they could not be read; Clamped those whose reset
	// was cut to MaxReset.
	Malformed, Clamped []string
}

// Any reports whether the answer advertised anything.
func (r RateLimits) Any() bool { return r.Requests.Known() || r.Tokens.Known() || r.HasRetryAfter }

// ParseRateLimits reads the rate-limit headers of an answer in dialect d,
// received at now. Missing headers leave their fields unknown; unreadable
// ones are listed in Malformed and ignored; nothing here fails.
func ParseRateLimits(d Dialect, h http.Header, now time.Time) RateLimits {
	r := RateLimits{Requests: unknownWindow(), Tokens: unknownWindow()}
	switch d {
	case DialectAnthropic:
		r.Requests = r.window(h, "anthropic-ratelimit-requests-", now)
		// A call's token estimate is its prompt and its answer bound
		// together, so it is reserved against the window that counts both,
		// tokens-*; the input- and output-token windows count one side each
		// (reserving a whole estimate against the output window would refuse
		// calls the upstream has room for). Without tokens-*, the tighter
		// of the two stands in.
		r.Tokens = r.window(h, "anthropic-ratelimit-tokens-", now)
		if !r.Tokens.Known() {
			for _, kind := range []string{"input-tokens", "output-tokens"} {
				w := r.window(h, "anthropic-ratelimit-"+kind+"-", now)
				if w.Known() && (!r.Tokens.Known() || w.Remaining < r.Tokens.Remaining) {
					r.Tokens = w
				}
			}
		}
	default:
		r.Requests = r.openAIWindow(h, "requests", now)
		r.Tokens = r.openAIWindow(h, "tokens", now)
		if d == DialectGroq {
			r.Requests.PerDay = true
		}
	}
	if ra, ok := RetryAfter(h, now); ok {
		r.RetryAfter, r.HasRetryAfter = ra, true
	} else if h.Get("Retry-After") != "" || h.Get("Retry-After-Ms") != "" {
		r.Malformed = append(r.Malformed, "retry-after")
	}
	return r
}

func unknownWindow() Window { return Window{Limit: -1, Remaining: -1} }

// openAIWindow reads x-ratelimit-{limit,remaining,reset}-kind.
func (r *RateLimits) openAIWindow(h http.Header, kind string, now time.Time) Window {
	w := Window{
		Limit:     r.count(h, "x-ratelimit-limit-"+kind),
		Remaining: r.count(h, "x-ratelimit-remaining-"+kind),
	}
	r.reset(&w, h, "x-ratelimit-reset-"+kind, now)
	return w
}

// window reads prefix{limit,remaining,reset} (Anthropic).
func (r *RateLimits) window(h http.Header, prefix string, now time.Time) Window {
	w := Window{Limit: r.count(h, prefix+"limit"), Remaining: r.count(h, prefix+"remaining")}
	r.reset(&w, h, prefix+"reset", now)
	return w
}

// count reads a count header: digits, optionally with thousands commas or
// underscores, or an integral decimal ("59.0"); -1 when absent or the -1
// "no limit" sentinel; -1 and listed as malformed when unreadable.
func (r *RateLimits) count(h http.Header, name string) int64 {
	v := strings.TrimSpace(h.Get(name))
	if v == "" {
		return -1
	}
	n, ok := ParseCount(v)
	if !ok {
		r.Malformed = append(r.Malformed, name)
		return -1
	}
	return n
}

// ParseCount reads a rate-limit count: "1500", "1,500", "1_500", "59.0".
// The -1 sentinel ("no limit") gives (-1, true): read, and no figure.
// Anything unreadable, fractional or otherwise negative gives false.
func ParseCount(v string) (int64, bool) {
	v = strings.TrimSpace(v)
	if v == "-1" {
		return -1, true
	}
	v = strings.NewReplacer(",", "", "_", "", " ", "").Replace(v)
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		return n, n >= 0
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || math.IsNaN(f) || f < 0 || f > 1<<53 || f != math.Trunc(f) {
		return 0, false
	}
	return int64(f), true
}

// reset reads a reset header into w.Reset: a duration ("6m0s", "120ms",
// "2m59.56s"), plain seconds ("20", "0.5"), or an RFC 3339 instant (always
// for Anthropic). Past or missing resets of a known window become MinReset;
// resets beyond MaxReset are clamped and reported.
func (r *RateLimits) reset(w *Window, h http.Header, name string, now time.Time) {
	v := strings.TrimSpace(h.Get(name))
	var d time.Duration
	if v != "" {
		var ok bool
		if d, ok = ParseReset(v, now); !ok {
			r.Malformed = append(r.Malformed, name)
		}
	}
	if !w.Known() {
		return
	}
	if d > MaxReset {
		d = MaxReset
		r.Clamped = append(r.Clamped, name)
	}
	if d <= 0 {
		d = MinReset
	}
	w.Reset = d
}

// Plain numbers from these on are Unix times (in seconds, then in
// milliseconds), as some OpenAI-compatible proxies send their resets: a
// wait of 10⁹ seconds is 31 years.
const (
	unixSeconds = 1e9
	unixMillis  = 1e12
)

// ParseReset reads a reset value received at now as the time until the
// reset: a Go-like duration ("6m0s", "1h2m3s", "120ms", "7.66s"), plain
// seconds ("20", "0.5"), a Unix time in seconds or milliseconds
// ("1755780020", "1755780020000": a plain number of 10⁹ or more), or an
// RFC 3339 instant ("2025-08-21T12:40:59Z"). A past instant gives (0,
// true); unreadable or negative values give false.
func ParseReset(v string, now time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if d, err := time.ParseDuration(v); err == nil {
		return d, d >= 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if math.IsNaN(s) || s < 0 {
			return 0, false
		}
		if s >= unixSeconds && !math.IsInf(s, 0) {
			// No wait is 31 years long: this is the Unix time of the reset,
			// in milliseconds from unixMillis on.
			ns := s * 1e9
			if s >= unixMillis {
				ns = s * 1e6
			}
			if ns >= math.MaxInt64 {
				return 0, false
			}
			return max(time.Unix(0, int64(ns)).Sub(now), 0), true
		}
		if s >= MaxRetryAfter.Seconds() {
			return MaxRetryAfter, true
		}
		return time.Duration(s * float64(time.Second)), true
	}
	if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
		return max(t.Sub(now), 0), true
	}
	return 0, false
}
