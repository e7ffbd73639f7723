package server

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/backend"
	"github.com/flotilla-sched/flotilla/events"
	"github.com/flotilla-sched/flotilla/scheduler"
	"github.com/flotilla-sched/flotilla/submit"
)

// validQueue checks a queue definition against the service's
// configuration: flotilla.Queue.Validate's rules, a name usable in paths
// and logs (submit.CheckSegment: text, not "." or "..", at most
// submit.MaxNameBytes; and no '/'), and limits naming configured classes
// (an empty class name is Validate's problem, named once). An over-long
// name is the only problem reported: the others' fields would repeat it.
func (d *deps) validQueue(q *flotilla.Queue) error {
	if len(q.Name) > submit.MaxNameBytes {
		return submit.CheckSegment(fmt.Sprintf("queue %q.name", submit.Shown(q.Name)), "queue", q.Name)
	}
	cfg := d.sched.Config()
	p := fmt.Sprintf("queue %q", q.Name)
	errs := []error{q.Validate(), backend.CheckTreeFields(cfg.Schema, p, q.Name, q.Parent, q.Guaranteed, q.Limit, q.LendingLimit)}
	for _, class := range slices.Sorted(maps.Keys(q.LimitsByPriorityClass)) {
		if class != "" && !slices.ContainsFunc(cfg.PriorityClasses, func(pc flotilla.PriorityClass) bool { return pc.Name == class }) {
			errs = append(errs, flotilla.Errorf(fmt.Sprintf("queue %q.limitsByPriorityClass", q.Name), class, flotilla.ErrUnknownName,
				"not a configured priority class"))
		}
	}
	errs = append(errs, checkName(fmt.Sprintf("queue %q.name", q.Name), "queue", q.Name))
	return errors.Join(errs...)
}

// checkName checks the name of a queue or a cluster: a path segment
// (submit.CheckSegment) without '/' (for clusters, the name is also the
// prefix of a snapshot's node names). "" is the caller's to judge.
func checkName(field, kind, s string) error {
	if err := submit.CheckSegment(field, kind, s); err != nil {
		return err
	}
	if strings.ContainsRune(s, '/') {
		return flotilla.Errorf(field, s, flotilla.ErrMalformed, "a %s name has no '/'", kind)
	}
	return nil
}

// CreateQueue adds a queue. Errors: the definition's problems
// (*flotilla.FieldError, joined), backend.ErrExists when the name is
// taken, or the backend's error; nothing changes on error.
func (s *Server) CreateQueue(ctx context.Context, q flotilla.Queue, opts ...QueueOption) error {
	return s.putQueue(ctx, q, s.st.be.CreateQueue, opts)
}

// UpdateQueue replaces a queue's definition (its priority factor and
// limits); the next cycle uses it. Errors as for CreateQueue, and
// backend.ErrNotFound when there is no such queue.
func (s *Server) UpdateQueue(ctx context.Context, q flotilla.Queue, opts ...QueueOption) error {
	return s.putQueue(ctx, q, s.st.be.UpdateQueue, opts)
}

// putQueue validates q and its options, then under the lock checks the
// queue tree with q in it, stores q with store and its retry policy (when
// an option sets it), and keeps them in memory.
func (s *Server) putQueue(ctx context.Context, q flotilla.Queue, store func(context.Context, flotilla.Queue) error, opts []QueueOption) error {
	var o queueOptions
	for _, opt := range opts {
		opt(&o)
	}
	err := s.st.validQueue(&q)
	if o.policy != nil && len(q.Name) <= submit.MaxNameBytes {
		err = errors.Join(err, o.policy.Check(fmt.Sprintf("queue %q.retryPolicy", q.Name)))
	}
	if err != nil {
		return err
	}
	q = cloneQueue(q)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.st.putQueue(ctx, q, store); err != nil {
		return err
	}
	if o.setPolicy {
		return s.st.storeRetryPolicy(ctx, q.Name, o.policy)
	}
	return nil
}

// putQueue checks the tree with q, valid, in it (a name a group holds is
// backend.ErrExists), stores q with store and keeps it in memory.
func (s *state) putQueue(ctx context.Context, q flotilla.Queue, store func(context.Context, flotilla.Queue) error) error {
	if err := s.fresh(ctx); err != nil {
		return err
	}
	if _, ok := s.groups[q.Name]; ok {
		return flotilla.Errorf("queue", q.Name, backend.ErrExists, "a group has this name")
	}
	if err := s.checkTree(&q, nil); err != nil {
		return err
	}
	if err := store(ctx, q); err != nil {
		return err
	}
	s.queues[q.Name] = &q
	return nil
}

// DeleteQueue removes a queue: backend.ErrNotFound when there is none,
// backend.ErrNotEmpty while it has jobs that are not finished. Its event
// logs are kept.
func (s *Server) DeleteQueue(ctx context.Context, name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.st.deleteQueue(ctx, name)
}

// deleteQueue is DeleteQueue under the lock.
func (s *state) deleteQueue(ctx context.Context, name string) error {
	if err := s.fresh(ctx); err != nil {
		return err
	}
	if err := s.be.DeleteQueue(ctx, name); err != nil {
		return err
	}
	delete(s.queues, name)
	if err := s.storeRetryPolicy(ctx, name, nil); err != nil {
		return err // a queue created again under the name starts without one
	}
	if s.cordonedQueues[name] {
		// A queue created again under the name starts uncordoned.
		c := backend.Cordon{Kind: backend.CordonQueue, Name: name}
		if err := s.be.PutCordon(ctx, c, false); err != nil {
			return err
		}
		s.setCordon(c, false)
	}
	return nil
}

// QueueInfo is a queue with its jobs counted and its standing in the last
// cycle.
type QueueInfo struct {
	flotilla.Queue
	// Queued, Leased and Running count the queue's jobs now.
	Queued, Leased, Running int
	// NeverFit counts those of the queued jobs that no node the service
	// knows can run (SubmitResult.Warnings): they wait, and their requests
	// do not count in the queue's demand.
	NeverFit int
	// Report is the queue's line in the last cycle's result (share, fair
	// share, adjusted fair share, allocation); zero before the first
	// cycle that saw the queue.
	Report scheduler.QueueReport
	// Pool is the pool whose last cycle Report is from ("" before any).
	Pool string
	// Usage is the queue's usage history now (see Server.QueueUsage).
	Usage []float64
	// Cordoned: its queued jobs are not leased until it is uncordoned.
	Cordoned bool
	// RetryPolicy is the queue's retry policy (a copy), nil when it has
	// none.
	RetryPolicy *events.RetryPolicy
	// Pools are the queue's lines in each pool's last cycle, in pool
	// name order, when the service knows more than one pool (Report is
	// then the first where the queue has jobs, backend.DefaultPool
	// first).
	Pools []PoolQueueReport
}

// PoolQueueReport is a queue's line in one pool's last cycle.
type PoolQueueReport struct {
	Pool   string
	Report scheduler.QueueReport
}

// Queue returns one queue with its counts; backend.ErrNotFound when there
// is none.
func (s *Server) Queue(ctx context.Context, name string) (QueueInfo, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.st.queue(ctx, name)
}

// queue is Queue under the lock.
func (s *state) queue(ctx context.Context, name string) (QueueInfo, error) {
	if err := s.fresh(ctx); err != nil {
		return QueueInfo{}, err
	}
	q, ok := s.queues[name]
	if !ok {
		return QueueInfo{}, flotilla.Errorf("queue", name, backend.ErrNotFound, "no such queue")
	}
	return s.queueInfo(q, s.clusters.liveCounts()), nil
}

// ListQueues returns every queue with its counts, sorted by name.
func (s *Server) ListQueues(ctx context.Context) ([]QueueInfo, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.st.listQueues(ctx)
}

// listQueues is ListQueues under the lock.
func (s *state) listQueues(ctx context.Context) ([]QueueInfo, error) {
	if err := s.fresh(ctx); err != nil {
		return nil, err
	}
	counts := s.clusters.liveCounts()
	out := make([]QueueInfo, 0, len(s.queues))
	for _, q := range s.queues {
		out = append(out, s.queueInfo(q, counts))
	}
	slices.SortFunc(out, func(a, b QueueInfo) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

func (s *state) queueInfo(q *flotilla.Queue, counts map[string][2]int) QueueInfo {
	n := counts[q.Name]
	info := QueueInfo{Queue: cloneQueue(*q), Queued: s.queued.store.QueueLen(q.Name), Leased: n[0], Running: n[1],
		NeverFit: s.queued.fit.neverFit(q.Name)}
	info.Report, info.Pool, _ = s.queueReport(q.Name, "")
	info.Pools = s.queuePools(q.Name)
	info.Usage = s.usage.value(q.Name, s.clock.Now())
	info.Cordoned = s.cordonedQueues[q.Name]
	info.RetryPolicy = s.retry[q.Name].Clone()
	return info
}

// cloneQueue copies a queue's limits and quota vectors so that the
// caller's maps and slices are not shared.
func cloneQueue(q flotilla.Queue) flotilla.Queue {
	q.Guaranteed, q.Limit, q.LendingLimit = backend.CloneQuota(q.Guaranteed), backend.CloneQuota(q.Limit), backend.CloneQuota(q.LendingLimit)
	if q.LimitsByPriorityClass != nil {
		m := make(map[string]map[string]float64, len(q.LimitsByPriorityClass))
		for k, v := range q.LimitsByPriorityClass {
			m[k] = maps.Clone(v)
		}
		q.LimitsByPriorityClass = m
	}
	return q
}
