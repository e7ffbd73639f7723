//go:build linux

package server

import (
	"syscall"
	"time"
	"unsafe"
)

// Linux's CPU-time clocks, which package syscall does not name.
const (
	clockProcessCPUTime = 2 // CLOCK_PROCESS_CPUTIME_ID
	clockThreadCPUTime  = 3 // CLOCK_THREAD_CPUTIME_ID
)

// threadCPU is the CPU time the calling OS thread has used (lock the
// goroutine to its thread around the measurement), so that a benchmark on
// a loaded machine can tell its own work from time spent waiting for a
// core.
func threadCPU() time.Duration { return cpuClock(clockThreadCPUTime) }

// processCPU is the CPU time the process has used, on every thread
// (garbage collection included).
func processCPU() time.Duration { return cpuClock(clockProcessCPUTime) }

// cpuClock reads a CPU-time clock to the nanosecond (getrusage's times
// are too coarse for one executor report); 0 when it cannot.
func cpuClock(id uintptr) time.Duration {
	var ts syscall.Timespec
	if _, _, errno := syscall.Syscall(syscall.SYS_CLOCK_GETTIME, id, uintptr(unsafe.Pointer(&ts)), 0); errno != 0 {
		return 0
	}
	return time.Duration(ts.Nano())
}

// minorFaults is how many minor page faults the process has taken: each
// first touch of memory the kernel had not mapped for it (on a VM, the
// costly part of a run on a fresh heap).
func minorFaults() int64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return ru.Minflt
}
