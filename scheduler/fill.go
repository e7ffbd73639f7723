package scheduler

import (
	"context"
	"fmt"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/binpack"
	"github.com/flotilla-sched/flotilla/fairness"
)

// fill is progressive filling: repeatedly take the queue whose fraction of
// fair share would be smallest after its next job (higher class priority
// first, ties by name), try that job, and advance the queue.
func (c *cycle) fill(ctx context.Context) error {
	sel := fairness.NewSelector(c.s.cfg.EnablePreferLargeJobOrdering)
	if c.snap.Queued != nil {
		for qi := range c.queues {
			qs := &c.queues[qi]
			if qs.queuedLen == 0 {
				continue
			}
			qs.cursor = c.snap.Queued.Cursor(qs.q.Name)
			if c.advance(qi) {
				sel.Push(c.candidate(qi))
			}
		}
	}
	var stop Reason
	for iter := 0; sel.Len() > 0; iter++ {
		if iter&1023 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		cand, _ := sel.Peek()
		qi := cand.Queue
		qs := &c.queues[qi]
		if c.roundLimitReached() {
			stop = Reason{ReasonRoundLimit, "the cycle scheduled its maximum fraction of the cluster"}
			break
		}
		if c.globalTokens < 1 {
			stop = Reason{ReasonGlobalRateLimit, "the global scheduling rate limit has no tokens left"}
			break
		}
		if qs.tokens < 1 {
			sel.Remove(qi)
			c.notExamined(qi, Reason{ReasonQueueRateLimit, "the queue's scheduling rate limit has no tokens left"})
			continue
		}
		c.try(qi)
		if c.advance(qi) {
			sel.Update(qi, c.candidate(qi))
			continue
		}
		sel.Remove(qi)
		c.notExamined(qi, Reason{ReasonLookback, fmt.Sprintf("maxQueueLookback %d reached", c.s.cfg.MaxQueueLookback)})
	}
	if stop.Code != 0 {
		for sel.Len() > 0 {
			cand, _ := sel.Pop()
			c.notExamined(cand.Queue, stop)
		}
	}
	return nil
}

// advance loads the queue's next job, within its lookback.
func (c *cycle) advance(qi int) bool {
	qs := &c.queues[qi]
	qs.head = nil
	if lb := c.s.cfg.MaxQueueLookback; lb > 0 && qs.examined >= lb {
		return false
	}
	e, ok := qs.cursor.Next()
	if !ok {
		return false
	}
	qs.examined++
	qs.head = e
	return true
}

// notExamined records the queue's jobs the cycle will not reach.
func (c *cycle) notExamined(qi int, why Reason) {
	qs := &c.queues[qi]
	n := qs.queuedLen - qs.examined
	if qs.head != nil {
		n++
		qs.head = nil
	}
	if n > 0 {
		c.res.NotExamined = append(c.res.NotExamined, QueueRemainder{Queue: qs.q.Name, Count: n, Reason: why})
	}
}

// candidate is the queue's standing if its next job were scheduled. Shares
// are not additive under DRF, so the share after the job is computed on the
// summed vector rather than as share + job share.
func (c *cycle) candidate(qi int) fairness.Candidate {
	qs := &c.queues[qi]
	copy(c.scratch, qs.alloc)
	c.scratch.Add(qs.head.Job.Requests)
	after := c.model.Share(c.scratch)
	cur := c.model.Share(qs.alloc)
	cand := fairness.NewCandidate(qi, qs.q.Name, qs.head.ClassPriority, cur, after-cur, qs.fair, qs.adjusted)
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

// try attempts the queue's head job: per-class limit, the scheduling-key
// cache, then a node search.
func (c *cycle) try(qi int) {
	qs := &c.queues[qi]
	e := qs.head
	j := e.Job
	ci, _ := c.s.class(j)
	if lim := qs.limitByClass[ci]; lim != nil {
		held := qs.allocByClass[ci]
		for r, l := range lim {
			var h int64
			if held != nil {
				h = held[r]
			}
			if l >= 0 && h+j.Requests[r] > l {
				c.unscheduled(j, Reason{ReasonQueueClassLimit, fmt.Sprintf("queue %s would hold more than its %s limit of %s at priority class %s",
					qs.q.Name, c.s.cfg.Schema.Name(r), flotilla.FormatQuantity(l), c.s.classes[ci].Name)})
				return
			}
		}
	}
	if why, ok := c.failed[e.Key]; ok {
		c.unscheduled(j, why)
		return
	}
	c.query = binpack.Query{
		Requests:   j.Requests,
		Level:      0,
		Queue:      qi,
		Constraint: c.db.Constraints(j.NodeSelector, j.Tolerations),
		OnlyNode:   -1,
	}
	node, ok := c.db.Select(&c.query)
	if !ok {
		msg := c.db.Explain(&c.query).String(c.s.cfg.Schema)
		c.failed[e.Key] = Reason{ReasonSameAsFailed, "identical requirements to a job that did not fit: " + msg}
		c.unscheduled(j, Reason{ReasonNoFit, msg})
		return
	}
	c.db.Bind(node, qi, c.s.bindLevel[ci], j.Requests)
	// A single job is its own transaction: nothing will roll it back.
	c.db.Forget()
	c.account(qi, ci, j.Requests)
	c.scheduledTotal.Add(j.Requests)
	qs.running++
	qs.scheduled++
	qs.tokens--
	c.globalTokens--
	c.res.Scheduled = append(c.res.Scheduled, Assignment{Job: j, Node: c.db.Node(node).Name})
}

func (c *cycle) unscheduled(j *flotilla.Job, why Reason) {
	c.res.Unscheduled = append(c.res.Unscheduled, Unscheduled{Job: j, Reason: why})
}

// result copies the decision out of the cycle.
func (c *cycle) result() *Result {
	res := &c.res
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
	cfg := &c.s.cfg
	if cfg.MaximumSchedulingRate > 0 {
		res.RateLimits.Global = Bucket{Tokens: c.globalTokens, Last: c.now}
	}
	if cfg.MaximumPerQueueSchedulingRate > 0 {
		res.RateLimits.PerQueue = make(map[string]Bucket, len(c.queues))
		for qi := range c.queues {
			res.RateLimits.PerQueue[c.queues[qi].q.Name] = Bucket{Tokens: c.queues[qi].tokens, Last: c.now}
		}
	}
	return res
}
