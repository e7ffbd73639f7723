package explain

import (
	"fmt"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/fairness"
	"github.com/flotilla-sched/flotilla/scenario"
	"github.com/flotilla-sched/flotilla/scheduler"
)

// Quota is the node of the queue tree that held a job back: a limit on
// the job's path it would exceed, or an idle guarantee another node keeps
// for itself (its lending limit). Quantities are in the resource's
// grammar; what a node holds is counted at the end of the round.
type Quota struct {
	// Kind is "limit" or "lending limit" (the reason's code).
	Kind string `json:"kind"`
	// Node is the queue or group; NodeKind says which ("queue" | "group").
	Node     string `json:"node"`
	NodeKind string `json:"nodeKind"`
	// Resource is the resource that binds.
	Resource string `json:"resource,omitempty"`
	// Limit is the node's limit in Resource (kind limit).
	Limit string `json:"limit,omitempty"`
	// Guaranteed, LendingLimit and Keeps are the node's effective
	// guarantee, its lending limit and the part of its guarantee it keeps
	// for its own queues, guaranteed − lendingLimit (kind lending limit).
	Guaranteed   string `json:"guaranteed,omitempty"`
	LendingLimit string `json:"lendingLimit,omitempty"`
	Keeps        string `json:"keeps,omitempty"`
	// Held is what the node's queues hold in Resource after the round.
	Held string `json:"held,omitempty"`
	// Asks is what the job (its gang, whole) requests of Resource.
	Asks string `json:"asks,omitempty"`
}

// treeView is a round's queue tree: its nodes (fairness.Tree's numbering)
// and what each holds at the end of the round.
type treeView struct {
	b     *scenario.Built
	tree  *fairness.Tree
	index map[string]int
	held  []flotilla.Resources
}

// newTreeView builds the round's tree from the scenario (nil when the file
// has no tree: no groups, no parent, no quota) and counts what each node
// holds after the round: the jobs running at its start that the round did
// not preempt, and those it scheduled.
func newTreeView(b *scenario.Built, d *scenario.Decision) *treeView {
	tree, err := fairness.NewTree(b.Schema, b.TreeSpec())
	if err != nil {
		return nil // Build judged the same spec: not reached
	}
	tv := &treeView{b: b, tree: tree, index: map[string]int{}, held: make([]flotilla.Resources, tree.NumNodes())}
	for v := range tree.NumNodes() {
		tv.index[tree.Name(v)] = v
		tv.held[v] = b.Schema.Zero()
	}
	preempted := map[string]bool{}
	for _, p := range d.Result.Preempted {
		preempted[p.Job.ID] = true
	}
	for _, r := range d.Snapshot.Running {
		if !preempted[r.Job.ID] {
			tv.add(r.Job)
		}
	}
	for _, a := range d.Result.Scheduled {
		tv.add(a.Job)
	}
	return tv
}

// add counts job's requests at its queue and every group above it.
func (tv *treeView) add(job *flotilla.Job) {
	v, ok := tv.index[job.Queue]
	if !ok || v < tv.tree.NumGroups() {
		return
	}
	for ; v >= 0; v = tv.tree.Parent(v) {
		tv.held[v].Add(job.Requests)
	}
}

func (tv *treeView) kind(v int) string {
	if v < tv.tree.NumGroups() {
		return "group"
	}
	return "queue"
}

// spec is node v's configuration as the scenario gives it.
func (tv *treeView) spec(v int) (limit, lending flotilla.Resources) {
	if g := tv.tree.NumGroups(); v < g {
		return tv.b.Groups[v].Limit, tv.b.Groups[v].LendingLimit
	}
	q := tv.b.Queues[v-tv.tree.NumGroups()]
	return q.Limit, q.LendingLimit
}

// gangRequests is what job's gang requests in all (the job's own requests
// for a lone job): a gang is placed whole or not at all.
func gangRequests(b *scenario.Built, job *flotilla.Job) flotilla.Resources {
	if job.Gang.ID == "" {
		return job.Requests
	}
	sum := b.Schema.Zero()
	for ri := range b.Rounds {
		for _, j := range b.Rounds[ri].Submit {
			if j.Gang.ID == job.Gang.ID {
				sum.Add(j.Requests)
			}
		}
	}
	return sum
}

// explainQuota fills in ex.Quota and the summary when the job's reason is
// a limit or a lending limit of the queue tree.
func explainQuota(b *scenario.Built, d *scenario.Decision, job *flotilla.Job, r scheduler.Reason, ex *Explanation) {
	if r.Code != scheduler.ReasonLimit && r.Code != scheduler.ReasonLendingLimit {
		return
	}
	tv := newTreeView(b, d)
	if tv == nil {
		return
	}
	v, ok := tv.index[r.Message]
	if !ok {
		return
	}
	asks := gangRequests(b, job)
	q := &Quota{Kind: r.Code.String(), Node: r.Message, NodeKind: tv.kind(v)}
	limit, lending := tv.spec(v)
	quantity := func(i int, x int64) string { return b.Schema.Quantity(i, x) }
	if r.Code == scheduler.ReasonLimit {
		i := bindingLimit(limit, tv.held[v], asks)
		if i < 0 {
			return
		}
		q.Resource, q.Limit, q.Held, q.Asks = b.Schema.Name(i), quantity(i, limit[i]), quantity(i, tv.held[v][i]), quantity(i, asks[i])
		ex.Quota = q
		holder, where := "it holds", ""
		if q.NodeKind == "group" {
			holder, where = "the group holds", " in group "+q.Node
		}
		asker := "the job asks"
		if job.Gang.ID != "" {
			asker = "its gang asks"
		}
		ex.Summary = fmt.Sprintf("not scheduled: queue %s is at its limit of %s %s%s (%s %s, %s %s)",
			job.Queue, q.Limit, q.Resource, where, holder, q.Held, asker, q.Asks)
		return
	}
	g := tv.tree.Guaranteed(v)
	i := bindingHold(g, lending, tv.held[v], asks)
	if i < 0 {
		return
	}
	keeps := g[i] - lending[i]
	q.Resource, q.Guaranteed, q.LendingLimit, q.Keeps = b.Schema.Name(i), quantity(i, g[i]), quantity(i, lending[i]), quantity(i, keeps)
	q.Held, q.Asks = quantity(i, tv.held[v][i]), quantity(i, asks[i])
	ex.Quota = q
	ex.Summary = fmt.Sprintf("not scheduled: %s %s keeps %s %s of its guarantee of %s for its own queues (it lends at most %s and holds %s); the job's %s %s would eat into it",
		q.NodeKind, q.Node, q.Keeps, q.Resource, q.Guaranteed, q.LendingLimit, q.Held, q.Asks, q.Resource)
}

// bindingLimit is the resource in which held + asks exceeds limit (the
// first in schema order), else the limited resource the job asks for that
// is fullest, else -1.
func bindingLimit(limit, held, asks flotilla.Resources) int {
	best, fullest := -1, -1.0
	for i, l := range limit {
		if l == flotilla.Absent || l < 0 {
			continue
		}
		if asks[i] > 0 && held[i] > l-asks[i] {
			return i
		}
		if asks[i] > 0 {
			f := 1.0
			if l > 0 {
				f = float64(held[i]) / float64(l)
			}
			if f > fullest {
				best, fullest = i, f
			}
		}
	}
	return best
}

// bindingHold is the resource the job asks for in which the node keeps
// part of its guarantee (guaranteed above the lending limit), the one with
// the largest part still unused first, else -1.
func bindingHold(g, lending, held, asks flotilla.Resources) int {
	best, most := -1, int64(-1)
	for i := range g {
		if lending == nil || lending[i] == flotilla.Absent || lending[i] < 0 || asks[i] <= 0 {
			continue
		}
		keeps := g[i] - lending[i]
		if keeps <= 0 {
			continue
		}
		if free := keeps - min(held[i], keeps); free > most {
			best, most = i, free
		}
	}
	return best
}

// guaranteeWentFirst says, for a job preempted to fair share for job by,
// whether by's side won in its guarantee's tier where the two queues'
// paths meet: the child of their lowest common ancestor above by's queue,
// when it holds no more than its (non-zero) guarantee after the round.
// It returns that side's kind and name, or "" when it does not apply.
func guaranteeWentFirst(tv *treeView, victim, by string) (string, string) {
	x, okx := tv.index[victim]
	y, oky := tv.index[by]
	if !okx || !oky || x == y {
		return "", ""
	}
	above := map[int]bool{}
	for v := x; v >= 0; v = tv.tree.Parent(v) {
		above[v] = true
	}
	side := y
	for v := y; v >= 0 && !above[v]; v = tv.tree.Parent(v) {
		side = v
	}
	g := tv.tree.Guaranteed(side)
	zero := true
	for i, gi := range g {
		if gi > 0 {
			zero = false
		}
		if tv.held[side][i] > gi {
			return "", ""
		}
	}
	if zero {
		return "", ""
	}
	return tv.kind(side), tv.tree.Name(side)
}
