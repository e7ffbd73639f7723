package fairness_test

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/fairness"
)

const absent = fairness.Absent

// problems returns the field and class of every problem in err.
func problems(t testing.TB, err error) (fields []string, classes []error) {
	t.Helper()
	for _, p := range flotilla.Problems(err) {
		var fe *flotilla.FieldError
		require.True(t, errors.As(p, &fe), "not a FieldError: %v", p)
		fields = append(fields, fe.Field)
		classes = append(classes, fe.Err)
	}
	return fields, classes
}

func TestNewTreeValidation(t *testing.T) {
	g := func(name, parent string) fairness.NodeSpec { return fairness.NodeSpec{Name: name, Parent: parent} }
	tests := []struct {
		name   string
		spec   fairness.TreeSpec
		fields []string
		class  []error
	}{
		{"unknown parent", fairness.TreeSpec{Queues: []fairness.NodeSpec{g("a", "nope")}},
			[]string{"queues[0].parent"}, []error{flotilla.ErrUnknownName}},
		{"parent is a queue", fairness.TreeSpec{Queues: []fairness.NodeSpec{g("a", ""), g("b", "a")}},
			[]string{"queues[1].parent"}, []error{flotilla.ErrInconsistent}},
		{"cycle of two groups, each reported", fairness.TreeSpec{Groups: []fairness.NodeSpec{g("x", "y"), g("y", "x")}},
			[]string{"groups[0].parent", "groups[1].parent"}, []error{flotilla.ErrInconsistent, flotilla.ErrInconsistent}},
		{"group its own parent", fairness.TreeSpec{Groups: []fairness.NodeSpec{g("x", ""), g("y", "y")}},
			[]string{"groups[1].parent"}, []error{flotilla.ErrInconsistent}},
		{"duplicate name across groups and queues", fairness.TreeSpec{Groups: []fairness.NodeSpec{g("a", "")}, Queues: []fairness.NodeSpec{g("a", "")}},
			[]string{"queues[0].name"}, []error{flotilla.ErrDuplicate}},
		{"missing name", fairness.TreeSpec{Queues: []fairness.NodeSpec{g("", "")}},
			[]string{"queues[0].name"}, []error{flotilla.ErrRequired}},
		{"priority factor below the minimum", fairness.TreeSpec{Queues: []fairness.NodeSpec{{Name: "a", PriorityFactor: 1e-9}}},
			[]string{"queues[0].priorityFactor"}, []error{flotilla.ErrOutOfRange}},
		{"NaN priority factor", fairness.TreeSpec{Groups: []fairness.NodeSpec{{Name: "a", PriorityFactor: math.NaN()}}},
			[]string{"groups[0].priorityFactor"}, []error{flotilla.ErrOutOfRange}},
		{"limit below guarantee", fairness.TreeSpec{Groups: []fairness.NodeSpec{{Name: "a",
			Guaranteed: flotilla.Resources{cores(4), absent, absent}, Limit: flotilla.Resources{cores(2), absent, absent}}}},
			[]string{"groups[0].limit.cpu"}, []error{flotilla.ErrInconsistent}},
		{"group limit below its children's guarantees (no own guarantee)", fairness.TreeSpec{
			Groups: []fairness.NodeSpec{{Name: "a", Limit: flotilla.Resources{absent, absent, gpus(3)}}},
			Queues: []fairness.NodeSpec{{Name: "q", Parent: "a", Guaranteed: flotilla.Resources{0, 0, gpus(4)}}}},
			[]string{"groups[0].limit.nvidia.com/gpu"}, []error{flotilla.ErrInconsistent}},
		{"lending limit above guarantee", fairness.TreeSpec{Queues: []fairness.NodeSpec{{Name: "a",
			Guaranteed: flotilla.Resources{cores(4), 0, 0}, LendingLimit: flotilla.Resources{cores(5), absent, absent}}}},
			[]string{"queues[0].lendingLimit.cpu"}, []error{flotilla.ErrInconsistent}},
		{"lending limit without a guarantee", fairness.TreeSpec{Queues: []fairness.NodeSpec{{Name: "a",
			LendingLimit: flotilla.Resources{absent, gi(1), absent}}}},
			[]string{"queues[0].lendingLimit.memory"}, []error{flotilla.ErrInconsistent}},
		{"children's guarantees above a group's explicit guarantee", fairness.TreeSpec{
			Groups: []fairness.NodeSpec{{Name: "a", Guaranteed: flotilla.Resources{absent, absent, gpus(4)}}},
			Queues: []fairness.NodeSpec{
				{Name: "q", Parent: "a", Guaranteed: flotilla.Resources{cores(64), 0, gpus(3)}},
				{Name: "r", Parent: "a", Guaranteed: flotilla.Resources{cores(64), 0, gpus(2)}}}},
			[]string{"groups[0].guaranteed.nvidia.com/gpu"}, []error{flotilla.ErrInconsistent}},
		{"negative quantity", fairness.TreeSpec{Queues: []fairness.NodeSpec{{Name: "a", Limit: flotilla.Resources{-1, absent, absent}}}},
			[]string{"queues[0].limit.cpu"}, []error{flotilla.ErrNegative}},
		{"vector of the wrong length", fairness.TreeSpec{Queues: []fairness.NodeSpec{{Name: "a", Guaranteed: flotilla.Resources{1}}}},
			[]string{"queues[0].guaranteed"}, []error{flotilla.ErrInconsistent}},
		{"usage above 1", fairness.TreeSpec{Queues: []fairness.NodeSpec{{Name: "a", Usage: 1.5}}},
			[]string{"queues[0].usage"}, []error{flotilla.ErrOutOfRange}},
		{"negative usage", fairness.TreeSpec{Queues: []fairness.NodeSpec{{Name: "a", Usage: -0.1}}},
			[]string{"queues[0].usage"}, []error{flotilla.ErrOutOfRange}},
		{"NaN usage", fairness.TreeSpec{Queues: []fairness.NodeSpec{{Name: "a", Usage: math.NaN()}}},
			[]string{"queues[0].usage"}, []error{flotilla.ErrOutOfRange}},
		{"usage on a group", fairness.TreeSpec{Groups: []fairness.NodeSpec{{Name: "a", Usage: 0.5}}},
			[]string{"groups[0].usage"}, []error{flotilla.ErrOutOfRange}},
		{"negative usage weight", fairness.TreeSpec{UsageHalfLife: time.Hour, UsageWeight: -1},
			[]string{"config.usageWeight"}, []error{flotilla.ErrOutOfRange}},
		{"usage weight without half-life", fairness.TreeSpec{UsageWeight: 1},
			[]string{"config.usageWeight"}, []error{flotilla.ErrInconsistent}},
		{"negative half-life", fairness.TreeSpec{UsageHalfLife: -time.Second},
			[]string{"config.usageHalfLife"}, []error{flotilla.ErrOutOfRange}},
		{"every problem at once", fairness.TreeSpec{
			UsageWeight: -2,
			Groups:      []fairness.NodeSpec{{Name: "a", Parent: "q"}, {Name: "b", Guaranteed: flotilla.Resources{cores(1), 0, 0}}},
			Queues: []fairness.NodeSpec{
				{Name: "q", Parent: "b", Guaranteed: flotilla.Resources{cores(2), 0, 0}, Limit: flotilla.Resources{cores(1), absent, absent}},
				{Name: "q", Usage: 2},
			}},
			[]string{"config.usageWeight", "queues[1].name", "groups[0].parent", "queues[1].usage",
				"queues[0].limit.cpu", "groups[1].guaranteed.cpu"},
			[]error{flotilla.ErrOutOfRange, flotilla.ErrDuplicate, flotilla.ErrInconsistent, flotilla.ErrOutOfRange,
				flotilla.ErrInconsistent, flotilla.ErrInconsistent}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tree, err := fairness.NewTree(seedSchema, tc.spec)
			require.Error(t, err)
			assert.Nil(t, tree)
			fields, classes := problems(t, err)
			assert.ElementsMatch(t, tc.fields, fields, "%v", err)
			require.Len(t, classes, len(tc.class))
			for i, f := range tc.fields {
				for k := range fields {
					if fields[k] == f {
						assert.ErrorIs(t, classes[k], tc.class[i], f)
					}
				}
			}
		})
	}
}

func TestNewTreeAcceptsValidTrees(t *testing.T) {
	tests := []struct {
		name string
		spec fairness.TreeSpec
	}{
		{"empty", fairness.TreeSpec{}},
		{"group with no child", fairness.TreeSpec{Groups: []fairness.NodeSpec{{Name: "g"}}}},
		{"guarantees equal to the group's", fairness.TreeSpec{
			Groups: []fairness.NodeSpec{{Name: "g", Guaranteed: bundles(4), Limit: bundles(4)}},
			Queues: []fairness.NodeSpec{{Name: "a", Parent: "g", Guaranteed: bundles(3)}, {Name: "b", Parent: "g", Guaranteed: bundles(1)}}}},
		{"group guarantee given for some resources only (the rest bubbles)", fairness.TreeSpec{
			Groups: []fairness.NodeSpec{{Name: "g", Guaranteed: flotilla.Resources{absent, absent, gpus(8)}}},
			Queues: []fairness.NodeSpec{{Name: "a", Parent: "g", Guaranteed: bundles(4)}}}},
		{"usage weight 0 with half-life", fairness.TreeSpec{UsageHalfLife: time.Hour}},
		{"top-level guarantees above any cluster", fairness.TreeSpec{Queues: []fairness.NodeSpec{
			{Name: "a", Guaranteed: bundles(1 << 20)}, {Name: "b", Guaranteed: bundles(1 << 20)}}}},
		{"lending limit equal to the guarantee", fairness.TreeSpec{Queues: []fairness.NodeSpec{
			{Name: "a", Guaranteed: bundles(4), LendingLimit: bundles(4), Usage: 1}}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tree, err := fairness.NewTree(seedSchema, tc.spec)
			require.NoError(t, err)
			assert.Equal(t, len(tc.spec.Groups)+len(tc.spec.Queues), tree.NumNodes())
		})
	}
}

func TestTreeEffectiveGuaranteesBubbleUp(t *testing.T) {
	tree, err := fairness.NewTree(seedSchema, fairness.TreeSpec{
		Groups: []fairness.NodeSpec{
			{Name: "top"},
			{Name: "mid", Parent: "top", Guaranteed: flotilla.Resources{absent, absent, gpus(8)}},
		},
		Queues: []fairness.NodeSpec{
			{Name: "a", Parent: "mid", Guaranteed: bundles(2)},
			{Name: "b", Parent: "mid", Guaranteed: bundles(3)},
			{Name: "c", Parent: "top", Guaranteed: bundles(1)},
		},
	})
	require.NoError(t, err)
	// mid: gpu given (8), cpu and memory the children's 5 bundles.
	assert.Equal(t, flotilla.Resources{cores(40), gi(320), gpus(8)}, tree.Guaranteed(1))
	assert.Equal(t, flotilla.Resources{cores(48), gi(384), gpus(9)}, tree.Guaranteed(0))
	assert.Equal(t, 0, tree.Parent(1))
	assert.Equal(t, -1, tree.Parent(0))
	assert.Equal(t, []int32{1, 4}, tree.Children(0))
	assert.Equal(t, []int32{0}, tree.Children(-1))
}

// FuzzNewTree: validation never panics, every problem is a FieldError naming
// a field of the spec, and a valid tree's shares can be computed.
func FuzzNewTree(f *testing.F) {
	f.Add("g,h,a,b", "h,,g,zz", int64(4), int64(2), int64(1), 0.5, 1.0, 0.5, int64(3600))
	f.Add("a,a", ",a", int64(-1), absent, int64(5), 2.0, -1.0, 0.0, int64(0))
	f.Add("x,y,q", "y,x,x", int64(1), int64(0), absent, math.NaN(), 0.0, math.Inf(1), int64(-5))
	f.Fuzz(func(t *testing.T, names, parents string, g, l, ll int64, usage, factor, k float64, hl int64) {
		ns, ps := strings.Split(names, ","), strings.Split(parents, ",")
		var spec fairness.TreeSpec
		spec.UsageWeight, spec.UsageHalfLife = k, time.Duration(hl)
		for i, n := range ns {
			s := fairness.NodeSpec{Name: n, PriorityFactor: factor, Usage: usage}
			if i < len(ps) {
				s.Parent = ps[i]
			}
			switch i % 3 {
			case 0:
				s.Guaranteed = flotilla.Resources{g, absent, g}
			case 1:
				s.Limit, s.LendingLimit = flotilla.Resources{l, l, absent}, flotilla.Resources{ll, absent, 0}
			}
			if i%2 == 0 {
				s.Usage = 0
				spec.Groups = append(spec.Groups, s)
			} else {
				spec.Queues = append(spec.Queues, s)
			}
		}
		tree, err := fairness.NewTree(seedSchema, spec)
		if err != nil {
			require.Nil(t, tree)
			for _, p := range flotilla.Problems(err) {
				var fe *flotilla.FieldError
				require.True(t, errors.As(p, &fe), "not a FieldError: %v", p)
				ok := strings.HasPrefix(fe.Field, "groups[") || strings.HasPrefix(fe.Field, "queues[") ||
					strings.HasPrefix(fe.Field, "config.")
				require.True(t, ok, "field %q", fe.Field)
			}
			return
		}
		m := fairness.NewDRF(bundles(32))
		in := fairness.TreeInput{Active: make([]bool, tree.NumQueues()), Demand: make([]flotilla.Resources, tree.NumQueues())}
		for q := range in.Active {
			in.Active[q], in.Demand[q] = true, bundles(int64(q+1))
		}
		s := sharesOf(tree, &m, in)
		for v := range tree.NumNodes() {
			require.False(t, math.IsNaN(s.FairShare[v]) || math.IsNaN(s.AdjustedFairShare[v]), "node %d", v)
		}
	})
}
