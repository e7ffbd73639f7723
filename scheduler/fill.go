package scheduler

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/binpack"
	"github.com/flotilla-sched/flotilla/fairness"
	"github.com/flotilla-sched/flotilla/queue"
)

// fill is progressive filling: repeatedly take the queue whose fraction of
// fair share would be smallest after its next job (higher class priority
// first, ties by name), try that job, and advance the queue.
func (c *cycle) fill(ctx context.Context) error {
	c.reserveScheduled()
	if c.tree != nil {
		c.tour = newTournament(c, c.tree)
	} else {
		c.sel = fairness.NewSelector(c.s.cfg.EnablePreferLargeJobOrdering)
	}
	for qi := range c.queues {
		if err := c.open(qi); err != nil {
			return err
		}
		qs := &c.queues[qi]
		qs.shortcut = !c.s.cfg.ReportEveryUnscheduled && !c.queues[qi].classLimited()
		qs.checkAt = 1
	}
	for qi := range c.queues {
		if c.advance(qi) {
			c.offer(qi)
		} else {
			c.notExamined(qi, lookbackReason(&c.s.cfg))
		}
	}
	// stop, once set, ends new jobs for every queue (round or global rate
	// limit); evicted jobs still go back, since they are not new work.
	var stop Reason
	for iter := 0; ; iter++ {
		if iter&1023 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		if c.readErr != nil {
			return c.readErr
		}
		qi, ok := c.best()
		if !ok {
			break
		}
		qs := &c.queues[qi]
		if qs.next.kind == evictedUnit {
			c.pre.tryEvicted(qi, qs.next.run)
		} else {
			if stop.Code == 0 && c.roundLimitReached() {
				stop = Reason{Code: ReasonRoundLimit, Message: "the cycle scheduled its maximum fraction of the cluster"}
			}
			cost := qs.next.cost()
			switch {
			case stop.Code != 0:
				c.withdraw(qi)
				c.notExamined(qi, stop)
				continue
			case c.tokens.largerThanBurst(cost):
				c.unscheduledUnit(qi, Reason{Code: ReasonGangLargerThanBurst, Message: fmt.Sprintf(
					"a gang of %d needs more scheduling-rate tokens than a bucket holds", cost)})
			case c.tokens.globalShort(cost):
				stop = Reason{Code: ReasonGlobalRateLimit, Message: "the global scheduling rate limit has no tokens left"}
				c.withdraw(qi)
				c.notExamined(qi, stop)
				continue
			case c.tokens.queueShort(qi, cost):
				c.withdraw(qi)
				c.notExamined(qi, Reason{Code: ReasonQueueRateLimit, Message: "the queue's scheduling rate limit has no tokens left"})
				continue
			case c.refusedByTree(qi):
			case qs.next.kind == gangUnit:
				c.tryGang(qi)
			default:
				c.try(qi)
			}
			c.settleTreeRoom()
		}
		if c.advance(qi) {
			c.offer(qi)
			continue
		}
		c.withdraw(qi)
		c.notExamined(qi, lookbackReason(&c.s.cfg))
	}
	return c.readErr
}

// settle closes the cycle's books after filling: evicted jobs that did not
// go back are offered once more where free capacity has appeared on their
// nodes since (putBackLate), those that still do not are preempted (a gang whole), jobs placed and then displaced in
// this cycle leave Result.Scheduled, and members of gangs that never
// became complete are reported. Preemptions are listed in job id order,
// so that the result does not depend on the order of Snapshot.Running.
func (c *cycle) settle() {
	c.pre.putBackLate()
	c.pre.finishEvictions()
	slices.SortFunc(c.rep.res.Preempted, func(a, b Preemption) int { return strings.Compare(a.Job.ID, b.Job.ID) })
	c.rep.dropDisplaced()
	c.reportIncompleteGangs()
}

// advance loads the queue's next job: its evicted jobs first, then queued
// jobs within its lookback (evicted jobs do not count toward it).
func (c *cycle) advance(qi int) bool {
	qs := &c.queues[qi]
	qs.next = unit{}
	for qs.evPos < len(qs.evicted) {
		ri := qs.evicted[qs.evPos]
		qs.evPos++
		// Skip jobs already settled with their gang, or taken as victims.
		if r := &c.pre.run[ri]; r.state != stEvicted || r.tried {
			continue
		}
		qs.next = c.loneOf(evictedUnit, &c.pre.run[ri].entry, ri)
		return true
	}
	if len(qs.retry) > 0 {
		ri := qs.retry[0]
		qs.retry = qs.retry[1:]
		qs.next = c.loneOf(retryUnit, &c.pre.run[ri].entry, ri)
		return true
	}
	if qs.reader == nil {
		return false
	}
	for {
		e := qs.peeked
		if e == nil {
			if qs.shortcut && qs.fails >= qs.checkAt && c.finishFailed(qi) {
				return false
			}
			var ok bool
			if e, ok = c.readNext(qs); !ok {
				return false
			}
		}
		// The lookback bounds units: a lone job, or a gang counted at its
		// first member. Past it, the queue is read on (a bounded distance)
		// only for the missing members of gangs already begun, whose
		// members a class difference may have spread apart; other jobs
		// read then are left unexamined.
		isGang := e != nil && e.Job != nil && e.Job.IsGang()
		starts := !isGang || !c.gangs.acc.Has(e.Job.Gang.ID)
		if lb := c.s.cfg.MaxQueueLookback; starts && lb > 0 && qs.examined >= lb {
			if qs.begun == 0 || qs.readAhead >= gangReadAhead {
				qs.peeked = e
				return false
			}
			qs.peeked = nil
			qs.readAhead++
			continue
		}
		qs.peeked = nil
		qs.pulled++
		if starts {
			qs.examined++
		}
		if qs.shortcut {
			qs.keys.count(e)
		}
		// The store is not trusted: a job it should not have handed out is
		// reported, never placed.
		if why, bad := c.invalidQueued(qi, e); bad {
			c.rep.unscheduledEntry(qi, e, why)
			continue
		}
		if !isGang {
			qs.next = c.loneOf(loneUnit, e, -1)
			return true
		}
		// A gang ID is never reused: a queued member of a gang with members
		// running (or placed this cycle) would be taken for their mate.
		if _, bound := c.pre.gangRun[e.Job.Gang.ID]; bound {
			c.rep.unscheduledEntry(qi, e, Reason{Code: ReasonGangInvalid, Message: fmt.Sprintf("gang %s already has members running", e.Job.Gang.ID)})
			continue
		}
		// Gang members wait until the gang is complete.
		g, complete, err := c.gangs.acc.Add(e)
		if err != nil {
			c.rep.unscheduledEntry(qi, e, Reason{Code: ReasonGangInvalid, Message: err.Error()})
			continue
		}
		if starts {
			qs.begun++
		}
		if complete {
			qs.begun--
			qs.next = gangOfUnit(g)
			return true
		}
	}
}

// gangReadAhead bounds how far past its lookback a queue is read for the
// missing members of gangs it has begun.
const gangReadAhead = 10000

// notExamined records the queue's jobs the cycle will not reach. After a
// rate or round limit the queue is stopped: a job of it displaced later
// is not offered again.
func (c *cycle) notExamined(qi int, why Reason) {
	qs := &c.queues[qi]
	n := qs.queuedLen - qs.pulled
	switch {
	case qs.next.kind == noUnit, qs.next.kind == evictedUnit:
	case qs.next.kind == retryUnit:
		qs.retry = append(qs.retry, qs.next.run)
	case qs.next.kind == gangUnit:
		n += len(qs.next.gang.Members)
	default:
		n++
	}
	qs.next = unit{}
	switch why.Code {
	case ReasonRoundLimit, ReasonGlobalRateLimit, ReasonQueueRateLimit:
		qs.stopped = true
		for _, ri := range qs.retry {
			c.rep.unscheduledEntry(qi, &c.pre.run[ri].entry, displacedReason())
		}
		qs.retry = nil
	}
	if n > 0 && !qs.reported {
		qs.reported = true
		c.rep.res.NotExamined = append(c.rep.res.NotExamined, QueueRemainder{Queue: qs.q.Name, Count: n, Reason: why})
	}
}

// lookbackReason is the reason of the jobs past a queue's lookback.
func lookbackReason(cfg *Config) Reason {
	return Reason{Code: ReasonLookback, Message: fmt.Sprintf("maxQueueLookback %d reached", cfg.MaxQueueLookback)}
}

// offer puts queue qi's next unit up for the fill: in the flat Selector,
// or as its nominee in the tree's tournament.
func (c *cycle) offer(qi int) {
	if c.tour != nil {
		c.tour.set(qi, c.queues[qi].next.req, c.queues[qi].next.prio)
		return
	}
	c.sel.Update(qi, c.candidate(qi))
}

// withdraw takes queue qi out of the fill.
func (c *cycle) withdraw(qi int) {
	if c.tour != nil {
		c.tour.clear(qi)
		return
	}
	c.sel.Remove(qi)
}

// offered reports whether queue qi is in the fill.
func (c *cycle) offered(qi int) bool {
	if c.tour != nil {
		return c.tour.has(qi)
	}
	return c.sel.Contains(qi)
}

// best is the queue whose unit the fill tries next.
func (c *cycle) best() (int, bool) {
	if c.tour != nil {
		return c.tour.best()
	}
	return c.sel.First()
}

// refusedByTree reports (and records) whether the queue tree's limits or
// lending holds refuse queue qi's next unit, a new job or gang (rule 5),
// when taking lower-priority preemptible jobs cannot make the room either
// (makeTreeRoom, treeroom.go: the fill settles those taken after trying
// the unit). A
// lone job's refusal is remembered by scheduling key, as a failed search
// is, so that a queue whose every job left was refused is finished
// without reading on (finishFailed).
func (c *cycle) refusedByTree(qi int) bool {
	if c.tour == nil {
		return false
	}
	qs := &c.queues[qi]
	why := c.tour.refusal(qi, qs.next.req)
	if why.Code == 0 || c.makeTreeRoom(qi, qs.next.req) {
		return false
	}
	if qs.next.kind == loneUnit && !c.s.noTreeMemo {
		c.treeRefusals(qi)[qs.next.entry.Key] = qs.next.req
		qs.fails++
	}
	c.unscheduledUnit(qi, why)
	return true
}

// treeRefusal returns the reason the tree refuses queue qi's lone jobs of
// scheduling key k now, if it refused one earlier in the cycle. (It
// refuses them still unless an allocation shrank since, by an urgency
// victim: placements only add to a path's allocation, and to the
// cluster's plus the holds off a path; it may name another node.)
func (c *cycle) treeRefusal(qi int, k uint64) (Reason, bool) {
	req, ok := c.queues[qi].treeRefused[k]
	if !ok {
		return Reason{}, false
	}
	why := c.tour.refusal(qi, req)
	return why, why.Code != 0
}

// treeRefusals is queue qi's refused keys with their requests, made on
// the first refusal.
func (c *cycle) treeRefusals(qi int) map[uint64]flotilla.Resources {
	qs := &c.queues[qi]
	if qs.treeRefused == nil {
		qs.treeRefused = make(map[uint64]flotilla.Resources)
	}
	return qs.treeRefused
}

// candidate is the queue's standing if its next job were scheduled. Shares
// are not additive under DRF, so the share after the job is computed on the
// summed vector rather than as share + job share.
func (c *cycle) candidate(qi int) fairness.Candidate {
	qs := &c.queues[qi]
	copy(c.scratch, qs.alloc)
	c.scratch.Add(qs.next.req)
	after := c.model.Share(c.scratch)
	cur := c.model.Share(qs.alloc)
	cand := fairness.NewCandidate(qi, qs.q.Name, qs.next.prio, cur, after-cur, qs.fair, qs.adjusted)
	if qs.fair > 0 {
		cand.Fraction = after / qs.fair
	}
	return cand
}

func (c *cycle) roundLimitReached() bool {
	for _, l := range c.s.roundLimit {
		if float64(c.scheduledTotal[l.res]) > l.frac*float64(c.total[l.res]) {
			return true
		}
	}
	return false
}

// try attempts the queue's head job, a new one: per-class limit, the
// scheduling-key cache, a search for free capacity and, failing that, a
// search that may displace evicted jobs and preempt lower-priority ones.
func (c *cycle) try(qi int) {
	qs := &c.queues[qi]
	u := &qs.next
	e, ci, req := u.entry, int(u.class), u.req
	j := e.Job // read below only for a job that is not plain, or fails
	if qs.overClassLimit(ci, req) {
		c.rep.unscheduledEntry(qi, e, qs.classLimitReason(c.s, ci, req))
		return
	}
	if f, ok := c.memo.failedFor(qi, u.key); ok {
		qs.fails++
		c.rep.unscheduledEntry(qi, e, f.reason(qi))
		return
	}
	c.query = binpack.Query{Requests: req, Level: evictedLevel, Queue: qi, Constraint: binpack.NoConstraint, OnlyNode: -1}
	if !u.plain {
		c.query.Constraint = c.db.JobConstraints(j)
	}
	var (
		node           int
		ok, displacing bool
	)
	c.pre.ruleSkipped = false
	if !u.plain && (len(j.AvoidClusters) > 0 || len(j.AvoidNodes) > 0) {
		node, ok, displacing = c.searchAvoiding(e, ci)
	} else {
		node, ok, displacing = c.search(j, ci)
	}
	if !ok {
		// Explained at the last search's level, the most room the job
		// could use: shortfalls count what it may displace or preempt.
		r := c.db.Explain(&c.query)
		why := noFitReason(c.s.cfg.Schema, c.pre.putBack, r, c.query.Level)
		if c.pre.ruleSkipped {
			why.Message = ruleSkippedMessage(r)
		}
		c.memo.fail(qi, e.Key, failureOf(why, j, qi), c.pre.ruleSkipped)
		qs.fails++
		c.rep.unscheduledEntry(qi, e, why)
		return
	}
	c.db.Bind(node, qi, c.s.bindLevel[ci], req)
	c.db.Forget()
	if displacing {
		c.pre.makeRoom(node, c.s.classLevel[ci], nil, j)
		c.pre.displaceOn(node, j)
	}
	// Only a preemptible job can be displaced later in the cycle, so only
	// it needs a record.
	c.commit(qi, ci, node, e, req, c.s.bindLevel[ci], c.s.classes[ci].Preemptible)
}

// commit books a placement the node database has bound: the job of entry
// e, of queue qi and class ci, asking req (its requests, passed so that a
// lone job's placement reads nothing more of it), on node. Every placement goes through it (a
// lone job, each member of a gang, the lottery's jobs): the queue's
// allocation and counts, the round's total, the rate tokens and
// Result.Scheduled. With record set, the job also gets a run record at
// level (the level it holds capacity at), so that it can be displaced
// later in the cycle.
func (c *cycle) commit(qi, ci, node int, e *queue.Entry, req flotilla.Resources, level int, record bool) {
	j := e.Job
	qs := &c.queues[qi]
	c.account(qi, ci, req)
	c.scheduledTotal.Add(req)
	qs.running++
	qs.scheduled++
	c.tokens.take(qi, 1)
	if record {
		ri := c.pre.addRun(j, c.now, node, qi, ci, stNew)
		r := &c.pre.run[ri]
		r.level, r.sched, r.entry = int32(level), int32(len(c.rep.res.Scheduled)), *e
	}
	c.rep.res.Scheduled = append(c.rep.res.Scheduled, Assignment{Job: j, Node: c.db.Node(node).Name})
}

// search looks for a node for lone job j of class ci with c.query (made
// at evictedLevel): three searches, each only if the one before found
// nothing: free capacity; capacity evicted jobs hold, displacing those
// rescheduled last (displaceFor); capacity lower-priority preemptible jobs
// hold (urgency preemption: displacing is then set, and the caller makes
// room). Only a successful displaceFor changes anything. c.query is left
// at the last search's level, for the explanation of a failure.
func (c *cycle) search(j *flotilla.Job, ci int) (node int, ok, displacing bool) {
	node, ok = c.db.Select(&c.query)
	if !ok && c.pre.held > 0 {
		c.query.Level = lowestClassLevel
		node, ok = c.pre.displaceFor(j, &c.query)
	}
	if cl := c.s.classLevel[ci]; !ok && cl > lowestClassLevel && c.pre.minPreemptibleLevel < cl {
		c.query.Level = cl
		node, ok = c.db.Select(&c.query)
		displacing = ok
	}
	return node, ok, displacing
}

// searchAvoiding is search for a job with AvoidClusters or AvoidNodes: the
// whole search (free capacity, evicted jobs' capacity, urgency) confined
// to the nodes outside the avoided clusters and other than the avoided
// nodes, then, only if that finds nothing, the
// whole search over every node. A job of a class that may not preempt
// does not preempt to keep out of an avoided cluster; one that may, does
// (another cluster can take it). A search confined in vain is remembered
// by scheduling key (which covers AvoidClusters): a job with the same key
// later in the cycle goes straight to the search over every node, as the
// failure cache skips jobs whose key found no node at all.
func (c *cycle) searchAvoiding(e *queue.Entry, ci int) (node int, ok, displacing bool) {
	j := e.Job
	base := c.query.Constraint
	if pref := c.db.AvoidNodes(c.db.Avoid(base, j.AvoidClusters), j.AvoidNodes); pref != base {
		if _, vain := c.memo.avoidVain[e.Key]; !vain {
			c.query.Constraint = pref
			if node, ok, displacing = c.search(j, ci); ok {
				return node, ok, displacing
			}
			c.query.Constraint, c.query.Level = base, evictedLevel
			c.memo.noteAvoidVain(e.Key)
		}
	}
	return c.search(j, ci)
}

// queueKey is a scheduling key in one queue.
type queueKey struct {
	queue int32
	key   uint64
}

// failedFor returns the cached failure that holds for queue qi's jobs of
// scheduling key k.
func (m *memo) failedFor(qi int, k uint64) (failure, bool) {
	if f, ok := m.failed[k]; ok {
		return f, true
	}
	f, ok := m.queueFailed[queueKey{int32(qi), k}]
	return f, ok
}

// fail caches failure f of a job of queue qi and scheduling key k: for
// every queue, or for qi's alone.
func (m *memo) fail(qi int, k uint64, f failure, onlyQueue bool) {
	if !onlyQueue {
		m.failed[k] = f
		return
	}
	if m.queueFailed == nil {
		m.queueFailed = make(map[queueKey]failure)
	}
	m.queueFailed[queueKey{int32(qi), k}] = f
}

// noteAvoidVain records that jobs of scheduling key k found no node
// outside the clusters they avoid, this cycle.
func (m *memo) noteAvoidVain(k uint64) {
	if m.avoidVain == nil {
		m.avoidVain = make(map[uint64]struct{})
	}
	m.avoidVain[k] = struct{}{}
}

// memo remembers, by scheduling key, the searches of this cycle that
// failed: jobs with an equal key are skipped (failed) or go straight to
// the search over every node (avoidVain).
type memo struct {
	// failed caches, by scheduling key, why a job did not fit; queueFailed,
	// by queue and key, why one did not where the failure holds for its
	// queue alone (in a tree, the evicted jobs holding the room it needs go
	// before that queue: displace_tree.go). Apart, so that neither
	// overwrites the other, and every other reader of failed (the lottery,
	// treeroom.go) sees only failures that hold for every queue.
	failed      map[uint64]failure
	queueFailed map[queueKey]failure
	// avoidVain holds the scheduling keys of jobs with AvoidClusters that
	// found no node outside those clusters (nil until one does not).
	avoidVain map[uint64]struct{}
}

func (c *cycle) makeQuery(j *flotilla.Job, qi, level int) binpack.Query {
	return binpack.Query{
		Requests:   j.Requests,
		Level:      level,
		Queue:      qi,
		Constraint: c.db.JobConstraints(j),
		OnlyNode:   -1,
	}
}

// overClassLimit reports whether the queue would exceed its cap at class
// ci.
func (qs *queueState) overClassLimit(ci int, req flotilla.Resources) bool {
	return qs.classLimitShort(ci, req) >= 0
}

// classLimitShort returns the first resource over the queue's cap at class
// ci, or -1.
func (qs *queueState) classLimitShort(ci int, req flotilla.Resources) int {
	lim := qs.limitByClass[ci]
	if lim == nil {
		return -1
	}
	held := qs.allocByClass[ci]
	for r, l := range lim {
		var h int64
		if held != nil {
			h = held[r]
		}
		if l >= 0 && h > l-req[r] { // h+req[r] could overflow; l-req[r] cannot (both ≥ 0)
			return r
		}
	}
	return -1
}

// classLimitReason is the reason a job of class ci requesting req is
// refused by the queue's cap.
func (qs *queueState) classLimitReason(s *Scheduler, ci int, req flotilla.Resources) Reason {
	r := qs.classLimitShort(ci, req)
	return Reason{Code: ReasonQueueClassLimit, Message: fmt.Sprintf("queue %s would hold more than its %s limit of %s at priority class %s",
		qs.q.Name, s.cfg.Schema.Name(r), s.cfg.Schema.Quantity(r, qs.limitByClass[ci][r]), s.classes[ci].Name)}
}

// dropDisplaced takes out of Result.Scheduled the jobs of this cycle that
// a higher-priority job displaced later in the same cycle.
func (r *report) dropDisplaced() {
	out := r.res.Scheduled[:0]
	for _, a := range r.res.Scheduled {
		if a.Job != nil {
			out = append(out, a)
		}
	}
	r.res.Scheduled = out
}

// result copies the decision out of the cycle.
func (c *cycle) result() *Result {
	res := &c.rep.res
	res.Queues = make([]QueueReport, len(c.queues))
	for qi := range c.queues {
		qs := &c.queues[qi]
		res.Queues[qi] = QueueReport{
			Name:              qs.q.Name,
			Allocated:         qs.alloc.Clone(),
			Running:           qs.running,
			Queued:            qs.queuedLen - qs.scheduled,
			Share:             c.model.Share(qs.alloc),
			FairShare:         qs.fair,
			AdjustedFairShare: qs.adjusted,
			Demand:            c.model.Share(qs.demand),
		}
	}
	if c.tree != nil {
		c.tree.reports(c, res)
	}
	res.RateLimits = c.tokens.buckets(c.now, c.queues)
	return res
}
