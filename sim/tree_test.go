package sim_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/scheduler"
	"github.com/flotilla-sched/flotilla/sim"
)

// problems are err's problems as "field value" pairs, each a
// *flotilla.FieldError.
func problems(t *testing.T, err error) []string {
	t.Helper()
	var out []string
	for _, e := range flotilla.Problems(err) {
		var fe *flotilla.FieldError
		require.True(t, errors.As(e, &fe), "%v is not a *flotilla.FieldError", e)
		out = append(out, fe.Field+" "+fe.Value)
	}
	return out
}

// treeWorkload is a workload of the given groups and queues (JSON array
// bodies) and extra top-level fields, with one template on the first
// queue, named A.
func treeWorkload(extra, groups, queues string) string {
	return fmt.Sprintf(`{%s "groups": [%s], "queues": [%s],
		"jobTemplates": [{"id": "a", "queue": "A", "count": 1, "requests": {"cpu": "1"}}]}`, extra, groups, queues)
}

// TestBadQueueTreeNamesEveryFieldAndValue: every problem of a workload's
// queue tree (QUEUE-TREE.md §10's list, in the workload's terms) is
// reported at once, each at its JSON path with the value as written, and
// none twice.
func TestBadQueueTreeNamesEveryFieldAndValue(t *testing.T) {
	for _, tc := range []struct {
		name, file string
		want       []string
	}{
		{"unknown parent and a parent that is a queue",
			treeWorkload(``, `{"name": "g", "parent": "nowhere"}`, `{"name": "A", "parent": "B"}, {"name": "B", "parent": "g"}`),
			[]string{"groups[0].parent nowhere", "queues[0].parent B"}},
		{"a cycle of groups",
			treeWorkload(``, `{"name": "g", "parent": "h"}, {"name": "h", "parent": "g"}`, `{"name": "A", "parent": "g"}`),
			[]string{"groups[0].parent h", "groups[1].parent g"}},
		{"names unique across groups and queues, a duplicate queue named once",
			treeWorkload(``, `{"name": "A"}, {}`, `{"name": "A"}, {"name": "A"}`),
			[]string{"groups[1].name ", "queues[0].name A", "queues[1].name A"}},
		{"weights",
			treeWorkload(``, `{"name": "g", "weight": 0}, {"name": "h", "weight": 1e300}`, `{"name": "A", "weight": -2}, {"name": "B", "weight": 1e300}`),
			[]string{"groups[0].weight 0", "groups[1].weight 1e+300", "queues[0].weight -2", "queues[1].weight 1e+300"}},
		{"limit below guarantee, lending limit above it",
			treeWorkload(``, `{"name": "g", "guaranteed": {"cpu": "8"}, "limit": {"cpu": "4"}, "lendingLimit": {"cpu": "9"}}`,
				`{"name": "A", "parent": "g", "guaranteed": {"nvidia.com/gpu": "2"}, "limit": {"nvidia.com/gpu": "1"}}`),
			[]string{"groups[0].limit.cpu 4", "groups[0].lendingLimit.cpu 9", "queues[0].limit.nvidia.com/gpu 1"}},
		{"children's guarantees above the group's",
			treeWorkload(``, `{"name": "g", "guaranteed": {"cpu": "4"}}`,
				`{"name": "A", "parent": "g", "guaranteed": {"cpu": "3"}}, {"name": "B", "parent": "g", "guaranteed": {"cpu": "2"}}`),
			[]string{"groups[0].guaranteed.cpu 4"}},
		{"quantities that do not parse, a negative one, an empty name",
			treeWorkload(``, `{"name": "g", "guaranteed": {"cpu": "lots", "": "1"}}`, `{"name": "A", "limit": {"memory": "-1Gi"}}`),
			[]string{"groups[0].guaranteed.cpu lots", "groups[0].guaranteed ", "queues[0].limit.memory -1Gi"}},
		{"usage weight negative",
			treeWorkload(`"usageHalfLife": "1h", "usageWeight": -1,`, ``, `{"name": "A"}`),
			[]string{"usageWeight -1"}},
		{"usage weight without a half-life",
			treeWorkload(`"usageWeight": 2,`, ``, `{"name": "A"}`),
			[]string{"usageWeight 2"}},
		{"usage weight with a half-life of 0",
			treeWorkload(`"usageHalfLife": "0s", "usageWeight": 2,`, ``, `{"name": "A"}`),
			[]string{"usageWeight 2"}},
		{"half-life negative or malformed, named once",
			treeWorkload(`"usageHalfLife": "-1h", "usageWeight": 1,`, ``, `{"name": "A"}`),
			[]string{"usageHalfLife -1h"}},
		{"half-life malformed",
			treeWorkload(`"usageHalfLife": "a while",`, ``, `{"name": "A"}`),
			[]string{"usageHalfLife a while"}},
		{"usage seeds outside [0,1], on a group, not a number; all at once",
			treeWorkload(`"usageHalfLife": "1h",`, `{"name": "g", "usage": 0.5}`,
				`{"name": "A", "parent": "g", "usage": 1.5}, {"name": "B", "usage": -0.25}, {"name": "C", "usage": 1e999}, {"name": "D", "usage": "all"}`),
			[]string{"groups[0].usage usage", "queues[0].usage 1.5", "queues[1].usage -0.25", "queues[2].usage 1e999", "queues[3].usage all"}},
		{"a bad usage seed without a half-life",
			treeWorkload(``, ``, `{"name": "A", "usage": 2}`),
			[]string{"queues[0].usage 2"}},
		{"a template on a group",
			fmt.Sprintf(`{"groups": [{"name": "g"}], "queues": [{"name": "A", "parent": "g"}],
				"jobTemplates": [{"id": "a", "queue": "g", "count": 1, "requests": {"cpu": "1"}}]}`),
			[]string{"jobTemplates[0].queue g"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := sim.ParseWorkload([]byte(tc.file))
			require.Error(t, err)
			require.ElementsMatch(t, tc.want, problems(t, err))
		})
	}
}

// TestGoodQueueTreeParses: a tree with every field, quotas on resources of
// either unit, usage memory on.
func TestGoodQueueTreeParses(t *testing.T) {
	w, err := sim.ParseWorkload([]byte(treeWorkload(`"usageHalfLife": "3h", "usageWeight": 0.5,`,
		`{"name": "org"}, {"name": "research", "parent": "org", "weight": 2, "guaranteed": {"cpu": "8", "memory": "16Gi"}, "limit": {"cpu": "12"}, "lendingLimit": {"cpu": "4"}}`,
		`{"name": "A", "parent": "research", "guaranteed": {"cpu": "4"}, "limit": {"cpu": "500m"}}`)))
	if err == nil {
		t.Fatalf("a queue's limit 500m below its guarantee 4 was accepted: %+v", w)
	}
	require.Equal(t, []string{"queues[0].limit.cpu 500m"}, problems(t, err))
	w, err = sim.ParseWorkload([]byte(treeWorkload(`"usageHalfLife": "3h", "usageWeight": 0.5,`,
		`{"name": "org"}, {"name": "research", "parent": "org", "weight": 2, "guaranteed": {"cpu": "8", "memory": "16Gi"}, "limit": {"cpu": "12"}, "lendingLimit": {"cpu": "4"}}`,
		`{"name": "A", "parent": "research", "guaranteed": {"cpu": "4"}, "limit": {"cpu": "4500m"}}`)))
	require.NoError(t, err)
	require.True(t, w.HasTree())
	require.Len(t, w.Groups, 2)
	require.Equal(t, "research", w.Queues[0].Parent)
}

// TestRunJudgesTheTreeAgainstTheClustersAndConfig: a quota on a resource
// no node has, usage settings the scheduler's configuration sets
// otherwise, and a tree under the lottery strategy are refused by Run
// under workload., before anything runs; the same settings given once,
// in either place, run.
func TestRunJudgesTheTreeAgainstTheClustersAndConfig(t *testing.T) {
	c, err := sim.ParseClusters([]byte(`{"clusters": [{"name": "c", "nodes": [{"name": "n", "resources": {"cpu": "4"}}]}]}`))
	require.NoError(t, err)
	w, err := sim.ParseWorkload([]byte(treeWorkload(`"usageHalfLife": "1h", "usageWeight": 2,`,
		`{"name": "g", "guaranteed": {"nvidia.com/gpu": "1"}}`, `{"name": "A", "parent": "g", "limit": {"cpu": "2", "memory": "1Gi"}}`)))
	require.NoError(t, err)
	schema, err := flotilla.NewResourceSchema("cpu")
	require.NoError(t, err)
	sc := scheduler.DefaultConfig(schema)
	sc.UsageHalfLife, sc.UsageWeight = 2*time.Hour, 1
	_, err = sim.Run(context.Background(), sim.Config{Workload: w, Clusters: c, Scheduler: &sc})
	require.ElementsMatch(t, []string{"workload.groups[0].guaranteed.nvidia.com/gpu nvidia.com/gpu",
		"workload.queues[0].limit.memory memory", "workload.usageHalfLife 1h", "workload.usageWeight 2"}, problems(t, err))

	lottery := scheduler.DefaultConfig(schema)
	lottery.Strategy, lottery.PriorityHalftime = scheduler.Lottery, time.Minute
	w, err = sim.ParseWorkload([]byte(treeWorkload(``, `{"name": "g"}`, `{"name": "A", "parent": "g"}`)))
	require.NoError(t, err)
	_, err = sim.Run(context.Background(), sim.Config{Workload: w, Clusters: c, Scheduler: &lottery})
	require.Equal(t, []string{"workload.groups 1"}, problems(t, err))

	w, err = sim.ParseWorkload([]byte(treeWorkload(`"usageHalfLife": "2h",`, `{"name": "g"}`, `{"name": "A", "parent": "g"}`)))
	require.NoError(t, err)
	out, err := sim.Run(context.Background(), sim.Config{Workload: w, Clusters: c, Scheduler: &sc})
	require.NoError(t, err)
	require.NotEmpty(t, out.Groups)
}

// TestGroupRowsAreTheSchedulersGroupReports: every cycle's group rows are
// the scheduler's Result.Groups of that cycle, field for field and in
// order, and the queue rows carry each queue's parent and usage; and, as
// an oracle independent of the scheduler's reports, a group's share,
// usage, running and queued are the sums over the queue rows below it.
func TestGroupRowsAreTheSchedulersGroupReports(t *testing.T) {
	cfg := load(t, "small-tree.workload.json", "small.clusters.json")
	var want []sim.GroupRow
	var wantQueues []sim.QueueRow
	out, err := sim.RunObserved(context.Background(), cfg, func(now time.Duration, res *scheduler.Result) {
		for _, g := range res.Groups {
			want = append(want, sim.GroupRow{Time: now.Seconds(), Group: g.Name, Parent: g.Parent, Share: g.Share,
				FairShare: g.FairShare, AdjustedFairShare: g.AdjustedFairShare, Usage: g.Usage, Demand: g.Demand,
				Running: g.Running, Queued: g.Queued, Allocated: g.Allocated})
		}
		for _, q := range res.Queues {
			wantQueues = append(wantQueues, sim.QueueRow{Time: now.Seconds(), Queue: q.Name, Parent: q.Parent, Usage: q.Usage})
		}
	})
	require.NoError(t, err)
	require.Len(t, out.Groups, len(want))
	require.Greater(t, len(want), 100)
	for i := range want {
		got := out.Groups[i]
		want[i].Cycle = got.Cycle
		require.Equal(t, want[i], got, "group row %d", i)
		if i > 0 && out.Groups[i-1].Time == got.Time {
			require.Equal(t, out.Groups[i-1].Cycle, got.Cycle)
		}
	}
	require.Len(t, out.Queues, len(wantQueues))
	for i, q := range out.Queues {
		require.Equal(t, [3]any{wantQueues[i].Queue, wantQueues[i].Parent, wantQueues[i].Usage}, [3]any{q.Queue, q.Parent, q.Usage}, "queue row %d", i)
	}

	// The oracle: sums over the tree (small-tree's groups: org ⊃ {research, ops}).
	parent := map[string]string{}
	for _, g := range cfg.Workload.Groups {
		parent[g.Name] = g.Parent
	}
	type sums struct {
		share, usage    float64
		running, queued int
	}
	byCycle := map[int]map[string]*sums{}
	usageSeen := false
	for _, q := range out.Queues {
		m := byCycle[q.Cycle]
		if m == nil {
			m = map[string]*sums{}
			byCycle[q.Cycle] = m
		}
		for p := q.Parent; p != ""; p = parent[p] {
			if m[p] == nil {
				m[p] = &sums{}
			}
			m[p].share += q.Share
			m[p].usage += q.Usage
			m[p].running += q.Running
			m[p].queued += q.Queued
		}
		usageSeen = usageSeen || q.Usage > 0
	}
	require.True(t, usageSeen, "the workload turns usage memory on: some queue's usage must be positive")
	for _, g := range out.Groups {
		s := byCycle[g.Cycle][g.Group]
		if s == nil {
			s = &sums{}
		}
		assert.InDelta(t, s.share, g.Share, 1e-9, "cycle %d group %s share", g.Cycle, g.Group)
		assert.InDelta(t, s.usage, g.Usage, 1e-9, "cycle %d group %s usage", g.Cycle, g.Group)
		assert.Equal(t, s.running, g.Running, "cycle %d group %s running", g.Cycle, g.Group)
		assert.Equal(t, s.queued, g.Queued, "cycle %d group %s queued", g.Cycle, g.Group)
	}
}

// meanShares is each group's mean share, fair share and usage over the
// cycles in [from, to) hours.
func meanShares(out *sim.Output, from, to float64) map[string][3]float64 {
	sum := map[string][3]float64{}
	n := map[string]int{}
	for _, g := range out.Groups {
		if h := g.Time / 3600; h >= from && h < to {
			s := sum[g.Group]
			sum[g.Group] = [3]float64{s[0] + g.Share, s[1] + g.FairShare, s[2] + g.Usage}
			n[g.Group]++
		}
	}
	for k, s := range sum {
		c := float64(n[k])
		sum[k] = [3]float64{s[0] / c, s[1] / c, s[2] / c}
	}
	return sum
}

// TestDecayedUsageLetsTheLightUserCatchUp is the README's day: a heavy
// user (queue heavy in group research) has the 512-core cluster to itself
// for 8 hours; then a light user (queue light in group product) arrives
// with more work than it can run by the end of the day. With usage memory
// (half-life 3h, weight 1), product's fair share jumps to the clamp's
// 0.8 (multipliers 2 and 1/2) and its share follows within the hour, then
// both return to 0.5 as the usages even out; without usage memory both
// hold 0.5 from the first hour. Figures of the run (seed 20): product's
// mean share over hours 9-11 is 0.692 against 0.500 without (research
// 0.308); over hours 8-24 product holds 0.545 of the cluster against
// 0.494; over hours 20-24 both usages are within 0.01 of 0.5.
func TestDecayedUsageLetsTheLightUserCatchUp(t *testing.T) {
	run := func(usage bool) *sim.Output {
		cfg := load(t, "tree-day.workload.json", "tree-day.clusters.json")
		if !usage {
			cfg.Workload.UsageHalfLife, cfg.Workload.UsageWeight = "", 0
		}
		out, err := sim.Run(context.Background(), cfg)
		require.NoError(t, err)
		return out
	}
	with, without := run(true), run(false)

	// At the light user's arrival: the usage-free fair share is 0.5 each;
	// with usage, research's u ≈ 0.93 and product's 0 clamp the
	// multipliers at 1/2 and 2: fair shares 0.2 and 0.8.
	at8 := func(out *sim.Output) map[string]sim.GroupRow {
		m := map[string]sim.GroupRow{}
		for _, g := range out.Groups {
			if g.Time == 8*3600 {
				m[g.Group] = g
			}
		}
		return m
	}
	w8, wo8 := at8(with), at8(without)
	assert.InDelta(t, 0.5, wo8["product"].FairShare, 1e-9)
	assert.InDelta(t, 0.5, wo8["research"].FairShare, 1e-9)
	assert.InDelta(t, 0.8, w8["product"].FairShare, 1e-9)
	assert.InDelta(t, 0.2, w8["research"].FairShare, 1e-9)
	assert.InDelta(t, 1-math.Pow(2, -8.0/3), w8["research"].Usage, 0.01, "8h of the whole cluster at half-life 3h")
	assert.Zero(t, w8["product"].Usage)

	// Hours 9-11: the light user runs well above its usage-free level,
	// the heavy one well below; without usage memory both sit at 0.5.
	wm, wom := meanShares(with, 9, 11), meanShares(without, 9, 11)
	assert.Greater(t, wm["product"][0], 0.65, "product's mean share, hours 9-11, with usage")
	assert.Less(t, wm["research"][0], 0.35, "research's mean share, hours 9-11, with usage")
	assert.Greater(t, wm["product"][1], 0.65, "product's mean fair share, hours 9-11, with usage")
	assert.InDelta(t, 0.5, wom["product"][0], 0.02, "product's mean share, hours 9-11, without usage")
	assert.InDelta(t, 0.5, wom["research"][0], 0.02, "research's mean share, hours 9-11, without usage")
	// Over the rest of the day the light user has run more than without.
	wd, wod := meanShares(with, 8, 24), meanShares(without, 8, 24)
	assert.Greater(t, wd["product"][0], wod["product"][0]+0.04, "product's mean share, hours 8-24")
	// It caught up: by the last hours the usages have evened out and the
	// shares are back at 0.5.
	late := meanShares(with, 20, 24)
	assert.InDelta(t, 0.5, late["product"][0], 0.02)
	assert.InDelta(t, 0.5, late["product"][2], 0.02, "product's usage, hours 20-24")
	assert.InDelta(t, 0.5, late["research"][2], 0.02, "research's usage, hours 20-24")
	t.Logf("hours 20-24 with usage: product share %.3f usage %.3f, research usage %.3f", late["product"][0], late["product"][2], late["research"][2])
	t.Logf("hours 9-11 with usage: product %.3f research %.3f; without: %.3f %.3f; hours 8-24 product %.3f vs %.3f",
		wm["product"][0], wm["research"][0], wom["product"][0], wom["research"][0], wd["product"][0], wod["product"][0])
}

// TestGroupsListedBeforeTheirParentsRun: a workload may list a group
// before its parent (the tree is judged whole); the run sets the tree up
// and reports every group, the child under its parent.
func TestGroupsListedBeforeTheirParentsRun(t *testing.T) {
	w, err := sim.ParseWorkload([]byte(treeWorkload(``,
		`{"name": "leaf-group", "parent": "mid"}, {"name": "mid", "parent": "top"}, {"name": "top"}`,
		`{"name": "A", "parent": "leaf-group"}`)))
	require.NoError(t, err)
	c, err := sim.ParseClusters([]byte(`{"clusters": [{"name": "c", "nodes": [{"name": "n", "resources": {"cpu": "4"}}]}]}`))
	require.NoError(t, err)
	out, err := sim.Run(context.Background(), sim.Config{Workload: w, Clusters: c})
	require.NoError(t, err)
	parents := map[string]string{}
	for _, g := range out.Groups {
		if g.Cycle == 0 {
			parents[g.Group] = g.Parent
			assert.InDelta(t, 0.25, g.Share, 1e-9, "group %s holds A's one cpu of four", g.Group)
		}
	}
	assert.Equal(t, map[string]string{"leaf-group": "mid", "mid": "top", "top": ""}, parents)
}
