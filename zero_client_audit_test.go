package pgw_test

import (
	"context"
	"io"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/pgw-go/pgw"
)

// A GatewayClient that New did not build — its zero value, as
// new(pgw.GatewayClient) or a struct field never assigned gives — answers
// every method, Close included, with an error saying so, instead of
// panicking or pretending it has no scope configured.
func TestAZeroValueClientSaysItWasNotBuiltByNew(t *testing.T) {
	gw := new(pgw.GatewayClient)
	ctx := context.Background()
	calls := map[string]func() error{
		"Close":              gw.Close,
		"Chat":               func() error { _, err := gw.Chat(ctx, hello()); return err },
		"ChatStream":         func() error { _, err := gw.ChatStream(ctx, hello()); return err },
		"Embed":              func() error { _, err := gw.Embed(ctx, pgw.EmbedRequest{Inputs: []string{"x"}}); return err },
		"OCR":                func() error { _, err := gw.OCR(ctx, pgw.OCRRequest{Image: tinyPNG(t)}); return err },
		"OCRPages":           func() error { _, err := gw.OCRPages(ctx, []pgw.OCRRequest{{Image: tinyPNG(t)}}); return err },
		"Snapshot":           func() error { _, err := gw.Snapshot(ctx, "CHAT", "a"); return err },
		"Admission":          func() error { _, err := gw.Admission("CHAT"); return err },
		"Latency":            func() error { _, err := gw.Latency("CHAT"); return err },
		"WriteLatencyStatus": func() error { return gw.WriteLatencyStatus(io.Discard) },
		"Call": func() error {
			_, err := pgw.Call(ctx, gw, "CHAT", func(context.Context, pgw.Source) (int, pgw.Usage, error) {
				t.Error("a zero-value client ran a Call function")
				return 0, pgw.Usage{}, nil
			})
			return err
		},
		"CallStream": func() error {
			_, err := pgw.CallStream(ctx, gw, "CHAT", func(context.Context, pgw.Source) (pgw.Streamer[int], error) {
				t.Error("a zero-value client opened a stream")
				return nil, io.EOF
			})
			return err
		},
		"HTTPClient": func() error {
			req, _ := http.NewRequest(http.MethodGet, pgw.SDKBaseURL+"models", nil)
			resp, err := gw.HTTPClient("CHAT").Do(req)
			if resp != nil {
				_ = resp.Body.Close()
			}
			return err
		},
	}
	for name, f := range calls {
		t.Run(name, func(t *testing.T) {
			var err error
			assert.NotPanics(t, func() { err = f() })
			assert.ErrorContains(t, err, "not built by New or NewFromEnv")
		})
	}
	assert.NotPanics(t, func() { assert.Empty(t, gw.Scopes()) })
	assert.NotPanics(t, func() { assert.Zero(t, gw.OutcomeWriterStats()) })
}
