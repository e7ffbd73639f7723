package sim_test

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"testing"

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
	for _, n := range []string{"queues.csv", "jobs.csv", "queues.jsonl", "jobs.jsonl"} {
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
	out, err := sim.Run(context.Background(), load(t, "small.workload.json", "small.clusters.json"))
	require.NoError(t, err)
	for name, b := range files(t, out) {
		path := filepath.Join("testdata", "golden", name)
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
