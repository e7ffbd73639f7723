package fairness_test

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/fairness"
)

// bundles is n bundles of QUEUE-TREE.md §11: n GPUs, 8n cpu, 64n Gi.
func bundles(n int64) flotilla.Resources {
	return flotilla.Resources{cores(float64(8 * n)), gi(64 * n), gpus(n)}
}

// exampleTree is the tree of QUEUE-TREE.md §11 on 4 nodes × (8 GPU, 64 cpu,
// 512Gi) = 32 bundles under DRF.
func exampleTree(t testing.TB) (*fairness.Tree, fairness.Model) {
	t.Helper()
	tree, err := fairness.NewTree(seedSchema, fairness.TreeSpec{
		Groups: []fairness.NodeSpec{
			{Name: "research", Guaranteed: bundles(16), Limit: bundles(24)},
			{Name: "prod", Guaranteed: bundles(8)},
		},
		Queues: []fairness.NodeSpec{
			{Name: "vision", Parent: "research", Guaranteed: bundles(8)},
			{Name: "nlp", Parent: "research", Guaranteed: bundles(4), PriorityFactor: 0.5},
			{Name: "serving", Parent: "prod", Guaranteed: bundles(8), Limit: bundles(12)},
			{Name: "adhoc"},
		},
	})
	require.NoError(t, err)
	return tree, fairness.NewDRF(bundles(32))
}

// byName maps node names to a TreeShares column.
func byName(tree *fairness.Tree, col []float64) map[string]float64 {
	out := make(map[string]float64, tree.NumNodes())
	for v := range tree.NumNodes() {
		out[tree.Name(v)] = col[v]
	}
	return out
}

// assertShares compares to 3 decimals as scenario expectations do
// (QUEUE-TREE.md §10: |diff| ≤ 0.0005 plus 1e-6).
func assertShares(t *testing.T, what string, want map[string]float64, got map[string]float64) {
	t.Helper()
	for name, w := range want {
		assert.InDelta(t, w, got[name], 0.0005+1e-6, "%s of %s", what, name)
	}
}

func TestTreeWorkedExample(t *testing.T) {
	tree, model := exampleTree(t)
	var s fairness.TreeShares
	// Round 0: vision 6, nlp 20, serving 10; adhoc idle.
	s.Compute(tree, &model, fairness.TreeInput{
		Demand: []flotilla.Resources{bundles(6), bundles(20), bundles(10), nil},
		Active: []bool{true, true, true, false},
	})
	const b = 1.0 / 32 // one bundle
	exact := func(col []float64, want map[string]float64) {
		t.Helper()
		got := byName(tree, col)
		for name, w := range want {
			assert.InDelta(t, w*b, got[name], 1e-12, name)
		}
	}
	exact(s.Guaranteed, map[string]float64{"research": 16, "prod": 8, "vision": 8, "nlp": 4, "serving": 8, "adhoc": 0})
	exact(s.Demand, map[string]float64{"research": 24, "prod": 10, "vision": 6, "nlp": 20, "serving": 10, "adhoc": 0})
	exact(s.LimitReach, map[string]float64{"research": 24, "prod": 12, "serving": 12})
	exact(s.AdjustedFairShare, map[string]float64{"research": 22, "prod": 10, "vision": 6, "nlp": 16, "serving": 10, "adhoc": 0})
	exact(s.FairShare, map[string]float64{"research": 20, "prod": 12, "vision": 8 + 8.0/3, "nlp": 4 + 16.0/3, "serving": 12, "adhoc": 0})

	// Round 1: adhoc submits 20; nlp runs 16 of its 20.
	s.Compute(tree, &model, fairness.TreeInput{
		Demand: []flotilla.Resources{bundles(6), bundles(20), bundles(10), bundles(20)},
		Active: []bool{true, true, true, true},
	})
	assertShares(t, "adjustedFairShare", map[string]float64{
		"vision": 0.188, "nlp": 0.406, "serving": 0.313, "adhoc": 0.094, "research": 0.594, "prod": 0.313,
	}, byName(tree, s.AdjustedFairShare))
	assertShares(t, "fairShare", map[string]float64{
		"vision": 0.319, "nlp": 0.264, "serving": 0.333, "adhoc": 0.083, "research": 0.583, "prod": 0.333,
	}, byName(tree, s.FairShare))
	exact(s.AdjustedFairShare, map[string]float64{"research": 19, "prod": 10, "adhoc": 3, "vision": 6, "nlp": 13})
	exact(s.FairShare, map[string]float64{"research": 16 + 8.0/3, "prod": 8 + 8.0/3, "adhoc": 8.0 / 3})
	// Ĝ(research) = 16: floors 16 + 8 ≤ 32, no scaling.
	exact(s.GuaranteedPart, map[string]float64{"research": 16, "prod": 8, "adhoc": 0, "vision": 8, "nlp": 4})
}

// sharesOf computes a tree's shares with a fresh TreeShares.
func sharesOf(t *fairness.Tree, m *fairness.Model, in fairness.TreeInput) *fairness.TreeShares {
	var s fairness.TreeShares
	s.Compute(t, m, in)
	return &s
}

func TestTreeFlatEqualsTodaysShares(t *testing.T) {
	// A flat tree is the root with leaves: F = w/Σw, A = min(D, λw).
	tree, err := fairness.NewTree(seedSchema, fairness.TreeSpec{Queues: []fairness.NodeSpec{
		{Name: "a"}, {Name: "b", PriorityFactor: 2}, {Name: "c", PriorityFactor: 10}, {Name: "d"},
	}})
	require.NoError(t, err)
	m := fairness.NewDRF(seedTotal)
	demand := []flotilla.Resources{{cores(1), 0, 0}, {cores(6), 0, 0}, {cores(6), 0, 0}, nil}
	active := []bool{true, true, true, false}
	s := sharesOf(tree, &m, fairness.TreeInput{Demand: demand, Active: active})
	w := []float64{1, 0.5, 0.1, 1}
	d := []float64{0.1, 0.6, 0.6, 0}
	wantF, wantA := make([]float64, 4), make([]float64, 4)
	fairness.FairShares(w, active, wantF)
	fairness.AdjustedFairShares(w, active, d, wantA)
	assert.Equal(t, wantF, s.FairShare)
	assert.Equal(t, wantA, s.AdjustedFairShare)
	assert.Equal(t, []float64{0, 0, 0, 0}, s.GuaranteedPart)
	assert.True(t, math.IsInf(s.LimitReach[0], 1))
}
