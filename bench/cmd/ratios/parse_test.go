package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const sample = `goos: linux
BenchmarkSuccessSerial/execute/pgw-2         	30000000	        40.0 ns/op	       0 B/op	       0 allocs/op
BenchmarkSuccessSerial/execute/gobreaker-2   	20000000	        80.0 ns/op	       0 B/op	       0 allocs/op
BenchmarkSuccessSerial/execute/pgw-2         	30000000	        42.0 ns/op	       0 B/op	       0 allocs/op
BenchmarkSuccessSerial/execute/gobreaker-2   	20000000	        84.0 ns/op	       0 B/op	       0 allocs/op
BenchmarkSuccessSerial/execute/pgw-2         	30000000	        44.0 ns/op	       0 B/op	       0 allocs/op
BenchmarkSuccessSerial/execute/gobreaker-2   	20000000	        88.0 ns/op	       0 B/op	       0 allocs/op
BenchmarkDistributed/pgw-2   	    1000	   100000 ns/op	     20000 calls/s	   2.00 redis-cmds/call
BenchmarkDistributed/gobreaker-2   	    100	  1000000 ns/op	     1000 calls/s	   5.00 redis-cmds/call
    breaker_test.go:10: NOTE: store written in bench/
PASS
`

func TestParseTakesMediansAndStripsProcSuffix(t *testing.T) {
	rs, err := parse(strings.NewReader(sample))
	require.NoError(t, err)
	require.Len(t, rs, 4)
	assert.Equal(t, "SuccessSerial/execute/pgw", rs[0].Name)
	m, ok := rs[0].median("ns/op")
	require.True(t, ok)
	assert.InDelta(t, 42.0, m, 1e-9)
	_, ok = rs[0].median("calls/s")
	assert.False(t, ok)
}

func TestRatiosCompareNsPerOpOrCallsPerSecond(t *testing.T) {
	rs, err := parse(strings.NewReader(sample))
	require.NoError(t, err)
	got := ratios(rs)
	require.Len(t, got, 2)
	assert.Equal(t, "gobreaker", got[0].Peer)
	assert.Equal(t, "ns/op", got[0].Unit)
	assert.InDelta(t, 0.5, got[0].Value(), 1e-9)
	assert.Equal(t, "calls/s", got[1].Unit)
	assert.InDelta(t, 20.0, got[1].Value(), 1e-9)
}

func TestNotesAreCollectedOnce(t *testing.T) {
	raw := []byte(sample + "    x_test.go:1: NOTE: store written in bench/\n")
	assert.Equal(t, []string{"store written in bench/"}, notes(raw))
}
