package admission

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pgw-go/pgw/gate"
	"github.com/pgw-go/pgw/observe"
)

// DefaultPollInterval is the base of a nap when Config.PollInterval is 0.
const DefaultPollInterval = 50 * time.Millisecond

// Pacing is the per-source concurrency window Pick consults before the
// quota, so that a full window spends none of the source's RPM: the AIMD
// pacer of the chat scope (*Pacer). Implementations are safe for concurrent
// use.
type Pacing interface {
	// TryAcquire takes a slot of source's window, or reports false when the
	// window is full.
	TryAcquire(source string) bool
	// Release gives the slot back with what the call said about upstream
	// capacity: PaceSuccess (the source answered), PaceThrottled (a 429,
	// which shrinks the window) or PaceNeutral (nothing: a lost round, a
	// caller error, a cancellation, a 5xx — the breaker's business).
	Release(source string, o PaceOutcome)
}

// Config builds a SourceAdmission. Only Scope, Sources and Breaker are
// required; every other zero field means its default.
type Config struct {
	// Scope names the scope in errors and logs, e.g. "CHAT".
	Scope string
	// Sources are the scope's sources; at least one, names unique.
	Sources []Source
	// Breaker is the scope's breaker gate.
	Breaker gate.ProviderGate
	// Quota is the scope's quota gate; nil means unlimited.
	Quota gate.QuotaGate
	// Memo is the cooldown memo; nil means a new one. Share one memo between
	// admissions only if they share the breaker.
	Memo *Memo
	// Pacer is the AIMD pacer; nil means none (embedding, OCR).
	Pacer Pacing
	// QuotaFull is the {SCOPE}__QUOTA_FULL mode (default Wait).
	QuotaFull Mode
	// CircuitOpen is the {SCOPE}__CIRCUIT_OPEN mode (default FailFast).
	CircuitOpen Mode
	// PollInterval is the base of a nap (default 50 ms).
	PollInterval time.Duration
	// Clock tells the time (default the wall clock).
	Clock gate.Clock
	// Sleep waits for d or until ctx is done, then returns ctx.Err() in the
	// latter case (default SleepContext).
	Sleep func(ctx context.Context, d time.Duration) error
	// Rand returns a number in [0, 1); it must be safe for concurrent use
	// when the admission is (default math/rand/v2.Float64).
	Rand func() float64
	// Logger receives the wait lines and the breaker state changes
	// (default slog.Default()).
	Logger *slog.Logger
	// Balance picks the first source of a priority tier: BalanceWeighted
	// (default) or BalanceLatency.
	Balance Balance
	// LatencyDecay is the time constant of the sources' peak-EWMA
	// latency (default DefaultLatencyDecay).
	LatencyDecay time.Duration
	// Observer receives the breaker state changes, gate rejections and
	// waits of the scope's calls (package observe); nil means none. It is
	// called synchronously, outside every lock: wrap a slow one in
	// observe.Async.
	Observer observe.Observer
	// Advertising reads the upstreams' rate-limit headers into a budget
	// Pick reserves against; the zero value reads none.
	Advertising Advertising
	// Writer gives back the tickets' outcomes off the callers' goroutines
	// (see Writer); nil means Ticket.Done gives back on the caller's
	// goroutine, which suits gates that live in the process. Share one
	// Writer between the admissions of a gateway.
	Writer *Writer
}

// ConfigError lists every invalid field of a Config.
type ConfigError struct {
	// Problems has one entry per invalid field: its name, its value and
	// what is legal.
	Problems []string
}

// Error implements the error interface.
func (e *ConfigError) Error() string {
	return "pgw/admission: invalid config: " + strings.Join(e.Problems, "; ")
}

// SourceAdmission decides which source of one scope runs the next attempt
// (memo, breaker, quota, pacer). Build one per scope with New and share it between that scope's
// calls; it is safe for concurrent use when its gates, pacer, sleep and rand
// are (the defaults are).
type SourceAdmission struct {
	scope       string
	sel         selector
	breaker     gate.ProviderGate
	quota       gate.QuotaGate
	memo        *Memo
	pacer       Pacing
	quotaFull   Mode
	circuitOpen Mode
	poll        time.Duration
	clock       gate.Clock
	sleep       func(context.Context, time.Duration) error
	rand        func() float64
	log         *slog.Logger
	w           *watch
	lat         *Latency
	balance     Balance
	adv         *advertiser // nil: no advertised budget
	heard       []*heard    // adv's, by selector index; nil: no advertised budget
	writer      *Writer
	admitter    gate.Admitter       // the quota gate when it can admit with the breaker
	budgeter    gate.BudgetAdmitter // admitter, when it can take the advertised budget with them; nil otherwise
	concluder   gate.Concluder      // the quota gate when it can give back with the breaker
	finisher    gate.Finisher       // the quota gate when it settles and releases in one operation
	probes      []probeWait         // by selector index: probe outcomes in the writer
	slots       []slotWait          // by selector index: outcomes in the writer that free a slot
	degrader    Degrader            // the breaker when it can report an outage of its store
}

// New validates cfg and returns the scope's admission.
func New(cfg Config) (*SourceAdmission, error) {
	var bad []string
	if cfg.Scope == "" {
		bad = append(bad, `Scope="" (legal: a scope name, e.g. "CHAT")`)
	}
	if len(cfg.Sources) == 0 {
		bad = append(bad, "Sources is empty (legal: at least one source)")
	}
	seen := make(map[string]bool, len(cfg.Sources))
	for i, s := range cfg.Sources {
		switch {
		case s.Name == "":
			bad = append(bad, fmt.Sprintf(`Sources[%d].Name="" (legal: a non-empty name)`, i))
		case seen[s.Name]:
			bad = append(bad, fmt.Sprintf("Sources[%d].Name=%q (legal: a name not used by another source)", i, s.Name))
		}
		seen[s.Name] = true
		if s.Weight < 0 {
			bad = append(bad, fmt.Sprintf("Sources[%d].Weight=%d (legal: ≥ 1, or 0 for 1)", i, s.Weight))
		}
	}
	if cfg.Breaker == nil {
		bad = append(bad, "Breaker is nil (legal: a gate.ProviderGate, e.g. gate.Noop{})")
	}
	if cfg.QuotaFull == "" {
		cfg.QuotaFull = DefaultQuotaFull
	}
	if cfg.CircuitOpen == "" {
		cfg.CircuitOpen = DefaultCircuitOpen
	}
	for _, err := range []error{checkMode("QuotaFull", cfg.QuotaFull), checkMode("CircuitOpen", cfg.CircuitOpen)} {
		if err != nil {
			bad = append(bad, err.Error())
		}
	}
	if cfg.Balance == "" {
		cfg.Balance = DefaultBalance
	}
	if p := checkBalance(cfg.Balance); p != "" {
		bad = append(bad, p)
	}
	if cfg.LatencyDecay < 0 {
		bad = append(bad, fmt.Sprintf("LatencyDecay=%v (legal: > 0, or 0 for %v)", cfg.LatencyDecay, DefaultLatencyDecay))
	}
	if cfg.PollInterval < 0 {
		bad = append(bad, fmt.Sprintf("PollInterval=%v (legal: > 0, or 0 for %v)", cfg.PollInterval, DefaultPollInterval))
	}
	if len(bad) > 0 {
		return nil, &ConfigError{Problems: bad}
	}
	a := &SourceAdmission{
		scope:       cfg.Scope,
		breaker:     cfg.Breaker,
		quota:       cfg.Quota,
		memo:        cfg.Memo,
		pacer:       cfg.Pacer,
		quotaFull:   cfg.QuotaFull,
		circuitOpen: cfg.CircuitOpen,
		poll:        cfg.PollInterval,
		clock:       cfg.Clock,
		sleep:       cfg.Sleep,
		rand:        cfg.Rand,
		log:         cfg.Logger,
		writer:      cfg.Writer,
	}
	if ad, ok := cfg.Quota.(gate.Admitter); ok {
		a.admitter = ad
		a.budgeter, _ = ad.(gate.BudgetAdmitter)
	}
	if co, ok := cfg.Quota.(gate.Concluder); ok {
		a.concluder = co
	}
	a.finisher, _ = cfg.Quota.(gate.Finisher)
	if dg, ok := cfg.Breaker.(Degrader); ok {
		a.degrader = dg
	}
	if a.memo == nil {
		a.memo = NewMemo()
	}
	if a.poll == 0 {
		a.poll = DefaultPollInterval
	}
	if a.clock == nil {
		a.clock = gate.SystemClock{}
	}
	if a.sleep == nil {
		a.sleep = SleepContext
	}
	if a.rand == nil {
		a.rand = rand.Float64
	}
	if a.log == nil {
		a.log = slog.Default()
	}
	a.sel = newSelector(cfg.Sources, a.rand)
	if cfg.LatencyDecay == 0 {
		cfg.LatencyDecay = DefaultLatencyDecay
	}
	lnames := make([]string, len(a.sel.sources))
	for i, s := range a.sel.sources {
		lnames[i] = s.Name
	}
	a.lat = newLatency(a.clock, cfg.LatencyDecay, lnames)
	a.balance = cfg.Balance
	if cfg.Balance == BalanceLatency {
		a.sel.lat = a.lat
	}
	a.w = newWatch(a, cfg.Observer)
	if cfg.Advertising.Budget != nil {
		a.adv = newAdvertiser(cfg.Advertising, cfg.Sources)
		a.heard = make([]*heard, len(a.sel.sources))
		for i, src := range a.sel.sources {
			a.heard[i] = a.adv.sources[src.Name]
		}
	}
	a.slots = make([]slotWait, len(a.sel.sources))
	if a.writer != nil {
		a.probes = make([]probeWait, len(a.sel.sources))
	}
	return a, nil
}

// Scope returns the scope's name.
func (a *SourceAdmission) Scope() string { return a.scope }

// Memo returns the admission's cooldown memo.
func (a *SourceAdmission) Memo() *Memo { return a.memo }

// Latency returns this process's latency view of the scope's sources: what
// the latency balance compares and the adaptive hedge delay reads.
func (a *SourceAdmission) Latency() *Latency { return a.lat }

// Balance returns how the admission picks within a priority tier.
func (a *SourceAdmission) Balance() Balance { return a.balance }

// HoldOff keeps source out of admission in this process for at least d from
// now — the upstream's Retry-After on a 429. It lengthens a running cooldown
// but never shortens one.
//
// While the hold-off stands, the source's rejections carry reason HeldOff:
// the upstream throttled it, its breaker did not open, so the QUOTA_FULL
// policy applies, not CIRCUIT_OPEN.
func (a *SourceAdmission) HoldOff(source string, d time.Duration) {
	if d > 0 {
		a.memo.HoldUntil(source, a.clock.Now().Add(d))
	}
}

// memoReason is the reason of a memo rejection: HeldOff for an upstream's
// Retry-After, Cooldown for a breaker's cooldown.
func memoReason(held bool) Reason {
	if held {
		return HeldOff
	}
	return Cooldown
}

// Pick runs one admission round. It walks the sources in selector
// order — sources with an entry in attemptFails (the failures of this call
// so far, may be nil) last — and returns a Ticket for the first source that
// passes the memo, the breaker, the quota (reserving estTokens) and the
// pacer (whose slot is taken before the quota is asked: a full window spends
// no request of the source's RPM), together with the rejections of the
// sources tried before it. When
// none passes it returns a nil Ticket and every source's rejection; hand them
// to Call.OnNoRunnable. A gate's error skips its source; when no source
// wins, the round returns the first such error (with everything taken in it
// given back) instead of waiting on a gate that cannot answer — unless the
// rejections of the other sources are ones the scope waits for (QUOTA_FULL
// or CIRCUIT_OPEN in wait mode): then the round returns them alone and no
// error, and the call waits for those sources. A done ctx
// ends the round before it starts, and a gate error that comes with a done
// ctx ends it at once with ctx.Err(), everything given back and nothing
// logged: the caller gave up, no gate failed. With a Writer, a source whose
// outcome from this admission that may move its breaker (a probe's, a
// Failure, a Fatal) is still being written is asked about only once it is
// written (a wait bounded by ctx) — except while the breaker reports an
// outage of its store (Degrader): its local fallback answers then, and no
// call waits for the store. A source whose quota refuses its in-flight
// slots or its tokens while this admission's own outcome that frees a slot
// or refunds tokens waits in the writer is asked again once that outcome is
// written (a wait bounded by ctx, once per source and round), so that a
// caller calling again as soon as its call returned is not refused its own
// finished call's slot or tokens.
func (a *SourceAdmission) Pick(ctx context.Context, attemptFails map[string]int, estTokens int64) (*Ticket, Rejections, error) {
	return a.pick(ctx, a.w.obs, attemptFails, estTokens, nil, nil, nil)
}

// pick is Pick that passes over the sources in exclude without asking any
// gate about them (a hedge's round skips the sources its call already runs)
// and reports the round's rejections to obs (nil: to none).
//
// The ticket of the first source that gets one is into when into is not
// nil, a new one otherwise; every later ticket of the round is new, so that
// a ticket given back within the round (which a writer may still hold) is
// never overwritten.
func (a *SourceAdmission) pick(ctx context.Context, obs observe.Full, attemptFails map[string]int, estTokens int64, exclude []string, into *Ticket, slotsFull *bool) (*Ticket, Rejections, error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	reruns := 0
round:
	var buf [maxStackSources]int
	it := a.sel.iter(buf[:0], attemptFails)
	// The clock is read only when needed: the common round, a Closed first
	// source and an empty memo, reads none.
	var now time.Time
	clock := func() time.Time {
		if now.IsZero() {
			now = a.clock.Now()
		}
		return now
	}
	var rej Rejections
	var gateErr error
	var fullBuf [4]slotAsk
	full := fullBuf[:0] // the sources whose in-flight slots refused this round
	for i, ok := it.next(); ok; i, ok = it.next() {
		slotWaited := false
	again: // the source once more, after a wait for a slot (awaitSlot)
		name := a.sel.sources[i].Name
		if len(exclude) > 0 && slices.Contains(exclude, name) {
			continue
		}
		if ra, held := a.memo.remainingWhy(name, clock); ra > 0 {
			rej = a.reject(obs, rej, Rejection{Source: name, Reason: memoReason(held), RetryAfter: ra}, "", clock)
			continue
		}
		if a.probes != nil && a.probes[i].n.Load() > 0 && !a.storeOut() {
			// This admission's own outcome that may move the source's
			// breaker (a probe's, a failure) is still in the writer: the
			// breaker must hear it before the next question. (Only those
			// queued by now: later ones do not lengthen the wait.)
			if err := a.probes[i].wait(ctx); err != nil {
				return nil, rej, err
			}
		}
		// The pacer lives in the process and costs nothing to ask, so its
		// slot is taken before the quota: a round that finds the window
		// full sends nothing upstream and must not spend a request of the
		// source's RPM, which no give-back returns. The breaker is still
		// asked, so that an open circuit is reported (and memoised) as one.
		paced, paceFull := false, false
		if a.pacer != nil {
			paced = a.pacer.TryAcquire(name)
			paceFull = !paced
		}
		// With a quota gate that can, the breaker's decision and the
		// quota's reservation are one operation (one round trip on Redis).
		var ans admitAnswer
		epoch := a.slotEpoch(i)
		if a.admitter != nil && !paceFull {
			a.admit(ctx, i, name, estTokens, &ans)
		}
		if !ans.combined {
			ans.d, ans.err = a.breaker.TryEnter(ctx, name)
		}
		if ans.err != nil {
			a.unpace(name, paced)
			if cerr := callerEnded(ctx, ans.err); cerr != nil {
				// The caller gave up: no source is to blame.
				return nil, rej, cerr
			}
			which := "breaker"
			if ans.combined {
				which = "breaker and quota"
			}
			gateErr = a.gateError(gateErr, which, name, ans.err)
			continue
		}
		a.w.afterTryEnter(ctx, i, ans.d)
		if !ans.d.Allowed {
			a.unpace(name, paced)
			// RetryAfter is 0 for a HalfOpen rejection, so this leaves no
			// entry that could outlive the probe and hide a recovered source.
			a.memo.SetUntil(name, clock().Add(ans.d.RetryAfter))
			rej = a.reject(obs, rej, Rejection{Source: name, Reason: CircuitOpen, RetryAfter: ans.d.RetryAfter}, "", clock)
			continue
		}
		t := into
		if t == nil {
			t = new(Ticket)
		}
		into = nil
		// Field by field into zeroed memory: a struct assignment would
		// copy the whole ticket under the GC's write barrier.
		t.a, t.Source, t.Decision, t.Skipped, t.idx, t.paced = a, name, ans.d, rej, i, paced
		a.lat.begin(i)
		if paceFull {
			t.giveBack(ctx)
			rej = a.reject(obs, rej, Rejection{Source: name, Reason: AdaptivePaced}, "", clock)
			continue
		}
		if ans.combined {
			if qd := &ans.qd; !qd.Allowed {
				// Admit gave the decision back already; the pacer slot,
				// taken before it, is this round's to free.
				t.done.Store(true)
				a.lat.end(i)
				a.unpace(name, paced)
				if a.awaitSlot(ctx, i, qd.Limit, epoch, &slotWaited) {
					goto again
				}
				if qd.Limit == gate.LimitInFlight {
					full = append(full, slotAsk{i, epoch})
				}
				rej = a.reject(obs, rej, Rejection{Source: name, Reason: RateLimited, RetryAfter: qd.RetryAfter}, qd.Limit, clock)
				continue
			}
			t.permit, t.hasPermit = ans.p, true
		} else if a.quota != nil {
			p, qd, err := a.quota.Acquire(ctx, name, estTokens)
			if err != nil {
				t.giveBack(ctx)
				if cerr := callerEnded(ctx, err); cerr != nil {
					return nil, rej, cerr
				}
				gateErr = a.gateError(gateErr, "quota", name, err)
				continue
			}
			if !qd.Allowed {
				t.giveBack(ctx)
				if a.awaitSlot(ctx, i, qd.Limit, epoch, &slotWaited) {
					goto again
				}
				if qd.Limit == gate.LimitInFlight {
					full = append(full, slotAsk{i, epoch})
				}
				rej = a.reject(obs, rej, Rejection{Source: name, Reason: RateLimited, RetryAfter: qd.RetryAfter}, qd.Limit, clock)
				continue
			}
			t.permit, t.hasPermit = p, true
		}
		if a.adv != nil && !ans.budget && !a.silentAt(i) {
			if r, limit, ok := a.takeBudget(ctx, name, estTokens); !ok {
				t.giveBack(ctx)
				rej = a.reject(obs, rej, r, limit, clock)
				continue
			}
		}
		if a.memo.entries.Load() > 0 {
			// The gates' round trips take time: an upstream's Retry-After
			// (or another round's breaker answer) that reached the memo
			// meanwhile still holds the source off, read at a fresh now.
			if ra, held := a.memo.remainingWhy(name, func() time.Time { return a.clock.Now() }); ra > 0 {
				t.giveBack(ctx)
				rej = a.reject(obs, rej, Rejection{Source: name, Reason: memoReason(held), RetryAfter: ra}, "", clock)
				continue
			}
		}
		return t, rej, nil
	}
	if reruns < maxSlotReruns && a.slotFreedSince(full) {
		// A slot of a source that refused came back after it was asked:
		// the round visits its sources one after another, so another
		// call of this process may have freed one while this round was
		// asking the next source, and taken one of that source's. Every
		// slot then looks held, though none is at any one instant — a
		// split call's parts, no more of them at once than the scope has
		// slots, would refuse each other. Asked again, the sources tell.
		reruns++
		goto round
	}
	if slotsFull != nil {
		*slotsFull = len(full) > 0
	}
	if gateErr != nil && !a.waitable(rej) {
		return nil, rej, gateErr
	}
	return nil, rej, nil
}

// maxSlotReruns bounds the rounds Pick runs again after an in-flight slot
// came back during one (slotFreedSince). Each rerun needs a slot given back
// while the round ran; bounded, a source whose slots churn under other
// calls' contention still refuses a fail_fast call promptly.
const maxSlotReruns = 3

// slotAsk is a source (selector index) whose in-flight slots refused a
// round, and its slot epoch before it was asked.
type slotAsk struct {
	i     int
	epoch uint64
}

// slotFreedSince reports whether a slot of one of the sources in full was
// given back since it was asked.
func (a *SourceAdmission) slotFreedSince(full []slotAsk) bool {
	for _, f := range full {
		if a.slotEpoch(f.i) != f.epoch {
			return true
		}
	}
	return false
}

// silentAt reports whether Pick may skip the budget of the source at
// selector index i (found without a lookup by name); false without an
// advertised budget.
func (a *SourceAdmission) silentAt(i int) bool {
	if a.heard == nil {
		return false
	}
	h := a.heard[i]
	return h != nil && h.silent.Load()
}

// waitable reports whether OnNoRunnable would wait on rej rather than end
// the call: the scope's wait mode applies to its rejections. A gate error on
// one source then does not end the call: the call waits for another source
// as it would without the error (the failing source is tried again in the
// next round).
func (a *SourceAdmission) waitable(rej Rejections) bool {
	if len(rej) == 0 {
		return false
	}
	if rej.AllGate() {
		return a.circuitOpen == Wait
	}
	return a.quotaFull == Wait
}

// storeOut reports whether the breaker's shared store is out (Degrader).
// The next question then goes to the breaker's local fallback (or fails
// at once), which an outcome waiting in the writer cannot move: that
// outcome belongs to a decision of the store, and the writer tries the
// store with it for up to its write timeout, which no call waits for
// during an outage. (A local decision's outcome reaches the writer only
// when its permit came from the store: an outage ended between the two.)
func (a *SourceAdmission) storeOut() bool {
	return a.degrader != nil && a.degrader.Degraded()
}

// probeWait tracks the outcomes of one source that wait in the writer and
// may move its breaker: a probe's, a Failure, a Fatal. Each is numbered as
// it is queued; a wait is for the outcomes numbered up to the last one
// queued when it began, so that outcomes other calls give back during it
// do not stretch it.
type probeWait struct {
	n       atomic.Int32 // outcomes queued and not yet written; read without mu
	mu      sync.Mutex
	queued  uint64        // the number of the last outcome queued (from 1)
	first   uint64        // the number of done[0]: every outcome before it is written
	done    []bool        // by number from first: written (never done[0] while not empty)
	ch      chan struct{} // closed when first grows; nil: none waits
	waiting int           // admissions in wait (ProbeWaiting, for tests)
}

// wait returns when every such outcome of the source queued before it
// began has been written (or failed, or dropped), or with ctx's error when
// ctx ends first.
func (p *probeWait) wait(ctx context.Context) error {
	p.mu.Lock()
	last := p.queued
	p.waiting++
	defer func() { p.waiting--; p.mu.Unlock() }()
	for p.first <= last && len(p.done) > 0 {
		if p.ch == nil {
			p.ch = make(chan struct{})
		}
		ch := p.ch
		p.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			p.mu.Lock()
			return ctx.Err()
		}
		p.mu.Lock()
	}
	return nil
}

// probeQueued notes that t's outcome, one that may move the breaker, goes
// to the writer, and numbers it.
func (a *SourceAdmission) probeQueued(t *Ticket) {
	p := &a.probes[t.idx]
	p.mu.Lock()
	p.queued++
	if len(p.done) == 0 {
		p.first = p.queued
	}
	t.seq = p.queued
	p.done = append(p.done, false)
	p.n.Add(1)
	p.mu.Unlock()
}

// probeWritten notes that t's outcome was written or dropped; once per
// ticket (later calls do nothing).
func (a *SourceAdmission) probeWritten(t *Ticket) {
	if !t.ordered {
		return
	}
	t.ordered = false
	p := &a.probes[t.idx]
	p.mu.Lock()
	p.done[t.seq-p.first] = true
	k := 0
	for k < len(p.done) && p.done[k] {
		k++
	}
	if k > 0 {
		p.first += uint64(k)
		if k == len(p.done) {
			p.done = p.done[:0]
		} else {
			p.done = p.done[k:]
		}
		if p.ch != nil {
			close(p.ch)
			p.ch = nil
		}
	}
	p.n.Add(-1)
	p.mu.Unlock()
}

// slotWait tracks the in-flight slots and token refunds one source's tickets give back: those
// whose outcomes wait in the writer, and a count of all given back so far.
type slotWait struct {
	n    atomic.Int32  // outcomes queued in the writer and not yet written; read without mu
	done atomic.Uint64 // slots given back so far (written, or given back on the caller's goroutine): an epoch a round reads before it asks
	mu   sync.Mutex
	ch   chan struct{} // closed when the next of them is written; nil: none waits
}

// slotQueued notes that t's outcome, which frees an in-flight slot, goes to
// the writer.
func (a *SourceAdmission) slotQueued(t *Ticket) { a.slots[t.idx].n.Add(1) }

// slotWritten notes that t's outcome was written or dropped; once per
// ticket (later calls do nothing).
func (a *SourceAdmission) slotWritten(t *Ticket) {
	if !t.slotted {
		return
	}
	t.slotted = false
	s := &a.slots[t.idx]
	s.done.Add(1) // before n drops: awaitSlot reads n, then done
	s.n.Add(-1)
	s.mu.Lock()
	if s.ch != nil {
		close(s.ch)
		s.ch = nil
	}
	s.mu.Unlock()
}

// slotEpoch is source i's count of slots given back, read before its quota
// is asked (awaitSlot, slotFreedSince).
func (a *SourceAdmission) slotEpoch(i int) uint64 { return a.slots[i].done.Load() }

// awaitSlot is called when source i's quota refused an admission (limit:
// the limit that refused it; epoch: slotEpoch before it was asked): when
// that is its in-flight slots or its TPM, and this admission's own outcomes
// that free a slot or refund tokens are still in the writer, it makes a
// lingering round write them and waits until the next of them is written
// (bounded by ctx), and reports true: the source is worth asking again — as
// it is when one was given back since the quota was asked. A caller that
// calls again as soon as its call returned would otherwise be refused its
// own finished call's slot, or the tokens its settlement refunds (and be
// told to wait for the refill of an estimate already given back).
// *waited makes it once per source per round. During an outage of the
// breaker's store (storeOut) it does not wait, as Pick waits for no probe
// outcome then: the writer tries the store for up to its write timeout.
func (a *SourceAdmission) awaitSlot(ctx context.Context, i int, limit string, epoch uint64, waited *bool) bool {
	if (limit != gate.LimitInFlight && limit != gate.LimitTPM) || *waited || a.storeOut() {
		return false
	}
	s := &a.slots[i]
	if s.n.Load() == 0 && s.done.Load() == epoch {
		return false // none of this admission's outcomes frees a slot
	}
	*waited = true
	s.mu.Lock()
	if s.n.Load() == 0 {
		s.mu.Unlock()
		return true // written meanwhile
	}
	if s.ch == nil {
		s.ch = make(chan struct{})
	}
	ch := s.ch
	s.mu.Unlock()
	a.writer.flush()
	select {
	case <-ch:
		return true
	case <-ctx.Done():
		return false
	}
}

// reject adds r to the round's rejections and reports it to obs, the
// round's observer (nil: none).
func (a *SourceAdmission) reject(obs observe.Full, rej Rejections, r Rejection, limit string, clock func() time.Time) Rejections {
	if obs != nil {
		a.w.rejected(obs, r, limit, clock())
	}
	return append(rej, r)
}

// callerDeadlineSlack is how close to ctx's deadline a gate error that is
// context.DeadlineExceeded counts as that deadline.
const callerDeadlineSlack = 5 * time.Millisecond

// callerEnded returns the error that ends the call when err, a gate's error,
// came from the caller's ctx ending rather than from the gate: ctx.Err(),
// or context.DeadlineExceeded when err is that deadline reported a moment
// before ctx says so (a Redis client sets its socket's deadline from ctx's,
// and the socket's timer may fire first). nil: the gate failed.
func callerEnded(ctx context.Context, err error) error {
	if cerr := ctx.Err(); cerr != nil {
		return cerr
	}
	if dl, ok := ctx.Deadline(); ok && errors.Is(err, context.DeadlineExceeded) && time.Until(dl) < callerDeadlineSlack {
		return context.DeadlineExceeded
	}
	return nil
}

// gateError logs a gate's error for one source and keeps the round's first.
// The source is skipped: another may still win the round (a quota that can
// never admit this request's tokens, one shard of Redis down). During an
// outage of the breaker's store, which its gate has logged once already
// (under fail_closed every call fails at once then), the line is at Debug.
func (a *SourceAdmission) gateError(first error, which, source string, err error) error {
	err = fmt.Errorf("pgw/admission: scope %q: %s gate of source %q: %w", a.scope, which, source, err)
	level := slog.LevelWarn
	if a.storeOut() {
		level = slog.LevelDebug
	}
	a.log.Log(context.Background(), level, "pgw: gate error; source skipped", "scope", a.scope, "source", source, "err", err)
	if first != nil {
		return first
	}
	return err
}

// giveBack returns everything a ticket that lost holds: the breaker decision
// as Released, the permit with its reservation refunded, the pacer slot
// untouched by a throttle.
func (t *Ticket) giveBack(ctx context.Context) {
	_ = t.Done(ctx, Result{Outcome: gate.Released, Tokens: 0})
}

// Result is what a Ticket's attempt reports back.
type Result struct {
	// Outcome is the breaker outcome. The zero value is treated as
	// Released: a ticket given back without a verdict (a panic, an early
	// return) says nothing about the source.
	Outcome gate.Outcome
	// Tokens is the actual token count the attempt used, settled against
	// the estimate reserved at Pick. Negative leaves the estimate standing.
	Tokens int64
	// Throttled reports an upstream 429: the pacer shrinks its window.
	// Otherwise a Success outcome counts toward growing it and any other
	// outcome leaves it as it is.
	Throttled bool
}
