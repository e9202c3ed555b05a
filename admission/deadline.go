package admission

import (
	"context"
	"log/slog"
	"time"

	"github.com/pgw-go/pgw/internal/errs"
)

// StallHorizon is a StallBudget that also knows when the call will be
// stalled counting the deliveries of the other calls of its scope: a call
// is stalled only once its stall time exceeds the window and no call of the
// scope delivered within it, so a recent success pushes the moment back.
// retry's StallClock implements it; a budget without it is judged by
// Remaining alone.
type StallHorizon interface {
	// Horizon is how long the call may still wait before it is stalled,
	// deliveries of its scope included; ≤ 0 once it would be.
	Horizon() time.Duration
}

// failFastError is the error a fail_fast policy gives for a round that
// admitted nothing: *CircuitOpenError when every rejection is a gate one,
// else *AllSourcesExhausted{Reason: quota_exhausted}; both carry hint, the
// certain earliest admission.
func (c *Call) failFastError(rej Rejections, hint time.Duration, allGate bool) error {
	if allGate {
		return &errs.CircuitOpenError{Scope: c.a.scope, Sources: rej.Sources(), RetryAfter: hint}
	}
	return &errs.AllSourcesExhausted{Scope: c.a.scope, Reason: errs.ReasonQuotaExhausted, Reasons: rej.Map(), RetryAfter: hint}
}

// unreachable reports why a wait of a certain hint cannot end in an
// admission: "deadline" when the earliest admission is at or past ctx's
// deadline, "stall_window" when it is past the moment the call would be
// stalled; "" when the wait may pay off, or when there is no certain wait
// (hint 0: a probe in flight, an in-flight slot, the pacer may free any
// moment). stallLeft is the call's remaining stall budget (its horizon when
// the budget knows it).
func (c *Call) unreachable(ctx context.Context, hint, stallLeft time.Duration) (why string, untilDeadline time.Duration) {
	if hint <= 0 {
		return "", 0
	}
	untilDeadline = -1
	if dl, ok := ctx.Deadline(); ok {
		// A ctx deadline fires on the wall clock, whatever clock the
		// admission is given.
		untilDeadline = time.Until(dl)
		if hint >= untilDeadline {
			return "deadline", untilDeadline
		}
	}
	if c.stall != nil && hint > stallLeft {
		return "stall_window", untilDeadline
	}
	return "", untilDeadline
}

// stallLeft is how long the call may still wait before it is stalled.
func (c *Call) stallLeft() time.Duration {
	if h, ok := c.stall.(StallHorizon); ok {
		return h.Horizon()
	}
	return c.stall.Remaining()
}

// giveUp ends a call whose wait cannot pay off with the fail_fast error, at
// once, and logs why at Info.
func (c *Call) giveUp(ctx context.Context, why string, rej Rejections, hint, untilDeadline time.Duration, allGate bool) error {
	err := c.failFastError(rej, hint, allGate)
	attrs := []slog.Attr{
		slog.String("scope", c.a.scope),
		slog.String("bound", why),
		slog.Any("reasons", rej.Map()),
		slog.Duration("retry_after", hint),
	}
	if untilDeadline >= 0 {
		attrs = append(attrs, slog.Duration("until_deadline", untilDeadline))
	}
	c.a.log.LogAttrs(ctx, slog.LevelInfo, "pgw: no source can be admitted in time; not waiting", attrs...)
	c.leave(err, "")
	return err
}

// fitNap shortens a nap that would outlast ctx's deadline although the
// certain wait ends before it: the call wakes between the end of the wait
// and the deadline instead of sleeping into context.DeadlineExceeded.
func fitNap(nap, hint, untilDeadline time.Duration) time.Duration {
	if untilDeadline < 0 || nap < untilDeadline || hint >= untilDeadline {
		return nap
	}
	return hint + (untilDeadline-hint)/2
}
