//go:build !race

package pgw_test

const raceEnabled = false
