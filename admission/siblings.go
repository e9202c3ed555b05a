package admission

import (
	"context"
	"sync"
)

// Siblings are the parts of one split call — an embedding call's
// sub-batches, an OCR call's pages — each its own governed call with its
// own Call. A split call runs no more parts at once than its scope has
// in-flight slots, so a part refused by in-flight slots while another part
// of the same call holds one was refused its own call's slot, not someone
// else's. Under QUOTA_FULL=fail_fast such a part does not fail: it waits
// until a sibling gives its admission back and asks again. It fails, as
// fail_fast says, once it is refused while no sibling holds an admission or
// is being admitted.
//
// The zero value is ready; a Siblings serves one split call (Call.SetSiblings
// on each part's Call). Safe for concurrent use.
type Siblings struct {
	mu      sync.Mutex
	holding int           // the parts' tickets not yet given back
	picking int           // the parts' rounds under way
	epoch   uint64        // the parts' tickets given back so far
	ch      chan struct{} // closed at the next change; nil: none waits
}

// beginPick notes a part's round and returns the give-backs so far.
func (s *Siblings) beginPick() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.picking++
	return s.epoch
}

// endPick notes the end of a part's round, which admitted it or not.
func (s *Siblings) endPick(admitted bool) {
	s.mu.Lock()
	s.picking--
	if admitted {
		s.holding++
	}
	s.changed()
	s.mu.Unlock()
}

// giveBack notes that a part's ticket was given back: to the gates, or to
// the outcome writer that frees its slot once written (a round that then
// asks waits for that).
func (s *Siblings) giveBack() {
	s.mu.Lock()
	s.holding--
	s.epoch++
	s.changed()
	s.mu.Unlock()
}

// changed wakes the parts waiting for a change; s.mu is held.
func (s *Siblings) changed() {
	if s.ch != nil {
		close(s.ch)
		s.ch = nil
	}
}

// await is called after a part's round that began at mark was refused
// in-flight slots. It reports true once a sibling's ticket was given back
// since mark (the round is worth running again), false once no sibling
// holds a ticket or is in a round that may admit it, and ctx's error if
// ctx ends first.
func (s *Siblings) await(ctx context.Context, mark uint64) (bool, error) {
	s.mu.Lock()
	for {
		if s.epoch != mark {
			s.mu.Unlock()
			return true, nil
		}
		if s.holding <= 0 && s.picking <= 0 {
			s.mu.Unlock()
			return false, nil
		}
		if s.ch == nil {
			s.ch = make(chan struct{})
		}
		ch := s.ch
		s.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return false, ctx.Err()
		}
		s.mu.Lock()
	}
}

// SetSiblings makes c a part of the split call whose parts are s (nil: c
// is no part). Call it after Init, before the call's first round.
func (c *Call) SetSiblings(s *Siblings) { c.sib = s }
