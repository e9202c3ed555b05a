package anthropic_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/pgw-go/pgw/anthropic"
	"github.com/pgw-go/pgw/config"
	"github.com/pgw-go/pgw/transport"
)

// BenchmarkToolCallRoundTrip maps the tool request, sends it to a loopback
// server and reads the recorded stream of text and two tool calls.
func BenchmarkToolCallRoundTrip(b *testing.B) {
	body := mustRead(b, "stream_text_and_tool_use.sse")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write(body)
	}))
	defer srv.Close()
	src := transport.Source{Name: "claude", BaseURL: srv.URL + "/v1", Provider: config.ProviderAnthropic, Model: "m"}
	c := anthropic.New()
	req := toolRequest()
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		st, err := c.ChatStream(ctx, src, req)
		if err != nil {
			b.Fatal(err)
		}
		for {
			if _, err := st.Recv(); err != nil {
				if err != io.EOF {
					b.Fatal(err)
				}
				break
			}
		}
		_ = st.Close()
	}
}
