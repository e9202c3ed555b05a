package breaker

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/pgw-go/pgw/gate"
)

// Stable error codes.
const (
	// CodeOpen is the code of *OpenError, shared with the gateway's
	// circuit-open error.
	CodeOpen = "PGW-CB-OPEN"
	// CodeConfig is the code of *ConfigError.
	CodeConfig = "PGW-CB-CONFIG"
)

// ErrOpen is the sentinel every *OpenError matches: errors.Is(err, ErrOpen)
// tells that a breaker refused a call without running it.
var ErrOpen = errors.New("pgw/breaker: circuit open")

// OpenError is returned when a breaker rejects a call. The call was not run.
type OpenError struct {
	// Name is the breaker's name.
	Name string
	// State is Open, or HalfOpen when every probe lease is taken.
	State gate.State
	// RetryAfter is the pinned contract value of the gate's decision: while
	// Open, the time until a call can certainly be admitted again; while
	// HalfOpen, 0 — a probe may finish at any moment, so there is no certain
	// wait.
	RetryAfter time.Duration
}

// Error describes the rejection, naming the breaker and the wait.
func (e *OpenError) Error() string {
	if e.State == gate.HalfOpen {
		return fmt.Sprintf("pgw/breaker: breaker %q is half_open with every probe in flight: retry at any moment", e.Name)
	}
	if e.RetryAfter <= 0 {
		// Held open by an operator (gate.Forcer), or a cooldown that has
		// just ended: there is no certain wait to name.
		return fmt.Sprintf("pgw/breaker: breaker %q is %s with no certain time to retry", e.Name, e.State)
	}
	return fmt.Sprintf("pgw/breaker: breaker %q is %s: retry after %v", e.Name, e.State, e.RetryAfter)
}

// Code returns CodeOpen ("PGW-CB-OPEN").
func (e *OpenError) Code() string { return CodeOpen }

// Is reports whether target is ErrOpen.
func (e *OpenError) Is(target error) bool { return target == ErrOpen }

// FatalError marks an error that must open the breaker at once, from any
// state (a rejected credential, an exhausted upstream quota). Create it with
// Fatal. It unwraps to the marked error.
type FatalError struct {
	// Err is the error marked fatal.
	Err error
}

// Fatal marks err as fatal for the breaker: returned from a guarded function
// it opens the breaker at once instead of counting as one failure. The caller
// of Execute gets the *FatalError back; errors.Is and errors.As see through it
// to err. Fatal(nil) is nil.
func Fatal(err error) error {
	if err == nil {
		return nil
	}
	return &FatalError{Err: err}
}

// Error returns the marked error's message.
func (e *FatalError) Error() string { return e.Err.Error() }

// Unwrap returns the marked error.
func (e *FatalError) Unwrap() error { return e.Err }

// ConfigError lists every problem of a Config given to New or
// Registry.GetOrCreate. When the gate policy is invalid it also unwraps to
// the *gate.PolicyError.
type ConfigError struct {
	// Name is the breaker name the config was for.
	Name string
	// Problems names each invalid field, its value and what is legal.
	Problems []string
	// Policy is the policy's own validation error, if any.
	Policy error
}

// Error lists the problems.
func (e *ConfigError) Error() string {
	return fmt.Sprintf("pgw/breaker: invalid config for breaker %q: %s", e.Name, strings.Join(e.Problems, "; "))
}

// Code returns CodeConfig ("PGW-CB-CONFIG").
func (e *ConfigError) Code() string { return CodeConfig }

// Unwrap returns the policy's validation error, or nil.
func (e *ConfigError) Unwrap() error { return e.Policy }
