package scheduler

import (
	"slices"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/preempt"
)

// Urgency within the queue tree's limits (docs/queue-tree.md, rule 5).
//
// A unit the tree refuses — a limit on its path, or a lending hold off it,
// would be exceeded — may take the room from preemptible jobs of lower
// priority, as urgency preemption takes a node's room: Armada evicts the
// lower-priority jobs before it judges a queue's limits, Kueue preempts
// lower-priority workloads within the ClusterQueue. Only jobs whose
// removal brings the unit closer to passing can help: under a limit,
// those below the limiting node (the limited subtree, siblings of the
// unit's queue included, since urgency is across queues); under a lending
// hold, which is the cluster's room, those of any queue except the
// lender's own (taking those only grows the hold). The fill takes the
// fewest such units in urgency's victim order (lowest priority first,
// then the queue furthest above its fair share, then the latest started;
// a gang whole), for now: off their nodes and their queues' books, so
// that the unit's search sees their room. If the unit is then placed
// they are preempted for it (a job placed earlier in the cycle goes back
// to waiting, as urgency's victims do); if not, they are put back as they
// were, and the unit preempted nothing. When even every such job would
// not make room, nothing is taken and the unit is refused as before.

// stTaken marks a run job taken for now to make tree room (treeRoom.taken).
const stTaken = stDisplaced + 1

// treeRoom is the tree room taken for the unit being tried.
type treeRoom struct {
	// taken lists the jobs taken, each with the state it had.
	taken []takenJob
	// by is the job whose unit needed the room; placedAt the length of
	// Result.Scheduled before the unit was tried.
	by       *flotilla.Job
	placedAt int
	// vain remembers the lone units' scheduling keys, per queue, for
	// which no room could be made, with drops at the time: until an
	// urgency victim leaves the books (drops grows: dropVictim), the
	// room a key needs only grows — a job placed under a limiting node
	// adds to its allocation, and as much to the lower-priority jobs
	// there as it is one of them — so the search is not made again.
	vain  map[roomKey]int
	drops int
	// Scratch for the search.
	cand  []int32
	info  []preempt.Victim
	order []int
	units []int
	kept  []int
	over  []bool
}

type roomKey struct {
	queue int32
	key   uint64
}

type takenJob struct {
	ri  int32
	was runState
}

// makeTreeRoom tries to make the room queue qi's next unit (of requests
// req), refused by the tree, needs under the tree's limits and holds; it
// reports whether the unit now passes them (the jobs taken wait in
// c.room for settleTreeRoom).
func (c *cycle) makeTreeRoom(qi int, req flotilla.Resources) bool {
	p := &c.pre
	if !p.anyPreemptible {
		return false
	}
	level, by := c.unitLevel(qi)
	if p.minPreemptibleLevel >= level {
		return false
	}
	tr, rm := c.tour, &c.room
	n := &c.queues[qi].next
	lone := n.kind == loneUnit
	if _, failed := c.memo.failed[n.entry.Key]; lone && failed {
		return false // its search fails whatever the room: try would skip it
	}
	k := roomKey{int32(qi), 0}
	if lone && !c.s.noTreeMemo {
		k.key = n.entry.Key
		if d, ok := rm.vain[k]; ok && d == rm.drops {
			return false
		}
	}
	// The nodes on qi's path over their limits with req (the resources req
	// asks for), and whether a hold binds: a job can help only below one of
	// them, or anywhere when a hold binds.
	rm.over = slices.Grow(rm.over[:0], tr.t.NumNodes())[:tr.t.NumNodes()]
	clear(rm.over)
	anyOver := false
	for v := tr.t.QueueNode(qi); v >= 0; v = tr.t.Parent(v) {
		if tr.t.Limited(v) && tr.overLimit(v, req) {
			rm.over[v], anyOver = true, true
		}
	}
	held := tr.heldFrom(qi, req) >= 0
	cand := rm.cand[:0]
	info := rm.info[:0]
	for ri := range p.run {
		r := &p.run[ri]
		if r.state != stRunning && r.state != stBack && r.state != stNew || int(r.level) >= level || !p.preemptible(int32(ri)) {
			continue
		}
		if !held && !(anyOver && rm.under(tr, int(r.queue))) {
			continue
		}
		qs := &c.queues[r.queue]
		cand = append(cand, int32(ri))
		info = append(info, preempt.Victim{Level: int(r.level), QueueFraction: c.model.Share(qs.alloc) / qs.fair, Start: r.start, ID: r.job.ID})
	}
	rm.cand, rm.info = cand, info
	if len(cand) == 0 {
		rm.noRoom(k, lone && !c.s.noTreeMemo)
		return false
	}
	order := rm.order[:0]
	for i := range cand {
		order = append(order, i)
	}
	slices.SortFunc(order, func(a, b int) int { return preempt.Compare(&info[a], &info[b]) })
	rm.order = order
	// Units: a gang stands where its first member falls in victim order,
	// and only when every member is bound (a gang goes whole).
	units := rm.units[:0]
	for _, k := range order {
		ri := cand[k]
		first := true
		for _, m := range p.gangOf(ri) {
			st := p.run[m].state
			if st != stRunning && st != stBack && st != stNew {
				first = false // a member gone or evicted: not a unit
				break
			}
			if m != ri && slices.ContainsFunc(units, func(u int) bool { return cand[u] == m }) {
				first = false // its gang is a unit already
				break
			}
		}
		if first {
			units = append(units, k)
		}
	}
	rm.units = units
	rm.taken = rm.taken[:0]
	fits := func() bool { return tr.refusal(qi, req).Code == 0 }
	rm.kept = preempt.Fewest(len(units), fits, func(u int) { c.takeForRoom(cand[units[u]]) },
		func(u int) { c.giveBackRoom(cand[units[u]]) }, rm.kept)
	if !fits() {
		for i := len(rm.kept) - 1; i >= 0; i-- {
			c.giveBackRoom(cand[units[rm.kept[i]]])
		}
		c.db.Forget()
		rm.noRoom(k, lone && !c.s.noTreeMemo)
		return false
	}
	rm.by, rm.placedAt = by, len(c.rep.res.Scheduled)
	return true
}

// noRoom remembers that no room could be made for key k (when remember).
func (rm *treeRoom) noRoom(k roomKey, remember bool) {
	if !remember {
		return
	}
	if rm.vain == nil {
		rm.vain = make(map[roomKey]int)
	}
	rm.vain[k] = rm.drops
}

// under reports whether queue qi is below a node marked over.
func (rm *treeRoom) under(tr *tournament, qi int) bool {
	for v := tr.t.QueueNode(qi); v >= 0; v = tr.t.Parent(v) {
		if rm.over[v] {
			return true
		}
	}
	return false
}

// unitLevel is the level queue qi's next unit looks for room at (its
// class's, a gang's lowest member class's: the level urgency takes jobs
// below), and the job its victims are preempted for.
func (c *cycle) unitLevel(qi int) (int, *flotilla.Job) {
	n := &c.queues[qi].next
	if n.gang == nil {
		ci, _ := c.s.class(n.entry.Job)
		return c.s.classLevel[ci], n.entry.Job
	}
	level := len(c.s.levels) - 1
	for _, m := range n.gang.Members {
		ci, _ := c.s.class(m.Job)
		level = min(level, c.s.classLevel[ci])
	}
	return level, n.gang.Members[0].Job
}

// takeForRoom takes run job ri's unit (its gang whole) off its nodes and
// its queue's books, for now, recording each job in c.room.taken.
func (c *cycle) takeForRoom(ri int32) {
	p := &c.pre
	for _, m := range p.gangOf(ri) {
		r := &p.run[m]
		c.db.Unbind(int(r.node), int(r.queue), int(r.level), r.job.Requests)
		c.unaccount(int(r.queue), int(r.class), r.job.Requests)
		c.room.taken = append(c.room.taken, takenJob{ri: m, was: r.state})
		r.state = stTaken
	}
}

// giveBackRoom undoes takeForRoom.
func (c *cycle) giveBackRoom(ri int32) {
	p := &c.pre
	rm := &c.room
	for _, m := range p.gangOf(ri) {
		r := &p.run[m]
		k := slices.IndexFunc(rm.taken, func(t takenJob) bool { return t.ri == m })
		c.db.Bind(int(r.node), int(r.queue), int(r.level), r.job.Requests)
		c.account(int(r.queue), int(r.class), r.job.Requests)
		r.state = rm.taken[k].was
		rm.taken = slices.Delete(rm.taken, k, k+1)
	}
}

// overLimit reports whether node v would exceed its limit with req added,
// in a resource req asks for (limitOf's test for one node).
func (tr *tournament) overLimit(v int, req flotilla.Resources) bool {
	lim := tr.t.Limit(v)
	for r, x := range req {
		if x > 0 && float64(tr.alloc[v][r]+x) > lim[r] {
			return true
		}
	}
	return false
}

// settleTreeRoom ends the unit's tree room after it was tried: placed, its
// jobs taken are preempted for it (urgency); not placed, they are put back.
func (c *cycle) settleTreeRoom() {
	rm := &c.room
	if len(rm.taken) == 0 {
		return
	}
	p := &c.pre
	placed := len(c.rep.res.Scheduled) > rm.placedAt
	for _, t := range rm.taken {
		r := &p.run[t.ri]
		if placed {
			// Back on the books as it was, for dropVictim to take it off.
			r.state = t.was
			c.account(int(r.queue), int(r.class), r.job.Requests)
			p.dropVictim(t.ri, false, rm.by)
			continue
		}
		c.db.Bind(int(r.node), int(r.queue), int(r.level), r.job.Requests)
		c.account(int(r.queue), int(r.class), r.job.Requests)
		r.state = t.was
		c.refresh(int(r.queue))
	}
	c.db.Forget()
	rm.taken, rm.by = rm.taken[:0], nil
}
