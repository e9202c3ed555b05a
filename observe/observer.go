package observe

import "sync/atomic"

// Observer receives what pgw does. Its methods are called synchronously, on
// the goroutines of the calls, outside every lock of pgw's, possibly
// concurrently: an implementation must be safe for concurrent use and quick
// (wrap a slow one in Async). The optional interfaces below add the other
// events; pgw checks for them once, when it is built.
//
// A panic in a method called on the goroutine of a call goes on to that
// call's caller, once what the call held is given back. Some events are
// reported on goroutines pgw starts itself, where no caller could recover
// it — a hedged attempt's after its race (its advertised limits, a lost
// attempt's record and a state change its give-back shows), the outcome
// writer's (state changes with a Redis backend), the hook that closes a
// stream when its ctx ends: there a panic is recovered and logged at Warn,
// redacted, and the reports of that goroutine's step that were still to
// come are dropped.
type Observer interface {
	// ObserveAttempt is called when an attempt ends.
	ObserveAttempt(AttemptRecord)
	// ObserveStateChange is called when a source's breaker is seen in
	// another state than before.
	ObserveStateChange(StateChange)
}

// AttemptStartObserver is an Observer that also wants to know when attempts
// begin (in-flight gauges).
type AttemptStartObserver interface {
	// ObserveAttemptStart is called when an attempt has been admitted and
	// is about to call its source; its end is the matching ObserveAttempt.
	ObserveAttemptStart(AttemptStart)
}

// RejectionObserver is an Observer that also wants every source an admission
// round skipped.
type RejectionObserver interface {
	// ObserveRejection is called for each source an admission round
	// passed over, with the reason.
	ObserveRejection(Rejection)
}

// WaitObserver is an Observer that also wants the start and end of every
// wait for a runnable source.
type WaitObserver interface {
	// ObserveWaitStart is called when a call finds no source it may run
	// and begins to wait.
	ObserveWaitStart(WaitStart)
	// ObserveWaitEnd is called when that wait ends, with a source or with
	// the error that ended it.
	ObserveWaitEnd(WaitEnd)
}

// CallObserver is an Observer that also wants the end of every call.
type CallObserver interface {
	// ObserveCall is called once per governed call, when it ends (for a
	// chat stream: when the stream ends or is closed).
	ObserveCall(CallResult)
}

// EnabledObserver is an Observer that can say it would ignore every event
// for now, as a log below its level does. pgw asks once per call, when the
// call starts, and builds none of the call's reports while it says false:
// the observer gets none of that call's events — attempt starts and
// records, rejections, waits, hedges, the call's result, and for a
// ContextObserver its StartCall and the rest. Inside Multi each member is
// asked for itself; Async and the adapter of AsFull ask the observer they
// wrap. State changes and advertised rate limits are news of a source, not
// of a call: they are delivered whatever Enabled says, so that each state
// change still starts where the one before ended. An Observer without the
// method is always enabled.
type EnabledObserver interface {
	// Enabled reports whether the observer wants the events of a call
	// starting now.
	Enabled() bool
}

// Enabled reports whether o wants events now: false for a nil o, o.Enabled()
// for an EnabledObserver, true for any other. A Multi is enabled when one of
// its observers is.
func Enabled(o Observer) bool {
	if o == nil {
		return false
	}
	if e, ok := o.(EnabledObserver); ok {
		return e.Enabled()
	}
	return true
}

// Full is an Observer with every optional method. Nop, Funcs, Multi,
// Async and the Prometheus collector are Full.
type Full interface {
	Observer
	AttemptStartObserver
	RejectionObserver
	WaitObserver
	CallObserver
}

// AsFull returns o as a Full: o itself when it already is one, otherwise an
// adapter that passes each event to o when o implements its method and drops
// it when not, and that is enabled exactly when o is (EnabledObserver). It
// returns nil for a nil o, so callers can keep "no observer" as a nil check
// on the hot path.
func AsFull(o Observer) Full {
	switch o := o.(type) {
	case nil:
		return nil
	case Full:
		return o
	}
	a := &adapter{o: o}
	a.en, _ = o.(EnabledObserver)
	a.start, _ = o.(AttemptStartObserver)
	a.rej, _ = o.(RejectionObserver)
	a.wait, _ = o.(WaitObserver)
	a.call, _ = o.(CallObserver)
	return a
}

type adapter struct {
	o     Observer
	en    EnabledObserver // o's Enabled; nil: o is always enabled
	start AttemptStartObserver
	rej   RejectionObserver
	wait  WaitObserver
	call  CallObserver
}

// Enabled asks the wrapped observer, so that wrapping never turns an
// observer that says it is off into one that is on.
func (a *adapter) Enabled() bool { return a.en == nil || a.en.Enabled() }

func (a *adapter) ObserveAttempt(e AttemptRecord)   { a.o.ObserveAttempt(e) }
func (a *adapter) ObserveStateChange(e StateChange) { a.o.ObserveStateChange(e) }

func (a *adapter) ObserveAttemptStart(e AttemptStart) {
	if a.start != nil {
		a.start.ObserveAttemptStart(e)
	}
}

func (a *adapter) ObserveRejection(e Rejection) {
	if a.rej != nil {
		a.rej.ObserveRejection(e)
	}
}

func (a *adapter) ObserveWaitStart(e WaitStart) {
	if a.wait != nil {
		a.wait.ObserveWaitStart(e)
	}
}

func (a *adapter) ObserveWaitEnd(e WaitEnd) {
	if a.wait != nil {
		a.wait.ObserveWaitEnd(e)
	}
}

func (a *adapter) ObserveCall(e CallResult) {
	if a.call != nil {
		a.call.ObserveCall(e)
	}
}

// Nop ignores every event. Embed it to implement only some methods:
//
//	type opens struct{ observe.Nop }
//	func (opens) ObserveStateChange(e observe.StateChange) { … }
type Nop struct{}

var _ Full = Nop{}

// ObserveAttempt does nothing.
func (Nop) ObserveAttempt(AttemptRecord) {}

// ObserveStateChange does nothing.
func (Nop) ObserveStateChange(StateChange) {}

// ObserveAttemptStart does nothing.
func (Nop) ObserveAttemptStart(AttemptStart) {}

// ObserveRejection does nothing.
func (Nop) ObserveRejection(Rejection) {}

// ObserveWaitStart does nothing.
func (Nop) ObserveWaitStart(WaitStart) {}

// ObserveWaitEnd does nothing.
func (Nop) ObserveWaitEnd(WaitEnd) {}

// ObserveCall does nothing.
func (Nop) ObserveCall(CallResult) {}

// Funcs adapts functions to Full; a nil field ignores its events. It is as
// safe for concurrent use as its functions are.
type Funcs struct {
	// Attempt receives ObserveAttempt's events.
	Attempt func(AttemptRecord)
	// StateChange receives ObserveStateChange's events.
	StateChange func(StateChange)
	// AttemptStart receives ObserveAttemptStart's events.
	AttemptStart func(AttemptStart)
	// Rejection receives ObserveRejection's events.
	Rejection func(Rejection)
	// WaitStart receives ObserveWaitStart's events.
	WaitStart func(WaitStart)
	// WaitEnd receives ObserveWaitEnd's events.
	WaitEnd func(WaitEnd)
	// Call receives ObserveCall's events.
	Call func(CallResult)
	// Hedge receives ObserveHedge's events.
	Hedge func(Hedge)
}

var _ Full = Funcs{}

// ObserveAttempt calls f.Attempt.
func (f Funcs) ObserveAttempt(e AttemptRecord) {
	if f.Attempt != nil {
		f.Attempt(e)
	}
}

// ObserveStateChange calls f.StateChange.
func (f Funcs) ObserveStateChange(e StateChange) {
	if f.StateChange != nil {
		f.StateChange(e)
	}
}

// ObserveAttemptStart calls f.AttemptStart.
func (f Funcs) ObserveAttemptStart(e AttemptStart) {
	if f.AttemptStart != nil {
		f.AttemptStart(e)
	}
}

// ObserveRejection calls f.Rejection.
func (f Funcs) ObserveRejection(e Rejection) {
	if f.Rejection != nil {
		f.Rejection(e)
	}
}

// ObserveWaitStart calls f.WaitStart.
func (f Funcs) ObserveWaitStart(e WaitStart) {
	if f.WaitStart != nil {
		f.WaitStart(e)
	}
}

// ObserveWaitEnd calls f.WaitEnd.
func (f Funcs) ObserveWaitEnd(e WaitEnd) {
	if f.WaitEnd != nil {
		f.WaitEnd(e)
	}
}

// ObserveCall calls f.Call.
func (f Funcs) ObserveCall(e CallResult) {
	if f.Call != nil {
		f.Call(e)
	}
}

// Multi returns an observer that passes every event to each of obs in turn
// (nil entries skipped), each getting the events its methods accept. It is
// safe for concurrent use when they are. A Multi among obs is flattened
// into its members.
//
// Each member's Enabled is its own: pgw asks every member once per call,
// when the call starts (ForCall), and the events of that call go to the
// members that said true, so a member that is off gets none of them while
// the others get them all. A Multi is enabled when one of its members is.
func Multi(obs ...Observer) Full {
	m := &multi{obs: make([]Full, 0, len(obs))}
	for _, o := range obs {
		switch f := AsFull(o).(type) {
		case nil:
		case *multi:
			m.obs = append(m.obs, f.obs...)
		default:
			m.obs = append(m.obs, f)
		}
	}
	if len(m.obs) <= maxCachedMembers {
		m.sub = make([]atomic.Pointer[multi], 1<<len(m.obs))
	}
	m.index()
	return m
}

// index finds each member's Enabled once (m.en), so that a call asks them
// without asserting each member's type again.
func (m *multi) index() {
	m.en = make([]EnabledObserver, len(m.obs))
	for i, o := range m.obs {
		m.en[i], _ = o.(EnabledObserver)
	}
}

// maxCachedMembers is the largest Multi whose every subset of members a call
// may find enabled is built once and kept (2^n of them).
const maxCachedMembers = 6

type multi struct {
	obs []Full
	en  []EnabledObserver // en[i] is obs[i]'s Enabled; nil: always enabled
	// sub holds, by the mask of the members enabled, the Multi of those
	// members, built the first time a call finds that mask; nil when obs
	// is too long to keep every subset.
	sub []atomic.Pointer[multi]
}

// ForCall returns the observer that gets the events of a call starting
// now: nil when o is not enabled (Enabled); for a Multi, o itself when
// every member is enabled, or else a Multi of the members that are. pgw
// calls it once per call, when the call starts, and hands that call's
// events (its attempts, rejections, waits, hedges, result and contexts)
// to what it returns, so a ContextObserver's ends always match its
// starts.
func ForCall(o Full) Full {
	m, ok := o.(*multi)
	if !ok {
		if o == nil || !Enabled(o) {
			return nil
		}
		return o
	}
	if len(m.obs) > 64 {
		return m.enabledSubset()
	}
	var mask uint64
	for i, e := range m.en {
		if e == nil || e.Enabled() {
			mask |= 1 << i
		}
	}
	switch mask {
	case 0:
		return nil
	case 1<<len(m.obs) - 1:
		return m
	}
	return m.forMask(mask)
}

// enabledSubset is ForCall for a Multi of more than 64 members: a Multi of
// those enabled now, or nil.
//
//go:noinline
func (m *multi) enabledSubset() Full {
	if s := m.subset(func(i int) bool { return Enabled(m.obs[i]) }); len(s.obs) > 0 {
		return s
	}
	return nil
}

// forMask is ForCall for a Multi that some members would ignore and some
// would not: the Multi of the members in mask, kept by mask for the next
// call. Out of line: with every member enabled, or none, ForCall runs
// without it, in fewer bytes of code.
//
//go:noinline
func (m *multi) forMask(mask uint64) Full {
	if m.sub == nil {
		return m.subset(func(i int) bool { return mask&(1<<i) != 0 })
	}
	if s := m.sub[mask].Load(); s != nil {
		return s
	}
	s := m.subset(func(i int) bool { return mask&(1<<i) != 0 })
	m.sub[mask].Store(s)
	return s
}

// subset returns a Multi of the members of m that in keeps.
func (m *multi) subset(in func(int) bool) *multi {
	s := &multi{}
	for i, f := range m.obs {
		if in(i) {
			s.obs = append(s.obs, f)
		}
	}
	s.index()
	return s
}

func (m *multi) Enabled() bool {
	for _, o := range m.obs {
		if Enabled(o) {
			return true
		}
	}
	return false
}

func (m *multi) ObserveAttempt(e AttemptRecord) {
	for _, o := range m.obs {
		o.ObserveAttempt(e)
	}
}

func (m *multi) ObserveStateChange(e StateChange) {
	for _, o := range m.obs {
		o.ObserveStateChange(e)
	}
}

func (m *multi) ObserveAttemptStart(e AttemptStart) {
	for _, o := range m.obs {
		o.ObserveAttemptStart(e)
	}
}

func (m *multi) ObserveRejection(e Rejection) {
	for _, o := range m.obs {
		o.ObserveRejection(e)
	}
}

func (m *multi) ObserveWaitStart(e WaitStart) {
	for _, o := range m.obs {
		o.ObserveWaitStart(e)
	}
}

func (m *multi) ObserveWaitEnd(e WaitEnd) {
	for _, o := range m.obs {
		o.ObserveWaitEnd(e)
	}
}

func (m *multi) ObserveCall(e CallResult) {
	for _, o := range m.obs {
		o.ObserveCall(e)
	}
}
