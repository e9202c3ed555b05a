package admission

import "fmt"

// Mode is what a scope does when no source may run: wait or fail at once. Its
// values are those of {SCOPE}__QUOTA_FULL and {SCOPE}__CIRCUIT_OPEN
// (config.Mode converts with Mode(m)).
type Mode string

// The two modes.
const (
	// Wait sleeps and tries again, within the call's stall budget.
	Wait Mode = "wait"
	// FailFast returns an error at once.
	FailFast Mode = "fail_fast"
)

// Defaults of the two policy keys: a full quota refills by itself, so calls
// wait for it by default; waiting on open breakers is opt-in, because it
// would turn every caller's fast failure into a long hang.
const (
	DefaultQuotaFull   = Wait
	DefaultCircuitOpen = FailFast
)

func (m Mode) valid() bool { return m == Wait || m == FailFast }

func checkMode(key string, m Mode) error {
	if m.valid() {
		return nil
	}
	return fmt.Errorf("%s=%q (legal: %q, %q, or empty for the default)", key, string(m), Wait, FailFast)
}
