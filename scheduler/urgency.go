package scheduler

import (
	"slices"

	"github.com/flotilla-sched/flotilla"

	"github.com/flotilla-sched/flotilla/preempt"
)

// makeRoom preempts, on node, the fewest preemptible running jobs of lower
// priority than level that bring every class level back to non-negative
// allocatable after a job bound there at level: lowest priority first and,
// within a priority, the jobs that would be rescheduled last first (the
// queue furthest above its fair share, then the latest started). Gang
// members take their whole gang with them. by is the job whose placement
// needed the room, recorded in the victims' Preemptions. slack is how far
// below zero allocatable may stay: nil for new work, which must fit the
// node's total; an over-committed node's excess for its evicted jobs going
// back (tryEvicted), which may leave it as far over as it started.
func (p *preemptor) makeRoom(node, level int, slack flotilla.Resources, by *flotilla.Job) {
	c := p.c
	cand := p.scratch.victims[:0]
	for _, ri := range p.nodeRun[node] {
		if r := &p.run[ri]; r.bound() && int(r.level) < level && p.preemptible(ri) {
			cand = append(cand, ri)
		}
	}
	vs := p.scratch.victimInfo[:0]
	for _, ri := range cand {
		vs = append(vs, p.victim(ri, c.queueFraction(int(p.run[ri].queue))))
	}
	p.scratch.victimInfo = vs
	p.scratch.victimOrder = p.scratch.victimOrder[:0]
	for i := range cand {
		p.scratch.victimOrder = append(p.scratch.victimOrder, i)
	}
	slices.SortFunc(p.scratch.victimOrder, func(a, b int) int { return preempt.Compare(&vs[a], &vs[b]) })
	p.scratch.victims = cand
	// Victims are chosen as units: a lone job, or every candidate of one
	// gang on this node, which go (and come back) together; a unit stands
	// where its first member falls in victim order.
	members := p.scratch.unitMembers[:0]
	starts := p.scratch.unitStarts[:0]
	for _, k := range p.scratch.victimOrder {
		ri := cand[k]
		id := p.run[ri].job.Gang.ID
		if id != "" && slices.ContainsFunc(members, func(o int32) bool { return p.run[o].job.Gang.ID == id }) {
			continue // already in its gang's unit
		}
		starts = append(starts, len(members))
		members = append(members, ri)
		if id == "" {
			continue
		}
		for _, k2 := range p.scratch.victimOrder {
			if o := cand[k2]; o != ri && p.run[o].job.Gang.ID == id {
				members = append(members, o)
			}
		}
	}
	starts = append(starts, len(members))
	p.scratch.unitMembers, p.scratch.unitStarts = members, starts
	unit := func(u int) []int32 { return members[starts[u]:starts[u+1]] }
	kept := preempt.Fewest(len(starts)-1, func() bool { return p.nodeFits(node, slack) },
		func(u int) {
			for _, ri := range unit(u) {
				r := &p.run[ri]
				c.db.Unbind(node, int(r.queue), int(r.level), r.job.Requests)
			}
		},
		func(u int) {
			for _, ri := range unit(u) {
				r := &p.run[ri]
				c.db.Bind(node, int(r.queue), int(r.level), r.job.Requests)
			}
		}, p.scratch.kept)
	p.scratch.kept = kept
	taken := p.scratch.taken[:0]
	for _, u := range kept {
		taken = append(taken, unit(u)...)
	}
	p.scratch.taken = taken
	// The victims' gang mates elsewhere go too: a gang is preempted whole.
	// Drop every victim first (they are already unbound), then sweep their
	// gang mates that are still on some node.
	for _, ri := range taken {
		p.dropVictim(ri, false, by)
	}
	for _, ri := range taken {
		for _, m := range p.gangOf(ri) {
			switch mr := &p.run[m]; mr.state {
			case stRunning, stBack, stNew:
				p.dropVictim(m, true, by)
			case stEvicted: // already off the books; give up its hold
				c.db.Release(int(mr.node), evictedLevel, mr.job.Requests)
				p.held--
				p.preempt(m, PreemptedForUrgency, by)
			}
		}
	}
	c.db.Forget()
}

// dropVictim takes an urgency victim off the books (and off its node when
// unbind is set): a running job is preempted, a job scheduled earlier in
// this cycle goes back to waiting.
func (p *preemptor) dropVictim(ri int32, unbind bool, by *flotilla.Job) {
	c := p.c
	r := &p.run[ri]
	q, cl := int(r.queue), int(r.class)
	if unbind {
		c.db.Unbind(int(r.node), q, int(r.level), r.job.Requests)
	}
	c.unaccount(q, cl, r.job.Requests)
	c.room.drops++ // an allocation shrank: tree room may be made again
	qs := &c.queues[q]
	qs.running--
	defer c.refresh(q)
	if r.state != stNew {
		p.preempt(ri, PreemptedForUrgency, by)
		return
	}
	r.state = stDisplaced
	qs.scheduled--
	c.tokens.give(q, 1)
	c.scheduledTotal.Sub(r.job.Requests)
	c.rep.res.Scheduled[r.sched].Job = nil
	// Offer it again, first in its queue: it may fit elsewhere. A gang
	// member is not offered alone: its gang lost its place as a whole.
	if qs.stopped || r.job.IsGang() {
		c.unscheduled(r.job, displacedReason())
		return
	}
	qs.retry = append(qs.retry, ri)
	if !c.offered(q) && c.advance(q) {
		c.offer(q)
	}
}

// bound reports whether run job r holds its capacity, on its node and
// its queue's books: running, put back, or placed this cycle.
func (r *runJob) bound() bool {
	return r.state == stRunning || r.state == stBack || r.state == stNew
}

// victim is run job ri as urgency ranks its victims, frac being its
// queue's fraction of fair share (queueFraction).
func (p *preemptor) victim(ri int32, frac float64) preempt.Victim {
	r := &p.run[ri]
	return preempt.Victim{Level: int(r.level), QueueFraction: frac, Start: r.start, ID: r.job.ID}
}

// queueFraction is queue q's share over its fair share: among victims of
// one level, those of the queue furthest above its fair share go first.
func (c *cycle) queueFraction(q int) float64 {
	qs := &c.queues[q]
	return c.model.Share(qs.alloc) / qs.fair
}

func displacedReason() Reason {
	return Reason{Code: ReasonDisplaced, Message: "placed, then displaced in the same cycle by a job of higher priority"}
}

// refresh re-ranks queue q after its allocation changed under it.
func (c *cycle) refresh(q int) {
	if c.tour != nil {
		c.tour.refresh(q)
		return
	}
	if c.sel != nil && c.sel.Contains(q) && c.queues[q].next.kind != noUnit {
		c.sel.Update(q, c.candidate(q))
	}
}

// nodeFits reports whether every class level of node has non-negative
// allocatable (the evicted level may stay negative: that is displacement),
// or with slack (not nil) allocatable no further below zero than slack.
func (p *preemptor) nodeFits(node int, slack flotilla.Resources) bool {
	c := p.c
	for l := evictedLevel + 1; l < len(c.s.levels); l++ {
		a := c.db.Allocatable(node, l)
		if slack == nil {
			if a.AnyNegative() {
				return false
			}
			continue
		}
		for r, v := range a {
			if v+slack[r] < 0 {
				return false
			}
		}
	}
	return true
}
