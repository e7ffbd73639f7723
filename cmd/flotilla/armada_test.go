package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const armadaData = "testdata/armada"

// simulateArmada runs simulate over Armada files of testdata/armada and
// returns the output directory.
func simulateArmada(t *testing.T, cluster, workload string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "out")
	code, _, stderr := runCmd("simulate", "-cluster", filepath.Join(armadaData, cluster),
		"-workload", filepath.Join(armadaData, workload), "-o", dir)
	require.Equal(t, 0, code, stderr)
	return dir
}

// armadaCSVRows reads a CSV file of simple fields as header-keyed rows.
func armadaCSVRows(t *testing.T, path string) []map[string]string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	head := strings.Split(lines[0], ",")
	var rows []map[string]string
	for _, l := range lines[1:] {
		row := map[string]string{}
		for i, v := range strings.Split(l, ",") {
			row[head[i]] = v
		}
		rows = append(rows, row)
	}
	return rows
}

// TestArmadaSimulatorFilesRunThroughSimulate: Armada's ClusterSpec and
// WorkloadSpec YAML run end to end, each template's jobs in their queue
// and job set (the unnamed template under its Armada id B-1), the
// dependent template submitted 2m (the later of its two delays) after the
// gang template's last job ended, and again one period later (numTimes 2
// is two submissions in all).
func TestArmadaSimulatorFilesRunThroughSimulate(t *testing.T) {
	dir := simulateArmada(t, "clusters.yaml", "workload.yaml")
	rows := armadaCSVRows(t, filepath.Join(dir, "jobs.csv"))
	count := map[string]int{}
	gangEnd := 0.0
	var dependent []string
	for _, r := range rows {
		count[r["queue"]+"/"+r["jobSet"]]++
		assert.Equal(t, "succeeded", r["state"], "%v", r)
		if r["jobSet"] == "b-gang" {
			gangEnd = max(gangEnd, armadaSeconds(t, r["finished"]))
		}
		if r["jobSet"] == "B-1" {
			dependent = append(dependent, r["submitted"])
		}
	}
	assert.Equal(t, map[string]int{"A/a-set": 24, "B/b-gang": 4, "B/B-1": 6}, count)
	require.Len(t, dependent, 6)
	first := armadaSeconds(t, dependent[0])
	assert.InDelta(t, gangEnd+120, first, 1e-9, "earliestSubmitTime counts from the dependencies' end")
	for i, s := range dependent {
		assert.InDelta(t, first+float64(i/3)*600, armadaSeconds(t, s), 1e-9, "repetition %d", i/3)
	}
}

// armadaSeconds parses a CSV time.
func armadaSeconds(t *testing.T, s string) float64 {
	t.Helper()
	f, err := strconv.ParseFloat(s, 64)
	require.NoError(t, err, s)
	return f
}

// TestArmadaOlderPoolsFormReadsAsTheClustersForm: pools of cluster groups
// describe the same clusters as the newer list, and simulate the same.
func TestArmadaOlderPoolsFormReadsAsTheClustersForm(t *testing.T) {
	a := simulateArmada(t, "clusters.yaml", "workload.yaml")
	b := simulateArmada(t, "pools.yaml", "workload.yaml")
	for _, name := range []string{"jobs.csv", "queues.csv"} {
		x, err := os.ReadFile(filepath.Join(a, name))
		require.NoError(t, err)
		y, err := os.ReadFile(filepath.Join(b, name))
		require.NoError(t, err)
		assert.Equal(t, string(x), string(y), name)
	}
}

// TestArmadaSimulationMatchesGoldenFiles compares the small Armada
// simulation's tables with testdata/armada/golden (-update rewrites
// them).
func TestArmadaSimulationMatchesGoldenFiles(t *testing.T) {
	dir := simulateArmada(t, "clusters.yaml", "workload.yaml")
	for _, name := range []string{"jobs.csv", "queues.csv"} {
		got, err := os.ReadFile(filepath.Join(dir, name))
		require.NoError(t, err)
		path := filepath.Join(armadaData, "golden", name)
		if *update {
			require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
			require.NoError(t, os.WriteFile(path, got, 0o644))
			continue
		}
		want, err := os.ReadFile(path)
		require.NoError(t, err)
		assert.Equal(t, string(want), string(got), "%s differs from its golden file (go test -run TestArmadaSimulationMatchesGoldenFiles -update)", name)
	}
}

// TestSimulateReportsArmadaRunProblemsAtTheYAMLPaths: problems found
// against the cluster (resources, classes) name the workload's YAML
// fields, and the pending delay's tail beside a template's is refused at
// the cluster file's field.
func TestSimulateReportsArmadaRunProblemsAtTheYAMLPaths(t *testing.T) {
	tmp := t.TempDir()
	wl := filepath.Join(tmp, "w.yaml")
	require.NoError(t, os.WriteFile(wl, []byte("queues:\n  - name: A\n    weight: 1\n    jobTemplates:\n      - number: 1\n        priorityClassName: gold\n        runtimeDistribution: {tailMean: 1m}\n        requirements:\n          resourceRequirements:\n            requests: {cpu: lots, nvidia.com/gpu: 1}\n"), 0o644))
	code, _, stderr := runCmd("simulate", "-cluster", filepath.Join(armadaData, "clusters.yaml"), "-workload", wl, "-o", filepath.Join(tmp, "out"))
	assert.Equal(t, 2, code)
	for _, want := range []string{
		`workload.queues[0].jobTemplates[0].requirements.resourceRequirements.requests.cpu "lots"`,
		`workload.queues[0].jobTemplates[0].requirements.resourceRequirements.requests.nvidia.com/gpu "nvidia.com/gpu"`,
		`workload.queues[0].jobTemplates[0].priorityClassName "gold"`,
	} {
		assert.Contains(t, stderr, want)
	}
	cl := filepath.Join(tmp, "c.yml")
	require.NoError(t, os.WriteFile(cl, []byte("pendingDelayDistribution: {tailMean: 5s}\nclusters: [{name: c, pool: p, nodeTemplates: [{number: 1, totalResources: {resources: {cpu: 1}}}]}]\n"), 0o644))
	code, _, stderr = runCmd("simulate", "-cluster", cl, "-workload", wl, "-o", filepath.Join(tmp, "out"))
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, `pendingDelayDistribution.tailMean "5s"`)
}

// TestArmadaWorkloadRequeuesPreemptedJobsUnlessConfigSays: Armada's
// simulator submits a preempted job again, and so does an Armada workload
// here (the gang of B preempts some of A's jobs, which run again and
// succeed); -config's requeuePreempted, when given, decides instead.
func TestArmadaWorkloadRequeuesPreemptedJobsUnlessConfigSays(t *testing.T) {
	states := func(rows []map[string]string) map[string]int {
		out := map[string]int{}
		for _, r := range rows {
			out[r["state"]]++
		}
		return out
	}
	dir := simulateArmada(t, "clusters.yaml", "workload.yaml")
	rows := armadaCSVRows(t, filepath.Join(dir, "jobs.csv"))
	assert.Equal(t, map[string]int{"succeeded": 34}, states(rows))
	requeued := 0
	for _, r := range rows {
		if r["preemptions"] != "0" {
			requeued++
			assert.Equal(t, "2", r["attempts"], "%v", r)
		}
	}
	assert.NotZero(t, requeued, "the workload preempts")

	cfg := filepath.Join(t.TempDir(), "c.json")
	require.NoError(t, os.WriteFile(cfg, []byte(`{"config": {"requeuePreempted": false}}`), 0o644))
	out := filepath.Join(t.TempDir(), "out")
	code, _, stderr := runCmd("simulate", "-cluster", filepath.Join(armadaData, "clusters.yaml"),
		"-workload", filepath.Join(armadaData, "workload.yaml"), "-config", cfg, "-o", out)
	require.Equal(t, 0, code, stderr)
	assert.Equal(t, requeued, states(armadaCSVRows(t, filepath.Join(out, "jobs.csv")))["preempted"])
}

// TestArmadaExampleFilesRunToCompletion: files modelled on Armada's own
// examples (its basic workload, tiny cluster in the older form, a
// preemptible small-short/big-long workload) run to the end, every job
// succeeding, in the job sets Armada would name, none submitted before
// its earliestSubmitTime.
func TestArmadaExampleFilesRunToCompletion(t *testing.T) {
	for _, tc := range []struct {
		cluster, workload string
		want              map[string]int // queue/jobSet → jobs
		earliest          map[string]float64
	}{
		{"tiny.clusters.yaml", "basic.workload.yaml", map[string]int{"A/job-set": 10}, nil},
		{"two-nodes.clusters.yaml", "preemptible.workload.yaml", map[string]int{"A/A-0": 640, "B/B-0": 2},
			map[string]float64{"B": 1800}},
	} {
		t.Run(tc.workload, func(t *testing.T) {
			dir := simulateArmada(t, tc.cluster, tc.workload)
			got := map[string]int{}
			for _, r := range armadaCSVRows(t, filepath.Join(dir, "jobs.csv")) {
				got[r["queue"]+"/"+r["jobSet"]]++
				assert.Equal(t, "succeeded", r["state"], "%v", r)
				assert.GreaterOrEqual(t, armadaSeconds(t, r["submitted"]), tc.earliest[r["queue"]], "%v", r)
			}
			assert.Equal(t, tc.want, got)
		})
	}
}

// TestArmadaFileWithTwoPoolsRunsEachPoolOnItsOwn: a ClusterSpec of two
// pools simulates with a decision per pool each cycle: the queue table
// has a pool column and a row per queue, pool and cycle, and the jobs
// that only pool gpu's node takes (zone b, tolerating its taint) run
// there while pool cpu runs the rest.
func TestArmadaFileWithTwoPoolsRunsEachPoolOnItsOwn(t *testing.T) {
	dir := simulateArmada(t, "two-pools.clusters.yaml", "workload.yaml")
	rows := armadaCSVRows(t, filepath.Join(dir, "queues.csv"))
	perCycle := map[string]map[string]bool{} // cycle → queue@pool
	for _, r := range rows {
		require.Contains(t, []string{"cpu", "gpu"}, r["pool"], "row %v", r)
		if perCycle[r["cycle"]] == nil {
			perCycle[r["cycle"]] = map[string]bool{}
		}
		perCycle[r["cycle"]][r["queue"]+"@"+r["pool"]] = true
	}
	require.NotEmpty(t, perCycle)
	for c, seen := range perCycle {
		require.Len(t, seen, 4, "cycle %s: a row per queue and pool", c)
	}
	allocated := map[string]bool{}
	for _, r := range rows {
		if r["allocated.cpu"] != "0" {
			allocated[r["pool"]] = true
		}
	}
	require.True(t, allocated["cpu"] && allocated["gpu"], "both pools ran jobs: %v", allocated)
	for _, j := range armadaCSVRows(t, filepath.Join(dir, "jobs.csv")) {
		require.Equal(t, "succeeded", j["state"], "job %v", j)
	}
}
