package scheduler

import (
	"errors"
	"fmt"
	"time"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/fairness"
)

// The queue tree (docs/queue-tree.md): groups and leaf queues with guarantees,
// limits, lending limits and usage memory.
//
// A flat list of queues (no Snapshot.Groups, no Queue.Parent, no quota
// vector, no Config.UsageHalfLife) takes none of this: the cycle then runs
// exactly as Armada's flat model, with one fairness.Selector over the
// queues. Otherwise the cycle holds a treeState: the validated tree and
// its fair shares (rule 4), computed once at the start of the cycle, and,
// during the fill, a tournament (tournament.go) that orders the queues
// along their paths (rule 6) and enforces limits and lending holds (rule
// 5). Eviction to fair share reads the tree's shares and guarantees (rules
// 7 and 8).

// treeState is the queue tree during one cycle.
type treeState struct {
	t  *fairness.Tree
	sh fairness.TreeShares
	// usage is each queue's decayed u at usageTime, the later of the
	// cycle's time and the snapshot's usage's (a clock that steps back
	// leaves usage as it was); nil with usage memory off.
	usage     []float64
	usageTime time.Time
	// guar is each node's effective guarantee, nil where it is 0.
	guar []flotilla.Resources
	// childPos is each node's position among its parent's children.
	childPos []int32
}

// isFlat reports whether snap and cfg describe Armada's flat model.
func isFlat(cfg *Config, snap *Snapshot) bool {
	if cfg.UsageHalfLife != 0 {
		return false
	}
	field, _ := treeField(cfg.Schema, snap)
	return field == ""
}

// treeField names the first field of snap that makes a queue tree, and its
// value; "" when there is none.
func treeField(schema *flotilla.ResourceSchema, snap *Snapshot) (field, value string) {
	if len(snap.Groups) > 0 {
		if g := snap.Groups[0]; g != nil {
			return "groups[0].name", g.Name
		}
		return "groups[0]", "<nil>"
	}
	for i, q := range snap.Queues {
		if q == nil || !q.InTree() {
			continue // a flat cycle formats nothing
		}
		f := fmt.Sprintf("queues[%d].", i)
		switch {
		case q.Parent != "":
			return f + "parent", q.Parent
		case q.Guaranteed != nil:
			return f + "guaranteed", fmt.Sprint(schema.FormatPartial(q.Guaranteed))
		case q.Limit != nil:
			return f + "limit", fmt.Sprint(schema.FormatPartial(q.Limit))
		case q.LendingLimit != nil:
			return f + "lendingLimit", fmt.Sprint(schema.FormatPartial(q.LendingLimit))
		}
	}
	return "", ""
}

// newTreeState validates the snapshot's tree (fairness.NewTree: every
// problem at once, with the snapshot's field paths groups[i].… and
// queues[i].…) and returns its static part, or nil for a flat world. The
// queues must be non-nil (newCycle checks them first).
func newTreeState(s *Scheduler, snap *Snapshot) (*treeState, error) {
	if !s.forceTree && isFlat(&s.cfg, snap) {
		return nil, nil
	}
	if s.cfg.Strategy == Lottery {
		field, value := treeField(s.cfg.Schema, snap)
		return nil, errors.Join(flotilla.Errorf(field, value, flotilla.ErrInconsistent,
			"the lottery strategy takes a flat list of queues: no groups, parents or quotas"))
	}
	spec := fairness.TreeSpec{
		Groups:        make([]fairness.NodeSpec, len(snap.Groups)),
		Queues:        make([]fairness.NodeSpec, len(snap.Queues)),
		UsageHalfLife: s.cfg.UsageHalfLife,
	}
	if spec.UsageHalfLife > 0 {
		spec.UsageWeight = s.cfg.UsageWeight
		if spec.UsageWeight == 0 {
			spec.UsageWeight = 1
		}
	}
	var errs []error
	if spec.UsageHalfLife > 0 {
		errs = checkUsage(snap.Usage)
	}
	nilGroup := false
	for i, g := range snap.Groups {
		if g == nil {
			errs = append(errs, flotilla.Errorf(fmt.Sprintf("groups[%d]", i), "<nil>", flotilla.ErrRequired, ""))
			nilGroup = true
			continue
		}
		spec.Groups[i] = fairness.GroupSpec(g)
	}
	for i, q := range snap.Queues {
		spec.Queues[i] = fairness.QueueSpec(q)
	}
	if nilGroup { // the tree's own checks would name its children's parent unknown
		return nil, errors.Join(errs...)
	}
	t, err := fairness.NewTree(s.cfg.Schema, spec)
	if err != nil || len(errs) > 0 {
		return nil, errors.Join(append(errs, err)...)
	}
	ts := &treeState{t: t, guar: make([]flotilla.Resources, t.NumNodes()), childPos: make([]int32, t.NumNodes())}
	for v := range t.NumNodes() {
		if g := t.Guaranteed(v); !g.IsZero() {
			ts.guar[v] = g
		}
	}
	for p := -1; p < t.NumGroups(); p++ {
		for k, v := range t.Children(p) {
			ts.childPos[v] = int32(k)
		}
	}
	return ts, nil
}

// checkUsage reports every usage value outside [0, 1] (newTreeState, with
// the tree's problems).
func checkUsage(us UsageState) []error {
	var errs []error
	for _, name := range sortedKeys(us.Usage) {
		if u := us.Usage[name]; !(u >= 0 && u <= 1) {
			errs = append(errs, flotilla.Errorf("usage.usage."+name, fmt.Sprint(u), flotilla.ErrOutOfRange, "want a share in [0, 1]"))
		}
	}
	return errs
}

// queueNode is queue qi's node in the tree.
func (ts *treeState) queueNode(qi int) int { return ts.t.QueueNode(qi) }

// decayUsage sets ts.usage: each queue's u from the snapshot, decayed from
// its time to now toward the queue's share at the start of the cycle
// (newTreeState has checked the values).
func (ts *treeState) decayUsage(c *cycle) {
	if ts.t.UsageHalfLife() == 0 {
		return
	}
	prev := c.snap.Usage
	var dt time.Duration // none when the state has no time, or is ahead of now
	ts.usageTime = c.now
	if !prev.Time.IsZero() {
		if dt = c.now.Sub(prev.Time); dt < 0 {
			ts.usageTime = prev.Time
		}
	}
	ts.usage = make([]float64, len(c.queues))
	share := make([]float64, len(c.queues))
	for qi := range c.queues {
		ts.usage[qi] = prev.Usage[c.queues[qi].q.Name]
		share[qi] = c.model.Share(c.queues[qi].alloc)
	}
	fairness.DecayUsage(ts.usage, share, dt, ts.t.UsageHalfLife())
}

// setShares computes the tree's fair shares for the cycle (rule 4, with
// usage memory when on) and gives each queue its F and A.
func (ts *treeState) setShares(c *cycle) {
	n := len(c.queues)
	in := fairness.TreeInput{Demand: make([]flotilla.Resources, n), Active: make([]bool, n), Usage: ts.usage}
	for qi := range c.queues {
		qs := &c.queues[qi]
		in.Demand[qi] = qs.demand
		in.Active[qi] = qs.running > 0 || qs.queuedLen > 0
	}
	ts.sh.Compute(ts.t, &c.model, in)
	for qi := range c.queues {
		v := ts.queueNode(qi)
		c.queues[qi].fair = ts.sh.FairShare[v]
		c.queues[qi].adjusted = ts.sh.AdjustedFairShare[v]
	}
}

// withinGuaranteeWith reports whether alloc + req stays within node v's
// guarantee in every resource (false for a node without one).
func (ts *treeState) withinGuaranteeWith(v int, alloc, req flotilla.Resources) bool {
	g := ts.guar[v]
	if g == nil {
		return false
	}
	for r, x := range alloc {
		if x+req[r] > g[r] {
			return false
		}
	}
	return true
}

// holdsAtMostGuarantee reports whether alloc ≤ node v's guarantee in every
// resource (holding nothing counts, also without a guarantee).
func (ts *treeState) holdsAtMostGuarantee(v int, alloc flotilla.Resources) bool {
	if ts.guar[v] == nil {
		return alloc.IsZero()
	}
	return alloc.Fits(ts.guar[v])
}

// evictable marks the queues evictable to fair share (rules 7 and 8): a
// queue above protectedFraction × max(F, A) that holds more than its
// guarantee in some resource; the fraction is read as at most 1 while some
// queue is starved (starved).
func (ts *treeState) evictable(c *cycle, share []float64, out []bool) bool {
	pi := c.s.cfg.ProtectedFractionOfFairShare
	if pi > 1 && ts.anyStarved(c) {
		pi = 1
	}
	any := false
	for qi := range c.queues {
		qs := &c.queues[qi]
		out[qi] = share[qi] > pi*max(qs.fair, qs.adjusted) && !ts.holdsAtMostGuarantee(ts.queueNode(qi), qs.alloc)
		any = any || out[qi]
	}
	return any
}

// anyStarved reports whether some queue with a guarantee has a queued head
// that keeps it within the guarantee (rule 8). The head is the queue's
// first stored job; a gang member stands for its whole gang (its requests
// times the gang's cardinality); an invalid head starves nothing. The head
// read is kept for the fill.
func (ts *treeState) anyStarved(c *cycle) bool {
	for qi := range c.queues {
		qs := &c.queues[qi]
		v := ts.queueNode(qi)
		if ts.guar[v] == nil || qs.queuedLen == 0 {
			continue
		}
		if err := c.open(qi); err != nil || qs.reader == nil {
			continue // the fill reports the error
		}
		if qs.peeked == nil {
			qs.peeked, _ = c.readNext(qs)
		}
		// A job the fill will report invalid (and never place) starves
		// nothing.
		if _, bad := c.s.invalidJob(qs.q.Name, qs.peeked); bad {
			continue
		}
		j := qs.peeked.Job
		n := int64(1)
		if j.IsGang() && j.Gang.Cardinality > 1 {
			n = int64(j.Gang.Cardinality)
		}
		fits := true
		for r, x := range qs.alloc {
			if x+n*j.Requests[r] > ts.guar[v][r] {
				fits = false
				break
			}
		}
		if fits {
			return true
		}
	}
	return false
}

// reports fills Result.Groups and each queue report's Parent and Usage,
// and Result.Usage.
func (ts *treeState) reports(c *cycle, res *Result) {
	t := ts.t
	nG := t.NumGroups()
	for qi := range res.Queues {
		res.Queues[qi].Parent = c.queues[qi].q.Parent
		if ts.usage != nil {
			res.Queues[qi].Usage = ts.usage[qi]
		}
	}
	if ts.usage != nil {
		u := make(map[string]float64, len(c.queues))
		for qi := range c.queues {
			u[c.queues[qi].q.Name] = ts.usage[qi]
		}
		res.Usage = UsageState{Usage: u, Time: ts.usageTime}
	}
	if nG == 0 {
		return
	}
	res.Groups = make([]GroupReport, nG)
	for v := range nG {
		g := &res.Groups[v]
		g.Name = t.Name(v)
		if p := t.Parent(v); p >= 0 {
			g.Parent = t.Name(p)
		}
		g.Allocated = c.s.cfg.Schema.Zero()
		g.FairShare = ts.sh.FairShare[v]
		g.AdjustedFairShare = ts.sh.AdjustedFairShare[v]
	}
	for qi := range res.Queues {
		qr := &res.Queues[qi]
		for p := t.Parent(ts.queueNode(qi)); p >= 0; p = t.Parent(p) {
			g := &res.Groups[p]
			g.Allocated.AddSaturating(qr.Allocated)
			g.Running += qr.Running
			g.Queued += qr.Queued
			g.Share += qr.Share
			g.Demand += qr.Demand
			g.Usage += qr.Usage
		}
	}
}
