package server

import (
	"context"
	"errors"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/backend"
	"github.com/flotilla-sched/flotilla/priority"
	"github.com/flotilla-sched/flotilla/queue"
	"github.com/flotilla-sched/flotilla/scheduler"
)

// DetailPositionLimit bounds how many queued jobs one Detail call reads to
// place the jobs it names, all of them together: 100,000, about 20 ms
// under the service's lock in all, however many jobs a request names. A
// job the budget does not reach gets a Partial position (at least Ahead
// jobs ahead; Ahead 0 once the budget is spent).
const DetailPositionLimit = 100_000

// JobDetail is the long form of a job's status (`flotilla status -v`):
// what orders it in its queue, its place there, its queue's standing and,
// with flux priorities, the breakdown of its priority.
type JobDetail struct {
	// Class is the job's priority class (the default class when it names
	// none), ClassPriority that class's priority, Priority the job's
	// priority within it (lower runs first; with flux, the flux priority
	// mapped by priority.JobPriority).
	Class         string
	ClassPriority int32
	Priority      uint32
	// Position is a queued job's place in its queue now (Partial past
	// what is left of the call's DetailPositionLimit); nil for a job that
	// is not queued. With several pools, the place among the queue's jobs
	// that accept Pool (before a cycle, the first known pool the job
	// accepts), as that pool's cycles offer them.
	Position *scheduler.QueuePosition
	// Queue is the last cycle's report of the job's queue; nil before the
	// first cycle that saw the queue.
	Queue *scheduler.QueueReport
	// Pool is the pool whose last cycle Queue is from, when the service
	// knows more than one pool.
	Pool string
	// Flux is the job's flux priority breakdown as the bank tree ranks
	// its association now, with the default urgency; nil without flux.
	Flux *priority.Breakdown
}

// Detail returns the long form of each job's status, in the order asked.
// An id that names no job is backend.ErrNotFound (field "job"). Position
// reads the job's queue up to the job, the jobs named sharing a budget of
// DetailPositionLimit entries read: meant for a person asking about a few
// jobs.
func (s *Server) Detail(ctx context.Context, ids ...string) ([]JobDetail, error) {
	out := make([]JobDetail, 0, len(ids))
	budget := s.st.positionLimit
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
		d, err := s.detail(id, &r.Spec, &budget)
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return out, nil
}

// detail is state.detail under the lock.
func (s *Server) detail(id string, spec *backend.JobSpec, budget *int) (JobDetail, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.st.detail(id, spec, budget)
}

// detail is Detail of one job, spec its stored specification; placing it
// spends from budget, the entries the call may still read.
func (s *state) detail(id string, spec *backend.JobSpec, budget *int) (JobDetail, error) {
	job := spec.Job
	d := JobDetail{Class: job.PriorityClass, Priority: job.Priority}
	if d.Class == "" {
		d.Class = s.cat.DefaultPriorityClass
	}
	for _, pc := range s.cat.PriorityClasses {
		if pc.Name == d.Class {
			d.ClassPriority = pc.Priority
		}
	}
	pools := joinPools(spec.Pools)
	rep, pool, reported := s.queueReport(job.Queue, pools)
	if reported {
		d.Queue = &rep
		if len(s.poolNames()) > 1 {
			d.Pool = pool
		}
	}
	if e, ok := s.queued.store.Get(id); ok && !s.stale {
		// The queued copy carries the priority flux last gave it.
		d.Priority = e.Job.Priority
		// The place in the queue of the pool the explanation is about:
		// among the jobs that pool's cycles offer.
		st := s.explainedStore(pool, reported, pools)
		if *budget <= 0 {
			d.Position = &scheduler.QueuePosition{Queued: st.Stats(job.Queue).Jobs, Partial: true}
		} else {
			pos, ok, err := scheduler.PositionOf(st, job.Queue, id, *budget)
			if err != nil {
				return JobDetail{}, err
			}
			*budget -= pos.Read
			if ok {
				d.Position = &pos
			}
		}
	}
	if f := s.usage.flux; f != nil {
		k := f.assoc(spec.Principal, spec.Job.Queue)
		if c, err := f.calculation(k, job.Queue); err == nil {
			d.Flux = &priority.Breakdown{JobID: id, User: k.user, Bank: k.bank, Queue: job.Queue, ComputedAt: s.clock.Now(), Calculation: c}
		}
	}
	return d, nil
}

// explainedStore is the queued-job store of the pool a queued job's
// explanation is about: the pool of its queue's report (pool, when
// reported), else the first of reportPools that the job (accepting pools,
// joinPools) accepts; the store of every job when it accepts none of the
// known pools.
func (s *state) explainedStore(pool string, reported bool, pools string) *queue.Store {
	if reported {
		return s.queued.of(pool)
	}
	for _, p := range s.reportPools() {
		if acceptsPool(pools, p) {
			return s.queued.of(p)
		}
	}
	return s.queued.store
}

// calculation is the flux multi-factor calculation of an association's
// jobs in queue, every term kept; priority is its job priority.
func (f *fluxState) calculation(k assocKey, queue string) (priority.Calculation, error) {
	bankPrio, ok := f.banks[k.bank]
	if !ok {
		return priority.Calculation{}, flotilla.Errorf("queue", queue, flotilla.ErrUnknownName, "no flux bank %q for the queue", k.bank)
	}
	a, ok := f.tree.Association(k.user, k.bank)
	if !ok {
		return priority.Calculation{}, flotilla.Errorf("principal", k.user, flotilla.ErrUnknownName, "no flux association with bank %q", k.bank)
	}
	return priority.Calculate(priority.Factors{FairShare: a.FairShare, Queue: f.tree.QueuePriority(queue), Bank: bankPrio,
		Urgency: priority.DefaultUrgency}, f.tree.Weights()), nil
}
