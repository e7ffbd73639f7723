package scheduler_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/queue"
)

// submitJob queues one job of queue q with the given requests and class.
func (w *treeWorld) submitJob(q, class string, req map[string]string) *flotilla.Job {
	w.seq++
	j := &flotilla.Job{ID: fmt.Sprintf("%s-%03d", q, w.seq), Queue: q, SubmitTime: w.now,
		PriorityClass: class, Requests: w.schema.MustParse(req)}
	require.NoError(w.t, w.snap.Queued.(*queue.Store).Add(j))
	return j
}

// Rule 5 bounds what a unit adds: a node already above its limit (the
// limit lowered while its jobs run) or a lending hold already eaten into
// (the lending limit set while others' jobs run) refuses units that need
// the resource, never one that requests none of it.
func TestTreeLimitAndHoldOnlyCheckRequestedResources(t *testing.T) {
	gpuJob := map[string]string{"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": "1"}
	cpuJob := map[string]string{"cpu": "1", "memory": "1Gi"}
	t.Run("limit", func(t *testing.T) {
		w := newTreeWorld(t, 1) // 8 GPUs
		q := w.queue("q", "", 0, nil, nil)
		for range 6 {
			w.submitJob("q", flotilla.ArmadaDefault, gpuJob) // not preemptible
		}
		require.Len(t, w.round().Scheduled, 6)
		q.Limit = w.gpus(4)
		w.submitJob("q", flotilla.ArmadaDefault, gpuJob)
		w.submitJob("q", flotilla.ArmadaDefault, cpuJob)
		res := w.round()
		require.Len(t, res.Scheduled, 1, "the cpu-only job, not the GPU job: %v", reasonsOf(res))
		require.Empty(t, res.Scheduled[0].Job.Requests[2])
		require.Equal(t, "limit: q", reasonsOf(res)["q"])
	})
	t.Run("lending hold", func(t *testing.T) {
		w := newTreeWorld(t, 2) // 16 GPUs
		lender := w.queue("lender", "", 0, nil, nil)
		w.queue("borrower", "", 0, nil, nil)
		for range 16 {
			w.submitJob("borrower", flotilla.ArmadaDefault, gpuJob)
		}
		require.Len(t, w.round().Scheduled, 16)
		lender.Guaranteed, lender.LendingLimit = w.gpus(6), w.gpus(2) // keeps 4 back
		w.submitJob("borrower", flotilla.ArmadaDefault, gpuJob)
		w.submitJob("borrower", flotilla.ArmadaDefault, cpuJob)
		res := w.round()
		require.Len(t, res.Scheduled, 1, "the cpu-only job, not the GPU job: %v", reasonsOf(res))
		require.Empty(t, res.Scheduled[0].Job.Requests[2])
		require.Equal(t, "lending limit: lender", reasonsOf(res)["borrower"])
	})
}
