package breaker_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/breaker"
	"github.com/pgw-go/pgw/gate"
)

// A call admitted before the Interval ended and failing after it belongs to
// the counts that ended: it must not make ReadyToTrip (or FailureThreshold)
// trip on the counts of the interval before (gobreaker drops such an
// outcome: its generation changed when the interval expired).
func TestIntervalEndedCallDoesNotTripOnTheEndedCounts(t *testing.T) {
	for _, name := range []string{"ReadyToTrip", "FailureThreshold"} {
		t.Run(name, func(t *testing.T) {
			cfg := breaker.Config{Interval: 10 * time.Second, Policy: gate.Policy{Cooldown: time.Minute}}
			if name == "ReadyToTrip" {
				cfg.ReadyToTrip = func(c breaker.Counts) bool { return c.ConsecutiveFailures >= 2 }
			} else {
				cfg.FailureThreshold = 2
			}
			b, clk := newFakeClockBreaker(t, cfg)
			require.ErrorIs(t, b.Execute(t.Context(), fail503), errUpstream)
			clk.Advance(5 * time.Second)
			tok, err := b.Allow(t.Context())
			require.NoError(t, err)
			clk.Advance(6 * time.Second) // the interval is over
			tok.Done(errUpstream)
			assert.Equal(t, gate.Closed, b.State(), "one failure of the ended interval, one finished after it: no trip")
			assert.Equal(t, breaker.Counts{}, b.Counts())

			// The new interval counts from zero: two failures of its own trip.
			require.ErrorIs(t, b.Execute(t.Context(), fail503), errUpstream)
			assert.Equal(t, gate.Closed, b.State())
			require.ErrorIs(t, b.Execute(t.Context(), fail503), errUpstream)
			assert.Equal(t, gate.Open, b.State())
		})
	}
}
