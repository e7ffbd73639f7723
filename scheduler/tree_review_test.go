package scheduler_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/queue"
	"github.com/flotilla-sched/flotilla/scheduler"
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

// Rule 8 reads each guaranteed queue's first stored job before the fill: a
// job the store should not have handed out (the fill reports it invalid
// and never places it) does not make its queue starved, so it cannot
// lower protectedFraction and cost others their jobs. big holds the whole
// cluster, above its adjusted share (3/4) but within twice it: only a
// starved g makes it evictable, and then other takes a place.
func TestTreeInvalidHeadDoesNotStarve(t *testing.T) {
	bundle := map[string]string{"cpu": "8", "memory": "64Gi", "nvidia.com/gpu": "1"}
	for _, tc := range []struct {
		name      string
		bad       func(e *queue.Entry)
		preempted bool
	}{
		{"valid head", func(*queue.Entry) {}, true},
		{"unknown class", func(e *queue.Entry) { e.Job.PriorityClass = "gold" }, false},
		{"wrong class priority", func(e *queue.Entry) { e.ClassPriority = 99999 }, false},
		{"negative request", func(e *queue.Entry) { e.Job.Requests[2] = -1 }, false},
		{"wrong queue", func(e *queue.Entry) { e.Job.Queue = "big" }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newTreeWorld(t, 1) // 8 bundles
			w.cfg.ProtectedFractionOfFairShare = 2
			w.queue("big", "", 0, nil, nil)
			w.queue("g", "", 0, w.bundles(2), nil)
			w.queue("other", "", 0, nil, nil)
			l := newListQueued(w.cfg)
			for i := range 8 {
				j := &flotilla.Job{ID: fmt.Sprintf("big-%d", i), Queue: "big", PriorityClass: flotilla.ArmadaPreemptible,
					Requests: w.schema.MustParse(bundle), SubmitTime: t0}
				w.snap.Running = append(w.snap.Running, scheduler.Running{Job: j, Node: "node-0", Start: t0})
			}
			l.addJob(&flotilla.Job{ID: "other-0", Queue: "other", PriorityClass: flotilla.ArmadaPreemptible,
				Requests: w.schema.MustParse(bundle), SubmitTime: t0})
			tc.bad(l.addJob(&flotilla.Job{ID: "g-0", Queue: "g", PriorityClass: flotilla.ArmadaPreemptible,
				Requests: w.schema.MustParse(bundle), SubmitTime: t0}))
			w.snap.Queued = l
			s, err := scheduler.New(w.cfg)
			require.NoError(t, err)
			res, err := s.Schedule(context.Background(), w.snap, t0)
			require.NoError(t, err)
			require.Equal(t, tc.preempted, len(res.Preempted) > 0, "preempted %v", countPreempted(res))
			if !tc.preempted {
				require.Equal(t, scheduler.ReasonInvalid, groupsOf(res, scheduler.ReasonInvalid)[0].Reason.Code)
			}
		})
	}
}
