package gate

import "time"

// Clock tells the time. Backends that keep time themselves take one so tests
// can drive it; the Redis backend ignores it and uses the server's TIME.
type Clock interface {
	// Now returns the current time. It must be safe for concurrent use.
	Now() time.Time
}

// SystemClock is the wall clock.
type SystemClock struct{}

// Now returns time.Now().
func (SystemClock) Now() time.Time { return time.Now() }
