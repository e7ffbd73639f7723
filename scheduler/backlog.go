package scheduler

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/queue"
)

// readBatch is how many entries a cycle reads from a store at a time.
const readBatch = 64

// open prepares queue qi's reader, if it has stored jobs.
func (c *cycle) open(qi int) error {
	qs := &c.queues[qi]
	if c.snap.Queued == nil || qs.queuedLen == 0 || qs.reader != nil {
		return nil
	}
	r, err := c.snap.Queued.Open(qs.q.Name)
	if err != nil {
		return fmt.Errorf("scheduler: reading queue %s: %w", qs.q.Name, err)
	}
	if r == nil {
		return flotilla.Errorf("queued.open", qs.q.Name, flotilla.ErrRequired, "the store returned no reader")
	}
	qs.reader = r
	qs.buf = make([]*queue.Entry, readBatch)
	return nil
}

// readNext returns the queue's next stored entry, reading a batch when the
// buffer is empty. It reads no more than the store said the queue holds
// (Stats.Jobs), and stops at the first error, which fails the cycle.
func (c *cycle) readNext(qs *queueState) (*queue.Entry, bool) {
	if qs.bufPos == qs.bufLen {
		if qs.readDone || qs.reader == nil {
			return nil, false
		}
		n, err := qs.reader.Read(qs.buf)
		if err != nil {
			if c.readErr == nil {
				c.readErr = fmt.Errorf("scheduler: reading queue %s: %w", qs.q.Name, err)
			}
			n = 0
		}
		if n <= 0 || n > len(qs.buf) {
			qs.readDone = true
			return nil, false
		}
		if qs.read += n; qs.read >= qs.queuedLen {
			n -= qs.read - qs.queuedLen
			qs.readDone = true
		}
		qs.bufPos, qs.bufLen = 0, n
		if n == 0 {
			return nil, false
		}
	}
	e := qs.buf[qs.bufPos]
	qs.bufPos++
	return e, true
}

// invalidQueued checks a job the store handed out, cheaply (Job.Validate
// allocates nothing for a valid job): a job that is nil, does not validate
// against the schema, is in another queue, names an unknown class,
// carries another class's priority, or does not sort after the queue's
// last valid job (handed out twice, or out of order: queue.Less is a
// strict order) gets a ReasonInvalid naming the field and value.
func (c *cycle) invalidQueued(qi int, e *queue.Entry) (Reason, bool) {
	why, bad := c.s.invalidJob(c.queues[qi].q.Name, e)
	if bad {
		return why, true
	}
	qs := &c.queues[qi]
	if qs.hasLast && !qs.last.Before(e) {
		return Reason{Code: ReasonInvalid, Message: flotilla.Errorf(fmt.Sprintf("job %q.id", e.Job.ID), e.Job.ID, flotilla.ErrInconsistent,
			"handed out after job %q, not in scheduling order (or twice)", qs.last.ID()).Error()}, true
	}
	qs.last, qs.hasLast = queue.MarkOf(e), true
	return Reason{}, false
}

// invalidJob is invalidQueued's check of the job itself, handed out in
// queue name.
func (s *Scheduler) invalidJob(name string, e *queue.Entry) (Reason, bool) {
	if e == nil || e.Job == nil {
		return Reason{Code: ReasonInvalid, Message: "the store handed out an entry without a job"}, true
	}
	j := e.Job
	if err := j.Validate(s.cfg.Schema); err != nil {
		return Reason{Code: ReasonInvalid, Message: err.Error()}, true
	}
	if j.Queue != name {
		return Reason{Code: ReasonInvalid, Message: flotilla.Errorf(fmt.Sprintf("job %q.queue", j.ID), j.Queue, flotilla.ErrInconsistent,
			"handed out in queue %s", name).Error()}, true
	}
	ci, ok := s.class(j)
	if !ok {
		return Reason{Code: ReasonInvalid, Message: flotilla.Errorf(fmt.Sprintf("job %q.priorityClass", j.ID), j.PriorityClass, flotilla.ErrUnknownName,
			"no such priority class").Error()}, true
	}
	if !j.Gang.Topology.IsZero() {
		if _, _, _, err := flotilla.ResolveTopology(s.cfg.Topologies, "", j.Gang.Topology); err != nil {
			// Again, to name the field (the first call allocates nothing).
			_, _, _, err = flotilla.ResolveTopology(s.cfg.Topologies, fmt.Sprintf("job %q.gang.topology", j.ID), j.Gang.Topology)
			return Reason{Code: ReasonInvalid, Message: err.Error()}, true
		}
	}
	if p := s.classes[ci].Priority; p != e.ClassPriority {
		return Reason{Code: ReasonInvalid, Message: flotilla.Errorf(fmt.Sprintf("job %q.priorityClass", j.ID), j.PriorityClass, flotilla.ErrInconsistent,
			"the store orders it at priority %d, the config's class has %d", e.ClassPriority, p).Error()}, true
	}
	return Reason{}, false
}

// classLimited reports whether queue qi has a per-class cap: its jobs may
// then be refused for a reason other than their scheduling key.
func (qs *queueState) classLimited() bool {
	for _, l := range qs.limitByClass {
		if l != nil {
			return true
		}
	}
	return false
}

// count counts a job taken from the store: gang members in all, lone jobs
// per scheduling key (runs of one key without a map update).
func (k *keyCounts) count(e *queue.Entry) {
	switch {
	case e == nil || e.Job == nil:
	case e.Job.IsGang():
		k.gangPulled++
	case k.runLen > 0 && e.Key == k.runKey:
		k.runLen++
	default:
		k.flush()
		k.runKey, k.runLen = e.Key, 1
	}
}

// flush adds the current run of equal keys to keyPulled.
func (k *keyCounts) flush() {
	if k.runLen == 0 {
		return
	}
	if k.keyPulled == nil {
		k.keyPulled = make(map[uint64]int)
	}
	k.keyPulled[k.runKey] += k.runLen
	k.runLen = 0
}

// finishFailed finishes queue qi without reading on when every job it has
// left is a lone job whose scheduling key already failed this cycle (its
// search, or the queue tree's limits: failedReason): none
// of them could be placed (a failed key is not retried), so they are
// counted, per key, as unscheduled with the cached reason. It declines
// (false) when the queue has gang members left, displaced jobs to offer
// again, a remainder past its lookback, or a rate or round limit about to
// refuse it (the normal path reports those), or when the store's key
// counts disagree with what was read.
//
// A check costs O(keys in the queue); the next is due only after as many
// more failures, so checks cost O(1) per failed job amortised.
func (c *cycle) finishFailed(qi int) bool {
	qs := &c.queues[qi]
	rest := qs.queuedLen - qs.pulled
	if lb := c.s.cfg.MaxQueueLookback; rest <= 0 || (lb > 0 && rest > lb-qs.examined) || qs.readAhead > 0 {
		qs.shortcut = false // none of these gets better later
		return false
	}
	if qs.keys.storedGang > qs.keys.gangPulled || qs.begun > 0 || len(qs.retry) > 0 ||
		c.tokens.queueShort(qi, 1) || c.tokens.globalShort(1) || c.roundLimitReached() {
		qs.checkAt = qs.fails + 1
		return false
	}
	qs.keys.flush()
	// Every key is visited, not only up to the first live one: the next
	// check, and so the point where the queue is finished, must not depend
	// on the order the store walks its keys (map order for *queue.Store),
	// or neither would the examples read.
	keys, live := 0, false
	c.snap.Queued.SchedulingKeys(qs.q.Name, func(k uint64, n int) bool {
		keys++
		if n > qs.keys.keyPulled[k] {
			if _, failed := c.failedReason(qi, k); !failed {
				live = true
			}
		}
		return true
	})
	qs.checkAt = qs.fails + max(keys, 1)
	if live {
		return false
	}
	type remainder struct {
		key uint64
		n   int
	}
	var rems []remainder
	total, unfailed := 0, false
	c.snap.Queued.SchedulingKeys(qs.q.Name, func(k uint64, n int) bool {
		if r := n - qs.keys.keyPulled[k]; r > 0 {
			if _, failed := c.failedReason(qi, k); !failed {
				unfailed = true // the store changed since the first call
				return false
			}
			rems = append(rems, remainder{k, r})
			total += r
		}
		return true
	})
	if unfailed || total != rest {
		qs.shortcut = false // the store's counts disagree with its jobs
		return false
	}
	slices.SortFunc(rems, func(a, b remainder) int { return cmp.Compare(a.key, b.key) })
	// One more batch gives the groups examples; the rest is never read.
	var ahead []*queue.Entry
	for range readBatch {
		e, ok := c.readNext(qs)
		if !ok {
			break
		}
		if e != nil && e.Job != nil {
			ahead = append(ahead, e)
		}
	}
	for _, r := range rems {
		why, _ := c.failedReason(qi, r.key)
		g := c.rep.group(qi, r.key, why)
		g.Count += r.n
		for _, e := range ahead {
			if len(g.Examples) == UnscheduledExamples {
				break
			}
			if e.Key == r.key {
				g.Examples = append(g.Examples, e.Job)
			}
		}
	}
	qs.pulled = qs.queuedLen
	qs.readDone, qs.bufPos, qs.bufLen = true, 0, 0
	return true
}

// failedReason returns the reason queue qi's lone jobs of scheduling key k
// cannot be placed this cycle: the queue tree refused them (treeRefusal),
// or their search failed (memo). The fill asks the tree first, so a key
// whose search failed is also put to the tree, with the failed job's
// requests, and a refusal is remembered: the reason is the one each job
// would get if it were read.
func (c *cycle) failedReason(qi int, k uint64) (Reason, bool) {
	if c.tour != nil {
		if why, ok := c.treeRefusal(qi, k); ok {
			return why, true
		}
	}
	f, ok := c.memo.failedFor(qi, k)
	if !ok {
		return Reason{}, false
	}
	if c.tour != nil && !c.s.noTreeMemo {
		if why := c.tour.refusal(qi, f.req); why.Code != 0 {
			c.treeRefusals(qi)[k] = f.req
			return why, true
		}
	}
	return f.reason(qi), true
}

// report is the Result under construction, with the index of its
// Unscheduled groups by (queue, reason code, scheduling key). It shares
// the cycle's queues, whose lastGroup it keeps.
type report struct {
	res    Result
	groups map[groupKey]int
	queues []queueState
	// every is Config.ReportEveryUnscheduled: each job's reason is listed.
	every bool
}

// groupKey identifies an UnscheduledGroup.
type groupKey struct {
	queue int32
	code  ReasonCode
	key   uint64
}

// group returns queue qi's Unscheduled group for (why.Code, key), adding
// it with why as its reason if new. The queue's last group is found
// without a map lookup.
func (r *report) group(qi int, key uint64, why Reason) *UnscheduledGroup {
	qs := &r.queues[qi]
	if gi := qs.lastGroup; gi >= 0 {
		if g := &r.res.Unscheduled[gi]; g.Key == key && g.Reason.Code == why.Code {
			return g
		}
	}
	k := groupKey{int32(qi), why.Code, key}
	gi, ok := r.groups[k]
	if !ok {
		gi = len(r.res.Unscheduled)
		r.groups[k] = gi
		r.res.Unscheduled = append(r.res.Unscheduled, UnscheduledGroup{Queue: qs.q.Name, Key: key, Reason: why})
	}
	qs.lastGroup = gi
	return &r.res.Unscheduled[gi]
}

// unscheduledEntry records a job of queue qi (its entry e, possibly nil for
// an invalid one) that the cycle examined and did not place.
func (r *report) unscheduledEntry(qi int, e *queue.Entry, why Reason) {
	var j *flotilla.Job
	var key uint64
	if e != nil {
		j, key = e.Job, e.Key
	}
	if r.every {
		r.res.UnscheduledJobs = append(r.res.UnscheduledJobs, Unscheduled{Job: j, Reason: why})
	}
	g := r.group(qi, key, why)
	g.Count++
	if j != nil && len(g.Examples) < UnscheduledExamples {
		g.Examples = append(g.Examples, j)
	}
}

// unscheduled records a job (of a snapshot queue, with a known class) the
// cycle examined and did not place, when its entry is not at hand: the key
// is computed.
func (c *cycle) unscheduled(j *flotilla.Job, why Reason) {
	ci, _ := c.s.class(j)
	p := c.s.classes[ci].Priority
	c.rep.unscheduledEntry(c.queueIdx[j.Queue], &queue.Entry{Job: j, ClassPriority: p, Key: queue.SchedulingKey(j, p)}, why)
}
