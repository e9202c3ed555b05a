//go:build unix

package otel_test

import (
	"syscall"
	"time"
)

// cpuTime is the CPU time (user and system) the process has used so far, on
// every thread: a benchmark's cost on a machine whose load makes wall times
// wander.
func cpuTime() (time.Duration, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
