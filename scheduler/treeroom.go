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
// hold, which is the cluster's room, those of any queue (a lender's own,
// below its reserve, only grow its hold: the search takes them and gives
// them back, as it gives back every job the room does not need). The
// fill takes the fewest such units in urgency's victim order (lowest priority first,
// then the queue furthest above its fair share, then the latest started;
// a gang whole), for now: off their nodes and their queues' books, so
// that the unit's search sees their room. If the unit is then placed
// they are preempted for it (a job placed earlier in the cycle goes back
// to waiting, as urgency's victims do); if not, they are put back as they
// were, and the unit preempted nothing. When even every such job would
// not make room, nothing is taken and the unit is refused as before.
//
// Cost: a search merges per-queue lists of the candidates (victimIndex)
// and reads only the jobs it takes, plus one look per queue it may take
// from; it does not scan and sort every running job. (Evicted jobs not
// yet offered are passed over at each search that reaches them.)

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
	// idx holds the jobs the room may be taken from, per queue.
	idx victimIndex
	// Scratch for the search: the merge of the queues' candidates, the
	// gangs met in it, the units taken, the nodes over their limits.
	merge []mergeHead
	gangs map[string]struct{}
	units []int32
	over  []bool
}

// victimIndex lists, per queue, the run jobs tree room may be taken from
// (preemptible, a gang's every member), in urgency's victim order within
// one queue, whose fraction of fair share is the same for all: lowest
// level first, then the latest started, then the greatest ID. A search
// merges the lists of the queues it may take from (mergeHead), so that it
// reads only as many jobs as it takes, not every running job: victims
// leave a list from its front, which head skips for good. It is built at
// the cycle's first search; the jobs placed since are added at each.
type victimIndex struct {
	built   bool
	indexed int // p.run[:indexed] were considered
	byQueue [][]int32
	// head is, per queue, where its list's jobs not gone for good begin.
	head []int32
}

// mergeHead is a queue's next candidate in a search's merge: its place
// in the queue's list and its rank.
type mergeHead struct {
	queue int32
	pos   int32
	v     preempt.Victim
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
// c.room for settleTreeRoom). The units are taken as preempt.Fewest takes
// them: in victim order until the unit passes, then each given back,
// latest first, whose return keeps it passing.
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
	if _, failed := c.memo.failedFor(qi, n.entry.Key); lone && failed {
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
	c.indexVictims()
	rm.merge = rm.merge[:0]
	for q := range rm.idx.byQueue {
		if int(rm.idx.head[q]) == len(rm.idx.byQueue[q]) || !held && !(anyOver && rm.under(tr, q)) {
			continue
		}
		if pos, ok := c.nextVictim(q, rm.idx.head[q], level); ok {
			rm.merge = append(rm.merge, mergeHead{queue: int32(q), pos: pos, v: p.victim(rm.idx.byQueue[q][pos], c.queueFraction(q))})
		}
	}
	if len(rm.merge) == 0 {
		rm.noRoom(k, lone && !c.s.noTreeMemo)
		return false
	}
	for i := len(rm.merge)/2 - 1; i >= 0; i-- {
		rm.siftDown(i)
	}
	clear(rm.gangs)
	rm.taken, rm.units = rm.taken[:0], rm.units[:0]
	fits := func() bool { return tr.refusal(qi, req).Code == 0 }
	for !fits() {
		ri, ok := c.nextRoomUnit(level)
		if !ok {
			break
		}
		c.takeForRoom(ri)
		rm.units = append(rm.units, ri)
	}
	if !fits() {
		for i := len(rm.units) - 1; i >= 0; i-- {
			c.giveBackRoom(rm.units[i])
		}
		c.db.Forget()
		rm.noRoom(k, lone && !c.s.noTreeMemo)
		return false
	}
	for i := len(rm.units) - 1; i >= 0; i-- {
		c.giveBackRoom(rm.units[i])
		if fits() {
			rm.units = slices.Delete(rm.units, i, i+1)
			continue
		}
		c.takeForRoom(rm.units[i])
	}
	rm.by, rm.placedAt = by, len(c.rep.res.Scheduled)
	return true
}

// indexVictims adds to the victim index the run jobs recorded since it
// last looked (all of them the first time): those that may be preempted
// and are not gone for good.
func (c *cycle) indexVictims() {
	p, ix := &c.pre, &c.room.idx
	if !ix.built {
		ix.built = true
		ix.byQueue = make([][]int32, len(c.queues))
		ix.head = make([]int32, len(c.queues))
		for ri := range p.run {
			if r := &p.run[ri]; !r.gone() && p.preemptible(int32(ri)) {
				ix.byQueue[r.queue] = append(ix.byQueue[r.queue], int32(ri))
			}
		}
		for q := range ix.byQueue {
			slices.SortFunc(ix.byQueue[q], p.queueOrder)
		}
		ix.indexed = len(p.run)
		return
	}
	for ri := int32(ix.indexed); int(ri) < len(p.run); ri++ {
		r := &p.run[ri]
		if r.gone() || !p.preemptible(ri) {
			continue
		}
		// Only the list from head on is in order (jobs before it are gone).
		l, h := ix.byQueue[r.queue], int(ix.head[r.queue])
		at, _ := slices.BinarySearchFunc(l[h:], ri, p.queueOrder)
		ix.byQueue[r.queue] = slices.Insert(l, h+at, ri)
	}
	ix.indexed = len(p.run)
}

// queueOrder is urgency's victim order between two run jobs of one queue.
func (p *preemptor) queueOrder(a, b int32) int {
	va, vb := p.victim(a, 0), p.victim(b, 0)
	return preempt.Compare(&va, &vb)
}

// gone reports whether run job r can no longer be a victim in this fill:
// preempted, displaced, or evicted and offered without going back (it
// goes back, if at all, after the fill: putBackLate).
func (r *runJob) gone() bool {
	return r.state == stPreempted || r.state == stDisplaced || r.state == stEvicted && r.tried
}

// nextVictim returns the place, from pos on, of queue q's next job in the
// index that holds its capacity at a level below level, if any; jobs at
// the list's head that are gone are skipped for good.
func (c *cycle) nextVictim(q int, pos int32, level int) (int32, bool) {
	p, ix := &c.pre, &c.room.idx
	l := ix.byQueue[q]
	for ; int(pos) < len(l); pos++ {
		r := &p.run[l[pos]]
		if int(r.level) >= level {
			return 0, false
		}
		if r.bound() {
			return pos, true
		}
		if pos == ix.head[q] && r.gone() {
			ix.head[q]++
		}
	}
	return 0, false
}

// nextRoomUnit takes the next job off the search's merge and returns it
// if it stands for a unit: a lone job, or a gang's first member met, when
// every member of the gang is bound (a gang goes whole).
func (c *cycle) nextRoomUnit(level int) (int32, bool) {
	p, rm := &c.pre, &c.room
	for len(rm.merge) > 0 {
		h := &rm.merge[0]
		q := int(h.queue)
		ri := rm.idx.byQueue[q][h.pos]
		if pos, ok := c.nextVictim(q, h.pos+1, level); ok {
			h.pos, h.v = pos, p.victim(rm.idx.byQueue[q][pos], h.v.QueueFraction)
		} else {
			last := len(rm.merge) - 1
			rm.merge[0] = rm.merge[last]
			rm.merge = rm.merge[:last]
		}
		rm.siftDown(0)
		id := p.run[ri].job.Gang.ID
		if id == "" {
			return ri, true
		}
		if _, met := rm.gangs[id]; met {
			continue
		}
		if rm.gangs == nil {
			rm.gangs = make(map[string]struct{})
		}
		rm.gangs[id] = struct{}{}
		if !slices.ContainsFunc(p.gangOf(ri), func(m int32) bool { return !p.run[m].bound() }) {
			return ri, true
		}
	}
	return 0, false
}

// siftDown restores the merge's heap order (the first victim on top) below
// place i.
func (rm *treeRoom) siftDown(i int) {
	h := rm.merge
	for {
		least := i
		for _, ch := range [2]int{2*i + 1, 2*i + 2} {
			if ch < len(h) && preempt.Compare(&h[ch].v, &h[least].v) < 0 {
				least = ch
			}
		}
		if least == i {
			return
		}
		h[i], h[least] = h[least], h[i]
		i = least
	}
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
