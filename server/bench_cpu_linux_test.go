//go:build linux

package server

import (
	"syscall"
	"time"
)

// rusageThread is Linux's RUSAGE_THREAD, which package syscall does not
// name.
const rusageThread = 1

// threadCPU is the CPU time the calling OS thread has used (lock the
// goroutine to its thread around the measurement), so that a benchmark on
// a loaded machine can tell its own work from time spent waiting for a
// core.
func threadCPU() time.Duration { return rusage(rusageThread) }

// processCPU is the CPU time the process has used, on every thread
// (garbage collection included).
func processCPU() time.Duration { return rusage(syscall.RUSAGE_SELF) }

func rusage(who int) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(who, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
