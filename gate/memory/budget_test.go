package memory_test

import (
	"context"
	"time"

	"testing"

	"github.com/pgw-go/pgw/contracttest"
	"github.com/pgw-go/pgw/gate"
	"github.com/pgw-go/pgw/gate/memory"
)

func TestBudgetContract(t *testing.T) {
	contracttest.RunBudget(t, func(t *testing.T) (gate.BudgetGate, contracttest.Clock) {
		clk := contracttest.NewFakeClock()
		return memory.NewBudget(memory.WithClock(clk)), clk
	})
}

// On the system clock AdmitBudget hands the budget the quota's reading of
// the clock: a spent window still rejects with the time to its reset, and
// the rejection takes no request of the RPM; a window with room admits and
// is spent by the admission.
func TestAdmitBudgetOnTheSystemClock(t *testing.T) {
	ctx := context.Background()
	b, err := memory.NewBreaker(gate.Policy{})
	if err != nil {
		t.Fatal(err)
	}
	q, err := memory.NewQuota(map[string]gate.Limits{"s": {RPM: 1, MaxInFlight: 4}})
	if err != nil {
		t.Fatal(err)
	}
	bg := memory.NewBudget()
	spent := gate.Advertised{
		Requests: gate.AdvertisedWindow{Limit: 10, Remaining: 0, Reset: 30 * time.Second},
		Tokens:   gate.UnknownWindow,
	}
	if err := bg.Refresh(ctx, "s", spent); err != nil {
		t.Fatal(err)
	}
	_, _, qd, ok, err := q.AdmitBudget(ctx, b, bg, "s", 0)
	if err != nil || !ok {
		t.Fatalf("AdmitBudget: ok=%v err=%v", ok, err)
	}
	if qd.Allowed || qd.Limit != gate.LimitAdvertisedRequests || qd.RetryAfter <= 0 || qd.RetryAfter > 30*time.Second {
		t.Fatalf("AdmitBudget on a spent window = %+v, want a rejection by %s within the 30s reset", qd, gate.LimitAdvertisedRequests)
	}
	room := spent
	room.Requests.Remaining = 1
	if err := bg.Refresh(ctx, "t", room); err != nil {
		t.Fatal(err)
	}
	if _, _, qd, _, err := q.AdmitBudget(ctx, b, bg, "s", 0); err != nil || qd.Allowed {
		t.Fatalf("second AdmitBudget on the spent window = %+v, %v; want a rejection", qd, err)
	}
	// The rejections reserved nothing: the one request a minute is still there.
	p, qd, err := q.Acquire(ctx, "s", 0)
	if err != nil || !qd.Allowed {
		t.Fatalf("Acquire after two budget rejections = %+v, %v; want the RPM's one request", qd, err)
	}
	_ = q.Release(ctx, p)
	// A source with room admits and spends it.
	q2, err := memory.NewQuota(map[string]gate.Limits{"t": {RPM: 100}})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, qd, _, err := q2.AdmitBudget(ctx, b, bg, "t", 0); err != nil || !qd.Allowed {
		t.Fatalf("AdmitBudget with room = %+v, %v; want it admitted", qd, err)
	}
	got, _, err := bg.Read(ctx, "t")
	if err != nil || got.Requests.Remaining != 0 {
		t.Fatalf("budget after the admission = %+v, %v; want 0 requests left", got, err)
	}
}
