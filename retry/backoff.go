package retry

import "time"

// Backoff is exponential backoff with full jitter, capped: before retry n
// (n = 1 after the first failure) a call sleeps r × min(Max, Base × 2^(n−1)),
// r uniform in [0, 1). Full jitter spreads the retries of calls that failed
// together (AWS Architecture Blog, "Exponential Backoff And Jitter"). The
// zero value means the defaults.
type Backoff struct {
	// Base is the ceiling of the first backoff (default 200 ms).
	Base time.Duration
	// Max caps the ceiling (default 10 s).
	Max time.Duration
}

// Backoff defaults.
const (
	DefaultBackoffBase = 200 * time.Millisecond
	DefaultBackoffMax  = 10 * time.Second
)

// Ceiling is the upper bound of the backoff before retry n (n ≥ 1).
func (b Backoff) Ceiling(n int) time.Duration {
	base, ceil := b.Base, b.Max
	if base <= 0 {
		base = DefaultBackoffBase
	}
	if ceil <= 0 {
		ceil = DefaultBackoffMax
	}
	d := base
	for i := 1; i < n && d < ceil; i++ {
		d *= 2
	}
	return min(d, ceil)
}

// Delay is the backoff before retry n for the random number r in [0, 1).
func (b Backoff) Delay(n int, r float64) time.Duration {
	return time.Duration(r * float64(b.Ceiling(n)))
}
