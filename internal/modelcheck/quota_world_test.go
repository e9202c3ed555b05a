package modelcheck

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/pgw-go/pgw/gate"
)

// quotaWorld is one lockstep run of the quota gates: the memory gate and the
// Redis gate on one timeline, every step applied to both and the answers
// compared.
type quotaWorld struct {
	limits map[string]gate.Limits
	mem    gate.QuotaGate
	red    gate.QuotaGate
	tl     timeline
	tol    time.Duration
	lease  time.Duration // the Redis gate's in-flight lease length

	permits map[int]*permit
	due     map[string]due
	stats   quotaCoverage
	// raced: on a real timeline, the gates answered an Acquire on either
	// side of a rate edge they read the clock apart across (clockRace); the
	// run stops there, compared up to that step.
	raced bool
}

// permit is one Acquire's answer from each gate.
type permit struct {
	source   string
	est      int64
	mem, red gate.Permit
	allowed  bool
	// until is when the Redis lease expires (granted + lease); zero without
	// an in-flight lease. The memory gate's slots never expire (gate/memory
	// documents it; a process that dies frees them all), so when the Redis
	// lease expires the harness releases the memory slot, which is what the
	// expiry means: the slot is free again and the permit's own Release
	// frees nothing.
	until   time.Time
	expired bool
}

// due is what the last rate rejection of a source promised: the same
// request is admitted by the rate limits from at on, not a µs before
// (gate.QuotaDecision.RetryAfter is exact).
type due struct {
	at     time.Time
	est    int64
	limit  string
	pledge bool
}

type quotaCoverage struct {
	granted, rejectRPM, rejectTPM, rejectInFlight, tokenErrors   int
	settles, releases, leaseExpiries, retriesAtDue, retriesEarly int
	clockRaces                                                   int
}

func (c *quotaCoverage) add(o quotaCoverage) {
	c.granted += o.granted
	c.rejectRPM += o.rejectRPM
	c.rejectTPM += o.rejectTPM
	c.rejectInFlight += o.rejectInFlight
	c.tokenErrors += o.tokenErrors
	c.settles += o.settles
	c.releases += o.releases
	c.leaseExpiries += o.leaseExpiries
	c.retriesAtDue += o.retriesAtDue
	c.retriesEarly += o.retriesEarly
	c.clockRaces += o.clockRaces
}

func (c quotaCoverage) String() string {
	return fmt.Sprintf("Acquire: %d granted, %d rejected by RPM, %d by TPM, %d by MaxInFlight, %d token errors; "+
		"%d retries at RetryAfter, %d retries before it; %d Settle, %d Release, %d lease expiries; %d runs stopped at a clock race",
		c.granted, c.rejectRPM, c.rejectTPM, c.rejectInFlight, c.tokenErrors,
		c.retriesAtDue, c.retriesEarly, c.settles, c.releases, c.leaseExpiries, c.clockRaces)
}

func newQuotaWorld(limits map[string]gate.Limits, mem, red gate.QuotaGate, tl timeline, tol, lease time.Duration) *quotaWorld {
	return &quotaWorld{limits: limits, mem: mem, red: red, tl: tl, tol: tol, lease: lease,
		permits: map[int]*permit{}, due: map[string]due{}}
}

// expireLeases releases, in the memory gate, every slot whose Redis lease has
// expired by now (a lease is alive while now < expiry).
func (w *quotaWorld) expireLeases() {
	now := w.tl.Now()
	for _, p := range w.permits {
		if !p.until.IsZero() && !p.expired && !now.Before(p.until) {
			p.expired = true
			w.stats.leaseExpiries++
			_ = w.mem.Release(context.Background(), p.mem)
		}
	}
}

// bounds are the instants near which a quota operation may change its answer
// that the harness knows of: lease expiry and the instants rejections named.
// (Other rate edges are unknown in advance; the real-time test replays a
// divergence before believing it.)
func (w *quotaWorld) bounds(time.Time) []time.Time {
	var out []time.Time
	for _, p := range w.permits {
		if !p.until.IsZero() && !p.expired {
			out = append(out, p.until)
		}
	}
	for _, d := range w.due {
		if d.pledge {
			out = append(out, d.at)
		}
	}
	return out
}

// clockRace reports whether, on a real timeline, one gate admitted an
// Acquire that the other refused by a rate limit with a RetryAfter within
// the tolerance: the two read their clocks up to that far apart (Redis's at
// the script, after a round trip a busy machine may delay), so a request
// that lands within that distance of a bucket's edge can fall on either
// side of it. The gates' states part there (one holds tokens the other
// does not), so the run is compared up to that step only. A simulated
// timeline never races: both gates see the same instants, and any such
// difference there is a divergence.
func (w *quotaWorld) clockRace(md, rd gate.QuotaDecision) bool {
	if w.tl.Exact() || md.Allowed == rd.Allowed {
		return false
	}
	refused := md
	if md.Allowed {
		refused = rd
	}
	rated := refused.Limit == gate.LimitRPM || refused.Limit == gate.LimitTPM
	return rated && refused.RetryAfter <= w.tol
}

func (w *quotaWorld) settle() {
	w.tl.Settle(w.bounds)
	w.expireLeases()
}

func (w *quotaWorld) run(steps []Step) *divergence {
	for i, s := range steps {
		if d := w.exec(s); d != "" {
			return &divergence{step: i, what: d}
		}
		if w.raced {
			return nil
		}
	}
	return nil
}

func (w *quotaWorld) exec(st Step) string {
	ctx := context.Background()
	switch st.Kind {
	case KindAdvance:
		w.tl.Advance(time.Duration(st.Ms) * time.Millisecond)
		return ""
	case KindAcquire:
		w.settle()
		now := w.tl.Now()
		mp, md, merr := w.mem.Acquire(ctx, st.Source, st.Tokens)
		rp, rd, rerr := w.red.Acquire(ctx, st.Source, st.Tokens)
		p := &permit{source: st.Source, est: st.Tokens, mem: mp, red: rp, allowed: md.Allowed && merr == nil}
		w.permits[st.ID] = p
		if merr != nil || rerr != nil {
			w.stats.tokenErrors++
			return diffErrors("Acquire", merr, rerr)
		}
		if w.clockRace(md, rd) {
			w.stats.clockRaces++
			w.raced = true
			return ""
		}
		if p.allowed && (mp.Lease != 0) {
			p.until = now.Add(w.lease)
		}
		var bad []string
		bad = append(bad, quotaContract("memory", md)...)
		bad = append(bad, quotaContract("redis", rd)...)
		if md.Allowed != rd.Allowed || md.Limit != rd.Limit || !w.closeEnough(md.RetryAfter, rd.RetryAfter) {
			bad = append(bad, fmt.Sprintf("Acquire(%q, %d): memory %s, redis %s", st.Source, st.Tokens, fmtQuota(md), fmtQuota(rd)))
		}
		if mp.Source != rp.Source || mp.Tokens != rp.Tokens || (mp.Lease != 0) != (rp.ID != "") {
			bad = append(bad, fmt.Sprintf("Acquire(%q, %d) permits: memory %+v, redis %+v (want the same source and tokens, and a lease in both or neither)",
				st.Source, st.Tokens, mp, rp))
		}
		bad = append(bad, w.checkDue(st, now, md)...)
		switch {
		case md.Allowed:
			w.stats.granted++
		case md.Limit == gate.LimitRPM:
			w.stats.rejectRPM++
		case md.Limit == gate.LimitTPM:
			w.stats.rejectTPM++
		default:
			w.stats.rejectInFlight++
		}
		return strings.Join(bad, "; ")
	case KindSettle:
		var mp, rp gate.Permit
		if st.ID == 0 {
			mp = gate.Permit{Source: st.Source, Tokens: st.Tokens}
			rp = mp
		} else {
			p, ok := w.permits[st.ID]
			if !ok {
				return ""
			}
			mp, rp = p.mem, p.red
		}
		w.settle()
		delete(w.due, mp.Source) // the token account moved
		merr := w.mem.Settle(ctx, mp, st.Actual)
		rerr := w.red.Settle(ctx, rp, st.Actual)
		w.stats.settles++
		return diffErrors("Settle", merr, rerr)
	case KindRelease:
		var mp, rp gate.Permit
		if st.ID != 0 {
			p, ok := w.permits[st.ID]
			if !ok {
				return ""
			}
			mp, rp = p.mem, p.red
		}
		w.settle()
		merr := w.mem.Release(ctx, mp)
		rerr := w.red.Release(ctx, rp)
		w.stats.releases++
		return diffErrors("Release", merr, rerr)
	}
	return fmt.Sprintf("step kind %d is not a quota step", st.Kind)
}

// checkDue holds a retry to the promise of the rejection before it, then
// records this answer's promise.
func (w *quotaWorld) checkDue(st Step, now time.Time, d gate.QuotaDecision) []string {
	var bad []string
	rated := !d.Allowed && (d.Limit == gate.LimitRPM || d.Limit == gate.LimitTPM)
	if p, ok := w.due[st.Source]; ok && p.pledge && p.est == st.Tokens {
		switch {
		case !now.Before(p.at.Add(w.tol)):
			w.stats.retriesAtDue++
			if rated {
				bad = append(bad, fmt.Sprintf("contract: Acquire(%q, %d) rejected by %s at %v after a rejection whose RetryAfter promised admission by the rate limits from %v",
					st.Source, st.Tokens, d.Limit, now.Format("15:04:05.000000"), p.at.Format("15:04:05.000000")))
			}
		case now.Before(p.at.Add(-w.tol)):
			w.stats.retriesEarly++
			if !rated {
				bad = append(bad, fmt.Sprintf("contract: Acquire(%q, %d) admitted by the rate limits at %v, before %v that the previous rejection's RetryAfter named (%s)",
					st.Source, st.Tokens, now.Format("15:04:05.000000"), p.at.Format("15:04:05.000000"), fmtQuota(d)))
			}
		}
	}
	if rated {
		w.due[st.Source] = due{at: now.Add(d.RetryAfter), est: st.Tokens, limit: d.Limit, pledge: true}
	} else {
		delete(w.due, st.Source) // an admission moved the account
	}
	return bad
}

func (w *quotaWorld) closeEnough(a, b time.Duration) bool {
	d := a - b
	return d <= w.tol && -d <= w.tol
}

// quotaContract checks one Acquire answer against gate.QuotaDecision.
func quotaContract(who string, d gate.QuotaDecision) []string {
	var bad []string
	add := func(msg string) { bad = append(bad, fmt.Sprintf("contract (%s): %s in %s", who, msg, fmtQuota(d))) }
	switch {
	case d.RetryAfter < 0:
		add("negative RetryAfter")
	case d.Allowed && (d.RetryAfter != 0 || d.Limit != ""):
		add("allowed with a RetryAfter or a Limit")
	case !d.Allowed && d.Limit != gate.LimitRPM && d.Limit != gate.LimitTPM && d.Limit != gate.LimitInFlight:
		add("rejected without a legal Limit")
	case d.Limit == gate.LimitInFlight && d.RetryAfter != 0:
		add("MaxInFlight rejection with RetryAfter ≠ 0")
	case !d.Allowed && d.Limit != gate.LimitInFlight && d.RetryAfter == 0:
		add("rate rejection with RetryAfter 0")
	}
	return bad
}

// diffErrors compares two errors of the same operation: both nil, or both
// the same *gate.TokensError.
func diffErrors(op string, m, r error) string {
	if m == nil && r == nil {
		return ""
	}
	var mt, rt *gate.TokensError
	if errors.As(m, &mt) && errors.As(r, &rt) && *mt == *rt {
		return ""
	}
	return fmt.Sprintf("%s errors: memory %v, redis %v", op, m, r)
}

func fmtQuota(d gate.QuotaDecision) string {
	return fmt.Sprintf("{Allowed:%t RetryAfter:%v Limit:%q}", d.Allowed, d.RetryAfter, d.Limit)
}
