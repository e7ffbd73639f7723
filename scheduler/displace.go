package scheduler

import (
	"container/heap"
	"fmt"
	"slices"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/binpack"
	"github.com/flotilla-sched/flotilla/fairness"
	"github.com/flotilla-sched/flotilla/gang"
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
// A job that must displace evicted jobs displaces those rescheduled last;
// in a queue tree, those of its closest relatives first, and only those it
// goes before at their lowest common ancestor (displace_tree.go).

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
	// The tree's index, nil in a flat cycle (displace_tree.go).
	treeDisplace
}

// isHeld reports whether run job ri is evicted and still holds its
// capacity: not yet offered back, displaced or preempted.
func (p *preemptor) isHeld(ri int32) bool {
	r := &p.run[ri]
	return r.state == stEvicted && !r.tried
}

// indexEvicted builds the displacement index once eviction is done: every
// evicted unit in reverse rescheduling order, each member's rank its
// unit's place in it. Each queue's evicted jobs are already in rescheduling
// order among themselves (class priority descending, then the queue's
// allocation growing, then position), so the index is their merge by
// preempt.CompareRescheduling, made with a heap of the queues' next units.
func (p *preemptor) indexEvicted() {
	c := p.c
	n := 0
	for qi := range c.queues {
		n += len(c.queues[qi].evicted)
	}
	if n == 0 {
		return
	}
	order := make([]int32, 0, n)
	if c.tree != nil {
		order = p.rescheduleOrderTree(order)
	} else {
		order = p.rescheduleOrderFlat(order)
	}
	slices.Reverse(order)
	for k, ri := range order {
		for _, m := range p.gangOf(ri) {
			p.run[m].rank = int32(k)
		}
	}
	p.order = order
	if c.tree != nil {
		p.indexSubtrees()
	}
}

// rescheduleOrderTree is rescheduleOrderFlat over a queue tree: the
// queues' evicted heads compete in a tournament of their own (rule 6),
// each queue's allocation growing as its units are taken.
func (p *preemptor) rescheduleOrderTree(order []int32) []int32 {
	c := p.c
	sim := newTournament(c, c.tree)
	pos := make([]int, len(c.queues))
	head := func(qi int) {
		r := &p.run[c.queues[qi].evicted[pos[qi]]]
		sim.set(qi, r.job.Requests, r.entry.ClassPriority)
	}
	for qi := range c.queues {
		if len(c.queues[qi].evicted) > 0 {
			head(qi)
		}
	}
	for {
		qi, ok := sim.best()
		if !ok {
			return order
		}
		ev := c.queues[qi].evicted
		ri := ev[pos[qi]]
		order = append(order, ri)
		for _, m := range p.gangOf(ri) {
			if mr := &p.run[m]; mr.state == stEvicted {
				mr.rank = 0 // ranked: later members of its gang are skipped
				sim.add(qi, mr.job.Requests, 1)
			}
		}
		pos[qi]++
		for pos[qi] < len(ev) && p.run[ev[pos[qi]]].rank >= 0 {
			pos[qi]++
		}
		if pos[qi] == len(ev) {
			sim.clear(qi)
			continue
		}
		head(qi)
	}
}

// rescheduleOrderFlat lists the evicted units in rescheduling order, by a
// heap of the queues' next units.
func (p *preemptor) rescheduleOrderFlat(order []int32) []int32 {
	c := p.c
	h := &evictedHeads{preferLarge: c.s.cfg.EnablePreferLargeJobOrdering}
	back := make([]flotilla.Resources, len(c.queues))
	for qi := range c.queues {
		if len(c.queues[qi].evicted) > 0 {
			back[qi] = c.queues[qi].alloc.Clone()
			h.heads = append(h.heads, p.evictedHead(qi, back[qi], 0))
		}
	}
	heap.Init(h)
	for h.Len() > 0 {
		top := &h.heads[0]
		qi := top.Candidate.Queue
		ev := c.queues[qi].evicted
		ri := ev[top.Position]
		order = append(order, ri)
		for _, m := range p.gangOf(ri) {
			if mr := &p.run[m]; mr.state == stEvicted {
				mr.rank = 0 // ranked: later members of its gang are skipped
				back[qi].Add(mr.job.Requests)
			}
		}
		pos := top.Position + 1
		for pos < len(ev) && p.run[ev[pos]].rank >= 0 {
			pos++
		}
		if pos == len(ev) {
			heap.Pop(h)
			continue
		}
		*top = p.evictedHead(qi, back[qi], pos)
		heap.Fix(h, 0)
	}
	return order
}

// evictedHead is queue qi's evicted job at position pos as the queue's
// next unit, the queue holding back: ranked as candidate ranks a queue's
// head.
func (p *preemptor) evictedHead(qi int, back flotilla.Resources, pos int) preempt.Evicted {
	c := p.c
	qs := &c.queues[qi]
	r := &p.run[qs.evicted[pos]]
	copy(c.scratch, back)
	c.scratch.Add(r.job.Requests)
	cur, next := c.model.Share(back), c.model.Share(c.scratch)
	cand := fairness.NewCandidate(qi, qs.q.Name, r.entry.ClassPriority, cur, next-cur, qs.fair, qs.adjusted)
	if qs.fair > 0 {
		cand.Fraction = next / qs.fair
	}
	return preempt.Evicted{Candidate: cand, Position: pos}
}

// evictedHeads is a heap of the queues' next evicted units, rescheduled
// first on top.
type evictedHeads struct {
	heads       []preempt.Evicted
	preferLarge bool
}

func (h *evictedHeads) Len() int { return len(h.heads) }
func (h *evictedHeads) Less(i, j int) bool {
	return preempt.CompareRescheduling(&h.heads[i], &h.heads[j], h.preferLarge) < 0
}
func (h *evictedHeads) Swap(i, j int) { h.heads[i], h.heads[j] = h.heads[j], h.heads[i] }
func (h *evictedHeads) Push(x any)    { h.heads = append(h.heads, x.(preempt.Evicted)) }
func (h *evictedHeads) Pop() any {
	x := h.heads[len(h.heads)-1]
	h.heads = h.heads[:len(h.heads)-1]
	return x
}

// displaceNote ends the message of a job (or gang) whose last search
// counted what evicted jobs hold as room (a search at lowestClassLevel, as
// for displacing them). Only evicted jobs not yet put back are room: those
// put back earlier in the cycle, their queue's turn coming before this job
// in progressive filling, run again and keep their capacity (Armada's
// fair-share walk skips rescheduled jobs too). The note says so, with how
// many had gone back, since a shortfall alone ("short of cpu by at least
// 1") reads as capacity the walk missed.
func displaceNote(putBack int) string {
	if putBack == 0 {
		return " (room counts what evicted jobs hold)"
	}
	return fmt.Sprintf(" (room counts what evicted jobs hold; the %d put back earlier in this cycle, ahead of this job in fair-share order, keep theirs)", putBack)
}

// displaceWalkBudget is how many evicted units a displacing walk takes
// before it asks the node database whether any node can fit the job at all
// (a search at lowestClassLevel, where evicted jobs' holds do not count):
// most walks end within a few units, and a job that fits nowhere is then
// not walked past every evicted job.
const displaceWalkBudget = 32

// displaceFor finds room for job j (the constraint of q, a query for j at
// lowestClassLevel) in capacity evicted jobs hold. It walks the evicted
// units from the one rescheduled last (in a tree, in unitWalk's order),
// adding what each holds on each node that admits j (not cordoned, selector
// and taints; the queue's tiers play no part), until some node's free
// capacity plus what the walked units hold there fits j; of the nodes the
// last unit walked made fit, the lowest-numbered is chosen. The walked
// units with a member on that node are displaced, with their whole gangs
// (displaceUnit), and the node is returned. It returns false, changing
// nothing, when no node fits even with every unit walked.
func (p *preemptor) displaceFor(j *flotilla.Job, q *binpack.Query) (int, bool) {
	c := p.c
	cons := q.Constraint
	R := len(j.Requests)
	if p.freed == nil {
		p.freed = make([]int64, c.db.NodeCount()*R)
		p.marked = make([]bool, c.db.NodeCount())
	}
	walked, touched := p.walked[:0], p.touched[:0]
	found := -1
	w := p.walkFrom(q.Queue)
	for found < 0 {
		u, ok := w.next()
		if !ok {
			break
		}
		if len(walked) == displaceWalkBudget {
			if _, ok := c.db.Select(q); !ok {
				break
			}
		}
		walked = append(walked, u)
		ms := p.gangOf(u)
		for _, m := range ms {
			n := int(p.run[m].node)
			if !p.isHeld(m) || c.db.Cordoned(n) || !c.db.Admits(cons, n) {
				continue
			}
			if !p.marked[n] {
				p.marked[n] = true
				touched = append(touched, int32(n))
			}
			f := p.freed[n*R : n*R+R]
			for i, v := range p.run[m].job.Requests {
				f[i] += v
			}
		}
		for _, m := range ms {
			if n := int(p.run[m].node); p.marked[n] && (found < 0 || n < found) && p.fitsFreed(n, j.Requests) {
				found = n
			}
		}
	}
	for _, n := range touched {
		clear(p.freed[int(n)*R : int(n)*R+R])
		p.marked[n] = false
	}
	p.walked, p.touched = walked, touched
	if found < 0 {
		// The rules kept the job out only if the room it needs exists once
		// every evicted job's hold is released; otherwise it failed for
		// lack of room, for every queue. (Assigned, not accumulated: of
		// searchAvoiding's two searches, the last, over every node, says.)
		p.ruleSkipped = w.skipped > 0
		if p.ruleSkipped {
			_, p.ruleSkipped = c.db.Select(q)
		}
		return 0, false
	}
	for _, u := range walked {
		if p.unitOn(u, found) {
			p.displaceUnit(u, j)
		}
	}
	return found, true
}

// fitsFreed reports whether req fits node n's free capacity plus what the
// walk has freed there.
func (p *preemptor) fitsFreed(n int, req flotilla.Resources) bool {
	c := p.c
	a := c.db.Allocatable(n, evictedLevel)
	f := p.freed[n*len(req):]
	for i, v := range req {
		if a[i]+f[i] < v {
			return false
		}
	}
	return true
}

// unitOn reports whether evicted unit u has a held member on node n.
func (p *preemptor) unitOn(u int32, n int) bool {
	for _, m := range p.gangOf(u) {
		if int(p.run[m].node) == n && p.isHeld(m) {
			return true
		}
	}
	return false
}

// displaceUnit releases the holds of evicted unit u, every member on every
// node: they will not be offered back, and finishEvictions preempts them
// to fair share, recording by as the job they made room for.
func (p *preemptor) displaceUnit(u int32, by *flotilla.Job) {
	c := p.c
	for _, m := range p.gangOf(u) {
		if !p.isHeld(m) {
			continue
		}
		r := &p.run[m]
		c.db.Release(int(r.node), evictedLevel, r.job.Requests)
		p.held--
		r.tried = true
		r.by = by
	}
}

// displaceOn displaces, after job by was bound to node by another search
// (urgency, or a gang's placement), the evicted units holding capacity
// there that no longer fit: rescheduled last first (in a tree, closest
// relatives of by first), until the node's free capacity is no longer
// negative.
func (p *preemptor) displaceOn(node int, by *flotilla.Job) {
	c := p.c
	if p.held == 0 || !c.db.Allocatable(node, evictedLevel).AnyNegative() {
		return
	}
	ranks := p.ranks[:0]
	for _, ri := range p.nodeRun[node] {
		if p.isHeld(ri) && !slices.Contains(ranks, p.run[ri].rank) {
			ranks = append(ranks, p.run[ri].rank)
		}
	}
	slices.Sort(ranks)
	if c.tree != nil {
		if qi, ok := c.queueIndex(by.Queue); ok {
			p.closestFirst(qi, ranks)
		}
	}
	p.ranks = ranks
	for _, k := range ranks {
		if !c.db.Allocatable(node, evictedLevel).AnyNegative() {
			break
		}
		p.displaceUnit(p.order[k], by)
	}
}

// placeGangDisplacing places gang g, which found no free capacity, in
// capacity evicted jobs hold, displacing as displaceFor does for a lone
// job: it walks the evicted units as displaceFor does, releases
// each one's holds in turn and asks the gang placer again (at evictedLevel,
// so the gang's own tiers, clusters and uniformity label apply), until the
// gang fits. The walked units holding capacity on a node the gang then
// uses are displaced (whole gangs, by the member placed there); the others
// get their holds back. After displaceWalkBudget units it stops, restoring
// every hold, and reports not placed: the caller then searches where every
// hold is free and displaces per node (displaceOn). A placement error
// (bad input) is returned as from the placer. within confines the gang
// to some domains, as for PlaceWithin.
func (p *preemptor) placeGangDisplacing(g *gang.Gang, qi int, levels []int, within gang.Domains) (gang.Placement, error) {
	c := p.c
	walked := p.walked[:0]
	defer func() { p.walked = walked }()
	hold := func(u int32, release bool) {
		for _, m := range p.gangOf(u) {
			if r := &p.run[m]; p.isHeld(m) {
				if release {
					c.db.Release(int(r.node), evictedLevel, r.job.Requests)
				} else {
					c.db.Hold(int(r.node), evictedLevel, r.job.Requests)
				}
			}
		}
	}
	for w := p.walkFrom(qi); len(walked) < displaceWalkBudget; {
		u, ok := w.next()
		if !ok {
			break
		}
		walked = append(walked, u)
		hold(u, true)
		mark := c.db.Mark()
		pl, err := c.gangs.placer.PlaceWithin(c.db, g, qi, levels, evictedLevel, within)
		if err != nil || !pl.Placed {
			c.db.Rollback(mark)
			if err != nil {
				for _, w := range walked {
					hold(w, false)
				}
				return pl, err
			}
			continue
		}
		for _, w := range walked {
			by := p.gangMemberOn(g, pl.Nodes, w)
			if by == nil {
				hold(w, false)
				continue
			}
			// Its holds are already released: it is displaced.
			for _, m := range p.gangOf(w) {
				if p.isHeld(m) {
					p.held--
					p.run[m].tried = true
					p.run[m].by = by
				}
			}
		}
		return pl, nil
	}
	for _, w := range walked {
		hold(w, false)
	}
	return gang.Placement{}, nil
}

// gangMemberOn returns the member of gang g placed (at nodes) on a node
// where evicted unit u holds capacity, or nil.
func (p *preemptor) gangMemberOn(g *gang.Gang, nodes []int, u int32) *flotilla.Job {
	for _, m := range p.gangOf(u) {
		if !p.isHeld(m) {
			continue
		}
		for i, n := range nodes {
			if n == int(p.run[m].node) {
				return g.Members[i].Job
			}
		}
	}
	return nil
}
