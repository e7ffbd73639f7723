package scenario

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/flotilla-sched/flotilla"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func build(t *testing.T, f *File) *Built {
	t.Helper()
	parsed, err := Parse(marshal(t, f))
	require.NoError(t, err)
	b, err := parsed.Build()
	require.NoError(t, err)
	return b
}

func jobIDs(js []*flotilla.Job) []string {
	ids := make([]string, len(js))
	for i, j := range js {
		ids[i] = j.ID
	}
	return ids
}

func TestBuildDefaults(t *testing.T) {
	b := build(t, baseFile())
	assert.Equal(t, Settings{
		Fairness:                     FairnessDRF,
		ProtectedFractionOfFairShare: 1,
		EvictionProbability:          1,
		MaxQueueLookback:             100000,
		DefaultPriorityClass:         flotilla.ArmadaDefault,
		RoundDuration:                time.Second,
		Seed:                         1,
		Strategy:                     StrategyProgressiveFilling,
	}, b.Settings)
	assert.Equal(t, flotilla.DefaultPriorityClasses(), b.PriorityClasses)
	assert.Equal(t, time.Unix(0, 0).UTC(), b.Start)
	require.Len(t, b.Queues, 2)
	assert.Equal(t, &flotilla.Queue{Name: "A", PriorityFactor: 1}, b.Queues[0])
}

func TestBuildExplicitZerosAreKept(t *testing.T) {
	f := baseFile()
	f.Config.ProtectedFractionOfFairShare = ptr(0.0)
	f.Config.EvictionProbability = ptr(0.0)
	f.Config.MaxQueueLookback = ptr(0)
	f.Config.Seed = ptr(uint64(0))
	f.Config.RoundDuration = "0s"
	s := build(t, f).Settings
	assert.Zero(t, s.ProtectedFractionOfFairShare)
	assert.Zero(t, s.EvictionProbability)
	assert.Zero(t, s.MaxQueueLookback)
	assert.Zero(t, s.Seed)
	assert.Zero(t, s.RoundDuration)
}

func TestBuildSettings(t *testing.T) {
	f := baseFile()
	f.Config = Config{
		Fairness:                          FairnessAsset,
		ResourceWeights:                   map[string]float64{"cpu": 1, "memory": 0},
		IndexedResources:                  []IndexedResource{{Name: "memory", Resolution: "100"}, {Name: "cpu"}},
		ProtectedFractionOfFairShare:      ptr(0.5),
		EvictionProbability:               ptr(0.25),
		MaxQueueLookback:                  ptr(7),
		MaximumResourceFractionToSchedule: map[string]float64{"cpu": 0.5},
		MaximumSchedulingRate:             10, MaximumSchedulingBurst: 20,
		MaximumPerQueueSchedulingRate: 1, MaximumPerQueueSchedulingBurst: 2,
		EnablePreferLargeJobOrdering: true,
		DefaultPriorityClass:         flotilla.ArmadaPreemptible,
		RequeuePreempted:             true,
		RoundDuration:                "250ms",
		Seed:                         ptr(uint64(42)),
		Strategy:                     StrategyLottery,
		PriorityHalftime:             "10m",
		UseProbabilisticSchedulingForAllResources: true,
	}
	b := build(t, f)
	assert.Equal(t, Settings{
		Fairness:                          FairnessAsset,
		ResourceWeights:                   map[string]float64{"cpu": 1, "memory": 0},
		IndexedResources:                  []ResourceResolution{{Name: "memory", Resolution: 100}, {Name: "cpu", Resolution: 1}},
		ProtectedFractionOfFairShare:      0.5,
		EvictionProbability:               0.25,
		MaxQueueLookback:                  7,
		MaximumResourceFractionToSchedule: map[string]float64{"cpu": 0.5},
		MaximumSchedulingRate:             10, MaximumSchedulingBurst: 20,
		MaximumPerQueueSchedulingRate: 1, MaximumPerQueueSchedulingBurst: 2,
		EnablePreferLargeJobOrdering: true,
		DefaultPriorityClass:         flotilla.ArmadaPreemptible,
		RequeuePreempted:             true,
		RoundDuration:                250 * time.Millisecond,
		Seed:                         42,
		Strategy:                     StrategyLottery,
		PriorityHalftime:             10 * time.Minute,
		UseProbabilisticSchedulingForAllResources: true,
	}, b.Settings)
	assert.Equal(t, b.Start.Add(250*time.Millisecond), b.Rounds[1].Time)
	assert.Equal(t, flotilla.ArmadaPreemptible, b.Rounds[0].Submit[0].PriorityClass, "default class applied")
}

func TestBuildSchemaOrder(t *testing.T) {
	f := baseFile()
	f.Nodes = []NodeTemplate{
		{Name: "gpu", Resources: map[string]string{"nvidia.com/gpu": "8", "memory": "512", "cpu": "64"}},
		{Name: "cpu", Resources: map[string]string{"ephemeral-storage": "100", "cpu": "32"}},
		{Name: "none", Count: ptr(0), Resources: map[string]string{"amd.com/gpu": "1"}},
	}
	b := build(t, f)
	assert.Equal(t, []string{"cpu", "amd.com/gpu", "ephemeral-storage", "memory", "nvidia.com/gpu"}, b.Schema.Names())
	require.Len(t, b.Nodes, 2)
	assert.Equal(t, b.Schema.MustParse(map[string]string{"nvidia.com/gpu": "8", "memory": "512", "cpu": "64"}), b.Nodes[0].Total)

	f.Nodes = []NodeTemplate{{Name: "n", Resources: map[string]string{"memory": "1", "b": "1", "a": "1"}}}
	f.Rounds = nil
	assert.Equal(t, []string{"a", "b", "memory"}, build(t, f).Schema.Names())
}

func TestBuildNodes(t *testing.T) {
	f := baseFile()
	f.Nodes = append(f.Nodes, NodeTemplate{
		Name: "gpu", Cluster: "east", Resources: map[string]string{"cpu": "8"},
		Labels: map[string]string{"zone": "a"}, Unschedulable: true,
		Taints: []Taint{{Key: "gpu", Value: "true", Effect: "NoSchedule"}},
	})
	b := build(t, f)
	require.Len(t, b.Nodes, 3)
	assert.Equal(t, "node-0", b.Nodes[0].Name)
	assert.Equal(t, "node-1", b.Nodes[1].Name)
	assert.Equal(t, flotilla.Resources{32000, 128}, b.Nodes[1].Total, "cpu in milli-units, memory in bytes")
	assert.Equal(t, &flotilla.Node{
		Name: "gpu", Cluster: "east", Labels: map[string]string{"zone": "a"}, Unschedulable: true,
		Taints: []flotilla.Taint{{Key: "gpu", Value: "true", Effect: flotilla.TaintNoSchedule}},
		Total:  flotilla.Resources{8000, 0},
	}, b.Nodes[2])
	b.Nodes[0].Total[0] = 1
	assert.Equal(t, int64(32000), b.Nodes[1].Total[0], "nodes of one template do not share vectors")
}

func TestBuildJobs(t *testing.T) {
	f := baseFile()
	f.Rounds[1].Submit = append(f.Rounds[1].Submit, JobTemplate{
		ID: "g", Queue: "A", JobSet: "s1", Count: ptr(3), PriorityClass: flotilla.ArmadaPreemptible, Priority: 5,
		Requests:     map[string]string{"cpu": "2", "memory": "4"},
		NodeSelector: map[string]string{"zone": "a"},
		Tolerations:  []Toleration{{Key: "gpu", Value: "true"}, {Operator: "Exists", Effect: "NoExecute"}},
		Gang:         &GangSpec{ID: "gang", NodeUniformityLabel: "zone"},
	})
	b := build(t, f)
	require.Len(t, b.Rounds, 2)
	r0, r1 := b.Rounds[0], b.Rounds[1]
	assert.Equal(t, []string{"a-0", "a-1", "a-2", "a-3"}, jobIDs(r0.Submit))
	assert.Equal(t, []string{"b", "g-0", "g-1", "g-2"}, jobIDs(r1.Submit))
	assert.Equal(t, b.Start, r0.Time)
	assert.Equal(t, b.Start.Add(time.Second), r1.Time)
	assert.Equal(t, []string{"a-0"}, r1.Finish)
	assert.Equal(t, []string{"a-1"}, r1.Cancel)
	assert.Nil(t, r0.Finish)

	a0 := r0.Submit[0]
	assert.Equal(t, &flotilla.Job{
		ID: "a-0", Queue: "A", PriorityClass: flotilla.ArmadaDefault, SubmitTime: b.Start,
		Requests: flotilla.Resources{1000, 0},
	}, a0)
	assert.False(t, a0.IsGang())
	a0.Requests[0] = 7
	assert.Equal(t, int64(1000), r0.Submit[1].Requests[0], "jobs of one template do not share requests")

	g1 := r1.Submit[2]
	assert.Equal(t, &flotilla.Job{
		ID: "g-1", Queue: "A", JobSet: "s1", PriorityClass: flotilla.ArmadaPreemptible, Priority: 5,
		SubmitTime: b.Start.Add(time.Second + 2), // the round's third job

		Requests:     flotilla.Resources{2000, 4},
		NodeSelector: map[string]string{"zone": "a"},
		Tolerations: []flotilla.Toleration{
			{Key: "gpu", Operator: flotilla.TolerationEqual, Value: "true"},
			{Operator: flotilla.TolerationExists, Effect: flotilla.TaintNoExecute},
		},
		Gang: flotilla.Gang{ID: "gang", Cardinality: 3, NodeUniformityLabel: "zone"},
	}, g1)
}

func TestBuildGangOverTemplates(t *testing.T) {
	f := baseFile()
	f.Rounds[0].Submit = []JobTemplate{
		{ID: "x", Queue: "A", Count: ptr(2), Requests: map[string]string{"cpu": "1"}, Gang: &GangSpec{ID: "g"}},
		{ID: "y", Queue: "B", Requests: map[string]string{"cpu": "1"}},
		{ID: "z", Queue: "A", Requests: map[string]string{"cpu": "4"}, Gang: &GangSpec{ID: "g", Cardinality: 3}},
	}
	f.Rounds[1].Finish, f.Rounds[1].Cancel = []string{"x-0"}, []string{"z"}
	b := build(t, f)
	for _, j := range b.Rounds[0].Submit {
		if j.ID == "y" {
			assert.False(t, j.IsGang())
			continue
		}
		assert.Equal(t, flotilla.Gang{ID: "g", Cardinality: 3}, j.Gang, j.ID)
	}
}

func TestBuildReturnsFreshValues(t *testing.T) {
	f := baseFile()
	f.Queues[0].LimitsByPriorityClass = map[string]map[string]float64{flotilla.ArmadaDefault: {"cpu": 0.5}}
	f.Nodes[0].Labels = map[string]string{"zone": "a"}
	b1 := build(t, f)
	b1.Queues[0].LimitsByPriorityClass[flotilla.ArmadaDefault]["cpu"] = 1
	b1.Nodes[0].Labels["zone"] = "b"
	b1.PriorityClasses[0].Name = "changed"
	b2, err := f.Build()
	require.NoError(t, err)
	assert.Equal(t, 0.5, b2.Queues[0].LimitsByPriorityClass[flotilla.ArmadaDefault]["cpu"])
	assert.Equal(t, "a", b2.Nodes[0].Labels["zone"])
	assert.Equal(t, 0.5, f.Queues[0].LimitsByPriorityClass[flotilla.ArmadaDefault]["cpu"])
	assert.Equal(t, flotilla.ArmadaDefault, b2.PriorityClasses[0].Name)
}

func TestBuildNil(t *testing.T) {
	var f *File
	b, err := f.Build()
	assert.Nil(t, b)
	requireFieldError(t, err, RootField, flotilla.ErrRequired)
}

// TestBuildTiesKeepSubmitOrderJobsByIndex: SCENARIOS.md, "Submit time is
// the round's time ... and ties keep that order" (templates in the order
// listed, a template's jobs by index). With room for 10 of 12 one-cpu jobs,
// a-0 … a-9 start and a-10, a-11 wait.
func TestBuildTiesKeepSubmitOrderJobsByIndex(t *testing.T) {
	out, err := runDoc(t, `{
	  "nodes": [{"name": "n", "resources": {"cpu": "10"}}],
	  "queues": [{"name": "A"}],
	  "rounds": [{"submit": [{"id": "a", "queue": "A", "count": 12, "requests": {"cpu": "1"}}]}]
	}`)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range out.Rounds[0].Scheduled {
		got = append(got, s.Job)
	}
	var want []string
	for i := range 10 {
		want = append(want, fmt.Sprintf("a-%d", i))
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("scheduled %v, want %v (submit order)", got, want)
	}
}

// TestBuildTiesKeepSubmitOrderTemplatesInFileOrder: templates go in the
// order listed, so a template listed first goes first even when its ids
// sort later.
func TestBuildTiesKeepSubmitOrderTemplatesInFileOrder(t *testing.T) {
	out, err := runDoc(t, `{
	  "nodes": [{"name": "n", "resources": {"cpu": "1"}}],
	  "queues": [{"name": "A"}],
	  "rounds": [{"submit": [
	    {"id": "zeta", "queue": "A", "requests": {"cpu": "1"}},
	    {"id": "alpha", "queue": "A", "requests": {"cpu": "1"}}
	  ]}]
	}`)
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Rounds[0].Scheduled) != 1 || out.Rounds[0].Scheduled[0].Job != "zeta" {
		t.Errorf("scheduled %+v, want zeta (listed first)", out.Rounds[0].Scheduled)
	}
}

// A gang may mix priority classes (Armada orders it by its members' lowest
// class priority and binds each member at its own class): the format
// accepts it, every member keeps its own class, and the gang is scheduled
// whole or not at all.
func TestGangMayMixPriorityClassesAndIsScheduledWhole(t *testing.T) {
	doc := func(nodeCPU string) []byte {
		return []byte(`{
  "nodes": [{"name": "n", "count": 2, "resources": {"cpu": "` + nodeCPU + `"}}],
  "queues": [{"name": "A"}],
  "rounds": [{"submit": [
    {"id": "x", "queue": "A", "priorityClass": "armada-default", "requests": {"cpu": "2"}, "gang": {"id": "g"}},
    {"id": "y", "queue": "A", "priorityClass": "armada-preemptible", "count": 2, "requests": {"cpu": "1"}, "gang": {"id": "g"}}
  ]}]
}`)
	}
	run := func(nodeCPU string) []string {
		f, err := Parse(doc(nodeCPU))
		require.NoError(t, err)
		b, err := f.Build()
		require.NoError(t, err)
		classes := map[string]string{}
		for _, j := range b.Rounds[0].Submit {
			classes[j.ID] = j.PriorityClass
			assert.Equal(t, flotilla.Gang{ID: "g", Cardinality: 3}, j.Gang, j.ID)
		}
		assert.Equal(t, map[string]string{"x": flotilla.ArmadaDefault, "y-0": flotilla.ArmadaPreemptible, "y-1": flotilla.ArmadaPreemptible}, classes)
		out, err := Run(context.Background(), b)
		require.NoError(t, err)
		var got []string
		for _, p := range out.Rounds[0].Scheduled {
			got = append(got, p.Job)
		}
		slices.Sort(got)
		return got
	}
	assert.Equal(t, []string{"x", "y-0", "y-1"}, run("2"), "two 2-cpu nodes hold the gang")
	assert.Empty(t, run("1500m"), "no node holds x: no member is scheduled")
}

// TestScenarioOf100000NodesOf4TiBRuns: a scenario at the node limit, 100,000
// nodes of 64 cpu and 4Ti (4.4·10^17 bytes of memory in all, which
// overflowed an int64 of milli-bytes), builds and runs; two queues of
// whole-node jobs hold exactly what they asked for, 10,000 × 4Ti each.
func TestScenarioOf100000NodesOf4TiBRuns(t *testing.T) {
	if testing.Short() {
		t.Skip("100,000 nodes")
	}
	doc := `{"nodes": [{"name": "node", "count": 100000, "resources": {"cpu": "64", "memory": "4Ti"}}],
		"queues": [{"name": "A"}, {"name": "B"}],
		"rounds": [{"submit": [
			{"id": "a", "queue": "A", "count": 10000, "requests": {"cpu": "64", "memory": "4Ti"}},
			{"id": "b", "queue": "B", "count": 10000, "requests": {"cpu": "64", "memory": "4Ti"}}]}]}`
	f, err := Parse([]byte(doc))
	require.NoError(t, err)
	b, err := f.Build()
	require.NoError(t, err)
	require.Len(t, b.Nodes, MaxNodes)
	assert.Equal(t, flotilla.Resources{64_000, 4 << 40}, b.Nodes[0].Total)
	var rounds int
	require.NoError(t, RunStream(context.Background(), b, func(r *RoundOutput) error {
		rounds++
		assert.Len(t, r.Scheduled, 20_000)
		assert.Empty(t, r.Unschedulable)
		for _, q := range r.Queues {
			assert.Equal(t, 10_000, q.Running, q.Name)
			assert.Equal(t, map[string]string{"cpu": "625Ki", "memory": "40000Ti"}, q.Allocated, q.Name)
			assert.Equal(t, 0.1, q.Share, q.Name)
			assert.Equal(t, 0.5, q.FairShare, q.Name)
		}
		return nil
	}))
	assert.Equal(t, 1, rounds)
}
