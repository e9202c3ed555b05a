package redis

import (
	"errors"
	"log/slog"
	"sync"
	"time"
)

// FailoverOption configures a Failover or a QuotaFailover.
type FailoverOption func(*outage)

// WithRetryInterval sets how often, during an outage, one call tries Redis
// again (default DefaultRetryInterval; 0 means every call).
func WithRetryInterval(d time.Duration) FailoverOption {
	return func(o *outage) { o.every = max(d, 0) }
}

// outage tracks whether Redis is reachable for one failover gate: outside an
// outage every call uses Redis; during one, a single call per retry interval
// tries it again and the rest go to the fallback. It logs once, at Warn, when
// an outage starts and once, at Info, when Redis answers again. Safe for
// concurrent use.
type outage struct {
	gate  string // "breaker" or "quota", for the log lines
	mode  Mode
	log   *slog.Logger
	every time.Duration

	mu      sync.Mutex
	down    bool      // an outage is in progress
	since   time.Time // when it started
	nextTry time.Time // earliest time a call may try the primary again
	trying  bool      // one call is trying the primary during the outage

	// pr, when set, decides outages for this gate: during its outage no
	// call tries the primary, and only its probes end the outage.
	pr *Prober
}

func (o *outage) init(gate string, mode Mode, logger *slog.Logger, opts []FailoverOption) {
	if logger == nil {
		logger = slog.Default()
	}
	o.gate, o.mode, o.log, o.every = gate, mode, logger, DefaultRetryInterval
	for _, opt := range opts {
		if opt != nil {
			opt(o)
		}
	}
}

// Mode returns the failover mode.
func (o *outage) Mode() Mode { return o.mode }

// Degraded reports whether an outage is in progress (calls are served by the
// fallback).
func (o *outage) Degraded() bool {
	if o.pr != nil {
		return o.pr.Down()
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.down
}

// outageNow returns the error a fail_closed gate returns at once, without
// asking Redis, while its prober reports an outage; nil otherwise.
func (o *outage) outageNow(op string) error {
	if o.pr != nil && o.pr.Down() {
		return &UnreachableError{Op: op, Err: o.pr.outageErr()}
	}
	return nil
}

// local reports whether a prober's outage serves every operation of this
// gate from its fallback: no call tries the primary until a probe ends it.
func (o *outage) local() bool { return o.pr != nil && o.pr.Down() }

// closedSettle books the primary's answer to a FailClosed gate: a Redis
// found unreachable starts its prober's outage at once, so that the calls
// after it fail at once instead of each trying Redis until the next probe.
// It returns err.
func (o *outage) closedSettle(err error) error {
	if o.pr != nil && errors.Is(err, ErrUnreachable) {
		o.pr.report(err)
	}
	return err
}

// usePrimary reports whether this call goes to the primary: always outside
// an outage; during one, a single call (the probe) once the retry interval
// has passed.
func (o *outage) usePrimary() (use, probe bool) {
	if o.pr != nil {
		return !o.pr.Down(), false
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if !o.down {
		return true, false
	}
	if o.trying || time.Now().Before(o.nextTry) {
		return false, false
	}
	o.trying = true
	return true, true
}

// settle books the primary's answer and reports whether the call must fall
// back (Redis unreachable). Other errors belong to the caller.
func (o *outage) settle(err error, probe bool) (fallBack bool) {
	unreachable := errors.Is(err, ErrUnreachable)
	if o.pr != nil {
		if unreachable {
			o.pr.report(err)
		}
		return unreachable
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if probe {
		o.trying = false
	}
	switch {
	case unreachable:
		now := time.Now()
		o.nextTry = now.Add(o.every)
		if !o.down {
			o.down, o.since = true, now
			o.log.Warn("pgw: redis unreachable, "+o.gate+" gate serving from the local fallback until it answers",
				"mode", o.mode.String(), "err", err.Error())
		}
		return true
	case err == nil && o.down && probe:
		o.down = false
		o.log.Info("pgw: redis reachable again, "+o.gate+" gate back on redis",
			"outage", time.Since(o.since).Round(time.Millisecond).String())
	}
	return false
}
