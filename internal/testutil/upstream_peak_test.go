package testutil_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/internal/testutil"
)

// PeakConcurrency counts the requests being served at once, not the
// requests served: three streams held at their first chunk make a peak of
// three, and the requests after them, one at a time, leave it there.
func TestUpstreamPeakConcurrency(t *testing.T) {
	u := testutil.NewUpstream(t)
	assert.Zero(t, u.PeakConcurrency(), "no request yet")
	const held = 3
	arrived := make(chan struct{}, held)
	release := make(chan struct{})
	u.SetDefault(testutil.Chat, testutil.Reply{BeforeChunk: func(ctx context.Context, i int) {
		if i != 0 {
			return
		}
		arrived <- struct{}{}
		select {
		case <-release:
		case <-ctx.Done():
		}
	}})
	body := `{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`
	errs := make(chan error, held)
	for range held {
		go func() {
			resp, err := http.Post(u.URL+"/chat/completions", "application/json", strings.NewReader(body))
			if err == nil {
				_, err = io.Copy(io.Discard, resp.Body)
				_ = resp.Body.Close()
			}
			errs <- err
		}()
	}
	for range held {
		select {
		case <-arrived:
		case err := <-errs:
			require.FailNow(t, "a held request ended before its first chunk", "%v", err)
		}
	}
	assert.Equal(t, held, u.PeakConcurrency(), "the held streams")
	close(release)
	for range held {
		require.NoError(t, <-errs)
	}
	u.SetScript(testutil.Chat, nil)
	for range 2 {
		resp := post(t, context.Background(), u.URL+"/chat/completions", chatBody)
		_, err := io.Copy(io.Discard, resp.Body)
		require.NoError(t, err)
	}
	assert.Equal(t, held, u.PeakConcurrency(), "sequential requests do not raise the peak")
}
