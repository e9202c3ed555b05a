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
// (Clock.Slack > 0) stays within a few seconds, long enough that round trips
// and a Slack of a few tens of milliseconds cannot blur one phase into the
// next.
const (
	baseCooldown    = 200 * time.Millisecond
	baseProbeTTL    = 400 * time.Millisecond // ≠ Cooldown, so a lease length leaking into RetryAfter shows
	baseMaxCooldown = 800 * time.Millisecond
	baseFailures    = 3
)

// longLease gives probe leases 10 × baseProbeTTL (4s, still ≠ Cooldown), for
// the cases that hold a lease through many calls but never wait for it to
// expire: on a loaded machine those calls may take longer than 400ms.
func longLease(p *gate.Policy) { p.ProbeTTL = 10 * baseProbeTTL }

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

// RunBreaker runs the breaker contract of package gate's documentation
// against the gates newGate builds: every row of the pinned RetryAfter
// table, every transition, cooldown growth and its cap, probe lease expiry,
// fencing of stale and old-generation outcomes, Fatal from each state,
// Released, concurrent probe grants, Snapshot, the generation every answer
// carries ("Generations" in package gate), and the case of a HalfOpen
// rejection that must not hide a recovered source.
//
// Subtests run in parallel, each on its own gate and source; RunBreaker
// returns when all of them have finished, so the caller may release shared
// resources after it returns. Durations and instants the gate reports are
// compared exactly on a fake clock and, on real time, with the bracket the
// package doc describes; zero values must be exactly 0 on every clock. On a
// fake clock every advance is a whole number of milliseconds. On real time the subtests mostly sleep, so their wall time is
// bounded by `go test -parallel` (default GOMAXPROCS): about 6 s at
// -parallel 2, under 3 s at -parallel 16 or more.
//
// Where package gate's documentation leaves a point open, the suite assumes:
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
	cases = append(cases, ruleCases()...)
	cases = append(cases, edgeCases()...)

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
					t:      t,
					g:      g,
					timing: timing{clk: clk},
					p:      p,
					src:    sourceName(nonce, c.name, ""),
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
// the port's calls so that every error fails the subtest at once. Each
// wrapper brackets its call (timing.last), which the assertions after it use.
type breakerHarness struct {
	timing
	t   *testing.T
	g   gate.ProviderGate
	p   gate.Policy
	src string
}

// other returns a second source name for this subtest.
func (h *breakerHarness) other(suffix string) string { return h.src + "-" + suffix }

func (h *breakerHarness) enter() gate.Decision { return h.enterOn(h.src) }

func (h *breakerHarness) enterOn(src string) gate.Decision {
	h.t.Helper()
	lo := h.begin()
	d, err := h.g.TryEnter(h.t.Context(), src)
	h.end(lo)
	require.NoError(h.t, err, "TryEnter(%q)", src)
	assert.GreaterOrEqual(h.t, d.RetryAfter, time.Duration(0), "TryEnter(%q): RetryAfter is never negative", src)
	return d
}

func (h *breakerHarness) record(d gate.Decision, o gate.Outcome) gate.Update {
	return h.recordOn(h.src, d, o)
}

func (h *breakerHarness) recordOn(src string, d gate.Decision, o gate.Outcome) gate.Update {
	h.t.Helper()
	lo := h.begin()
	u, err := h.g.Record(h.t.Context(), src, d, o)
	h.end(lo)
	require.NoError(h.t, err, "Record(%q, %+v, %v)", src, d, o)
	assert.GreaterOrEqual(h.t, u.RetryAfter, time.Duration(0), "Record(%q, %v): RetryAfter is never negative", src, o)
	return u
}

func (h *breakerHarness) snap() gate.Snapshot { return h.snapOn(h.src) }

func (h *breakerHarness) snapOn(src string) gate.Snapshot {
	h.t.Helper()
	lo := h.begin()
	s, err := h.g.Snapshot(h.t.Context(), src)
	h.end(lo)
	require.NoError(h.t, err, "Snapshot(%q)", src)
	assert.GreaterOrEqual(h.t, s.RetryAfter, time.Duration(0), "Snapshot(%q): RetryAfter is never negative", src)
	return s
}

func (h *breakerHarness) retryAfter(sources ...string) time.Duration {
	h.t.Helper()
	lo := h.begin()
	ra, err := h.g.RetryAfter(h.t.Context(), sources)
	h.end(lo)
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

// rejectedOpen asserts that d, the answer of the latest call, is an Open
// rejection with RetryAfter = openUntil − now.
func (h *breakerHarness) rejectedOpen(d gate.Decision, openUntil moment) {
	h.t.Helper()
	assert.False(h.t, d.Allowed, "Open before openUntil must reject: %+v", d)
	assert.False(h.t, d.Probe, "Open rejection: Probe")
	assert.Equal(h.t, gate.Open, d.State, "Open rejection: State")
	h.remaining(openUntil, d.RetryAfter, "Open rejection: RetryAfter = openUntil − now")
}

// miss asserts that u, the answer of the latest call, is a fencing miss
// reporting state want (openUntil matters only when want is Open).
func (h *breakerHarness) miss(u gate.Update, want gate.State, openUntil moment) {
	h.t.Helper()
	assert.False(h.t, u.Applied, "fencing miss: Applied")
	assert.Equal(h.t, want, u.State, "fencing miss: State")
	if want == gate.Open {
		h.remaining(openUntil, u.RetryAfter, "fencing miss in Open: RetryAfter = openUntil − now")
	} else {
		assert.Equal(h.t, time.Duration(0), u.RetryAfter, "fencing miss in %v: RetryAfter", want)
	}
}

// remaining asserts got = openUntil − now, clamped at 0, for the latest call:
// on real time, between openUntil.lo − the call's end and openUntil.hi − its
// start.
func (h *breakerHarness) remaining(openUntil moment, got time.Duration, what string) {
	h.t.Helper()
	h.within(h.t, openUntil.since(h.last).clamped(), got, what)
}

// opened asserts the RetryAfter of an Update that opened the source (or
// pushed its openUntil) with cooldown: openUntil = the latest call's instant
// + cooldown, so RetryAfter = cooldown, read at that same instant — exactly
// on a fake clock, within the call's own bracket on real time. It returns
// the moment openUntil was set to.
func (h *breakerHarness) opened(cooldown, got time.Duration, what string) moment {
	h.t.Helper()
	openUntil := h.last.add(cooldown)
	h.remaining(openUntil, got, what)
	return openUntil
}

// shortOf is how far before a boundary a "not yet" check stands: 1ms on a
// fake clock, twice the Slack on real time, where the check counts only if
// the call's bracket shows it landed before the boundary (timing.before).
func (h *breakerHarness) shortOf() time.Duration { return max(2*h.clk.Slack(), time.Millisecond) }

// trip opens a Closed source with ConsecutiveFailures failures and returns
// the moment openUntil was set to: the tripping Record's bracket + Cooldown.
func (h *breakerHarness) trip() moment { return h.tripOn(h.src) }

func (h *breakerHarness) tripOn(src string) moment {
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
	return h.last.add(h.p.Cooldown)
}

// toHalfOpen trips the source, waits out the cooldown and returns the probe
// grant of the first TryEnter.
func (h *breakerHarness) toHalfOpen() gate.Decision {
	h.t.Helper()
	h.advanceTo(h.trip())
	d := h.enter()
	h.probe(d)
	return d
}

// maxAttempts bounds how often a case whose "not yet" check could not be
// judged (see judged) starts over on a fresh source.
const maxAttempts = 3

// judged reports whether a call that was meant to land just before boundary
// and was admitted can be judged: on real time a slow round trip may have
// carried it to or past the boundary, where admitting it is right. A
// rejection is always judged (its RetryAfter is then checked against the
// bracket), and so is every call on a fake clock.
func (h *breakerHarness) judged(boundary moment, admitted bool) bool {
	h.t.Helper()
	if !admitted || h.before(boundary) {
		return true
	}
	h.t.Logf("a call meant to land before %v ran from %v to %v: admitting it is right, starting over on a fresh source",
		boundary.lo, h.last.lo, h.last.hi)
	return false
}

// attempts runs body, which reports false when its "not yet" check could not
// be judged, again on a fresh source until it can, at most maxAttempts
// times; running out of attempts fails the case, since it then checked
// nothing.
func (h *breakerHarness) attempts(body func() bool) {
	h.t.Helper()
	base := h.src
	for i := 1; !body(); i++ {
		require.Less(h.t, i, maxAttempts, "%d attempts in a row were too slow to judge a call just before a boundary", i)
		h.src = fmt.Sprintf("%s-again%d", base, i)
	}
}
