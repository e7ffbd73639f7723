package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/backend"
	"github.com/flotilla-sched/flotilla/events"
	"github.com/flotilla-sched/flotilla/scheduler"
	"github.com/flotilla-sched/flotilla/submit"
)

// Submit stores the jobs of one request with docs/submit-file.md's rules
// (submit.Rules.Jobs) and returns their ids in file order. The jobs and
// their submitted events are stored together or not at all; ids are
// returned only once they are stored.
//
// A job whose client id was used before in its queue is not stored again:
// its id is the existing job's. Any problem rejects the whole request and
// stores nothing: the rules' problems, an unknown queue
// (backend.ErrNotFound, field "queue"), a gang id that live jobs of the
// queue already use (flotilla.ErrDuplicate, field "gang.id"), a gang whose
// members' client ids were partly used before (flotilla.ErrInconsistent),
// each a *flotilla.FieldError, joined.
func (s *Server) Submit(ctx context.Context, req *submit.Request) ([]string, error) {
	if req == nil {
		return nil, flotilla.Errorf("request", "<nil>", flotilla.ErrRequired, "")
	}
	res, err := s.submit(ctx, req.Queue, func(now time.Time) ([]backend.JobSpec, []int, error) {
		specs, counts, err := s.st.cfg.Submit.JobsCounted(req, &s.st.cat, now, s.st.newIDs)
		for i := range specs {
			specs[i].Principal = req.Principal
		}
		return specs, counts, err
	})
	return res.IDs, err
}

// SubmitJSON is Submit for a submit file (docs/submit-file.md's form), reporting
// its form's problems (submit.Parse) with the rules' ones.
func (s *Server) SubmitJSON(ctx context.Context, data []byte) ([]string, error) {
	// The queue's name, read even when other fields are mistyped, so that
	// an unknown queue is named with the file's other problems; ParseJobs
	// reports the problems of the form.
	var head map[string]json.RawMessage
	var queueName string
	if json.Unmarshal(data, &head) == nil {
		_ = json.Unmarshal(head["queue"], &queueName) // the exact key, as the strict decoder reads it
	}
	res, err := s.submit(ctx, queueName, func(now time.Time) ([]backend.JobSpec, []int, error) {
		return s.st.cfg.Submit.ParseJobsCounted(data, &s.st.cat, now, s.st.newIDs)
	})
	return res.IDs, err
}

// SubmitResult is what a submission stored: its jobs' ids in file order,
// and warnings about its templates.
type SubmitResult struct {
	IDs []string
	// Warnings name, in file order, each template whose jobs no node the
	// service knows can run (docs/submit-file.md): the jobs are stored
	// all the same, and wait until a cluster with a large enough node
	// registers.
	Warnings []SubmitWarning
}

// submit is state.submit under the lock.
func (s *Server) submit(ctx context.Context, queueName string, expand func(time.Time) ([]backend.JobSpec, []int, error)) (SubmitResult, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.st.submit(ctx, queueName, expand)
}

// submit stores the jobs expand makes at the clock's time, for queue
// queueName: Submit's work under the lock. expand also returns the number
// of jobs each template made.
func (s *state) submit(ctx context.Context, queueName string, expand func(time.Time) ([]backend.JobSpec, []int, error)) (SubmitResult, error) {
	ids, specs, counts, err := s.storeSubmit(ctx, queueName, expand)
	if err != nil {
		return SubmitResult{}, err
	}
	return SubmitResult{IDs: ids, Warnings: s.submitWarnings(specs, counts)}, nil
}

// storeSubmit is submit's write: it returns the ids, the specs and their
// templates' counts.
func (s *state) storeSubmit(ctx context.Context, queueName string, expand func(time.Time) ([]backend.JobSpec, []int, error)) ([]string, []backend.JobSpec, []int, error) {
	if err := s.fresh(ctx); err != nil {
		return nil, nil, nil, err
	}
	now := s.clock.Now()
	specs, counts, err := expand(now)
	// A name the rules refused (too long, not a path segment) is named
	// once, by them.
	if _, ok := s.queues[queueName]; !ok && queueName != "" && submit.CheckSegment("queue", "queue", queueName) == nil {
		err = joinErr(err, flotilla.Errorf("queue", queueName, backend.ErrNotFound, "no such queue"))
	}
	if err != nil {
		return nil, nil, nil, err
	}
	ids := make([]string, len(specs))
	// fresh are the specs to store: specs itself until a client id is
	// found used, then a copy of the new ones.
	var fresh []backend.JobSpec
	var errs []error
	// Idempotency: a client id used before names the existing job.
	gangSeen := map[string][2]int{} // gang key → (members found, members new)
	used, err := s.usedClientIDs(ctx, queueName, specs)
	defer func() { clear(s.scratch.cids); clear(s.scratch.cidIDs) }() // keeps no strings alive
	if err != nil {
		return nil, nil, nil, err
	}
	for i := range specs {
		sp := &specs[i]
		ids[i] = sp.Job.ID
		if sp.ClientID != "" {
			id, err := used(i)
			switch {
			case err == nil:
				if fresh == nil {
					fresh = append(make([]backend.JobSpec, 0, len(specs)), specs[:i]...)
				}
				ids[i] = id
				if sp.Job.IsGang() {
					n := gangSeen[gangKey(sp.Job)]
					n[0]++
					gangSeen[gangKey(sp.Job)] = n
				}
				continue
			case !errors.Is(err, backend.ErrNotFound):
				return nil, nil, nil, err
			}
		}
		if sp.Job.IsGang() {
			k := gangKey(sp.Job)
			n := gangSeen[k]
			if n[1] == 0 && len(s.gangs.members[k]) > 0 {
				errs = append(errs, flotilla.Errorf("gang.id", sp.Job.Gang.ID, flotilla.ErrDuplicate,
					"live jobs of queue %q are members of a gang of that id", queueName))
			}
			n[1]++
			gangSeen[k] = n
		}
		if fresh != nil {
			fresh = append(fresh, *sp)
		}
	}
	if fresh == nil {
		fresh = specs
	}
	for i := range specs {
		if sp := &specs[i]; sp.Job.IsGang() {
			if n := gangSeen[gangKey(sp.Job)]; n[0] > 0 && n[1] > 0 {
				errs = append(errs, flotilla.Errorf("clientId", sp.ClientID, flotilla.ErrInconsistent,
					"gang %q: some members' client ids were used before and some were not", sp.Job.Gang.ID))
				gangSeen[gangKey(sp.Job)] = [2]int{}
			}
		}
	}
	if f := s.usage.flux; f != nil {
		errs = append(errs, f.submit(fresh)...)
	}
	if len(errs) > 0 {
		return nil, nil, nil, errors.Join(errs...)
	}
	w := &backend.Write{Jobs: fresh, Events: s.scratch.submitEvents(len(fresh))}
	defer clear(w.Events) // keeps no strings alive in the scratch
	for i := range fresh {
		j := fresh[i].Job
		w.Events[i] = events.Event{Time: now, Queue: j.Queue, JobSet: j.JobSet, Job: j.ID, Type: events.Submitted}
	}
	if _, err := s.commit(ctx, w); err != nil {
		return nil, nil, nil, err
	}
	return ids, specs, counts, nil
}

// usedClientIDs looks up the client ids of specs in the queue: the
// returned function gives spec i's existing job id, or an error
// (backend.ErrNotFound when the client id is new). With a backend that
// implements backend.ClientIDLookup it asks once for all of them.
func (s *state) usedClientIDs(ctx context.Context, queueName string, specs []backend.JobSpec) (func(i int) (string, error), error) {
	l, ok := s.be.(backend.ClientIDLookup)
	if !ok {
		return func(i int) (string, error) { return s.be.JobByClientID(ctx, queueName, specs[i].ClientID) }, nil
	}
	// Requests of up to maxSubmitScratch jobs use the scratch kept
	// between requests (under mu); submit clears it after use.
	var cids, ids []string
	if n := len(specs); n <= maxSubmitScratch {
		cids = slices.Grow(s.scratch.cids[:0], n)[:n]
		ids = slices.Grow(s.scratch.cidIDs[:0], n)[:n]
		s.scratch.cids, s.scratch.cidIDs = cids, ids
	} else {
		cids, ids = make([]string, n), make([]string, n)
	}
	some := false
	for i := range specs {
		cids[i] = specs[i].ClientID
		some = some || cids[i] != ""
	}
	clear(ids)
	if some {
		if err := l.JobsByClientID(ctx, queueName, cids, ids); err != nil {
			return nil, err
		}
	}
	return func(i int) (string, error) {
		if ids[i] == "" {
			return "", backend.ErrNotFound
		}
		return ids[i], nil
	}, nil
}

// CancelResult says what a cancellation did.
type CancelResult struct {
	// Cancelled are jobs that were queued and are now cancelled.
	Cancelled []string
	// Requested are leased or running jobs asked to stop: their executor
	// is told to kill them, and they end cancelled once it has (or their
	// lease expires).
	Requested []string
	// Finished are jobs that had ended already, or whose cancellation was
	// requested before; nothing changed for them.
	Finished []string
}

// Cancel cancels jobs by id, in one write. An id that names no job is
// backend.ErrNotFound (field "job"), and then nothing is cancelled.
func (s *Server) Cancel(ctx context.Context, ids ...string) (CancelResult, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.st.cancelIDs(ctx, ids)
}

// cancelIDs is Cancel under the lock.
func (s *state) cancelIDs(ctx context.Context, ids []string) (CancelResult, error) {
	if err := s.fresh(ctx); err != nil {
		return CancelResult{}, err
	}
	var errs []error
	var js []*job
	var res CancelResult
	seen := make(map[string]bool, len(ids))
	for _, id := range ids {
		if seen[id] {
			continue
		}
		seen[id] = true
		if j := s.jobs.get(id); j != nil {
			js = append(js, j)
			continue
		}
		if _, err := s.be.Job(ctx, id); err != nil {
			if errors.Is(err, backend.ErrNotFound) {
				errs = append(errs, flotilla.Errorf("job", id, backend.ErrNotFound, "no such job"))
				continue
			}
			return CancelResult{}, err
		}
		res.Finished = append(res.Finished, id)
	}
	if len(errs) > 0 {
		return CancelResult{}, errors.Join(errs...)
	}
	return s.cancel(ctx, js, res)
}

// CancelJobSet cancels every job of a job set that has not ended; with
// jobSet "", every job of the queue (flotilla cancel -queue Q).
// backend.ErrNotFound (field "queue") when the queue does not exist, and
// (field "jobSet") when the queue never had a job of that job set.
func (s *Server) CancelJobSet(ctx context.Context, queueName, jobSet string) (CancelResult, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.st.cancelJobSet(ctx, queueName, jobSet)
}

// cancelJobSet is CancelJobSet under the lock.
func (s *state) cancelJobSet(ctx context.Context, queueName, jobSet string) (CancelResult, error) {
	if err := s.fresh(ctx); err != nil {
		return CancelResult{}, err
	}
	if _, ok := s.queues[queueName]; !ok {
		return CancelResult{}, flotilla.Errorf("queue", queueName, backend.ErrNotFound, "no such queue")
	}
	var js []*job
	for j := range s.jobs.all() {
		if j.spec.Queue == queueName && (jobSet == "" || j.spec.JobSet == jobSet) {
			js = append(js, j)
		}
	}
	if jobSet != "" && len(js) == 0 {
		// No live job: a set whose jobs all ended has events; one that
		// never had a job is not found, as an unknown job id is not.
		evs, err := s.be.Events(ctx, queueName, jobSet, 1, 1)
		if err != nil {
			return CancelResult{}, err
		}
		if len(evs) == 0 {
			return CancelResult{}, flotilla.Errorf("jobSet", jobSet, backend.ErrNotFound, "queue %s has no job set of that name", queueName)
		}
	}
	sortJobs(js)
	return s.cancel(ctx, js, CancelResult{})
}

// cancel writes the cancellation of js. The caller holds mu.
func (s *state) cancel(ctx context.Context, js []*job, res CancelResult) (CancelResult, error) {
	now := s.clock.Now()
	w := &backend.Write{}
	for _, j := range js {
		e := events.Event{Time: now, Queue: j.spec.Queue, JobSet: j.spec.JobSet, Job: j.id()}
		switch {
		case j.state == events.Queued:
			e.Type, e.Reason = events.Cancelled, "cancelled while queued"
			res.Cancelled = append(res.Cancelled, j.id())
		case j.cancelRequested:
			res.Finished = append(res.Finished, j.id())
			continue
		default:
			e.Type, e.Attempt = events.CancelRequested, int(j.attempts)
			e.Reason = "cancellation requested"
			res.Requested = append(res.Requested, j.id())
		}
		w.Events = append(w.Events, e)
	}
	if _, err := s.commit(ctx, w); err != nil {
		return CancelResult{}, err
	}
	return res, nil
}

// JobStatus is one job's state, with why it waits when it is queued.
type JobStatus struct {
	Job, Queue, JobSet string
	State              events.State
	Attempts           int
	// Cluster and Node are the live lease's.
	Cluster, Node string
	// CancelRequested: the job was asked to stop.
	CancelRequested bool
	// Reason is a sentence for people: for a queued job why it is not
	// running yet, quantified (the last cycle's explanation); for a job
	// that failed, was cancelled or preempted, why; empty for a leased,
	// running or succeeded one (unless its cancellation was requested).
	Reason string
	// Why is the last cycle's structured explanation for a queued job it
	// examined; nil otherwise.
	Why *scheduler.Reason
	// Record is the stored record.
	Record backend.Record
}

// Status returns the status of each job, in the order asked. An id that
// names no job is backend.ErrNotFound (field "job").
func (s *Server) Status(ctx context.Context, ids ...string) ([]JobStatus, error) {
	out := make([]JobStatus, 0, len(ids))
	var errs []error
	for _, id := range ids {
		r, err := s.st.be.Job(ctx, id)
		if err != nil {
			if errors.Is(err, backend.ErrNotFound) {
				errs = append(errs, flotilla.Errorf("job", id, backend.ErrNotFound, "no such job"))
				continue
			}
			return nil, err
		}
		st := JobStatus{
			Job: id, Queue: r.State.Queue, JobSet: r.State.JobSet, State: r.State.State,
			Attempts: r.State.Attempts, Cluster: r.State.Cluster, Node: r.State.Node,
			CancelRequested: r.State.CancelRequested, Reason: r.State.Reason, Record: r,
		}
		switch {
		case st.State == events.Queued:
			st.Reason, st.Why = s.whyQueued(id)
		case st.State.Live() && st.CancelRequested:
			st.Reason = "cancellation requested"
		case st.State.Live(), st.State == events.SucceededState:
			// The stored reason is an earlier lease's (a requeue's); it
			// does not describe this one.
			st.Reason = ""
		}
		out = append(out, st)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return out, nil
}

// whyQueued is state.whyQueued under the lock.
func (s *Server) whyQueued(id string) (string, *scheduler.Reason) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.st.whyQueued(id)
}

// whyQueued explains why a queued job is not running, from the last
// cycle's result.
func (s *state) whyQueued(id string) (string, *scheduler.Reason) {
	j := s.jobs.get(id)
	if s.stale {
		return "", nil
	}
	if j == nil || j.state != events.Queued {
		return "", nil
	}
	q := j.spec.Queue
	if s.cordonedQueues[q] {
		return fmt.Sprintf("queue %s is cordoned: its jobs are not leased until it is uncordoned", q), nil
	}
	pools := s.poolNames()
	if len(pools) == 1 {
		if !acceptsPool(j.run.pools, pools[0]) {
			return s.noPool(j), nil
		}
		return s.whyQueuedIn(j, pools[0])
	}
	// Several pools: the reason in each pool the job accepts, the first
	// one's kept for the structured reason.
	var msgs []string
	var first *scheduler.Reason
	for _, p := range pools {
		if !acceptsPool(j.run.pools, p) {
			continue
		}
		m, r := s.whyQueuedIn(j, p)
		if first == nil {
			first = r
		}
		msgs = append(msgs, fmt.Sprintf("pool %s: %s", p, m))
	}
	if len(msgs) == 0 {
		return s.noPool(j), nil
	}
	return strings.Join(msgs, "; "), first
}

// noPool is why a job none of whose pools the service knows waits.
func (s *state) noPool(j *job) string {
	return fmt.Sprintf("no cluster is in its pools (%s); the service's pools are %s",
		strings.ReplaceAll(j.run.pools, ",", ", "), strings.Join(s.poolNames(), ", "))
}

// whyQueuedIn explains why queued job j is not running in pool, from the
// pool's last cycle.
func (s *state) whyQueuedIn(j *job, pool string) (string, *scheduler.Reason) {
	q, id, last := j.spec.Queue, j.id(), s.last.pool(pool)
	if !s.queued.cycling {
		if e, ok := s.queued.store.Get(id); ok {
			if r, ok := last.waiting[waitKey{q, e.Key}]; ok {
				return r.Message, &r
			}
		}
	}
	if r, ok := last.notReached[q]; ok {
		return fmt.Sprintf("the last cycle did not reach it: %s", r.Reason.Message), &r.Reason
	}
	if rep, ok := last.shares[q]; ok {
		return fmt.Sprintf("waiting for a cycle; queue %s holds share %.3f against fair share %.3f (adjusted %.3f)",
			q, rep.Share, rep.FairShare, rep.AdjustedFairShare), nil
	}
	return "waiting for the next cycle", nil
}

// Events returns one job set's stored events from sequence number from
// (0 and 1 both mean the first), at most limit of them (limit ≤ 0: all).
func (s *Server) Events(ctx context.Context, queueName, jobSet string, from uint64, limit int) ([]events.Event, error) {
	return s.st.be.Events(ctx, queueName, jobSet, from, limit)
}

// watchBatch is how many events Watch reads from the backend at a time.
const watchBatch = 1000

// Watch calls fn with one job set's events from sequence number from, in
// order, then with each new event as it is stored, until ctx ends (it
// returns ctx's error) or fn returns an error (which it returns). It runs
// in the caller's goroutine and starts none.
func (s *Server) Watch(ctx context.Context, queueName, jobSet string, from uint64, fn func(events.Event) error) error {
	if from == 0 {
		from = 1
	}
	for {
		s.mu.Lock()
		changed := s.st.changed
		s.mu.Unlock()
		evs, err := s.st.be.Events(ctx, queueName, jobSet, from, watchBatch)
		if err != nil {
			return err
		}
		for _, e := range evs {
			if err := fn(e); err != nil {
				return err
			}
			from = e.Seq + 1
		}
		if len(evs) == watchBatch {
			continue
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-changed:
		}
	}
}

// joinErr joins a problem to earlier ones.
func joinErr(err, more error) error {
	if err == nil {
		return more
	}
	return errors.Join(err, more)
}

// sortJobs orders jobs by id, so that writes over a map's jobs are
// deterministic.
func sortJobs(js []*job) {
	slices.SortFunc(js, func(a, b *job) int { return strings.Compare(a.id(), b.id()) })
}
