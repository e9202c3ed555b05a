package redis

import (
	"context"
	"log/slog"

	"github.com/pgw-go/pgw/gate"
)

// BudgetFailover serves an advertised budget from a primary (a Redis
// Budget) and, while it returns errors matching ErrUnreachable, from a
// local fallback (a memory budget): during an outage a single call per
// retry interval tries Redis again and the rest do not wait for it, whatever
// PGW_REDIS_DOWN says — the budget only ever holds calls back, so serving it
// locally is always the safe side. Outages are logged as Failover logs
// them. Safe for concurrent use; it starts no goroutine.
type BudgetFailover struct {
	primary, fallback gate.BudgetGate
	outage
}

var _ gate.BudgetGate = (*BudgetFailover)(nil)

// NewBudgetFailover returns a budget gate on primary with fallback for
// outages. logger nil means slog.Default().
func NewBudgetFailover(primary, fallback gate.BudgetGate, logger *slog.Logger, opts ...FailoverOption) (*BudgetFailover, error) {
	if primary == nil || fallback == nil {
		return nil, &ArgumentError{Name: "primary/fallback", Value: "<nil>", Legal: "two gate.BudgetGate"}
	}
	f := &BudgetFailover{primary: primary, fallback: fallback}
	f.init("advertised budget", FailOpen, logger, opts)
	return f, nil
}

// Take asks the primary, or the fallback during an outage.
func (f *BudgetFailover) Take(ctx context.Context, source string, estTokens int64) (gate.BudgetDecision, error) {
	if use, probe := f.usePrimary(); use {
		d, err := f.primary.Take(ctx, source, estTokens)
		if !f.settle(err, probe) {
			return d, err
		}
	}
	return f.fallback.Take(ctx, source, estTokens)
}

// Refresh refreshes the fallback always (so an outage starts from what was
// last known) and the primary outside an outage.
func (f *BudgetFailover) Refresh(ctx context.Context, source string, a gate.Advertised) error {
	_ = f.fallback.Refresh(ctx, source, a)
	if use, probe := f.usePrimary(); use {
		err := f.primary.Refresh(ctx, source, a)
		if !f.settle(err, probe) {
			return err
		}
	}
	return nil
}

// Read reads the primary, or the fallback during an outage.
func (f *BudgetFailover) Read(ctx context.Context, source string) (gate.Advertised, bool, error) {
	if use, probe := f.usePrimary(); use {
		a, ok, err := f.primary.Read(ctx, source)
		if !f.settle(err, probe) {
			return a, ok, err
		}
	}
	return f.fallback.Read(ctx, source)
}
