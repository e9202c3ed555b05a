package openai_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/config"
	"github.com/pgw-go/pgw/internal/testutil"
	"github.com/pgw-go/pgw/openai"
	"github.com/pgw-go/pgw/transport"
)

// now is the fixed clock of the Retry-After tests: a whole second, as HTTP
// dates have no finer resolution.
var now = testutil.Epoch

func TestHTTPStatusMapsToHTTPError(t *testing.T) {
	tests := []struct {
		name       string
		reply      testutil.Reply
		wantStatus int
		wantRetry  time.Duration
		wantMsg    string
	}{
		{name: "429 with Retry-After seconds", reply: testutil.Reply{Status: 429, RetryAfter: "7", Message: "Rate limit reached"},
			wantStatus: 429, wantRetry: 7 * time.Second, wantMsg: "Rate limit reached (rate_limit_exceeded)"},
		{name: "429 with Retry-After HTTP date", reply: testutil.Reply{Status: 429, RetryAfter: now.Add(30 * time.Second).Format(http.TimeFormat)},
			wantStatus: 429, wantRetry: 30 * time.Second, wantMsg: "Too Many Requests (rate_limit_exceeded)"},
		{name: "429 with a date already past", reply: testutil.Reply{Status: 429, RetryAfter: now.Add(-time.Minute).Format(http.TimeFormat)},
			wantStatus: 429, wantRetry: 0, wantMsg: "Too Many Requests (rate_limit_exceeded)"},
		{name: "429 insufficient quota keeps its code", reply: testutil.Reply{Status: 429, Message: "You exceeded your current quota", Code: "insufficient_quota"},
			wantStatus: 429, wantMsg: "You exceeded your current quota (insufficient_quota)"},
		{name: "500", reply: testutil.Reply{Status: 500, Message: "The server had an error"},
			wantStatus: 500, wantMsg: "The server had an error (server_error)"},
		{name: "503 with Retry-After", reply: testutil.Reply{Status: 503, RetryAfter: "1.5"},
			wantStatus: 503, wantRetry: 1500 * time.Millisecond, wantMsg: "Service Unavailable (server_error)"},
		{name: "401", reply: testutil.Reply{Status: 401, Message: "Invalid authentication", Code: "invalid_api_key"},
			wantStatus: 401, wantMsg: "Invalid authentication (invalid_api_key)"},
		{name: "400", reply: testutil.Reply{Status: 400, Message: "messages is required"},
			wantStatus: 400, wantMsg: "messages is required (invalid_request_error)"},
		{name: "malformed Retry-After is ignored", reply: testutil.Reply{Status: 429, RetryAfter: "soon"},
			wantStatus: 429, wantRetry: 0, wantMsg: "Too Many Requests (rate_limit_exceeded)"},
	}
	c := openai.New(openai.WithNow(func() time.Time { return now }))
	calls := map[string]func(src transport.Source) error{
		"chat": func(src transport.Source) error {
			_, err := c.ChatStream(context.Background(), src, hello())
			return err
		},
		"embed": func(src transport.Source) error {
			_, err := c.Embed(context.Background(), src, transport.EmbedRequest{Inputs: []string{"x"}})
			return err
		},
		"ocr": func(src transport.Source) error {
			_, err := c.OCR(context.Background(), src, transport.OCRRequest{Image: pngBytes})
			return err
		},
	}
	eps := map[string]testutil.Endpoint{"chat": testutil.Chat, "embed": testutil.Embeddings, "ocr": testutil.OCR}
	for _, tt := range tests {
		for call, do := range calls {
			t.Run(call+"/"+tt.name, func(t *testing.T) {
				u := testutil.NewUpstream(t)
				u.Enqueue(eps[call], tt.reply)
				err := do(sourceFor(u))
				var he *transport.HTTPError
				require.ErrorAs(t, err, &he)
				assert.Equal(t, tt.wantStatus, he.StatusCode)
				assert.Equal(t, tt.wantRetry, he.RetryAfter)
				assert.Equal(t, tt.wantMsg, he.Message)
			})
		}
	}
}

func TestRetryAfterMsWinsOverRetryAfter(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After-Ms", "250")
		w.Header().Set("Retry-After", "1")
		w.WriteHeader(http.StatusTooManyRequests)
	}))
	defer srv.Close()
	_, err := openai.New().Embed(context.Background(), transport.Source{BaseURL: srv.URL}, transport.EmbedRequest{Inputs: []string{"x"}})
	var he *transport.HTTPError
	require.ErrorAs(t, err, &he)
	assert.Equal(t, 250*time.Millisecond, he.RetryAfter)
	assert.Equal(t, "Too Many Requests", he.Message, "an empty body gives the status text")
}

func TestHugeRetryAfterIsClampedToADay(t *testing.T) {
	u := testutil.NewUpstream(t)
	u.Enqueue(testutil.Embeddings, testutil.Reply{Status: 429, RetryAfter: "99999999999999999999"})
	_, err := openai.New().Embed(context.Background(), sourceFor(u), transport.EmbedRequest{Inputs: []string{"x"}})
	var he *transport.HTTPError
	require.ErrorAs(t, err, &he)
	assert.Equal(t, 24*time.Hour, he.RetryAfter)
}

func TestNonJSONErrorBodyIsFoldedAndLimited(t *testing.T) {
	page := "<html>\n<body>\n  bad gateway " + strings.Repeat("é", 2000) + "</body></html>"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(http.StatusBadGateway)
		_, _ = w.Write([]byte(page))
	}))
	defer srv.Close()
	_, err := openai.New().Embed(context.Background(), transport.Source{BaseURL: srv.URL}, transport.EmbedRequest{Inputs: []string{"x"}})
	var he *transport.HTTPError
	require.ErrorAs(t, err, &he)
	assert.Equal(t, 502, he.StatusCode)
	assert.True(t, strings.HasPrefix(he.Message, "<html> <body> bad gateway éé"), he.Message)
	assert.LessOrEqual(t, len(he.Message), 512+len("…"))
	assert.True(t, strings.HasSuffix(he.Message, "…"))
	assert.NotContains(t, he.Message, "\n")
}

func TestAPIKeyNeverAppearsInErrors(t *testing.T) {
	const wrongKey = "sk-wrong-SECRET-987654321"
	tests := []struct {
		name  string
		setup func(u *testutil.Upstream)
		call  func(c *openai.Client, src transport.Source) error
	}{
		{name: "401 echoing the key on chat", setup: func(u *testutil.Upstream) { u.RequireAPIKey("sk-right") },
			call: func(c *openai.Client, src transport.Source) error {
				_, err := c.ChatStream(context.Background(), src, hello())
				return err
			}},
		{name: "401 echoing the key on embeddings", setup: func(u *testutil.Upstream) { u.RequireAPIKey("sk-right") },
			call: func(c *openai.Client, src transport.Source) error {
				_, err := c.Embed(context.Background(), src, transport.EmbedRequest{Inputs: []string{"x"}})
				return err
			}},
		{name: "500 echoing the key on OCR", setup: func(u *testutil.Upstream) {
			u.Enqueue(testutil.OCR, testutil.Reply{Status: 500, Message: "upstream said Bearer " + wrongKey})
		}, call: func(c *openai.Client, src transport.Source) error {
			_, err := c.OCR(context.Background(), src, transport.OCRRequest{Image: pngBytes})
			return err
		}},
		{name: "stream cut", setup: func(u *testutil.Upstream) { u.Enqueue(testutil.Chat, testutil.Reply{Cut: true, CutAfter: 1}) },
			call: func(c *openai.Client, src transport.Source) error {
				st, err := c.ChatStream(context.Background(), src, hello())
				if err != nil {
					return err
				}
				defer st.Close()
				for {
					if _, err := st.Recv(); err != nil {
						return err
					}
				}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u := testutil.NewUpstream(t)
			tt.setup(u)
			src := sourceFor(u)
			src.APIKey = config.NewSecret(wrongKey)
			err := tt.call(openai.New(), src)
			require.Error(t, err)
			assert.NotContains(t, err.Error(), wrongKey)
			assert.NotContains(t, err.Error(), "SECRET")
			var he *transport.HTTPError
			if errors.As(err, &he) {
				assert.Contains(t, he.Message, "[redacted]")
			}
		})
	}
	// The key did reach the upstream, where it belongs.
	u := testutil.NewUpstream(t)
	src := sourceFor(u)
	src.APIKey = config.NewSecret(wrongKey)
	_, err := openai.New().Embed(context.Background(), src, transport.EmbedRequest{Inputs: []string{"x"}})
	require.NoError(t, err)
	assert.Equal(t, "Bearer "+wrongKey, u.LastAuthorization())
}

func TestNoAuthorizationHeaderWithoutAKey(t *testing.T) {
	u := testutil.NewUpstream(t)
	src := sourceFor(u)
	src.APIKey = config.Secret{}
	_, err := openai.New().Embed(context.Background(), src, transport.EmbedRequest{Inputs: []string{"x"}})
	require.NoError(t, err)
	assert.Empty(t, u.LastAuthorization())
}
