package binpack

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/flotilla-sched/flotilla"
)

// ReasonKind classifies the answer to a query.
type ReasonKind uint8

const (
	// Fits: some node fits; Reason.Node is the one Select returns.
	Fits ReasonKind = iota
	// InvalidQuery: a field of the query is out of range (Reason.Field).
	InvalidQuery
	// NoNodes: the DB (or the domain, for ExplainIn) has no nodes.
	NoNodes
	// NoMatchingNode: every node fails the node selector, the taints or
	// the cordon (counts in Reason.Selector, Taints, Cordoned).
	NoMatchingNode
	// Insufficient: some matching node could hold the job when empty, but
	// none has room now at the query's level. Reason.Node is the best
	// candidate, Reason.Resource and Short what it lacks.
	Insufficient
	// TooLarge: no matching node could hold the job even when empty.
	// Reason.Node is the closest one, Reason.Resource and Short what its
	// total lacks.
	TooLarge
)

func (k ReasonKind) String() string {
	switch k {
	case Fits:
		return "Fits"
	case InvalidQuery:
		return "InvalidQuery"
	case NoNodes:
		return "NoNodes"
	case NoMatchingNode:
		return "NoMatchingNode"
	case Insufficient:
		return "Insufficient"
	case TooLarge:
		return "TooLarge"
	}
	return fmt.Sprintf("ReasonKind(%d)", uint8(k))
}

// Unresolvable reports whether the kind says the job cannot fit even on an
// empty DB: no node, none that matches, or none large enough. Only a change
// to the nodes (or to the job) can resolve it; Insufficient can resolve as
// jobs finish.
func (k ReasonKind) Unresolvable() bool {
	return k == NoNodes || k == NoMatchingNode || k == TooLarge
}

// Filter is the check that excluded a node, in the order Explain applies
// them: each node is counted under the first it fails.
type Filter uint8

const (
	// FilterSelector: the node's labels lack a term of the node selector.
	FilterSelector Filter = iota + 1
	// FilterTaint: the node has a NoSchedule or NoExecute taint the job
	// does not tolerate.
	FilterTaint
	// FilterCordoned: the node is unschedulable.
	FilterCordoned
	// FilterTooSmall: the node's total lacks a resource: it could not hold
	// the job even when empty.
	FilterTooSmall
	// FilterNoRoom: the node could hold the job when empty but lacks a
	// resource now, at the query's level. An over-committed node (its jobs
	// request more than its total) is counted here, as a full node.
	FilterNoRoom
)

func (f Filter) String() string {
	switch f {
	case FilterSelector:
		return "selector"
	case FilterTaint:
		return "taint"
	case FilterCordoned:
		return "cordoned"
	case FilterTooSmall:
		return "too-small"
	case FilterNoRoom:
		return "no-room"
	}
	return fmt.Sprintf("Filter(%d)", uint8(f))
}

// Exclusion counts the nodes one filter excluded for one cause: one
// selector term, one taint, the cordon, or one resource.
type Exclusion struct {
	Filter Filter
	// Detail names the cause for FilterSelector, the first selector term
	// the node lacks in key order ("zone=a"), and for FilterTaint, the
	// node's first taint the job does not tolerate ("gpu=true:NoSchedule",
	// or "gpu:NoSchedule" without a value); else "".
	Detail string
	// Resource, for FilterTooSmall and FilterNoRoom, is the schema index
	// of the first resource (in schema order) each of the nodes lacks, and
	// Short the smallest shortfall of it among them (milli-units): every
	// one of the nodes lacks at least Short. Free capacity below zero (an
	// over-committed node) counts as none: such a node lacks the whole
	// request, or, for a resource the job requests none of, the amount by
	// which its jobs exceed its total. Else -1 and 0.
	Resource int
	Short    int64
	// Nodes counts the nodes.
	Nodes int
}

// Reason says why a query has, or has no, answer. It is a value, but not
// comparable with == (Excluded is a slice); it shares no memory with the DB.
type Reason struct {
	Kind ReasonKind
	// Node is the chosen node (Fits) or the best candidate (Insufficient,
	// TooLarge), else -1; NodeName is its name.
	Node     int
	NodeName string
	// Resource is the schema index of the first resource the best
	// candidate lacks, and Short by how much (in the resource's unit), for
	// Insufficient and TooLarge; else -1 and 0.
	Resource int
	Short    int64
	// Candidates counts the nodes passing selector, taints and cordon, of
	// which TooSmall could not hold the job even when empty. Each other
	// node is counted once, under the first check it fails in the order
	// selector, taints, cordon.
	Candidates, Selector, Taints, Cordoned, TooSmall int
	// Nodes counts the nodes examined: every node (Explain), the domain's
	// (ExplainIn), or the one OnlyNode names.
	Nodes int
	// Excluded partitions the Nodes examined by the first check each
	// fails, in the order selector, taints, cordon, size when empty, room
	// at the query's level; its counts add up to Nodes when Kind is not
	// Fits or InvalidQuery (when it is, Excluded is nil). Entries are
	// ordered by Filter, then most nodes first, then Detail, then Resource.
	Excluded []Exclusion
	// Field and Value name the bad field of an InvalidQuery.
	Field string
	Value int
}

// Explain is the slow path for a query Select could not answer: it checks
// every node (or only q.OnlyNode) and says why none fits, counting every
// node under the first check it fails (Reason.Excluded). The best
// candidate is the node short in the fewest resources, then with the
// smallest largest shortfall relative to the request, then the lowest index.
// It costs O(N·(R + selector + taints)) and allocates.
func (db *DB) Explain(q *Query) Reason {
	if ok, field, value := db.valid(q); !ok {
		return Reason{Kind: InvalidQuery, Node: -1, Resource: -1, Field: field, Value: value}
	}
	return db.explain(q, db.Select, q, nil)
}

// exclusionKey groups nodes in explain: by filter, and by the selector
// term (an index into the sorted keys), the taint or the resource.
type exclusionKey struct {
	filter   Filter
	term     int
	taint    flotilla.Taint
	resource int
}

// explain is the scan behind Explain and ExplainIn for a valid query q:
// sel is the query selectFn (Select, or SelectAmong confined to a domain)
// is asked first (q itself, or q confined to a domain), and admit, when
// not nil, confines the scan to the domain's nodes (by index); a scan that
// admits no node says NoNodes.
func (db *DB) explain(q *Query, selectFn func(*Query) (int, bool), sel *Query, admit func(int) bool) Reason {
	r := Reason{Node: -1, Resource: -1}
	if n, ok := selectFn(sel); ok {
		r.Kind, r.Node, r.NodeName = Fits, n, db.nodes[n].Name
		return r
	}
	c := &db.cons[q.Constraint]
	keys := make([]string, 0, len(c.selector))
	for k := range c.selector {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	lo, hi := 0, len(db.nodes)
	if q.OnlyNode >= 0 {
		lo, hi = q.OnlyNode, q.OnlyNode+1
	}
	now, empty := candidate{node: -1}, candidate{node: -1}
	var gs exclusionGroups
	for n := lo; n < hi; n++ {
		node := db.nodes[n]
		if admit != nil && !admit(n) {
			continue
		}
		r.Nodes++
		if term := selectorMismatch(keys, c.selector, node.Labels); term >= 0 {
			r.Selector++
			gs.count(exclusionKey{filter: FilterSelector, term: term, resource: -1}, 0)
			continue
		}
		if !flotilla.AffinityMatches(c.affinity, node.Labels) {
			r.Selector++
			gs.count(exclusionKey{filter: FilterSelector, term: len(keys), resource: -1}, 0)
			continue
		}
		if t := untolerated(node.Taints, c.tolerations); t >= 0 {
			r.Taints++
			gs.count(exclusionKey{filter: FilterTaint, taint: node.Taints[t], resource: -1}, 0)
			continue
		}
		if db.cordoned[n] && q.OnlyNode < 0 {
			r.Cordoned++
			gs.count(exclusionKey{filter: FilterCordoned, resource: -1}, 0)
			continue
		}
		r.Candidates++
		filter, avail := FilterNoRoom, db.Allocatable(n, q.Level)
		if q.Requests.Fits(node.Total) {
			now.consider(n, q.Requests, avail)
		} else {
			r.TooSmall++
			filter, avail = FilterTooSmall, node.Total
			empty.consider(n, q.Requests, avail)
		}
		res, short := firstShort(q.Requests, avail)
		gs.count(exclusionKey{filter: filter, resource: res}, short)
	}
	best := now
	switch {
	case r.Nodes == 0:
		r.Kind = NoNodes
		return r
	case r.Candidates == 0:
		r.Kind = NoMatchingNode
	case now.node >= 0:
		r.Kind = Insufficient
	default:
		r.Kind, best = TooLarge, empty
	}
	r.Excluded = gs.groups
	for i, k := range gs.keys {
		switch k.filter {
		case FilterSelector:
			if k.term == len(keys) {
				r.Excluded[i].Detail = "node affinity"
				break
			}
			r.Excluded[i].Detail = keys[k.term] + "=" + c.selector[keys[k.term]]
		case FilterTaint:
			r.Excluded[i].Detail = taintString(k.taint)
		}
	}
	slices.SortFunc(r.Excluded, func(a, b Exclusion) int {
		return cmp.Or(cmp.Compare(a.Filter, b.Filter), cmp.Compare(b.Nodes, a.Nodes),
			strings.Compare(a.Detail, b.Detail), cmp.Compare(a.Resource, b.Resource))
	})
	if best.node >= 0 {
		r.Node, r.NodeName, r.Resource, r.Short = best.node, db.nodes[best.node].Name, best.resource, best.short
	}
	return r
}

// exclusionGroups counts nodes per exclusionKey: a linear search (the
// last group hit first), since a scan meets few distinct causes, and a map
// once it meets many.
type exclusionGroups struct {
	keys   []exclusionKey
	groups []Exclusion
	last   int
	index  map[exclusionKey]int
}

// manyGroups is when exclusionGroups switches to a map.
const manyGroups = 16

func (gs *exclusionGroups) count(k exclusionKey, short int64) {
	i := -1
	switch {
	case gs.last < len(gs.keys) && gs.keys[gs.last] == k:
		i = gs.last
	case gs.index != nil:
		if j, ok := gs.index[k]; ok {
			i = j
		}
	default:
		for j := range gs.keys {
			if gs.keys[j] == k {
				i = j
				break
			}
		}
	}
	if i < 0 {
		i = len(gs.keys)
		gs.keys = append(gs.keys, k)
		gs.groups = append(gs.groups, Exclusion{Filter: k.filter, Resource: k.resource, Short: short})
		if gs.index == nil && len(gs.keys) > manyGroups {
			gs.index = make(map[exclusionKey]int, 2*manyGroups)
			for j, kj := range gs.keys {
				gs.index[kj] = j
			}
		} else if gs.index != nil {
			gs.index[k] = i
		}
	}
	gs.last = i
	g := &gs.groups[i]
	g.Nodes++
	g.Short = min(g.Short, short)
}

// selectorMismatch returns the index in keys (the selector's keys, sorted)
// of the first term of selector that labels lack, or -1.
func selectorMismatch(keys []string, selector, labels map[string]string) int {
	for i, k := range keys {
		if v, ok := labels[k]; !ok || v != selector[k] {
			return i
		}
	}
	return -1
}

// untolerated returns the index of the first of taints that repels a job
// with tols (see flotilla.TaintsTolerated), or -1.
func untolerated(taints []flotilla.Taint, tols []flotilla.Toleration) int {
	for i := range taints {
		if !flotilla.TaintsTolerated(taints[i:i+1], tols) {
			return i
		}
	}
	return -1
}

// taintString renders a taint as kubectl does: "key=value:Effect", or
// "key:Effect" without a value.
func taintString(t flotilla.Taint) string {
	if t.Value == "" {
		return t.Key + ":" + string(t.Effect)
	}
	return t.Key + "=" + t.Value + ":" + string(t.Effect)
}

// firstShort returns the first resource, in schema order, of which avail
// holds less than req, and by how much (shortfall); -1 and 0 when none.
func firstShort(req, avail flotilla.Resources) (int, int64) {
	for r, v := range req {
		if s := shortfall(v, avail[r]); s > 0 {
			return r, s
		}
	}
	return -1, 0
}

// shortfall is how much of a resource a node with a of it free lacks for a
// request of v, 0 when it lacks none. Free capacity below zero (the jobs
// bound there request more than the node's total: it is over-committed,
// full) counts as zero: such a node is short by the whole request, as a
// node with none free is, however far over its total it is; and a request
// of none of the resource still does not fit it (Select takes nothing
// there), short by the over-commitment, the least that must go before the
// node takes anything.
func shortfall(v, a int64) int64 {
	switch {
	case a >= 0:
		return max(v-a, 0)
	case v > 0:
		return v
	}
	return -a
}

// candidate tracks the best node that does not fit.
type candidate struct {
	node     int
	count    int     // resources short
	frac     float64 // largest shortfall / request
	resource int     // first resource short
	short    int64
}

func (c *candidate) consider(n int, req, avail flotilla.Resources) {
	x := candidate{node: n, resource: -1}
	for r, v := range req {
		s := shortfall(v, avail[r])
		if s == 0 {
			continue
		}
		x.count++
		if f := float64(s) / float64(max(v, 1)); f > x.frac {
			x.frac = f
		}
		if x.resource < 0 {
			x.resource, x.short = r, s
		}
	}
	if c.node < 0 || x.count < c.count || (x.count == c.count && x.frac < c.frac) {
		*c = x
	}
}

// resourceName names schema resource i, or "resource[i]" when schema is
// nil or i out of range.
func resourceName(schema *flotilla.ResourceSchema, i int) string {
	if schema != nil && i >= 0 && i < schema.Len() {
		return schema.Name(i)
	}
	return fmt.Sprintf("resource[%d]", i)
}

// formatAmount renders amount v (in the resource's unit) of schema resource i for
// people. Every explanation formats amounts through it, so that how each
// resource's amounts read is decided in one place; schema may be nil.
func formatAmount(schema *flotilla.ResourceSchema, i int, v int64) string {
	if schema != nil && i >= 0 && i < schema.Len() {
		return schema.Quantity(i, v)
	}
	return strconv.FormatInt(v, 10)
}

// String renders the reason for people, naming resources by schema (which
// may be nil), in the manner of kube-scheduler: "0/3 nodes fit: 1 node
// selector zone=a mismatched, 1 untolerated taint gpu=true:NoSchedule, 1
// cordoned, 1 short of memory by at least 2Gi even when empty, 2 short of
// cpu by at least 3". Every examined node is counted once; "by at least"
// is the smallest shortfall among the nodes counted, and "even when empty"
// marks nodes too small for the job, as against nodes without room now.
func (r Reason) String(schema *flotilla.ResourceSchema) string {
	switch r.Kind {
	case Fits:
		return fmt.Sprintf("fits on %s", r.NodeName)
	case InvalidQuery:
		return fmt.Sprintf("invalid query: %s %d out of range", r.Field, r.Value)
	case NoNodes:
		return "no nodes"
	}
	parts := make([]string, 0, len(r.Excluded))
	for _, e := range r.Excluded {
		parts = append(parts, e.String(schema))
	}
	return fmt.Sprintf("0/%d nodes fit: %s", r.Nodes, strings.Join(parts, ", "))
}

// String renders the exclusion for people, as one part of Reason.String;
// schema (may be nil) names resources.
func (e Exclusion) String(schema *flotilla.ResourceSchema) string {
	switch e.Filter {
	case FilterSelector:
		return fmt.Sprintf("%d node selector %s mismatched", e.Nodes, e.Detail)
	case FilterTaint:
		return fmt.Sprintf("%d untolerated taint %s", e.Nodes, e.Detail)
	case FilterCordoned:
		return fmt.Sprintf("%d cordoned", e.Nodes)
	case FilterTooSmall, FilterNoRoom:
		when := ""
		if e.Filter == FilterTooSmall {
			when = " even when empty"
		}
		if e.Resource < 0 { // Select and the scan disagree: cannot happen
			return fmt.Sprintf("%d without room%s", e.Nodes, when)
		}
		return fmt.Sprintf("%d short of %s by at least %s%s", e.Nodes, resourceName(schema, e.Resource),
			formatAmount(schema, e.Resource, e.Short), when)
	}
	return fmt.Sprintf("%d %s", e.Nodes, e.Filter)
}
