package scheduler

import (
	"slices"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/binpack"
	"github.com/flotilla-sched/flotilla/fairness"
)

// Displacing evicted jobs in a queue tree (docs/queue-tree.md, "Which
// evicted jobs new work displaces").
//
// In a flat list a unit that needs room walks the evicted units from the
// one rescheduled last (displaceFor). In a tree it walks them from its
// closest relatives out, and skips those it may not take:
//
//  1. Closest relatives first: first the evicted units whose lowest common
//     ancestor with it is deepest (its parent group's other members), then
//     those of its grandparent's other children, and so on to the root;
//     at each level, rescheduled last first. A displacement inside a group
//     moves nothing between the group and its siblings, and a group takes
//     a sibling's unit only when none of its own that it may take is
//     waiting to go back: the fill's standing of a group leaves out its
//     members' evicted units until their turn, and a group that took a
//     sibling's unit with one of its own still out would hold more, once
//     that one went back, than the comparison that let it take.
//  2. Only a unit it goes before: an evicted unit X of side b is displaced
//     by the unit Y of side a (a, b the children of their lowest common
//     ancestor) only if a with Y goes before b with X in rule 6's order
//     (class priority, guarantee tier, key, name). The fill put a with Y
//     before b with b's nominee, which need not be X: a larger unit, one
//     that takes b out of its guarantee where X would not, or one of the
//     same requests in another queue, where they cost more (under DRF a
//     queue heavy in one resource pays little for a unit of another). The
//     costs are fairness.Model.Cost's, as the tournament's: a unit like the
//     nominee, in a queue where it costs the same, stands as the nominee
//     does, to the last bit. Between two queues neither of which has a
//     guarantee this is not asked: a flat list of queues is exactly
//     Armada's model, where any evicted unit may be displaced.
//
// Displacements that a placement forces (displaceOn, after urgency or a
// gang's own search) follow the order of 1 and skip nobody.

// treeDisplace is the tree's index of the evicted units for displacement,
// made with the displacement index (indexSubtrees).
type treeDisplace struct {
	// sub[g] lists the evicted units (by run index, rescheduled last
	// first) whose queue is in group g's subtree; subPos[g] is how many at
	// its front are known to be gone, as orderPos for order.
	sub    [][]int32
	subPos []int
	// depth is each tree node's depth: 1 for the root's children.
	depth []int32
	// unitReq is scratch: an evicted unit's requests, summed.
	unitReq flotilla.Resources
	// ruleSkipped is set when a displacing search of the job being tried
	// (displaceFor) found no room among the units the rules let it take,
	// having skipped some, where every unit's room would have fit it: its
	// failure then depends on its queue, and the
	// fill remembers it for the queue alone (memo.queueFailed). The
	// standings it was judged by change as the fill goes on; the queue's
	// jobs of that kind wait for the next cycle.
	ruleSkipped bool
}

// indexSubtrees fills p.sub, p.subPos and p.depth from p.order.
func (p *preemptor) indexSubtrees() {
	t := p.c.tree.t
	nG := t.NumGroups()
	p.depth = make([]int32, t.NumNodes())
	for _, v := range t.TopDown() {
		if par := t.Parent(int(v)); par >= 0 {
			p.depth[v] = p.depth[par] + 1
		} else {
			p.depth[v] = 1
		}
	}
	if nG == 0 {
		return
	}
	counts := make([]int, nG)
	total := 0
	for _, u := range p.order {
		for g := t.Parent(t.QueueNode(int(p.run[u].queue))); g >= 0; g = t.Parent(g) {
			counts[g]++
			total++
		}
	}
	slab := make([]int32, 0, total)
	p.sub = make([][]int32, nG)
	p.subPos = make([]int, nG)
	for g, n := range counts {
		p.sub[g] = slab[len(slab) : len(slab) : len(slab)+n]
		slab = slab[:len(slab)+n]
	}
	for _, u := range p.order {
		for g := t.Parent(t.QueueNode(int(p.run[u].queue))); g >= 0; g = t.Parent(g) {
			p.sub[g] = append(p.sub[g], u)
		}
	}
}

// unitWalk yields the evicted units still held, in the order a unit of
// queue qi that needs room walks them: rescheduled last first in a flat
// list; in a tree, closest relatives first, skipping those it may not
// take (see above).
type unitWalk struct {
	p  *preemptor
	qi int
	k  int // next position in the current list
	// In a tree: level is the group whose children's units are walked now
	// (-1: the root), side its child on qi's path (qi's own node at the
	// first level, where qi's own units are walked too).
	level, side int
	first       bool
	// skipped counts the units the rules kept from the walk.
	skipped int
	// standing is side's standing with the unit being tried, for rule 2,
	// made once per side (standingOf: the side it is for, -1 none): what
	// the walk displaces lies outside side, so it stays the same.
	standing   fairness.Candidate
	standingOf int
}

// walkFrom starts the walk for a unit of queue qi.
func (p *preemptor) walkFrom(qi int) unitWalk {
	for p.orderPos < len(p.order) && !p.isHeld(p.order[p.orderPos]) {
		p.orderPos++
	}
	w := unitWalk{p: p, qi: qi, k: p.orderPos, standingOf: -1}
	if ts := p.c.tree; ts != nil {
		w.side = ts.t.QueueNode(qi)
		w.level, w.first = ts.t.Parent(w.side), true
		w.k = p.levelStart(w.level)
	}
	return w
}

// levelStart is where the walk of group g's list (the order for the root)
// starts: past the units at its front known to be gone.
func (p *preemptor) levelStart(g int) int {
	if g < 0 {
		return p.orderPos
	}
	l := p.sub[g]
	for p.subPos[g] < len(l) && !p.isHeld(l[p.subPos[g]]) {
		p.subPos[g]++
	}
	return p.subPos[g]
}

// next returns the walk's next unit, false when there is none.
func (w *unitWalk) next() (int32, bool) {
	p := w.p
	if p.c.tree == nil {
		for w.k < len(p.order) {
			u := p.order[w.k]
			w.k++
			if p.isHeld(u) {
				return u, true
			}
		}
		return 0, false
	}
	t := p.c.tree.t
	for {
		list := p.order
		if w.level >= 0 {
			list = p.sub[w.level]
		}
		for w.k < len(list) {
			u := list[w.k]
			w.k++
			if !p.isHeld(u) {
				continue
			}
			x := t.QueueNode(int(p.run[u].queue))
			b := p.ancestorAt(x, p.depth[w.side])
			if b == w.side && !w.first {
				continue // walked at a deeper level
			}
			if b == w.side || p.mayDisplace(w, b, u) {
				return u, true
			}
			w.skipped++
		}
		if w.level < 0 {
			return 0, false
		}
		w.side, w.level, w.first = w.level, t.Parent(w.level), false
		w.k = p.levelStart(w.level)
	}
}

// ancestorAt is tree node v's ancestor (or v) at depth d ≤ v's depth.
func (p *preemptor) ancestorAt(v int, d int32) int {
	t := p.c.tree.t
	for p.depth[v] > d {
		v = t.Parent(v)
	}
	return v
}

// mayDisplace reports whether the walk's unit (the one queue w.qi is
// trying), on side a = w.side of their lowest common ancestor, may
// displace evicted unit u, on side b: whether a with it goes before b with
// u in rule 6's order; always between two queues with no guarantee (the
// flat model's rule).
func (p *preemptor) mayDisplace(w *unitWalk, b int, u int32) bool {
	qi, a := w.qi, w.side
	c := p.c
	ts := c.tree
	nG := ts.t.NumGroups()
	if a >= nG && b >= nG && ts.guar[a] == nil && ts.guar[b] == nil {
		return true
	}
	x := int(p.run[u].queue)
	req := p.unitReq
	if req == nil {
		req = c.s.cfg.Schema.Zero()
		p.unitReq = req
	}
	clear(req)
	prio, first := int32(0), true
	for _, m := range p.gangOf(u) {
		if r := &p.run[m]; p.isHeld(m) {
			req.Add(r.job.Requests)
			if first || r.entry.ClassPriority < prio {
				prio, first = r.entry.ClassPriority, false
			}
		}
	}
	if w.standingOf != a {
		next := &c.queues[qi].next
		w.standing, w.standingOf = c.tour.standing(a, qi, next.req, next.prio), a
	}
	cb := c.tour.standing(b, x, req, prio)
	return fairness.Compare(w.standing, cb, c.s.cfg.EnablePreferLargeJobOrdering) < 0
}

// standing is tree node v's candidate at its parent if queue qi, in v's
// subtree, took a unit of requests req and class priority prio: what
// candidate computes for v's nominee.
func (tr *tournament) standing(v, qi int, req flotilla.Resources, prio int32) fairness.Candidate {
	after, cost := tr.price(qi, req)
	var c fairness.Candidate
	tr.stand(v, qi, req, prio, after, cost, &c)
	c.Queue = int(tr.ts.childPos[v])
	return c
}

// closestFirst orders ranks, evicted units' places in the displacement
// index, for a unit of queue qi in a tree: the deepest lowest common
// ancestor first, then rescheduled last first (the order of ranks).
func (p *preemptor) closestFirst(qi int, ranks []int32) {
	t := p.c.tree.t
	y := t.QueueNode(qi)
	lca := func(k int32) int32 {
		x := t.QueueNode(int(p.run[p.order[k]].queue))
		d := min(p.depth[x], p.depth[y])
		a, b := p.ancestorAt(y, d), p.ancestorAt(x, d)
		for a != b {
			a, b, d = t.Parent(a), t.Parent(b), d-1
		}
		return d
	}
	slices.SortStableFunc(ranks, func(i, j int32) int { return int(lca(j) - lca(i)) })
}

// ruleSkippedMessage is the message of a job that found no room because
// the evicted jobs holding it may not be displaced for it; r is the
// explanation of its last search, which counted their room.
func ruleSkippedMessage(r binpack.Reason) string {
	where := ""
	if r.Kind == binpack.Fits {
		where = " (on " + r.NodeName + ")"
	}
	return "the room it needs" + where + " is held by evicted jobs of groups or queues that go before this one where their paths meet, which it may not displace (docs/queue-tree.md)"
}
