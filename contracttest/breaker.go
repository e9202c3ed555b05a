package contracttest

import (
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/gate"
)

// BreakerFactory builds a fresh breaker gate for policy p and returns it with
// the Clock that drives its time: a FakeClock for the memory gate, a clock
// that moves miniredis for the Redis gate on miniredis, a RealClock for a real
// redis-server. RunBreaker calls it once per subtest, possibly from parallel
// subtests, so it must be safe to call concurrently. Source names are unique
// per subtest and per RunBreaker call, so gates built on a shared store (one
// redis-server) do not see each other's records.
type BreakerFactory func(t *testing.T, p gate.Policy) (gate.ProviderGate, Clock)

// Base unit of every policy in the suite. Short enough that a run on real time
// (Clock.Slack > 0) stays within a few seconds, long enough that a Slack of a
// few tens of milliseconds cannot blur one phase into the next.
const (
	baseCooldown    = 200 * time.Millisecond
	baseProbeTTL    = 400 * time.Millisecond // ≠ Cooldown, so a lease length leaking into RetryAfter shows
	baseMaxCooldown = 800 * time.Millisecond
	baseFailures    = 3
)

// basePolicy is the policy every case starts from; cases change single fields.
func basePolicy() gate.Policy {
	return gate.Policy{
		ConsecutiveFailures: baseFailures,
		Cooldown:            baseCooldown,
		MaxCooldown:         baseMaxCooldown,
		CooldownMultiplier:  2,
		ProbeTTL:            baseProbeTTL,
		SuccessThreshold:    1,
		HalfOpenProbes:      1,
	}
}

// breakerCase is one named subtest of RunBreaker. policy adjusts basePolicy.
type breakerCase struct {
	name   string
	policy func(p *gate.Policy)
	run    func(h *breakerHarness)
}

// runCounter makes source names unique across RunBreaker calls in one process
// (e.g. `go test -count=2` against one redis-server).
var runCounter atomic.Uint64

// RunBreaker runs the breaker contract of gate/doc.go and SPEC §4 against the
// gates newGate builds: every row of the pinned RetryAfter table, every
// transition, cooldown growth and its cap, probe lease expiry, fencing of
// stale and old-generation outcomes, Fatal from each state, Released,
// concurrent probe grants, Snapshot, the generation every answer carries
// (gate/doc.go "Generations"), and the seed 000 §1.3 regression.
//
// Subtests run in parallel, each on its own gate and source; RunBreaker
// returns when all of them have finished, so the caller may release shared
// resources after it returns. Durations are compared with the tolerance
// clk.Slack(): exactly on a fake clock, within Slack on real time; zero
// values must be exactly 0 on every clock. Every advance is a whole number of
// milliseconds. On real time the subtests mostly sleep, so their wall time is
// bounded by `go test -parallel` (default GOMAXPROCS): about 6 s at
// -parallel 2, under 3 s at -parallel 16 or more.
//
// Where gate/doc.go leaves a point open, the suite assumes:
//   - a probe grant reports State HalfOpen (the record's state once the
//     decision is made);
//   - a Record of a decision that was not allowed is a miss even for Fatal:
//     unlike a stale admission, it admitted no call;
//   - Released of a Closed admission changes no count, window included;
//   - an invalid Outcome returns an error wrapping gate.ErrUnknownOutcome and
//     consumes nothing: the decision may still be recorded;
//   - the Snapshot of an unknown source is that of a fresh record: Closed,
//     zero counts, Cooldown = Policy.Cooldown;
//   - Fatal from Open keeps the current cooldown (it does not grow it).
//
// The failure-rate cases only ever trip on a Failure, so a backend may or may
// not evaluate the window on a Success.
func RunBreaker(t *testing.T, newGate BreakerFactory) {
	t.Helper()
	run := runCounter.Add(1)
	nonce := fmt.Sprintf("%x%x", time.Now().UnixNano()&0xffffff, run)
	var cases []breakerCase
	cases = append(cases, retryAfterCases()...)
	cases = append(cases, transitionCases()...)
	cases = append(cases, fencingCases()...)
	cases = append(cases, fatalReleasedCases()...)
	cases = append(cases, snapshotCases()...)
	cases = append(cases, concurrencyCases()...)
	cases = append(cases, generationCases()...)

	// The group blocks until every parallel subtest is done.
	t.Run("Breaker", func(t *testing.T) {
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				t.Parallel()
				p := basePolicy()
				if c.policy != nil {
					c.policy(&p)
				}
				require.NoError(t, p.Validate(), "contract suite built an invalid policy")
				g, clk := newGate(t, p)
				require.NotNil(t, g, "factory returned a nil gate")
				require.NotNil(t, clk, "factory returned a nil clock")
				c.run(&breakerHarness{
					t:   t,
					g:   g,
					clk: clk,
					p:   p,
					src: sourceName(nonce, c.name, ""),
				})
			})
		}
	})
}

// sourceName builds a source name unique to one subtest of one RunBreaker
// call. Only [A-Za-z0-9_-] survive, so Redis hash tags stay intact.
func sourceName(nonce, caseName, suffix string) string {
	name := "ct-" + nonce + "-" + caseName
	if suffix != "" {
		name += "-" + suffix
	}
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_':
			return r
		}
		return '_'
	}, name)
}

// breakerHarness holds one subtest's gate, clock, policy and source and wraps
// the port's calls so that every error fails the subtest at once.
type breakerHarness struct {
	t   *testing.T
	g   gate.ProviderGate
	clk Clock
	p   gate.Policy
	src string
}

// other returns a second source name for this subtest.
func (h *breakerHarness) other(suffix string) string { return h.src + "-" + suffix }

func (h *breakerHarness) enter() gate.Decision { return h.enterOn(h.src) }

func (h *breakerHarness) enterOn(src string) gate.Decision {
	h.t.Helper()
	d, err := h.g.TryEnter(h.t.Context(), src)
	require.NoError(h.t, err, "TryEnter(%q)", src)
	assert.GreaterOrEqual(h.t, d.RetryAfter, time.Duration(0), "TryEnter(%q): RetryAfter is never negative", src)
	return d
}

func (h *breakerHarness) record(d gate.Decision, o gate.Outcome) gate.Update {
	return h.recordOn(h.src, d, o)
}

func (h *breakerHarness) recordOn(src string, d gate.Decision, o gate.Outcome) gate.Update {
	h.t.Helper()
	u, err := h.g.Record(h.t.Context(), src, d, o)
	require.NoError(h.t, err, "Record(%q, %+v, %v)", src, d, o)
	assert.GreaterOrEqual(h.t, u.RetryAfter, time.Duration(0), "Record(%q, %v): RetryAfter is never negative", src, o)
	return u
}

func (h *breakerHarness) snap() gate.Snapshot { return h.snapOn(h.src) }

func (h *breakerHarness) snapOn(src string) gate.Snapshot {
	h.t.Helper()
	s, err := h.g.Snapshot(h.t.Context(), src)
	require.NoError(h.t, err, "Snapshot(%q)", src)
	assert.GreaterOrEqual(h.t, s.RetryAfter, time.Duration(0), "Snapshot(%q): RetryAfter is never negative", src)
	return s
}

func (h *breakerHarness) retryAfter(sources ...string) time.Duration {
	h.t.Helper()
	ra, err := h.g.RetryAfter(h.t.Context(), sources)
	require.NoError(h.t, err, "RetryAfter(%q)", sources)
	assert.GreaterOrEqual(h.t, ra, time.Duration(0), "RetryAfter(%q) is never negative", sources)
	return ra
}

// admitted asserts a plain Closed admission.
func (h *breakerHarness) admitted(d gate.Decision) {
	h.t.Helper()
	require.True(h.t, d.Allowed, "TryEnter on a Closed source must allow: %+v", d)
	assert.Equal(h.t, gate.Closed, d.State, "Closed admission: State")
	assert.False(h.t, d.Probe, "Closed admission: Probe")
	assert.Equal(h.t, time.Duration(0), d.RetryAfter, "Closed admission: RetryAfter")
}

// probe asserts a probe grant.
func (h *breakerHarness) probe(d gate.Decision) {
	h.t.Helper()
	require.True(h.t, d.Allowed, "TryEnter at or after openUntil must grant a probe: %+v", d)
	require.True(h.t, d.Probe, "TryEnter at or after openUntil must grant a probe: %+v", d)
	assert.Equal(h.t, gate.HalfOpen, d.State, "probe grant: State")
	assert.Equal(h.t, time.Duration(0), d.RetryAfter, "probe grant: RetryAfter")
}

// rejectedHalfOpen asserts a HalfOpen rejection: RetryAfter exactly 0, never
// the lease length.
func (h *breakerHarness) rejectedHalfOpen(d gate.Decision) {
	h.t.Helper()
	assert.False(h.t, d.Allowed, "HalfOpen with every lease taken must reject: %+v", d)
	assert.False(h.t, d.Probe, "HalfOpen rejection: Probe")
	assert.Equal(h.t, gate.HalfOpen, d.State, "HalfOpen rejection: State")
	assert.Equal(h.t, time.Duration(0), d.RetryAfter, "HalfOpen rejection: RetryAfter is 0, never the lease length")
}

// rejectedOpen asserts an Open rejection with RetryAfter = openUntil − now.
func (h *breakerHarness) rejectedOpen(d gate.Decision, openUntil time.Time) {
	h.t.Helper()
	assert.False(h.t, d.Allowed, "Open before openUntil must reject: %+v", d)
	assert.False(h.t, d.Probe, "Open rejection: Probe")
	assert.Equal(h.t, gate.Open, d.State, "Open rejection: State")
	h.near(openUntil.Sub(h.clk.Now()), d.RetryAfter, "Open rejection: RetryAfter = openUntil − now")
}

// miss asserts a fencing miss reporting state want.
func (h *breakerHarness) miss(u gate.Update, want gate.State, openUntil time.Time) {
	h.t.Helper()
	assert.False(h.t, u.Applied, "fencing miss: Applied")
	assert.Equal(h.t, want, u.State, "fencing miss: State")
	if want == gate.Open {
		h.near(openUntil.Sub(h.clk.Now()), u.RetryAfter, "fencing miss in Open: RetryAfter = openUntil − now")
	} else {
		assert.Equal(h.t, time.Duration(0), u.RetryAfter, "fencing miss in %v: RetryAfter", want)
	}
}

// near asserts got = want within the clock's Slack; want below 0 means 0.
// On a fake clock (Slack 0) the comparison is exact.
func (h *breakerHarness) near(want, got time.Duration, what string) {
	h.t.Helper()
	want = max(want, 0)
	slack := h.clk.Slack()
	if slack == 0 {
		assert.Equal(h.t, want, got, what)
		return
	}
	assert.InDelta(h.t, float64(want), float64(got), float64(slack), "%s: want %v ± %v, got %v", what, want, slack, got)
}

// nearTime asserts got = want within the clock's Slack.
func (h *breakerHarness) nearTime(want, got time.Time, what string) {
	h.t.Helper()
	slack := h.clk.Slack()
	if slack == 0 {
		assert.True(h.t, want.Equal(got), "%s: want %v, got %v", what, want, got)
		return
	}
	assert.WithinDuration(h.t, want, got, slack, what)
}

// advancePast moves the clock past a boundary d ahead: exactly d on a fake
// clock (the boundary itself counts as passed: "at or after openUntil"),
// d + Slack on real time.
func (h *breakerHarness) advancePast(d time.Duration) { h.clk.Advance(d + h.clk.Slack()) }

// shortOf is how far before a boundary a "not yet" check stands: 1ms on a
// fake clock, twice the Slack on real time.
func (h *breakerHarness) shortOf() time.Duration { return max(2*h.clk.Slack(), time.Millisecond) }

// trip opens a Closed source with ConsecutiveFailures failures and returns
// the instant openUntil was set to (by the caller's clock).
func (h *breakerHarness) trip() time.Time { return h.tripOn(h.src) }

func (h *breakerHarness) tripOn(src string) time.Time {
	h.t.Helper()
	n := h.p.WithDefaults().ConsecutiveFailures
	for i := range n {
		d := h.enterOn(src)
		require.True(h.t, d.Allowed, "trip %q: admission %d of %d: %+v", src, i+1, n, d)
		require.Equal(h.t, gate.Closed, d.State, "trip %q: admission %d of %d", src, i+1, n)
		u := h.recordOn(src, d, gate.Failure)
		require.True(h.t, u.Applied, "trip %q: failure %d of %d not applied", src, i+1, n)
		if i < n-1 {
			require.Equal(h.t, gate.Closed, u.State, "trip %q: opened after %d of %d failures", src, i+1, n)
		} else {
			require.Equal(h.t, gate.Open, u.State, "trip %q: still %v after %d failures", src, u.State, n)
		}
	}
	return h.clk.Now().Add(h.p.Cooldown)
}

// toHalfOpen trips the source, waits out the cooldown and returns the probe
// grant of the first TryEnter.
func (h *breakerHarness) toHalfOpen() gate.Decision {
	h.t.Helper()
	h.trip()
	h.advancePast(h.p.Cooldown)
	d := h.enter()
	h.probe(d)
	return d
}
