package queue_test

import (
	"testing"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/queue"
)

// TestReviewSchedulingKeyNoCraftedCollision: two jobs whose only difference
// is the value of one node-selector label (16 lowercase/digit characters,
// a valid Kubernetes label value) must get different scheduling keys. The
// per-word mixing xor-in / multiply / fold confines a difference in a word's
// top byte to bytes 3 and 7 of the state, which the next word cancels.
func TestReviewSchedulingKeyNoCraftedCollision(t *testing.T) {
	const alpha = "abcdefghijklmnopqrstuvwxyz0123456789"
	seen := make(map[uint64]string)
	job := &flotilla.Job{Requests: flotilla.Resources{1000, 4 << 30}}
	b := []byte("rack-aa?bbb?bbb?")
	for _, c := range []byte(alpha) {
		for _, x := range []byte(alpha) {
			for _, y := range []byte(alpha) {
				b[7], b[11], b[15] = c, x, y
				v := string(b)
				job.NodeSelector = map[string]string{"topology/rack": v}
				k := queue.SchedulingKey(job, 30000)
				if other, dup := seen[k]; dup {
					t.Fatalf("selector values %q and %q share scheduling key %#x", other, v, k)
				}
				seen[k] = v
			}
		}
	}
}
