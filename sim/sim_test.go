package sim_test

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flotilla-sched/flotilla/sim"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/golden")

func load(t testing.TB, workload, clusters string) sim.Config {
	t.Helper()
	wd, err := os.ReadFile(filepath.Join("testdata", workload))
	require.NoError(t, err)
	w, err := sim.ParseWorkload(wd)
	require.NoError(t, err)
	cd, err := os.ReadFile(filepath.Join("testdata", clusters))
	require.NoError(t, err)
	c, err := sim.ParseClusters(cd)
	require.NoError(t, err)
	return sim.Config{Workload: w, Clusters: c}
}

// files renders an output as the four files WriteDir writes.
func files(t testing.TB, out *sim.Output) map[string][]byte {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, out.WriteDir(dir))
	got := map[string][]byte{}
	names := []string{"queues.csv", "jobs.csv", "queues.jsonl", "jobs.jsonl"}
	if out.Tree {
		names = append(names, "groups.csv", "groups.jsonl")
	}
	for _, n := range names {
		b, err := os.ReadFile(filepath.Join(dir, n))
		require.NoError(t, err)
		got[n] = b
	}
	return got
}

// TestSmallSimulationMatchesGoldenFiles runs the small workload and
// compares its four output files with testdata/golden (-update rewrites
// them).
func TestSmallSimulationMatchesGoldenFiles(t *testing.T) {
	golden(t, "small.workload.json", "golden")
}

// TestSmallTreeSimulationMatchesGoldenFiles: the same for a workload
// with a queue tree (three levels, quotas) and usage memory, whose queue
// files carry parent and usage, and whose group files are written.
func TestSmallTreeSimulationMatchesGoldenFiles(t *testing.T) {
	golden(t, "small-tree.workload.json", "golden-tree")
}

// golden runs a workload on the small clusters and compares its output
// files with testdata/DIR (-update rewrites them).
func golden(t *testing.T, workload, dir string) {
	t.Helper()
	out, err := sim.Run(context.Background(), load(t, workload, "small.clusters.json"))
	require.NoError(t, err)
	for name, b := range files(t, out) {
		path := filepath.Join("testdata", dir, name)
		if *update {
			require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
			require.NoError(t, os.WriteFile(path, b, 0o644))
			continue
		}
		want, err := os.ReadFile(path)
		require.NoError(t, err)
		require.Equal(t, string(want), string(b), "%s differs from its golden file (go test ./sim -update)", name)
	}
}

// TestSteadyWorkloadConvergesToAdjustedFairShare: two queues with more
// work than the cluster holds, the heavier one arriving after the other
// has filled the cluster, each hold their adjusted fair share within 5
// points (0.05 of the cluster) at every cycle after a 20-minute warm-up,
// as running jobs end and the freed room goes to the queue below its
// share.
func TestSteadyWorkloadConvergesToAdjustedFairShare(t *testing.T) {
	out, err := sim.Run(context.Background(), load(t, "steady.workload.json", "steady.clusters.json"))
	require.NoError(t, err)
	const warmUp = 20 * 60
	checked := 0
	for _, q := range out.Queues {
		if q.Time < warmUp {
			continue
		}
		checked++
		want := map[string]float64{"A": 0.25, "B": 0.75}[q.Queue]
		require.InDelta(t, want, q.FairShare, 1e-9, "weights 1 and 3 give fair shares 1/4 and 3/4")
		require.InDelta(t, q.AdjustedFairShare, q.Share, 0.05, "queue %s at %gs", q.Queue, q.Time)
	}
	require.Greater(t, checked, 100)
	require.Equal(t, 3600.0, out.End)
}

// TestSameSeedGivesIdenticalOutput runs a workload twice; every output
// file is the same byte for byte, and a different seed changes them.
func TestSameSeedGivesIdenticalOutput(t *testing.T) {
	run := func(seed uint64) map[string][]byte {
		cfg := load(t, "small.workload.json", "small.clusters.json")
		cfg.Workload.Seed = seed
		out, err := sim.Run(context.Background(), cfg)
		require.NoError(t, err)
		return files(t, out)
	}
	first := run(11)
	require.Equal(t, first, run(11))
	require.NotEqual(t, string(first["jobs.csv"]), string(run(12)["jobs.csv"]))
}

// TestRequeuePreemptedRunsPreemptedJobsAgain: the small workload's gangs
// preempt two preemptible jobs of queue B; by default they end
// preempted, and with Config.RequeuePreempted they are leased again and
// succeed, with a second attempt.
func TestRequeuePreemptedRunsPreemptedJobsAgain(t *testing.T) {
	for _, requeue := range []bool{false, true} {
		cfg := load(t, "small.workload.json", "small.clusters.json")
		cfg.RequeuePreempted = requeue
		out, err := sim.Run(context.Background(), cfg)
		require.NoError(t, err)
		preempted := 0
		for _, j := range out.Jobs {
			if j.Preemptions == 0 {
				continue
			}
			preempted++
			if requeue {
				require.Equal(t, "succeeded", j.State, j.Job)
				require.Equal(t, 2, j.Attempts, j.Job)
			} else {
				require.Equal(t, "preempted", j.State, j.Job)
			}
		}
		require.Positive(t, preempted)
	}
}

// TestProgressIsCalledAfterEveryCycle: Config.Progress sees every cycle,
// in virtual-time order, the workload's job total, and at the last
// cycle every job ended; it changes nothing of the output.
func TestProgressIsCalledAfterEveryCycle(t *testing.T) {
	cfg := load(t, "small.workload.json", "small.clusters.json")
	plain, err := sim.Run(context.Background(), cfg)
	require.NoError(t, err)
	var seen []sim.Progress
	cfg.Progress = func(p sim.Progress) { seen = append(seen, p) }
	out, err := sim.Run(context.Background(), cfg)
	require.NoError(t, err)
	require.Equal(t, plain, out)
	require.NotEmpty(t, seen)
	for i, p := range seen {
		require.Equal(t, i+1, p.Cycles)
		require.Equal(t, len(out.Jobs), p.Jobs)
		require.LessOrEqual(t, p.Ended, p.Submitted)
		if i > 0 {
			require.Greater(t, p.Now, seen[i-1].Now)
		}
	}
	last := seen[len(seen)-1]
	require.Equal(t, out.End, last.Now.Seconds())
	require.Equal(t, len(out.Jobs), last.Ended)
}

// TestJobEndsAtItsExecutorsFirstReportAfterItsRuntime: as executor.Run
// does in production, an executor reports every Renew, so a job is
// started at the first report after the cycle that leased it and ends at
// the first report at or after its runtime has passed, not at the exact
// instant.
func TestJobEndsAtItsExecutorsFirstReportAfterItsRuntime(t *testing.T) {
	for _, tc := range []struct {
		name     string
		renew    time.Duration
		runtime  string
		finished float64
	}{
		// Leased by the cycle at 0, started by the report at 5: ends at
		// 12, reported at 15.
		{name: "between reports", renew: 5 * time.Second, runtime: "7s", finished: 15},
		// Ends at 10, exactly when the executor reports.
		{name: "on a report", renew: 5 * time.Second, runtime: "5s", finished: 10},
		// Started at 3, ends at 10, reported at 12.
		{name: "renew 3s", renew: 3 * time.Second, runtime: "7s", finished: 12},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, err := sim.ParseWorkload([]byte(`{"queues": [{"name": "A"}], "jobTemplates": [{"id": "a", "queue": "A", "count": 1,
				"requests": {"cpu": "1"}, "runtime": {"minimum": "` + tc.runtime + `"}}]}`))
			require.NoError(t, err)
			c, err := sim.ParseClusters([]byte(`{"clusters": [{"name": "c1", "nodes": [{"name": "n", "resources": {"cpu": "4"}}]}]}`))
			require.NoError(t, err)
			out, err := sim.Run(context.Background(), sim.Config{Workload: w, Clusters: c, Renew: tc.renew})
			require.NoError(t, err)
			require.Len(t, out.Jobs, 1)
			j := out.Jobs[0]
			require.Equal(t, "succeeded", j.State)
			require.NotNil(t, j.Leased)
			require.Equal(t, 0.0, *j.Leased)
			require.NotNil(t, j.Finished)
			require.Equal(t, tc.finished, *j.Finished)
		})
	}
}
