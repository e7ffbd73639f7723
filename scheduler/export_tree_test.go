package scheduler

import (
	"context"
	"fmt"
	"time"
)

// ScheduleChecked is Schedule with the queue tree's books checked after
// the fill and after settling: the tournament's per-node allocations,
// shares, lending holds and cluster allocation must match the queues'
// (recomputed from scratch), and no Selector may keep a candidate once the
// fill is done. It returns the first mismatch found, or "".
func ScheduleChecked(s *Scheduler, ctx context.Context, snap *Snapshot, now time.Time) (*Result, string, error) {
	c, err := newCycle(s, snap, now)
	if err != nil {
		return nil, "", err
	}
	c.pre.evictForFairShare()
	if err := c.fill(ctx); err != nil {
		return nil, "", err
	}
	msg := c.checkTour("after the fill")
	if msg == "" && c.tour != nil {
		for p, sel := range c.tour.sels {
			if sel.Len() != 0 {
				msg = fmt.Sprintf("after the fill: group %d's selector holds %d candidates", p, sel.Len())
			}
		}
	}
	c.settle()
	if msg == "" {
		msg = c.checkTour("after settling")
	}
	return c.result(), msg, nil
}

// checkTour compares the tournament's books with a fresh one's.
func (c *cycle) checkTour(when string) string {
	tr := c.tour
	if tr == nil {
		return ""
	}
	fresh := newTournament(c, c.tree)
	for v := range tr.t.NumNodes() {
		if !tr.alloc[v].Equal(fresh.alloc[v]) {
			return fmt.Sprintf("%s: node %s allocation %v, its queues hold %v", when, tr.t.Name(v), tr.alloc[v], fresh.alloc[v])
		}
		if tr.share[v] != fresh.share[v] {
			return fmt.Sprintf("%s: node %s share %v, its queues' %v", when, tr.t.Name(v), fromFixed(tr.share[v]), fromFixed(fresh.share[v]))
		}
		if tr.hold != nil && !tr.hold[v].Equal(fresh.hold[v]) {
			return fmt.Sprintf("%s: node %s hold %v, recomputed %v", when, tr.t.Name(v), tr.hold[v], fresh.hold[v])
		}
	}
	for p := range tr.childHold {
		if !tr.childHold[p].Equal(fresh.childHold[p]) {
			return fmt.Sprintf("%s: children's holds of group %d %v, recomputed %v", when, p, tr.childHold[p], fresh.childHold[p])
		}
	}
	if tr.hold != nil && !tr.clusterAlloc.Equal(fresh.clusterAlloc) {
		return fmt.Sprintf("%s: cluster allocation %v, the queues' %v", when, tr.clusterAlloc, fresh.clusterAlloc)
	}
	return ""
}
