package breaker

import (
	"errors"
	"fmt"
	"log/slog"

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
	// Clock drives the default memory gate and timestamps state changes
	// (default: the wall clock). It must stay nil when Gate is set: a
	// provided gate keeps its own time.
	Clock gate.Clock
	// IsExcluded reports errors that say nothing about the dependency's
	// health (seed 004 §4.3), such as validation errors. They are neither
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
	return memory.NewBreaker(c.Policy, opts...)
}
