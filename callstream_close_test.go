package pgw_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw"
	"github.com/pgw-go/pgw/internal/testutil"
)

// heldItems yields one item, then blocks until its attempt's ctx ends and
// returns what the ctx says, as an SDK stream tied to its request does.
type heldItems struct {
	ctx context.Context
	n   int
}

func (h *heldItems) Recv() (string, error) {
	h.n++
	if h.n == 1 {
		return "first", nil
	}
	<-h.ctx.Done()
	return "", h.ctx.Err()
}

func (h *heldItems) Close() error { return nil }

// Streams open when the gateway closes are interrupted and say so with
// ErrClosed — a CallStream's Recv as much as a ChatStream's and a governed
// SDK body's — not with a context.Canceled the caller would take for its own
// cancellation; Close returns once they gave their admissions back.
func TestCloseInterruptsOpenCallStreamsAndSDKBodiesWithErrClosed(t *testing.T) {
	up := testutil.NewUpstream(t)
	up.SetDefault(testutil.Chat, testutil.Reply{BeforeChunk: func(ctx context.Context, i int) {
		if i == 1 {
			<-ctx.Done()
		}
	}})
	gw, rec := newGateway(t, map[string]string{
		"PGW_SCOPES":        "CHAT,RUN",
		"CHAT__SOURCES":     "a",
		"CHAT__A__BASE_URL": up.URL,
		"RUN__SOURCES":      "r",
	})
	ctx := context.Background()

	items, err := pgw.CallStream(ctx, gw, "RUN", func(ctx context.Context, _ pgw.Source) (pgw.Streamer[string], error) {
		return &heldItems{ctx: ctx}, nil
	})
	require.NoError(t, err)
	first, err := items.Recv()
	require.NoError(t, err)
	require.Equal(t, "first", first)

	req, err := http.NewRequest(http.MethodPost, pgw.SDKBaseURL+"chat/completions",
		strings.NewReader(`{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`))
	require.NoError(t, err)
	resp, err := gw.HTTPClient("CHAT").Do(req)
	require.NoError(t, err)

	itemErr, bodyErr := make(chan error, 1), make(chan error, 1)
	go func() { _, err := items.Recv(); itemErr <- err }()
	go func() { _, err := io.ReadAll(resp.Body); bodyErr <- err }()

	closed := make(chan error, 1)
	go func() { closed <- gw.Close() }()
	select {
	case err := <-closed:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not return with two streams open")
	}
	err = <-itemErr
	assert.ErrorIs(t, err, pgw.ErrClosed, "CallStream Recv: %v", err)
	assert.NotErrorIs(t, err, context.Canceled)
	_, err = items.Recv()
	assert.ErrorIs(t, err, pgw.ErrClosed, "and every later Recv")
	assert.ErrorIs(t, <-bodyErr, pgw.ErrClosed, "SDK body")
	require.NoError(t, items.Close())
	require.NoError(t, resp.Body.Close())
	// Each stream ends once, given back, never a failure — and reported as
	// the gateway's Close, whichever of Close and the blocked Recv saw the
	// end first: neither the caller's cancellation nor its abandonment.
	require.Len(t, rec.Attempts(), 2)
	for _, a := range rec.Attempts() {
		assert.Equal(t, pgw.OutcomeClosed, a.Outcome, a.Source)
	}
	assert.Equal(t, []string{pgw.ResultClosed, pgw.ResultClosed}, rec.Results())
	for _, r := range rec.Calls() {
		assert.ErrorIs(t, r.Err, pgw.ErrClosed, "the call's reported error is the one its caller got")
	}
}
