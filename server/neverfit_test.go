package server

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/backend"
)

// gpuNodes are n nodes named <cluster>-g<i> with cpu cores and gpus GPUs.
func gpuNodes(cluster string, n int, cpu, gpus int64) []flotilla.Node {
	s := worldSchema()
	out := make([]flotilla.Node, n)
	for i := range out {
		out[i] = flotilla.Node{Name: fmt.Sprintf("%s-g%d", cluster, i), Total: s.MustParse(map[string]string{
			"cpu": fmt.Sprint(cpu), "memory": "64Gi", "nvidia.com/gpu": fmt.Sprint(gpus)})}
	}
	return out
}

// submitWarned submits ts to queue A and returns the result.
func (w *world) submitWarned(ts ...JobTemplate) SubmitResult {
	w.t.Helper()
	data, err := json.Marshal(SubmitRequest{Queue: "A", JobSet: "s", Jobs: ts})
	require.NoError(w.t, err)
	res, err := w.srv.SubmitJSONResult(w.ctx, "", data)
	require.NoError(w.t, err)
	return res
}

// neverFit is queue's QueueInfo.NeverFit.
func (w *world) neverFit(queue string) int {
	w.t.Helper()
	qs, err := w.srv.ListQueues(w.ctx)
	require.NoError(w.t, err)
	for _, q := range qs {
		if q.Name == queue {
			return q.NeverFit
		}
	}
	w.t.Fatalf("no queue %s", queue)
	return 0
}

func jobsOf(n int, pools []string, req map[string]string) JobTemplate {
	return JobTemplate{Count: intp(n), Requests: req, Pools: pools}
}

func TestJobFitsWhenSomeNodeOfItsPoolsHasEveryRequestAndIsWarnedOtherwise(t *testing.T) {
	type cluster struct {
		name, pool string
		nodes      []flotilla.Node
	}
	cpuGPU := []cluster{{"c1", "", gpuNodes("c1", 2, 64, 0)}, {"c2", "", gpuNodes("c2", 1, 8, 8)}}
	for _, tc := range []struct {
		name     string
		clusters []cluster
		jobs     []JobTemplate
		// want are the warnings' messages; neverFit the queue's count.
		want     []string
		resource string
		neverFit int
	}{
		{name: "fits a node", clusters: cpuGPU,
			jobs: []JobTemplate{jobsOf(3, nil, map[string]string{"cpu": "64"})}},
		{name: "no clusters yet: nothing is known, nothing is judged",
			jobs: []JobTemplate{jobsOf(3, nil, map[string]string{"cpu": "1000"})}},
		{name: "larger than every node in one resource", clusters: cpuGPU,
			jobs:     []JobTemplate{jobsOf(2, nil, map[string]string{"cpu": "1"}), jobsOf(3, nil, map[string]string{"nvidia.com/gpu": "16"})},
			want:     []string{"jobs[1]: requests nvidia.com/gpu=16 but the largest node (c2/c2-g0) has 8: no node of any cluster fits it yet"},
			resource: "nvidia.com/gpu", neverFit: 3},
		{name: "each resource fits some node, all of them none", clusters: cpuGPU,
			jobs:     []JobTemplate{jobsOf(1, nil, map[string]string{"cpu": "16", "nvidia.com/gpu": "1"})},
			want:     []string{"jobs[0]: requests cpu=16, nvidia.com/gpu=1 but no node has all of it: the largest by cpu (c1/c1-g0) has nvidia.com/gpu=0: no node of any cluster fits it yet"},
			resource: "nvidia.com/gpu", neverFit: 1},
		{name: "a template of count 0 keeps the others' indices", clusters: cpuGPU,
			jobs:     []JobTemplate{jobsOf(0, nil, map[string]string{"cpu": "100"}), jobsOf(1, nil, map[string]string{"cpu": "100"})},
			want:     []string{"jobs[1]: requests cpu=100 but the largest node (c1/c1-g0) has 64: no node of any cluster fits it yet"},
			resource: "cpu", neverFit: 1},
		{name: "fits only in a pool it does not accept",
			clusters: []cluster{{"ca", "a", gpuNodes("ca", 1, 8, 0)}, {"cb", "b", gpuNodes("cb", 1, 32, 0)}},
			jobs:     []JobTemplate{jobsOf(2, []string{"a"}, map[string]string{"cpu": "16"}), jobsOf(1, nil, map[string]string{"cpu": "16"})},
			want:     []string{"jobs[0]: requests cpu=16 but the largest node (ca/ca-g0) has 8: no node of pool a fits it yet"},
			resource: "cpu", neverFit: 2},
		{name: "fits in one of its pools",
			clusters: []cluster{{"ca", "a", gpuNodes("ca", 1, 8, 0)}, {"cb", "b", gpuNodes("cb", 1, 32, 0)}},
			jobs:     []JobTemplate{jobsOf(2, []string{"a", "b"}, map[string]string{"cpu": "16"})}},
		{name: "no node of its pools is known",
			clusters: []cluster{{"ca", "a", gpuNodes("ca", 1, 8, 0)}},
			jobs:     []JobTemplate{jobsOf(1, []string{"x", "y"}, map[string]string{"cpu": "1"})},
			want:     []string{"jobs[0]: no node of pool x, pool y is known: its jobs wait until a cluster of its pools reports nodes"},
			neverFit: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t)
			w.queue("A")
			for _, c := range tc.clusters {
				w.report(Report{Cluster: c.name, Pool: c.pool, Nodes: c.nodes})
			}
			res := w.submitWarned(tc.jobs...)
			var got []string
			for _, wn := range res.Warnings {
				got = append(got, wn.Message)
				require.Equal(t, tc.resource, wn.Resource)
			}
			require.Equal(t, tc.want, got)
			require.Equal(t, tc.neverFit, w.neverFit("A"))
			n := 0
			for _, j := range tc.jobs {
				n += *j.Count
			}
			require.Len(t, res.IDs, n, "every job is stored")
		})
	}
}

func TestNeverFitJobFitsAgainWhenALargeEnoughNodeRegistersAndIsCountedUntilItLeaves(t *testing.T) {
	w := newWorld(t)
	w.queue("A")
	w.report(Report{Cluster: "c1", Nodes: nodesOf("c1", 1, 8)})
	big := w.submit("A", "s", cpuJobs(3, "16"))
	w.submit("A", "s", cpuJobs(2, "1"))
	require.Equal(t, 3, w.neverFit("A"))

	w.restart()
	require.Equal(t, 3, w.neverFit("A"), "after a restart")

	_, err := w.srv.Cancel(w.ctx, big[:1]...)
	require.NoError(t, err)
	require.Equal(t, 2, w.neverFit("A"))

	w.report(Report{Cluster: "c2", Nodes: nodesOf("c2", 1, 16)})
	require.Equal(t, 0, w.neverFit("A"))
	require.Empty(t, w.submitWarned(cpuJobs(1, "16")).Warnings)

	// The large node leaves: the jobs never fit again.
	w.report(Report{Cluster: "c2", Nodes: nodesOf("c2", 1, 4)})
	require.Equal(t, 3, w.neverFit("A"))
	rep := w.cycle()
	require.Equal(t, 2, rep.Leased, "the small jobs")
	require.Equal(t, 3, w.neverFit("A"))
}

// shares are the queues' lines in the cycle's result (the first pool's).
func shares(rep *CycleReport) map[string]float64 {
	out := map[string]float64{}
	for _, q := range rep.Result.Queues {
		out[q.Name] = q.AdjustedFairShare
	}
	return out
}

func TestQueueWhoseOnlyDemandNeverFitsHasNoAdjustedFairShareAndTheOtherQueueGetsTheCluster(t *testing.T) {
	w := newWorld(t)
	w.queue("A")
	w.queue("B")
	w.report(Report{Cluster: "c1", Nodes: nodesOf("c1", 2, 8)})
	w.submit("A", "s", cpuJobs(100, "9"))
	w.submit("B", "s", cpuJobs(100, "1"))
	rep := w.cycle()
	sh := shares(rep)
	require.Equal(t, 0.0, sh["A"])
	require.InDelta(t, 1.0, sh["B"], 1e-9)
	require.Equal(t, 16, rep.Leased)

	// Once a node fits them, A's jobs count again.
	w.report(Report{Cluster: "c2", Nodes: nodesOf("c2", 1, 16)})
	sh = shares(w.cycle())
	require.Greater(t, sh["A"], 0.0)
}

func TestJobUnfitInOnePoolLeavesItsDemandInThatPoolOnly(t *testing.T) {
	w := newWorld(t)
	w.queue("A")
	w.queue("B")
	w.report(Report{Cluster: "ca", Pool: "a", Nodes: nodesOf("ca", 1, 8)})
	w.report(Report{Cluster: "cb", Pool: "b", Nodes: nodesOf("cb", 1, 32)})
	w.submit("A", "s", cpuJobs(10, "16")) // fits pool b only
	w.submit("B", "s", cpuJobs(100, "1"))
	require.Equal(t, 0, w.neverFit("A"), "it fits a node of pool b")
	rep := w.cycle()
	byPool := map[string]map[string]float64{}
	for _, p := range rep.Pools {
		byPool[p.Pool] = shares(&CycleReport{Result: p.Result})
	}
	require.Equal(t, 0.0, byPool["a"]["A"])
	require.InDelta(t, 1.0, byPool["a"]["B"], 1e-9)
	require.Greater(t, byPool["b"]["A"], 0.0)
}

func TestGangWithAMemberNoNodeFitsHasNoDemandAndIsCountedNeverFitWhole(t *testing.T) {
	w := newWorld(t)
	w.queue("A")
	w.queue("B")
	w.report(Report{Cluster: "c1", Nodes: nodesOf("c1", 2, 8)})
	g := &GangSpec{ID: "g", Cardinality: 4}
	small, big := cpuJobs(3, "1"), cpuJobs(1, "9") // big fits no node: the gang never runs
	small.Gang, big.Gang = g, g
	w.submit("A", "s", small, big)
	w.submit("B", "s", cpuJobs(100, "1"))
	require.Equal(t, 4, w.neverFit("A"), "the whole gang waits for a node big enough")
	sh := shares(w.cycle())
	require.Equal(t, 0.0, sh["A"])
	require.InDelta(t, 1.0, sh["B"], 1e-9)

	// Once a node fits its big member, the gang counts again.
	w.report(Report{Cluster: "c2", Nodes: nodesOf("c2", 1, 16)})
	require.Equal(t, 0, w.neverFit("A"))
	require.Greater(t, shares(w.cycle())["A"], 0.0)
}

func TestGangsOfOneShapeSubmittedTogetherAreJudgedEachWithItsOwnMembers(t *testing.T) {
	w := newWorld(t)
	w.queue("A")
	w.report(Report{Cluster: "c1", Nodes: nodesOf("c1", 2, 8)})
	fits, unfit := cpuJobs(3, "1"), cpuJobs(3, "1")
	fits.Gang, unfit.Gang = &GangSpec{ID: "fits", Cardinality: 3}, &GangSpec{ID: "unfit", Cardinality: 4}
	big := cpuJobs(1, "9")
	big.Gang = unfit.Gang
	w.submit("A", "s", fits, unfit, big) // the first six jobs have one shape
	require.Equal(t, 4, w.neverFit("A"), "gang unfit whole, gang fits not")
	d := w.srv.st.snapshotQueued(backend.DefaultPool).Stats("A").Demand
	require.Equal(t, int64(3000), d[0], "gang fits' 3 cpus")
}
