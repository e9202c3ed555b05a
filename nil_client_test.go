package pgw_test

import (
	"context"
	"io"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/pgw-go/pgw"
)

// Every method of a nil *GatewayClient (what a failed New returns) and of a
// nil *Stream (what a failed ChatStream returns) answers with an error, or
// with nothing, instead of panicking: `defer gw.Close()` written before the
// error check must not crash the caller.
func TestANilClientOrStreamFailsClearlyInsteadOfPanicking(t *testing.T) {
	var gw *pgw.GatewayClient
	ctx := context.Background()
	errs := map[string]func() error{
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
			_, err := pgw.Call(ctx, gw, "CHAT", func(context.Context, pgw.Source) (int, pgw.Usage, error) { return 0, pgw.Usage{}, nil })
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
		"Stream.Recv":  func() error { _, err := (*pgw.Stream)(nil).Recv(); return err },
		"Stream.Close": func() error { return (*pgw.Stream)(nil).Close() },
	}
	for name, f := range errs {
		t.Run(name, func(t *testing.T) {
			var err error
			assert.NotPanics(t, func() { err = f() })
			assert.ErrorContains(t, err, "nil *")
		})
	}
	assert.NotPanics(t, func() { assert.Nil(t, gw.Scopes()) })
	assert.NotPanics(t, func() { assert.Zero(t, gw.OutcomeWriterStats()) })
}
