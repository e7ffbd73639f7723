package binpack

import (
	"encoding/binary"
	"slices"

	"github.com/flotilla-sched/flotilla"
)

// This file makes the DB aware of Node.Cluster and of node labels as
// placement domains, for gangs: every member of a gang lands in one cluster
// and, with a node-uniformity label, on nodes that share one value of it.
// The rest of the DB ignores Node.Cluster.

// Restriction is a placement domain: the nodes of one cluster and, when
// Label is set, only those that carry Label with the value Value (which may
// be empty; a node without the label is outside every such domain).
type Restriction struct {
	// Cluster is compared with Node.Cluster; "" is the default cluster.
	Cluster string
	// Label and Value narrow the domain to nodes with Labels[Label] ==
	// Value. An empty Label means every node of the cluster.
	Label, Value string
}

// admits reports whether node lies in the domain.
func (r *Restriction) admits(n *flotilla.Node) bool {
	if n.Cluster != r.Cluster {
		return false
	}
	if r.Label == "" {
		return true
	}
	v, ok := n.Labels[r.Label]
	return ok && v == r.Value
}

// restrictTag starts the intern key of a restricted constraint. 0x80 0x00
// is a non-minimal uvarint, which binary.AppendUvarint never writes, so no
// key made by Constraints starts with it.
var restrictTag = [2]byte{0x80, 0x00}

// Restrict returns the id of the constraint that admits the nodes id admits
// that also lie in r. Put it in a Query to make Select choose only within
// r; Admits and Select honour it, and ids are interned like those of
// Constraints: the same (id, r) always gives the same id.
//
// Explain on a restricted id checks only the original node selector and
// tolerations over every node; use ExplainIn with the same Restriction to
// explain a query within the domain.
//
// A pair already seen costs a map lookup and does not allocate; a new one
// costs O(N) and N/8 bytes. An id out of range is returned unchanged
// (Select and Explain report it as an invalid query).
func (db *DB) Restrict(id ConstraintID, r Restriction) ConstraintID {
	if id < 0 || int(id) >= len(db.cons) {
		return id
	}
	buf := append(db.consBuf[:0], restrictTag[:]...)
	buf = binary.AppendUvarint(buf, uint64(id))
	buf = appendString(buf, r.Cluster)
	buf = appendString(buf, r.Label)
	buf = appendString(buf, r.Value)
	db.consBuf = buf
	if rid, ok := db.consIndex[string(buf)]; ok {
		return rid
	}
	base := &db.cons[id]
	c := constraint{
		selector:    base.selector,
		affinity:    base.affinity,
		tolerations: base.tolerations,
		bits:        make([]uint64, len(base.bits)),
	}
	for i, n := range db.nodes {
		if base.has(i) && r.admits(n) {
			c.bits[i>>6] |= 1 << (i & 63)
		}
	}
	rid := ConstraintID(len(db.cons))
	db.cons = append(db.cons, c)
	db.consIndex[string(buf)] = rid
	return rid
}

// avoidTag starts the intern key of a constraint made by Avoid: like
// restrictTag a non-minimal uvarint (1 in two bytes), and a different one.
var avoidTag = [2]byte{0x81, 0x00}

// Avoid returns the id of the constraint that admits the nodes id admits
// except those whose Node.Cluster is one of clusters: for a job that
// prefers other clusters to those (flotilla.Job.AvoidClusters), search with
// it first and, when nothing fits, with id. The list is a set: order and
// repeats do not matter, and a name no node carries excludes nothing.
//
// When the exclusion would change nothing (no node id admits lies in those
// clusters) or leave nothing (every node id admits does), there is nothing
// to prefer and Avoid returns id itself: a caller compares the two to skip
// the first search. Admits and Select honour the result; Explain on it, as
// on a Restrict id, checks only the original node selector and tolerations.
//
// Ids are interned like those of Constraints: the same id and set always
// give the same answer. A pair already seen costs sorting the names in a
// scratch buffer and a map lookup, and does not allocate (once the
// scratch has grown); a new one costs O(N·log C) for C names and N/8
// bytes. An id out of range is returned unchanged (Select and Explain
// report it as an invalid query).
func (db *DB) Avoid(id ConstraintID, clusters []string) ConstraintID {
	return db.avoidSet(id, clusters, avoidTag, false)
}

// AvoidNodes is Avoid for node names (Node.Name): id's nodes except those
// named, for a job that prefers other nodes (flotilla.Job.AvoidNodes). It
// returns id itself when the exclusion would change nothing or leave
// nothing, and interns as Avoid does; the two compose (AvoidNodes of an
// Avoid answer excludes both).
func (db *DB) AvoidNodes(id ConstraintID, nodes []string) ConstraintID {
	return db.avoidSet(id, nodes, avoidNodesTag, true)
}

// avoidNodesTag starts the intern key of a constraint made by AvoidNodes.
var avoidNodesTag = [2]byte{0x82, 0x00}

// avoidSet is Avoid and AvoidNodes: names are node names when byNode is
// set, cluster names otherwise.
func (db *DB) avoidSet(id ConstraintID, names []string, tag [2]byte, byNode bool) ConstraintID {
	if len(names) == 0 || id < 0 || int(id) >= len(db.cons) {
		return id
	}
	set := append(db.consKeys[:0], names...)
	slices.Sort(set)
	set = slices.Compact(set)
	buf := append(db.consBuf[:0], tag[:]...)
	buf = binary.AppendUvarint(buf, uint64(id))
	for _, c := range set {
		buf = appendString(buf, c)
	}
	db.consBuf = buf
	aid, ok := db.consIndex[string(buf)]
	if !ok {
		aid = db.avoid(id, set, byNode)
		db.consIndex[string(buf)] = aid
	}
	clear(set)
	db.consKeys = set[:0]
	return aid
}

// avoid builds Avoid's (or, byNode, AvoidNodes') answer for id and a
// sorted set of names.
func (db *DB) avoid(id ConstraintID, set []string, byNode bool) ConstraintID {
	base := &db.cons[id]
	c := constraint{
		selector:    base.selector,
		affinity:    base.affinity,
		tolerations: base.tolerations,
		bits:        make([]uint64, len(base.bits)),
	}
	kept, dropped := false, false
	for i, n := range db.nodes {
		if !base.has(i) {
			continue
		}
		name := n.Cluster
		if byNode {
			name = n.Name
		}
		if _, avoided := slices.BinarySearch(set, name); avoided {
			dropped = true
			continue
		}
		kept = true
		c.bits[i>>6] |= 1 << (i & 63)
	}
	if !kept || !dropped {
		return id
	}
	db.cons = append(db.cons, c)
	return ConstraintID(len(db.cons) - 1)
}

// ExplainIn is Explain for a query confined to the domain r: it says why no
// node of r fits q (q.Constraint may be restricted already or not). Nodes
// outside r are not considered and not counted; a domain with no nodes
// (or whose only node is not q.OnlyNode) gives NoNodes. Like Explain it
// costs O(N·(R + selector + taints)) and allocates.
func (db *DB) ExplainIn(q *Query, r Restriction) Reason {
	if ok, field, value := db.valid(q); !ok {
		return Reason{Kind: InvalidQuery, Node: -1, Resource: -1, Field: field, Value: value}
	}
	rq := *q
	rq.Constraint = db.Restrict(q.Constraint, r)
	return db.explain(q, db.Select, &rq, func(n int) bool { return r.admits(db.nodes[n]) })
}

// Clusters returns the distinct Node.Cluster values, ascending (so "", the
// default cluster, comes first when present). O(N log N); allocates.
func (db *DB) Clusters() []string {
	var out []string
	for _, n := range db.nodes {
		out = append(out, n.Cluster)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// LabelValues returns, ascending, the distinct values of label among the
// nodes of cluster that carry it (cordoned nodes included); none when no
// node of the cluster carries it. O(N log N); allocates.
func (db *DB) LabelValues(cluster, label string) []string {
	var out []string
	for _, n := range db.nodes {
		if n.Cluster != cluster {
			continue
		}
		if v, ok := n.Labels[label]; ok {
			out = append(out, v)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// CompareIndexed compares two vectors of the DB's schema lexicographically
// over the indexed resources, in the order Options.IndexedResources gives
// them, exactly (resolutions are ignored): -1 when a is smaller, +1 when
// larger, 0 when they agree on every indexed resource. It is the order
// smallest-fit uses, for callers that rank requests or free capacity the
// same way. It allocates nothing; vectors shorter than the schema compare
// as if padded with zeros.
func (db *DB) CompareIndexed(a, b flotilla.Resources) int {
	for i := 0; i < db.nidx; i++ {
		r := db.idxRes[i]
		var x, y int64
		if r < len(a) {
			x = a[r]
		}
		if r < len(b) {
			y = b[r]
		}
		switch {
		case x < y:
			return -1
		case x > y:
			return +1
		}
	}
	return 0
}
