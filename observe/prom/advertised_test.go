package prom_test

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/admission"
	"github.com/pgw-go/pgw/config"
	"github.com/pgw-go/pgw/gate"
	"github.com/pgw-go/pgw/gate/memory"
	"github.com/pgw-go/pgw/observe"
	"github.com/pgw-go/pgw/observe/prom"
	"github.com/pgw-go/pgw/retry"
	"github.com/pgw-go/pgw/transport"
)

// TestAdvertisedGauges: the rate-limit headers of an attempt's answer reach
// the gauges, through the loop's observer, also behind Multi and Async.
func TestAdvertisedGauges(t *testing.T) {
	for _, wrap := range []struct {
		name string
		obs  func(c *prom.Collector) (observe.Observer, func())
	}{
		{"direct", func(c *prom.Collector) (observe.Observer, func()) { return c, func() {} }},
		{"multi+async", func(c *prom.Collector) (observe.Observer, func()) {
			a := c.Async(0)
			return observe.Multi(a), a.Close
		}},
	} {
		t.Run(wrap.name, func(t *testing.T) {
			c := prom.New()
			obs, done := wrap.obs(c)
			loop, err := retry.New(retry.Config{
				Scope:       config.ScopeSettings{Name: "CHAT", Sources: []config.Source{{Name: "s1"}}},
				Breaker:     mustBreaker(t),
				Logger:      slog.New(slog.DiscardHandler),
				Observer:    obs,
				Advertising: admission.Advertising{Budget: memory.NewBudget()},
			})
			require.NoError(t, err)
			h := http.Header{}
			h.Set("x-ratelimit-limit-requests", "500")
			h.Set("x-ratelimit-remaining-requests", "499")
			h.Set("x-ratelimit-reset-requests", "120ms")
			h.Set("x-ratelimit-limit-tokens", "30000")
			h.Set("x-ratelimit-remaining-tokens", "29,000")
			h.Set("x-ratelimit-reset-tokens", "2s")
			_, err = retry.Run(context.Background(), loop, 1, func(ctx context.Context, _ config.Source) (int, transport.Usage, error) {
				transport.ObserveResponse(ctx, http.StatusOK, h)
				return 1, transport.Usage{}, nil
			})
			require.NoError(t, err)
			done()
			require.NoError(t, testutil.CollectAndCompare(c, strings.NewReader(`
# HELP pgw_advertised_limit The window's size the upstream last advertised.
# TYPE pgw_advertised_limit gauge
pgw_advertised_limit{scope="CHAT",source="s1",window="requests"} 500
pgw_advertised_limit{scope="CHAT",source="s1",window="tokens"} 30000
# HELP pgw_advertised_remaining What the upstream last advertised is left of the window (its rate-limit headers).
# TYPE pgw_advertised_remaining gauge
pgw_advertised_remaining{scope="CHAT",source="s1",window="requests"} 499
pgw_advertised_remaining{scope="CHAT",source="s1",window="tokens"} 29000
# HELP pgw_advertised_reset_seconds Time to the window's reset, as of the upstream's last answer.
# TYPE pgw_advertised_reset_seconds gauge
pgw_advertised_reset_seconds{scope="CHAT",source="s1",window="requests"} 0.12
pgw_advertised_reset_seconds{scope="CHAT",source="s1",window="tokens"} 2
`), "pgw_advertised_limit", "pgw_advertised_remaining", "pgw_advertised_reset_seconds"))
		})
	}
}

func mustBreaker(t *testing.T) *memory.Breaker {
	t.Helper()
	b, err := memory.NewBreaker(gate.Policy{ConsecutiveFailures: 1, Cooldown: time.Minute, ProbeTTL: 10 * time.Minute})
	require.NoError(t, err)
	return b
}
