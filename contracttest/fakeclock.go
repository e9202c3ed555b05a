package contracttest

import (
	"sync"
	"time"
)

type fakeClock struct {
	mu  *sync.Mutex
	now *time.Time
}

func newFakeClock() fakeClock {
	t := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	return fakeClock{mu: new(sync.Mutex), now: &t}
}

func (c fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return *c.now
}

func (c fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	*c.now = c.now.Add(d)
	c.mu.Unlock()
}
