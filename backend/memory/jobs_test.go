package memory

import (
	"testing"
	"unsafe"
)

// TestAStoredJobRecordTakes120Bytes holds the memory budget of a stored
// job's record (issue 9's ≤ 1 KiB per queued job, service included): the
// principal, cluster and node interned, a reason and failed clusters kept
// apart since a queued job has neither.
func TestAStoredJobRecordTakes120Bytes(t *testing.T) {
	if n := unsafe.Sizeof(jobRec{}); n > 120 {
		t.Fatalf("a job record takes %d bytes, want at most 120", n)
	}
}
