package breaker

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/gate"
)

var errNotFound = errors.New("404 not found")

func TestIsSuccessfulCountsAnErrorAsSuccessAndReturnsIt(t *testing.T) {
	b, _, l := newTestBreaker(t, gate.Policy{ConsecutiveFailures: 2}, Config{
		IsSuccessful: func(err error) bool { return err == nil || errors.Is(err, errNotFound) },
	})
	for range 3 {
		require.ErrorIs(t, b.Execute(t.Context(), func(context.Context) error { return errNotFound }), errNotFound)
	}
	assert.Equal(t, gate.Closed, b.State())
	assert.Equal(t, uint64(3), b.Metrics().Successes)
	trip(t, b, 2)
	assert.Equal(t, []gate.Outcome{gate.Success, gate.Success, gate.Success, gate.Failure, gate.Failure}, l.recorded())
}

func TestIsSuccessfulComesAfterCancellationFatalAndExclusion(t *testing.T) {
	always := func(error) bool { return true }
	b, _, l := newTestBreaker(t, gate.Policy{Cooldown: time.Second}, Config{IsSuccessful: always, ExcludedErrors: []error{errNotFound}})
	require.ErrorIs(t, b.Execute(t.Context(), func(context.Context) error { return errNotFound }), errNotFound)
	ctx, cancel := context.WithCancel(t.Context())
	require.ErrorIs(t, b.Execute(ctx, func(ctx context.Context) error { cancel(); return ctx.Err() }), context.Canceled)
	_ = b.Execute(t.Context(), func(context.Context) error { return Fatal(errBoom) })
	assert.Equal(t, []gate.Outcome{gate.Released, gate.Released, gate.Fatal}, l.recorded())
	assert.Equal(t, gate.Open, b.State())
}

func TestHandleErrorsListsTheOnlyFailures(t *testing.T) {
	b, _, l := newTestBreaker(t, gate.Policy{ConsecutiveFailures: 2}, Config{HandleErrors: []error{errBoom}})
	for range 4 {
		require.ErrorIs(t, b.Execute(t.Context(), func(context.Context) error { return errNotFound }), errNotFound)
	}
	require.NoError(t, b.Execute(t.Context(), succeed))
	assert.Equal(t, gate.Closed, b.State())
	trip(t, b, 2)
	assert.Equal(t, []gate.Outcome{gate.Success, gate.Success, gate.Success, gate.Success, gate.Success, gate.Failure, gate.Failure}, l.recorded())
}

func TestDoResultClassifiesByValue(t *testing.T) {
	b, _, l := newTestBreaker(t, gate.Policy{ConsecutiveFailures: 2}, Config{})
	status := func(code int, err error) func(context.Context) (int, error) {
		return func(context.Context) (int, error) { return code, err }
	}
	failed := func(code int, err error) bool { return err != nil || code >= 500 }
	v, err := DoResult(t.Context(), b, status(200, nil), failed)
	require.NoError(t, err)
	assert.Equal(t, 200, v)
	v, err = DoResult(t.Context(), b, status(503, nil), failed)
	require.NoError(t, err, "the value and error come back unchanged")
	assert.Equal(t, 503, v)
	// An excluded error is classified before the verdict.
	b2, _, l2 := newTestBreaker(t, gate.Policy{}, Config{ExcludedErrors: []error{errNotFound}})
	_, err = DoResult(t.Context(), b2, status(0, errNotFound), failed)
	require.ErrorIs(t, err, errNotFound)
	assert.Equal(t, []gate.Outcome{gate.Released}, l2.recorded())

	_, _ = DoResult(t.Context(), b, status(500, nil), failed)
	assert.Equal(t, gate.Open, b.State())
	assert.Equal(t, []gate.Outcome{gate.Success, gate.Failure, gate.Failure}, l.recorded())
	_, err = DoResult(t.Context(), b, status(200, nil), failed)
	require.ErrorIs(t, err, ErrOpen)
	assert.Panics(t, func() { _, _ = DoResult(t.Context(), b, status(200, nil), nil) })
}

func TestNewRejectsNilHandleErrors(t *testing.T) {
	_, err := New("x", Config{HandleErrors: []error{errBoom, nil}})
	var ce *ConfigError
	require.ErrorAs(t, err, &ce)
	assert.Contains(t, err.Error(), "HandleErrors[1]=nil")
}
