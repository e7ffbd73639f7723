package preempt

import (
	"cmp"
	"strings"
)

// Evicted is an evicted job's place in the rescheduling order: the order in
// which progressive filling offers evicted jobs back to their nodes. All
// fields are fixed when the job is evicted.
type Evicted struct {
	// ClassPriority is the job's priority class's priority: higher classes
	// are offered back first.
	ClassPriority int32
	// QueueFraction is the job's queue's share over its fair share when the
	// job was evicted (before the evictions): the queue least above its
	// fair share is offered back first.
	QueueFraction float64
	// Queue names the job's queue, breaking ties between queues: the
	// smaller name first, as progressive filling breaks them.
	Queue string
	// Position is the job's place in its queue's evicted order
	// (queue.LessEvicted): the smaller first.
	Position int
}

// CompareRescheduling orders evicted jobs by when they are rescheduled:
// negative when a is offered back before b. Higher ClassPriority first; then
// the smaller QueueFraction; then the smaller Queue name; then the smaller
// Position. It is a total order for distinct (Queue, Position) pairs. A job
// that must displace evicted jobs displaces those that compare greatest
// (rescheduled last) first.
func CompareRescheduling(a, b *Evicted) int {
	if c := cmp.Compare(b.ClassPriority, a.ClassPriority); c != 0 {
		return c
	}
	if c := cmp.Compare(a.QueueFraction, b.QueueFraction); c != 0 {
		return c
	}
	if c := strings.Compare(a.Queue, b.Queue); c != 0 {
		return c
	}
	return cmp.Compare(a.Position, b.Position)
}
