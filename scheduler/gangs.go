package scheduler

import (
	"fmt"
	"slices"

	"github.com/flotilla-sched/flotilla/binpack"
	"github.com/flotilla-sched/flotilla/gang"
)

// gangWork is the cycle's gang machinery: the accumulator that completes
// gangs from their members as queues are read, the placer, and the memory
// a placement reuses (each member's level, the nodes used).
type gangWork struct {
	acc           gang.Accumulator
	placer        gang.Placer
	levels, nodes []int
}

// tryGang places the queue's head gang all at once or not at all: per-class
// limits over all its members, then one gang.Placer transaction (one
// cluster, one uniformity-label value), rolled back on failure. A gang
// first looks for free capacity; failing that, it searches again at its
// lowest class's level, where evicted jobs and lower-priority preemptible
// jobs do not count, and on each node it used preempts the fewest such jobs
// that make room, as a lone job does. A gang whose members avoid clusters
// makes all of that in the other clusters first (placeGang).
func (c *cycle) tryGang(qi int) {
	qs := &c.queues[qi]
	g := qs.next.gang
	// Per-class limits: account members one by one, undo on the first
	// member that would cross its class's cap.
	for i, m := range g.Members {
		ci, _ := c.s.class(m.Job)
		if c.queues[qi].overClassLimit(ci, m.Job.Requests) {
			why := c.queues[qi].classLimitReason(c.s, ci, m.Job.Requests)
			for _, d := range g.Members[:i] {
				dc, _ := c.s.class(d.Job)
				c.queues[qi].unaccount(dc, d.Job.Requests)
			}
			c.unscheduledUnit(qi, Reason{Code: why.Code, Message: fmt.Sprintf("gang %s, member %s: %s", g.ID, m.Job.ID, why.Message)})
			return
		}
		c.queues[qi].account(ci, m.Job.Requests)
	}
	for _, m := range g.Members {
		ci, _ := c.s.class(m.Job)
		c.queues[qi].unaccount(ci, m.Job.Requests)
	}
	// Members all hold capacity at the highest member's bind level: the
	// gang goes whole and urgency takes only jobs of strictly lower
	// priority, so none of its capacity may look free to a job that could
	// not take every member (the top level when any member is
	// non-preemptible: the gang can then never be preempted).
	levels := c.gangs.levels[:0]
	hold := 0
	for _, m := range g.Members {
		ci, _ := c.s.class(m.Job)
		hold = max(hold, c.s.bindLevel[ci])
	}
	for range g.Members {
		levels = append(levels, hold)
	}
	c.gangs.levels = levels
	// The gang's search level for displacement is its lowest class's.
	search := len(c.s.levels) - 1
	for _, m := range g.Members {
		ci, _ := c.s.class(m.Job)
		search = min(search, c.s.classLevel[ci])
	}
	// A gang whose members avoid some clusters (Job.AvoidClusters) makes
	// every search in the clusters none of them avoids first, and only
	// when none of those can take it, every search again over all.
	mark := c.db.Mark()
	within := gang.AllDomains
	if gangAvoids(g) && c.gangs.placer.Avoids(c.db, g) {
		within = gang.UnavoidedDomains
	}
	pl, level, displacing, err := c.placeGang(g, qi, levels, search, mark, within)
	if within != gang.AllDomains && err == nil && !pl.Placed {
		c.db.Rollback(mark)
		pl, level, displacing, err = c.placeGang(g, qi, levels, search, mark, gang.AllDomains)
	}
	if err != nil || !pl.Placed {
		var why Reason
		switch {
		case err != nil:
			why = Reason{Code: ReasonNeverFits, Message: err.Error()}
		case pl.Why.Cause != gang.MemberDoesNotFit:
			why = gangNoFitReason(c.s.cfg.Schema, c.pre.putBack, pl.Why, level) // complete: no search to explain
		case c.rep.needExplanation(qi, pl.Why):
			// The placer defers its explanations: this failure is
			// explained, with the db as the last search left it.
			if e, ok := c.gangs.placer.ExplainLast(c.db); ok {
				pl.Why = e
			}
			why = gangNoFitReason(c.s.cfg.Schema, c.pre.putBack, pl.Why, level)
		default:
			// Every member's group has its reason already: only the
			// code counts the members in.
			why = Reason{Code: gangCode(pl.Why)}
		}
		c.db.Rollback(mark)
		c.unscheduledUnit(qi, why)
		return
	}
	c.db.Forget()
	nodes := append(c.gangs.nodes[:0], pl.Nodes...)
	c.gangs.nodes = nodes
	// On each node it used, the gang makes room: lower-priority jobs for a
	// displacing placement, then evicted jobs whose holds no longer fit,
	// rescheduled last first.
	for i, n := range nodes {
		if (!displacing && c.pre.held == 0) || slices.Contains(nodes[:i], n) {
			continue
		}
		if displacing && !c.pre.nodeFits(n, nil) {
			c.pre.makeRoom(n, search, nil, g.Members[i].Job)
		}
		c.pre.displaceOn(n, g.Members[i].Job)
	}
	// Every member gets a run record: a gang placed this cycle may be an
	// urgency victim later in it, whole.
	for i, m := range g.Members {
		ci, _ := c.s.class(m.Job)
		c.commit(qi, ci, nodes[i], m, m.Job.Requests, levels[i], true)
	}
}

// placeGang makes a gang's searches in the domains within chooses, as a
// lone job's: free capacity, then evicted jobs' capacity, then
// lower-priority preemptible jobs' capacity at search, the level of the
// gang's lowest class. It returns the placement (kept in the undo log
// after mark when placed), the level of the last search (the explanation
// of a failure is that search's, the most room the gang could use), and
// whether the placement preempts. A failure changes nothing but the undo
// log after mark, which the caller rolls back.
func (c *cycle) placeGang(g *gang.Gang, qi int, levels []int, search int, mark binpack.Mark, within gang.Domains) (pl gang.Placement, level int, displacing bool, err error) {
	level = evictedLevel
	pl, err = c.gangs.placer.PlaceWithin(c.db, g, qi, levels, evictedLevel, within)
	if err == nil && !pl.Placed && c.pre.held > 0 {
		// Evicted jobs' capacity: displace those rescheduled last, as a
		// lone job does; past the walk's budget, search where every hold
		// is free and displace per node used.
		c.db.Rollback(mark)
		level = lowestClassLevel
		if pl, err = c.pre.placeGangDisplacing(g, qi, levels, within); err == nil && !pl.Placed {
			c.db.Rollback(mark)
			pl, err = c.gangs.placer.PlaceWithin(c.db, g, qi, levels, level, within)
		}
	}
	if err == nil && !pl.Placed && search > lowestClassLevel && c.pre.minPreemptibleLevel < search {
		c.db.Rollback(mark)
		level = search
		pl, err = c.gangs.placer.PlaceWithin(c.db, g, qi, levels, level, within)
		displacing = pl.Placed
	}
	return pl, level, displacing, err
}

// gangAvoids reports whether a member of g avoids some cluster or node.
func gangAvoids(g *gang.Gang) bool {
	for _, m := range g.Members {
		if len(m.Job.AvoidClusters) > 0 || len(m.Job.AvoidNodes) > 0 {
			return true
		}
	}
	return false
}

// needExplanation reports whether a gang of queue qi that failed with
// why needs its full explanation: with ReportEveryUnscheduled, or when a
// member is the first of its Unscheduled group (the group keeps its first
// job's reason; the others' would be computed to be dropped).
func (r *report) needExplanation(qi int, why gang.Explanation) bool {
	if r.every {
		return true
	}
	code := gangCode(why)
	for _, m := range r.queues[qi].next.gang.Members {
		if _, ok := r.groups[groupKey{int32(qi), code, m.Key}]; !ok {
			return true
		}
	}
	return false
}

// gangCode is the reason code of a gang the placer could not place
// (gangNoFitReason's).
func gangCode(why gang.Explanation) ReasonCode {
	if why.NeverFits {
		return ReasonNeverFits
	}
	return ReasonNoRoom
}

// unscheduledUnit records the queue's head, a job or every member of a
// gang, as not scheduled for why.
func (c *cycle) unscheduledUnit(qi int, why Reason) {
	qs := &c.queues[qi]
	if qs.next.gang == nil {
		c.rep.unscheduledEntry(qi, qs.next.entry, why)
		return
	}
	for _, m := range qs.next.gang.Members {
		c.rep.unscheduledEntry(qi, m, why)
	}
}

// reportIncompleteGangs records the members of gangs whose other members
// were not seen this cycle (not yet submitted, or beyond the lookback).
func (c *cycle) reportIncompleteGangs() {
	for _, g := range c.gangs.acc.Pending() {
		why := Reason{Code: ReasonGangIncomplete, Message: fmt.Sprintf("gang %s: %d of %d members seen", g.ID, len(g.Members), g.Cardinality)}
		for _, m := range g.Members {
			c.rep.unscheduledEntry(c.queueIdx[m.Job.Queue], m, why)
		}
	}
}
