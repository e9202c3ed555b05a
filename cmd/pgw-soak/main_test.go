package main

import (
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestFlagsDefaultToFourProcessesOf64GoroutinesForAMinute(t *testing.T) {
	o, err := parse(nil, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, options{duration: time.Minute, procs: 4, goroutines: 64, think: 500 * time.Millisecond}, o)
}

func TestFlagsRejectWhatWouldUnboundTheSoak(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"-duration", "3m"}, "-duration 3m0s (legal: 5s to 2m0s)"},
		{[]string{"-duration", "1s"}, "-duration 1s (legal: 5s to 2m0s)"},
		{[]string{"-procs", "0"}, "-procs 0 (legal: 1 to 16)"},
		{[]string{"-goroutines", "1000"}, "-goroutines 1000 (legal: 1 to 512)"},
		{[]string{"-redis", "10.0.0.1:6379"}, `-redis "10.0.0.1:6379" (legal: a loopback host:port`},
		{[]string{"-redis", "redis.internal:6379"}, `-redis "redis.internal:6379"`},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			_, err := parse(tt.args, io.Discard)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}

func TestLoopbackAddresses(t *testing.T) {
	for addr, want := range map[string]bool{
		"127.0.0.1:6379": true, "[::1]:6379": true, "localhost:6379": true, "127.0.0.2:1": true,
		"0.0.0.0:6379": false, "192.168.1.2:6379": false, "localhost": false,
	} {
		assert.Equal(t, want, loopback(addr), addr)
	}
}

func TestPhasesCoverTheRunInOrder(t *testing.T) {
	ps := phases(10 * time.Second)
	var names []string
	var last time.Duration
	for _, p := range ps {
		names = append(names, p.name)
		assert.Greater(t, p.until, last, p.name)
		last = p.until
	}
	assert.Equal(t, []string{"healthy", "5xx", "429", "recovery", "flaky"}, names)
	assert.Equal(t, 10*time.Second, last)
}
