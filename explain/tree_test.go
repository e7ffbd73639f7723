package explain

import (
	"bytes"
	"strconv"
	"testing"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/queue"
	"github.com/flotilla-sched/flotilla/scenario"
	"github.com/flotilla-sched/flotilla/scheduler"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// treeScenario: 4 nodes of 8 GPUs; research (limit 24 GPUs) holds nlp;
// prod (guaranteed 8 GPUs and 64 cpu, lends at most 2 GPUs) holds serving
// (the same guarantee, limit 12 GPUs);
// adhoc hangs from the root. Round 0 submits what the tests need.
const treeScenario = `{
  "nodes": [{"name": "node", "count": 4, "resources": {"cpu": "64", "nvidia.com/gpu": "8"}}],
  "groups": [
    {"name": "research", "limit": {"nvidia.com/gpu": "24"}},
    {"name": "prod", "guaranteed": {"nvidia.com/gpu": "8", "cpu": "64"}, "lendingLimit": {"nvidia.com/gpu": "2"}}
  ],
  "queues": [
    {"name": "nlp", "parent": "research"},
    {"name": "serving", "parent": "prod", "guaranteed": {"nvidia.com/gpu": "8", "cpu": "64"}, "limit": {"nvidia.com/gpu": "12"}},
    {"name": "adhoc"}
  ],
  "rounds": [{"submit": [
    {"id": "nlp", "queue": "nlp", "count": 25, "requests": {"cpu": "1", "nvidia.com/gpu": "1"}},
    {"id": "serving", "queue": "serving", "count": 13, "requests": {"cpu": "1", "nvidia.com/gpu": "1"}},
    {"id": "adhoc", "queue": "adhoc", "requests": {"cpu": "1", "nvidia.com/gpu": "1"}},
    {"id": "g", "queue": "nlp", "count": 2, "requests": {"cpu": "1", "nvidia.com/gpu": "1"}, "gang": {"id": "pair"}}
  ]}]
}`

// treeDecision is a hand-made decision of round 0: running holds the ids
// running at the round's start; the rest of the round's jobs are queued;
// result is what the scheduler decided.
func treeDecision(t *testing.T, running []string, res *scheduler.Result) (*scenario.Built, *scenario.Decision) {
	t.Helper()
	f, err := scenario.Parse([]byte(treeScenario))
	require.NoError(t, err)
	b, err := f.Build()
	require.NoError(t, err)
	store, err := queue.New(b.Schema, b.PriorityClasses, b.Settings.DefaultPriorityClass)
	require.NoError(t, err)
	snap := &scheduler.Snapshot{Nodes: b.Nodes, Queues: b.Queues, Groups: b.Groups, Queued: store}
	isRunning := map[string]bool{}
	for _, id := range running {
		isRunning[id] = true
	}
	for _, j := range b.Rounds[0].Submit {
		if isRunning[j.ID] {
			snap.Running = append(snap.Running, scheduler.Running{Job: j, Node: "node-0"})
		} else {
			require.NoError(t, store.Add(j))
		}
	}
	return b, &scenario.Decision{Round: 0, Snapshot: snap, Store: store, Result: res}
}

func jobOf(b *scenario.Built, id string) *flotilla.Job { return findJob(b, id) }

// numbered gives "nlp-0" … "nlp-(n-1)", the scenario's expanded ids.
func numbered(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = prefix + "-" + strconv.Itoa(i)
	}
	return out
}

func unscheduled(job *flotilla.Job, code scheduler.ReasonCode, node string) *scheduler.Result {
	return &scheduler.Result{UnscheduledJobs: []scheduler.Unscheduled{{Job: job, Reason: scheduler.Reason{Code: code, Message: node}}}}
}

// TestExplainNamesTheGroupWhoseLimitHoldsAJobBack: a job refused by its
// group's limit names the queue, the group, the resource and the numbers.
func TestExplainNamesTheGroupWhoseLimitHoldsAJobBack(t *testing.T) {
	b, d := treeDecision(t, numbered("nlp", 24), nil)
	job := jobOf(b, "nlp-24")
	d.Result = unscheduled(job, scheduler.ReasonLimit, "research")
	ex, err := explainDecision(b, d, job, nil)
	require.NoError(t, err)
	assert.Equal(t, "unschedulable", ex.State)
	assert.Equal(t, "not scheduled: queue nlp is at its limit of 24 nvidia.com/gpu in group research (the group holds 24, the job asks 1)", ex.Summary)
	assert.Equal(t, &Quota{Kind: "limit", Node: "research", NodeKind: "group", Resource: "nvidia.com/gpu", Limit: "24", Held: "24", Asks: "1"}, ex.Quota)
	var text bytes.Buffer
	require.NoError(t, ex.WriteText(&text))
	assert.Contains(t, text.String(), "  limit     group research: limit 24 nvidia.com/gpu, holds 24 after the round, the job asks 1\n")
	var js bytes.Buffer
	require.NoError(t, ex.WriteJSON(&js))
	assert.Contains(t, js.String(), `"quota": {`)
}

// TestExplainNamesTheQueueWhoseLimitHoldsAJobBack: at the queue's own
// limit, and for a gang, what the whole gang asks.
func TestExplainNamesTheQueueWhoseLimitHoldsAJobBack(t *testing.T) {
	b, d := treeDecision(t, numbered("serving", 12), nil)
	job := jobOf(b, "serving-12")
	d.Result = unscheduled(job, scheduler.ReasonLimit, "serving")
	ex, err := explainDecision(b, d, job, nil)
	require.NoError(t, err)
	assert.Equal(t, "not scheduled: queue serving is at its limit of 12 nvidia.com/gpu (it holds 12, the job asks 1)", ex.Summary)

	b, d = treeDecision(t, numbered("nlp", 23), nil)
	gang := jobOf(b, "g-0")
	d.Result = unscheduled(gang, scheduler.ReasonLimit, "research")
	ex, err = explainDecision(b, d, gang, nil)
	require.NoError(t, err)
	assert.Equal(t, "not scheduled: queue nlp is at its limit of 24 nvidia.com/gpu in group research (the group holds 23, its gang asks 2)", ex.Summary)
}

// TestExplainNamesTheNodeThatKeepsItsGuarantee: a lending-limit hold names
// the node that keeps part of its guarantee, and how much.
func TestExplainNamesTheNodeThatKeepsItsGuarantee(t *testing.T) {
	b, d := treeDecision(t, append(numbered("nlp", 24), "serving-0"), nil)
	job := jobOf(b, "adhoc")
	d.Result = unscheduled(job, scheduler.ReasonLendingLimit, "prod")
	ex, err := explainDecision(b, d, job, nil)
	require.NoError(t, err)
	assert.Equal(t, "not scheduled: group prod keeps 6 nvidia.com/gpu of its guarantee of 8 for its own queues (it lends at most 2 and holds 1); the job's 1 nvidia.com/gpu would eat into it", ex.Summary)
	assert.Equal(t, &Quota{Kind: "lending limit", Node: "prod", NodeKind: "group", Resource: "nvidia.com/gpu",
		Guaranteed: "8", LendingLimit: "2", Keeps: "6", Held: "1", Asks: "1"}, ex.Quota)
}

// TestExplainOtherReasonsHaveNoQuota: a reason that is not the tree's, or a
// node the tree does not have, leaves the summary as the reason says.
func TestExplainOtherReasonsHaveNoQuota(t *testing.T) {
	b, d := treeDecision(t, nil, nil)
	job := jobOf(b, "adhoc")
	for _, r := range []scheduler.Reason{{Code: scheduler.ReasonNoRoom}, {Code: scheduler.ReasonLimit, Message: "nobody"}} {
		d.Result = &scheduler.Result{UnscheduledJobs: []scheduler.Unscheduled{{Job: job, Reason: r}}}
		ex, err := explainDecision(b, d, job, nil)
		require.NoError(t, err)
		assert.Nil(t, ex.Quota)
		assert.Equal(t, "not scheduled: "+r.String(), ex.Summary)
	}
}

// TestExplainSaysWhichSideWentFirstWithinItsGuarantee: nlp's job preempted
// to fair share for serving's, with prod (the side below the root, where
// the two paths meet) within its guarantee after the round.
func TestExplainSaysWhichSideWentFirstWithinItsGuarantee(t *testing.T) {
	b, d := treeDecision(t, numbered("nlp", 25), nil)
	victim, by := jobOf(b, "nlp-0"), jobOf(b, "serving-0")
	d.Result = &scheduler.Result{
		Preempted: []scheduler.Preemption{{Job: victim, Node: "node-0", Reason: scheduler.PreemptedForFairShare, Share: 0.78, FairShare: 0.5, For: by}},
		Scheduled: []scheduler.Assignment{{Job: by, Node: "node-0"}},
	}
	ex, err := explainDecision(b, d, victim, nil)
	require.NoError(t, err)
	assert.Equal(t, "group prod", ex.Preempted.WentFirst)
	assert.Contains(t, ex.Summary, "; job serving-0 of queue serving took the room (group prod, within its guarantee, went first)")

	// Without a guarantee on the displacer's side, nothing is said.
	d.Result.Preempted[0].For = jobOf(b, "adhoc")
	d.Result.Scheduled[0].Job = jobOf(b, "adhoc")
	ex, err = explainDecision(b, d, victim, nil)
	require.NoError(t, err)
	assert.Empty(t, ex.Preempted.WentFirst)
	assert.NotContains(t, ex.Summary, "went first")
}
