package server

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A preempted run loses its running time times its requests, per queue
// and resource, in quantity units; a job preempted before it ran loses
// nothing.
func TestPreemptionLossIsRunningTimeTimesRequestsPerQueueAndResource(t *testing.T) {
	w := newWorld(t)
	w.queue("A")
	w.queue("B")
	w.report(Report{Cluster: "c1", Nodes: nodesOf("c1", 1, 8)})
	a := w.submit("A", "s", JobTemplate{Requests: map[string]string{"cpu": "1500m", "memory": "1Gi"}})
	b := w.submit("B", "s", cpuJobs(1, "2"))
	require.Equal(t, 2, w.cycle().Leased)
	r := w.report(Report{Cluster: "c1"})
	var running []JobReport
	for _, l := range held(PhaseRunning, r.Leases) {
		if l.Job == a[0] {
			running = append(running, l)
		}
	}
	w.clock.Advance(10 * time.Second) // leased 10 s before it runs: not counted
	w.report(Report{Cluster: "c1", Jobs: append(running, JobReport{Job: b[0], Attempt: 1, Phase: PhasePending})})
	w.clock.Advance(90 * time.Second)
	_, err := w.srv.Preempt(w.ctx, Selection{IDs: []string{a[0], b[0]}}, "ops", "")
	require.NoError(t, err)
	loss := w.srv.PreemptionLoss()
	gib := float64(1 << 30)
	require.Equal(t, map[string][]float64{"A": {1.5 * 90, gib * 90, 0}}, loss, "B's job never ran")
}
