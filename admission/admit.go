package admission

import (
	"context"

	"github.com/pgw-go/pgw/gate"
)

// admitAnswer is what Pick learns of a source from its gates: the
// breaker's decision and, when the quota was asked with it (admit), the
// quota's. admit fills it in place, sparing the round the copies of
// decisions passed back by value.
type admitAnswer struct {
	d  gate.Decision
	p  gate.Permit
	qd gate.QuotaDecision
	// combined: the quota gate decided with the breaker (gate.Admitter);
	// false leaves the breaker to be asked alone.
	combined bool
	// budget: the advertised budget was taken (or rejected) with them, so
	// Pick does not ask the budget again.
	budget bool
	err    error
}

// admit asks the breaker and the quota about source in one operation of
// the quota gate (gate.Admitter), and with them the advertised budget when
// Pick would ask it and the quota gate can (gate.BudgetAdmitter): on Redis
// one round trip for all three. Pick has taken the source's pacer slot
// before, so a full window leaves the quota and the budget untouched.
// r.combined is false when the quota gate cannot combine with the breaker.
// i is name's selector index.
func (a *SourceAdmission) admit(ctx context.Context, i int, name string, estTokens int64, r *admitAnswer) {
	if a.budgeter != nil && a.adv != nil && !a.silentAt(i) {
		r.d, r.p, r.qd, r.combined, r.err = a.budgeter.AdmitBudget(ctx, a.breaker, a.adv.Budget, name, estTokens)
		if r.combined {
			r.budget = true
			return
		}
	}
	r.d, r.p, r.qd, r.combined, r.err = a.admitter.Admit(ctx, a.breaker, name, estTokens)
}

// unpace frees the pacer slot Pick took for source when it loses before a
// ticket holds the slot.
func (a *SourceAdmission) unpace(name string, paced bool) {
	if paced {
		a.pacer.Release(name, PaceNeutral)
	}
}
