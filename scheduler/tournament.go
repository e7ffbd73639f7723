package scheduler

import (
	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/fairness"
)

// tournament is progressive filling over a queue tree (docs/queue-tree.md,
// rule 6): each queue nominates its next unit; each group keeps a
// fairness.Bracket over its children and nominates its best child's
// nominee; the root's best is tried next. Children of a group are compared
// by the nominee's class priority, then the guarantee tier (the child stays
// within its guarantee with the unit), then the key
//
//	K = (share + unit's cost − Ĝ) / w'
//
// (share the child's, Ĝ its guaranteed part, w' its weight with usage),
// then the child's name (fairness.Compare). With prefer-large ordering the budget
// rules apply with Current = (share − Ĝ)/w', Budget = (A − Ĝ)/w' and Size =
// cost·w'. After a queue's allocation or nominee changes, the candidates
// on its path are updated: O(depth · log fan-out).
//
// The tournament also keeps what rule 5 needs: every node's allocation,
// for limits, and the lending holds max(0, reserve − allocation), for the
// capacity an idle lender keeps for its own subtree.
type tournament struct {
	ts    *treeState
	t     *fairness.Tree
	model *fairness.Model
	nG    int
	// alloc and share are each node's allocation and share (a queue's
	// cost of its allocation, a group's its children's sum). Shares are
	// kept in fixed point (shareScale units), so that a group's sum is
	// exact: the same allocations give the same share whatever the order
	// they were booked in, and a tie at a group breaks by name the same
	// way in every cycle, never by rounding noise.
	alloc     []flotilla.Resources
	share     []int64
	leafShare []float64 // per queue, the share itself
	// sels has one Bracket per group over its children and, last, the
	// root's.
	sels []*fairness.Bracket
	// nominee is, per node, the queue its candidate stands for (a queue's
	// own index for a queue), -1 when it has none.
	nominee []int32
	// Per queue: the nominated unit's requests and class priority, the
	// queue's share after it (after) and what the unit adds to it (cost,
	// fairness.Model.Cost: equal units cost the same bits in every queue
	// where they cost the same, so a tie between groups is broken by name,
	// not by the last bits of a subtraction).
	req   []flotilla.Resources
	prio  []int32
	after []float64
	cost  []float64
	stale []bool // after and cost must be recomputed
	// Lending holds (nil without lenders): hold per node, the sum of the
	// children's holds per group and, last, the root; clusterAlloc is
	// every queue's allocation summed.
	hold, childHold []flotilla.Resources
	clusterAlloc    flotilla.Resources
	total           flotilla.Resources
	scratch, off    flotilla.Resources
	cand            fairness.Candidate // climb's scratch
}

// shareScale is the fixed point of the tournament's shares: 2⁻⁵² of the
// cluster, below a float64's resolution of a share near 1. Σ shares stays
// below 2¹¹ (a DRF share sum is at most the number of resources).
const shareScale = 1 << 52

func toFixed(x float64) int64   { return int64(x * shareScale) }
func fromFixed(x int64) float64 { return float64(x) / shareScale }

// newTournament builds a tournament with no nominees over the queues'
// allocations now.
func newTournament(c *cycle, ts *treeState) *tournament {
	t := ts.t
	n, nG, nQ := t.NumNodes(), t.NumGroups(), t.NumQueues()
	schema := c.s.cfg.Schema
	tr := &tournament{
		ts: ts, t: t, model: &c.model, nG: nG,
		alloc:     make([]flotilla.Resources, n),
		share:     make([]int64, n),
		leafShare: make([]float64, nQ),
		sels:      make([]*fairness.Bracket, nG+1),
		nominee:   make([]int32, n),
		req:       make([]flotilla.Resources, nQ),
		prio:      make([]int32, nQ),
		after:     make([]float64, nQ),
		cost:      make([]float64, nQ),
		stale:     make([]bool, nQ),
		total:     c.total,
		scratch:   schema.Zero(),
		off:       schema.Zero(),
	}
	for i := range tr.sels {
		p := i
		if i == nG {
			p = -1
		}
		tr.sels[i] = fairness.NewBracket(len(t.Children(p)), c.s.cfg.EnablePreferLargeJobOrdering)
	}
	slab := make(flotilla.Resources, n*schema.Len())
	for v := range n {
		tr.nominee[v] = -1
		tr.alloc[v] = slab[v*schema.Len() : (v+1)*schema.Len() : (v+1)*schema.Len()]
	}
	for qi := range c.queues {
		tr.alloc[t.QueueNode(qi)].Add(c.queues[qi].alloc)
	}
	// Children before parents.
	order := t.TopDown()
	for k := n - 1; k >= 0; k-- {
		v := int(order[k])
		if v >= nG {
			tr.leafShare[v-nG] = c.model.Share(tr.alloc[v])
			tr.share[v] = toFixed(tr.leafShare[v-nG])
		}
		if p := t.Parent(v); p >= 0 {
			tr.alloc[p].Add(tr.alloc[v])
			tr.share[p] += tr.share[v]
		}
	}
	if t.Lenders() {
		tr.initHolds(c)
	}
	return tr
}

func (tr *tournament) sel(p int) *fairness.Bracket {
	if p < 0 {
		return tr.sels[tr.nG]
	}
	return tr.sels[p]
}

// set makes unit (req, prio) queue qi's nominee and re-ranks its path.
func (tr *tournament) set(qi int, req flotilla.Resources, prio int32) {
	v := tr.t.QueueNode(qi)
	tr.req[qi], tr.prio[qi], tr.nominee[v] = req, prio, int32(qi)
	tr.stale[qi] = true
	tr.climb(v)
}

func (tr *tournament) setAfter(qi int) {
	tr.after[qi], tr.cost[qi] = tr.price(qi, tr.req[qi])
}

// price is queue qi's share after a unit of requests req, and what the
// unit adds to it.
func (tr *tournament) price(qi int, req flotilla.Resources) (after, cost float64) {
	return tr.model.Price(tr.alloc[tr.t.QueueNode(qi)], req)
}

// clear withdraws queue qi's nominee.
func (tr *tournament) clear(qi int) {
	v := tr.t.QueueNode(qi)
	tr.nominee[v], tr.req[qi] = -1, nil
	tr.climb(v)
}

// has reports whether queue qi has a nominee.
func (tr *tournament) has(qi int) bool { return tr.nominee[tr.t.QueueNode(qi)] >= 0 }

// best is the queue whose nominee goes next.
func (tr *tournament) best() (int, bool) {
	pos, ok := tr.sels[tr.nG].First()
	if !ok {
		return 0, false
	}
	v := tr.t.Children(-1)[pos]
	return int(tr.nominee[v]), true
}

// add books req (sign +1) or unbooks it (−1) on queue qi and its groups.
// The path's candidates are not re-ranked: the caller does that (set,
// clear or refresh) once its queue's nominee is known.
func (tr *tournament) add(qi int, req flotilla.Resources, sign int64) {
	v := tr.t.QueueNode(qi)
	old := tr.share[v]
	if sign > 0 {
		tr.alloc[v].Add(req)
	} else {
		tr.alloc[v].Sub(req)
	}
	tr.leafShare[qi] = tr.model.Share(tr.alloc[v])
	tr.share[v] = toFixed(tr.leafShare[qi])
	d := tr.share[v] - old
	for p := tr.t.Parent(v); p >= 0; p = tr.t.Parent(p) {
		if sign > 0 {
			tr.alloc[p].Add(req)
		} else {
			tr.alloc[p].Sub(req)
		}
		tr.share[p] += d
	}
	if tr.hold != nil {
		if sign > 0 {
			tr.clusterAlloc.Add(req)
		} else {
			tr.clusterAlloc.Sub(req)
		}
		tr.updateHolds(v)
	}
	tr.stale[qi] = true
}

// refresh re-ranks queue qi's path after its allocation changed.
func (tr *tournament) refresh(qi int) { tr.climb(tr.t.QueueNode(qi)) }

// climb re-ranks node v in its parent's Bracket, and so on to the root.
func (tr *tournament) climb(v int) {
	for {
		p := tr.t.Parent(v)
		s := tr.sel(p)
		if tr.nominee[v] >= 0 {
			tr.candidate(v, &tr.cand)
			s.Update(int(tr.ts.childPos[v]), &tr.cand)
		} else {
			s.Remove(int(tr.ts.childPos[v]))
		}
		if p < 0 {
			return
		}
		if pos, ok := s.First(); ok {
			tr.nominee[p] = tr.nominee[tr.t.Children(p)[pos]]
		} else {
			tr.nominee[p] = -1
		}
		v = p
	}
}

// candidate sets *c to node v's standing at its parent with its nominee.
func (tr *tournament) candidate(v int, c *fairness.Candidate) {
	qi := int(tr.nominee[v])
	if tr.stale[qi] {
		tr.setAfter(qi)
		tr.stale[qi] = false
	}
	tr.stand(v, qi, tr.req[qi], tr.prio[qi], tr.after[qi], tr.cost[qi], c)
}

// stand sets *c to node v's standing at its parent if queue qi, in v's
// subtree, took a unit of requests req and class priority prio, leaving
// the queue with share after, cost more than now. For a group the share
// after is its share (exact, in fixed point) plus cost.
func (tr *tournament) stand(v, qi int, req flotilla.Resources, prio int32, after, cost float64, c *fairness.Candidate) {
	share := tr.leafShare[qi]
	if v != tr.t.QueueNode(qi) {
		share = fromFixed(tr.share[v])
		after = share + cost
	}
	sh := &tr.ts.sh
	w, gHat := sh.Weight[v], sh.GuaranteedPart[v]
	*c = fairness.Candidate{
		Name:            tr.t.Name(v),
		ClassPriority:   prio,
		WithinGuarantee: tr.ts.withinGuaranteeWith(v, tr.alloc[v], req),
		Fraction:        (after - gHat) / w,
		Current:         (share - gHat) / w,
		Budget:          (sh.AdjustedFairShare[v] - gHat) / w,
		Size:            cost * w,
	}
}

// limitOf returns the node on queue qi's path whose limit req would
// exceed (rule 5), or -1. Only the resources req asks for are checked: a
// node already above its limit in a resource (the limit lowered while its
// jobs run) refuses what adds to it, not what needs none of it.
func (tr *tournament) limitOf(qi int, req flotilla.Resources) int {
	for v := tr.t.QueueNode(qi); v >= 0; v = tr.t.Parent(v) {
		if !tr.t.Limited(v) {
			continue
		}
		lim := tr.t.Limit(v)
		for r, x := range req {
			if x > 0 && float64(tr.alloc[v][r]+x) > lim[r] {
				return v
			}
		}
	}
	return -1
}

// initHolds computes every node's lending hold from the allocations.
func (tr *tournament) initHolds(c *cycle) {
	t := tr.t
	n, schema := t.NumNodes(), c.s.cfg.Schema
	tr.hold = make([]flotilla.Resources, n)
	tr.childHold = make([]flotilla.Resources, tr.nG+1)
	for i := range tr.childHold {
		tr.childHold[i] = schema.Zero()
	}
	tr.clusterAlloc = schema.Zero()
	for v := range n {
		tr.hold[v] = schema.Zero()
	}
	order := t.TopDown()
	for k := n - 1; k >= 0; k-- {
		v := int(order[k])
		if v >= tr.nG {
			tr.clusterAlloc.Add(tr.alloc[v])
		}
		tr.ownHold(v, tr.hold[v])
		p := t.Parent(v)
		if p < 0 {
			p = tr.nG
		}
		tr.childHold[p].Add(tr.hold[v])
	}
}

// ownHold sets out to node v's hold: max(0, reserve − allocation), for a
// group at least its children's holds summed.
func (tr *tournament) ownHold(v int, out flotilla.Resources) {
	res := tr.t.Reserve(v)
	for r := range out {
		h := int64(0)
		if res != nil {
			h = max(0, res[r]-tr.alloc[v][r])
		}
		if v < tr.nG {
			h = max(h, tr.childHold[v][r])
		}
		out[r] = h
	}
}

// updateHolds recomputes the holds on node v's path after its allocation
// changed.
func (tr *tournament) updateHolds(v int) {
	for ; v >= 0; v = tr.t.Parent(v) {
		tr.ownHold(v, tr.scratch)
		p := tr.t.Parent(v)
		if p < 0 {
			p = tr.nG
		}
		tr.childHold[p].Sub(tr.hold[v])
		tr.childHold[p].Add(tr.scratch)
		copy(tr.hold[v], tr.scratch)
	}
}

// heldFrom returns a node off queue qi's path whose hold req would eat
// into (rule 5: allocated + req + the holds off the path must stay within
// the cluster), or -1. As limitOf, only the resources req asks for are
// checked.
func (tr *tournament) heldFrom(qi int, req flotilla.Resources) int {
	if tr.hold == nil {
		return -1
	}
	clear(tr.off)
	for v := tr.t.QueueNode(qi); ; {
		p := tr.t.Parent(v)
		pi := p
		if p < 0 {
			pi = tr.nG
		}
		tr.off.Add(tr.childHold[pi])
		tr.off.Sub(tr.hold[v])
		if p < 0 {
			break
		}
		v = p
	}
	for r, x := range req {
		if x > 0 && tr.clusterAlloc[r]+x+tr.off[r] > tr.total[r] {
			return tr.holder(qi, r)
		}
	}
	return -1
}

// holder names the node off queue qi's path, nearest to it, that holds
// resource r back.
func (tr *tournament) holder(qi, r int) int {
	for v := tr.t.QueueNode(qi); ; {
		p := tr.t.Parent(v)
		for _, s := range tr.t.Children(p) {
			if int(s) != v && tr.hold[s][r] > 0 {
				return int(s)
			}
		}
		if p < 0 {
			return v
		}
		v = p
	}
}

// refusal is the reason a unit of queue qi requesting req may not be
// placed by the tree's limits or lending holds; Code 0 when it may.
func (tr *tournament) refusal(qi int, req flotilla.Resources) Reason {
	if v := tr.limitOf(qi, req); v >= 0 {
		return Reason{Code: ReasonLimit, Message: tr.t.Name(v)}
	}
	if v := tr.heldFrom(qi, req); v >= 0 {
		return Reason{Code: ReasonLendingLimit, Message: tr.t.Name(v)}
	}
	return Reason{}
}
