package redis

import (
	"context"
	"errors"

	"github.com/pgw-go/pgw/gate"
)

var _ gate.Concluder = (*QuotaFailover)(nil)

// Conclude gives admissions back through the primary's Conclude (one
// pipeline on Redis) when b is the Failover of the same Redis and no
// admission of cs came from a fallback, outside an outage (gate.Concluder);
// otherwise ok is false and the caller records and finishes each, which routes each part
// to the gate that granted it. In FailOpen mode a conclusion Redis could not
// take is dropped as Record and Finish drop theirs: the outage starts, the
// leases expire by themselves.
func (f *QuotaFailover) Conclude(ctx context.Context, b gate.ProviderGate, cs []gate.Conclusion) bool {
	pc, isConcluder := f.primary.(gate.Concluder)
	fb, isFailover := b.(*Failover)
	if !isConcluder || !isFailover {
		return false
	}
	if f.mode == FailOpen && (fb.mode != FailOpen || f.Degraded() || fb.Degraded()) {
		return false // during an outage each part goes where Record and Finish send it
	}
	for _, c := range cs {
		if c.Decision.Token&fallbackBit != 0 || (c.HasPermit && f.LocalPermit(c.Permit)) {
			return false
		}
	}
	if !pc.Conclude(ctx, fb.primary, cs) {
		return false
	}
	if f.mode == FailOpen {
		for i := range cs {
			if errors.Is(cs[i].Err, ErrUnreachable) {
				f.settle(cs[i].Err, false)
				fb.settle(cs[i].Err, false)
				// As Failover.Record: the outcome is lost with Redis; the
				// fallback's view, unmoved, is the answer.
				cs[i].Update, cs[i].Err = fromFallback(fb.fallback.Record(ctx, cs[i].Source, gate.Decision{}, cs[i].Outcome))
			}
		}
	}
	return true
}
