package breaker

import "context"

// Wrap returns fn guarded by cb: a decorator. Each call of
// the returned function is a cb.Execute of fn. Several functions wrapped with
// the same breaker (for example one from Registry.GetOrCreate) share its
// state, so decorators of the same name share one breaker.
func Wrap(cb *Breaker, fn func(context.Context) error) func(context.Context) error {
	if cb == nil || fn == nil {
		panic("pgw/breaker: Wrap called with a nil breaker or function")
	}
	return func(ctx context.Context) error { return cb.Execute(ctx, fn) }
}

// WrapValue is Wrap for a function that returns a value: each call of the
// returned function is a Do of fn.
func WrapValue[T any](cb *Breaker, fn func(context.Context) (T, error)) func(context.Context) (T, error) {
	if cb == nil || fn == nil {
		panic("pgw/breaker: WrapValue called with a nil breaker or function")
	}
	return func(ctx context.Context) (T, error) { return Do(ctx, cb, fn) }
}
