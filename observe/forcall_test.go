package observe_test

import (
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/pgw-go/pgw/observe"
)

// flipObs is a user's observer whose Enabled follows a flag and that
// counts the calls it is told of.
type flipObs struct {
	on    atomic.Bool
	calls atomic.Int64
}

func (s *flipObs) Enabled() bool                          { return s.on.Load() }
func (s *flipObs) ObserveAttempt(observe.AttemptRecord)   {}
func (s *flipObs) ObserveStateChange(observe.StateChange) {}
func (s *flipObs) ObserveCall(observe.CallResult)         { s.calls.Add(1) }
func newFlipObs(n int, on func(i int) bool) []*flipObs {
	out := make([]*flipObs, n)
	for i := range out {
		out[i] = &flipObs{}
		out[i].on.Store(on(i))
	}
	return out
}

func asObservers(s []*flipObs) []observe.Observer {
	out := make([]observe.Observer, len(s))
	for i, o := range s {
		out[i] = o
	}
	return out
}

// ForCall hands a call's events to the members of a Multi that are enabled
// when it starts, however many members the Multi has and however deeply
// Multis are nested; nil when none is, the Multi itself when all are.
func TestForCallKeepsTheMembersThatAreOn(t *testing.T) {
	for _, n := range []int{1, 2, 6, 7, 65} {
		obs := newFlipObs(n, func(i int) bool { return i%2 == 0 })
		half := len(obs) / 2
		m := observe.Multi(observe.Multi(asObservers(obs[:half])...), observe.Multi(asObservers(obs[half:])...))
		f := observe.ForCall(m)
		if assert.NotNil(t, f, "n=%d", n) {
			f.ObserveCall(observe.CallResult{})
		}
		for i, o := range obs {
			assert.Equal(t, int64(1-i%2), o.calls.Load(), "n=%d member %d", n, i)
		}

		for _, o := range obs {
			o.on.Store(false)
		}
		assert.Nil(t, observe.ForCall(m), "n=%d: no member on", n)
		for _, o := range obs {
			o.on.Store(true)
		}
		assert.Equal(t, m, observe.ForCall(m), "n=%d: every member on", n)
	}
	assert.Nil(t, observe.ForCall(nil))
	assert.Nil(t, observe.ForCall(observe.Multi()))
	off := &flipObs{}
	assert.Nil(t, observe.ForCall(observe.AsFull(off)), "an observer that is off, alone")
	off.on.Store(true)
	assert.NotNil(t, observe.ForCall(observe.AsFull(off)))
}

// A small Multi whose members are partly on builds the view of those members
// once: later calls that find the same members on allocate nothing.
func TestForCallOfASmallMultiAllocatesOnlyOncePerSetOfMembers(t *testing.T) {
	obs := newFlipObs(3, func(i int) bool { return i != 1 })
	m := observe.Multi(asObservers(obs)...)
	first := observe.ForCall(m)
	assert.Zero(t, testing.AllocsPerRun(100, func() {
		if observe.ForCall(m) != first {
			t.Fatal("another view for the same members")
		}
	}))
}
