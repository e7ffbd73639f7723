package scenario

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flotilla-sched/flotilla"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// sharedDir holds the project's public example scenarios, beside the repo.
const sharedDir = "../../shared/scenarios"

// sharedScenarios returns the scenario files (not the expect files) of
// sharedDir, skipping the test when the folder is absent.
func sharedScenarios(t testing.TB) []string {
	t.Helper()
	if _, err := os.Stat(sharedDir); err != nil {
		t.Skipf("no shared scenarios: %v", err)
	}
	all, err := filepath.Glob(filepath.Join(sharedDir, "*.json"))
	require.NoError(t, err)
	var out []string
	for _, p := range all {
		if !strings.HasSuffix(p, ".expect.json") {
			out = append(out, p)
		}
	}
	return out
}

func TestSharedScenarios(t *testing.T) {
	files := sharedScenarios(t)
	require.NotEmpty(t, files)
	for _, path := range files {
		t.Run(filepath.Base(path), func(t *testing.T) {
			data, err := os.ReadFile(path)
			require.NoError(t, err)
			f, err := Parse(data)
			require.NoError(t, err)
			b, err := f.Build()
			require.NoError(t, err)
			require.NotEmpty(t, b.Nodes)
			require.Len(t, b.Rounds, len(f.Rounds))

			expectPath := strings.TrimSuffix(path, ".json") + ".expect.json"
			expectData, err := os.ReadFile(expectPath)
			if os.IsNotExist(err) {
				return
			}
			require.NoError(t, err)
			e, err := ParseExpect(expectData)
			require.NoError(t, err)
			require.Len(t, e.Rounds, len(b.Rounds), "one expected round per scenario round")

			queues := map[string]bool{}
			for _, q := range b.Queues {
				queues[q.Name] = true
			}
			submitted := map[string]int{}
			for i, r := range e.Rounds {
				for _, j := range b.Rounds[i].Submit {
					submitted[j.Queue]++
				}
				for _, m := range []map[string]int{r.Scheduled, r.Preempted, r.RunningAfter} {
					for q, n := range m {
						assert.True(t, queues[q], "round %d names unknown queue %q", i, q)
						assert.LessOrEqual(t, n, submitted[q], "round %d: more %s jobs than submitted", i, q)
					}
				}
			}
		})
	}
}

// TestSharedSeedScenario pins the expansion of the worked example of
// seeds/armada-scheduler.md.
func TestSharedSeedScenario(t *testing.T) {
	sharedScenarios(t)
	data, err := os.ReadFile(filepath.Join(sharedDir, "seed-preemption-to-fair-share.json"))
	if os.IsNotExist(err) {
		t.Skip("seed-preemption-to-fair-share.json is gone")
	}
	require.NoError(t, err)
	f, err := Parse(data)
	require.NoError(t, err)
	b, err := f.Build()
	require.NoError(t, err)
	assert.Equal(t, []string{"cpu", "memory"}, b.Schema.Names())
	require.Len(t, b.Nodes, 2)
	assert.Equal(t, "node-1", b.Nodes[1].Name)
	assert.Equal(t, flotilla.Resources{32000, 128 << 30}, b.Nodes[1].Total)
	require.Len(t, b.Rounds, 2)
	assert.Len(t, b.Rounds[0].Submit, 40)
	assert.Len(t, b.Rounds[1].Submit, 50)
	assert.Equal(t, "b-49", b.Rounds[1].Submit[49].ID)
	assert.Equal(t, flotilla.ArmadaPreemptible, b.Rounds[1].Submit[49].PriorityClass)
}
