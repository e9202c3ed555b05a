package breaker

import (
	"context"
	"log/slog"
	"time"

	"github.com/pgw-go/pgw/gate"
)

// StateChange is one observed transition of a breaker.
type StateChange struct {
	// Seq numbers the changes of one Breaker: 1, 2, 3, … in delivery order.
	Seq uint64
	// Name is the breaker's name.
	Name string
	// From and To are the states before and after.
	From, To gate.State
	// At is when the change was observed (Config.Clock, else the wall clock).
	At time.Time
	// Metrics are the breaker's local counts right after the change, so they
	// include the calls that caused it.
	Metrics Metrics
	// Gate is the gate's record at the change: cooldown, OpenUntil,
	// RetryAfter, generation.
	Gate gate.Snapshot
	// Counts are the counts of the phase that just ended: the calls that
	// led to the change (failsafe-go's event metrics). The breaker's Counts
	// start again at the change.
	Counts Counts
	// Context is the context of the call that observed the change (the one
	// whose answer from the gate showed it), without its cancellation when
	// the caller had given up. It is context.Background for a change seen
	// by State, Open, Close or HalfOpen.
	Context context.Context
}

// OnStateChange registers fn to be called on every state change the breaker
// observes. It is safe for concurrent use; fn must not be nil.
//
// Delivery guarantees, per Breaker:
//   - Listeners are called outside every lock of the breaker, so a listener
//     may call any of its methods, Execute and Metrics included.
//   - Changes are delivered one at a time and in order (Seq 1, 2, 3, …);
//     listeners never run concurrently with each other for one breaker.
//   - A listener runs on the goroutine of some call to the breaker: usually
//     the call that caused the change, but when another goroutine is already
//     delivering, that goroutine delivers this change too, after the ones
//     before it, and the causing call returns without waiting. A slow
//     listener therefore slows callers; hand heavy work to a goroutine.
//   - A listener that panics propagates the panic to the call delivering;
//     changes still queued are delivered by the next change. When that call
//     was just admitted (Execute or Allow), it does not run: its admission
//     is recorded as given back (Metrics.Cancelled), so a probe lease it
//     held is free for the next caller. When that call's own function
//     panicked, the function's panic is the one that continues.
//
// What is observed: the gate is the truth. After each gate answer the
// breaker compares the state in it with the last one it saw, and on a
// difference reads the gate's Snapshot, whose generation orders the
// observations. Transitions that happen between two observations (under
// concurrency, or made by other processes sharing the gate) are reported as
// one change from the last observed state to the current one. A breaker
// starts out believing Closed; on a shared gate already Open, its first call
// reports closed → open.
func (b *Breaker) OnStateChange(fn func(StateChange)) {
	if fn == nil {
		panic("pgw/breaker: OnStateChange called with a nil function")
	}
	b.evMu.Lock()
	ls := make([]func(StateChange), len(b.listeners), len(b.listeners)+1)
	copy(ls, b.listeners)
	b.listeners = append(ls, fn)
	b.evMu.Unlock()
}

// OnOpen registers fn for the changes to Open only (failsafe-go's OnOpen),
// as OnStateChange does.
func (b *Breaker) OnOpen(fn func(StateChange)) { b.onState(gate.Open, fn) }

// OnClose registers fn for the changes to Closed only (failsafe-go's
// OnClose), as OnStateChange does.
func (b *Breaker) OnClose(fn func(StateChange)) { b.onState(gate.Closed, fn) }

// OnHalfOpen registers fn for the changes to HalfOpen only (failsafe-go's
// OnHalfOpen), as OnStateChange does.
func (b *Breaker) OnHalfOpen(fn func(StateChange)) { b.onState(gate.HalfOpen, fn) }

func (b *Breaker) onState(to gate.State, fn func(StateChange)) {
	if fn == nil {
		panic("pgw/breaker: OnOpen, OnClose or OnHalfOpen called with a nil function")
	}
	b.OnStateChange(func(ev StateChange) {
		if ev.To == to {
			fn(ev)
		}
	})
}

// observe is on every call's path: a state equal to the last one seen costs
// one atomic load.
func (b *Breaker) observe(ctx context.Context, s gate.State) {
	if gate.State(b.seen.Load()) != s {
		b.reconcile(ctx)
	}
}

// reconcile reads the gate's record and, when it is newer than what was last
// seen and in another state, queues a StateChange and delivers the queue.
func (b *Breaker) reconcile(ctx context.Context) {
	if ctx.Err() != nil {
		// The caller gave up, but the change it saw must still be read and
		// reported, and listeners get a context they can use.
		ctx = context.WithoutCancel(ctx)
	}
	snap, err := b.gate.Snapshot(ctx, b.name)
	if err != nil {
		b.logger.LogAttrs(ctx, slog.LevelWarn, "pgw/breaker: gate Snapshot failed",
			slog.String("breaker", b.name), slog.Any("err", err))
		return
	}
	b.tally.seen(snap.Generation, snap.State)
	at := b.now()
	b.evMu.Lock()
	from := gate.State(b.seen.Load())
	if snap.Generation < b.gen || snap.State == from {
		// An older record than the one already seen (another goroutine got
		// there first), or the same state: nothing to report.
		b.gen = max(b.gen, snap.Generation)
		b.evMu.Unlock()
		return
	}
	b.gen = snap.Generation
	b.lastChange.Store(&at)
	b.seen.Store(uint32(snap.State))
	b.seq++
	b.queue = append(b.queue, StateChange{
		Seq:     b.seq,
		Name:    b.name,
		From:    from,
		To:      snap.State,
		At:      at,
		Metrics: b.Metrics(),
		Gate:    snap,
		Counts:  b.tally.ended(),
		Context: ctx,
	})
	if b.draining {
		b.evMu.Unlock()
		return
	}
	b.draining = true
	b.evMu.Unlock()
	b.drain(ctx)
}

// drain delivers queued changes until the queue is empty. Only one goroutine
// drains at a time (b.draining), which is what orders delivery.
func (b *Breaker) drain(ctx context.Context) {
	clean := false
	defer func() {
		if !clean { // a listener panicked: let the next change drain
			b.evMu.Lock()
			b.draining = false
			b.evMu.Unlock()
		}
	}()
	for {
		b.evMu.Lock()
		if len(b.queue) == 0 {
			b.queue = nil
			b.draining = false
			b.evMu.Unlock()
			clean = true
			return
		}
		ev := b.queue[0]
		b.queue = b.queue[1:]
		listeners := b.listeners
		b.evMu.Unlock()

		b.logger.LogAttrs(ctx, slog.LevelInfo, "pgw/breaker: state change",
			slog.String("breaker", ev.Name), slog.String("from", ev.From.String()),
			slog.String("state", ev.To.String()), slog.Uint64("seq", ev.Seq),
			slog.Duration("retry_after", ev.Gate.RetryAfter))
		for _, fn := range listeners {
			fn(ev)
		}
	}
}
