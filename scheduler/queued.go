package scheduler

import (
	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/queue"
)

// Queued is what a scheduling cycle reads of the jobs waiting to be
// scheduled: the storage seam between the scheduler and whatever keeps
// queued jobs (*queue.Store in memory, or a service's own backend). Like
// etcd-io/raft's Storage, it is read-only from the scheduler's side.
//
// Ownership. Every entry, job, slice and vector a Queued hands out belongs
// to it: the scheduler reads them and never modifies them, and keeps none
// of them past the Schedule call except the jobs it reports in its Result.
// The store must not change while a Schedule call reads it (the caller
// serialises modifications with cycles, as with *queue.Store).
//
// Cost. A cycle calls PriorityClasses, DefaultPriorityClass and Queues
// once, Stats and Open once per queue, Get once per running job, and
// SchedulingKeys a few times for queues whose remaining jobs all failed to
// fit; it reads a queue through Open's reader only as far as it can use.
// So the methods must cost what they would in memory: Stats O(1) (counts
// and demand kept up to date as jobs come and go, never a scan),
// SchedulingKeys O(distinct keys), Get O(1), Read O(len(dst)) without
// allocating per entry. A cycle's cost then follows what the cluster can
// take, not the size of the backlog.
//
// Errors. Only Open and Read return errors: they mean the store could not
// be read, and Schedule then fails with the error, deciding nothing.
// Everything else is trusted to be consistent (Stats counts the jobs Read
// yields, SchedulingKeys counts their keys), though Schedule checks each
// job it reads: a job that is nil, does not validate against the schema,
// names a class the configuration lacks, sits in the wrong queue,
// carries the wrong class priority, or does not sort after the queue's
// last valid job (handed out twice, or out of order) is reported with
// ReasonInvalid and never placed.
type Queued interface {
	// PriorityClasses are the classes the store orders jobs by; each must
	// be among the Config's, with the same priority (Schedule checks once,
	// in O(classes)).
	PriorityClasses() []flotilla.PriorityClass
	// DefaultPriorityClass is the class the store gives jobs that name none;
	// its priority must equal that of the Config's default class.
	DefaultPriorityClass() string
	// Queues names the queues holding at least one job, sorted.
	Queues() []string
	// Stats is one queue's job count, gang-member count and demand (the
	// sum of its jobs' requests, clamped to the int64 range; nil or a
	// schema-length vector).
	Stats(queue string) queue.Stats
	// SchedulingKeys calls fn with each scheduling key of the queue's lone
	// jobs (not gang members) and how many jobs have it, until fn returns
	// false.
	SchedulingKeys(queue string, fn func(key uint64, count int) bool)
	// Get returns the entry of a queued job by ID.
	Get(id string) (*queue.Entry, bool)
	// Open returns a reader over one queue's entries in scheduling order
	// (queue.Less).
	Open(queue string) (queue.EntryReader, error)
}

// *queue.Store is the in-memory Queued.
var _ Queued = (*queue.Store)(nil)
