package scenario

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/queue"
	"github.com/flotilla-sched/flotilla/scheduler"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// treeFile is a valid scenario with a queue tree: groups research
// (guaranteed 16 cpu, limit 24) and prod under the root, queue A in
// research (guaranteed 8), B in prod, C at the root.
func treeFile() *File {
	f := baseFile()
	f.Groups = []GroupSpec{
		{Name: "research", Guaranteed: map[string]string{"cpu": "16"}, Limit: map[string]string{"cpu": "24"}},
		{Name: "prod", PriorityFactor: ptr(0.5)},
	}
	f.Queues = []QueueSpec{
		{Name: "A", Parent: "research", Guaranteed: map[string]string{"cpu": "8"}, LendingLimit: map[string]string{"cpu": "4"}},
		{Name: "B", Parent: "prod", Limit: map[string]string{"memory": "64"}},
		{Name: "C"},
	}
	return f
}

func TestTreeFileIsValid(t *testing.T) {
	_, err := Parse(marshal(t, treeFile()))
	require.NoError(t, err)
}

// TestValidateTreeRules: every problem of the queue tree's list is reported
// at the field that holds it, with its class, through JSON and from Go.
func TestValidateTreeRules(t *testing.T) {
	cases := []struct {
		name  string
		edit  func(f *File)
		field string
		err   error
	}{
		{"queue's unknown parent", func(f *File) { f.Queues[2].Parent = "reserch" }, "queues[2].parent", flotilla.ErrUnknownName},
		{"group's unknown parent", func(f *File) { f.Groups[1].Parent = "nobody" }, "groups[1].parent", flotilla.ErrUnknownName},
		{"parent is a queue", func(f *File) { f.Queues[1].Parent = "C" }, "queues[1].parent", flotilla.ErrInconsistent},
		{"group's parent is a queue", func(f *File) { f.Groups[1].Parent = "A" }, "groups[1].parent", flotilla.ErrInconsistent},
		{"cycle", func(f *File) { f.Groups[0].Parent, f.Groups[1].Parent = "prod", "research" }, "groups[0].parent", flotilla.ErrInconsistent},
		{"group is its own parent", func(f *File) { f.Groups[1].Parent = "prod" }, "groups[1].parent", flotilla.ErrInconsistent},
		{"queue named as a group", func(f *File) { f.Queues[2].Name = "prod"; f.Rounds = nil }, "queues[2].name", flotilla.ErrDuplicate},
		{"two groups of one name", func(f *File) { f.Groups[1].Name = "research"; f.Queues[1].Parent = "" }, "groups[1].name", flotilla.ErrDuplicate},
		{"unnamed group", func(f *File) { f.Groups[1].Name = ""; f.Queues[1].Parent = "" }, "groups[1].name", flotilla.ErrRequired},
		{"group's priority factor", func(f *File) { f.Groups[1].PriorityFactor = ptr(-2.0) }, "groups[1].priorityFactor", flotilla.ErrOutOfRange},
		{"limit below guarantee", func(f *File) { f.Queues[0].Limit = map[string]string{"cpu": "6"} }, "queues[0].limit.cpu", flotilla.ErrInconsistent},
		{"group limit below its children's guarantee", func(f *File) {
			f.Groups[0].Guaranteed = nil
			f.Groups[0].Limit = map[string]string{"cpu": "7"}
		}, "groups[0].limit.cpu", flotilla.ErrInconsistent},
		{"lending limit above guarantee", func(f *File) { f.Queues[0].LendingLimit = map[string]string{"cpu": "9"} }, "queues[0].lendingLimit.cpu", flotilla.ErrInconsistent},
		{"lending limit without guarantee", func(f *File) { f.Queues[2].LendingLimit = map[string]string{"memory": "1"} }, "queues[2].lendingLimit.memory", flotilla.ErrInconsistent},
		{"children above a group's guarantee", func(f *File) { f.Groups[0].Guaranteed = map[string]string{"cpu": "4"} }, "groups[0].guaranteed.cpu", flotilla.ErrInconsistent},
		{"usage above 1", func(f *File) { f.Queues[1].Usage = 1.5 }, "queues[1].usage", flotilla.ErrOutOfRange},
		{"negative usage", func(f *File) { f.Queues[1].Usage = -0.25 }, "queues[1].usage", flotilla.ErrOutOfRange},
		{"negative usage weight", func(f *File) { f.Config.UsageHalfLife, f.Config.UsageWeight = "1h", -1 }, "config.usageWeight", flotilla.ErrOutOfRange},
		{"usage weight without half-life", func(f *File) { f.Config.UsageWeight = 2 }, "config.usageWeight", flotilla.ErrInconsistent},
		{"malformed half-life", func(f *File) { f.Config.UsageHalfLife = "an hour" }, "config.usageHalfLife", flotilla.ErrMalformed},
		{"negative half-life", func(f *File) { f.Config.UsageHalfLife = "-1h" }, "config.usageHalfLife", flotilla.ErrOutOfRange},
		{"unknown resource in a quota", func(f *File) { f.Groups[0].Limit["nvidia.com/gpu"] = "8" }, "groups[0].limit.nvidia.com/gpu", flotilla.ErrUnknownResource},
		{"malformed quota", func(f *File) { f.Queues[0].Guaranteed["cpu"] = "eight" }, "queues[0].guaranteed.cpu", flotilla.ErrMalformed},
		{"negative quota", func(f *File) { f.Queues[1].Limit["memory"] = "-1" }, "queues[1].limit.memory", flotilla.ErrNegative},
		{"unnamed resource in a quota", func(f *File) { f.Groups[1].Guaranteed = map[string]string{"": "1"} }, "groups[1].guaranteed", flotilla.ErrRequired},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := treeFile()
			tc.edit(f)
			parsed, err := Parse(marshal(t, f))
			assert.Nil(t, parsed)
			requireFieldError(t, err, tc.field, tc.err)
			requireAllFieldErrors(t, err)
			b, err := f.Build()
			assert.Nil(t, b)
			requireFieldError(t, err, tc.field, tc.err)
		})
	}
}

// TestValidateTreeMessagesNameFieldAndValue: the value is the one the file
// writes (a quantity, "-1h" rather than "-1h0m0s").
func TestValidateTreeMessagesNameFieldAndValue(t *testing.T) {
	f := treeFile()
	f.Config.UsageHalfLife = "-90m"
	f.Queues[0].Limit = map[string]string{"cpu": "6"}
	f.Queues[2].Parent = "reserch"
	err := f.Validate()
	require.Error(t, err)
	msg := err.Error()
	for _, want := range []string{`config.usageHalfLife "-90m"`, `queues[0].limit.cpu "6"`, `queues[2].parent "reserch"`} {
		assert.Contains(t, msg, want)
	}
	assert.NotContains(t, msg, "1h30m0s")
}

// TestValidateTreeReportsEveryProblemOnce: tree problems come with the
// others, all at once, and a problem both the queue's own check and the
// tree's see (a duplicate queue name, a bad priority factor) once.
func TestValidateTreeReportsEveryProblemOnce(t *testing.T) {
	f := treeFile()
	f.Queues[1].Name = "A"
	f.Queues[2].PriorityFactor = ptr(-1.0)
	f.Groups[1].Parent = "nobody"
	f.Queues[0].Usage = 2
	f.Rounds[1].Submit[0].Queue = "Z"
	err := f.Validate()
	requireFieldError(t, err, "queues[1].name", flotilla.ErrDuplicate)
	requireFieldError(t, err, "queues[2].priorityFactor", flotilla.ErrNegative)
	requireFieldError(t, err, "groups[1].parent", flotilla.ErrUnknownName)
	requireFieldError(t, err, "queues[0].usage", flotilla.ErrOutOfRange)
	requireFieldError(t, err, "rounds[1].submit[0].queue", flotilla.ErrUnknownName)
	assert.Len(t, leaves(err), 5, "%v", err)
}

// TestValidateTreeAccepts: a group without a guarantee takes its children's;
// a guarantee sum above the cluster is scaled at run time, not refused; a
// limit of 0 and usage seeds without a half-life are allowed.
func TestValidateTreeAccepts(t *testing.T) {
	for name, edit := range map[string]func(f *File){
		"group guarantee from children": func(f *File) { f.Groups[0].Guaranteed = nil },
		"guarantees above the cluster": func(f *File) {
			f.Groups[0].Guaranteed, f.Groups[0].Limit = map[string]string{"cpu": "640"}, nil
			f.Queues[0].Guaranteed = map[string]string{"cpu": "600"}
		},
		"limit of zero":            func(f *File) { f.Queues[2].Limit = map[string]string{"cpu": "0"} },
		"usage without half-life":  func(f *File) { f.Queues[2].Usage = 0.5 },
		"usage on, default weight": func(f *File) { f.Config.UsageHalfLife = "1h" },
		"empty quota maps": func(f *File) {
			f.Queues[2].Guaranteed, f.Queues[2].Limit = map[string]string{}, map[string]string{}
		},
	} {
		t.Run(name, func(t *testing.T) {
			f := treeFile()
			edit(f)
			_, err := Parse(marshal(t, f))
			require.NoError(t, err)
		})
	}
}

func TestBuildTree(t *testing.T) {
	f := treeFile()
	f.Config.UsageHalfLife = "30m"
	f.Queues[1].Usage = 0.25
	b := build(t, f)
	abs := flotilla.Absent
	require.Len(t, b.Groups, 2)
	assert.Equal(t, &flotilla.QueueGroup{Name: "research", PriorityFactor: 1,
		Guaranteed: flotilla.Resources{16000, abs}, Limit: flotilla.Resources{24000, abs}}, b.Groups[0])
	assert.Equal(t, &flotilla.QueueGroup{Name: "prod", PriorityFactor: 0.5}, b.Groups[1])
	a := b.Queues[0]
	assert.Equal(t, "research", a.Parent)
	assert.Equal(t, flotilla.Resources{8000, abs}, a.Guaranteed)
	assert.Equal(t, flotilla.Resources{4000, abs}, a.LendingLimit)
	assert.Nil(t, a.Limit)
	assert.Equal(t, flotilla.Resources{abs, 64}, b.Queues[1].Limit)
	assert.Equal(t, "", b.Queues[2].Parent)
	assert.Equal(t, map[string]float64{"B": 0.25}, b.Usage)
	assert.Equal(t, 30*time.Minute, b.Settings.UsageHalfLife)
	assert.True(t, b.Settings.UsageOn())
	cfg := b.SchedulerConfig()
	assert.Equal(t, 30*time.Minute, cfg.UsageHalfLife)
	assert.Equal(t, 0.0, cfg.UsageWeight, "0 means 1 to the scheduler")
	assert.Equal(t, 1.0, b.TreeSpec().UsageWeight, "the tree spec resolves the default")

	flat := build(t, baseFile())
	assert.Nil(t, flat.Groups)
	assert.Nil(t, flat.Usage)
	assert.False(t, flat.Settings.UsageOn())
}

// TestRunHandsTheTreeToTheScheduler: every round's snapshot carries the
// groups; round 0's usage is the file's seeds with no time passed, and each
// later round's is the previous round's Result.Usage.
func TestRunHandsTheTreeToTheScheduler(t *testing.T) {
	f := treeFile()
	f.Config.UsageHalfLife = "1h"
	f.Queues[0].Usage, f.Queues[2].Usage = 0.5, 0.125
	f.Rounds = append(f.Rounds, Round{})
	b := build(t, f)
	var prev *scheduler.Result
	rounds := 0
	err := RunInspect(context.Background(), b, func(d *Decision) error {
		rounds++
		assert.Equal(t, b.Groups, d.Snapshot.Groups)
		if d.Round == 0 {
			assert.Equal(t, scheduler.UsageState{Usage: map[string]float64{"A": 0.5, "C": 0.125}}, d.Snapshot.Usage)
		} else {
			assert.Equal(t, prev.Usage, d.Snapshot.Usage)
		}
		prev = d.Result
		return nil
	}, func(*RoundOutput) error { return nil })
	require.NoError(t, err)
	assert.Equal(t, 3, rounds)
	assert.Equal(t, map[string]float64{"A": 0.5, "C": 0.125}, b.Usage, "the run leaves the seeds alone")
}

// treeRoundOutput applies a hand-made scheduler result to the first round
// of treeFile (usage on), as the runner does after the scheduler decides.
func treeRoundOutput(t *testing.T, usageOn bool) RoundOutput {
	f := treeFile()
	if usageOn {
		f.Config.UsageHalfLife = "1h"
	}
	f.Queues[2].Parent = "prod"
	f.Groups[1].Parent = "research" // research ⊃ {A, prod ⊃ {B, C}}
	f.Rounds[0].Submit = []JobTemplate{
		{ID: "a", Queue: "A", Count: ptr(2), Requests: map[string]string{"cpu": "2"}},
		{ID: "b", Queue: "B", Requests: map[string]string{"cpu": "1", "memory": "8"}},
		{ID: "c", Queue: "C", Count: ptr(2), Requests: map[string]string{"cpu": "4"}},
	}
	f.Rounds = f.Rounds[:1]
	b := build(t, f)
	store := newStore(t, b)
	for _, j := range b.Rounds[0].Submit {
		require.NoError(t, store.Add(j))
	}
	st := &runState{b: b, store: store, running: map[string]int{}}
	res := &scheduler.Result{
		Queues: []scheduler.QueueReport{{Share: 0.1, Usage: 0.2}, {Share: 0.05, Usage: 0.125}, {Usage: 0.5}},
		Groups: []scheduler.GroupReport{
			{Name: "research", Share: 0.15, FairShare: 0.6, AdjustedFairShare: 0.55},
			{Name: "prod", Parent: "research", Share: 0.05, FairShare: 0.3, AdjustedFairShare: 0.25},
		},
	}
	for _, j := range b.Rounds[0].Submit[:3] { // a-0, a-1, b
		res.Scheduled = append(res.Scheduled, scheduler.Assignment{Job: j, Node: "node-0"})
	}
	ro, err := st.apply(0, &b.Rounds[0], res)
	require.NoError(t, err)
	return ro
}

// TestRunReportsGroupsAndUsage: a group's running, queued, allocated and
// usage sum every queue below it (nested groups included); its shares are
// the scheduler's; queues carry their parent and usage.
func TestRunReportsGroupsAndUsage(t *testing.T) {
	ro := treeRoundOutput(t, true)
	require.Len(t, ro.Queues, 3)
	assert.Equal(t, "research", ro.Queues[0].Parent)
	assert.Equal(t, "prod", ro.Queues[2].Parent)
	require.NotNil(t, ro.Queues[1].Usage)
	assert.Equal(t, 0.125, *ro.Queues[1].Usage)
	u := func(v float64) *float64 { return &v }
	assert.Equal(t, []GroupReport{
		{Name: "research", Running: 3, Queued: 2, Allocated: map[string]string{"cpu": "5", "memory": "8"},
			Share: 0.15, FairShare: 0.6, AdjustedFairShare: 0.55, Usage: u(0.2 + 0.125 + 0.5)},
		{Name: "prod", Parent: "research", Running: 1, Queued: 2, Allocated: map[string]string{"cpu": "1", "memory": "8"},
			Share: 0.05, FairShare: 0.3, AdjustedFairShare: 0.25, Usage: u(0.125 + 0.5)},
	}, ro.Groups)

	off := treeRoundOutput(t, false)
	for _, q := range off.Queues {
		assert.Nil(t, q.Usage, "usage only with usage memory on")
	}
	for _, g := range off.Groups {
		assert.Nil(t, g.Usage)
	}
}

// TestWriteJSONTree: parent and usage appear only when set, groups only
// when the file has them; the stream writes the same bytes.
func TestWriteJSONTree(t *testing.T) {
	ro := treeRoundOutput(t, true)
	var whole bytes.Buffer
	require.NoError(t, WriteJSON(&whole, &Output{Rounds: []RoundOutput{ro}}))
	s := whole.String()
	assert.Contains(t, s, `"parent": "research"`)
	assert.Contains(t, s, `"usage": 0.125`)
	assert.Contains(t, s, "\"groups\": [\n        {\n          \"name\": \"research\",\n          \"running\": 3,")
	var streamed bytes.Buffer
	js := NewJSONStream(&streamed)
	require.NoError(t, js.WriteRound(&ro))
	require.NoError(t, js.Close())
	assert.Equal(t, s, streamed.String())
	back, err := ParseOutput(whole.Bytes())
	require.NoError(t, err)
	assert.Equal(t, ro.Groups, back.Rounds[0].Groups)

	flat := smallOutput()
	var b bytes.Buffer
	require.NoError(t, WriteJSON(&b, flat))
	for _, absent := range []string{`"groups"`, `"parent"`, `"usage"`} {
		assert.NotContains(t, b.String(), absent)
	}
}

func TestWriteTableTree(t *testing.T) {
	ro := treeRoundOutput(t, true)
	var buf bytes.Buffer
	require.NoError(t, WriteTable(&buf, &Output{Rounds: []RoundOutput{ro}}))
	lines := strings.Split(buf.String(), "\n")
	assert.Equal(t, []string{
		"round 0: 3 scheduled, 0 preempted, 2 unschedulable; 3 running, 2 queued at the end",
		"  QUEUE     PARENT    RUNNING  QUEUED  ALLOCATED       SHARE  FAIR SHARE  ADJUSTED FAIR SHARE  USAGE",
		"  A         research  2        0       cpu=4           0.100  0.000       0.000                0.200",
		"  B         prod      1        0       cpu=1 memory=8  0.050  0.000       0.000                0.125",
		"  C         prod      0        2       -               0.000  0.000       0.000                0.500",
		"  GROUP     PARENT    RUNNING  QUEUED  ALLOCATED       SHARE  FAIR SHARE  ADJUSTED FAIR SHARE  USAGE",
		"  research  -         3        2       cpu=5 memory=8  0.150  0.600       0.550                0.825",
		"  prod      research  1        2       cpu=1 memory=8  0.050  0.300       0.250                0.625",
	}, lines[:8])
}

func newStore(t *testing.T, b *Built) *queue.Store {
	t.Helper()
	s, err := queue.New(b.Schema, b.PriorityClasses, b.Settings.DefaultPriorityClass)
	require.NoError(t, err)
	return s
}
