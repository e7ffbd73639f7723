package server

import (
	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/events"
	"github.com/flotilla-sched/flotilla/queue"
	"github.com/flotilla-sched/flotilla/scheduler"
)

// queuedJobs holds the queued jobs in a queue.Store, the scheduler's
// Queued seam. While a cycle's Schedule reads the store (cycling), the
// changes to it wait in deferred and flush applies them.
type queuedJobs struct {
	store    *queue.Store
	cycling  bool
	deferred []storeOp
}

// storeOp is a queue.Store change deferred while a cycle reads the store.
type storeOp struct {
	add *flotilla.Job // nil: remove id
	id  string
}

// add and remove change the store, or defer the change while a cycle
// reads it.
func (q *queuedJobs) add(j *flotilla.Job) {
	if q.cycling {
		q.deferred = append(q.deferred, storeOp{add: j})
		return
	}
	// The job was validated at submit; a failure here is a bug that must
	// not take the service down: the job stays out of the queue.
	_ = q.store.Add(j)
}

// addAll is add for many jobs.
func (q *queuedJobs) addAll(jobs []*flotilla.Job) {
	if q.cycling {
		for _, j := range jobs {
			q.deferred = append(q.deferred, storeOp{add: j})
		}
		return
	}
	if q.store.AddAll(jobs) != nil {
		// As add: not reached, but a job the store refuses must not keep
		// the others out.
		for _, j := range jobs {
			_ = q.store.Add(j)
		}
	}
}

func (q *queuedJobs) remove(id string) {
	if q.cycling {
		q.deferred = append(q.deferred, storeOp{id: id})
		return
	}
	q.store.Remove(id)
}

// flush applies the changes made while a cycle read the store.
func (q *queuedJobs) flush() {
	ops := q.deferred
	q.deferred = nil
	for _, op := range ops {
		if op.add != nil {
			_ = q.store.Add(op.add)
		} else {
			q.store.Remove(op.id)
		}
	}
}

// scratch are buffers a Server reuses from one call to the next, all
// under its lock; each keeps no job or string alive between uses.
type scratch struct {
	// submitted are a request's submitted events, kept between requests
	// of up to maxSubmitScratch jobs.
	submitted []events.Event
	// cids and cidIDs are usedClientIDs': a request's client ids and the
	// job ids they name.
	cids, cidIDs []string
	// queued are commit's: a submit's jobs, for one store.addAll.
	queued []*flotilla.Job
	// hashes is room for the hashes of the jobs a write adds or a cycle
	// decides on (jobTable.hashes).
	hashes []uint32
	// check are a report's entries to check for kills (reportPlan.check).
	check []int
	// running is the snapshot's buffer of running jobs, kept between
	// cycles.
	running []scheduler.Running
}

// maxSubmitScratch bounds the submitted events Submit keeps between
// requests (160 bytes each).
const maxSubmitScratch = 4096

// submitEvents returns n events' room for a submit's write: the kept
// buffer when it is large enough (the events are applied and forgotten
// within the call, and nothing the backend returns outlives it).
func (b *scratch) submitEvents(n int) []events.Event {
	if n > maxSubmitScratch {
		return make([]events.Event, n)
	}
	if cap(b.submitted) < n {
		b.submitted = make([]events.Event, max(n, min(2*cap(b.submitted), maxSubmitScratch)))
	}
	return b.submitted[:n]
}
