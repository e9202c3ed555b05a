package admission

import (
	"context"

	"github.com/pgw-go/pgw/gate"
)

// admitted says what a combined admission (admit) took besides the
// breaker's decision and the quota's permit.
type admitted struct {
	// budget: the advertised budget was taken (or rejected) with it, so
	// Pick does not ask the budget again.
	budget bool
	// paced: the pacer's slot was taken for it; Pick hands it to the
	// ticket, or frees it when the admission did not admit.
	paced bool
}

// admit asks the breaker and the quota about source in one operation of
// the quota gate (gate.Admitter), and with them the advertised budget when
// Pick would ask it and the quota gate can (gate.BudgetAdmitter): on Redis
// one round trip for all three. The budget comes after the pacer in Pick's
// order, so the pacer is asked first: a full window then leaves the budget
// untouched, and a pacer rejection still shows only once the breaker and
// the quota let the call through (the admission without the budget, then
// Pick's own pacer stage). ok is false when the quota gate cannot combine
// with the breaker.
func (a *SourceAdmission) admit(ctx context.Context, name string, estTokens int64) (d gate.Decision, p gate.Permit, qd gate.QuotaDecision, took admitted, ok bool, err error) {
	if ba, can := a.admitter.(gate.BudgetAdmitter); can && a.adv != nil && !a.adv.silent(name) {
		if a.pacer == nil || a.pacer.TryAcquire(name) {
			took.paced = a.pacer != nil
			d, p, qd, ok, err = ba.AdmitBudget(ctx, a.breaker, a.adv.Budget, name, estTokens)
			if ok {
				took.budget = true
				if err != nil || !d.Allowed || !qd.Allowed {
					a.unpace(name, &took)
				}
				return d, p, qd, took, true, err
			}
			a.unpace(name, &took)
		}
	}
	d, p, qd, ok, err = a.admitter.Admit(ctx, a.breaker, name, estTokens)
	return d, p, qd, took, ok, err
}

// unpace frees a pacer slot admit took for an admission that did not
// admit.
func (a *SourceAdmission) unpace(name string, took *admitted) {
	if took.paced {
		a.pacer.Release(name, PaceNeutral)
		took.paced = false
	}
}
