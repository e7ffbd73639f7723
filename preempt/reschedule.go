package preempt

import (
	"cmp"

	"github.com/flotilla-sched/flotilla/fairness"
)

// Evicted is an evicted job's place in the rescheduling order: the order in
// which progressive filling offers evicted jobs back to their nodes. It is
// fixed when the jobs are evicted.
type Evicted struct {
	// Candidate is the job's queue as progressive filling ranks it with
	// this job as its next unit, once every evicted job of the queue ahead
	// of it is back: the queue's allocation after the evictions plus those
	// jobs' requests.
	Candidate fairness.Candidate
	// Position is the job's place in its queue's evicted order
	// (queue.LessEvicted): the smaller first.
	Position int
}

// CompareRescheduling orders evicted jobs by when they are rescheduled:
// negative when a is offered back before b. Candidates compare as
// progressive filling compares them (fairness.Compare: higher class
// priority first, then the queue that would be least far into its fair
// share after the job, then the queue name); jobs of one queue by Position.
// It is a total order for distinct (queue, Position) pairs. A job that must
// displace evicted jobs displaces those that compare greatest (rescheduled
// last) first.
func CompareRescheduling(a, b *Evicted, preferLarge bool) int {
	if c := fairness.Compare(a.Candidate, b.Candidate, preferLarge); c != 0 {
		return c
	}
	return cmp.Compare(a.Position, b.Position)
}
