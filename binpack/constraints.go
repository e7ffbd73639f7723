package binpack

import (
	"encoding/binary"
	"maps"
	"slices"

	"github.com/flotilla-sched/flotilla"
)

// constraint is one interned (node selector, tolerations) pair and the set
// of nodes whose labels and taints it admits (cordons aside).
type constraint struct {
	selector    map[string]string
	affinity    []flotilla.NodeSelectorTerm
	tolerations []flotilla.Toleration
	bits        []uint64
}

func (c *constraint) has(n int) bool { return c.bits[n>>6]&(1<<(n&63)) != 0 }

// Constraints interns a job's node selector and tolerations and returns the
// id to put in a Query. Jobs with equal selectors and equal toleration
// lists (in the same order) get the same id. With both empty it returns
// NoConstraint at once without allocating.
//
// An id already seen costs a map lookup and does not allocate (once the DB's
// scratch buffers have grown); a new one costs O(N) selector and taint
// checks and N/8 bytes. Ids are valid for this DB only.
func (db *DB) Constraints(selector map[string]string, tolerations []flotilla.Toleration) ConstraintID {
	return db.constraints(selector, nil, tolerations)
}

// JobConstraints is Constraints for a job: its node selector, its required
// node affinity (flotilla.AffinityMatches) and its tolerations. A job
// without an affinity gets the id Constraints gives.
func (db *DB) JobConstraints(j *flotilla.Job) ConstraintID {
	return db.constraints(j.NodeSelector, j.NodeAffinity, j.Tolerations)
}

// affinityTag marks the affinity part of an intern key.
const affinityTag = 0xa7

func (db *DB) constraints(selector map[string]string, affinity []flotilla.NodeSelectorTerm, tolerations []flotilla.Toleration) ConstraintID {
	if len(selector) == 0 && len(tolerations) == 0 && len(affinity) == 0 {
		return NoConstraint
	}
	keys := db.consKeys[:0]
	for k := range selector {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	buf := db.consBuf[:0]
	buf = binary.AppendUvarint(buf, uint64(len(keys)))
	for _, k := range keys {
		buf = appendString(buf, k)
		buf = appendString(buf, selector[k])
	}
	for i := range tolerations {
		t := &tolerations[i]
		buf = appendString(buf, t.Key)
		buf = appendString(buf, string(t.Operator))
		buf = appendString(buf, t.Value)
		buf = appendString(buf, string(t.Effect))
	}
	if len(affinity) > 0 {
		buf = append(buf, affinityTag)
		buf = binary.AppendUvarint(buf, uint64(len(affinity)))
		for i := range affinity {
			es := affinity[i].MatchExpressions
			buf = binary.AppendUvarint(buf, uint64(len(es)))
			for k := range es {
				buf = appendString(buf, es[k].Key)
				buf = appendString(buf, string(es[k].Operator))
				buf = binary.AppendUvarint(buf, uint64(len(es[k].Values)))
				for _, v := range es[k].Values {
					buf = appendString(buf, v)
				}
			}
		}
	}
	clear(keys)
	db.consKeys, db.consBuf = keys[:0], buf
	if id, ok := db.consIndex[string(buf)]; ok {
		return id
	}
	c := constraint{
		selector:    maps.Clone(selector),
		affinity:    cloneAffinity(affinity),
		tolerations: slices.Clone(tolerations),
		bits:        make([]uint64, (len(db.nodes)+63)/64),
	}
	for i, n := range db.nodes {
		if flotilla.SelectorMatches(c.selector, n.Labels) && flotilla.AffinityMatches(c.affinity, n.Labels) &&
			flotilla.TaintsTolerated(n.Taints, c.tolerations) {
			c.bits[i>>6] |= 1 << (i & 63)
		}
	}
	id := ConstraintID(len(db.cons))
	db.cons = append(db.cons, c)
	db.consIndex[string(buf)] = id
	return id
}

// Admits reports whether the constraint's selector and tolerations let a
// job onto node (cordons aside).
func (db *DB) Admits(id ConstraintID, node int) bool { return db.cons[id].has(node) }

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// cloneAffinity copies terms deeply: the constraint outlives the job.
func cloneAffinity(terms []flotilla.NodeSelectorTerm) []flotilla.NodeSelectorTerm {
	if terms == nil {
		return nil
	}
	out := make([]flotilla.NodeSelectorTerm, len(terms))
	for i, t := range terms {
		es := make([]flotilla.NodeSelectorRequirement, len(t.MatchExpressions))
		for k, e := range t.MatchExpressions {
			es[k] = flotilla.NodeSelectorRequirement{Key: e.Key, Operator: e.Operator, Values: slices.Clone(e.Values)}
		}
		out[i] = flotilla.NodeSelectorTerm{MatchExpressions: es}
	}
	return out
}
