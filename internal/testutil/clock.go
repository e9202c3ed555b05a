// Package testutil holds helpers shared by pgw's tests: a fake clock, a
// redis-server launcher and a fake upstream. It is internal: users of pgw get
// the exported contract suites in package contracttest instead.
package testutil

import (
	"sync"
	"time"
)

// Epoch is the instant fake clocks start at: fixed so that failures reproduce.
var Epoch = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// FakeClock is a manually driven clock, safe for concurrent use.
type FakeClock struct {
	mu  sync.Mutex
	now time.Time
}

// NewFakeClock returns a clock standing at Epoch.
func NewFakeClock() *FakeClock { return &FakeClock{now: Epoch} }

// Now returns the clock's current instant.
func (c *FakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward by d.
func (c *FakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// Set moves the clock to t.
func (c *FakeClock) Set(t time.Time) {
	c.mu.Lock()
	c.now = t
	c.mu.Unlock()
}
