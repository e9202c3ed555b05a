package retry_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/admission"
	"github.com/pgw-go/pgw/config"
	"github.com/pgw-go/pgw/observe"
	"github.com/pgw-go/pgw/retry"
	"github.com/pgw-go/pgw/transport"
)

// The attempt that lost a hedge race ran its time without delivering: that
// time is a lower bound of its source's, and raises the source's latency
// (peak-EWMA) to it, so that a source that stalls and is hedged every time
// does not look the fastest to BALANCE=latency — as it would if a lost race
// said nothing — and is tried after the one that won.
func TestHedgeTheLosersTimeIsALowerBoundOfItsSourcesLatency(t *testing.T) {
	e, tr, done := hedgedAfterASecond(t)
	e.clk.Advance(2 * time.Second)
	tr.release("s2")
	require.NoError(t, <-done)
	e.requireGivenBack(t)

	stats := latencyStats(e)
	assert.Equal(t, 2*time.Second, stats["s2"].EWMA, "the winner's time to its first chunk")
	assert.Equal(t, 3*time.Second, stats["s1"].EWMA, "the loser ran 3 s without delivering")
}

// hedgedAfterASecond starts a stream on s1 that s2 hedges after a second
// (the hedge delay ran out): both are open, neither has delivered, and done
// delivers the stream's end once it is read whole.
func hedgedAfterASecond(t *testing.T) (*hedgeEnv, *gatedChat, <-chan error) {
	t.Helper()
	e := newHedgeEnv(t, nil)
	tr := newGatedChat("s1", "s2")
	done := readHedged(t, retry.NewChat(e.loop, tr, retry.ChatOptions{}))
	require.Equal(t, "s1", <-tr.opened)
	e.clk.Advance(time.Second)
	e.timer.fire(t)
	require.Equal(t, "s2", <-tr.opened)
	return e, tr, done
}

// latencyStats returns the loop's latency view by source.
func latencyStats(e *hedgeEnv) map[string]admission.LatencyStats {
	out := map[string]admission.LatencyStats{}
	for _, s := range e.loop.Admission().Latency().Stats() {
		out[s.Source] = s
	}
	return out
}

// A hedge that lost to the attempt it hedged was cut short before it had
// run a hedge delay: its time says when the other attempt delivered, not
// how long its own source takes, so it joins neither that source's samples
// — which would pull the adaptive hedge delay down — nor its EWMA.
func TestHedgeAHedgeThatLostEarlyIsNoLatencySample(t *testing.T) {
	e, tr, done := hedgedAfterASecond(t)
	e.clk.Advance(100 * time.Millisecond)
	tr.release("s1")
	require.NoError(t, <-done)
	e.requireGivenBack(t)
	assert.Equal(t, observe.OutcomeHedgeLost, e.outcomes()["s2"])

	stats := latencyStats(e)
	assert.Equal(t, 1100*time.Millisecond, stats["s1"].EWMA, "the winner's time to its first chunk")
	assert.Zero(t, stats["s2"].Observed, "the hedge's 100 ms are no sample of s2")
	assert.Zero(t, stats["s2"].EWMA)
}

// A hedged call its caller cancels ends every attempt for the caller's
// reason: each is reported canceled — not as a lost hedge, though the race
// cut the later ones — and none of their times, which measure the caller's
// patience, joins a source's latency.
func TestHedgeACanceledRaceIsCanceledNotLostAndNoLatency(t *testing.T) {
	e := newHedgeEnv(t, nil)
	tr := newGatedChat("s1", "s2")
	chat := retry.NewChat(e.loop, tr, retry.ChatOptions{})
	ctx, cancel := context.WithCancel(context.Background())
	done := openHedged(ctx, chat)
	<-tr.opened
	e.clk.Advance(time.Second)
	e.timer.fire(t)
	<-tr.opened
	e.clk.Advance(2 * time.Second)
	cancel()
	assert.ErrorIs(t, <-done, context.Canceled)
	e.requireGivenBack(t)

	assert.Equal(t, map[string]string{"s1": observe.OutcomeCanceled, "s2": observe.OutcomeCanceled}, e.outcomes())
	for src, s := range latencyStats(e) {
		assert.Zero(t, s.Observed, "%s: a cancelled attempt is no latency sample", src)
	}
}

// neverTimer arms hedge delays that never run out.
func neverTimer(time.Duration) (<-chan time.Time, func() bool) {
	return nil, func() bool { return false }
}

// A failure's time is a lower bound of its source's: one quicker than the
// quantile the window is read at (a 5xx or a 429 in 2 ms on a source whose
// answers take 800 ms) would read as a fast answer and pull the adaptive
// hedge delay down. It joins the source's EWMA only; a failure that ran
// past that quantile (a timeout) keeps the slow tail in the samples. So
// for a scope that does not hedge, whose window is read at p90.
func TestAFastFailureIsNoSampleOfItsSourceButATimeoutIs(t *testing.T) {
	for _, hedge := range []bool{false, true} {
		opts := []envOpt{names("s1")}
		if hedge {
			opts = append(opts, withScope(func(s *config.ScopeSettings) { s.HedgeQuantile = 0.9 }),
				func(c *retry.Config) { c.HedgeTimer = neverTimer })
		}
		e := newEnv(t, opts...)
		lat := e.loop.Admission().Latency()
		for range 20 {
			lat.Observe("s1", 800*time.Millisecond)
		}
		fail := func(d time.Duration) {
			e.clk.Advance(time.Minute) // the breaker's cooldown, and the EWMA's decay
			_, err := retry.Run(context.Background(), e.loop, 0, func(context.Context, config.Source) (string, transport.Usage, error) {
				e.clk.Advance(d)
				return "", transport.Usage{}, httpErr(500, 0, "overloaded")
			})
			require.Error(t, err)
		}

		fail(2 * time.Millisecond)
		low, ok := lat.Quantile("s1", 0.01)
		require.True(t, ok)
		assert.Equal(t, 800*time.Millisecond, low, "hedging %v: the 2 ms failure is no sample", hedge)
		p50, _ := lat.Quantile("s1", 0.5)
		assert.Equal(t, 800*time.Millisecond, p50, "hedging %v", hedge)
		ewma := lat.Stats()[0].EWMA
		assert.Positive(t, ewma, "hedging %v", hedge)

		fail(5 * time.Second)
		high, _ := lat.Quantile("s1", 0.99)
		assert.Equal(t, 5*time.Second, high, "hedging %v: a timeout keeps the slow tail", hedge)
		assert.Equal(t, 5*time.Second, lat.Stats()[0].EWMA, "hedging %v: the EWMA rises to a bound", hedge)
		assert.Equal(t, uint64(22), lat.Stats()[0].Observed, "hedging %v", hedge)
	}
}

// While a source's window has no quantile yet (fewer than 20 samples) and
// no fixed delay stands in, a failure cannot be placed against it: its
// time raises the EWMA — a source that only fails looks slow to
// BALANCE=latency — and is no sample, so a burst of fast errors at the
// start does not make the first adaptive hedge delay a millisecond.
func TestAFailureBeforeTheWindowHasAQuantileOnlyRaisesTheEWMA(t *testing.T) {
	e := newEnv(t, names("s1"), withScope(func(s *config.ScopeSettings) { s.HedgeQuantile = 0.9 }),
		func(c *retry.Config) { c.HedgeTimer = neverTimer })
	lat := e.loop.Admission().Latency()
	for range 25 {
		e.clk.Advance(time.Minute)
		_, err := retry.Run(context.Background(), e.loop, 0, func(context.Context, config.Source) (string, transport.Usage, error) {
			e.clk.Advance(2 * time.Millisecond)
			return "", transport.Usage{}, httpErr(429, 0, "slow down")
		})
		require.Error(t, err)
	}
	_, ok := lat.Quantile("s1", 0.9)
	assert.False(t, ok, "25 fast 429s are no samples")
	assert.Equal(t, 2*time.Millisecond, lat.Stats()[0].EWMA)
}
