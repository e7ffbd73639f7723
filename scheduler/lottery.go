package scheduler

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/fairness"
	"github.com/flotilla-sched/flotilla/priority"
	"github.com/flotilla-sched/flotilla/queue"
)

// leaseStream is the second PCG word of the lottery's random source, so its
// draws never coincide with those of other random choices seeded from
// Snapshot.Seed.
const leaseStream = 0x1077e27

// Per-job outcomes during a lottery cycle.
const (
	leaseUntouched uint8 = iota // never taken; Lease found no room for it
	leasePlaced                 // bound to a node
	leaseReported               // refused with a reason already in Unscheduled
	leaseDeferred               // refused because a limit ran out: not examined
)

// leaseQueue is one queue's part in a lottery cycle.
type leaseQueue struct {
	qi      int
	entries []*queue.Entry
	outcome []uint8
	// examined counts the queued jobs looked at, within the lookback.
	examined int
	// rateDeferred and stopDeferred count jobs refused because the queue's
	// rate limit, or a limit of the whole cycle (stop), ran out.
	rateDeferred, stopDeferred int
}

// lottery is the lottery strategy's cycle (Config.Strategy == Lottery),
// over the cycle's node database, queues and books.
type lottery struct{ c *cycle }

// run is the lottery strategy (Config.Strategy == Lottery): Armada's legacy
// slice-and-lottery leasing (seeds/armada-priority.md) over the whole
// cluster's free resources, through priority.Lease.
//
//  0. Jobs the cycle evicted to fair share go back on their nodes: the
//     lottery never preempts.
//  1. Each snapshot queue's priority (Snapshot.QueuePriorities, 0 when
//     absent) decays from the state's time to now toward the usage of the
//     queue's running jobs in the snapshot, valued by the asset model in cpu
//     cores (priority.Decay). Those priorities are Result.QueuePriorities,
//     at now; the cycle leases with them.
//  2. The offer is the free capacity (at evictedLevel, the lowest level)
//     of every node that is not cordoned, summed.
//  3. Each queue takes part, in name order, with effective priority
//     priority × priority factor and its queued jobs in queue order, at most
//     MaxQueueLookback of them (0: all); the rest are not examined. Gang
//     members are left queued: the lottery leases single jobs; invalid
//     jobs handed out by the store are reported with ReasonInvalid.
//  4. priority.Lease slices the offer in proportion to 1/effective priority
//     and hands out what the slices leave by lottery, drawing from a PCG
//     source seeded with Snapshot.Seed. Whenever it takes a job, the job
//     goes through the same checks and bookkeeping as under progressive
//     filling: the queue's per-class limit, the scheduling-key cache of
//     failures, a node search for free capacity (the lottery never
//     preempts) in the queue's node tiers, outside the job's avoided
//     clusters first (Job.AvoidClusters), Bind, and the round and rate
//     limits (a job refused by a limit is not examined, like under
//     progressive filling).
//  5. Jobs examined and not placed are Unscheduled, with the node search's
//     explanation when no room was left for them.
//
// It starts no goroutine and reads no clock; ctx is polled every 1024 jobs.
func (l *lottery) run(ctx context.Context) error {
	c := l.c
	if err := ctx.Err(); err != nil {
		return err
	}
	c.reserveScheduled()
	cfg := &c.s.cfg
	schema := cfg.Schema
	var usage priority.UsageModel
	asset, err := fairness.NewAsset(schema, c.total, cfg.ResourceWeights)
	if err == nil {
		usage = &asset
	}
	// A cluster with no cpu leaves the asset model undefined: every usage
	// counts 0 and the lottery weighs resources by the offer.
	prios, err := l.decayQueuePriorities(usage)
	if err != nil {
		return err
	}
	c.rep.res.QueuePriorities = QueuePriorityState{Priorities: prios, Time: c.now}

	offer := schema.Zero()
	for n := 0; n < c.db.NodeCount(); n++ {
		if c.db.Cordoned(n) {
			continue
		}
		for r, v := range c.db.Allocatable(n, evictedLevel) {
			offer[r] += max(v, 0)
		}
	}

	lqs, inputs, err := l.queues(prios)
	if err != nil {
		return err
	}
	var (
		stop      Reason
		cancelled bool
		calls     int
	)
	place := func(li, k int) bool {
		lq := &lqs[li]
		if calls++; calls&1023 == 0 && ctx.Err() != nil {
			cancelled = true
		}
		if cancelled {
			lq.outcome[k] = leaseDeferred
			return false
		}
		if stop.Code == 0 {
			switch {
			case c.roundLimitReached():
				stop = Reason{Code: ReasonRoundLimit, Message: "the cycle scheduled its maximum fraction of the cluster"}
			case c.tokens.globalShort(1):
				stop = Reason{Code: ReasonGlobalRateLimit, Message: "the global scheduling rate limit has no tokens left"}
			}
		}
		switch {
		case stop.Code != 0:
			lq.outcome[k] = leaseDeferred
			lq.stopDeferred++
			return false
		case c.tokens.queueShort(lq.qi, 1):
			lq.outcome[k] = leaseDeferred
			lq.rateDeferred++
			return false
		}
		if l.place(lq.qi, lq.entries[k]) {
			lq.outcome[k] = leasePlaced
			return true
		}
		lq.outcome[k] = leaseReported
		return false
	}
	rng := rand.New(rand.NewPCG(c.snap.Seed, leaseStream))
	opts := priority.LeaseOptions{
		UseProbabilisticSchedulingForAllResources: cfg.UseProbabilisticSchedulingForAllResources,
		Usage: usage,
		Place: place,
	}
	if _, err := priority.Lease(inputs, offer, opts, rng); err != nil {
		// Every input was checked above; an error here is a bug.
		return fmt.Errorf("scheduler: lottery: %w", err)
	}
	if cancelled {
		return ctx.Err()
	}
	l.report(lqs, stop)
	return nil
}

// decayQueuePriorities returns every snapshot queue's priority at now: the
// carried priority decayed toward the queue's running usage over the time
// since the state was computed.
func (l *lottery) decayQueuePriorities(usage priority.UsageModel) (map[string]float64, error) {
	c := l.c
	prev := c.snap.QueuePriorities
	for _, name := range sortedKeys(prev.Priorities) {
		if p := prev.Priorities[name]; !(p >= 0) || math.IsInf(p, 0) {
			return nil, flotilla.Errorf("queuePriorities.priorities."+name, fmt.Sprint(p), flotilla.ErrOutOfRange, "want a finite priority ≥ 0")
		}
	}
	var elapsed time.Duration
	if !prev.Time.IsZero() {
		elapsed = c.now.Sub(prev.Time) // negative reads as no time, as in Decay
	}
	running := make([]flotilla.Resources, len(c.queues))
	for i := range c.snap.Running {
		j := c.snap.Running[i].Job
		qi := c.queueIdx[j.Queue]
		if running[qi] == nil {
			running[qi] = c.s.cfg.Schema.Zero()
		}
		running[qi].Add(j.Requests)
	}
	out := make(map[string]float64, len(c.queues))
	for qi := range c.queues {
		u := 0.0
		if usage != nil && running[qi] != nil {
			u = usage.Usage(running[qi])
		}
		name := c.queues[qi].q.Name
		out[name] = priority.Decay(prev.Priorities[name], u, elapsed, c.s.cfg.PriorityHalftime)
	}
	return out, nil
}

// leaseQueues gathers, in queue-name order, each queue's effective priority
// and the queued jobs it offers to the lottery. Jobs it cannot offer (gang
// members, requests that do not fit the schema) are reported at once.
func (l *lottery) queues(prios map[string]float64) ([]leaseQueue, []priority.LeaseQueue, error) {
	c := l.c
	order := make([]int, len(c.queues))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return strings.Compare(c.queues[a].q.Name, c.queues[b].q.Name) })
	lqs := make([]leaseQueue, len(order))
	inputs := make([]priority.LeaseQueue, len(order))
	lookback := c.s.cfg.MaxQueueLookback
	for li, qi := range order {
		qs := &c.queues[qi]
		lq := &lqs[li]
		lq.qi = qi
		var jobs []flotilla.Resources
		if err := c.open(qi); err != nil {
			return nil, nil, err
		}
		for lookback <= 0 || lq.examined < lookback {
			e, ok := c.readNext(qs)
			if !ok {
				break
			}
			lq.examined++
			switch why, bad := c.invalidQueued(qi, e); {
			case bad:
				c.rep.unscheduledEntry(qi, e, why)
			case e.Job.IsGang():
				c.rep.unscheduledEntry(qi, e, Reason{Code: ReasonGangUnsupported, Message: "the lottery strategy leases single jobs; gangs need progressive filling"})
			default:
				lq.entries = append(lq.entries, e)
				jobs = append(jobs, e.Job.Requests)
			}
		}
		if c.readErr != nil {
			return nil, nil, c.readErr
		}
		lq.outcome = make([]uint8, len(lq.entries))
		eff := prios[qs.q.Name] / qs.weight // priority × factor
		if math.IsInf(eff, 0) || math.IsNaN(eff) {
			eff = math.MaxFloat64
		}
		inputs[li] = priority.LeaseQueue{Name: qs.q.Name, EffectivePriority: eff, Jobs: jobs}
	}
	return lqs, inputs, nil
}

// leasePlace is the lottery's placement of one job, with the checks and
// bookkeeping of progressive filling's try: per-class limit, the
// scheduling-key cache, a node search for free capacity (evictedLevel, the
// lowest level: the lottery never displaces anything) in the queue's tiers,
// for a job with AvoidClusters first outside those clusters, Bind. It reports whether the job was placed; if not, the reason is
// recorded.
func (l *lottery) place(qi int, e *queue.Entry) bool {
	c := l.c
	j := e.Job
	ci, _ := c.s.class(j)
	if c.queues[qi].overClassLimit(ci, j.Requests) {
		c.rep.unscheduledEntry(qi, e, c.queues[qi].classLimitReason(c.s, ci, j.Requests))
		return false
	}
	if f, ok := c.memo.failed[e.Key]; ok {
		c.rep.unscheduledEntry(qi, e, f.reason(qi))
		return false
	}
	c.query = c.makeQuery(j, qi, evictedLevel)
	node, ok := -1, false
	if len(j.AvoidClusters) > 0 {
		// Outside the avoided clusters first, as under progressive filling;
		// free capacity only shrinks, so a vain search stays vain.
		base := c.query.Constraint
		if pref := c.db.Avoid(base, j.AvoidClusters); pref != base {
			if _, vain := c.memo.avoidVain[e.Key]; !vain {
				c.query.Constraint = pref
				if node, ok = c.db.Select(&c.query); !ok {
					c.memo.noteAvoidVain(e.Key)
				}
				c.query.Constraint = base
			}
		}
	}
	if !ok {
		node, ok = c.db.Select(&c.query)
	}
	if !ok {
		c.rep.unscheduledEntry(qi, e, l.noFit(qi, e))
		return false
	}
	c.db.Bind(node, qi, c.s.bindLevel[ci], j.Requests)
	// A single job is its own transaction: nothing will roll it back.
	c.db.Forget()
	// The lottery never preempts, so its placements need no run record.
	c.commit(qi, ci, node, e, e.Job.Requests, c.s.bindLevel[ci], false)
	return true
}

// noFit explains why no node takes e now, and caches the failure by
// scheduling key: under the lottery free capacity only shrinks, so a job
// with the same requirements will not fit either.
func (l *lottery) noFit(qi int, e *queue.Entry) Reason {
	c := l.c
	if f, ok := c.memo.failed[e.Key]; ok {
		return f.reason(qi)
	}
	c.query = c.makeQuery(e.Job, qi, evictedLevel)
	why := noFitReason(c.s.cfg.Schema, c.pre.putBack, c.db.Explain(&c.query), evictedLevel)
	c.memo.failed[e.Key] = failureOf(why, e.Job, qi)
	return why
}

// leaseReport gives every examined job the lottery neither placed nor
// refused a reason (no room was left for it), and counts per queue the jobs
// not examined: beyond the lookback, or refused because a limit ran out.
func (l *lottery) report(lqs []leaseQueue, stop Reason) {
	c := l.c
	for li := range lqs {
		lq := &lqs[li]
		for k, o := range lq.outcome {
			if o == leaseUntouched {
				c.rep.unscheduledEntry(lq.qi, lq.entries[k], l.noFit(lq.qi, lq.entries[k]))
			}
		}
	}
	byQueue := make([]int, len(c.queues))
	for li := range lqs {
		byQueue[lqs[li].qi] = li
	}
	for qi := range c.queues {
		lq := &lqs[byQueue[qi]]
		qs := &c.queues[qi]
		name := qs.q.Name
		if n := qs.queuedLen - lq.examined; n > 0 {
			c.rep.res.NotExamined = append(c.rep.res.NotExamined, QueueRemainder{Queue: name, Count: n,
				Reason: Reason{Code: ReasonLookback, Message: fmt.Sprintf("maxQueueLookback %d reached", c.s.cfg.MaxQueueLookback)}})
		}
		if lq.rateDeferred > 0 {
			c.rep.res.NotExamined = append(c.rep.res.NotExamined, QueueRemainder{Queue: name, Count: lq.rateDeferred,
				Reason: Reason{Code: ReasonQueueRateLimit, Message: "the queue's scheduling rate limit has no tokens left"}})
		}
		if lq.stopDeferred > 0 {
			c.rep.res.NotExamined = append(c.rep.res.NotExamined, QueueRemainder{Queue: name, Count: lq.stopDeferred, Reason: stop})
		}
	}
}
