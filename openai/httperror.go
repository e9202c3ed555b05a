package openai

import (
	"encoding/json"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/pgw-go/pgw/internal/errs"
	"github.com/pgw-go/pgw/provider"
)

const (
	// maxErrorBody is how much of an error answer is read: enough for any
	// OpenAI error object, bounded against a proxy's HTML page.
	maxErrorBody = 64 << 10
	// maxMessage bounds HTTPError.Message; longer upstream text is cut.
	maxMessage = 512
	// maxRetryAfter clamps absurd Retry-After values (and keeps huge ones
	// from overflowing time.Duration).
	maxRetryAfter = 24 * time.Hour
	// redacted replaces the API key wherever an upstream echoes it.
	redacted = "[redacted]"
)

// httpError turns a non-2xx answer into *errs.HTTPError. The caller closes
// the body.
func (c *Client) httpError(resp *http.Response, apiKey string) *errs.HTTPError {
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	ra := retryAfter(resp.Header, c.now())
	if g, ok := provider.ParseGeminiError(body, c.now()); ok && resp.StatusCode == http.StatusTooManyRequests {
		ra = max(ra, g.Delay) // Gemini says when in the body, a daily quota until its reset
	}
	return &errs.HTTPError{
		StatusCode: resp.StatusCode,
		RetryAfter: ra,
		Message:    errorMessage(resp.StatusCode, body, apiKey),
	}
}

// retryAfter reads how long the upstream asks us to wait: the
// retry-after-ms header (sent by OpenAI, read first by its SDKs), else
// Retry-After as delta seconds (fractions accepted) or an HTTP date relative
// to now. Absent, malformed or past values give 0; values are clamped to
// maxRetryAfter.
func retryAfter(h http.Header, now time.Time) time.Duration {
	if v := strings.TrimSpace(h.Get("Retry-After-Ms")); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil {
			return clampRetryAfter(ms / 1e3)
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if secs, err := strconv.ParseFloat(v, 64); err == nil {
		return clampRetryAfter(secs)
	}
	if t, err := http.ParseTime(v); err == nil {
		d := t.Sub(now)
		if d <= 0 {
			return 0
		}
		return min(d, maxRetryAfter)
	}
	return 0
}

func clampRetryAfter(secs float64) time.Duration {
	if math.IsNaN(secs) || secs <= 0 {
		return 0
	}
	if secs >= maxRetryAfter.Seconds() {
		return maxRetryAfter
	}
	return time.Duration(secs * float64(time.Second))
}

// wireError is the OpenAI error object: {"error": {"message", "type", "code"}}.
// code is a string on OpenAI and a number on some compatible servers.
type wireError struct {
	Message string          `json:"message"`
	Type    string          `json:"type"`
	Code    json.RawMessage `json:"code"`
}

// text renders the error for HTTPError.Message: the message, then the code
// (or type) in parentheses when it adds something — the classifier may need
// "insufficient_quota" to tell an exhausted account from a throttle.
func (w *wireError) text() string {
	msg := strings.TrimSpace(w.Message)
	tag := strings.Trim(strings.TrimSpace(string(w.Code)), `"`)
	if tag == "" || tag == "null" {
		tag = strings.TrimSpace(w.Type)
	}
	if tag != "" && !strings.Contains(msg, tag) {
		if msg == "" {
			return tag
		}
		msg += " (" + tag + ")"
	}
	return msg
}

// errorMessage extracts a short, key-free message from an error body: the
// OpenAI error's message when the body is one, else the body's text, else
// the status text.
func errorMessage(status int, body []byte, apiKey string) string {
	var envelope struct {
		Error json.RawMessage `json:"error"`
	}
	msg := ""
	if json.Unmarshal(body, &envelope) == nil && len(envelope.Error) > 0 {
		var we wireError
		if json.Unmarshal(envelope.Error, &we) == nil {
			msg = we.text()
		} else {
			// Some servers send "error": "text".
			var s string
			if json.Unmarshal(envelope.Error, &s) == nil {
				msg = s
			}
		}
	}
	if msg == "" && utf8.Valid(body) {
		msg = string(body)
	}
	msg = sanitize(msg, apiKey)
	if msg == "" {
		msg = http.StatusText(status)
	}
	return msg
}

// sanitize redacts apiKey, folds whitespace (an HTML page becomes one line)
// and cuts the result to maxMessage bytes on a rune boundary.
func sanitize(msg, apiKey string) string {
	if apiKey != "" {
		msg = strings.ReplaceAll(msg, apiKey, redacted)
	}
	msg = strings.Join(strings.Fields(msg), " ")
	if len(msg) > maxMessage {
		cut := maxMessage
		for cut > 0 && !utf8.RuneStart(msg[cut]) {
			cut--
		}
		msg = msg[:cut] + "…"
	}
	return msg
}
