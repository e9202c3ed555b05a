package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/pgw-go/pgw"
)

// The governed http.Client's overhead (GatewayClient.HTTPClient): the same
// chat request made the way an SDK makes it — an *http.Client POSTing JSON
// and reading the whole answer — once with a plain http.Client straight to a
// loopback upstream, once with the governed client, which picks the source,
// rewrites the request, classifies the answer and settles the quota. The
// difference is what pgw adds to an SDK request. The same is measured for
// gw.Chat (the default transport, a streamed answer collected) against the
// raw streamed request, and for a streamed request through the governed
// client; cmd/ratios prints each overhead and governed ÷ Chat.

const (
	chatJSONAnswer = `{"id":"c","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"Hello there."},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}}`
	chatSSEAnswer  = "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\n\n" +
		"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hello \"}}]}\n\n" +
		"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"there.\"}}]}\n\n" +
		"data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n" +
		"data: {\"choices\":[],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":2,\"total_tokens\":5}}\n\n" +
		"data: [DONE]\n\n"
)

var (
	chatRequestJSON   = []byte(`{"model":"bench","messages":[{"role":"user","content":"Say hello"}]}`)
	chatRequestStream = []byte(`{"model":"bench","messages":[{"role":"user","content":"Say hello"}],"stream":true,"stream_options":{"include_usage":true}}`)
)

// chatUpstream answers chat completions: SSE when the body asks to stream.
func chatUpstream(b *testing.B) string {
	b.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Stream bool `json:"stream"`
		}
		_ = json.NewDecoder(r.Body).Decode(&body)
		if body.Stream {
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = io.WriteString(w, chatSSEAnswer)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, chatJSONAnswer)
	}))
	b.Cleanup(srv.Close)
	return srv.URL + "/v1"
}

func pooledClient(b *testing.B) *http.Client {
	tr := &http.Transport{MaxIdleConns: 256, MaxIdleConnsPerHost: 256, IdleConnTimeout: time.Minute}
	b.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

// sdkPost is what an SDK does: POST JSON, read the whole answer.
func sdkPost(ctx context.Context, hc *http.Client, url string, body []byte) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer sdk-key")
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return &pgw.HTTPError{StatusCode: resp.StatusCode}
	}
	return nil
}

func chatGateway(b *testing.B, base string) *pgw.GatewayClient {
	b.Helper()
	s := pgw.Settings{Scopes: []pgw.ScopeSettings{{
		Name: pgw.ScopeChat,
		Sources: []pgw.Source{{
			Name: "up", BaseURL: base, Timeout: 10 * time.Second,
			RPM: 10_000_000, MaxInFlight: 1024,
		}},
	}}}
	gw, err := pgw.New(context.Background(), s, pgw.WithLogger(discardLogger), pgw.WithHTTPClient(pooledClient(b)))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = gw.Close() })
	return gw
}

// sdkLeaves are the calls compared, each on its own upstream and pool.
var sdkLeaves = []struct {
	name string
	make func(b *testing.B) func(context.Context) error
}{
	{"json/plain", func(b *testing.B) func(context.Context) error {
		url, hc := chatUpstream(b)+"/chat/completions", pooledClient(b)
		return func(ctx context.Context) error { return sdkPost(ctx, hc, url, chatRequestJSON) }
	}},
	{"json/governed", func(b *testing.B) func(context.Context) error {
		hc := chatGateway(b, chatUpstream(b)).HTTPClient(pgw.ScopeChat)
		url := pgw.SDKBaseURL + "chat/completions"
		return func(ctx context.Context) error { return sdkPost(ctx, hc, url, chatRequestJSON) }
	}},
	{"stream/plain", func(b *testing.B) func(context.Context) error {
		url, hc := chatUpstream(b)+"/chat/completions", pooledClient(b)
		return func(ctx context.Context) error { return sdkPost(ctx, hc, url, chatRequestStream) }
	}},
	{"stream/governed", func(b *testing.B) func(context.Context) error {
		hc := chatGateway(b, chatUpstream(b)).HTTPClient(pgw.ScopeChat)
		url := pgw.SDKBaseURL + "chat/completions"
		return func(ctx context.Context) error { return sdkPost(ctx, hc, url, chatRequestStream) }
	}},
	{"stream/chat", func(b *testing.B) func(context.Context) error {
		gw := chatGateway(b, chatUpstream(b))
		req := pgw.ChatRequest{Messages: []pgw.Message{{Role: "user", Content: "Say hello"}}}
		return func(ctx context.Context) error {
			resp, err := gw.Chat(ctx, req)
			if err == nil && !strings.HasPrefix(resp.Content, "Hello") {
				b.Fatalf("answer %q", resp.Content)
			}
			return err
		}
	}},
}

func BenchmarkSDKClient(b *testing.B) {
	for _, leaf := range sdkLeaves {
		b.Run("serial/"+leaf.name, func(b *testing.B) {
			call := leaf.make(b)
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if err := call(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	for _, leaf := range sdkLeaves {
		b.Run("parallel/"+leaf.name, func(b *testing.B) {
			call := leaf.make(b)
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if err := call(ctx); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}
