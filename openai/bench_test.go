package openai_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/pgw-go/pgw/openai"
	"github.com/pgw-go/pgw/transport"
)

// BenchmarkToolCallRoundTrip encodes the tool request, sends it to a
// loopback server and reads the recorded stream of two parallel tool calls.
func BenchmarkToolCallRoundTrip(b *testing.B) {
	body, err := os.ReadFile(filepath.Join("testdata", "stream_parallel_tool_calls.sse"))
	if err != nil {
		b.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write(body)
	}))
	defer srv.Close()
	src := transport.Source{Name: "oa", BaseURL: srv.URL + "/v1", Model: "m"}
	c := openai.New()
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
