package memory

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/pgw-go/pgw/gate"
)

func TestSteadyReadingsAgreeWithItsNow(t *testing.T) {
	assert.Zero(t, steadyEpochNS%1000, "the epoch is on a whole µs")
	before := steadyNS()
	now := steady{}.Now()
	after := steadyNS()
	assert.LessOrEqual(t, before, now.UnixNano())
	assert.LessOrEqual(t, now.UnixNano(), after)
}

func TestAReadingServesAnotherSteadyClockAsItIs(t *testing.T) {
	r := read(steadyClock(gate.SystemClock{}))
	assert.True(t, r.steady)
	assert.Equal(t, floorDiv(r.ns, 1000), r.microsOn(steady{}))

	fake := &fakeNow{t: time.Date(2031, 5, 6, 7, 8, 9, 123_456_789, time.UTC)}
	assert.Equal(t, fake.t.UnixMicro(), r.microsOn(fake), "another clock is read")
	fr := read(fake)
	assert.False(t, fr.steady)
	assert.Equal(t, fake.t.UnixNano(), fr.ns)
	assert.Equal(t, fake.t.UnixMicro(), floorDiv(fr.ns, 1000))
	ts := fr.microsOn(steady{})
	assert.InDelta(t, float64(time.Now().UnixMicro()), float64(ts), float64(time.Hour/time.Microsecond),
		"a steady clock is read, not handed a fake clock's reading")
}

func TestFloorDivRoundsDown(t *testing.T) {
	for _, c := range []struct{ a, b, want int64 }{{7, 2, 3}, {-7, 2, -4}, {-8, 2, -4}, {0, 5, 0}, {-1, 1000, -1}, {999, 1000, 0}} {
		assert.Equal(t, c.want, floorDiv(c.a, c.b), "%d / %d", c.a, c.b)
	}
	before := time.Unix(0, -1500) // as the time package counts
	assert.Equal(t, before.UnixMicro(), floorDiv(before.UnixNano(), 1000))
}

type fakeNow struct{ t time.Time }

func (f *fakeNow) Now() time.Time { return f.t }

func TestNoReadingIsReadOnTheClock(t *testing.T) {
	fake := &fakeNow{t: time.Date(2031, 5, 6, 7, 8, 9, 0, time.UTC)}
	assert.Equal(t, fake.t.UnixMicro(), reading{}.microsOn(fake))
	assert.Greater(t, reading{}.microsOn(steady{}), int64(0))
}
