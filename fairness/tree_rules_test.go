package fairness_test

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/fairness"
)

// leaf is a queue of a rule case: its spec and its cycle input.
type leaf struct {
	spec   fairness.NodeSpec
	demand flotilla.Resources // nil: inactive
	usage  float64
}

// bundleCase computes a tree on the 32-bundle cluster of §11 and returns the
// shares in bundles (×32), by node name.
func bundleCase(t *testing.T, m fairness.Model, groups []fairness.NodeSpec, leaves []leaf, usage bool, k float64) (a, f, gHat, d map[string]float64) {
	t.Helper()
	spec := fairness.TreeSpec{Groups: groups}
	if usage {
		spec.UsageHalfLife, spec.UsageWeight = time.Hour, k
	}
	in := fairness.TreeInput{}
	for _, l := range leaves {
		spec.Queues = append(spec.Queues, l.spec)
		in.Demand, in.Active = append(in.Demand, l.demand), append(in.Active, l.demand != nil)
		in.Usage = append(in.Usage, l.usage)
	}
	if !usage {
		in.Usage = nil
	}
	tree, err := fairness.NewTree(seedSchema, spec)
	require.NoError(t, err)
	s := sharesOf(tree, &m, in)
	scale := func(col []float64) map[string]float64 {
		out := byName(tree, col)
		for n := range out {
			out[n] *= 32
		}
		return out
	}
	return scale(s.AdjustedFairShare), scale(s.FairShare), scale(s.GuaranteedPart), scale(s.Demand)
}

func q(name, parent string, g, limit, lending flotilla.Resources) fairness.NodeSpec {
	return fairness.NodeSpec{Name: name, Parent: parent, Guaranteed: g, Limit: limit, LendingLimit: lending}
}

// TestTreeRule4 checks QUEUE-TREE.md rule 4 (fair shares by water-filling),
// clause by clause, in bundles of the 32-bundle cluster of §11.
func TestTreeRule4(t *testing.T) {
	drf := fairness.NewDRF(bundles(32))
	asset, err := fairness.NewAsset(seedSchema, bundles(32), nil) // cpu 1, gpu 1
	require.NoError(t, err)
	research := []fairness.NodeSpec{q("research", "", bundles(16), bundles(24), nil), q("prod", "", bundles(8), nil, nil)}
	round := func(adhoc flotilla.Resources) []leaf {
		nlp := q("nlp", "research", bundles(4), nil, nil)
		nlp.PriorityFactor = 0.5
		return []leaf{
			{spec: q("vision", "research", bundles(8), nil, nil), demand: bundles(6)},
			{spec: nlp, demand: bundles(20)},
			{spec: q("serving", "prod", bundles(8), bundles(12), nil), demand: bundles(10)},
			{spec: q("adhoc", "", nil, nil, nil), demand: adhoc},
		}
	}
	tests := []struct {
		name         string
		model        fairness.Model
		groups       []fairness.NodeSpec
		leaves       []leaf
		wantA, wantF map[string]float64
		wantG, wantD map[string]float64
	}{
		{name: "each active child first gets its guarantee capped at its demand (§11 round 0: vision 6 of g 8, nlp 4 + 12)",
			model: drf, groups: research, leaves: round(nil),
			wantA: map[string]float64{"research": 22, "prod": 10, "vision": 6, "nlp": 16, "serving": 10}},
		{name: "the rest is shared by weight, each capped at demand (§11 round 1: prod capped at 10, λ = 3)",
			model: drf, groups: research, leaves: round(bundles(20)),
			wantA: map[string]float64{"research": 19, "prod": 10, "adhoc": 3, "vision": 6, "nlp": 13}},
		{name: "fairShare: limits cap, demand does not (§11 round 0: prod 12 by serving's limit, research 20 = 16 + 4)",
			model: drf, groups: research, leaves: round(nil),
			wantF: map[string]float64{"research": 20, "prod": 12, "serving": 12, "vision": 8 + 8.0/3, "nlp": 4 + 16.0/3}},
		{name: "inactive children get 0, both shares (§11 round 0: adhoc)",
			model: drf, groups: research, leaves: round(nil),
			wantA: map[string]float64{"adhoc": 0}, wantF: map[string]float64{"adhoc": 0}},
		{name: "a group's demand is scaled into its limit box (§11: research D = min(26, 24))",
			model: drf, groups: research, leaves: round(nil),
			wantD: map[string]float64{"research": 24, "prod": 10}},
		{name: "oversubscribed guarantees are scaled in proportion (24 + 16 of 32: ×0.8)",
			model: drf, leaves: []leaf{
				{spec: q("a", "", bundles(24), nil, nil), demand: bundles(32)},
				{spec: q("b", "", bundles(16), nil, nil), demand: bundles(32)}},
			wantA: map[string]float64{"a": 19.2, "b": 12.8}, wantF: map[string]float64{"a": 19.2, "b": 12.8},
			wantG: map[string]float64{"a": 19.2, "b": 12.8}},
		{name: "a guarantee above the demand is a floor at the demand only; the guaranteed part Ĝ is unscaled",
			model: drf, leaves: []leaf{
				{spec: q("a", "", bundles(24), nil, nil), demand: bundles(4)},
				{spec: q("b", "", bundles(16), nil, nil), demand: bundles(32)}},
			wantA: map[string]float64{"a": 4, "b": 28}, wantG: map[string]float64{"a": 24, "b": 16}},
		{name: "a limit on one resource caps the whole bundle (asset: 8 bundles asked, gpu limit 4 → D = 4 bundles)",
			model: asset, leaves: []leaf{
				{spec: q("a", "", nil, flotilla.Resources{fairness.Absent, fairness.Absent, gpus(4)}, nil), demand: bundles(8)},
				{spec: q("b", "", nil, nil, nil), demand: bundles(32)}},
			wantD: map[string]float64{"a": 4}, wantA: map[string]float64{"a": 4, "b": 28}, wantF: map[string]float64{"a": 4, "b": 28}},
		{name: "a group's limit reach is at most its children's (two children limited to 4 each: F(g) = 8)",
			model: drf, groups: []fairness.NodeSpec{q("g", "", nil, nil, nil)}, leaves: []leaf{
				{spec: q("a", "g", nil, bundles(4), nil), demand: bundles(10)},
				{spec: q("b", "g", nil, bundles(4), nil), demand: bundles(10)},
				{spec: q("c", "", nil, nil, nil), demand: bundles(1)}},
			wantF: map[string]float64{"g": 8, "a": 4, "b": 4, "c": 24}, wantA: map[string]float64{"g": 8, "c": 1}},
		{name: "DRF: a group's guaranteed cost is at least its children's sum (orthogonal cpu and gpu guarantees: 16 + 16)",
			model: drf, groups: []fairness.NodeSpec{q("g", "", nil, nil, nil)}, leaves: []leaf{
				{spec: q("cpu", "g", flotilla.Resources{cores(128), 0, 0}, nil, nil), demand: bundles(32)},
				{spec: q("gpu", "g", flotilla.Resources{0, 0, gpus(16)}, nil, nil), demand: bundles(32)},
				{spec: q("c", "", nil, nil, nil), demand: bundles(32)}},
			wantA: map[string]float64{"g": 32, "c": 0, "cpu": 16, "gpu": 16}},
		{name: "an idle lender's adjusted share is its reserve g − lendingLimit, which siblings cannot share",
			model: drf, leaves: []leaf{
				{spec: q("lender", "", bundles(8), nil, bundles(2))},
				{spec: q("b", "", nil, nil, nil), demand: bundles(32)}},
			wantA: map[string]float64{"lender": 6, "b": 26}, wantD: map[string]float64{"lender": 6},
			// F has no demand caps: the idle lender's floor is its whole guarantee, then weight 1:1.
			wantF: map[string]float64{"lender": 20, "b": 12}},
		{name: "without a lending limit an idle guaranteed queue is inactive and lends everything",
			model: drf, leaves: []leaf{
				{spec: q("lender", "", bundles(8), nil, nil)},
				{spec: q("b", "", nil, nil, nil), demand: bundles(32)}},
			wantA: map[string]float64{"lender": 0, "b": 32}, wantF: map[string]float64{"lender": 0, "b": 32}},
		{name: "a busy lender asks for at least its reserve (demand 1, reserve 6)",
			model: drf, leaves: []leaf{
				{spec: q("lender", "", bundles(8), nil, bundles(2)), demand: bundles(1)},
				{spec: q("b", "", nil, nil, nil), demand: bundles(32)}},
			wantA: map[string]float64{"lender": 6, "b": 26}, wantD: map[string]float64{"lender": 6}},
		{name: "a reserve lies in the limit box: the limit reach is at least the reserve (asset, gpu-only demand)",
			// g = limit = 32 cpu + 4 GPUs, lending 0: r = 4 bundles; the demand
			// direction (8 GPUs) meets the limit at 4 GPUs, 2 bundles of cost.
			model: asset, leaves: []leaf{
				{spec: q("lender", "", flotilla.Resources{cores(32), 0, gpus(4)}, flotilla.Resources{cores(32), fairness.Absent, gpus(4)},
					flotilla.Resources{0, fairness.Absent, 0}), demand: flotilla.Resources{0, 0, gpus(8)}},
				{spec: q("b", "", nil, nil, nil), demand: bundles(32)}},
			wantD: map[string]float64{"lender": 4}, wantA: map[string]float64{"lender": 4, "b": 28},
			wantF: map[string]float64{"lender": 4, "b": 28}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a, f, gHat, d := bundleCase(t, tc.model, tc.groups, tc.leaves, false, 0)
			for what, pair := range map[string][2]map[string]float64{"A": {tc.wantA, a}, "F": {tc.wantF, f}, "Ĝ": {tc.wantG, gHat}, "D": {tc.wantD, d}} {
				for name, want := range pair[0] {
					assert.InDelta(t, want, pair[1][name], 1e-9, "%s of %s", what, name)
				}
			}
		})
	}
}

// TestTreeRule9 checks QUEUE-TREE.md rule 9 (usage memory) on trees.
func TestTreeRule9(t *testing.T) {
	drf := fairness.NewDRF(bundles(32))
	t.Run("KAI equivalence at the root: w'/Σw' = (1+k)·nW − k·u when usages sum to 1", func(t *testing.T) {
		// weights 1, 1, 2: nW = .25, .25, .5; u = .2, .3, .5; k = 1.
		_, f, _, _ := bundleCase(t, drf, nil, []leaf{
			{spec: q("a", "", nil, nil, nil), demand: bundles(32), usage: 0.2},
			{spec: q("b", "", nil, nil, nil), demand: bundles(32), usage: 0.3},
			{spec: fairness.NodeSpec{Name: "c", PriorityFactor: 0.5}, demand: bundles(32), usage: 0.5},
		}, true, 1)
		assert.InDelta(t, 0.3*32, f["a"], 1e-9)
		assert.InDelta(t, 0.2*32, f["b"], 1e-9)
		assert.InDelta(t, 0.5*32, f["c"], 1e-9)
	})
	t.Run("guarantees are never touched: a heavy user keeps its guarantee, only the rest moves", func(t *testing.T) {
		// F⁰: a = 16 + 8, b = 8. m_a = clamp(1 + (1 − 1/0.75)) = 2/3, m_b = 2:
		// the 16 over the guarantee split 1:3 → a 20, b 12.
		a, f, _, _ := bundleCase(t, drf, nil, []leaf{
			{spec: q("a", "", bundles(16), nil, nil), demand: bundles(32), usage: 1},
			{spec: q("b", "", nil, nil, nil), demand: bundles(32), usage: 0},
		}, true, 1)
		assert.InDelta(t, 20, f["a"], 1e-9)
		assert.InDelta(t, 12, f["b"], 1e-9)
		assert.InDelta(t, 20, a["a"], 1e-9)
		assert.InDelta(t, 12, a["b"], 1e-9)
	})
	t.Run("usage weight 0 changes nothing", func(t *testing.T) {
		_, f, _, _ := bundleCase(t, drf, nil, []leaf{
			{spec: q("a", "", nil, nil, nil), demand: bundles(32), usage: 1},
			{spec: q("b", "", nil, nil, nil), demand: bundles(32), usage: 0},
		}, true, 0)
		assert.InDelta(t, 16, f["a"], 1e-12)
	})
	t.Run("a group's usage is its children's sum", func(t *testing.T) {
		// g holds a (u .6) and b (u .15); c idle-free (u .25). F⁰ = .5 each at the
		// root: m_g = clamp(1 + (1 − .75/.5)) = .5, m_c = 1 + (1 − .5) = 1.5 →
		// g gets .25, c .75.
		_, f, _, _ := bundleCase(t, drf, []fairness.NodeSpec{q("g", "", nil, nil, nil)}, []leaf{
			{spec: q("a", "g", nil, nil, nil), demand: bundles(32), usage: 0.6},
			{spec: q("b", "g", nil, nil, nil), demand: bundles(32), usage: 0.15},
			{spec: q("c", "", nil, nil, nil), demand: bundles(32), usage: 0.25},
		}, true, 1)
		assert.InDelta(t, 8, f["g"], 1e-9)
		assert.InDelta(t, 24, f["c"], 1e-9)
	})
}

func TestUsageMultiplier(t *testing.T) {
	tests := []struct {
		name     string
		u, f0, k float64
		want     float64
	}{
		{"used exactly its fair share keeps its weight", 0.25, 0.25, 1, 1},
		{"used nothing: 1+k", 0, 0.25, 1, 2},
		{"used half: 1 + k/2", 0.125, 0.25, 1, 1.5},
		{"used much more: floored at 1/(1+k)", 1, 0.1, 1, 0.5},
		{"k = 3, used nothing: 4", 0, 0.5, 3, 4},
		{"k = 3, used twice: clamp(1 − 3) = 1/4", 1, 0.5, 3, 0.25},
		{"k = 0: 1", 0, 0.5, 0, 1},
		{"no fair share: 1", 0.3, 0, 1, 1},
		{"NaN usage counts as 0", math.NaN(), 0.25, 1, 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.InDelta(t, tc.want, fairness.UsageMultiplier(tc.u, tc.f0, tc.k), 1e-12)
		})
	}
}

func TestUsageDecay(t *testing.T) {
	h := time.Hour
	tests := []struct {
		name     string
		dt, h    time.Duration
		u, share float64
		want     float64
	}{
		{"one half-life: half way", h, h, 0.8, 0.2, 0.5},
		{"two half-lives: a quarter of the old value stays", 2 * h, h, 0.8, 0, 0.2},
		{"no time passed: unchanged", 0, h, 0.8, 0.2, 0.8},
		{"usage off (h = 0): unchanged", h, 0, 0.8, 0.2, 0.8},
		{"a share above 1 counts as 1", h, h, 0, 1.5, 0.5},
		{"a NaN share counts as 0", h, h, 0.8, math.NaN(), 0.4},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			u := []float64{tc.u}
			fairness.DecayUsage(u, []float64{tc.share}, tc.dt, tc.h)
			assert.InDelta(t, tc.want, u[0], 1e-12)
		})
	}
	assert.Equal(t, 0.5, fairness.UsageDecay(h, h))
	assert.InDelta(t, math.Pow(2, -0.25), fairness.UsageDecay(15*time.Minute, h), 1e-15)
}

// TestTreeSumShares checks QUEUE-TREE.md rule 2: a queue's share is the cost
// of its allocation, a group's the sum of its children's (not the cost of
// their summed vectors: under DRF a cpu queue and a gpu queue of a group
// are charged both dominant shares).
func TestTreeSumShares(t *testing.T) {
	tree, err := fairness.NewTree(seedSchema, fairness.TreeSpec{
		Groups: []fairness.NodeSpec{{Name: "top"}, {Name: "g", Parent: "top"}},
		Queues: []fairness.NodeSpec{{Name: "cpu", Parent: "g"}, {Name: "gpu", Parent: "g"}, {Name: "x", Parent: "top"}, {Name: "idle"}},
	})
	require.NoError(t, err)
	m := fairness.NewDRF(bundles(32))
	out := make([]float64, tree.NumNodes())
	tree.SumShares(&m, []flotilla.Resources{{cores(64), 0, 0}, {0, 0, gpus(8)}, bundles(4), nil}, out)
	got := byName(tree, out)
	assert.InDelta(t, 0.25, got["cpu"], 1e-15)
	assert.InDelta(t, 0.25, got["gpu"], 1e-15)
	assert.InDelta(t, 0.5, got["g"], 1e-15)
	assert.InDelta(t, 0.625, got["top"], 1e-15)
	assert.Equal(t, 0.0, got["idle"])
}
