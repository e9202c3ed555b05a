package admission

import (
	"context"
	"time"
)

// Nap is how long a waiting call sleeps before its next admission round
// (hint is the certain wait the rejections carry):
//
//	base = hint + poll·(0.5+0.5·r)   when hint > 0
//	base =        poll·(0.5+0.5·r)   otherwise
//
// then clamped to remainingStall + poll, a bound never below poll.
//
// The jitter is added to the hint, never scaled into it: waking before a
// certain deadline only buys another rejection. The clamp makes a call wake no
// later than one poll after its stall budget runs out, so its worst wall time
// is the stall window plus one poll interval — the stalled check is strict
// (>), so waking exactly at the budget would not yet be stalled. With no hint
// the nap is the plain jittered poll, in [poll/2, poll). The bound never
// falls below poll, so that an exhausted (≤ 0) remaining budget does not
// turn the nap into a busy spin.
//
// remainingStall is how long the call may still wait before it is stalled:
// its own budget, or longer while its scope's other calls deliver (see
// StallHorizon). r is a random number in [0, 1).
func Nap(hint, poll, remainingStall time.Duration, r float64) time.Duration {
	jitter := time.Duration(float64(poll) * (0.5 + 0.5*r))
	d := jitter
	if hint > 0 {
		d = hint + jitter
	}
	const forever = time.Duration(1<<63 - 1)
	if remainingStall > forever-poll {
		return d // an unbounded budget (NewCall(nil)): nothing to clamp, and no overflow
	}
	if upper := max(remainingStall, 0) + poll; d > upper {
		d = upper
	}
	return d
}

// SleepContext sleeps for d or until ctx is done, whichever comes first, and
// returns ctx.Err() in the latter case. It is the default sleep of
// SourceAdmission and the retry loops.
func SleepContext(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
