package breaker

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/pgw-go/pgw/gate"
	"github.com/pgw-go/pgw/gate/memory"
)

// Config configures a Breaker. The zero value is valid: a memory gate with
// the default gate.Policy (trip after 5 consecutive failures, 60 s cooldown,
// one probe), every error counted, no listeners, slog.Default().
type Config struct {
	// Policy configures the default memory gate; zero fields mean the
	// defaults of gate.Policy. It must stay zero when Gate is set: a provided
	// gate carries its own policy.
	Policy gate.Policy
	// Gate, when set, replaces the default memory gate: for example a Redis
	// gate shared by several processes. The breaker's name is the source key
	// it uses in that gate, so breakers of the same name in different
	// processes share one state.
	Gate gate.ProviderGate
	// Clock drives the default memory gate and Interval, and timestamps
	// state changes (default: the wall clock). It must stay nil when Gate
	// is set: a provided gate keeps its own time.
	Clock gate.Clock
	// IsExcluded reports errors that say nothing about the dependency's
	// health, such as validation errors. They are neither
	// successes nor failures, and give back a probe lease.
	IsExcluded func(error) bool
	// ExcludedErrors are excluded too, matched with errors.Is.
	ExcludedErrors []error
	// IsSuccessful, when set, decides whether a call that is neither
	// cancelled by its caller, Fatal nor excluded counted as a success
	// (true) or a failure (false), nil error included; an error it calls a
	// success is still returned to the caller. It is gobreaker's
	// IsSuccessful. Default: a nil error is a success, any other a failure.
	IsSuccessful func(error) bool
	// HandleErrors, when non-empty, lists the only errors that are failures
	// (matched with errors.Is); any other error counts as a success, and is
	// still returned. It is failsafe-go's HandleErrors. IsSuccessful, when
	// also set, decides first; HandleErrors is then not consulted.
	HandleErrors []error
	// ReadyToTrip, when set, decides after each failure while Closed whether
	// the breaker trips, given the Counts with that failure in them: it is
	// gobreaker's ReadyToTrip. A Go function cannot run inside a shared
	// gate, so the breaker evaluates it and trips the gate by recording the
	// failure as Fatal (the gate opens at once with its current cooldown),
	// after reading the gate's Snapshot to check that the call's Closed
	// generation is still the current one: a call that outlived a trip and
	// a close counts for nothing. With a gate shared by several processes
	// it sees this process's counts only. When ReadyToTrip or FailureThreshold is set and Policy leaves
	// ConsecutiveFailures at 0, the default memory gate switches its
	// consecutive rule off (gate.Disabled), as gobreaker's ReadyToTrip
	// replaces its default; set ConsecutiveFailures to keep both. Should it
	// panic, the failure is still recorded, without a trip, and the panic
	// continues.
	ReadyToTrip func(Counts) bool
	// FailureThreshold, when set, trips the breaker once the Counts hold
	// that many failures while Closed: with CountWindow, that many of the
	// last CountWindow outcomes (failsafe-go's WithFailureThresholdRatio;
	// WithFailureThreshold(n) is FailureThreshold n with CountWindow n);
	// without it, that many since the counts last started (the generation,
	// or the Interval). It trips as ReadyToTrip does; either trips.
	FailureThreshold int
	// CountWindow, when set, makes the Closed Counts' TotalSuccesses and
	// TotalFailures cover only the last CountWindow outcomes (failsafe-go's
	// thresholding capacity). It is kept by this Breaker, not the gate.
	CountWindow int
	// Interval, when set, starts the Counts again every Interval while
	// Closed (gobreaker's Interval), timed by Clock, else the wall clock.
	// The gate's own rules are unaffected.
	Interval time.Duration
	// OnStateChange listeners are registered at creation, as by
	// Breaker.OnStateChange.
	OnStateChange []func(StateChange)
	// Logger receives state changes (Info) and gate errors (Warn); default
	// slog.Default().
	Logger *slog.Logger
}

// validate returns a *ConfigError listing every problem of c, or nil.
func (c Config) validate(name string) error {
	var problems []string
	var policyErr error
	add := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	if name == "" {
		add(`name="" (legal: a non-empty string)`)
	}
	if c.Gate != nil {
		if c.Policy != (gate.Policy{}) {
			add("Policy=%+v with Gate set (legal: a zero Policy; a provided gate carries its own policy)", c.Policy)
		}
		if c.Clock != nil {
			add("Clock=%T with Gate set (legal: nil; a provided gate keeps its own time)", c.Clock)
		}
	} else if err := c.Policy.Validate(); err != nil {
		policyErr = err
		var pe *gate.PolicyError
		if errors.As(err, &pe) {
			for _, p := range pe.Problems {
				add("Policy.%s", p)
			}
		} else {
			add("Policy: %v", err)
		}
	}
	for i, e := range c.ExcludedErrors {
		if e == nil {
			add("ExcludedErrors[%d]=nil (legal: non-nil errors)", i)
		}
	}
	if c.FailureThreshold < 0 {
		add("FailureThreshold=%d (legal: ≥ 0, 0 for none)", c.FailureThreshold)
	}
	if c.CountWindow < 0 {
		add("CountWindow=%d (legal: ≥ 0, 0 for none)", c.CountWindow)
	}
	if c.CountWindow > 0 && c.FailureThreshold > c.CountWindow {
		add("FailureThreshold=%d (legal: ≤ CountWindow %d)", c.FailureThreshold, c.CountWindow)
	}
	if c.Interval < 0 {
		add("Interval=%v (legal: ≥ 0, 0 for none)", c.Interval)
	}
	for i, e := range c.HandleErrors {
		if e == nil {
			add("HandleErrors[%d]=nil (legal: non-nil errors)", i)
		}
	}
	for i, l := range c.OnStateChange {
		if l == nil {
			add("OnStateChange[%d]=nil (legal: non-nil functions)", i)
		}
	}
	if len(problems) == 0 {
		return nil
	}
	return &ConfigError{Name: name, Problems: problems, Policy: policyErr}
}

// buildGate returns the configured gate, or a new memory gate.
func (c Config) buildGate() (gate.ProviderGate, error) {
	if c.Gate != nil {
		return c.Gate, nil
	}
	var opts []memory.Option
	if c.Clock != nil {
		opts = append(opts, memory.WithClock(c.Clock))
	}
	p := c.Policy
	if c.tripper() != nil && p.ConsecutiveFailures == 0 {
		p.ConsecutiveFailures = gate.Disabled
	}
	return memory.NewBreaker(p, opts...)
}

// tripper combines ReadyToTrip and FailureThreshold; nil when neither is
// set.
func (c Config) tripper() func(Counts) bool {
	ready, n := c.ReadyToTrip, uint64(max(c.FailureThreshold, 0))
	switch {
	case ready == nil && n == 0:
		return nil
	case n == 0:
		return ready
	case ready == nil:
		return func(c Counts) bool { return c.TotalFailures >= n }
	}
	return func(c Counts) bool { return c.TotalFailures >= n || ready(c) }
}
