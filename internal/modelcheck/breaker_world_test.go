package modelcheck

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/pgw-go/pgw/gate"
)

// breakerWorld is one lockstep run: the memory gate and the Redis gate on one
// timeline, every step applied to both and the answers compared.
type breakerWorld struct {
	p   gate.Policy // effective policy, defaults filled in
	mem gate.ProviderGate
	red gate.ProviderGate
	tl  timeline
	tol time.Duration // RetryAfter / OpenUntil tolerance; 0 when exact
	// snapEach compares the touched source's snapshots after every Enter and
	// Record, which catches hidden state (counts, window, cooldown) at the
	// step that broke it, at the price of a second script per step.
	snapEach bool
	ttl      time.Duration // the Redis gate's key TTL
	width    time.Duration // window bucket width; 0 without a window

	decs  map[int]decision
	src   map[string]*sourceModel
	nums  *numbering
	stats coverage
}

// coverage counts what a run exercised, so that a quiet model test can show
// it was not quiet for lack of trying.
type coverage struct {
	enterClosed, enterProbe, rejectOpen, rejectHalfOpen int
	applied, missed, fatal, opened, closed, expired     int
	forced                                              int
}

func (c *coverage) add(o coverage) {
	c.enterClosed += o.enterClosed
	c.enterProbe += o.enterProbe
	c.rejectOpen += o.rejectOpen
	c.rejectHalfOpen += o.rejectHalfOpen
	c.applied += o.applied
	c.missed += o.missed
	c.fatal += o.fatal
	c.opened += o.opened
	c.closed += o.closed
	c.expired += o.expired
	c.forced += o.forced
}

func (c coverage) String() string {
	return fmt.Sprintf("TryEnter: %d closed admissions, %d probes, %d Open rejections, %d HalfOpen rejections; "+
		"Record: %d applied (%d Fatal), %d fencing misses, %d → Open, %d → Closed; %d key expiries; %d Force",
		c.enterClosed, c.enterProbe, c.rejectOpen, c.rejectHalfOpen, c.applied, c.fatal, c.missed, c.opened, c.closed, c.expired, c.forced)
}

// decision is one TryEnter's answer from each gate.
type decision struct {
	source   string
	epoch    int // the source's TTL epoch when it was granted
	mem, red gate.Decision
	recorded bool
}

// sourceModel is what the harness knows of one source beyond the gates'
// answers: the Redis keys' TTL, which the contract of gate/doc.go does not
// cover. gate/redis documents that a script refreshes the TTL of a record
// it keeps or writes when it changes the state or openUntil, when the
// record has no expiry yet, or once less than half the TTL is left; and
// that a record left alone that long reads as a fresh Closed one at
// generation 0. The memory gate forgets nothing, so when the
// Redis keys must have expired the harness moves the source, in the memory
// gate only, to a fresh name ("a~1"): the memory gate then holds the same
// fresh record. The Redis record built again never repeats a number of the
// expired one but 0, so a decision granted before the expiry reaches the
// memory gate with a token no record hands out (forgottenToken) unless it
// is 0.
type sourceModel struct {
	epoch     int
	refreshed bool // the Redis record exists, with an expiry
	// forced: an override (gate.Forcer) holds the record, and gate/redis
	// keeps a forced record without TTL until ForceNone gives it back.
	forced    bool
	lastWrite time.Time   // memory-gate time of the last TTL refresh
	leases    []time.Time // expiry of probe leases granted (memory time)
	maxToken  uint64      // largest memory token seen, for forged decisions
	decisions []int       // ids of decisions obtained for this source
}

func newBreakerWorld(p gate.Policy, mem, red gate.ProviderGate, tl timeline, tol, ttl time.Duration) *breakerWorld {
	p = p.WithDefaults()
	w := &breakerWorld{p: p, mem: mem, red: red, tl: tl, tol: tol, ttl: ttl,
		decs: map[int]decision{}, src: map[string]*sourceModel{}, nums: newNumbering()}
	if p.Window > 0 {
		w.width = time.Duration(max(p.Window.Milliseconds()/10, 1)) * time.Millisecond
	}
	return w
}

func (w *breakerWorld) source(name string) *sourceModel {
	s := w.src[name]
	if s == nil {
		s = &sourceModel{}
		w.src[name] = s
	}
	return s
}

// memName is the memory gate's name of source in its current TTL epoch.
func (w *breakerWorld) memName(source string) string {
	if e := w.source(source).epoch; e > 0 {
		return source + "~" + strconv.Itoa(e)
	}
	return source
}

// expire moves source to a fresh memory record when its Redis keys have
// expired by now: miniredis deletes a key whose TTL reaches 0, and real
// Redis is kept away from the instant by Settle.
func (w *breakerWorld) expire(source string) {
	s := w.source(source)
	if s.refreshed && !s.forced && !w.tl.Now().Before(s.lastWrite.Add(w.ttl)) {
		s.epoch++
		w.stats.expired++
		s.refreshed = false
		s.leases = nil
	}
}

func (w *breakerWorld) refresh(source string) {
	s := w.source(source)
	s.refreshed, s.lastWrite = true, w.tl.Now()
}

// touch applies gate/redis's TTL rule to an operation that moved the
// memory record from before to after (probe: it granted a probe lease,
// which writes the lease counter). The Redis script writes the record when
// something of it changed; it refreshes the TTL of a record that exists or
// that it writes when the state or openUntil changed, when the record had
// no expiry, or once less than half the TTL is left. A forced record keeps
// no TTL (Force handles it).
func (w *breakerWorld) touch(source string, before, after gate.Snapshot, probe bool) {
	s := w.source(source)
	if s.forced {
		return
	}
	wrote := probe || before.State != after.State || before.Generation != after.Generation ||
		before.ConsecutiveFailures != after.ConsecutiveFailures || before.ProbeSuccesses != after.ProbeSuccesses ||
		before.ProbeFailures != after.ProbeFailures || before.WindowCalls != after.WindowCalls ||
		before.WindowFailures != after.WindowFailures || before.Cooldown != after.Cooldown ||
		!before.OpenUntil.Equal(after.OpenUntil)
	if !s.refreshed && !wrote {
		return // no key, nothing written
	}
	changed := before.State != after.State || !before.OpenUntil.Equal(after.OpenUntil)
	if !s.refreshed || changed || w.tl.Now().After(s.lastWrite.Add(w.ttl/2)) {
		w.refresh(source)
	}
}

// bounds are the instants near which an operation on sources may change its
// answer: openUntil, probe lease expiry, key expiry and window bucket edges.
func (w *breakerWorld) bounds(sources ...string) func(time.Time) []time.Time {
	return func(now time.Time) []time.Time {
		var out []time.Time
		for _, name := range sources {
			s := w.source(name)
			if snap, err := w.mem.Snapshot(context.Background(), w.memName(name)); err == nil && snap.State == gate.Open {
				out = append(out, snap.OpenUntil)
			}
			out = append(out, s.leases...)
			if s.refreshed && !s.forced {
				out = append(out, s.lastWrite.Add(w.ttl/2), s.lastWrite.Add(w.ttl))
			}
		}
		if w.width > 0 {
			edge := w.bucketStart(now)
			out = append(out, edge, edge.Add(w.width))
		}
		return out
	}
}

// bucketStart is the start of now's window bucket: both gates index buckets
// by unix milliseconds / width.
func (w *breakerWorld) bucketStart(now time.Time) time.Time {
	wms := w.width.Milliseconds()
	return time.UnixMilli(now.UnixMilli() / wms * wms)
}

// settle prepares an operation on sources: waits out nearby boundaries on a
// real timeline, then applies key expiry.
func (w *breakerWorld) settle(sources ...string) {
	w.tl.Settle(w.bounds(sources...))
	for _, s := range sources {
		w.expire(s)
	}
}

// divergence is a difference between the gates, or an answer that breaks the
// contract of gate/doc.go, at one step of a sequence.
type divergence struct {
	step int
	what string
}

func (d *divergence) Error() string { return fmt.Sprintf("step %d: %s", d.step, d.what) }

// run applies steps in order and returns the first divergence, or nil.
func (w *breakerWorld) run(steps []Step) *divergence {
	for i, s := range steps {
		if d := w.exec(s); d != "" {
			return &divergence{step: i, what: d}
		}
	}
	return nil
}

// exec applies one step to both gates and returns what differs ("" when
// nothing does).
func (w *breakerWorld) exec(st Step) string {
	ctx := context.Background()
	switch st.Kind {
	case KindAdvance:
		w.tl.Advance(time.Duration(st.Ms) * time.Millisecond)
		return ""
	case KindForce:
		mf, mok := w.mem.(gate.Forcer)
		rf, rok := w.red.(gate.Forcer)
		if !mok || !rok {
			return fmt.Sprintf("Force: a gate does not implement gate.Forcer (memory %t, redis %t)", mok, rok)
		}
		w.settle(st.Source)
		merr := mf.Force(ctx, w.memName(st.Source), st.Force)
		rerr := rf.Force(ctx, st.Source, st.Force)
		if !st.Force.Valid() {
			var me, re *gate.ForceError
			if !errors.As(merr, &me) || !errors.As(rerr, &re) || me.Force != st.Force || re.Force != st.Force ||
				me.Source != w.memName(st.Source) || re.Source != st.Source {
				return fmt.Sprintf("contract: Force(%q, %d): memory error %v, redis error %v (want a *gate.ForceError naming the source and the value)", st.Source, st.Force, merr, rerr)
			}
			return ""
		}
		if merr != nil || rerr != nil {
			return fmt.Sprintf("Force error: memory %v, redis %v", merr, rerr)
		}
		s := w.source(st.Source)
		// A move to HalfOpen is a one-off, not a held override: the
		// record keeps its TTL.
		s.forced = st.Force == gate.ForceOpen || st.Force == gate.ForceClosed
		s.leases = nil
		w.refresh(st.Source)
		w.stats.forced++
		return w.checkSnapshots(st.Source, nil)
	case KindEnter:
		w.settle(st.Source)
		prior, _ := w.mem.Snapshot(ctx, w.memName(st.Source))
		md, merr := w.mem.TryEnter(ctx, w.memName(st.Source))
		rd, rerr := w.red.TryEnter(ctx, st.Source)
		if merr != nil || rerr != nil {
			return fmt.Sprintf("TryEnter error: memory %v, redis %v", merr, rerr)
		}
		switch {
		case md.Probe:
			w.stats.enterProbe++
		case md.Allowed:
			w.stats.enterClosed++
		case md.State == gate.Open:
			w.stats.rejectOpen++
		default:
			w.stats.rejectHalfOpen++
		}
		s := w.source(st.Source)
		w.decs[st.ID] = decision{source: st.Source, epoch: s.epoch, mem: md, red: rd}
		s.decisions = append(s.decisions, st.ID)
		if !md.Allowed && md.State == gate.Open {
			// An Open rejection writes nothing in Redis: no TTL refresh.
		} else {
			after, _ := w.mem.Snapshot(ctx, w.memName(st.Source))
			w.touch(st.Source, prior, after, md.Probe)
		}
		if md.Probe {
			s.leases = append(s.leases, w.tl.Now().Add(w.p.ProbeTTL))
		}
		s.maxToken = max(s.maxToken, md.Token)
		if d := w.diffDecision(st.Source, md, rd, prior.Forced); d != "" || !w.snapEach {
			return d
		}
		return w.checkSnapshots(st.Source, &answered{"TryEnter",
			facts{md.Generation, md.State, md.Forced}, facts{rd.Generation, rd.State, rd.Forced}})
	case KindRecord:
		var md, rd gate.Decision
		var dec decision
		if st.ID != 0 {
			var ok bool
			if dec, ok = w.decs[st.ID]; !ok {
				return "" // its Enter step is not in this sequence
			}
			dec.recorded = true
			w.decs[st.ID] = dec
		}
		w.settle(st.Source)
		var translated []string
		switch {
		case st.ID == 0, dec.source != st.Source:
			// A forged decision (its token is the memory gate's) or
			// another source's: each gate gets the token that stands
			// in its record where the memory token does.
			md, rd = st.Forged, st.Forged
			if st.ID != 0 {
				md, rd = dec.mem, dec.mem
			}
			rd.Token, translated = w.redisToken(st.Source, md.Token)
		default:
			md, rd = dec.mem, dec.red
			if dec.epoch != w.source(st.Source).epoch && md.Token != 0 {
				md.Token = forgottenToken
			}
		}
		if len(translated) > 0 {
			return strings.Join(translated, "; ")
		}
		before, _ := w.mem.Snapshot(ctx, w.memName(st.Source))
		mu, merr := w.mem.Record(ctx, w.memName(st.Source), md, st.Outcome)
		ru, rerr := w.red.Record(ctx, st.Source, rd, st.Outcome)
		if !st.Outcome.Valid() {
			if !errors.Is(merr, gate.ErrUnknownOutcome) || !errors.Is(rerr, gate.ErrUnknownOutcome) {
				return fmt.Sprintf("contract: Record with outcome %d: memory error %v, redis error %v (want gate.ErrUnknownOutcome from both)", st.Outcome, merr, rerr)
			}
			return ""
		}
		if merr != nil || rerr != nil {
			return fmt.Sprintf("Record error: memory %v, redis %v", merr, rerr)
		}
		after, _ := w.mem.Snapshot(ctx, w.memName(st.Source))
		w.touch(st.Source, before, after, false)
		switch {
		case !mu.Applied:
			w.stats.missed++
		case st.Outcome == gate.Fatal:
			w.stats.applied++
			w.stats.fatal++
		default:
			w.stats.applied++
		}
		if mu.State != before.State && mu.State == gate.Open {
			w.stats.opened++
		}
		if mu.State != before.State && mu.State == gate.Closed {
			w.stats.closed++
		}
		if d := w.diffUpdate(st.Source, md, st.Outcome, before.Forced, mu, ru); d != "" || !w.snapEach {
			return d
		}
		return w.checkSnapshots(st.Source, &answered{"Record",
			facts{mu.Generation, mu.State, mu.Forced}, facts{ru.Generation, ru.State, ru.Forced}})
	case KindSnapshot:
		w.settle(st.Source)
		return w.checkSnapshots(st.Source, nil)
	case KindRetryAfter:
		w.settle(st.Sources...)
		names := make([]string, len(st.Sources))
		for i, s := range st.Sources {
			names[i] = w.memName(s)
		}
		mr, merr := w.mem.RetryAfter(ctx, names)
		rr, rerr := w.red.RetryAfter(ctx, st.Sources)
		if merr != nil || rerr != nil {
			return fmt.Sprintf("RetryAfter error: memory %v, redis %v", merr, rerr)
		}
		var bad []string
		if mr < 0 || rr < 0 {
			bad = append(bad, fmt.Sprintf("contract: RetryAfter(sources) negative (memory %v, redis %v)", mr, rr))
		}
		if !w.closeEnough(mr, rr) {
			bad = append(bad, fmt.Sprintf("RetryAfter(%q): memory %v, redis %v", st.Sources, mr, rr))
		}
		return strings.Join(bad, "; ")
	}
	return fmt.Sprintf("unknown step kind %d", st.Kind)
}

func (w *breakerWorld) closeEnough(a, b time.Duration) bool {
	d := a - b
	return d <= w.tol && -d <= w.tol
}

func (w *breakerWorld) closeTimes(a, b time.Time) bool {
	if a.IsZero() || b.IsZero() {
		return a.IsZero() == b.IsZero()
	}
	return w.closeEnough(a.Sub(b), 0)
}

// diffDecision compares two TryEnter answers of source. Generations and
// tokens compare by place (numbering): both gates draw them from one
// per-source counter in the same order (gate/redis doc: "as in the memory
// gate"), from different starts; a token of a decision not allowed compares
// by value.
func (w *breakerWorld) diffDecision(source string, m, r gate.Decision, forced gate.Force) string {
	var bad []string
	bad = append(bad, decisionContract("memory", m, forced)...)
	bad = append(bad, decisionContract("redis", r, forced)...)
	mn, rn := []uint64{m.Generation}, []uint64{r.Generation}
	if m.Allowed {
		mn = append(mn, m.Token)
	}
	if r.Allowed {
		rn = append(rn, r.Token)
	}
	bad = append(bad, w.place(source, mn, rn)...)
	token := func(seq map[string][]uint64, d gate.Decision) int {
		if d.Allowed {
			return w.rank(seq, source, d.Token)
		}
		return -1 - int(min(d.Token, 1)) // -1: token 0, -2: any other
	}
	if m.Allowed != r.Allowed || m.State != r.State || m.Probe != r.Probe || token(w.nums.mem, m) != token(w.nums.red, r) ||
		w.rank(w.nums.mem, source, m.Generation) != w.rank(w.nums.red, source, r.Generation) || m.Forced != r.Forced ||
		!w.closeEnough(m.RetryAfter, r.RetryAfter) {
		bad = append(bad, fmt.Sprintf("TryEnter: memory %s, redis %s", fmtDecision(m), fmtDecision(r)))
	}
	return strings.Join(bad, "; ")
}

// decisionContract checks one TryEnter answer against the RetryAfter table
// of gate/doc.go, its generation and override against "Generations" (forced
// is the override before the call: TryEnter never changes it) and, for a
// source forced Open, against gate.Forcer.
func decisionContract(who string, d gate.Decision, forced gate.Force) []string {
	forcedOpen := forced == gate.ForceOpen
	var bad []string
	add := func(msg string) {
		bad = append(bad, fmt.Sprintf("contract (%s): %s in %s", who, msg, fmtDecision(d)))
	}
	switch {
	case d.RetryAfter < 0:
		add("negative RetryAfter")
	case d.Allowed && d.RetryAfter != 0:
		add("allowed with RetryAfter ≠ 0")
	case !d.Allowed && d.State == gate.HalfOpen && d.RetryAfter != 0:
		add("HalfOpen rejection with RetryAfter ≠ 0")
	case !d.Allowed && d.State == gate.Closed:
		add("Closed rejection")
	case d.Probe && (!d.Allowed || d.State != gate.HalfOpen):
		add("probe that is not an allowed HalfOpen decision")
	case d.Allowed && d.State == gate.Open:
		add("allowed while Open")
	case d.Allowed && d.State == gate.HalfOpen && !d.Probe:
		add("HalfOpen admission without a probe lease")
	case forcedOpen && (d.Allowed || d.State != gate.Open || d.RetryAfter != 0):
		add("a source forced Open must be rejected, Open, with RetryAfter 0")
	case !forcedOpen && !d.Allowed && d.State == gate.Open && d.RetryAfter == 0:
		add("Open rejection with RetryAfter 0 (the first TryEnter at openUntil is a probe)")
	case d.Allowed && !d.Probe && d.Generation != d.Token:
		add("Closed admission whose Generation is not its token")
	case d.Forced != forced:
		add(fmt.Sprintf("Forced is not the record's override %s", forced))
	}
	return bad
}

func (w *breakerWorld) diffUpdate(source string, d gate.Decision, o gate.Outcome, forced gate.Force, m, r gate.Update) string {
	var bad []string
	bad = append(bad, updateContract("memory", d, o, forced, m)...)
	bad = append(bad, updateContract("redis", d, o, forced, r)...)
	bad = append(bad, w.place(source, []uint64{m.Generation}, []uint64{r.Generation})...)
	if m.Applied != r.Applied || m.State != r.State || m.Forced != r.Forced ||
		w.rank(w.nums.mem, source, m.Generation) != w.rank(w.nums.red, source, r.Generation) ||
		!w.closeEnough(m.RetryAfter, r.RetryAfter) {
		bad = append(bad, fmt.Sprintf("Record: memory %s, redis %s", fmtUpdate(m), fmtUpdate(r)))
	}
	return strings.Join(bad, "; ")
}

// updateContract checks one Record answer against gate/doc.go: a decision
// that was not allowed is always a miss, an allowed Fatal always applies and
// leaves the record Open, and RetryAfter is 0 unless Open; and against
// gate.Forcer: under ForceOpen every Record is a miss that reads Open with
// RetryAfter 0, under ForceClosed the record stays Closed (a Fatal counts as
// a Failure).
func updateContract(who string, d gate.Decision, o gate.Outcome, forced gate.Force, u gate.Update) []string {
	var bad []string
	add := func(msg string) {
		bad = append(bad, fmt.Sprintf("contract (%s): %s: Record(%s, %s) = %s", who, msg, fmtDecision(d), o, fmtUpdate(u)))
	}
	switch {
	case u.RetryAfter < 0:
		add("negative RetryAfter")
	case u.State != gate.Open && u.RetryAfter != 0:
		add("RetryAfter ≠ 0 while not Open")
	case !d.Allowed && u.Applied:
		add("a decision that was not allowed applied")
	case forced == gate.ForceOpen && (u.Applied || u.State != gate.Open || u.RetryAfter != 0):
		add("under ForceOpen a Record must be a miss, Open, RetryAfter 0")
	case forced == gate.ForceClosed && u.State != gate.Closed:
		add("under ForceClosed the record must stay Closed")
	case forced == gate.ForceNone && d.Allowed && o == gate.Fatal && (!u.Applied || u.State != gate.Open):
		add("Fatal did not open the record")
	case u.Forced != forced:
		add(fmt.Sprintf("Forced is not the record's override %s", forced))
	}
	return bad
}

// facts are the generation, state and override an answer reports.
type facts struct {
	gen    uint64
	state  gate.State
	forced gate.Force
}

// answered is the answer of each gate to the step just run, which the
// snapshots read right after it must agree with (gate/doc.go "Generations").
type answered struct {
	op       string
	mem, red facts
}

// checkSnapshots compares the two gates' snapshots of source and, when after
// is set, each with what its gate just answered.
func (w *breakerWorld) checkSnapshots(source string, after *answered) string {
	ctx := context.Background()
	ms, merr := w.mem.Snapshot(ctx, w.memName(source))
	rs, rerr := w.red.Snapshot(ctx, source)
	if merr != nil || rerr != nil {
		return fmt.Sprintf("Snapshot error: memory %v, redis %v", merr, rerr)
	}
	var bad []string
	bad = append(bad, w.snapshotContract("memory", ms)...)
	bad = append(bad, w.snapshotContract("redis", rs)...)
	bad = append(bad, w.place(source, []uint64{ms.Generation}, []uint64{rs.Generation})...)
	if after != nil {
		for _, c := range []struct {
			who string
			a   facts
			s   gate.Snapshot
		}{{"memory", after.mem, ms}, {"redis", after.red, rs}} {
			if c.a != (facts{c.s.Generation, c.s.State, c.s.Forced}) {
				bad = append(bad, fmt.Sprintf("contract (%s): %s answered generation %d, %s, forced %s; the Snapshot right after reads %s",
					c.who, after.op, c.a.gen, c.a.state, c.a.forced, fmtSnapshot(c.s)))
			}
		}
	}
	if ms.State != rs.State || w.rank(w.nums.mem, source, ms.Generation) != w.rank(w.nums.red, source, rs.Generation) ||
		ms.ConsecutiveFailures != rs.ConsecutiveFailures ||
		ms.ProbeSuccesses != rs.ProbeSuccesses || ms.WindowCalls != rs.WindowCalls || ms.WindowFailures != rs.WindowFailures ||
		ms.ProbesInFlight != rs.ProbesInFlight || ms.Cooldown != rs.Cooldown || ms.Forced != rs.Forced ||
		!w.closeTimes(ms.OpenUntil, rs.OpenUntil) || !w.closeEnough(ms.RetryAfter, rs.RetryAfter) {
		bad = append(bad, fmt.Sprintf("Snapshot(%q): memory %s, redis %s", source, fmtSnapshot(ms), fmtSnapshot(rs)))
	}
	return strings.Join(bad, "; ")
}

func (w *breakerWorld) snapshotContract(who string, s gate.Snapshot) []string {
	var bad []string
	add := func(msg string) { bad = append(bad, fmt.Sprintf("contract (%s): %s in %s", who, msg, fmtSnapshot(s))) }
	switch {
	case s.RetryAfter < 0:
		add("negative RetryAfter")
	case s.State != gate.Open && (s.RetryAfter != 0 || !s.OpenUntil.IsZero()):
		add("RetryAfter or OpenUntil set while not Open")
	case s.State != gate.HalfOpen && s.ProbesInFlight != 0:
		add("probes in flight while not HalfOpen")
	case s.ProbesInFlight > w.p.HalfOpenProbes:
		add(fmt.Sprintf("more than HalfOpenProbes=%d probes in flight", w.p.HalfOpenProbes))
	case s.Cooldown < w.p.Cooldown || s.Cooldown > w.p.MaxCooldown:
		add(fmt.Sprintf("cooldown outside [Cooldown, MaxCooldown] = [%v, %v]", w.p.Cooldown, w.p.MaxCooldown))
	case s.Forced == gate.ForceOpen && (s.State != gate.Open || s.RetryAfter != 0 || !s.OpenUntil.IsZero()):
		add("forced Open must read Open with RetryAfter 0 and no OpenUntil")
	case s.Forced == gate.ForceClosed && s.State != gate.Closed:
		add("forced Closed must read Closed")
	case s.State == gate.Open && s.Forced == gate.ForceNone && w.tl.Exact() && s.RetryAfter != max(s.OpenUntil.Sub(w.tl.Now()), 0):
		add("RetryAfter ≠ OpenUntil − now")
	}
	return bad
}

func fmtDecision(d gate.Decision) string {
	return fmt.Sprintf("{Allowed:%t State:%s RetryAfter:%v Probe:%t Token:%d Gen:%d Forced:%s}",
		d.Allowed, d.State, d.RetryAfter, d.Probe, d.Token, d.Generation, d.Forced)
}

func fmtUpdate(u gate.Update) string {
	return fmt.Sprintf("{Applied:%t State:%s RetryAfter:%v Gen:%d Forced:%s}", u.Applied, u.State, u.RetryAfter, u.Generation, u.Forced)
}

func fmtSnapshot(s gate.Snapshot) string {
	ou := "0"
	if !s.OpenUntil.IsZero() {
		ou = s.OpenUntil.UTC().Format("15:04:05.000000")
	}
	return fmt.Sprintf("{State:%s Gen:%d CF:%d PS:%d Win:%d/%d Probes:%d Cooldown:%v OpenUntil:%s RetryAfter:%v Forced:%s}",
		s.State, s.Generation, s.ConsecutiveFailures, s.ProbeSuccesses, s.WindowFailures, s.WindowCalls,
		s.ProbesInFlight, s.Cooldown, ou, s.RetryAfter, s.Forced)
}
