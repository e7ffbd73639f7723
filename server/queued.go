package server

import (
	"strings"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/events"
	"github.com/flotilla-sched/flotilla/queue"
	"github.com/flotilla-sched/flotilla/scheduler"
)

// queuedJobs holds the queued jobs in queue.Stores, the scheduler's
// Queued seam. store holds every queued job. While the service knows one
// pool and no job names pools, store is also that pool's cycle's Queued;
// once it knows more than one pool, or a job names pools (split), each
// known pool has a store of its own holding the queued jobs that accept
// it, a job in each of its pools' stores, and each pool's cycle reads its
// own. While a cycle's Schedule reads a store (cycling), the changes to
// the stores wait in deferred and flush applies them.
type queuedJobs struct {
	store *queue.Store
	// pools are the known pools' stores once split; nil before.
	pools map[string]*queue.Store
	// newStore makes an empty store (queue.New with the service's
	// classes).
	newStore func() *queue.Store
	cycling  bool
	deferred []storeOp
	// fit counts store's jobs by shape and judges them against the known
	// nodes (neverfit.go); it follows store, not the deferred changes.
	fit fitTracker
}

// storeOp is a queue.Store change deferred while a cycle reads the store.
type storeOp struct {
	add   *flotilla.Job // nil: remove id
	pools string        // the job's (runSpec.pools)
	id    string
}

// add and remove change the stores, or defer the change while a cycle
// reads them. pools are the job's (runSpec.pools).
func (q *queuedJobs) add(j *job) {
	fj := j.sched()
	if q.cycling {
		q.deferred = append(q.deferred, storeOp{add: fj, pools: j.run.pools})
		return
	}
	q.addNow(fj, j.run.pools)
}

func (q *queuedJobs) addNow(fj *flotilla.Job, pools string) {
	// The job was validated at submit; a failure here is a bug that must
	// not take the service down: the job stays out of the queue.
	if q.store.Add(fj) == nil {
		q.fit.count(fj, pools, 1)
	}
	for name, st := range q.pools {
		if acceptsPool(pools, name) {
			_ = st.Add(fj)
		}
	}
}

// batches reports whether addAll may take a submit's jobs: the stores
// have not split (a split service adds each job to its pools' stores).
func (q *queuedJobs) batches() bool { return q.pools == nil }

// addAll is add for many jobs that accept every pool, before the stores
// split (batches).
func (q *queuedJobs) addAll(jobs []*flotilla.Job) {
	if q.cycling {
		for _, j := range jobs {
			q.deferred = append(q.deferred, storeOp{add: j})
		}
		return
	}
	if q.pools != nil {
		for _, j := range jobs {
			q.addNow(j, "")
		}
		return
	}
	if q.store.AddAll(jobs) != nil {
		// As add: not reached, but a job the store refuses must not keep
		// the others out.
		for _, j := range jobs {
			if q.store.Add(j) == nil {
				q.fit.count(j, "", 1)
			}
		}
		return
	}
	// A submit's templates make runs of jobs of one shape: counted a run
	// at a time.
	for i := 0; i < len(jobs); {
		k := i + 1
		for k < len(jobs) && jobs[k].Queue == jobs[i].Queue && jobs[k].Gang.ID == jobs[i].Gang.ID && jobs[k].Requests.Equal(jobs[i].Requests) {
			k++
		}
		q.fit.count(jobs[i], "", k-i)
		i = k
	}
}

func (q *queuedJobs) remove(j *job) {
	if q.cycling {
		q.deferred = append(q.deferred, storeOp{id: j.id(), pools: j.run.pools})
		return
	}
	q.removeNow(j.id(), j.run.pools)
}

func (q *queuedJobs) removeNow(id, pools string) {
	if fj, ok := q.store.Remove(id); ok {
		q.fit.count(fj, pools, -1)
	}
	for _, st := range q.pools {
		st.Remove(id)
	}
}

// flush applies the changes made while a cycle read the store.
func (q *queuedJobs) flush() {
	ops := q.deferred
	q.deferred = nil
	for _, op := range ops {
		if op.add != nil {
			q.addNow(op.add, op.pools)
		} else {
			q.removeNow(op.id, op.pools)
		}
	}
}

// split gives each of the pools named a store of the queued jobs of jobs
// that accept it, if it has none yet; the stores split at the first call
// (the service's stores stay split). The caller holds mu, with no cycle
// reading the stores.
func (q *queuedJobs) split(pools []string, jobs *jobTable) {
	var fresh []string
	for _, p := range pools {
		if _, ok := q.pools[p]; !ok {
			fresh = append(fresh, p)
		}
	}
	if len(fresh) == 0 && q.pools != nil {
		return
	}
	if q.pools == nil {
		q.pools = make(map[string]*queue.Store, len(fresh))
	}
	for _, p := range fresh {
		q.pools[p] = q.newStore()
	}
	for j := range jobs.all() {
		if j.state != events.Queued {
			continue
		}
		for _, p := range fresh {
			if acceptsPool(j.run.pools, p) {
				_ = q.pools[p].Add(j.sched())
			}
		}
	}
}

// of returns the store pool's cycle reads: its own once split, else the
// one store.
func (q *queuedJobs) of(pool string) *queue.Store {
	if q.pools == nil {
		return q.store
	}
	if st, ok := q.pools[pool]; ok {
		return st
	}
	return q.newStore() // not reached: every known pool has a store
}

// joinPools is a job's pools as runSpec keeps them: comma-separated, ""
// for every pool (pool names hold no comma: submit.CheckPool).
func joinPools(pools []string) string { return strings.Join(pools, ",") }

// acceptsPool reports whether a job whose pools are pools (joinPools)
// accepts pool.
func acceptsPool(pools, pool string) bool {
	if pools == "" {
		return true
	}
	for p := range strings.SplitSeq(pools, ",") {
		if p == pool {
			return true
		}
	}
	return false
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
