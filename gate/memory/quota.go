package memory

import (
	"context"
	"sync"
	"time"

	"github.com/pgw-go/pgw/gate"
	"github.com/pgw-go/pgw/internal/byname"
)

// Quota is the in-process quota gate: per source a rolling RPM bucket, a
// rolling TPM bucket and a MaxInFlight semaphore, decided all or nothing.
// RetryAfter is exact to the microsecond (gate.QuotaDecision). It is safe for
// concurrent use; each source has its own lock and the set of sources is fixed
// at construction, so the hot path takes no global lock and allocates nothing.
//
// A source without an entry in the limits map is unlimited. In-flight slots
// live as long as the process: a permit that is never released holds its slot
// for good (the Redis gate's slots expire instead, for crashed processes).
type Quota struct {
	clock   gate.Clock
	sources map[string]*quotaSource // read-only after NewQuota
	idx     byname.Index[*quotaSource]
}

// source returns source's account, nil for an unlimited source.
func (q *Quota) source(source string) *quotaSource {
	s, _ := q.idx.Get(source)
	return s
}

var (
	_ gate.QuotaGate = (*Quota)(nil)
	_ gate.Finisher  = (*Quota)(nil)
)

// The in-flight lease handle (gate.Permit.Lease) is generation<<slotBits |
// slot. Generations grow per source and never repeat, so a stale or doubled
// Release cannot free a slot someone else now holds; 2^40 grants per source
// before wrapping is beyond any process's life.
const (
	slotBits = 24 // gate.MaxInFlightLimit == 1<<slotBits
	slotMask = 1<<slotBits - 1
)

// quotaSource is one source's account.
type quotaSource struct {
	mu     sync.Mutex
	limits gate.Limits
	rpm    rateBucket
	tpm    rateBucket
	slots  []uint64 // generation of the lease holding each slot; 0 = free
	free   []uint32 // stack of free slot indexes
	gen    uint64   // last lease generation handed out
}

// NewQuota returns a quota gate enforcing limits, keyed by source name. It
// fails with a *gate.LimitsError listing every invalid limit.
func NewQuota(limits map[string]gate.Limits, opts ...Option) (*Quota, error) {
	if err := gate.ValidateLimits(limits); err != nil {
		return nil, err
	}
	o := buildOptions(opts)
	q := &Quota{clock: steadyClock(o.clock), sources: make(map[string]*quotaSource, len(limits))}
	for name, l := range limits {
		if l.Unlimited() {
			continue
		}
		s := &quotaSource{
			limits: l,
			rpm:    newRateBucket(l.RPM),
			tpm:    newRateBucket(l.TPM),
		}
		if l.MaxInFlight > 0 {
			s.slots = make([]uint64, l.MaxInFlight)
			s.free = make([]uint32, l.MaxInFlight)
			for i := range s.free {
				s.free[i] = uint32(l.MaxInFlight - 1 - i) // pop order 0, 1, 2…
			}
		}
		q.sources[name] = s
	}
	q.idx = byname.Of(q.sources)
	return q, nil
}

// Acquire reserves one request and estTokens tokens for source and takes an
// in-flight slot, or rejects with the exact RetryAfter of gate.QuotaDecision.
// A rejection reserves nothing. It never blocks beyond the source's lock.
// A ctx already done is refused with its error and reserves nothing.
func (q *Quota) Acquire(ctx context.Context, source string, estTokens int64) (gate.Permit, gate.QuotaDecision, error) {
	return q.acquire(ctx, source, estTokens, nil)
}

// acquire is Acquire; when take is not nil it is asked, under the source's
// lock, once the limits would admit and before anything is reserved, so
// that its rejection reserves nothing (AdmitBudget). take is given the
// instant the quota read its clock at, zero when it read none.
func (q *Quota) acquire(ctx context.Context, source string, estTokens int64, take func(r reading) gate.BudgetDecision) (gate.Permit, gate.QuotaDecision, error) {
	if err := ctx.Err(); err != nil {
		return gate.Permit{}, gate.QuotaDecision{}, gate.DoneError("Acquire", source, err)
	}
	s := q.source(source)
	if estTokens < 0 || (s != nil && s.limits.TPM > 0 && estTokens > int64(s.limits.TPM)) {
		tpm := 0
		if s != nil {
			tpm = s.limits.TPM
		}
		return gate.Permit{}, gate.QuotaDecision{}, &gate.TokensError{Op: "Acquire", Source: source, Tokens: estTokens, TPM: tpm}
	}
	if s == nil {
		if take != nil {
			if bd := take(reading{}); !bd.Allowed {
				return gate.Permit{}, budgetRejection(bd), nil
			}
		}
		return gate.Permit{Source: source, Tokens: estTokens}, gate.QuotaDecision{Allowed: true}, nil
	}
	var now reading
	var us int64
	rated := s.rpm.Drain > 0 || s.tpm.Drain > 0
	if rated {
		now = read(q.clock)
		us = floorDiv(now.ns, 1000)
	}

	s.mu.Lock()
	// at is the µs instant from which the rate limits admit; 0 when they
	// admit now. It counts from the bucket's stamp, which another caller may
	// have moved a little past this caller's us.
	var at int64
	var limit string
	if s.rpm.Drain > 0 {
		s.rpm.drain(us)
		if w := s.rpm.wait(s.rpm.Unit); w > 0 {
			at, limit = s.rpm.stamp+w, gate.LimitRPM
		}
	}
	if s.tpm.Drain > 0 {
		s.tpm.drain(us)
		if w := s.tpm.wait(estTokens * s.tpm.Unit); w > 0 && s.tpm.stamp+w > at {
			at, limit = s.tpm.stamp+w, gate.LimitTPM
		}
	}
	full := s.slots != nil && len(s.free) == 0
	if at > 0 || full {
		s.mu.Unlock()
		if at == 0 {
			return gate.Permit{}, gate.QuotaDecision{Limit: gate.LimitInFlight}, nil
		}
		// Measured from the caller's instant, not from the truncated µs.
		ra := time.Duration(at*1000 - now.ns)
		return gate.Permit{}, gate.QuotaDecision{RetryAfter: ra, Limit: limit}, nil
	}
	if take != nil {
		if bd := take(now); !bd.Allowed {
			s.mu.Unlock()
			return gate.Permit{}, budgetRejection(bd), nil
		}
	}
	if s.rpm.Drain > 0 {
		s.rpm.level += s.rpm.Unit
	}
	if s.tpm.Drain > 0 {
		s.tpm.level += estTokens * s.tpm.Unit
	}
	var lease uint64
	if s.slots != nil {
		slot := s.free[len(s.free)-1]
		s.free = s.free[:len(s.free)-1]
		s.gen++
		s.slots[slot] = s.gen
		lease = s.gen<<slotBits | uint64(slot)
	}
	s.mu.Unlock()
	return gate.Permit{Source: source, Lease: lease, Tokens: estTokens}, gate.QuotaDecision{Allowed: true}, nil
}

// Settle corrects p's source's token account by actualTokens − p.Tokens. A
// refund needs no clock: taking tokens out of the bucket before draining it
// to now gives the same level as after (both clamp at empty), so only a
// debit reads the time.
func (q *Quota) Settle(_ context.Context, p gate.Permit, actualTokens int64) error {
	if actualTokens < 0 {
		return &gate.TokensError{Op: "Settle", Source: p.Source, Tokens: actualTokens}
	}
	q.settle(q.source(p.Source), p, actualTokens)
	return nil
}

// settle is Settle on p's source's account s (nil: unlimited), found by
// the caller; actualTokens ≥ 0.
func (q *Quota) settle(s *quotaSource, p gate.Permit, actualTokens int64) {
	if s == nil || s.tpm.Drain == 0 || actualTokens == p.Tokens {
		return
	}
	delta := s.tpm.clampDelta(actualTokens-p.Tokens, s.limits.TPM)
	if delta < 0 {
		s.mu.Lock()
		s.tpm.level = max(s.tpm.level+delta, 0)
		s.mu.Unlock()
		return
	}
	us := q.clock.Now().UnixMicro()
	s.mu.Lock()
	s.tpm.drain(us)
	s.tpm.level = min(s.tpm.level+delta, 2*s.tpm.Capacity)
	s.mu.Unlock()
}

// Release frees p's in-flight slot. A permit already released, a zero
// Permit, or a permit of another gate frees nothing.
func (q *Quota) Release(_ context.Context, p gate.Permit) error {
	if p.Lease == 0 {
		return nil
	}
	release(q.source(p.Source), p)
	return nil
}

// release is Release on p's source's account s (nil: unlimited), found by
// the caller.
func release(s *quotaSource, p gate.Permit) {
	if s == nil || p.Lease == 0 {
		return
	}
	slot, gen := p.Lease&slotMask, p.Lease>>slotBits
	s.mu.Lock()
	if slot < uint64(len(s.slots)) && s.slots[slot] == gen {
		s.slots[slot] = 0
		s.free = append(s.free, uint32(slot))
	}
	s.mu.Unlock()
}

// Finish settles p to actualTokens and releases its slot: Settle then
// Release, as gate.Finisher asks (the Redis gate makes the pair one round
// trip; here it is two short critical sections). A negative actualTokens is
// a *gate.TokensError and releases nothing.
func (q *Quota) Finish(_ context.Context, p gate.Permit, actualTokens int64) error {
	if actualTokens < 0 {
		return &gate.TokensError{Op: "Finish", Source: p.Source, Tokens: actualTokens}
	}
	// The source's account is looked up once for the two.
	s := q.source(p.Source)
	q.settle(s, p, actualTokens)
	release(s, p)
	return nil
}

// Limits returns the limits NewQuota was given for source; ok is false for a
// source it was not given (which is unlimited).
func (q *Quota) Limits(source string) (l gate.Limits, ok bool) {
	if s := q.source(source); s != nil {
		return s.limits, true
	}
	return gate.Limits{}, false
}

// InFlight returns the number of in-flight slots of source now held; 0 for
// a source without MaxInFlight.
func (q *Quota) InFlight(source string) int {
	s := q.source(source)
	if s == nil || s.slots == nil {
		return 0
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.slots) - len(s.free)
}

var _ gate.Admitter = (*Quota)(nil)

// Admit runs b.TryEnter then Acquire, giving the decision back as
// Record(Released) when Acquire rejects (gate.Admitter). Both gates live in
// the process, so this is the two operations in a row; it combines only
// with a *Breaker of this package (ok false otherwise).
func (q *Quota) Admit(ctx context.Context, b gate.ProviderGate, source string, estTokens int64) (d gate.Decision, p gate.Permit, qd gate.QuotaDecision, ok bool, err error) {
	mb, isMem := b.(*Breaker)
	if !isMem {
		return d, p, qd, false, nil
	}
	if d, err = mb.TryEnter(ctx, source); err != nil || !d.Allowed {
		return d, p, qd, true, err
	}
	p, qd, err = q.Acquire(ctx, source, estTokens)
	if err != nil || !qd.Allowed {
		if _, rerr := mb.Record(ctx, source, d, gate.Released); rerr != nil && err == nil {
			err = rerr
		}
	}
	return d, p, qd, true, err
}

var _ gate.BudgetAdmitter = (*Quota)(nil)

// AdmitBudget is Admit with the advertised budget's Take in the same
// operation (gate.BudgetAdmitter), ordered as the Redis script orders it:
// the breaker, then the limits, then the budget, and only then is the
// request reserved. A budget rejection therefore takes no request of the
// RPM and no tokens of the TPM — a reserved request cannot be given back,
// so a caller polling a spent budget would otherwise burn one per round —
// and the decision is given back as for a quota rejection. It combines
// only with a *Breaker and a *Budget of this package (ok false otherwise).
// The budget is taken under the source's lock, so no other admission of
// the source can spend the capacity between the two.
func (q *Quota) AdmitBudget(ctx context.Context, b gate.ProviderGate, budget gate.BudgetGate, source string, estTokens int64) (d gate.Decision, p gate.Permit, qd gate.QuotaDecision, ok bool, err error) {
	mb, isMem := b.(*Breaker)
	mg, isBudget := budget.(*Budget)
	if !isMem || !isBudget {
		return d, p, qd, false, nil
	}
	if d, err = mb.TryEnter(ctx, source); err != nil || !d.Allowed {
		return d, p, qd, true, err
	}
	p, qd, err = q.acquire(ctx, source, estTokens, func(r reading) gate.BudgetDecision {
		// The budget takes the quota's reading of the clock when both
		// read the system clock: one reading for the two.
		return mg.takeAt(source, estTokens, r)
	})
	if err != nil || !qd.Allowed {
		if _, rerr := mb.Record(ctx, source, d, gate.Released); rerr != nil && err == nil {
			err = rerr
		}
	}
	return d, p, qd, true, err
}

// budgetRejection is a budget's rejection in a quota's terms.
func budgetRejection(bd gate.BudgetDecision) gate.QuotaDecision {
	return gate.QuotaDecision{RetryAfter: bd.RetryAfter, Limit: bd.Limit}
}

var _ gate.Concluder = (*Quota)(nil)

// Conclude gives each admission of cs back: b.Record, then Finish when it
// holds a permit (gate.Concluder). Both gates live in the process, so this
// is the two operations in a row; it combines only with a *Breaker of this
// package (ok false otherwise).
func (q *Quota) Conclude(ctx context.Context, b gate.ProviderGate, cs []gate.Conclusion) bool {
	mb, isMem := b.(*Breaker)
	if !isMem {
		return false
	}
	for i := range cs {
		c := &cs[i]
		c.Update, c.Err = mb.Record(ctx, c.Source, c.Decision, c.Outcome)
		if c.Err == nil && c.HasPermit {
			c.Err = gate.Finish(ctx, q, c.Permit, c.Tokens)
		}
	}
	return true
}
