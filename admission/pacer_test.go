package admission_test

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/admission"
	"github.com/pgw-go/pgw/internal/testutil"
)

func newTestPacer(t *testing.T, cfg admission.PacerConfig, sources ...string) (*admission.Pacer, *testutil.FakeClock) {
	t.Helper()
	clk := testutil.NewFakeClock()
	cfg.Clock = clk
	if len(sources) == 0 {
		sources = []string{"s"}
	}
	p, err := admission.NewPacer(sources, cfg)
	require.NoError(t, err)
	return p, clk
}

// fillPacer takes every free slot of source and returns how many it took.
func fillPacer(p *admission.Pacer, source string) int {
	n := 0
	for p.TryAcquire(source) {
		n++
	}
	return n
}

func windowOf(p *admission.Pacer, source string) int {
	w, _ := p.Window(source)
	return w
}

func TestPacerDefaults(t *testing.T) {
	p, err := admission.NewPacer([]string{"s"}, admission.PacerConfig{})
	require.NoError(t, err)
	cfg := p.Config()
	assert.Equal(t, admission.DefaultPacerCeiling, cfg.Ceiling)
	assert.Equal(t, admission.DefaultPacerCeiling, cfg.Initial, "no throttling seen: start at the ceiling")
	assert.Equal(t, admission.DefaultDecreaseHold, cfg.DecreaseHold)
	assert.NotNil(t, cfg.Clock)
	assert.Equal(t, admission.DefaultPacerCeiling, fillPacer(p, "s"))
}

func TestPacerRejectsInvalidConfig(t *testing.T) {
	cases := []struct {
		name    string
		sources []string
		cfg     admission.PacerConfig
		want    string
	}{
		{"NegativeCeiling", []string{"s"}, admission.PacerConfig{Ceiling: -1}, "Ceiling=-1"},
		{"InitialAboveCeiling", []string{"s"}, admission.PacerConfig{Ceiling: 4, Initial: 5}, "Initial=5"},
		{"NegativeInitial", []string{"s"}, admission.PacerConfig{Initial: -3}, "Initial=-3"},
		{"NegativeHold", []string{"s"}, admission.PacerConfig{DecreaseHold: -time.Second}, "DecreaseHold=-1s"},
		{"DuplicateSource", []string{"s", "s"}, admission.PacerConfig{}, `source "s" listed twice`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, err := admission.NewPacer(c.sources, c.cfg)
			assert.Nil(t, p)
			var ce *admission.PacerConfigError
			require.ErrorAs(t, err, &ce)
			assert.Contains(t, err.Error(), c.want)
			assert.Contains(t, err.Error(), "legal:")
		})
	}
}

func TestPacerAdmitsUpToTheWindow(t *testing.T) {
	p, _ := newTestPacer(t, admission.PacerConfig{Ceiling: 8, Initial: 3})
	assert.Equal(t, 3, fillPacer(p, "s"))
	p.Release("s", admission.PaceNeutral)
	assert.True(t, p.TryAcquire("s"), "a released slot is free again")
	assert.False(t, p.TryAcquire("s"))
	w, inFlight := p.Window("s")
	assert.Equal(t, 3, w)
	assert.Equal(t, 3, inFlight)
}

func TestPacerThrottleHalvesTheWindow(t *testing.T) {
	p, _ := newTestPacer(t, admission.PacerConfig{Ceiling: 16, Initial: 8})
	require.Equal(t, 8, fillPacer(p, "s"))
	p.Release("s", admission.PaceThrottled)
	assert.Equal(t, 4, windowOf(p, "s"))
	// Seven calls still run under the old window: nobody new gets in until
	// fewer than four are in flight.
	assert.False(t, p.TryAcquire("s"))
	for range 4 {
		p.Release("s", admission.PaceNeutral)
	}
	assert.Equal(t, 1, fillPacer(p, "s"), "three in flight under a window of four")
}

// A burst admitted under the old window answers 429 together: that is one
// congestion event, halved once, not eight times down to the floor.
func TestPacerThrottlesWithinTheHoldHalveOnce(t *testing.T) {
	p, clk := newTestPacer(t, admission.PacerConfig{Ceiling: 16, Initial: 8, DecreaseHold: time.Second})
	require.Equal(t, 8, fillPacer(p, "s"))
	for range 8 {
		p.Release("s", admission.PaceThrottled)
		clk.Advance(100 * time.Millisecond)
	}
	assert.Equal(t, 4, windowOf(p, "s"), "eight 429s within the hold: halved once")

	// After the hold a new throttle is a new event.
	clk.Set(testutil.Epoch.Add(time.Second)) // exactly DecreaseHold after the halving
	require.True(t, p.TryAcquire("s"))
	p.Release("s", admission.PaceThrottled)
	assert.Equal(t, 2, windowOf(p, "s"))
	require.True(t, p.TryAcquire("s"))
	clk.Advance(time.Second - time.Nanosecond)
	p.Release("s", admission.PaceThrottled)
	assert.Equal(t, 2, windowOf(p, "s"), "1ns short of the hold: same event")
}

func TestPacerWindowFloorIsOne(t *testing.T) {
	p, clk := newTestPacer(t, admission.PacerConfig{Ceiling: 4, DecreaseHold: time.Second})
	for range 5 {
		require.True(t, p.TryAcquire("s"))
		p.Release("s", admission.PaceThrottled)
		clk.Advance(time.Second)
	}
	assert.Equal(t, 1, windowOf(p, "s"))
	assert.Equal(t, 1, fillPacer(p, "s"), "a throttled source still runs one call at a time")
}

func TestPacerSuccessesRaiseTheWindowAdditively(t *testing.T) {
	p, _ := newTestPacer(t, admission.PacerConfig{Ceiling: 6, Initial: 4})
	succeed := func(n int) {
		for range n {
			require.True(t, p.TryAcquire("s"))
			p.Release("s", admission.PaceSuccess)
		}
	}
	succeed(3)
	assert.Equal(t, 4, windowOf(p, "s"), "three successes are less than a window's worth")
	succeed(1)
	assert.Equal(t, 5, windowOf(p, "s"), "four successes at window 4: +1")
	succeed(4)
	assert.Equal(t, 5, windowOf(p, "s"))
	succeed(1)
	assert.Equal(t, 6, windowOf(p, "s"), "five successes at window 5: +1")
	succeed(60)
	assert.Equal(t, 6, windowOf(p, "s"), "never above the ceiling")
}

func TestPacerThrottleRestartsTheSuccessCount(t *testing.T) {
	p, _ := newTestPacer(t, admission.PacerConfig{Ceiling: 16, Initial: 8})
	for range 7 {
		require.True(t, p.TryAcquire("s"))
		p.Release("s", admission.PaceSuccess)
	}
	require.True(t, p.TryAcquire("s"))
	p.Release("s", admission.PaceThrottled)
	require.Equal(t, 4, windowOf(p, "s"))
	for range 3 {
		require.True(t, p.TryAcquire("s"))
		p.Release("s", admission.PaceSuccess)
	}
	assert.Equal(t, 4, windowOf(p, "s"), "successes before the throttle do not count")
	require.True(t, p.TryAcquire("s"))
	p.Release("s", admission.PaceSuccess)
	assert.Equal(t, 5, windowOf(p, "s"))
}

func TestPacerNeutralChangesNothing(t *testing.T) {
	p, _ := newTestPacer(t, admission.PacerConfig{Ceiling: 8, Initial: 2})
	for range 20 {
		require.True(t, p.TryAcquire("s"))
		p.Release("s", admission.PaceNeutral)
	}
	assert.Equal(t, 2, windowOf(p, "s"))
}

func TestPacerReleaseWithoutASlotIsIgnored(t *testing.T) {
	p, _ := newTestPacer(t, admission.PacerConfig{Ceiling: 8, Initial: 2})
	p.Release("s", admission.PaceThrottled)
	p.Release("s", admission.PaceSuccess)
	w, inFlight := p.Window("s")
	assert.Equal(t, 2, w)
	assert.Equal(t, 0, inFlight)
	assert.Equal(t, 2, fillPacer(p, "s"), "no phantom slot was created")
}

func TestPacerDoneReportsThrottleOrSuccess(t *testing.T) {
	p, clk := newTestPacer(t, admission.PacerConfig{Ceiling: 8, Initial: 2})
	require.True(t, p.TryAcquire("s"))
	p.Done("s", true)
	assert.Equal(t, 1, windowOf(p, "s"))
	clk.Advance(time.Hour)
	require.True(t, p.TryAcquire("s"))
	p.Done("s", false)
	assert.Equal(t, 2, windowOf(p, "s"), "one success at window 1: +1")
}

func TestPacerUnknownSourceIsNotPaced(t *testing.T) {
	p, _ := newTestPacer(t, admission.PacerConfig{Ceiling: 1})
	for range 100 {
		assert.True(t, p.TryAcquire("other"))
	}
	p.Release("other", admission.PaceThrottled)
	w, inFlight := p.Window("other")
	assert.Zero(t, w)
	assert.Zero(t, inFlight)
}

func TestPacerSourcesAreIndependent(t *testing.T) {
	p, _ := newTestPacer(t, admission.PacerConfig{Ceiling: 4}, "a", "b")
	require.True(t, p.TryAcquire("a"))
	p.Release("a", admission.PaceThrottled)
	assert.Equal(t, 2, windowOf(p, "a"))
	assert.Equal(t, 4, windowOf(p, "b"))
	assert.Equal(t, 4, fillPacer(p, "b"))
}

func TestPacerConcurrentCallersNeverExceedTheWindow(t *testing.T) {
	p, _ := newTestPacer(t, admission.PacerConfig{Ceiling: 3})
	var (
		cur, peak, granted atomic.Int64
		wg                 sync.WaitGroup
		start              = make(chan struct{})
	)
	for range 32 {
		wg.Go(func() {
			<-start
			for range 200 {
				if !p.TryAcquire("s") {
					continue
				}
				granted.Add(1)
				n := cur.Add(1)
				for old := peak.Load(); n > old && !peak.CompareAndSwap(old, n); old = peak.Load() {
				}
				cur.Add(-1)
				p.Release("s", admission.PaceNeutral)
			}
		})
	}
	close(start)
	wg.Wait()
	assert.LessOrEqual(t, peak.Load(), int64(3))
	assert.Positive(t, granted.Load())
	_, inFlight := p.Window("s")
	assert.Zero(t, inFlight, "every slot came back")
}

// BenchmarkPacerTryAcquireRelease is the pacer's share of one admitted call.
func BenchmarkPacerTryAcquireRelease(b *testing.B) {
	p, err := admission.NewPacer([]string{"openai", "azure"}, admission.PacerConfig{})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if !p.TryAcquire("openai") {
			b.Fatal("window full")
		}
		p.Release("openai", admission.PaceSuccess)
	}
}
