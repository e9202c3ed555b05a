package admission

import (
	"context"
	"testing"
)

// await answers at once when it can: false while no sibling holds a ticket
// or is in a round, true once a ticket was given back since the mark; it
// waits while siblings hold or pick, and ends with ctx.
func TestSiblingsAwait(t *testing.T) {
	ctx := context.Background()
	var s Siblings
	mark := s.beginPick()
	s.endPick(false)
	if again, err := s.await(ctx, mark); again || err != nil {
		t.Fatalf("no sibling holds or picks: await = %v, %v; want false, nil", again, err)
	}

	// A sibling holds a ticket: await waits for its give-back.
	s.beginPick()
	s.endPick(true)
	mark = s.beginPick()
	s.endPick(false)
	got := make(chan bool, 1)
	go func() {
		again, err := s.await(ctx, mark)
		if err != nil {
			t.Error(err)
		}
		got <- again
	}()
	select {
	case again := <-got:
		t.Fatalf("await returned %v with a sibling holding", again)
	default:
	}
	s.giveBack()
	if !<-got {
		t.Fatal("after a give-back await must report true")
	}
	// The give-back is past the old mark: true at once, even with none left.
	if again, _ := s.await(ctx, mark); !again {
		t.Fatal("a give-back since the mark: await must report true at once")
	}

	// A sibling in a round: await waits for its end, then finds none holding.
	mark = s.beginPick() // the other part's round, still under way
	done := make(chan bool, 1)
	go func() {
		again, _ := s.await(ctx, mark)
		done <- again
	}()
	s.endPick(false)
	if <-done {
		t.Fatal("the round admitted nothing and none holds: await must report false")
	}

	// ctx ends the wait.
	s.beginPick()
	s.endPick(true)
	mark = s.beginPick()
	s.endPick(false)
	cctx, cancel := context.WithCancel(ctx)
	errc := make(chan error, 1)
	go func() {
		_, err := s.await(cctx, mark)
		errc <- err
	}()
	cancel()
	if err := <-errc; err != context.Canceled {
		t.Fatalf("await after cancel: %v, want context.Canceled", err)
	}
	s.giveBack()
}
