package modelcheck

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/pgw-go/pgw/gate"
)

// sources are the names every breaker sequence draws from.
var sources = []string{"a", "b", "c"}

// randomPolicy draws a breaker policy for a simulated (miniredis) run:
// mostly whole milliseconds, cooldowns multiples of 8 ms; a third of the
// policies get parts finer than a millisecond (µs, and ns that both gates
// drop alike) and a multiplier that leaves fractional µs to round. Some have the rules beside the default ones: a per-phase probe
// cap with failure tolerance (HalfOpenCalls), the consecutive rule off
// (gate.Disabled), a failure count in the window (WindowFailures, with or
// without the rate rule).
func randomPolicy(r *rand.Rand) gate.Policy {
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	p := gate.Policy{
		ConsecutiveFailures: 1 + r.IntN(4),
		Cooldown:            ms(8 * (2 + r.IntN(39))), // 16–320 ms
		CooldownMultiplier:  []float64{1, 1.5, 2, 3}[r.IntN(4)],
		ProbeTTL:            ms(10 + r.IntN(391)),
		SuccessThreshold:    1 + r.IntN(2),
		HalfOpenProbes:      1 + r.IntN(2),
	}
	p.MaxCooldown = p.Cooldown * time.Duration([]int{1, 2, 4, 9}[r.IntN(4)])
	if r.IntN(2) == 0 {
		// Mostly whole 10 ms multiples; sometimes not, so that both gates
		// must floor the bucket width alike.
		p.Window = ms(10 * (10 + r.IntN(51)))
		if r.IntN(4) == 0 {
			p.Window += ms(1 + r.IntN(9))
		}
		p.WindowMinCalls = 1 + r.IntN(5)
		p.WindowFailureRate = []float64{0.2, 0.3, 0.5, 0.6, 1}[r.IntN(5)]
	}
	if r.IntN(3) == 0 {
		p.HalfOpenProbes = 1 + r.IntN(3)
		p.SuccessThreshold = 1 + r.IntN(3)
		p.HalfOpenCalls = p.SuccessThreshold + r.IntN(3)
	}
	if r.IntN(4) == 0 {
		p.ConsecutiveFailures = gate.Disabled
	}
	if p.Window > 0 && r.IntN(2) == 0 {
		p.WindowFailures = 1 + r.IntN(4)
		if r.IntN(2) == 0 {
			p.WindowFailureRate = 0
		}
	}
	if r.IntN(3) == 0 {
		p.Cooldown += time.Duration(r.IntN(1000))*time.Microsecond + time.Duration(r.IntN(1000))
		p.ProbeTTL += time.Duration(r.IntN(1000))*time.Microsecond + time.Duration(r.IntN(1000))
		p.MaxCooldown = max(p.MaxCooldown, p.Cooldown)
		p.CooldownMultiplier = []float64{1, 1.3, 2.7}[r.IntN(3)]
	}
	return p
}

// realPolicy draws a policy for a real-time run: cooldowns and leases of
// 100–300 ms, and windows long enough (2–3 s, buckets of 200–300 ms) that
// the operations fit between bucket edges with the margin on both sides.
func realPolicy(r *rand.Rand) gate.Policy {
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	p := gate.Policy{
		ConsecutiveFailures: 1 + r.IntN(4),
		Cooldown:            ms(8 * (13 + r.IntN(25))), // 104–296 ms
		CooldownMultiplier:  []float64{1, 1.5, 2, 3}[r.IntN(4)],
		ProbeTTL:            ms(100 + r.IntN(201)),
		SuccessThreshold:    1 + r.IntN(2),
		HalfOpenProbes:      1 + r.IntN(2),
	}
	p.MaxCooldown = p.Cooldown * time.Duration([]int{1, 2, 3}[r.IntN(3)])
	if r.IntN(2) == 0 {
		p.Window = ms(100 * (20 + r.IntN(11)))
		p.WindowMinCalls = 1 + r.IntN(4)
		p.WindowFailureRate = []float64{0.3, 0.5, 0.6, 1}[r.IntN(4)]
	}
	return p
}

// policyExpr renders p as a Go literal.
func policyExpr(p gate.Policy) string {
	d := func(v time.Duration) string {
		if v%time.Millisecond == 0 {
			return fmt.Sprintf("%d * time.Millisecond", v/time.Millisecond)
		}
		return fmt.Sprintf("%d", int64(v))
	}
	var f []string
	add := func(s string, args ...any) { f = append(f, fmt.Sprintf(s, args...)) }
	add("ConsecutiveFailures: %d", p.ConsecutiveFailures)
	if p.Window > 0 {
		add("Window: %s", d(p.Window))
		add("WindowMinCalls: %d", p.WindowMinCalls)
		add("WindowFailureRate: %g", p.WindowFailureRate)
	}
	add("Cooldown: %s", d(p.Cooldown))
	add("MaxCooldown: %s", d(p.MaxCooldown))
	add("CooldownMultiplier: %g", p.CooldownMultiplier)
	add("ProbeTTL: %s", d(p.ProbeTTL))
	add("SuccessThreshold: %d", p.SuccessThreshold)
	add("HalfOpenProbes: %d", p.HalfOpenProbes)
	return "gate.Policy{" + strings.Join(f, ", ") + "}"
}

// breakerGen draws the next step of a sequence from the state the lockstep
// run has reached, so that advances land on (and next to) the instants that
// matter and Records use current, stale, foreign and forged decisions.
type breakerGen struct {
	r      *rand.Rand
	nextID int
	// maxAdvance bounds ordinary advances, in ms.
	maxAdvance int64
	// real: real time. Advances are longer and more frequent (a short
	// sequence must still get through cooldowns), and an advance aimed at an
	// edge lands past it by more than the margin instead of on it.
	real bool
}

func (g *breakerGen) next(w *breakerWorld) Step {
	src := sources[g.r.IntN(len(sources))]
	x := g.r.IntN(100)
	if g.real && x >= 60 && x < 80 {
		return g.advance(w) // real runs: 35% advances instead of 22%
	}
	switch {
	case x < 28:
		return g.enter(src)
	case x < 62:
		if s, ok := g.record(w, src); ok {
			return s
		}
		return g.enter(src)
	case x < 84:
		return g.advance(w)
	case x < 90:
		return Snap(src)
	case x < 92:
		if g.r.IntN(4) > 0 {
			return g.force(src) // 1.5% of steps
		}
		return Snap(src)
	default:
		n := g.r.IntN(4) // 0: RetryAfter of no source is 0
		srcs := make([]string, n)
		for i := range srcs {
			srcs[i] = sources[g.r.IntN(len(sources))] // duplicates allowed
		}
		return RetryAfterOf(srcs...)
	}
}

// force draws an operator override; ForceNone often enough that forced
// phases end, and now and then an invalid value.
func (g *breakerGen) force(src string) Step {
	switch x := g.r.IntN(20); {
	case x == 0:
		return Force(src, gate.Force(3+g.r.IntN(3)))
	case x < 11:
		return Force(src, gate.ForceNone)
	case x < 15:
		return Force(src, gate.ForceOpen)
	default:
		return Force(src, gate.ForceClosed)
	}
}

func (g *breakerGen) enter(src string) Step {
	g.nextID++
	return Enter(src, g.nextID)
}

func (g *breakerGen) outcome() gate.Outcome {
	if g.r.IntN(200) == 0 {
		return gate.Outcome(g.r.IntN(2) * 5) // invalid: 0 or 5
	}
	switch x := g.r.IntN(100); {
	case x < 40:
		return gate.Success
	case x < 75:
		return gate.Failure
	case x < 83:
		return gate.Fatal
	default:
		return gate.Released
	}
}

func (g *breakerGen) record(w *breakerWorld, src string) (Step, bool) {
	o := g.outcome()
	s := w.source(src)
	switch x := g.r.IntN(100); {
	case x < 58: // the latest allowed decision not yet recorded: usually current
		for i := len(s.decisions) - 1; i >= 0; i-- {
			if d := w.decs[s.decisions[i]]; d.mem.Allowed && !d.recorded {
				return Record(src, s.decisions[i], o), true
			}
		}
		return Step{}, false
	case x < 82: // any earlier decision of this source: stale, rejected or recorded
		if len(s.decisions) == 0 {
			return Step{}, false
		}
		return Record(src, s.decisions[g.r.IntN(len(s.decisions))], o), true
	case x < 90: // a decision of another source
		if len(w.decs) == 0 {
			return Step{}, false
		}
		return Record(src, 1+g.r.IntN(g.nextID), o), true
	default: // a forged decision with a plausible token
		d := gate.Decision{
			Allowed: g.r.IntN(10) > 0,
			Probe:   g.r.IntN(2) == 0,
			Token:   uint64(g.r.IntN(int(s.maxToken) + 3)),
		}
		d.State = gate.Closed
		if d.Probe {
			d.State = gate.HalfOpen
		}
		return RecordForged(src, d, o), true
	}
}

func (g *breakerGen) advance(w *breakerWorld) Step {
	x := g.r.IntN(100)
	if x < 24 || (g.real && x < 45) {
		if edges := g.edges(w); len(edges) > 0 {
			ms := edges[g.r.IntN(len(edges))]
			if g.real {
				ms += (realMargin + 5*time.Millisecond).Milliseconds() + g.r.Int64N(15)
			} else {
				ms += int64(g.r.IntN(3) - 1) // on the edge, or 1 ms either side
			}
			return Advance(max(ms, 1))
		}
	}
	switch {
	case x < 55 && !g.real:
		return Advance(1 + g.r.Int64N(min(10, g.maxAdvance)))
	case x < 99 || g.real:
		return Advance(1 + g.r.Int64N(g.maxAdvance))
	default: // long idle: keys may expire in Redis
		return Advance(w.p.MaxCooldown.Milliseconds() + g.r.Int64N(2*w.ttl.Milliseconds()))
	}
}

// edges are the distances in ms from now to the next instants where some
// source's answers change.
func (g *breakerGen) edges(w *breakerWorld) []int64 {
	now := w.tl.Now()
	var out []int64
	add := func(t time.Time) {
		// Real time is paid for: skip edges further than a few cooldowns.
		if d := t.Sub(now); d > 0 && (!g.real || d < 400*time.Millisecond) {
			out = append(out, d.Milliseconds())
		}
	}
	for _, name := range sources {
		s := w.source(name)
		if snap, err := w.mem.Snapshot(context.Background(), w.memName(name)); err == nil && snap.State == gate.Open {
			add(snap.OpenUntil)
		}
		for _, l := range s.leases {
			add(l)
		}
	}
	if w.width > 0 {
		add(w.bucketStart(now).Add(w.width))
		add(w.bucketStart(now).Add(10 * w.width)) // an outcome ages out
	}
	if g.r.IntN(8) == 0 {
		for _, name := range sources {
			if s := w.source(name); s.refreshed && !s.forced {
				add(s.lastWrite.Add(w.ttl))
			}
		}
	}
	return out
}
