package admission

import (
	"sync"
	"sync/atomic"
	"time"
)

// Memo is the per-process "skip this source until T" map. It is fed
// with the breaker's RetryAfter on every rejection and with an upstream's
// Retry-After on a 429, and consulted before the breaker so that a source
// known to be cooling down costs no gate query. SetUntil only moves a
// deadline forward: a later, shorter hint never cuts a running cooldown
// short. Because the breaker's RetryAfter is 0 when a probe is in flight, a
// HalfOpen rejection leaves no entry and a recovered source is admitted again
// at once.
//
// The zero value is ready to use. Safe for concurrent use.
type Memo struct {
	mu    sync.RWMutex
	until map[string]time.Time
	// held marks the sources whose current deadline is an upstream's
	// Retry-After (HoldUntil), not a breaker cooldown.
	held map[string]bool
	// entries is len(until), read without the lock so that an empty memo —
	// the usual case — costs an atomic load.
	entries atomic.Int64
}

// NewMemo returns an empty memo.
func NewMemo() *Memo { return &Memo{} }

// SetUntil records that source should be skipped until until, unless a later
// deadline is already recorded.
func (m *Memo) SetUntil(source string, until time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if cur, ok := m.until[source]; ok && !until.After(cur) {
		return
	}
	if m.until == nil {
		m.until = make(map[string]time.Time)
	}
	if _, ok := m.until[source]; !ok {
		m.entries.Add(1)
	}
	m.until[source] = until
	delete(m.held, source)
}

// HoldUntil is SetUntil for an upstream's Retry-After: while this deadline
// stands, rejections say the source is held off (HeldOff), not cooling
// down.
func (m *Memo) HoldUntil(source string, until time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if cur, ok := m.until[source]; ok && !until.After(cur) {
		return
	}
	if m.until == nil {
		m.until = make(map[string]time.Time)
	}
	if m.held == nil {
		m.held = make(map[string]bool)
	}
	if _, ok := m.until[source]; !ok {
		m.entries.Add(1)
	}
	m.until[source] = until
	m.held[source] = true
}

// Active reports whether source is to be skipped at now.
func (m *Memo) Active(source string, now time.Time) bool {
	return m.Remaining(source, now) > 0
}

// Remaining is how long source is still to be skipped at now; 0 when it is
// not.
func (m *Memo) Remaining(source string, now time.Time) time.Duration {
	return m.remaining(source, func() time.Time { return now })
}

// remaining is Remaining with the time read only when an entry exists.
func (m *Memo) remaining(source string, clock func() time.Time) time.Duration {
	d, _ := m.remainingWhy(source, clock)
	return d
}

// remainingWhy is remaining and whether the deadline is an upstream's
// Retry-After.
func (m *Memo) remainingWhy(source string, clock func() time.Time) (time.Duration, bool) {
	if m.entries.Load() == 0 {
		return 0, false
	}
	m.mu.RLock()
	until, ok := m.until[source]
	held := m.held[source]
	m.mu.RUnlock()
	if !ok {
		return 0, false
	}
	now := clock()
	if !until.After(now) {
		return 0, false
	}
	return until.Sub(now), held
}
