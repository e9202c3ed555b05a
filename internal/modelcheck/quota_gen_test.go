package modelcheck

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/pgw-go/pgw/gate"
)

// randomLimits draws each source's limits: RPM and TPM from values that
// divide a minute into whole µs and values that do not (RetryAfter must round
// up alike in Go and Lua), MaxInFlight 0–3; sometimes a source is unlimited
// or has no entry at all. real keeps the rates fast enough that waits of a
// few hundred ms occur.
func randomLimits(r *rand.Rand, real bool) map[string]gate.Limits {
	rpms := []int{0, 2, 5, 30, 60, 270, 1000}
	tpms := []int{0, 1000, 6000, 60_000, 1_234_567}
	if real {
		rpms = []int{0, 2, 3, 600}
		tpms = []int{0, 60_000, 120_000, 1_234_567}
	}
	out := map[string]gate.Limits{}
	for _, s := range sources {
		switch r.IntN(8) {
		case 0:
			continue // no entry: unlimited
		case 1:
			out[s] = gate.Limits{} // zero limits: unlimited
			continue
		}
		out[s] = gate.Limits{RPM: rpms[r.IntN(len(rpms))], TPM: tpms[r.IntN(len(tpms))], MaxInFlight: r.IntN(4)}
	}
	return out
}

func limitsExpr(limits map[string]gate.Limits) string {
	var f []string
	for _, s := range slices.Sorted(maps.Keys(limits)) {
		l := limits[s]
		f = append(f, fmt.Sprintf("%q: {RPM: %d, TPM: %d, MaxInFlight: %d}", s, l.RPM, l.TPM, l.MaxInFlight))
	}
	return "map[string]gate.Limits{" + strings.Join(f, ", ") + "}"
}

// quotaGen draws the next quota step from the state the run has reached:
// retries land on, just before and just after the instant a rejection named,
// Settle refunds and debits (beyond a minute's allowance too), Release of
// live, released, expired, rejected and zero permits.
type quotaGen struct {
	r      *rand.Rand
	limits map[string]gate.Limits
	nextID int
	real   bool
	// last is the latest Acquire step per source, to retry it.
	last map[string]Step
}

func (g *quotaGen) next(w *quotaWorld) Step {
	src := sources[g.r.IntN(len(sources))]
	switch x := g.r.IntN(100); {
	case x < 36:
		if last, ok := g.last[src]; ok && g.r.IntN(3) == 0 {
			g.nextID++
			return Acquire(src, g.nextID, last.Tokens) // a retry
		}
		return g.acquire(src)
	case x < 50:
		return g.settle(w, src)
	case x < 64:
		return g.release(w)
	default:
		return g.advance(w, src)
	}
}

func (g *quotaGen) est(src string) int64 {
	tpm := int64(g.limits[src].TPM)
	if tpm == 0 {
		tpm = 5000
	}
	switch x := g.r.IntN(100); {
	case x < 3:
		return -1 // a *gate.TokensError from both
	case x < 6:
		return tpm + 1 // beyond the TPM: an error when limited
	case x < 15:
		return 0
	case x < 30:
		return tpm / int64(1+g.r.IntN(4))
	default:
		return g.r.Int64N(tpm/5 + 1)
	}
}

func (g *quotaGen) acquire(src string) Step {
	g.nextID++
	s := Acquire(src, g.nextID, g.est(src))
	g.last[src] = s
	return s
}

func (g *quotaGen) settle(w *quotaWorld, src string) Step {
	tpm := int64(g.limits[src].TPM)
	actual := func(est int64) int64 {
		switch x := g.r.IntN(100); {
		case x < 3:
			return -1
		case x < 10:
			return 3*tpm + 7 // a debit beyond the ±2·TPM bound
		case x < 20:
			return est
		case x < 55:
			return g.r.Int64N(max(est, 1)) // refund
		default:
			return est + g.r.Int64N(tpm/4+10) // debit
		}
	}
	if len(w.permits) == 0 || g.r.IntN(10) == 0 {
		est := max(g.est(src), 0)
		return SettleForged(src, est, actual(est))
	}
	id := g.pick(w)
	return Settle(id, actual(w.permits[id].est))
}

func (g *quotaGen) release(w *quotaWorld) Step {
	if len(w.permits) == 0 || g.r.IntN(10) == 0 {
		return Release(0)
	}
	return Release(g.pick(w))
}

// pick mostly takes a live granted permit, sometimes any.
func (g *quotaGen) pick(w *quotaWorld) int {
	if g.r.IntN(4) > 0 {
		var live []int
		for id, p := range w.permits {
			if p.allowed && !p.expired {
				live = append(live, id)
			}
		}
		if len(live) > 0 {
			slices.Sort(live) // map order is random: keep runs reproducible
			return live[g.r.IntN(len(live))]
		}
	}
	ids := slices.Sorted(maps.Keys(w.permits))
	return ids[g.r.IntN(len(ids))]
}

func (g *quotaGen) advance(w *quotaWorld, src string) Step {
	now := w.tl.Now()
	if d, ok := w.due[src]; ok && d.pledge && g.r.IntN(2) == 0 {
		// Onto the instant the rejection named: the first whole ms at or
		// after it, or the last one before it.
		wait := d.at.Sub(now)
		ms := int64((wait + time.Millisecond - 1) / time.Millisecond)
		switch {
		case g.real:
			ms += (realMargin + 5*time.Millisecond).Milliseconds() + g.r.Int64N(15)
			if g.r.IntN(2) == 0 {
				ms = wait.Milliseconds() - (realMargin + 5*time.Millisecond).Milliseconds() - g.r.Int64N(15)
			}
		case g.r.IntN(3) == 0 && wait > time.Millisecond:
			ms = int64((wait - 1) / time.Millisecond) // strictly before
		}
		if ms > 0 && (!g.real || ms < 600) {
			return Advance(ms)
		}
	}
	switch x := g.r.IntN(100); {
	case x < 50:
		return Advance(1 + g.r.Int64N(20))
	case x < 80 || g.real:
		return Advance(1 + g.r.Int64N(200))
	case x < 90:
		var until []time.Time
		for _, id := range slices.Sorted(maps.Keys(w.permits)) {
			if p := w.permits[id]; !p.until.IsZero() && !p.expired && p.until.After(now) {
				until = append(until, p.until)
			}
		}
		if len(until) > 0 {
			return Advance(max(until[g.r.IntN(len(until))].Sub(now).Milliseconds()+int64(g.r.IntN(3)-1), 1))
		}
		return Advance(1 + g.r.Int64N(5000))
	default:
		return Advance(1 + g.r.Int64N(90_000)) // up to a minute and a half: buckets drain
	}
}
