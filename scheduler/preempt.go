package scheduler

import (
	"math/rand/v2"
	"slices"
	"time"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/preempt"
	"github.com/flotilla-sched/flotilla/queue"
)

// evictedLevel is the node-database level below every priority class where
// evicted jobs hold their capacity: a search at level 0 (free capacity)
// still sees them, a search at a class's level does not, so only a job that
// must displace them does.
const evictedLevel = 0

// runState is where a running job of the snapshot stands in the cycle.
type runState uint8

const (
	stRunning   runState = iota // untouched
	stEvicted                   // taken off its node, waiting to go back
	stBack                      // evicted and put back on its node
	stPreempted                 // leaves its node: in Result.Preempted
	stNew                       // scheduled this cycle
	stDisplaced                 // scheduled this cycle, then displaced by a higher priority
)

// runJob is a running job of the snapshot during the cycle.
type runJob struct {
	job   *flotilla.Job
	entry queue.Entry
	start time.Time
	node  int32
	queue int32
	class int32
	state runState
	// share and fair are the queue's standing when the job was evicted to
	// fair share, for the Preemption record.
	share, fair float64
	// sched is the job's index in Result.Scheduled, for stNew jobs.
	sched int32
}

// evictForFairShare evicts, node by node with probability
// EvictionProbability, the preemptible jobs of queues whose share exceeds
// protectedFractionOfFairShare × max(fair share, adjusted fair share),
// whole gangs together. Evicted jobs hold their capacity at evictedLevel
// and wait at the front of their queues; the fill puts back those it can.
func (c *cycle) evictForFairShare() {
	if !c.anyPreemptible || len(c.run) == 0 {
		return
	}
	cfg := &c.s.cfg
	evictable := make([]bool, len(c.queues))
	share := make([]float64, len(c.queues))
	any := false
	for qi := range c.queues {
		qs := &c.queues[qi]
		share[qi] = c.model.Share(qs.alloc)
		evictable[qi] = preempt.Evictable(share[qi], qs.fair, qs.adjusted, cfg.ProtectedFractionOfFairShare)
		any = any || evictable[qi]
	}
	if !any {
		return
	}
	rng := rand.New(rand.NewPCG(c.snap.Seed, 0xf1a7111a))
	for n := range c.nodeRun {
		// Draw for every node, so that one node's draw does not depend on
		// what the others hold.
		if u := rng.Float64(); u >= cfg.EvictionProbability {
			continue
		}
		for _, ri := range c.nodeRun[n] {
			r := &c.run[ri]
			if r.state == stRunning && c.s.classes[r.class].Preemptible && evictable[r.queue] {
				c.evictGang(ri, share[r.queue])
			}
		}
	}
	for qi := range c.queues {
		qs := &c.queues[qi]
		slices.SortFunc(qs.evicted, func(a, b int32) int {
			ra, rb := &c.run[a], &c.run[b]
			if queue.LessEvicted(&ra.entry, &rb.entry, ra.start, rb.start) {
				return -1
			}
			return 1
		})
	}
}

// evictGang evicts run job ri and every running member of its gang.
func (c *cycle) evictGang(ri int32, share float64) {
	for _, m := range c.gangOf(ri) {
		if c.run[m].state == stRunning {
			c.evict(m, share)
		}
	}
}

func (c *cycle) evict(ri int32, share float64) {
	r := &c.run[ri]
	j := r.job
	qs := &c.queues[r.queue]
	c.db.Unbind(int(r.node), int(r.queue), c.s.bindLevel[r.class], j.Requests)
	c.db.Hold(int(r.node), evictedLevel, j.Requests)
	c.unaccount(int(r.queue), int(r.class), j.Requests)
	r.state = stEvicted
	r.share, r.fair = share, qs.fair
	r.entry = queue.Entry{Job: j, ClassPriority: c.s.classes[r.class].Priority, Key: queue.SchedulingKey(j, c.s.classes[r.class].Priority)}
	qs.running--
	qs.evicted = append(qs.evicted, ri)
	c.held++
}

// gangOf returns the run jobs evicted together with ri: its gang's running
// members, or ri alone.
func (c *cycle) gangOf(ri int32) []int32 {
	if id := c.run[ri].job.Gang.ID; id != "" {
		if ms := c.gangRun[id]; len(ms) > 0 {
			return ms
		}
	}
	c.one[0] = ri
	return c.one[:]
}

// tryEvicted puts an evicted job back on its own node if it fits there
// among the jobs not evicted, searching at its own class level, where the
// other evicted jobs' holds do not count: so when new work displaced some
// evicted jobs, those offered last are the ones that do not fit. Either way
// its hold is released; a job that does not go back will be preempted.
func (c *cycle) tryEvicted(qi int, ri int32) {
	r := &c.run[ri]
	j := r.job
	n := int(r.node)
	c.db.Release(n, evictedLevel, j.Requests)
	c.held--
	if c.overClassLimit(qi, int(r.class), j.Requests) {
		c.db.Forget()
		return
	}
	level := c.s.classLevel[r.class]
	c.query = c.makeQuery(j, qi, level)
	c.query.OnlyNode = n
	if _, ok := c.db.Select(&c.query); !ok {
		c.db.Forget()
		return
	}
	c.db.Bind(n, qi, c.s.bindLevel[r.class], j.Requests)
	c.db.Forget()
	if !c.nodeFits(n) {
		c.makeRoom(n, level)
	}
	c.account(qi, int(r.class), j.Requests)
	r.state = stBack
	c.queues[qi].running++
}

// makeRoom preempts, on node, the fewest preemptible running jobs of lower
// priority than level that bring every class level back to non-negative
// allocatable after a job bound there at level: lowest priority first and,
// within a priority, the jobs that would be rescheduled last first (the
// queue furthest above its fair share, then the latest started). Gang
// members take their whole gang with them.
func (c *cycle) makeRoom(node, level int) {
	cand := c.victims[:0]
	for _, ri := range c.nodeRun[node] {
		r := &c.run[ri]
		if (r.state == stRunning || r.state == stBack || r.state == stNew) && c.s.classes[r.class].Preemptible && c.s.bindLevel[r.class] < level {
			cand = append(cand, ri)
		}
	}
	vs := c.victimInfo[:0]
	for _, ri := range cand {
		r := &c.run[ri]
		qs := &c.queues[r.queue]
		vs = append(vs, preempt.Victim{Level: c.s.bindLevel[r.class], QueueFraction: c.model.Share(qs.alloc) / qs.fair, Start: r.start, ID: r.job.ID})
	}
	c.victimInfo = vs
	c.victimOrder = c.victimOrder[:0]
	for i := range cand {
		c.victimOrder = append(c.victimOrder, i)
	}
	slices.SortFunc(c.victimOrder, func(a, b int) int { return preempt.Compare(&vs[a], &vs[b]) })
	c.victims = cand
	ordered := func(i int) *runJob { return &c.run[cand[c.victimOrder[i]]] }
	kept := preempt.Fewest(len(cand), func() bool { return c.nodeFits(node) },
		func(i int) {
			r := ordered(i)
			c.db.Unbind(node, int(r.queue), c.s.bindLevel[r.class], r.job.Requests)
		},
		func(i int) {
			r := ordered(i)
			c.db.Bind(node, int(r.queue), c.s.bindLevel[r.class], r.job.Requests)
		}, c.kept)
	c.kept = kept
	taken := c.taken[:0]
	for _, i := range kept {
		taken = append(taken, cand[c.victimOrder[i]])
	}
	c.taken = taken
	// The victims' gang mates elsewhere go too: a gang is preempted whole.
	// Drop every victim first (they are already unbound), then sweep their
	// gang mates that are still on some node.
	for _, ri := range taken {
		c.dropVictim(ri, false)
	}
	for _, ri := range taken {
		for _, m := range c.gangOf(ri) {
			if mr := &c.run[m]; mr.state == stRunning || mr.state == stBack || mr.state == stNew {
				c.dropVictim(m, true)
			}
		}
	}
	c.db.Forget()
}

// dropVictim takes an urgency victim off the books (and off its node when
// unbind is set): a running job is preempted, a job scheduled earlier in
// this cycle goes back to waiting.
func (c *cycle) dropVictim(ri int32, unbind bool) {
	r := &c.run[ri]
	q, cl := int(r.queue), int(r.class)
	if unbind {
		c.db.Unbind(int(r.node), q, c.s.bindLevel[cl], r.job.Requests)
	}
	c.unaccount(q, cl, r.job.Requests)
	qs := &c.queues[q]
	qs.running--
	if r.state != stNew {
		c.preempt(ri, PreemptedForUrgency)
		return
	}
	r.state = stDisplaced
	qs.scheduled--
	qs.tokens++
	c.globalTokens++
	c.scheduledTotal.Sub(r.job.Requests)
	c.res.Scheduled[r.sched].Job = nil
	// Offer it again, first in its queue: it may fit elsewhere. A gang
	// member is not offered alone: its gang lost its place as a whole.
	if qs.stopped || r.job.IsGang() {
		c.unscheduled(r.job, displacedReason)
		return
	}
	qs.retry = append(qs.retry, ri)
	if !c.sel.Contains(q) && c.advance(q) {
		c.sel.Push(c.candidate(q))
	}
}

var displacedReason = Reason{ReasonDisplaced, "placed, then displaced in the same cycle by a job of higher priority"}

// nodeFits reports whether every class level of node has non-negative
// allocatable (the evicted level may stay negative: that is displacement).
func (c *cycle) nodeFits(node int) bool {
	for l := evictedLevel + 1; l < len(c.s.levels); l++ {
		if c.db.Allocatable(node, l).AnyNegative() {
			return false
		}
	}
	return true
}

func (c *cycle) preempt(ri int32, why PreemptionReason) {
	r := &c.run[ri]
	r.state = stPreempted
	p := Preemption{Job: r.job, Node: c.db.Node(int(r.node)).Name, Reason: why}
	if why == PreemptedForFairShare {
		p.Share, p.FairShare = r.share, r.fair
	}
	c.res.Preempted = append(c.res.Preempted, p)
}

// finishEvictions preempts every evicted job the fill did not put back,
// with its gang: a gang is preempted whole or not at all.
func (c *cycle) finishEvictions() {
	for ri := range c.run {
		if c.run[ri].state == stEvicted {
			for _, m := range c.gangOf(int32(ri)) {
				mr := &c.run[m]
				switch mr.state {
				case stEvicted:
					c.preempt(m, PreemptedForFairShare)
				case stBack:
					c.db.Unbind(int(mr.node), int(mr.queue), c.s.bindLevel[mr.class], mr.job.Requests)
					c.unaccount(int(mr.queue), int(mr.class), mr.job.Requests)
					c.queues[mr.queue].running--
					c.preempt(m, PreemptedForFairShare)
				}
			}
		}
	}
	c.db.Forget()
}
