package scenario

import (
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/fairness"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// treePendingDir holds queue-tree scenarios whose runs need the tree in the
// scheduler; they move to repoScenariosDir (with a golden) once it is.
const (
	treePendingDir   = "testdata/tree-pending"
	repoScenariosDir = "../testdata/scenarios"
)

// treeScenarioFile is name's path in treePendingDir, or in
// repoScenariosDir once moved there.
func treeScenarioFile(t *testing.T, name string) string {
	t.Helper()
	for _, dir := range []string{treePendingDir, repoScenariosDir} {
		p := filepath.Join(dir, name)
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	t.Fatalf("%s is in neither %s nor %s", name, treePendingDir, repoScenariosDir)
	return ""
}

// TestTreePendingExpectedSharesAreTheTreeShares holds the hand-computed
// shares of the pending tree scenarios' expect files to the fairness
// package's TreeShares, given each round's state at cycle start as the
// scenario's story has it (jobs running + queued per queue, every job one
// bundle of the scenario's first request; usage decayed by the §8 rule).
// The files parse and build, and every name they give is a queue or group.
func TestTreePendingExpectedSharesAreTheTreeShares(t *testing.T) {
	cases := []struct {
		name   string
		demand [][]int // per round, per queue in file order: jobs running + queued
		usage  [][]float64
	}{
		// Round 1 preempts 3 of nlp's jobs, which leave (not requeued).
		{"tree-worked-example", [][]int{{6, 20, 10, 0}, {6, 20, 10, 20}, {6, 17, 10, 20}}, nil},
		{"tree-limit", [][]int{{6, 2, 4}, {6, 2, 4}}, nil},
		{"tree-lending-limit", [][]int{{0, 16}, {4, 16}, {4, 16}}, nil},
		// u ← u/2 + share/2 per round (half-life = round): A's share 0.25,
		// B's 0.75 from round 0 on; B seeded at 0.5.
		{"tree-usage-memory", [][]int{{4, 12}, {20, 28}, {20, 28}, {20, 28}},
			[][]float64{{0, 0.5}, {0.125, 0.625}, {0.1875, 0.6875}, {0.21875, 0.71875}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			data, err := os.ReadFile(treeScenarioFile(t, c.name+".json"))
			require.NoError(t, err)
			f, err := Parse(data)
			require.NoError(t, err)
			b, err := f.Build()
			require.NoError(t, err)
			edata, err := os.ReadFile(treeScenarioFile(t, c.name+".expect.json"))
			require.NoError(t, err)
			e, err := ParseExpect(edata)
			require.NoError(t, err)
			require.Len(t, e.Rounds, len(b.Rounds))
			require.Len(t, c.demand, len(b.Rounds))

			tree, err := fairness.NewTree(b.Schema, b.TreeSpec())
			require.NoError(t, err)
			node := map[string]int{}
			for v := range tree.NumNodes() {
				node[tree.Name(v)] = v
			}
			total := b.Schema.Zero()
			for _, n := range b.Nodes {
				total.Add(n.Total)
			}
			m := fairness.NewDRF(total)
			bundle := b.Rounds[0].Submit[0].Requests
			for r, want := range e.Rounds {
				in := fairness.TreeInput{Demand: make([]flotilla.Resources, len(b.Queues)), Active: make([]bool, len(b.Queues))}
				for q, n := range c.demand[r] {
					in.Demand[q] = b.Schema.Zero()
					for range n {
						in.Demand[q].Add(bundle)
					}
					in.Active[q] = n > 0
				}
				if c.usage != nil {
					in.Usage = c.usage[r]
				}
				var s fairness.TreeShares
				s.Compute(tree, &m, in)
				for _, part := range []struct {
					field string
					want  map[string]float64
					got   []float64
				}{{"fairShare", want.FairShare, s.FairShare}, {"adjustedFairShare", want.AdjustedFairShare, s.AdjustedFairShare}} {
					require.NotEmpty(t, part.want, "round %d gives %s", r, part.field)
					for name, w := range part.want {
						v, ok := node[name]
						require.True(t, ok, "round %d %s names %q, no queue or group", r, part.field, name)
						assert.LessOrEqual(t, math.Abs(part.got[v]-w), ShareTolerance, "round %d %s.%s: want %v, TreeShares %v", r, part.field, name, w, part.got[v])
					}
				}
				for _, counts := range []map[string]int{want.Scheduled, want.Preempted, want.RunningAfter} {
					for name := range counts {
						v, ok := node[name]
						assert.True(t, ok && v >= tree.NumGroups(), "round %d counts %q, not a queue", r, name)
					}
				}
			}
		})
	}
}
