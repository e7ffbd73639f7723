package binpack_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/binpack"
)

// explainCluster has one node for each filter: a node in zone b, a GPU
// node tainted gpu=true:NoSchedule, a cordoned node, a 4-core node and two
// 16-core nodes with 12 and 10 cores bound.
func explainCluster(t *testing.T) *binpack.DB {
	t.Helper()
	zoneA := map[string]string{"zone": "a"}
	nodes := []*flotilla.Node{
		{Name: "zone-b", Total: r3(0, 32, 64), Labels: map[string]string{"zone": "b"}},
		{Name: "gpu", Total: r3(8, 32, 64), Labels: zoneA, Taints: []flotilla.Taint{
			{Key: "spot", Effect: flotilla.TaintPreferNoSchedule},
			{Key: "gpu", Value: "true", Effect: flotilla.TaintNoSchedule}}},
		{Name: "cordoned", Total: r3(0, 32, 64), Labels: zoneA, Unschedulable: true},
		{Name: "small", Total: r3(0, 4, 64), Labels: zoneA},
		{Name: "busy-12", Total: r3(0, 16, 64), Labels: zoneA},
		{Name: "busy-10", Total: r3(0, 16, 64), Labels: zoneA},
	}
	db := mustNew(t, binpack.Options{}, nodes...)
	db.Bind(4, 0, 1, r3(0, 12, 0))
	db.Bind(5, 0, 1, r3(0, 10, 0))
	db.Forget()
	return db
}

func TestExplainCountsEveryNodeUnderTheFirstFilterItFails(t *testing.T) {
	db := explainCluster(t)
	cpu := 1
	cases := []struct {
		name     string
		req      flotilla.Resources
		sel      map[string]string
		tols     []flotilla.Toleration
		kind     binpack.ReasonKind
		excluded []binpack.Exclusion
		msg      string
	}{
		{
			name: "no room: shortfall is the smallest among the nodes", req: r3(0, 8, 1), sel: map[string]string{"zone": "a"},
			kind: binpack.Insufficient,
			excluded: []binpack.Exclusion{
				{Filter: binpack.FilterSelector, Detail: "zone=a", Resource: -1, Nodes: 1},
				{Filter: binpack.FilterTaint, Detail: "gpu=true:NoSchedule", Resource: -1, Nodes: 1},
				{Filter: binpack.FilterCordoned, Resource: -1, Nodes: 1},
				{Filter: binpack.FilterTooSmall, Resource: cpu, Short: 4 * core, Nodes: 1},
				{Filter: binpack.FilterNoRoom, Resource: cpu, Short: 2 * core, Nodes: 2},
			},
			msg: "0/6 nodes fit: 1 node selector zone=a mismatched, 1 untolerated taint gpu=true:NoSchedule, 1 cordoned, " +
				"1 short of cpu by at least 4 even when empty, 2 short of cpu by at least 2",
		},
		{
			name: "a GPU job without the toleration hears about the taint", req: r3(1, 1, 1),
			kind: binpack.TooLarge,
			excluded: []binpack.Exclusion{
				{Filter: binpack.FilterTaint, Detail: "gpu=true:NoSchedule", Resource: -1, Nodes: 1},
				{Filter: binpack.FilterCordoned, Resource: -1, Nodes: 1},
				{Filter: binpack.FilterTooSmall, Resource: 0, Short: 1, Nodes: 4},
			},
			msg: "0/6 nodes fit: 1 untolerated taint gpu=true:NoSchedule, 1 cordoned, 4 short of nvidia.com/gpu by at least 1 even when empty",
		},
		{
			name: "too large everywhere", req: r3(0, 40, 1),
			tols: []flotilla.Toleration{{Key: "gpu", Operator: flotilla.TolerationExists}},
			kind: binpack.TooLarge,
			excluded: []binpack.Exclusion{
				{Filter: binpack.FilterCordoned, Resource: -1, Nodes: 1},
				{Filter: binpack.FilterTooSmall, Resource: cpu, Short: 8 * core, Nodes: 5},
			},
			msg: "0/6 nodes fit: 1 cordoned, 5 short of cpu by at least 8 even when empty",
		},
		{
			name: "no node matches: selector terms named, first in key order", req: r3(0, 1, 1),
			sel:  map[string]string{"zone": "c", "disk": "ssd"},
			kind: binpack.NoMatchingNode,
			excluded: []binpack.Exclusion{
				{Filter: binpack.FilterSelector, Detail: "disk=ssd", Resource: -1, Nodes: 6},
			},
			msg: "0/6 nodes fit: 6 node selector disk=ssd mismatched",
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			q := query(c.req, 0, 1)
			q.Constraint = db.Constraints(c.sel, c.tols)
			r := db.Explain(q)
			assert.Equal(t, c.kind, r.Kind)
			assert.Equal(t, 6, r.Nodes)
			assert.Equal(t, c.excluded, r.Excluded)
			assert.Equal(t, c.msg, r.String(schema3))
		})
	}
}

func TestExplainInCountsOnlyTheDomainsNodes(t *testing.T) {
	db := mustNew(t, binpack.Options{}, clusterNodes()...)
	q := query(r3(0, 10, 10), 0, 0)
	r := db.ExplainIn(q, binpack.Restriction{Cluster: "east"})
	assert.Equal(t, "0/2 nodes fit: 2 short of cpu by at least 2 even when empty", r.String(schema3))
	q.Requests = r3(0, 40, 0)
	r = db.ExplainIn(q, binpack.Restriction{Label: "rack", Value: "r1"})
	assert.Equal(t, "0/2 nodes fit: 1 untolerated taint dedicated=x:NoSchedule, 1 short of cpu by at least 8 even when empty", r.String(schema3))
}

func TestReasonKindUnresolvableUnlessRoomMayFreeUp(t *testing.T) {
	for k, want := range map[binpack.ReasonKind]bool{
		binpack.Fits: false, binpack.InvalidQuery: false, binpack.Insufficient: false,
		binpack.NoNodes: true, binpack.NoMatchingNode: true, binpack.TooLarge: true,
	} {
		assert.Equal(t, want, k.Unresolvable(), k.String())
	}
}

// oracleExclusion is the naive classification of one node for a query that
// found no node: the first check it fails, and the resource and amount.
func (w *world) oracleExclusion(q *binpack.Query, c int, n int) (key string, short int64) {
	node, spec := w.nodes[n], consSpecs[c]
	keys := make([]string, 0, len(spec.sel))
	for k := range spec.sel {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if v, ok := node.Labels[k]; !ok || v != spec.sel[k] {
			return "selector " + k + "=" + spec.sel[k], 0
		}
	}
	for _, t := range node.Taints {
		if !oracleAdmits(consSpec{tols: spec.tols}, &flotilla.Node{Taints: []flotilla.Taint{t}}) {
			return fmt.Sprintf("taint %s=%s:%s", t.Key, t.Value, t.Effect), 0
		}
	}
	if node.Unschedulable && q.OnlyNode < 0 {
		return "cordoned", 0
	}
	what, avail := "no-room", w.alloc(n, q.Level)
	if !q.Requests.Fits(node.Total) {
		what, avail = "too-small", node.Total
	}
	for r, v := range q.Requests {
		switch a := avail[r]; {
		case a < 0 && v > 0: // over-committed: no room at all, short by the request
			return fmt.Sprint(what, " ", r), v
		case a < 0: // requests none of it, and still does not fit
			return fmt.Sprint(what, " ", r), -a
		case v > a:
			return fmt.Sprint(what, " ", r), v - a
		}
	}
	return what, 0
}

func TestPropertyExplainPartitionsTheNodesByFirstFailedFilter(t *testing.T) {
	runProperty(t, "Explain counts every node once, under the filter the oracle names", func(seed int64) string {
		w, err := newWorld(seed)
		if err != nil {
			return err.Error()
		}
		return w.checkExplainPartition(seed, false)
	})
}

// Running jobs bound over a node's total (Kubernetes shrank the node under
// them) make it full: Select never returns it at a level where its
// allocatable is negative, even for a job requesting none of the resource
// it is over in, and Explain counts it under no room, never as cordoned,
// short by the whole request (as a node with nothing free is), not by the
// request plus the over-commitment.
func TestPropertyOverCommittedNodeIsFullAndExplainedAsNoRoom(t *testing.T) {
	runProperty(t, "an over-committed node is full: never selected, explained as no room", func(seed int64) string {
		w, err := newWorld(seed)
		if err != nil {
			return err.Error()
		}
		return w.checkExplainPartition(seed, true)
	})
}

// checkExplainPartition makes random queries, binding those Select
// answers, and checks Select against the oracle and every failed query's
// Explain against oracleExclusion. With overCommit, running jobs are also
// bound at random, over their node's total as often as not.
func (w *world) checkExplainPartition(seed int64, overCommit bool) string {
	for step := range 40 {
		if overCommit && len(w.nodes) > 0 && w.rng.IntN(4) == 0 {
			q, _ := w.randomQuery()
			n := w.rng.IntN(len(w.nodes))
			for r, v := range w.nodes[n].Total {
				q.Requests[r] += v / int64(1+w.rng.IntN(2))
			}
			w.bind(n, q)
			continue
		}
		q, c := w.randomQuery()
		n, ok := w.db.Select(q)
		if want := w.oracleSelect(q, c); n != want || ok != (want >= 0) {
			return fmt.Sprintf("seed %d step %d: Select(%+v) = %d, %v; oracle %d", seed, step, *q, n, ok, want)
		}
		if ok && w.alloc(n, q.Level).AnyNegative() {
			return fmt.Sprintf("seed %d step %d: Select(%+v) = %d, over-committed at the level: %v", seed, step, *q, n, w.alloc(n, q.Level))
		}
		if ok {
			w.bind(n, q)
			continue
		}
		type group struct {
			nodes int
			short int64
		}
		want := map[string]group{}
		for n := range w.nodes {
			if q.OnlyNode >= 0 && n != q.OnlyNode {
				continue
			}
			k, s := w.oracleExclusion(q, c, n)
			g, ok := want[k]
			if !ok || s < g.short {
				g.short = s
			}
			g.nodes++
			want[k] = g
		}
		r := w.db.Explain(q)
		got, total := map[string]group{}, 0
		for _, e := range r.Excluded {
			k := e.Filter.String()
			switch e.Filter {
			case binpack.FilterSelector, binpack.FilterTaint:
				k += " " + e.Detail
			case binpack.FilterTooSmall, binpack.FilterNoRoom:
				k += fmt.Sprint(" ", e.Resource)
			}
			got[k] = group{e.Nodes, e.Short}
			total += e.Nodes
		}
		// taintString drops an empty value; the oracle keeps "=".
		for k, g := range want {
			if fixed := fixEmptyTaintValue(k); fixed != k {
				delete(want, k)
				want[fixed] = g
			}
		}
		if r.Kind == binpack.NoNodes {
			continue
		}
		if total != r.Nodes || !mapsEqual(got, want) {
			return fmt.Sprintf("seed %d step %d: Explain(%+v) = %v (%d of %d nodes); oracle %v", seed, step, *q, got, total, r.Nodes, want)
		}
	}
	return w.checkState()
}

func fixEmptyTaintValue(k string) string {
	if i := len("taint "); len(k) > i && k[:i] == "taint " {
		for j := i; j < len(k); j++ {
			if k[j] == '=' && j+1 < len(k) && k[j+1] == ':' {
				return k[:j] + k[j+1:]
			}
		}
	}
	return k
}

func mapsEqual[K comparable, V comparable](a, b map[K]V) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func TestExplainKeepsTheBestCandidate(t *testing.T) {
	db := explainCluster(t)
	q := query(r3(0, 8, 1), 0, 1)
	q.Constraint = db.Constraints(map[string]string{"zone": "a"}, nil)
	r := db.Explain(q)
	require.Equal(t, "busy-10", r.NodeName, "the node short by least")
	require.Equal(t, 2*core, r.Short)
}

// Many distinct causes (here a taint per node, more than the linear search
// keeps) are each counted, in order of most nodes then name.
func TestExplainCountsManyDistinctTaints(t *testing.T) {
	var nodes []*flotilla.Node
	for i := range 40 {
		n := node3(fmt.Sprintf("n%02d", i), 0, 8, 8)
		n.Taints = []flotilla.Taint{{Key: fmt.Sprintf("t%02d", i%20), Effect: flotilla.TaintNoSchedule}}
		nodes = append(nodes, n)
	}
	db := mustNew(t, binpack.Options{}, nodes...)
	r := db.Explain(query(r3(0, 1, 1), 0, 0))
	require.Equal(t, binpack.NoMatchingNode, r.Kind)
	require.Len(t, r.Excluded, 20)
	for i, e := range r.Excluded {
		assert.Equal(t, binpack.Exclusion{Filter: binpack.FilterTaint, Detail: fmt.Sprintf("t%02d:NoSchedule", i), Resource: -1, Nodes: 2}, e)
	}
}
