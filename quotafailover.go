package pgw

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/pgw-go/pgw/gate"
	"github.com/pgw-go/pgw/gate/redis"
)

// localPermitID marks, in gate.Permit.ID, a permit the fallback granted. The
// Redis gate's IDs are hex and the memory gate ignores the field.
const localPermitID = "pgw-local-fallback"

// quotaFailover is the quota counterpart of redis.Failover for
// PGW_REDIS_DOWN=fail_open: it serves from the Redis quota gate and, while
// Redis is unreachable, from a local memory quota gate with the same limits
// (SPEC §13). One call per retry interval tries Redis again during an outage;
// the outage is logged once when it starts and once when it ends. A permit
// goes back to the gate that granted it; a Redis permit whose Settle or
// Release cannot reach Redis is dropped (its in-flight lease expires in
// Redis). Safe for concurrent use; it starts no goroutine.
type quotaFailover struct {
	primary, fallback gate.QuotaGate
	log               *slog.Logger
	every             time.Duration

	mu      sync.Mutex
	down    bool
	since   time.Time
	nextTry time.Time
	trying  bool
}

var _ gate.QuotaGate = (*quotaFailover)(nil)

func (f *quotaFailover) Acquire(ctx context.Context, source string, estTokens int64) (gate.Permit, gate.QuotaDecision, error) {
	if use, probe := f.usePrimary(); use {
		p, d, err := f.primary.Acquire(ctx, source, estTokens)
		if !f.settle(err, probe) {
			return p, d, err
		}
	}
	p, d, err := f.fallback.Acquire(ctx, source, estTokens)
	if err == nil && d.Allowed {
		p.ID = localPermitID
	}
	return p, d, err
}

func (f *quotaFailover) Settle(ctx context.Context, p gate.Permit, actualTokens int64) error {
	if p.ID == localPermitID {
		p.ID = ""
		return f.fallback.Settle(ctx, p, actualTokens)
	}
	return f.dropUnreachable(f.primary.Settle(ctx, p, actualTokens))
}

func (f *quotaFailover) Release(ctx context.Context, p gate.Permit) error {
	if p.ID == localPermitID {
		p.ID = ""
		return f.fallback.Release(ctx, p)
	}
	return f.dropUnreachable(f.primary.Release(ctx, p))
}

// dropUnreachable turns an outage into success for the give-back of a Redis
// permit: the account cannot be corrected now, and the lease expires by
// itself.
func (f *quotaFailover) dropUnreachable(err error) error {
	if errors.Is(err, redis.ErrUnreachable) {
		f.settle(err, false)
		return nil
	}
	return err
}

// usePrimary and settle follow redis.Failover: outside an outage every call
// uses Redis; during one, a single call per interval.
func (f *quotaFailover) usePrimary() (use, probe bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.down {
		return true, false
	}
	if f.trying || time.Now().Before(f.nextTry) {
		return false, false
	}
	f.trying = true
	return true, true
}

func (f *quotaFailover) settle(err error, probe bool) (fallBack bool) {
	unreachable := errors.Is(err, redis.ErrUnreachable)
	f.mu.Lock()
	defer f.mu.Unlock()
	if probe {
		f.trying = false
	}
	switch {
	case unreachable:
		now := time.Now()
		f.nextTry = now.Add(f.every)
		if !f.down {
			f.down, f.since = true, now
			f.log.Warn("pgw: redis unreachable, quota gate serving from the local fallback until it answers",
				"error", err.Error())
		}
		return true
	case err == nil && f.down && probe:
		f.down = false
		f.log.Info("pgw: redis reachable again, quota gate back on redis",
			"outage", time.Since(f.since).Round(time.Millisecond).String())
	}
	return false
}
