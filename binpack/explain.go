package binpack

import (
	"fmt"
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
	// NoNodes: the DB has no nodes.
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

// Reason says why a query has, or has no, answer. It is a plain value.
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
	// Candidates counts the nodes passing selector, taints and cordon.
	// Each other node is counted once, under the first check it fails in
	// the order selector, taints, cordon.
	Candidates, Selector, Taints, Cordoned int
	// Field and Value name the bad field of an InvalidQuery.
	Field string
	Value int
}

// Explain is the slow path for a query Select could not answer: it checks
// every node (or only q.OnlyNode) and says why none fits. The best
// candidate is the node short in the fewest resources, then with the
// smallest largest shortfall relative to the request, then the lowest index.
// It costs O(N·(R + selector + taints)) and allocates.
func (db *DB) Explain(q *Query) Reason {
	if ok, field, value := db.valid(q); !ok {
		return Reason{Kind: InvalidQuery, Node: -1, Resource: -1, Field: field, Value: value}
	}
	return db.explain(q, q, nil)
}

// explain is the scan behind Explain and ExplainIn for a valid query q:
// sel is the query Select is asked first (q itself, or q confined to a
// domain), and admit, when not nil, confines the scan to the domain's
// nodes; a scan that admits no node says NoNodes.
func (db *DB) explain(q, sel *Query, admit func(*flotilla.Node) bool) Reason {
	r := Reason{Node: -1, Resource: -1}
	if n, ok := db.Select(sel); ok {
		r.Kind, r.Node, r.NodeName = Fits, n, db.nodes[n].Name
		return r
	}
	c := &db.cons[q.Constraint]
	lo, hi := 0, len(db.nodes)
	if q.OnlyNode >= 0 {
		lo, hi = q.OnlyNode, q.OnlyNode+1
	}
	now, empty := candidate{node: -1}, candidate{node: -1}
	admitted := 0
	for n := lo; n < hi; n++ {
		node := db.nodes[n]
		if admit != nil && !admit(node) {
			continue
		}
		admitted++
		switch {
		case !flotilla.SelectorMatches(c.selector, node.Labels):
			r.Selector++
			continue
		case !flotilla.TaintsTolerated(node.Taints, c.tolerations):
			r.Taints++
			continue
		case db.cordoned[n] && q.OnlyNode < 0:
			r.Cordoned++
			continue
		}
		r.Candidates++
		if q.Requests.Fits(node.Total) {
			now.consider(n, q.Requests, db.Allocatable(n, q.Level))
		} else {
			empty.consider(n, q.Requests, node.Total)
		}
	}
	best := now
	switch {
	case admitted == 0:
		r.Kind = NoNodes
		return r
	case r.Candidates == 0:
		r.Kind = NoMatchingNode
		return r
	case now.node >= 0:
		r.Kind = Insufficient
	default:
		r.Kind, best = TooLarge, empty
	}
	r.Node, r.NodeName, r.Resource, r.Short = best.node, db.nodes[best.node].Name, best.resource, best.short
	return r
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
		if v <= avail[r] {
			continue
		}
		x.count++
		if f := float64(v-avail[r]) / float64(max(v, 1)); f > x.frac {
			x.frac = f
		}
		if x.resource < 0 {
			x.resource, x.short = r, v-avail[r]
		}
	}
	if c.node < 0 || x.count < c.count || (x.count == c.count && x.frac < c.frac) {
		*c = x
	}
}

// String renders the reason for people, naming resources by schema (which
// may be nil).
func (r Reason) String(schema *flotilla.ResourceSchema) string {
	name := func(i int) string {
		if schema != nil && i >= 0 && i < schema.Len() {
			return schema.Name(i)
		}
		return fmt.Sprintf("resource[%d]", i)
	}
	quantity := func(i int, v int64) string {
		if schema != nil && i >= 0 && i < schema.Len() {
			return schema.Quantity(i, v)
		}
		return strconv.FormatInt(v, 10)
	}
	switch r.Kind {
	case Fits:
		return fmt.Sprintf("fits on %s", r.NodeName)
	case InvalidQuery:
		return fmt.Sprintf("invalid query: %s %d out of range", r.Field, r.Value)
	case NoNodes:
		return "no nodes"
	case NoMatchingNode:
		var parts []string
		if r.Selector > 0 {
			parts = append(parts, fmt.Sprintf("%d fail the node selector", r.Selector))
		}
		if r.Taints > 0 {
			parts = append(parts, fmt.Sprintf("%d have untolerated taints", r.Taints))
		}
		if r.Cordoned > 0 {
			parts = append(parts, fmt.Sprintf("%d cordoned", r.Cordoned))
		}
		return "no node matches: " + strings.Join(parts, ", ")
	case Insufficient:
		if r.Resource < 0 {
			return fmt.Sprintf("no node fits (best node %s)", r.NodeName)
		}
		return fmt.Sprintf("no node fits: %s short by %s on the best node (%s)",
			name(r.Resource), quantity(r.Resource, r.Short), r.NodeName)
	case TooLarge:
		return fmt.Sprintf("no node is large enough: %s short by %s even on an empty node (%s)",
			name(r.Resource), quantity(r.Resource, r.Short), r.NodeName)
	}
	return r.Kind.String()
}
