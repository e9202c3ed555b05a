// Package callctx is the context of one governed call and of each of its
// attempts. The standard library would stack a cancel context (the caller's
// cancellation plus the gateway's Close), an AfterFunc hook and a timer
// context (the attempt's deadline) — some ten allocations a call. A Ctx
// does all three in one: the caller's cancellation, a Cancel with a cause,
// and an optional deadline armed on a pooled timer. A Ctx made under
// another Ctx registers with it directly, with no hook and no goroutine.
//
// ctx.Err() and context.Cause behave as for the standard contexts: Err is
// nil, then context.Canceled or context.DeadlineExceeded; Cause is the
// cause given to Cancel, context.DeadlineExceeded for the deadline, or the
// parent's cause when the parent ended it.
package callctx

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// Ctx is a context.Context that ends when its parent ends, when Cancel or
// Stop is called, or at its deadline. Safe for concurrent use.
type Ctx struct {
	parent context.Context // values; its end is ours
	up     *Ctx            // the nearest Ctx above, when it is registered with it
	dl     time.Time
	hasDL  bool
	key    any // one value of c's own (SetValue); nil: none
	val    any

	hasDone atomic.Bool // done is set: read it without the lock
	ended   atomic.Bool // err is set

	// kid is the usual one child (a call's attempt), registered and
	// dropped without the lock; endedKid once c has ended.
	kid atomic.Pointer[Ctx]

	mu     sync.Mutex
	done   chan struct{} // made on the first Done; closedchan once ended before that
	err    error
	own    any               // a canceled *context.cancelCtx carrying our cause; nil: the parent's
	kids   map[*Ctx]struct{} // children beyond the one in kid (hedged attempts)
	funcs  []hook            // AfterFunc registrations
	funcs0 [1]hook           // their room: net/http registers one per request
	nextID uint64
	unhook func() bool // undoes the registration with a parent that is not a Ctx
	alarm  *alarm
}

// hook is one AfterFunc registration.
type hook struct {
	id uint64
	f  func()
}

// closedchan is the Done of a Ctx that ended before anyone asked for it.
var closedchan = func() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}()

// New returns a Ctx under parent, with a deadline timeout from now when
// timeout > 0 (or the parent's, if earlier).
func New(parent context.Context, timeout time.Duration) *Ctx {
	c := &Ctx{}
	c.Init(parent, timeout)
	return c
}

// Init starts c, a zero Ctx, as New does; for a Ctx embedded in a larger
// struct. c must not be copied afterwards.
func (c *Ctx) Init(parent context.Context, timeout time.Duration) {
	var now time.Time
	if timeout > 0 {
		now = time.Now()
	}
	c.InitAt(parent, now, timeout)
}

// InitAt is Init for a caller that has just read the wall clock: now is
// time.Now() of a moment ago, from which the deadline counts.
func (c *Ctx) InitAt(parent context.Context, now time.Time, timeout time.Duration) {
	c.parent = parent
	c.funcs = c.funcs0[:0]
	if timeout > 0 {
		c.dl, c.hasDL = now.Add(timeout), true
	}
	if pdl, ok := parent.Deadline(); ok && (!c.hasDL || pdl.Before(c.dl)) {
		// The parent ends first: its end reaches us, no timer of our own.
		c.dl, c.hasDL, timeout = pdl, true, 0
	}
	c.attach(parent)
	if timeout > 0 && !c.ended.Load() {
		a := arm(c, timeout)
		c.mu.Lock()
		if c.err != nil {
			c.mu.Unlock()
			a.disarm()
			return
		}
		c.alarm = a
		c.mu.Unlock()
	}
}

// attach makes c end with parent.
func (c *Ctx) attach(parent context.Context) {
	if up, ok := parent.(*Ctx); ok {
		// Registered directly: the parent's Done need not exist.
		c.join(up, parent)
		return
	}
	pdone := parent.Done()
	if pdone == nil {
		return // the parent never ends
	}
	// A Ctx wrapped in values (an observer's span) still ends c directly,
	// when nothing in between ends on its own.
	if up, _ := parent.Value(selfKey{}).(*Ctx); up != nil && up.Done() == pdone {
		c.join(up, parent)
		return
	}
	select {
	case <-pdone:
		c.cancel(parent.Err(), nil)
		return
	default:
	}
	stop := context.AfterFunc(parent, func() { c.cancel(parent.Err(), nil) })
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		stop()
		return
	}
	c.unhook = stop
	c.mu.Unlock()
}

// join registers c with up, the Ctx that parent is or wraps, or ends c
// when up has ended. c.up is set first: once registered, up's end may
// reach c at any moment.
func (c *Ctx) join(up *Ctx, parent context.Context) {
	c.up = up
	if !up.addKid(c) {
		c.up = nil
		c.cancel(parent.Err(), nil)
	}
}

// endedKid fills the kid slot of an ended Ctx: no child registers there
// after cancel emptied it.
var endedKid = new(Ctx)

// addKid registers k to end with c; false when c has ended already.
func (c *Ctx) addKid(k *Ctx) bool {
	if c.kid.CompareAndSwap(nil, k) {
		return true // cancel swaps the slot after ending c: it finds k
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil || c.kid.Load() == endedKid {
		return false
	}
	if c.kids == nil {
		c.kids = make(map[*Ctx]struct{})
	}
	c.kids[k] = struct{}{}
	return true
}

func (c *Ctx) dropKid(k *Ctx) {
	if c.kid.CompareAndSwap(k, nil) {
		return
	}
	c.mu.Lock()
	delete(c.kids, k)
	c.mu.Unlock()
}

// Cancel ends c with context.Canceled; context.Cause reports cause (nil:
// context.Canceled). Only the first end counts.
func (c *Ctx) Cancel(cause error) {
	if cause == nil {
		cause = context.Canceled
	}
	c.cancel(context.Canceled, cause)
}

// Stop ends c with context.Canceled, as a CancelFunc does, and frees its
// timer. Call it once the attempt (or call) is over.
func (c *Ctx) Stop() { c.cancel(context.Canceled, context.Canceled) }

// cancel ends c with err. cause nil means the parent ended c: its cause
// is the parent's.
func (c *Ctx) cancel(err, cause error) {
	if c.ended.Load() {
		return
	}
	var own any
	if cause != nil {
		own = causeCarrier(cause)
	}
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return
	}
	c.err, c.own = err, own
	c.ended.Store(true)
	if c.done == nil {
		c.done = closedchan
		c.hasDone.Store(true)
	} else {
		close(c.done)
	}
	kids, funcs := c.kids, c.funcs
	c.kids, c.funcs = nil, nil
	unhook, a, up := c.unhook, c.alarm, c.up
	c.unhook, c.alarm = nil, nil
	c.mu.Unlock()

	if a != nil {
		a.disarm()
	}
	if unhook != nil {
		unhook()
	}
	if up != nil {
		up.dropKid(c)
	}
	if kid := c.kid.Swap(endedKid); kid != nil && kid != endedKid {
		kid.cancel(err, nil)
	}
	if len(kids) > 0 { // starting a range over a map costs more than the rest of this
		for k := range kids {
			k.cancel(err, nil)
		}
	}
	for _, h := range funcs {
		h.f()
	}
}

// Deadline implements context.Context.
func (c *Ctx) Deadline() (time.Time, bool) { return c.dl, c.hasDL }

// Done implements context.Context.
func (c *Ctx) Done() <-chan struct{} {
	if c.hasDone.Load() {
		return c.done
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done == nil {
		c.done = make(chan struct{})
		c.hasDone.Store(true)
	}
	return c.done
}

// Err implements context.Context.
func (c *Ctx) Err() error {
	if !c.ended.Load() {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// selfKey finds the nearest Ctx through value contexts.
type selfKey struct{}

// Value implements context.Context. context.Cause asks it for the standard
// library's cancel context: an ended Ctx answers with one carrying its own
// cause; otherwise the parent answers.
func (c *Ctx) Value(key any) any {
	switch key {
	case selfKey{}:
		return c
	case nil:
	case c.key:
		return c.val
	case cancelKey:
		if c.ended.Load() {
			c.mu.Lock()
			own := c.own
			c.mu.Unlock()
			if own != nil {
				return own
			}
		}
	}
	return c.parent.Value(key)
}

// SetValue makes c answer val for key, as context.WithValue would, without
// a context of its own. Call it before c is handed to anyone; one value per
// Ctx (a second call replaces the first).
func (c *Ctx) SetValue(key, val any) { c.key, c.val = key, val }

// AfterFunc is what the standard library's cancel contexts made under c
// (net/http's, context.AfterFunc's) register with instead of starting a
// goroutine that waits for Done: f runs once c ends, on the goroutine that
// ends it (on a new one when c has ended already), unless the returned stop
// is called first (it then reports true).
func (c *Ctx) AfterFunc(f func()) func() bool {
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		// On a goroutine of its own, as context.AfterFunc does: the standard
		// library registers while holding its child's lock, which f takes.
		go f()
		return func() bool { return false }
	}
	c.nextID++
	id := c.nextID
	c.funcs = append(c.funcs, hook{id: id, f: f})
	c.mu.Unlock()
	return func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		for i, h := range c.funcs {
			if h.id == id {
				c.funcs = append(c.funcs[:i], c.funcs[i+1:]...)
				return true
			}
		}
		return false
	}
}

// String names the context as the standard ones do, for debugging.
func (c *Ctx) String() string { return "pgw.callctx" }
