package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const overheadSample = `BenchmarkGovernedCall/serial/raw-2   	10000	     50000 ns/op	    7000 B/op	      80 allocs/op
BenchmarkGovernedCall/serial/pgw-2   	10000	     56000 ns/op	      5000 overhead-ns/call	    9000 B/op	     100 allocs/op
BenchmarkGovernedCall/serial/gobreaker-2   	10000	     50500 ns/op	       400 overhead-ns/call	    7000 B/op	      80 allocs/op
BenchmarkGovernedCall/parallel/raw-2   	10000	     30000 ns/op	    7000 B/op	      80 allocs/op
BenchmarkGovernedCall/parallel/pgw-2   	10000	     33000 ns/op	    9000 B/op	     100 allocs/op
BenchmarkSuccessSerial/execute/pgw-2         	30000000	        40.0 ns/op	       0 B/op	       0 allocs/op
`

func TestOverheadsAreEachLeafsCostOverTheRawCallOfItsGroup(t *testing.T) {
	rs, err := parse(strings.NewReader(overheadSample))
	require.NoError(t, err)
	got := overheads(rs)
	require.Len(t, got, 3)
	assert.Equal(t, overhead{Group: "GovernedCall/serial", Leaf: "pgw", NsOp: 56000, OverRaw: 6000, Measured: 5000, HasMeasured: true}, got[0])
	assert.Equal(t, "gobreaker", got[1].Leaf)
	assert.InDelta(t, 500, got[1].OverRaw, 1e-9)
	assert.Equal(t, overhead{Group: "GovernedCall/parallel", Leaf: "pgw", NsOp: 33000, OverRaw: 3000}, got[2])

	var b strings.Builder
	reportOverheads(&b, got)
	assert.Contains(t, b.String(), "+6000")
}
