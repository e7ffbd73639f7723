//go:build !linux

package server

import "time"

// threadCPU and processCPU are not measured outside Linux: 0.
func threadCPU() time.Duration  { return 0 }
func processCPU() time.Duration { return 0 }

// minorFaults is not counted outside Linux: 0.
func minorFaults() int64 { return 0 }
