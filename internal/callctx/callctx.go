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
//
// Its fields are laid out for the two Ctxs every governed call allocates
// (the call's and its attempt's): what few Ctxs need lives in rare, so
// that the call and its attempt state fit in smaller allocations.
type Ctx struct {
	parent context.Context // values; its end is ours
	up     *Ctx            // the nearest Ctx above, when it is registered with it
	dl     time.Time
	key    any // one value of c's own (SetValue); nil: none
	val    any

	state   atomic.Uint32 // hasDone | isEnded: read them without the lock
	hasDL   bool
	errKind uint8  // the end's Err: an end* kind; endOther: rare.err (under mu)
	ownKind uint8  // the end's own cause: an end* kind; endNone: the parent's (under mu)
	nextID  uint32 // the last AfterFunc registration's id (under mu)
	seq     uint32 // c's place in tq (under tq.mu)
	mu      sync.Mutex

	// kid is the usual one child (a call's attempt), registered and
	// dropped without the lock; endedKid once c has ended.
	kid    atomic.Pointer[Ctx]
	done   chan struct{} // made on the first Done; closedchan once ended before that
	f0     hook          // the first AfterFunc registration: net/http makes one per request
	unhook func() bool   // undoes the registration with a parent that is not a Ctx
	tq     *Timeouts     // ends c at its deadline; nil once c has ended
	rare   *rare
}

// The bits of Ctx.state.
const (
	hasDone uint32 = 1 << iota // done is set
	isEnded                    // the end is set
)

func (c *Ctx) ended() bool { return c.state.Load()&isEnded != 0 }

// rare is what a Ctx seldom needs: made on first use, under mu.
type rare struct {
	err   error             // the end's Err, when it is not one of the two standard ones
	own   any               // a canceled *context.cancelCtx carrying a cause of c's own (ownKind endOther)
	kids  map[*Ctx]struct{} // children beyond the one in kid (hedged attempts)
	funcs []hook            // AfterFunc registrations beyond f0
	alarm *alarm            // the deadline's own timer, for a Ctx on no Timeouts
}

// The kinds of an end's Err and cause.
const (
	endNone uint8 = iota
	endCanceled
	endDeadline
	endOther
)

// kindOf is the kind of err, an end's Err or cause.
func kindOf(err error) uint8 {
	switch err {
	case nil:
		return endNone
	case context.Canceled:
		return endCanceled
	case context.DeadlineExceeded:
		return endDeadline
	}
	return endOther
}

func (c *Ctx) more() *rare {
	if c.rare == nil {
		c.rare = new(rare)
	}
	return c.rare
}

// hook is one AfterFunc registration; f nil: none.
type hook struct {
	f  func()
	id uint32
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
// time.Now() of a moment ago, from which the deadline counts. The deadline
// has a timer of its own; InitOn shares one among Ctxs of one timeout.
func (c *Ctx) InitAt(parent context.Context, now time.Time, timeout time.Duration) {
	if !c.start(parent, now, timeout) {
		return
	}
	a := arm(c, timeout)
	c.mu.Lock()
	if c.errKind != endNone {
		c.mu.Unlock()
		a.disarm()
		return
	}
	c.more().alarm = a
	c.mu.Unlock()
}

// InitOn is InitAt with q's timeout, whose timer ends c at its deadline.
// now is time.Now() of a moment ago: q keeps its Ctxs in the order they
// start, so a now read long before would end c late.
func (c *Ctx) InitOn(parent context.Context, now time.Time, q *Timeouts) {
	if !c.start(parent, now, q.d) {
		return
	}
	q.add(c)
	c.mu.Lock()
	if c.errKind == endNone {
		c.tq = q
		c.mu.Unlock()
		return
	}
	c.mu.Unlock()
	q.leave(c)
}

// start sets c up under parent and reports whether c needs a timer of its
// own for a deadline timeout from now.
func (c *Ctx) start(parent context.Context, now time.Time, timeout time.Duration) bool {
	c.parent = parent
	if timeout > 0 {
		c.dl, c.hasDL = now.Add(timeout), true
	}
	if pdl, ok := parent.Deadline(); ok && (!c.hasDL || pdl.Before(c.dl)) {
		// The parent ends first: its end reaches us, no timer of our own.
		c.dl, c.hasDL, timeout = pdl, true, 0
	}
	c.attach(parent)
	return timeout > 0 && !c.ended()
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
	if c.errKind != endNone {
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
	if c.errKind != endNone || c.kid.Load() == endedKid {
		return false
	}
	r := c.more()
	if r.kids == nil {
		r.kids = make(map[*Ctx]struct{})
	}
	r.kids[k] = struct{}{}
	return true
}

func (c *Ctx) dropKid(k *Ctx) {
	if c.kid.CompareAndSwap(k, nil) {
		return
	}
	c.mu.Lock()
	if c.rare != nil {
		delete(c.rare.kids, k)
	}
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
// timer. Call it once the attempt (or call) is over. It is cancel with
// both kinds known, as every attempt's and call's end takes it: no
// comparison of errors finds them.
func (c *Ctx) Stop() {
	if c.ended() {
		return
	}
	c.mu.Lock()
	if c.errKind != endNone {
		c.mu.Unlock()
		return
	}
	c.errKind, c.ownKind = endCanceled, endCanceled
	c.endLocked(context.Canceled)
}

// cancel ends c with err. cause nil means the parent ended c: its cause
// is the parent's.
func (c *Ctx) cancel(err, cause error) {
	if c.ended() {
		return
	}
	if err == nil { // a parent that is done without an Err
		err = context.Canceled
	}
	ek, ok := kindOf(err), kindOf(cause)
	if ek == endOther || ok == endOther {
		c.cancelOther(err, cause, ek, ok)
		return
	}
	c.mu.Lock()
	if c.errKind != endNone {
		c.mu.Unlock()
		return
	}
	c.errKind, c.ownKind = ek, ok
	c.endLocked(err)
}

// cancelOther is cancel for an Err or a cause other than the two standard
// ones, which c keeps in rare. Out of line, as the rest of the rare ends:
// an attempt's end runs the common path alone, in fewer bytes of code.
//
//go:noinline
func (c *Ctx) cancelOther(err, cause error, ek, ok uint8) {
	var own any
	if ok == endOther {
		own = causeCarrier(cause)
	}
	c.mu.Lock()
	if c.errKind != endNone {
		c.mu.Unlock()
		return
	}
	r := c.more()
	if ek == endOther {
		r.err = err
	}
	r.own = own
	c.errKind, c.ownKind = ek, ok
	c.endLocked(err)
}

// endLocked ends c, whose end (errKind, ownKind) was just set under mu,
// which it unlocks: it closes done, leaves the timeout queue and the
// parent, and ends the children and the AfterFunc registrations.
func (c *Ctx) endLocked(err error) {
	c.state.Or(isEnded) // before done closes: who sees it closed sees Err
	if c.done == nil {
		c.done = closedchan
		c.state.Or(hasDone)
	} else {
		close(c.done)
	}
	f0 := c.f0
	c.f0 = hook{}
	var rest rare
	if r := c.rare; r != nil {
		rest.kids, rest.funcs, rest.alarm = r.kids, r.funcs, r.alarm
		r.kids, r.funcs, r.alarm = nil, nil, nil
	}
	unhook, q, up := c.unhook, c.tq, c.up
	c.unhook, c.tq = nil, nil
	c.mu.Unlock()

	if q != nil {
		q.leave(c)
	}
	if up != nil {
		up.dropKid(c)
	}
	if kid := c.kid.Swap(endedKid); kid != nil && kid != endedKid {
		kid.cancel(err, nil)
	}
	if f0.f != nil {
		f0.f()
	}
	if unhook != nil || rest.kids != nil || rest.funcs != nil || rest.alarm != nil {
		endRest(err, unhook, &rest)
	}
}

// endRest is the rest of an end that few Ctxs have: an own timer, a hook
// on a parent that is not a Ctx, children beyond the first, AfterFunc
// registrations beyond the first.
//
//go:noinline
func endRest(err error, unhook func() bool, r *rare) {
	if r.alarm != nil {
		r.alarm.disarm()
	}
	if unhook != nil {
		unhook()
	}
	for k := range r.kids {
		k.cancel(err, nil)
	}
	for _, h := range r.funcs {
		h.f()
	}
}

// Deadline implements context.Context.
func (c *Ctx) Deadline() (time.Time, bool) { return c.dl, c.hasDL }

// Done implements context.Context.
func (c *Ctx) Done() <-chan struct{} {
	if c.state.Load()&hasDone != 0 {
		return c.done
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done == nil {
		c.done = make(chan struct{})
		c.state.Or(hasDone)
	}
	return c.done
}

// Err implements context.Context.
func (c *Ctx) Err() error {
	if !c.ended() {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.errLocked()
}

// errLocked is Err, under mu of an ended c.
func (c *Ctx) errLocked() error {
	switch c.errKind {
	case endCanceled:
		return context.Canceled
	case endDeadline:
		return context.DeadlineExceeded
	}
	return c.rare.err
}

// selfKey finds the nearest Ctx through value contexts.
type selfKey struct{}

// Value implements context.Context. context.Cause asks it for the standard
// library's cancel context: an ended Ctx answers with one carrying its own
// cause; otherwise the parent answers.
func (c *Ctx) Value(key any) any {
	// net/http asks a request's ctx several times for keys it holds none
	// of: the common answer is the parent's, after two comparisons of
	// type words. Keys are compared as interfaces only when c has a value
	// of its own, or has ended.
	if _, ok := key.(selfKey); ok {
		return c
	}
	if c.key != nil && key == c.key {
		return c.val
	}
	if c.ended() && key != nil && key == cancelKey {
		if own := c.ownCarrierLocked(); own != nil {
			return own
		}
	}
	return c.parent.Value(key)
}

// ownCarrierLocked is ownCarrier under mu. Out of line: net/http asks every
// request's ctx for the key while it runs, when c has not ended.
//
//go:noinline
func (c *Ctx) ownCarrierLocked() any {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ownCarrier()
}

// ownCarrier is the carrier of c's own cause, under mu; nil: the parent's.
func (c *Ctx) ownCarrier() any {
	switch c.ownKind {
	case endCanceled:
		return canceledCarrier
	case endDeadline:
		return deadlineCarrier
	case endOther:
		return c.rare.own
	}
	return nil
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
	if c.errKind != endNone {
		c.mu.Unlock()
		// On a goroutine of its own, as context.AfterFunc does: the standard
		// library registers while holding its child's lock, which f takes.
		go f()
		return func() bool { return false }
	}
	c.nextID++
	h := hook{f: f, id: c.nextID}
	if c.f0.f == nil {
		c.f0 = h
	} else {
		r := c.more()
		r.funcs = append(r.funcs, h)
	}
	c.mu.Unlock()
	return func() bool { return c.unregister(h.id) }
}

// unregister drops the AfterFunc registration id; false when it ran or
// was dropped already.
func (c *Ctx) unregister(id uint32) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.f0.f != nil && c.f0.id == id {
		c.f0 = hook{}
		return true
	}
	if c.rare == nil {
		return false
	}
	for i, h := range c.rare.funcs {
		if h.id == id {
			c.rare.funcs = append(c.rare.funcs[:i], c.rare.funcs[i+1:]...)
			return true
		}
	}
	return false
}

// String names the context as the standard ones do, for debugging.
func (c *Ctx) String() string { return "pgw.callctx" }
