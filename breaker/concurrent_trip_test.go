package breaker_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/breaker"
	"github.com/pgw-go/pgw/contracttest"
	"github.com/pgw-go/pgw/gate"
	"github.com/pgw-go/pgw/gate/memory"
)

// slowGate is a memory gate whose first failure Record waits until the test
// lets it go: a Redis round trip in slow motion.
type slowGate struct {
	*memory.Breaker
	calls   atomic.Int32
	entered chan struct{}
	release chan struct{}
}

func (g *slowGate) Record(ctx context.Context, source string, d gate.Decision, o gate.Outcome) (gate.Update, error) {
	if (o == gate.Failure || o == gate.Fatal) && g.calls.Add(1) == 1 {
		close(g.entered)
		<-g.release
	}
	return g.Breaker.Record(ctx, source, d, o)
}

// Two failures that end together, while the first one's outcome is still
// on its way to the gate, are two failures for FailureThreshold and
// ReadyToTrip: the breaker trips as it would had they ended one after the
// other (gobreaker serialises them and trips). Before, each predicate saw
// only its own failure, and the breaker stayed Closed with Counts holding
// two failures.
func TestConcurrentFailuresTripTheThresholdTheyReachTogether(t *testing.T) {
	for _, name := range []string{"FailureThreshold", "ReadyToTrip"} {
		t.Run(name, func(t *testing.T) {
			clk := contracttest.NewFakeClock()
			mem, err := memory.NewBreaker(gate.Policy{ConsecutiveFailures: gate.Disabled, Cooldown: time.Minute}, memory.WithClock(clk))
			require.NoError(t, err)
			g := &slowGate{Breaker: mem, entered: make(chan struct{}), release: make(chan struct{})}
			cfg := breaker.Config{Gate: g, Logger: quiet()}
			if name == "FailureThreshold" {
				cfg.FailureThreshold = 2
			} else {
				cfg.ReadyToTrip = func(c breaker.Counts) bool { return c.TotalFailures >= 2 }
			}
			b, err := breaker.New("api", cfg)
			require.NoError(t, err)

			first := make(chan error, 1)
			go func() { first <- b.Execute(context.Background(), fail503) }()
			<-g.entered // the first failure is on its way to the gate
			require.ErrorIs(t, b.Execute(t.Context(), fail503), errUpstream)
			close(g.release)
			require.ErrorIs(t, <-first, errUpstream)

			assert.Equal(t, gate.Open, b.State(), "two failures reached the threshold of 2")
			// The first failure reaches the gate after the second tripped
			// it: the gate ignores it as stale, and Metrics say so.
			m := b.Metrics()
			assert.Equal(t, uint64(1), m.Failures)
			assert.Equal(t, uint64(1), m.Stale)
		})
	}
}
