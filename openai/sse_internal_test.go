package openai

import (
	"errors"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// readEvents reads every event of body and the error that ended the read.
func readEvents(r io.Reader) ([]string, error) {
	s := newSSEReader(r)
	var events []string
	for {
		data, err := s.next()
		if err != nil {
			return events, err
		}
		events = append(events, string(data))
	}
}

func TestSSEReaderParsesEvents(t *testing.T) {
	tests := []struct {
		name string
		body string
		want []string
	}{
		{name: "one event per data line", body: "data: a\n\ndata: b\n\n", want: []string{"a", "b"}},
		{name: "CRLF line endings", body: "data: a\r\n\r\ndata: b\r\n\r\n", want: []string{"a", "b"}},
		{name: "no space after the colon", body: "data:a\n\n", want: []string{"a"}},
		{name: "only one leading space is removed", body: "data:  a\n\n", want: []string{" a"}},
		{name: "multi-line data joined by newline", body: "data: a\ndata: b\n\n", want: []string{"a\nb"}},
		{name: "comments and other fields ignored", body: ": keep-alive\n\nevent: message\nid: 7\nretry: 10\ndata: a\n\n", want: []string{"a"}},
		{name: "blank lines between events", body: "\n\n\ndata: a\n\n\n", want: []string{"a"}},
		{name: "last event without blank line", body: "data: a\n\ndata: [DONE]\n", want: []string{"a", "[DONE]"}},
		{name: "last line cut in the middle is dropped", body: "data: a\n\ndata: {\"cho", want: []string{"a"}},
		{name: "empty body", body: "", want: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// One byte per Read: events must not depend on read boundaries.
			events, err := readEvents(iotest.OneByteReader(strings.NewReader(tt.body)))
			assert.ErrorIs(t, err, io.EOF)
			assert.Equal(t, tt.want, events)
		})
	}
}

func TestSSEReaderLongLines(t *testing.T) {
	long := strings.Repeat("x", 100<<10) // past the bufio buffer
	events, err := readEvents(strings.NewReader("data: " + long + "\n\n"))
	assert.ErrorIs(t, err, io.EOF)
	assert.Equal(t, []string{long}, events)

	_, err = readEvents(strings.NewReader("data: " + strings.Repeat("x", maxSSELine+1) + "\n\n"))
	assert.ErrorIs(t, err, errSSELineTooLong)
}

func TestSSEReaderPassesReadErrorsOn(t *testing.T) {
	boom := errors.New("connection reset")
	events, err := readEvents(io.MultiReader(strings.NewReader("data: a\n\ndata: b"), iotest.ErrReader(boom)))
	assert.Equal(t, []string{"a"}, events)
	assert.ErrorIs(t, err, boom)
}

func TestRetryAfterParsing(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		name    string
		headers map[string]string
		want    time.Duration
	}{
		{name: "absent", want: 0},
		{name: "delta seconds", headers: map[string]string{"Retry-After": "12"}, want: 12 * time.Second},
		{name: "fractional seconds", headers: map[string]string{"Retry-After": "0.25"}, want: 250 * time.Millisecond},
		{name: "spaces around", headers: map[string]string{"Retry-After": " 3 "}, want: 3 * time.Second},
		{name: "HTTP date", headers: map[string]string{"Retry-After": now.Add(90 * time.Second).Format(http.TimeFormat)}, want: 90 * time.Second},
		{name: "RFC 850 date", headers: map[string]string{"Retry-After": now.Add(5 * time.Second).Format(time.RFC850)}, want: 5 * time.Second},
		{name: "past date", headers: map[string]string{"Retry-After": now.Add(-5 * time.Second).Format(http.TimeFormat)}, want: 0},
		{name: "far date clamped", headers: map[string]string{"Retry-After": now.Add(1000 * time.Hour).Format(http.TimeFormat)}, want: maxRetryAfter},
		{name: "negative", headers: map[string]string{"Retry-After": "-4"}, want: 0},
		{name: "NaN", headers: map[string]string{"Retry-After": "NaN"}, want: 0},
		{name: "infinite", headers: map[string]string{"Retry-After": "Inf"}, want: maxRetryAfter},
		{name: "overflowing", headers: map[string]string{"Retry-After": strconv.FormatFloat(math.MaxFloat64, 'f', -1, 64)}, want: maxRetryAfter},
		{name: "garbage", headers: map[string]string{"Retry-After": "later"}, want: 0},
		{name: "retry-after-ms wins", headers: map[string]string{"Retry-After-Ms": "1500", "Retry-After": "9"}, want: 1500 * time.Millisecond},
		{name: "bad retry-after-ms falls back", headers: map[string]string{"Retry-After-Ms": "x", "Retry-After": "9"}, want: 9 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := http.Header{}
			for k, v := range tt.headers {
				h.Set(k, v)
			}
			assert.Equal(t, tt.want, retryAfter(h, now))
		})
	}
}

func TestErrorMessageShapes(t *testing.T) {
	tests := []struct {
		name string
		body string
		want string
	}{
		{name: "openai error object", body: `{"error":{"message":"bad model","type":"invalid_request_error","code":"model_not_found"}}`, want: "bad model (model_not_found)"},
		{name: "type used without code", body: `{"error":{"message":"oops","type":"server_error","code":null}}`, want: "oops (server_error)"},
		{name: "code already in message", body: `{"error":{"message":"insufficient_quota: pay up","code":"insufficient_quota"}}`, want: "insufficient_quota: pay up"},
		{name: "numeric code", body: `{"error":{"message":"busy","code":503}}`, want: "busy (503)"},
		{name: "error as a string", body: `{"error":"plain text error"}`, want: "plain text error"},
		{name: "plain text body", body: "  upstream\n timed out  ", want: "upstream timed out"},
		{name: "empty body", body: "", want: "Service Unavailable"},
		{name: "binary body", body: "\xff\xfe\x00", want: "Service Unavailable"},
		{name: "key redacted", body: `{"error":{"message":"Incorrect API key provided: sk-abc"}}`, want: "Incorrect API key provided: [redacted]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, errorMessage(http.StatusServiceUnavailable, []byte(tt.body), "sk-abc"))
		})
	}
}
