package gate

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// Defaults applied to the zero fields of a Policy.
const (
	DefaultConsecutiveFailures = 5
	DefaultCooldown            = 60 * time.Second
	DefaultMaxCooldown         = 600 * time.Second
	DefaultCooldownMultiplier  = 2.0
	DefaultSuccessThreshold    = 1
	DefaultHalfOpenProbes      = 1
)

// MaxCooldownMultiplier is the largest CooldownMultiplier: a larger one
// reaches MaxCooldown at the first re-open all the same, and past it lies
// float overflow (+Inf), which no cooldown and no Redis script argument can
// hold.
const MaxCooldownMultiplier = 1000.0

// Disabled switches a rule off where zero already means "the default":
// ConsecutiveFailures: Disabled leaves tripping to the other rules (a
// failure-rate window, Fatal outcomes, a wrapper's own predicate).
const Disabled = -1

// Policy configures a breaker gate. The zero value is valid and means the
// defaults; WithDefaults shows the effective values.
type Policy struct {
	// ConsecutiveFailures trips the breaker after that many failures in a
	// row while Closed (default 5; Disabled switches the rule off, the
	// consecutive count is still kept and reported by Snapshot).
	ConsecutiveFailures int
	// Window, WindowMinCalls and WindowFailureRate add an optional rolling
	// failure-rate rule: trip when the window holds at least WindowMinCalls
	// outcomes and the failure share is ≥ WindowFailureRate. Window 0 turns
	// the rule off, and then WindowMinCalls and WindowFailureRate must be 0
	// (Validate rejects a rule that would silently do nothing). The window
	// is kept as 10 buckets of Window/10.
	Window            time.Duration
	WindowMinCalls    int
	WindowFailureRate float64
	// WindowFailures adds a failure-count rule to the window: trip when it
	// holds at least WindowMinCalls outcomes and WindowFailures or more of
	// them failed ("N failures within a period", failsafe-go's
	// WithFailureThresholdPeriod). It needs Window; with it set,
	// WindowFailureRate may be 0, which turns the rate rule off. Either rule
	// trips. 0 turns the count rule off.
	WindowFailures int
	// Cooldown is the first Open phase's length (default 60 s). Cooldown,
	// MaxCooldown and ProbeTTL count in whole microseconds in every
	// backend; a finer part is dropped (see WithDefaults).
	Cooldown time.Duration
	// MaxCooldown caps the grown cooldown (default 600 s).
	MaxCooldown time.Duration
	// CooldownMultiplier grows the cooldown at each re-open after a failed
	// probe (default 2; 1 keeps it constant; at most MaxCooldownMultiplier).
	// Closing resets it.
	CooldownMultiplier float64
	// ProbeTTL is how long a probe lease lives before another caller may take
	// it over. Default: DefaultProbeTTL(Cooldown, 0), i.e. max(Cooldown, 5 s);
	// the gateway sets it from its sources' timeouts.
	ProbeTTL time.Duration
	// SuccessThreshold is the number of probe successes that close the
	// breaker (default 1).
	SuccessThreshold int
	// HalfOpenProbes is the number of concurrent probe leases (default 1).
	HalfOpenProbes int
	// HalfOpenCalls, when set, is the number of probe outcomes a HalfOpen
	// phase may collect: it caps the probes granted per phase (leases in
	// flight plus outcomes so far, Released ones and expired leases
	// excluded) and tolerates failures. The phase closes at
	// SuccessThreshold successes and re-opens only when that can no longer
	// be reached, i.e. after more than HalfOpenCalls − SuccessThreshold
	// failures. It is failsafe-go's WithSuccessThresholdRatio(SuccessThreshold,
	// HalfOpenCalls) and, with SuccessThreshold = HalfOpenProbes =
	// HalfOpenCalls = n, gobreaker's MaxRequests n. 0 keeps the default
	// phase: no cap but HalfOpenProbes in flight, and the first probe
	// failure re-opens. It must be ≥ SuccessThreshold.
	HalfOpenCalls int
}

// DefaultProbeTTL is the default probe lease length, derived from the slowest
// source timeout: max(2 × slowest, cooldown, slowest + 5 s).
func DefaultProbeTTL(cooldown, slowestTimeout time.Duration) time.Duration {
	return max(2*slowestTimeout, cooldown, slowestTimeout+5*time.Second)
}

// WithDefaults returns p with every zero field replaced by its default, and
// Cooldown, MaxCooldown and ProbeTTL truncated to whole microseconds: every
// backend counts them in µs, the resolution of Redis TIME, so a finer part
// would make the memory gate's cooldowns and leases differ from the Redis
// gate's. It does not validate; call Validate for that.
func (p Policy) WithDefaults() Policy {
	p = p.withDefaults()
	// After the defaults and only for valid values, so that a zero never
	// comes from a truncation and Validate (which checks the values as
	// given) says the same of p as of the result.
	if p.Cooldown >= time.Millisecond {
		p.Cooldown = p.Cooldown.Truncate(time.Microsecond)
	}
	if p.MaxCooldown >= time.Millisecond {
		p.MaxCooldown = p.MaxCooldown.Truncate(time.Microsecond)
	}
	if p.ProbeTTL >= time.Millisecond {
		p.ProbeTTL = p.ProbeTTL.Truncate(time.Microsecond)
	}
	return p
}

// withDefaults is WithDefaults without the truncation to µs.
func (p Policy) withDefaults() Policy {
	if p.ConsecutiveFailures == 0 {
		p.ConsecutiveFailures = DefaultConsecutiveFailures
	}
	if p.Cooldown == 0 {
		p.Cooldown = DefaultCooldown
	}
	if p.MaxCooldown == 0 {
		p.MaxCooldown = max(DefaultMaxCooldown, p.Cooldown)
	}
	if p.CooldownMultiplier == 0 {
		p.CooldownMultiplier = DefaultCooldownMultiplier
	}
	if p.ProbeTTL == 0 {
		p.ProbeTTL = DefaultProbeTTL(p.Cooldown, 0)
	}
	if p.SuccessThreshold == 0 {
		p.SuccessThreshold = DefaultSuccessThreshold
	}
	if p.HalfOpenProbes == 0 {
		p.HalfOpenProbes = DefaultHalfOpenProbes
	}
	if p.Window > 0 && p.WindowMinCalls == 0 {
		p.WindowMinCalls = 1
	}
	return p
}

// Validate reports every invalid field of p (after defaults) in one error
// naming the field, its value and what is legal.
func (p Policy) Validate() error {
	p = p.withDefaults()
	var bad []string
	add := func(field string, v any, legal string) {
		bad = append(bad, fmt.Sprintf("%s=%v (legal: %s)", field, v, legal))
	}
	if p.ConsecutiveFailures < Disabled {
		add("ConsecutiveFailures", p.ConsecutiveFailures, "≥ 1, 0 for the default, or Disabled (-1) to switch the rule off")
	}
	if p.Window < 0 {
		add("Window", p.Window, "≥ 0 (0 turns the window off)")
	}
	if p.Window > 0 && p.Window < 10*time.Millisecond {
		add("Window", p.Window, "≥ 10ms when set")
	}
	if p.WindowMinCalls < 0 {
		add("WindowMinCalls", p.WindowMinCalls, "≥ 0")
	}
	// Without a window the rate rule and its minimum could not count
	// anything: a setting that would silently do nothing is an error, as
	// WindowFailures without Window is.
	if p.WindowMinCalls > 0 && p.Window == 0 {
		add("WindowMinCalls", p.WindowMinCalls, "0 unless Window is set")
	}
	if p.WindowFailureRate != 0 && p.Window == 0 {
		add("WindowFailureRate", p.WindowFailureRate, "0 unless Window is set")
	}
	// Every float is checked against a closed range by within, which also
	// rejects NaN and both infinities.
	if p.Window > 0 && p.WindowFailures == 0 && !(p.WindowFailureRate > 0 && within(p.WindowFailureRate, 0, 1)) {
		add("WindowFailureRate", p.WindowFailureRate, "in (0, 1] when Window is set without WindowFailures")
	}
	if p.Window > 0 && p.WindowFailures > 0 && !within(p.WindowFailureRate, 0, 1) {
		add("WindowFailureRate", p.WindowFailureRate, "in [0, 1] when WindowFailures is set (0: no rate rule)")
	}
	if p.WindowFailures < 0 {
		add("WindowFailures", p.WindowFailures, "≥ 0 (0 turns the count rule off)")
	}
	if p.WindowFailures > 0 && p.Window == 0 {
		add("WindowFailures", p.WindowFailures, "0 unless Window is set")
	}
	if p.Cooldown < time.Millisecond {
		add("Cooldown", p.Cooldown, "≥ 1ms, or 0 for the default")
	}
	if p.MaxCooldown < p.Cooldown {
		add("MaxCooldown", p.MaxCooldown, fmt.Sprintf("≥ Cooldown (%v)", p.Cooldown))
	}
	if !within(p.CooldownMultiplier, 1, MaxCooldownMultiplier) {
		add("CooldownMultiplier", p.CooldownMultiplier, fmt.Sprintf("in [1, %v], or 0 for the default", MaxCooldownMultiplier))
	}
	if p.ProbeTTL < time.Millisecond {
		add("ProbeTTL", p.ProbeTTL, "≥ 1ms, or 0 for the default")
	}
	if p.SuccessThreshold < 0 {
		add("SuccessThreshold", p.SuccessThreshold, "≥ 1, or 0 for the default")
	}
	if p.HalfOpenProbes < 0 {
		add("HalfOpenProbes", p.HalfOpenProbes, "≥ 1, or 0 for the default")
	}
	if p.HalfOpenCalls < 0 {
		add("HalfOpenCalls", p.HalfOpenCalls, "≥ 0 (0 for no per-phase cap)")
	}
	if p.HalfOpenCalls > 0 && p.HalfOpenCalls < p.SuccessThreshold {
		add("HalfOpenCalls", p.HalfOpenCalls, fmt.Sprintf("≥ SuccessThreshold (%d) when set", p.SuccessThreshold))
	}
	if len(bad) == 0 {
		return nil
	}
	return &PolicyError{Problems: bad}
}

// within reports whether v is in [lo, hi]: never for NaN, and never for
// an infinity when the bounds are finite.
func within(v, lo, hi float64) bool { return v >= lo && v <= hi }

// PolicyError lists every invalid field of a Policy.
type PolicyError struct {
	// Problems has one entry per invalid field: its name, its value and
	// what is legal.
	Problems []string
}

// Error implements the error interface.
func (e *PolicyError) Error() string {
	return "pgw/gate: invalid policy: " + strings.Join(e.Problems, "; ")
}

// ErrUnknownOutcome is returned by Record for an Outcome outside the four
// defined values.
var ErrUnknownOutcome = errors.New("pgw/gate: unknown outcome (legal: Success, Failure, Fatal, Released)")
