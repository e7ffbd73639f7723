package gang

import (
	"slices"

	"github.com/flotilla-sched/flotilla/binpack"
)

// This file confines a placement to the clusters and nodes no member of
// the gang avoids (Job.AvoidClusters, Job.AvoidNodes): PlaceWithin's
// Domains, and Avoids, which says when that can make a difference.

// Domains chooses the domains a placement may use.
type Domains uint8

const (
	// AllDomains: every domain of the gang.
	AllDomains Domains = iota
	// UnavoidedDomains: only the domains whose cluster no member of the
	// gang names in its Job.AvoidClusters, and in them only the nodes no
	// member names in its Job.AvoidNodes.
	UnavoidedDomains
)

// Avoids reports whether a member of g avoids a node (Job.AvoidNodes), or a
// cluster (Job.AvoidClusters) that holds some of g's domains while other
// domains lie in clusters no member avoids: only then can placing with
// UnavoidedDomains first make a difference. O(M·A·log A) for M members avoiding A clusters in all, plus
// O(D·log A) for D domains; it allocates nothing after warm-up (the first
// call for a uniformity label builds its domains, as Place does).
func (p *Placer) Avoids(db *binpack.DB, g *Gang) bool {
	if db == nil || g == nil {
		return false
	}
	if p.nodeSet(g) {
		return true // a node to keep off: worth a first search without it
	}
	if !p.avoidSet(g) {
		return false
	}
	p.use(db)
	doms := p.domainsFor(g.UniformityLabel)
	some, other := false, false
	for d := range doms {
		if p.isAvoided(&doms[d]) {
			some = true
		} else {
			other = true
		}
	}
	return some && other
}

// avoidSet gathers the clusters g's members avoid into p.avoid, sorted
// and without repeats, and reports whether there are any.
func (p *Placer) avoidSet(g *Gang) bool {
	p.avoid = avoided(p.avoid, g, false)
	return len(p.avoid) > 0
}

// nodeSet gathers the nodes g's members avoid (Job.AvoidNodes) into
// p.avoidNodes, sorted and without repeats, and reports whether there are
// any.
func (p *Placer) nodeSet(g *Gang) bool {
	p.avoidNodes = avoided(p.avoidNodes, g, true)
	return len(p.avoidNodes) > 0
}

// avoided returns the names g's members avoid, the union of their
// Job.AvoidNodes when byNode is set, else of their Job.AvoidClusters,
// sorted and without repeats, in set's memory.
func avoided(set []string, g *Gang, byNode bool) []string {
	set = set[:0]
	for _, e := range g.Members {
		if e == nil || e.Job == nil {
			continue
		}
		if byNode {
			set = append(set, e.Job.AvoidNodes...)
		} else {
			set = append(set, e.Job.AvoidClusters...)
		}
	}
	slices.Sort(set)
	return slices.Compact(set)
}

func (p *Placer) isAvoided(d *domain) bool {
	_, found := slices.BinarySearch(p.avoid, d.r.Cluster)
	return found
}

// unavoided returns the domains of doms whose cluster no member of g
// avoids, in a scratch slice.
func (p *Placer) unavoided(doms []domain, g *Gang) []domain {
	if !p.avoidSet(g) {
		return doms
	}
	sub := p.sub[:0]
	for d := range doms {
		if !p.isAvoided(&doms[d]) {
			sub = append(sub, doms[d])
		}
	}
	p.sub = sub
	return sub
}
