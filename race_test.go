//go:build race

package pgw_test

// raceEnabled: the race detector makes sync.Pool drop what it is given at
// random, so allocation counts do not hold under it.
const raceEnabled = true
