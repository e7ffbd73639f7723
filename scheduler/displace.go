package scheduler

import (
	"slices"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/binpack"
	"github.com/flotilla-sched/flotilla/fairness"
	"github.com/flotilla-sched/flotilla/preempt"
)

// Displacing evicted jobs.
//
// The rescheduling order is the order in which the fill would offer the
// evicted jobs back if all of them went back and no new work came between
// (preempt.CompareRescheduling): each evicted job is ranked as progressive
// filling ranks a queue's next unit — higher class priority first, then the
// smallest fraction of its fair share the queue would hold after the job,
// counting its allocation after the evictions plus the evicted jobs ahead
// of it in its queue, then the queue name — and jobs of one queue keep
// their evicted order (queue.LessEvicted). A gang is one unit, ranked where
// its member offered first stands (offering it brings back the whole
// gang). The order is fixed at eviction time, as Armada fixes it: new work
// and displacements change the queues' standing during the fill, but the
// index is not re-sorted.
//
// A job that must displace evicted jobs displaces those rescheduled last.

// displacement is the index of evicted jobs for displacement, and the
// scratch of its walks.
type displacement struct {
	// order lists the evicted units (a lone job, or a gang by its member
	// offered first), rescheduled last first. Units offered, displaced or
	// taken as urgency victims stay in it and are skipped; orderPos is how
	// many at the front are known to be gone.
	order    []int32
	orderPos int
	// freed[n*R:(n+1)*R] is, during a walk, what the units walked so far
	// hold on node n; marked[n] is set when n is among touched.
	freed   []int64
	marked  []bool
	touched []int32
	walked  []int32
	ranks   []int32
}

// isHeld reports whether run job ri is evicted and still holds its
// capacity: not yet offered back, displaced or preempted.
func (c *cycle) isHeld(ri int32) bool {
	r := &c.run[ri]
	return r.state == stEvicted && !r.tried
}

// indexEvicted builds the displacement index once eviction is done: every
// evicted unit in reverse rescheduling order, each member's rank its
// unit's place in it.
func (c *cycle) indexEvicted() {
	type unit struct {
		e  preempt.Evicted
		ri int32
	}
	var units []unit
	back := c.s.cfg.Schema.Zero()
	after := c.s.cfg.Schema.Zero()
	for qi := range c.queues {
		qs := &c.queues[qi]
		copy(back, qs.alloc)
		for p, ri := range qs.evicted {
			r := &c.run[ri]
			if r.rank >= 0 {
				continue // a gang member, ranked at its member offered first
			}
			// As candidate ranks a queue whose head is this job.
			copy(after, back)
			after.Add(r.job.Requests)
			cur, next := c.model.Share(back), c.model.Share(after)
			cand := fairness.NewCandidate(qi, qs.q.Name, r.entry.ClassPriority, cur, next-cur, qs.fair, qs.adjusted)
			if qs.fair > 0 {
				cand.Fraction = next / qs.fair
			}
			units = append(units, unit{preempt.Evicted{Candidate: cand, Position: p}, ri})
			for _, m := range c.gangOf(ri) {
				if mr := &c.run[m]; mr.state == stEvicted {
					mr.rank = 0
					back.Add(mr.job.Requests)
				}
			}
		}
	}
	preferLarge := c.s.cfg.EnablePreferLargeJobOrdering
	slices.SortFunc(units, func(a, b unit) int { return preempt.CompareRescheduling(&b.e, &a.e, preferLarge) })
	c.order = make([]int32, len(units))
	for k, u := range units {
		c.order[k] = u.ri
		for _, m := range c.gangOf(u.ri) {
			c.run[m].rank = int32(k)
		}
	}
}

// displaceFor finds room for job j (constraint cons) in capacity evicted
// jobs hold. It walks the evicted units from the one rescheduled last,
// adding what each holds on each node that admits j (not cordoned, selector
// and taints; the queue's tiers play no part), until some node's free
// capacity plus what the walked units hold there fits j; of the nodes the
// last unit walked made fit, the lowest-numbered is chosen. The walked
// units with a member on that node are displaced, with their whole gangs
// (displaceUnit), and the node is returned. It returns false, changing
// nothing, when no node fits even with every unit walked.
func (c *cycle) displaceFor(j *flotilla.Job, cons binpack.ConstraintID) (int, bool) {
	R := len(j.Requests)
	if c.freed == nil {
		c.freed = make([]int64, c.db.NodeCount()*R)
		c.marked = make([]bool, c.db.NodeCount())
	}
	for c.orderPos < len(c.order) && !c.isHeld(c.order[c.orderPos]) {
		c.orderPos++
	}
	walked, touched := c.walked[:0], c.touched[:0]
	found := -1
	for k := c.orderPos; k < len(c.order) && found < 0; k++ {
		u := c.order[k]
		if !c.isHeld(u) {
			continue
		}
		walked = append(walked, u)
		ms := c.gangOf(u)
		for _, m := range ms {
			n := int(c.run[m].node)
			if !c.isHeld(m) || c.db.Cordoned(n) || !c.db.Admits(cons, n) {
				continue
			}
			if !c.marked[n] {
				c.marked[n] = true
				touched = append(touched, int32(n))
			}
			f := c.freed[n*R : n*R+R]
			for i, v := range c.run[m].job.Requests {
				f[i] += v
			}
		}
		for _, m := range ms {
			if n := int(c.run[m].node); c.marked[n] && (found < 0 || n < found) && c.fitsFreed(n, j.Requests) {
				found = n
			}
		}
	}
	for _, n := range touched {
		clear(c.freed[int(n)*R : int(n)*R+R])
		c.marked[n] = false
	}
	c.walked, c.touched = walked, touched
	if found < 0 {
		return 0, false
	}
	for _, u := range walked {
		if c.unitOn(u, found) {
			c.displaceUnit(u, j)
		}
	}
	return found, true
}

// fitsFreed reports whether req fits node n's free capacity plus what the
// walk has freed there.
func (c *cycle) fitsFreed(n int, req flotilla.Resources) bool {
	a := c.db.Allocatable(n, evictedLevel)
	f := c.freed[n*len(req):]
	for i, v := range req {
		if a[i]+f[i] < v {
			return false
		}
	}
	return true
}

// unitOn reports whether evicted unit u has a held member on node n.
func (c *cycle) unitOn(u int32, n int) bool {
	for _, m := range c.gangOf(u) {
		if int(c.run[m].node) == n && c.isHeld(m) {
			return true
		}
	}
	return false
}

// displaceUnit releases the holds of evicted unit u, every member on every
// node: they will not be offered back, and finishEvictions preempts them
// to fair share, recording by as the job they made room for.
func (c *cycle) displaceUnit(u int32, by *flotilla.Job) {
	for _, m := range c.gangOf(u) {
		if !c.isHeld(m) {
			continue
		}
		r := &c.run[m]
		c.db.Release(int(r.node), evictedLevel, r.job.Requests)
		c.held--
		r.tried = true
		r.by = by
	}
}

// displaceOn displaces, after job by was bound to node by another search
// (urgency, or a gang's placement), the evicted units holding capacity
// there that no longer fit: rescheduled last first, until the node's free
// capacity is no longer negative.
func (c *cycle) displaceOn(node int, by *flotilla.Job) {
	if c.held == 0 || !c.db.Allocatable(node, evictedLevel).AnyNegative() {
		return
	}
	ranks := c.ranks[:0]
	for _, ri := range c.nodeRun[node] {
		if c.isHeld(ri) && !slices.Contains(ranks, c.run[ri].rank) {
			ranks = append(ranks, c.run[ri].rank)
		}
	}
	slices.Sort(ranks)
	c.ranks = ranks
	for _, k := range ranks {
		if !c.db.Allocatable(node, evictedLevel).AnyNegative() {
			break
		}
		c.displaceUnit(c.order[k], by)
	}
}
