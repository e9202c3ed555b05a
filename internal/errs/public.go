package errs

// Public, when set (package pgw sets it), sets target — a pointer to one of
// pgw's public error types — to the public twin of err, one of this
// package's errors, and reports whether it could. The As methods of this
// package's errors call it, so that errors.As into the public types works on
// any chain the lower packages return.
var Public func(err error, target any) bool

func public(err error, target any) bool { return Public != nil && Public(err, target) }

// As lets errors.As reach the public twin (pgw.CircuitOpenError).
func (e *CircuitOpenError) As(target any) bool { return public(e, target) }

// As lets errors.As reach the public twin (pgw.AllSourcesExhausted).
func (e *AllSourcesExhausted) As(target any) bool { return public(e, target) }

// As lets errors.As reach the public twin (pgw.GatewayUnavailableError).
func (e *GatewayUnavailableError) As(target any) bool { return public(e, target) }

// As lets errors.As reach the public twin (pgw.BatchError).
func (e *BatchError) As(target any) bool { return public(e, target) }

// As lets errors.As reach the public twin (pgw.HTTPError).
func (e *HTTPError) As(target any) bool { return public(e, target) }

// As lets errors.As reach the public twin (pgw.ConfigError).
func (e *ConfigError) As(target any) bool { return public(e, target) }
