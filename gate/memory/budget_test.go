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

// Sources beyond the few found by comparing names, and records that expire
// and start afresh: each source keeps its own budget throughout.
func TestBudgetKeepsEachOfManySourcesApart(t *testing.T) {
	ctx := context.Background()
	clk := contracttest.NewFakeClock()
	bg := memory.NewBudget(memory.WithClock(clk))
	names := []string{"a", "b", "c", "d", "e", "f", "g"}
	for i, name := range names {
		adv := gate.Advertised{
			Requests: gate.AdvertisedWindow{Limit: 100, Remaining: int64(10 + i), Reset: time.Minute},
			Tokens:   gate.UnknownWindow,
		}
		if err := bg.Refresh(ctx, name, adv); err != nil {
			t.Fatal(err)
		}
	}
	for i, name := range names {
		if _, err := bg.Take(ctx, name, 0); err != nil {
			t.Fatal(err)
		}
		got, ok, err := bg.Read(ctx, name)
		if err != nil || !ok || got.Requests.Remaining != int64(10+i-1) {
			t.Fatalf("Read(%s) = %+v, %v, %v; want %d requests left", name, got, ok, err, 10+i-1)
		}
	}
	if _, ok, _ := bg.Read(ctx, "unknown"); ok {
		t.Fatal("a source never seen has a budget")
	}
	clk.Advance(time.Hour) // every record expires
	for _, name := range names {
		if _, ok, _ := bg.Read(ctx, name); ok {
			t.Fatalf("Read(%s) after its record expired still knows a budget", name)
		}
	}
	adv := gate.Advertised{Requests: gate.AdvertisedWindow{Limit: 5, Remaining: 3, Reset: time.Minute}, Tokens: gate.UnknownWindow}
	if err := bg.Refresh(ctx, "b", adv); err != nil {
		t.Fatal(err)
	}
	if err := bg.Refresh(ctx, "f", adv); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"b", "f"} {
		got, ok, _ := bg.Read(ctx, name)
		if !ok || got.Requests.Remaining != 3 || got.Requests.Limit != 5 {
			t.Fatalf("Read(%s) after a fresh start = %+v, %v; want 3 of 5", name, got, ok)
		}
	}
	if _, ok, _ := bg.Read(ctx, "a"); ok {
		t.Fatal("a's expired record came back with b's fresh start")
	}
}
