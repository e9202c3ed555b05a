package pgw

import (
	"reflect"

	"github.com/pgw-go/pgw/internal/errs"
)

// The lower packages (admission, retry, config, the transports) cannot
// import this package, so they build their errors from package errs, whose
// types mirror the public ones field for field. The gateway converts every
// error it returns (public), and errors.As into a public type also works on
// an unconverted chain: each errs type's As method asks asPublic.

func init() { errs.Public = asPublic }

// asPublic sets target, a pointer to a public error type, to the public
// twin of err, an errs type, and reports whether it could.
func asPublic(err error, target any) bool {
	switch t := target.(type) {
	case **CircuitOpenError:
		if e, ok := err.(*errs.CircuitOpenError); ok {
			*t = publicCircuitOpen(e)
			return true
		}
	case **AllSourcesExhausted:
		if e, ok := err.(*errs.AllSourcesExhausted); ok {
			*t = publicExhausted(e)
			return true
		}
	case **GatewayUnavailableError:
		if e, ok := err.(*errs.GatewayUnavailableError); ok {
			*t = &GatewayUnavailableError{Scope: e.Scope, Attempts: e.Attempts, Last: public(e.Last)}
			return true
		}
	case **BatchError:
		if e, ok := err.(*errs.BatchError); ok {
			*t = publicBatch(e)
			return true
		}
	case **HTTPError:
		if e, ok := err.(*errs.HTTPError); ok {
			*t = (*HTTPError)(cloneHTTP(e))
			return true
		}
	case **ConfigError:
		if e, ok := err.(*errs.ConfigError); ok {
			*t = publicConfig(e)
			return true
		}
	}
	return false
}

func publicCircuitOpen(e *errs.CircuitOpenError) *CircuitOpenError {
	return &CircuitOpenError{Scope: e.Scope, Sources: e.Sources, RetryAfter: e.RetryAfter, Last: public(e.Last)}
}

func publicExhausted(e *errs.AllSourcesExhausted) *AllSourcesExhausted {
	return &AllSourcesExhausted{Scope: e.Scope, Reason: e.Reason, Reasons: e.Reasons, RetryAfter: e.RetryAfter, Last: public(e.Last)}
}

func publicBatch(e *errs.BatchError) *BatchError {
	out := &BatchError{Scope: e.Scope, Total: e.Total, Failed: make([]BatchFailure, len(e.Failed))}
	for i, f := range e.Failed {
		out.Failed[i] = BatchFailure{Start: f.Start, End: f.End, Err: public(f.Err)}
	}
	return out
}

func publicConfig(e *errs.ConfigError) *ConfigError {
	out := &ConfigError{Problems: make([]ConfigProblem, len(e.Problems))}
	for i, p := range e.Problems {
		out.Problems[i] = ConfigProblem(p)
	}
	return out
}

func cloneHTTP(e *errs.HTTPError) *errs.HTTPError {
	c := *e
	return &c
}

// public returns err with every errs type in its chain replaced by its
// public twin. A wrapper around one (fmt.Errorf's %w) is kept as a wrapper
// with the same message around the converted error; a chain without any
// errs type is returned as it is.
func public(err error) error {
	if err == nil || !hasInternal(err) {
		return err
	}
	switch e := err.(type) {
	case *errs.CircuitOpenError:
		return publicCircuitOpen(e)
	case *errs.AllSourcesExhausted:
		return publicExhausted(e)
	case *errs.GatewayUnavailableError:
		return &GatewayUnavailableError{Scope: e.Scope, Attempts: e.Attempts, Last: public(e.Last)}
	case *errs.BatchError:
		return publicBatch(e)
	case *errs.HTTPError:
		return (*HTTPError)(cloneHTTP(e))
	case *errs.ConfigError:
		return publicConfig(e)
	}
	switch u := err.(type) {
	case interface{ Unwrap() error }:
		return &converted{orig: err, inner: []error{public(u.Unwrap())}}
	case interface{ Unwrap() []error }:
		in := u.Unwrap()
		out := make([]error, len(in))
		for i, e := range in {
			out[i] = public(e)
		}
		return &converted{orig: err, inner: out}
	}
	return err
}

// hasInternal reports whether err's chain holds an errs type.
func hasInternal(err error) bool {
	switch err.(type) {
	case *errs.CircuitOpenError, *errs.AllSourcesExhausted, *errs.GatewayUnavailableError,
		*errs.BatchError, *errs.HTTPError, *errs.ConfigError:
		return true
	}
	switch u := err.(type) {
	case interface{ Unwrap() error }:
		if in := u.Unwrap(); in != nil {
			return hasInternal(in)
		}
	case interface{ Unwrap() []error }:
		for _, e := range u.Unwrap() {
			if e != nil && hasInternal(e) {
				return true
			}
		}
	}
	return false
}

// converted stands for a wrapper whose chain was converted: same message,
// the converted chain below, and errors.As into the wrapper's own type still
// finds the original.
type converted struct {
	orig  error
	inner []error
}

func (c *converted) Error() string { return c.orig.Error() }

func (c *converted) Unwrap() []error { return c.inner }

func (c *converted) As(target any) bool {
	v := reflect.ValueOf(target)
	if v.Kind() != reflect.Pointer || v.IsNil() {
		return false
	}
	if reflect.TypeOf(c.orig).AssignableTo(v.Elem().Type()) {
		v.Elem().Set(reflect.ValueOf(c.orig))
		return true
	}
	return false
}

func (c *converted) Is(target error) bool {
	return reflect.TypeOf(target).Comparable() && reflect.TypeOf(c.orig).Comparable() && c.orig == target
}
