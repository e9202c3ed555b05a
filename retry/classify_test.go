package retry_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/pgw-go/pgw/retry"
	"github.com/pgw-go/pgw/transport"
)

func TestClassifyFollowsSpecSection7(t *testing.T) {
	cases := []struct {
		name string
		err  error
		want retry.Class
	}{
		{"nil is success", nil, retry.Success},
		{"500", httpErr(500, 0, "internal"), retry.Failure},
		{"502", httpErr(502, 0, "bad gateway"), retry.Failure},
		{"503", httpErr(503, 0, "overloaded"), retry.Failure},
		{"408 request timeout", httpErr(408, 0, "timeout"), retry.Failure},
		{"429 throttles", httpErr(429, time.Second, "rate limit reached"), retry.Throttle},
		{"429 insufficient_quota is fatal", httpErr(429, 0, "You exceeded your current quota (insufficient_quota)"), retry.Fatal},
		{"401", httpErr(401, 0, "invalid api key"), retry.Fatal},
		{"402", httpErr(402, 0, "payment required"), retry.Fatal},
		{"403", httpErr(403, 0, "forbidden"), retry.Fatal},
		{"400", httpErr(400, 0, "bad request"), retry.CallerError},
		{"404", httpErr(404, 0, "no such model"), retry.CallerError},
		{"413", httpErr(413, 0, "too large"), retry.CallerError},
		{"422", httpErr(422, 0, "unprocessable"), retry.CallerError},
		{"wrapped HTTPError", fmt.Errorf("openai: %w", httpErr(401, 0, "x")), retry.Fatal},
		{"source timeout", context.DeadlineExceeded, retry.Failure},
		{"connection error", &net.OpError{Op: "dial", Err: errors.New("connection refused")}, retry.Failure},
		{"any other error", errors.New("malformed body"), retry.Failure},
		{"cancellation", fmt.Errorf("stream: %w", context.Canceled), retry.Canceled},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, c.want, retry.Classify(c.err))
		})
	}
}

func TestClassifierIsReplaceable(t *testing.T) {
	teapot := errors.New("i'm a teapot")
	e := newEnv(t, func(c *retry.Config) {
		c.Classify = func(err error) retry.Class {
			if errors.Is(err, teapot) {
				return retry.CallerError
			}
			return retry.Classify(err)
		}
	})
	s := &script{errs: map[string][]error{"s1": {teapot}}}
	_, err := retry.Run(context.Background(), e.loop, 1, s.attempt)
	assert.ErrorIs(t, err, teapot)
	assert.Equal(t, []string{"s1"}, s.seen(), "classified as a caller error: no retry")
}

func TestBackoffIsExponentialFullJitterCapped(t *testing.T) {
	b := retry.Backoff{Base: 100 * time.Millisecond, Max: time.Second}
	cases := []struct {
		n    int
		r    float64
		want time.Duration
	}{
		{1, 0, 0},
		{1, 0.5, 50 * time.Millisecond},
		{1, 0.999, 99900 * time.Microsecond},
		{2, 0.5, 100 * time.Millisecond},
		{3, 0.5, 200 * time.Millisecond},
		{4, 1 - 1e-9, 800 * time.Millisecond},
		{5, 0.5, 500 * time.Millisecond},
		{50, 0.5, 500 * time.Millisecond},
	}
	for _, c := range cases {
		assert.InDelta(t, float64(c.want), float64(b.Delay(c.n, c.r)), float64(time.Microsecond), "n=%d r=%v", c.n, c.r)
	}
	assert.Equal(t, retry.DefaultBackoffBase, retry.Backoff{}.Ceiling(1))
	assert.Equal(t, retry.DefaultBackoffMax, retry.Backoff{}.Ceiling(100))
}

func TestRequestErrorIsACallerError(t *testing.T) {
	err := fmt.Errorf("attempt: %w", &transport.RequestError{Field: "Seed", Problem: "unsupported", Source: "claude"})
	assert.Equal(t, retry.CallerError, retry.Classify(err), "a request the source cannot carry is not retried")
}
