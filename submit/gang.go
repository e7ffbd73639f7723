package submit

import (
	"fmt"
	"slices"
	"strconv"

	"github.com/flotilla-sched/flotilla"
)

// This file holds the submission rules of gangs: a gang's members come
// together in one request, as many as its cardinality, agreeing on
// cardinality, node-uniformity label, topology and pools; a topology it
// asks for is one of the catalog's.

// gangAcc gathers a gang's templates.
type gangAcc struct {
	path     string // the first member template, jobs[i]
	card     int
	label    string
	topology flotilla.GangTopology
	// pools are the first member's pools, sorted (nil: every pool).
	pools   []string
	members int
}

// sortedPools are pools sorted, without repeats; nil when pools is.
func sortedPools(pools []string) []string {
	if pools == nil {
		return nil
	}
	return slices.Compact(slices.Sorted(slices.Values(pools)))
}

// gangMember checks template t (path p, n jobs) against the earlier members
// of its gang, counts its members, and reports whether t is the gang's
// first template.
func (c *checker) gangMember(p string, t *JobTemplate, n int, gangs map[string]*gangAcc) bool {
	gs, gp := t.Gang, p+".gang"
	if gs.ID == "" {
		c.add(flotilla.Errorf(gp+".id", "", flotilla.ErrRequired, "a gang needs an id"))
		return false
	}
	g, seen := gangs[gs.ID]
	if !seen {
		if gs.Cardinality < 1 {
			c.add(flotilla.Errorf(gp+".cardinality", strconv.Itoa(gs.Cardinality), flotilla.ErrOutOfRange, "a gang has at least 1 member"))
		}
		g = &gangAcc{path: p, card: gs.Cardinality, label: gs.NodeUniformityLabel, topology: gs.Topology.topology(),
			pools: sortedPools(t.Pools)}
		gangs[gs.ID] = g
		c.gangTopology(gp+".topology", gs)
	} else {
		if gs.Cardinality != g.card {
			c.add(flotilla.Errorf(gp+".cardinality", strconv.Itoa(gs.Cardinality), flotilla.ErrInconsistent,
				"gang %q: %s.gang.cardinality is %d", gs.ID, g.path, g.card))
		}
		if gs.NodeUniformityLabel != g.label {
			c.add(flotilla.Errorf(gp+".nodeUniformityLabel", gs.NodeUniformityLabel, flotilla.ErrInconsistent,
				"gang %q: %s.gang.nodeUniformityLabel is %q", gs.ID, g.path, g.label))
		}
		for _, err := range gs.Topology.topology().Disagreements(gp+".topology", gs.ID, g.path+".gang.topology", g.topology) {
			c.add(err)
		}
		// A gang runs whole in one pool: members accepting different
		// pools would each wait for the others in its own.
		if ps := sortedPools(t.Pools); (ps == nil) != (g.pools == nil) || !slices.Equal(ps, g.pools) {
			value, first := fmt.Sprint(t.Pools), fmt.Sprint(g.pools)
			if t.Pools == nil {
				value = ""
			}
			if g.pools == nil {
				first = "absent (every pool)"
			}
			c.add(flotilla.Errorf(p+".pools", value, flotilla.ErrInconsistent,
				"gang %q: its members accept the same pools, and %s.pools is %s", gs.ID, g.path, first))
		}
	}
	g.members += n
	return !seen
}

// gangTopology checks a gang's topology request (at tp) against the
// catalog's topologies: a level required or preferred, not with a
// node-uniformity label, naming a configured topology and its levels.
func (c *checker) gangTopology(tp string, gs *GangSpec) {
	if gs.Topology == nil {
		return
	}
	t := gs.Topology.topology()
	if errs := t.LevelProblems(tp, gs.NodeUniformityLabel); len(errs) > 0 {
		for _, err := range errs {
			c.add(err)
		}
		return
	}
	if _, _, _, err := flotilla.ResolveTopology(c.topologies, tp, t); err != nil {
		c.add(err)
	}
}
