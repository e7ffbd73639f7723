package gang

import (
	"fmt"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/binpack"
)

// This file says why a gang was not placed: the Explanation and its
// Cause, explanations deferred until asked for (DeferExplanations,
// ExplainLast), and whether the gang could fit were the nodes empty
// (Explanation.NeverFits).

// lastFailure is what ExplainLast needs of the last failed placement.
type lastFailure struct {
	ok        bool
	g         *Gang
	dom       domain
	q, search int
	levels    []int
	why       Explanation
}

// DeferExplanations makes later failed placements skip the node
// database's explanation (Explanation.Reason is left zero; the other
// fields, NeverFits included, are set as usual) until ExplainLast asks
// for it: a caller that keeps one explanation of many failures (a
// scheduler grouping the jobs it did not place, or retrying a gang at
// several levels) pays only for the ones it keeps. Off by default.
func (p *Placer) DeferExplanations(on bool) {
	p.deferred = on
	p.last = lastFailure{}
}

// ExplainLast returns the full explanation (as PlaceWithin returns it
// without DeferExplanations) of the Placer's last placement, which must
// have failed with Cause MemberDoesNotFit, with db exactly as that
// placement left it and no other placement since; ok is false when there
// is none to explain (the last placement did not fail for want of room,
// so its Explanation is complete, or it was made without
// DeferExplanations, or on another db). db is left as it was.
func (p *Placer) ExplainLast(db *binpack.DB) (why Explanation, ok bool) {
	l := &p.last
	if !l.ok || db == nil || db != p.db {
		return Explanation{}, false
	}
	p.search = l.search
	mark := db.Mark()
	placed := p.attempt(l.g, &l.dom, l.q, l.levels, len(l.g.Members))
	why = l.why
	why.Reason = p.explainMember(l.g, &l.dom, l.q, placed)
	db.Rollback(mark)
	return why, true
}

// Cause classifies an Explanation.
type Cause uint8

const (
	// Fits: the gang was placed.
	Fits Cause = iota
	// NoNodes: the DB has no nodes.
	NoNodes
	// NoUniformityLabel: no node carries the gang's node-uniformity label,
	// so no value of it can host the gang.
	NoUniformityLabel
	// MemberDoesNotFit: in every domain some member found no node. The
	// explanation is for the best domain (the most members placed, ties to
	// the first in (cluster, value) order) and its first member that did
	// not fit.
	MemberDoesNotFit
	// AllAvoided: a placement confined to UnavoidedDomains found every
	// domain in a cluster some member avoids (Job.AvoidClusters).
	AllAvoided
	// NoTopologyDomain: no node carries the labels of the gang's required
	// topology level (Explanation.Level) and those above it.
	NoTopologyDomain
	// NoDomainHasRoom: no domain of the gang's required topology level has
	// the members' summed requests free. The explanation names the domain
	// with the most room (Path, compared as binpack.DB.CompareIndexed does)
	// and the first resource, in the indexed order, it is short of.
	NoDomainHasRoom
)

func (c Cause) String() string {
	switch c {
	case Fits:
		return "Fits"
	case NoNodes:
		return "NoNodes"
	case NoUniformityLabel:
		return "NoUniformityLabel"
	case MemberDoesNotFit:
		return "MemberDoesNotFit"
	case AllAvoided:
		return "AllAvoided"
	case NoTopologyDomain:
		return "NoTopologyDomain"
	case NoDomainHasRoom:
		return "NoDomainHasRoom"
	}
	return fmt.Sprintf("Cause(%d)", uint8(c))
}

// Explanation says why a gang was not placed. It is a plain value.
type Explanation struct {
	Cause Cause
	// Gang is the gang's ID and Label its node-uniformity label.
	Gang, Label string
	// Member is the index in Gang.Members of the member that did not fit
	// (MemberDoesNotFit), else -1; Job is its job ID.
	Member int
	Job    string
	// PlacedBefore counts the members placed in that domain before Member
	// was tried (members go largest request first).
	PlacedBefore int
	// Members is the gang's size.
	Members int
	// Domain is where Member did not fit.
	Domain binpack.Restriction
	// Level and Path name Domain's topology level (its label key) and the
	// domain's values ("b1/r7"), for a gang with a required topology that
	// was not placed (MemberDoesNotFit, NoDomainHasRoom; Level alone for
	// NoTopologyDomain); else empty.
	Level, Path string
	// Resource, Need and Have, for NoDomainHasRoom: the resource (a schema
	// index) Path's domain is short of, the members' summed request of it,
	// and what the domain has free.
	Resource   int
	Need, Have int64
	// Reason is binpack's explanation for Member in Domain, with the
	// members placed before it still bound: every node of the domain
	// counted under the filter that excluded it, the shortfalls by
	// resource.
	Reason binpack.Reason
	// NeverFits is true when the gang could not be placed even if every
	// node were empty: no domain, or in every domain some member has no
	// uncordoned node that admits it and is large enough, or the members'
	// summed requests exceed the domain's uncordoned nodes' totals. (A
	// domain that passes these checks may still be unable to pack the
	// gang; NeverFits is then false.)
	NeverFits bool
}

// String renders the explanation for people; schema (may be nil) names
// resources.
func (e Explanation) String(schema *flotilla.ResourceSchema) string {
	switch e.Cause {
	case Fits:
		return fmt.Sprintf("gang %q fits", e.Gang)
	case NoNodes:
		return fmt.Sprintf("gang %q: no nodes", e.Gang)
	case NoUniformityLabel:
		return fmt.Sprintf("gang %q: no node carries the node-uniformity label %q", e.Gang, e.Label)
	case AllAvoided:
		return fmt.Sprintf("gang %q: every cluster that could hold it is one a member avoids", e.Gang)
	case NoTopologyDomain:
		return fmt.Sprintf("gang %q: no node carries the topology level label %q (and those above it): no %s to hold it",
			e.Gang, e.Level, LevelName(e.Level))
	case NoDomainHasRoom:
		return e.noRoomString(schema)
	case MemberDoesNotFit:
		where := "the default cluster"
		if e.Domain.Cluster != "" {
			where = fmt.Sprintf("cluster %q", e.Domain.Cluster)
		}
		if e.Level != "" {
			where = e.domainName()
		} else if e.Domain.Label != "" {
			where += fmt.Sprintf(" on %s=%s", e.Domain.Label, e.Domain.Value)
		}
		if e.Gang == "" { // a lone job
			return fmt.Sprintf("job %q does not fit in %s: %s", e.Job, where, e.Reason.String(schema))
		}
		return fmt.Sprintf("gang %q: member %d (job %q) does not fit in %s after %d of %d members were placed: %s",
			e.Gang, e.Member, e.Job, where, e.PlacedBefore, e.Members, e.Reason.String(schema))
	}
	return e.Cause.String()
}

// explain says which member of the attempt in dom (placed members
// before it) did not fit and whether the gang could fit any of doms were
// they empty, and, unless explanations are deferred, replays the attempt
// up to that member, asks binpack why it does not fit there and rolls
// back to mark.
func (p *Placer) explain(g *Gang, doms []domain, dom *domain, q int, levels []int, mark binpack.Mark, why Explanation, placed int) Placement {
	if !p.deferred {
		db := p.db
		placed = p.attempt(g, dom, q, levels, len(g.Members))
		why.Reason = p.explainMember(g, dom, q, placed)
		db.Rollback(mark)
	}
	fail := p.order[placed]
	why.Cause, why.Member, why.Job, why.PlacedBefore, why.Domain = MemberDoesNotFit, fail, g.Members[fail].Job.ID, placed, dom.r
	if dom.among {
		why.Path = dom.path
	}
	why.NeverFits = true
	for d := range doms {
		if !p.neverFitsIn(g, &doms[d]) {
			why.NeverFits = false
			break
		}
	}
	if p.deferred {
		p.last = lastFailure{ok: true, g: g, dom: *dom, q: q, search: p.search,
			levels: append(p.last.levels[:0], levels...), why: why}
	}
	return Placement{Domain: dom.r, Why: why}
}

// explainMember is binpack's explanation of why the member after the
// first placed ones of the attempt in dom (whose binds db holds) does not
// fit there.
func (p *Placer) explainMember(g *Gang, dom *domain, q, placed int) binpack.Reason {
	fail := p.order[placed]
	p.query = binpack.Query{Requests: g.Members[fail].Job.Requests, Level: p.search, Queue: q, Constraint: p.cons[fail], OnlyNode: -1}
	if dom.all {
		return p.db.Explain(&p.query)
	}
	if dom.among {
		return p.db.ExplainAmong(&p.query, dom.nodes)
	}
	return p.db.ExplainIn(&p.query, dom.r)
}

// neverFitsIn reports whether g cannot fit dom even with its nodes empty:
// the members' summed requests exceed the totals of its uncordoned nodes,
// or some member has no uncordoned node there that admits it and whose
// total holds it. Only on the failure path: O(M·N·R), members equal to the
// one before them in placement order checked once.
func (p *Placer) neverFitsIn(g *Gang, dom *domain) bool {
	db := p.db
	clear(p.sum)
	for _, e := range g.Members {
		p.sum.AddSaturating(e.Job.Requests)
	}
	total := p.total
	clear(total)
	for _, n := range dom.nodes {
		if !db.Cordoned(int(n)) {
			for r, v := range db.Node(int(n)).Total {
				total[r] = satAdd(total[r], v)
			}
		}
	}
	if !p.sum.Fits(total) {
		return true
	}
	prev := -1
	for _, i := range p.order[:len(g.Members)] {
		req := g.Members[i].Job.Requests
		if prev >= 0 && p.cons[i] == p.cons[prev] && req.Equal(g.Members[prev].Job.Requests) {
			continue
		}
		prev = i
		fits := false
		for _, n := range dom.nodes {
			if !db.Cordoned(int(n)) && db.Admits(p.cons[i], int(n)) && req.Fits(db.Node(int(n)).Total) {
				fits = true
				break
			}
		}
		if !fits {
			return true
		}
	}
	return false
}
