package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
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

// chatHandler answers chat completions: SSE when the body asks to stream.
var chatHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
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
})

// An upstream is where a leaf's requests go: its base URL and the client
// (pool) that reaches it.
type upstream func(b *testing.B) (base string, hc *http.Client)

// loopback is a chat upstream on a loopback httptest server.
func loopback(b *testing.B) (string, *http.Client) {
	b.Helper()
	srv := httptest.NewServer(chatHandler)
	b.Cleanup(srv.Close)
	tr := &http.Transport{MaxIdleConns: 256, MaxIdleConnsPerHost: 256, IdleConnTimeout: time.Minute}
	b.Cleanup(tr.CloseIdleConnections)
	return srv.URL + "/v1", &http.Client{Transport: tr}
}

// inMemory answers in the calling goroutine, without a network: what is
// left of a call is the client's own work, free of the loopback's noise.
func inMemory(*testing.B) (string, *http.Client) {
	return "http://upstream.invalid/v1", &http.Client{Transport: memTransport{}}
}

type memTransport struct{}

func (memTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	rec := httptest.NewRecorder()
	chatHandler.ServeHTTP(rec, r)
	if r.Body != nil {
		_ = r.Body.Close()
	}
	return rec.Result(), nil
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

func chatGateway(b *testing.B, base string, hc *http.Client) *pgw.GatewayClient {
	b.Helper()
	s := pgw.Settings{Scopes: []pgw.ScopeSettings{{
		Name: pgw.ScopeChat,
		Sources: []pgw.Source{{
			Name: "up", BaseURL: base, Timeout: 10 * time.Second,
			RPM: 10_000_000, MaxInFlight: 1024,
		}},
	}}}
	gw, err := pgw.New(context.Background(), s, pgw.WithLogger(discardLogger), pgw.WithHTTPClient(hc))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = gw.Close() })
	return gw
}

// sdkLeaves are the calls compared, each on its own upstream and pool.
var sdkLeaves = []struct {
	name string
	make func(b *testing.B, up upstream) func(context.Context) error
}{
	{"json/plain", func(b *testing.B, up upstream) func(context.Context) error {
		base, hc := up(b)
		url := base + "/chat/completions"
		return func(ctx context.Context) error { return sdkPost(ctx, hc, url, chatRequestJSON) }
	}},
	{"json/governed", func(b *testing.B, up upstream) func(context.Context) error {
		base, pool := up(b)
		hc := chatGateway(b, base, pool).HTTPClient(pgw.ScopeChat)
		url := pgw.SDKBaseURL + "chat/completions"
		return func(ctx context.Context) error { return sdkPost(ctx, hc, url, chatRequestJSON) }
	}},
	{"stream/plain", func(b *testing.B, up upstream) func(context.Context) error {
		base, hc := up(b)
		url := base + "/chat/completions"
		return func(ctx context.Context) error { return sdkPost(ctx, hc, url, chatRequestStream) }
	}},
	{"stream/governed", func(b *testing.B, up upstream) func(context.Context) error {
		base, pool := up(b)
		hc := chatGateway(b, base, pool).HTTPClient(pgw.ScopeChat)
		url := pgw.SDKBaseURL + "chat/completions"
		return func(ctx context.Context) error { return sdkPost(ctx, hc, url, chatRequestStream) }
	}},
	{"stream/chat", func(b *testing.B, up upstream) func(context.Context) error {
		base, pool := up(b)
		gw := chatGateway(b, base, pool)
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

// processCPU is the process's user and system CPU time so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func BenchmarkSDKClient(b *testing.B) {
	for _, where := range []struct {
		name string
		up   upstream
	}{{"loopback", loopback}, {"memory", inMemory}} {
		for _, mode := range []string{"serial", "parallel"} {
			for _, leaf := range sdkLeaves {
				b.Run(where.name+"/"+mode+"/"+leaf.name, func(b *testing.B) {
					call := leaf.make(b, where.up)
					ctx := context.Background()
					b.ReportAllocs()
					b.ResetTimer()
					if mode == "serial" {
						cpu0 := processCPU()
						for b.Loop() {
							if err := call(ctx); err != nil {
								b.Fatal(err)
							}
						}
						// CPU time, not wall time: on a loaded machine the
						// wall clock mostly measures waiting for a core.
						b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "cpu-ns/op")
						return
					}
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
	}
}
