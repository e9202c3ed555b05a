package breaker_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/breaker"
	"github.com/pgw-go/pgw/contracttest"
	"github.com/pgw-go/pgw/gate"
)

var (
	errPubFailed   = errors.New("failed")
	errPubExcluded = errors.New("excluded")
)

type pubChange struct {
	name     string
	from, to gate.State
}

func pubCustom(t *testing.T, change *pubChange) (*breaker.Breaker, *contracttest.FakeClock) {
	clk := contracttest.NewFakeClock()
	cfg := breaker.Config{
		Policy: gate.Policy{SuccessThreshold: 3, HalfOpenProbes: 3, HalfOpenCalls: 3,
			Cooldown: 90 * time.Second, CooldownMultiplier: 1},
		Clock:    clk,
		Interval: 30 * time.Second,
		ReadyToTrip: func(c breaker.Counts) bool {
			valid := c.Requests - c.TotalExclusions
			return valid >= 3 && float64(c.TotalFailures)/float64(valid) >= 0.6
		},
		IsExcluded: func(err error) bool { return errors.Is(err, errPubExcluded) },
	}
	if change != nil {
		cfg.OnStateChange = []func(breaker.StateChange){func(ev breaker.StateChange) { *change = pubChange{ev.Name, ev.From, ev.To} }}
	}
	cb, err := breaker.New("cb", cfg)
	require.NoError(t, err)
	return cb, clk
}

func pubRun(cb *breaker.Breaker, ret error) error {
	err := cb.Execute(context.Background(), func(context.Context) error { return ret })
	if ret != nil && errors.Is(err, ret) {
		return nil
	}
	return err
}

func TestPublicGobreakerCustomCircuitBreaker(t *testing.T) {
	var change pubChange
	cb, clk := pubCustom(t, &change)
	succeed := func() error { return pubRun(cb, nil) }
	fail := func() error { return pubRun(cb, errPubFailed) }
	exclude := func() error { return pubRun(cb, errPubExcluded) }
	for range 5 {
		assert.Nil(t, succeed())
		assert.Nil(t, fail())
		assert.Nil(t, exclude())
	}
	assert.Equal(t, gate.Closed, cb.State())
	assert.Equal(t, breaker.Counts{Requests: 15, TotalSuccesses: 5, TotalFailures: 5, TotalExclusions: 5, ConsecutiveFailures: 1}, cb.Counts())
	clk.Advance(30*time.Second - time.Millisecond)
	assert.Nil(t, succeed())
	assert.Equal(t, breaker.Counts{Requests: 16, TotalSuccesses: 6, TotalFailures: 5, TotalExclusions: 5, ConsecutiveSuccesses: 1}, cb.Counts())
	clk.Advance(time.Second)
	assert.Nil(t, fail())
	assert.Equal(t, breaker.Counts{Requests: 1, TotalFailures: 1, ConsecutiveFailures: 1}, cb.Counts())
	assert.Nil(t, succeed())
	assert.Nil(t, fail())
	assert.Equal(t, gate.Open, cb.State())
	assert.Equal(t, breaker.Counts{}, cb.Counts())
	assert.Equal(t, pubChange{"cb", gate.Closed, gate.Open}, change)

	clk.Advance(90*time.Second + time.Nanosecond)
	assert.Equal(t, gate.HalfOpen, cb.State())
	for range 4 {
		assert.Nil(t, exclude())
	}
	assert.Equal(t, pubChange{"cb", gate.Open, gate.HalfOpen}, change)
	assert.Equal(t, gate.HalfOpen, cb.State())
	assert.Nil(t, fail())
	assert.Equal(t, gate.Open, cb.State())
	assert.Equal(t, breaker.Counts{}, cb.Counts())
	assert.Equal(t, pubChange{"cb", gate.HalfOpen, gate.Open}, change)

	clk.Advance(90*time.Second + time.Nanosecond)
	assert.Equal(t, gate.HalfOpen, cb.State())
	assert.Nil(t, succeed())
	assert.Nil(t, succeed())
	assert.Equal(t, gate.HalfOpen, cb.State())
	assert.Equal(t, breaker.Counts{Requests: 2, TotalSuccesses: 2, ConsecutiveSuccesses: 2}, cb.Counts())
	tok, err := cb.Allow(context.Background())
	require.NoError(t, err)
	assert.Equal(t, breaker.Counts{Requests: 3, TotalSuccesses: 2, ConsecutiveSuccesses: 2}, cb.Counts())
	assert.Error(t, succeed())
	tok.Done(nil)
	assert.Equal(t, gate.Closed, cb.State())
	assert.Equal(t, breaker.Counts{}, cb.Counts())
	assert.Equal(t, pubChange{"cb", gate.HalfOpen, gate.Closed}, change)
}

func TestPublicGobreakerGeneration(t *testing.T) {
	cb, clk := pubCustom(t, nil)
	clk.Advance(29 * time.Second)
	assert.Nil(t, pubRun(cb, nil))
	tok, err := cb.Allow(context.Background())
	require.NoError(t, err)
	clk.Advance(500 * time.Millisecond)
	assert.Equal(t, breaker.Counts{Requests: 2, TotalSuccesses: 1, ConsecutiveSuccesses: 1}, cb.Counts())
	clk.Advance(500 * time.Millisecond)
	assert.Equal(t, gate.Closed, cb.State())
	assert.Equal(t, breaker.Counts{}, cb.Counts())
	tok.Done(nil)
	assert.Equal(t, breaker.Counts{}, cb.Counts())
}

func TestPublicGobreakerDefault(t *testing.T) {
	clk := contracttest.NewFakeClock()
	cb, err := breaker.New("default", breaker.Config{Clock: clk, Policy: gate.Policy{ConsecutiveFailures: 6, CooldownMultiplier: 1}})
	require.NoError(t, err)
	for range 5 {
		assert.Nil(t, pubRun(cb, errPubFailed))
	}
	assert.Nil(t, pubRun(cb, nil))
	assert.Nil(t, pubRun(cb, errPubFailed))
	for range 5 {
		assert.Nil(t, pubRun(cb, errPubFailed))
	}
	assert.Equal(t, gate.Open, cb.State())
	clk.Advance(60*time.Second - time.Millisecond)
	assert.Equal(t, gate.Open, cb.State())
	clk.Advance(time.Second)
	assert.Equal(t, gate.HalfOpen, cb.State())
	assert.Nil(t, pubRun(cb, errPubFailed))
	assert.Equal(t, gate.Open, cb.State())
	clk.Advance(60*time.Second + time.Nanosecond)
	assert.Equal(t, gate.HalfOpen, cb.State())
	assert.Nil(t, pubRun(cb, nil))
	assert.Equal(t, gate.Closed, cb.State())
}
