package pgw_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw"
)

// chanStream is a Streamer fed by the test: each Recv returns the next item
// sent on items, io.EOF once items is closed.
type chanStream struct {
	items     chan string
	closeOnce sync.Once
	closed    chan struct{}
}

func newChanStream() *chanStream {
	return &chanStream{items: make(chan string, 8), closed: make(chan struct{})}
}

func (s *chanStream) Recv() (string, error) {
	select {
	case it, ok := <-s.items:
		if !ok {
			return "", io.EOF
		}
		return it, nil
	case <-s.closed:
		return "", errors.New("closed")
	}
}

func (s *chanStream) Close() error {
	s.closeOnce.Do(func() { close(s.closed) })
	return nil
}

// TestCallStreamHoldsItsSourceUntilTheStreamEnds: a source with
// MAX_IN_FLIGHT 1 under QUOTA_FULL=fail_fast is taken for as long as a
// CallStream on it is open: another call is refused with
// *AllSourcesExhausted (quota_exhausted, the source rate_limited) after the
// first item arrived and until the stream has ended; then a call is
// admitted again.
func TestCallStreamHoldsItsSourceUntilTheStreamEnds(t *testing.T) {
	gw, _ := newGateway(t, map[string]string{
		"PGW_SCOPES":               "GEN",
		"GEN__SOURCES":             "solo",
		"GEN__SOLO__MAX_IN_FLIGHT": "1",
		"GEN__QUOTA_FULL":          "fail_fast",
	})
	ctx := context.Background()
	inner := newChanStream()
	inner.items <- "first"
	st, err := pgw.CallStream(ctx, gw, "GEN", func(context.Context, pgw.Source) (pgw.Streamer[string], error) {
		return inner, nil
	})
	require.NoError(t, err)
	defer st.Close()
	other := func() error {
		_, err := pgw.Call(ctx, gw, "GEN", func(context.Context, pgw.Source) (string, pgw.Usage, error) { return "ok", pgw.Usage{}, nil })
		return err
	}

	first, err := st.Recv()
	require.NoError(t, err)
	assert.Equal(t, "first", first)
	for _, when := range []string{"after the first item", "after the second"} {
		err := other()
		var ase *pgw.AllSourcesExhausted
		require.ErrorAs(t, err, &ase, when)
		assert.Equal(t, pgw.ReasonQuotaExhausted, ase.Reason)
		assert.Equal(t, "GEN", ase.Scope)
		assert.Equal(t, map[string]string{"solo": "rate_limited"}, ase.Reasons)
		assert.Equal(t, pgw.CodeExhausted, ase.Code())
		if when == "after the first item" {
			inner.items <- "second"
			_, err := st.Recv()
			require.NoError(t, err)
		}
	}
	close(inner.items)
	_, err = st.Recv()
	require.ErrorIs(t, err, io.EOF)
	assert.False(t, st.Held())
	require.NoError(t, other(), "the ended stream gave its slot back")
}

// TestErrorsCarryTheirDocumentedFields: what a call ends with reaches the
// public types with errors.As, each with its Code and the fields the
// documentation lists: the attempt budget spent, a breaker open, a quota
// full.
func TestErrorsCarryTheirDocumentedFields(t *testing.T) {
	ctx := context.Background()
	fail := func(status int) func(context.Context, pgw.Source) (string, pgw.Usage, error) {
		return func(_ context.Context, src pgw.Source) (string, pgw.Usage, error) {
			return "", pgw.Usage{}, &pgw.HTTPError{StatusCode: status, Message: "upstream says no"}
		}
	}

	t.Run("GatewayUnavailableError", func(t *testing.T) {
		gw, _ := newGateway(t, map[string]string{
			"PGW_SCOPES": "GEN", "GEN__SOURCES": "a,b", "GEN__MAX_ATTEMPTS": "3", "GEN__FAILURE_THRESHOLD": "100",
		})
		_, err := pgw.Call(ctx, gw, "GEN", fail(http.StatusBadGateway))
		var gue *pgw.GatewayUnavailableError
		require.ErrorAs(t, err, &gue)
		assert.Equal(t, "GEN", gue.Scope)
		assert.Equal(t, 3, gue.Attempts)
		assert.Equal(t, pgw.CodeUnavailable, gue.Code())
		var he *pgw.HTTPError
		require.ErrorAs(t, gue.Last, &he)
		assert.Equal(t, http.StatusBadGateway, he.StatusCode)
		assert.Equal(t, "GEN", he.Scope)
		assert.Contains(t, []string{"a", "b"}, he.Source)
		assert.Same(t, gue.Last, errors.Unwrap(gue), "Unwrap returns the last attempt's error")
	})

	t.Run("CircuitOpenError", func(t *testing.T) {
		gw, _ := newGateway(t, map[string]string{
			"PGW_SCOPES": "GEN", "GEN__SOURCES": "a", "GEN__COOLDOWN_S": "60", "GEN__FAILURE_THRESHOLD": "1",
		})
		_, err := pgw.Call(ctx, gw, "GEN", fail(http.StatusInternalServerError))
		require.Error(t, err)
		_, err = pgw.Call(ctx, gw, "GEN", fail(http.StatusInternalServerError))
		var coe *pgw.CircuitOpenError
		require.ErrorAs(t, err, &coe)
		assert.Equal(t, "GEN", coe.Scope)
		assert.Equal(t, []string{"a"}, coe.Sources)
		assert.InDelta(t, 60*time.Second, coe.RetryAfter, float64(2*time.Second), "the certain time left of the cooldown")
		assert.Equal(t, pgw.CodeCircuitOpen, coe.Code())
	})

	t.Run("AllSourcesExhausted", func(t *testing.T) {
		gw, _ := newGateway(t, map[string]string{
			"PGW_SCOPES": "GEN", "GEN__SOURCES": "a", "GEN__A__RPM": "1", "GEN__QUOTA_FULL": "fail_fast",
		})
		ok := func(context.Context, pgw.Source) (string, pgw.Usage, error) { return "ok", pgw.Usage{}, nil }
		_, err := pgw.Call(ctx, gw, "GEN", ok)
		require.NoError(t, err)
		_, err = pgw.Call(ctx, gw, "GEN", ok)
		var ase *pgw.AllSourcesExhausted
		require.ErrorAs(t, err, &ase)
		assert.Equal(t, "GEN", ase.Scope)
		assert.Equal(t, pgw.ReasonQuotaExhausted, ase.Reason)
		assert.Equal(t, map[string]string{"a": "rate_limited"}, ase.Reasons)
		assert.Positive(t, ase.RetryAfter, "the quota knows when a request fits again")
		assert.LessOrEqual(t, ase.RetryAfter, time.Minute)
		assert.Equal(t, pgw.CodeExhausted, ase.Code())
	})
}

// TestEveryStreamingFaceHoldsItsSourceUntilTheStreamEnds: with
// MAX_IN_FLIGHT 1 and QUOTA_FULL=fail_fast, an open ChatStream (on either
// provider) and an open event-stream body of HTTPClient take the source:
// another call is refused as quota_exhausted until the stream is read to
// its end, and admitted after.
func TestEveryStreamingFaceHoldsItsSourceUntilTheStreamEnds(t *testing.T) {
	type open func(t *testing.T, gw *pgw.GatewayClient) (drain func())
	chatStream := func(t *testing.T, gw *pgw.GatewayClient) func() {
		st, err := gw.ChatStream(context.Background(), hello())
		require.NoError(t, err)
		return func() {
			defer st.Close()
			for {
				if _, err := st.Recv(); err != nil {
					require.ErrorIs(t, err, io.EOF)
					return
				}
			}
		}
	}
	sdkStream := func(t *testing.T, gw *pgw.GatewayClient) func() {
		req, err := http.NewRequest(http.MethodPost, pgw.SDKBaseURL+"chat/completions",
			strings.NewReader(`{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		resp, err := gw.HTTPClient("CHAT").Do(req)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, resp.StatusCode)
		return func() {
			_, err := io.Copy(io.Discard, resp.Body)
			require.NoError(t, err)
			require.NoError(t, resp.Body.Close())
		}
	}
	for name, c := range map[string]struct {
		provider string
		open     open
	}{
		"ChatStream/openai":    {"openai", chatStream},
		"ChatStream/anthropic": {"anthropic", chatStream},
		"HTTPClient/openai":    {"openai", sdkStream},
	} {
		t.Run(name, func(t *testing.T) {
			up := newWireUpstream(t)
			gw, _ := newGateway(t, map[string]string{
				"PGW_SCOPES":             "CHAT",
				"CHAT__SOURCES":          "a",
				"CHAT__A__BASE_URL":      up.URL + "/v1",
				"CHAT__A__PROVIDER":      c.provider,
				"CHAT__A__MODEL":         "m",
				"CHAT__A__MAX_IN_FLIGHT": "1",
				"CHAT__QUOTA_FULL":       "fail_fast",
			})
			drain := c.open(t, gw)
			_, err := gw.Chat(context.Background(), hello())
			var ase *pgw.AllSourcesExhausted
			require.ErrorAs(t, err, &ase, "the open stream holds the only slot")
			assert.Equal(t, map[string]string{"a": "rate_limited"}, ase.Reasons)
			drain()
			_, err = gw.Chat(context.Background(), hello())
			require.NoError(t, err, "the ended stream gave its slot back")
		})
	}
}
