package gate

import "fmt"

// State is the state of one source's circuit breaker.
type State uint8

// The three breaker states. The zero value is Closed, so an unknown source
// reads as Closed.
const (
	Closed State = iota
	Open
	HalfOpen
)

// String returns "closed", "open" or "half_open".
func (s State) String() string {
	switch s {
	case Closed:
		return "closed"
	case Open:
		return "open"
	case HalfOpen:
		return "half_open"
	}
	return fmt.Sprintf("state(%d)", uint8(s))
}

// Outcome is what an admitted call reports back to the gate.
type Outcome uint8

// Outcomes. The zero value is deliberately invalid so that a forgotten field
// is caught instead of being counted as a success.
const (
	// Success: the upstream answered; counts toward closing a HalfOpen breaker.
	Success Outcome = iota + 1
	// Failure: 5xx, timeout or connection error; counts toward tripping.
	Failure
	// Fatal: 401/402/403 or exhausted upstream quota; opens the breaker at
	// once.
	Fatal
	// Released: the call says nothing about the source (caller error, caller
	// cancellation, a 429 that the pacer handles instead); only its probe
	// lease is given back.
	Released
)

// String returns "success", "failure", "fatal" or "released".
func (o Outcome) String() string {
	switch o {
	case Success:
		return "success"
	case Failure:
		return "failure"
	case Fatal:
		return "fatal"
	case Released:
		return "released"
	}
	return fmt.Sprintf("outcome(%d)", uint8(o))
}

// Valid reports whether o is one of the four defined outcomes.
func (o Outcome) Valid() bool { return o >= Success && o <= Released }
