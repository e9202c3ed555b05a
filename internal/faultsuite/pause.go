package faultsuite

import (
	"sync"
	"time"
)

// pauseTick is how often a pauseWatch wakes up.
const pauseTick = 5 * time.Millisecond

// maxPauses bounds the pauses a pauseWatch keeps.
const maxPauses = 4096

// pauseWatch notes the spans in which this process was not running its
// goroutines: one goroutine wakes up every tick; a wake-up that comes late
// by more than a tick means that for the lateness no goroutine of the
// process ran on time (a starved machine, a stop-the-world pause). A bound
// on how soon a call must react to something (its cancellation) measures
// the time the process could run, not the time the machine gave it to
// others.
type pauseWatch struct {
	tick time.Duration
	stop chan struct{}
	done chan struct{}

	mu     sync.Mutex
	pauses [][2]time.Time // [start, end) of each late wake-up's lateness
	max    time.Duration
	woke   time.Time // the last wake-up noted; zero before the first
}

// newPauseWatch starts a pauseWatch; stop it with close.
func newPauseWatch(tick time.Duration) *pauseWatch {
	p := &pauseWatch{tick: tick, stop: make(chan struct{}), done: make(chan struct{}), woke: time.Now()}
	go p.run()
	return p
}

func (p *pauseWatch) run() {
	defer close(p.done)
	t := time.NewTicker(p.tick)
	defer t.Stop()
	p.mu.Lock()
	last := p.woke
	p.mu.Unlock()
	for {
		select {
		case <-p.stop:
			return
		case <-t.C:
		}
		now := time.Now()
		p.note(last.Add(p.tick), now)
		last = now
	}
}

// note records that a wake-up due at due came at woke: the span between
// is a pause when it is longer than a tick (the ticker's own jitter).
func (p *pauseWatch) note(due, woke time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.woke = woke
	if woke.Sub(due) <= p.tick {
		return
	}
	p.max = max(p.max, woke.Sub(due))
	if len(p.pauses) == maxPauses {
		p.pauses = p.pauses[1:]
	}
	p.pauses = append(p.pauses, [2]time.Time{due, woke})
}

// within is how much of [from, to) the process spent in pauses.
func (p *pauseWatch) within(from, to time.Time) time.Duration {
	if p == nil {
		return 0
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.noted(from, to)
}

// noted is within under p.mu.
func (p *pauseWatch) noted(from, to time.Time) time.Duration {
	var d time.Duration
	for _, s := range p.pauses {
		d += overlap(s[0], s[1], from, to)
	}
	return d
}

// withinSoFar is within for a span that ended a moment ago, with the pause
// the watch has not noted yet: when a paused process resumes, the goroutine
// asking may run before the watch's own, which notes the pause only once it
// wakes up. A wake-up due more than a tick before to and not noted yet is
// such a pause, from when it was due until to at least.
func (p *pauseWatch) withinSoFar(from, to time.Time) time.Duration {
	if p == nil {
		return 0
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	d := p.noted(from, to)
	if due := p.woke.Add(p.tick); !p.woke.IsZero() && to.Sub(due) > p.tick {
		d += overlap(due, to, from, to)
	}
	return d
}

// overlap is how much of [start, end) lies within [from, to).
func overlap(start, end, from, to time.Time) time.Duration {
	if start.Before(from) {
		start = from
	}
	if end.After(to) {
		end = to
	}
	if end.After(start) {
		return end.Sub(start)
	}
	return 0
}

// longest is the longest pause seen so far.
func (p *pauseWatch) longest() time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.max
}

// close stops the watch.
func (p *pauseWatch) close() {
	close(p.stop)
	<-p.done
}
