package retry_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/config"
	"github.com/pgw-go/pgw/internal/errs"
	"github.com/pgw-go/pgw/retry"
	"github.com/pgw-go/pgw/transport"
)

// hedged turns hedging on for a scope: a delay no test fires, so every
// attempt runs as a race of one.
func hedged() envOpt {
	return withScope(func(s *config.ScopeSettings) { s.HedgeAfter = time.Hour })
}

// An attempt that runs as a hedged race is judged like one that runs alone:
// an SDK's 429 with a Retry-After holds its source off and the call fails
// over at once, without a backoff.
func TestHedgedSDKThrottleWithRetryAfterHoldsTheSourceOffAndFailsOver(t *testing.T) {
	for _, on := range []bool{false, true} {
		var opts []envOpt
		if on {
			opts = append(opts, hedged())
		}
		e := newEnv(t, opts...)
		var calls []string
		v, err := retry.Run(context.Background(), e.loop, 0, func(_ context.Context, src config.Source) (string, transport.Usage, error) {
			calls = append(calls, src.Name)
			if src.Name == "s1" {
				return "", transport.Usage{}, newSDKError(429, http.Header{"Retry-After": {"2"}}, "")
			}
			return "ok", transport.Usage{}, nil
		})
		require.NoError(t, err, "hedging %v", on)
		assert.Equal(t, "ok", v)
		assert.Equal(t, []string{"s1", "s2"}, calls, "hedging %v", on)
		assert.Empty(t, e.sleeper.taken(), "hedging %v: the Retry-After is a hold-off, not a backoff", on)
		assert.Equal(t, 2*time.Second, e.loop.Admission().Memo().Remaining("s1", e.clk.Now()), "hedging %v", on)
		e.requireNothingHeld(t)
	}
}

// The error a hedged call ends with names the scope and source it came
// from, as it does when the scope does not hedge.
func TestHedgedCallErrorNamesScopeAndSource(t *testing.T) {
	for _, on := range []bool{false, true} {
		var opts []envOpt
		if on {
			opts = append(opts, hedged())
		}
		e := newEnv(t, opts...)
		_, err := retry.Run(context.Background(), e.loop, 0, func(_ context.Context, src config.Source) (string, transport.Usage, error) {
			return "", transport.Usage{}, httpErr(404, 0, "no such model")
		})
		var he *errs.HTTPError
		require.ErrorAs(t, err, &he, "hedging %v", on)
		assert.Equal(t, "CHAT", he.Scope, "hedging %v", on)
		assert.Equal(t, "s1", he.Source, "hedging %v", on)
		e.requireNothingHeld(t)
	}
}
