package server

import (
	"context"
	"slices"
	"strconv"

	"github.com/flotilla-sched/flotilla/events"
)

// Retry policies (docs/operator-commands.md's `-retry-policy`): a queue's policy decides
// what a failed run of its jobs becomes. A run that failed (its executor
// reported it failed, or it passed its active deadline) is matched against
// the rules by exit code and failure reason: the first rule that matches,
// with its retry limit and the policy's maxAttempts not reached, queues
// the job again (run-failed, naming the rule; with avoidSameNode the job's
// later attempts avoid the node); otherwise the job fails, the event
// naming why. A lease that expired or was returned is retried as without
// a policy (up to maxAttempts, the policy's when it gives one), but a rule
// that matches it (onReasons lease-expired, lease-returned, or the reason
// the executor gave a returned job: a Kubernetes executor returns an
// evicted pod as evicted) bounds it by its retry limit too and may avoid
// the node. Without a policy nothing
// changes: a failed run fails the job.
//
// A gang member's failed run, in a queue with a policy, is the gang's:
// its live mates are preempted and queued again with it when it is
// retried, and when it fails they fail with it (queued mates are
// cancelled). The mates' preempted events name the rule that retried the
// gang, so each gang failure counts once on every member, and a rule's
// retryLimit bounds the gang's retries whichever member fails.
//
// What the retries counted and the nodes avoided are the events' (Rule,
// AvoidNode), so a replay rebuilds them (events.Job.Retries, AvoidNodes);
// the service keeps the counts of the live jobs that have any in
// state.retries, and the nodes in the job's scheduling copy (Job.AvoidNodes).

// QueueOption sets what a queue has besides its definition, for
// CreateQueue and UpdateQueue.
type QueueOption func(*queueOptions)

type queueOptions struct {
	policy    *events.RetryPolicy
	setPolicy bool
}

// WithRetryPolicy gives the queue retry policy p (checked whole with the
// queue's definition, fields under `queue "NAME".retryPolicy`); nil
// removes the queue's policy. Without it CreateQueue gives the queue none
// and UpdateQueue keeps the queue's.
func WithRetryPolicy(p *events.RetryPolicy) QueueOption {
	return func(o *queueOptions) { o.policy, o.setPolicy = p.Clone(), true }
}

// policy is the retry policy of j's queue, nil when it has none.
func (s *state) policy(j *job) *events.RetryPolicy { return s.retry[j.spec.Queue] }

// retryState is the part of live job j's events.Job a policy decides on.
func (s *state) retryState(j *job) events.Job {
	return events.Job{Attempts: int(j.attempts), Retries: s.retries[j.id()]}
}

// loadRetryPolicies reads the stored policies (load).
func (s *state) loadRetryPolicies(ctx context.Context) error {
	ps, err := s.be.ListRetryPolicies(ctx)
	if err != nil {
		return err
	}
	s.retry = ps
	return nil
}

// storeRetryPolicy stores queue's policy and keeps it in memory.
func (s *state) storeRetryPolicy(ctx context.Context, queue string, p *events.RetryPolicy) error {
	if p == nil && s.retry[queue] == nil {
		return nil
	}
	if err := s.be.PutRetryPolicy(ctx, queue, p); err != nil {
		return err
	}
	if p == nil {
		delete(s.retry, queue)
	} else {
		if s.retry == nil {
			s.retry = map[string]*events.RetryPolicy{}
		}
		s.retry[queue] = p
	}
	return nil
}

// failedRun is the event that ends live job j's run that failed with f at
// now (exit code f.ExitCode, a sentence what), under its queue's policy: a
// run-failed event when the policy retries it, else failed. ev is the
// event about j's lease to start from.
func (s *state) failedRun(j *job, ev events.Event, f events.Failure, what string) events.Event {
	ev.ExitCode = f.ExitCode
	p := s.policy(j)
	if p == nil || j.cancelRequested {
		ev.Type, ev.Reason = events.Failed, what
		return ev
	}
	st := s.retryState(j)
	d := p.Decide(&st, f, s.cfg.MaxAttempts)
	ev.Rule, ev.Reason = d.Rule, what+"; "+d.Why
	if d.Retry {
		ev.Type, ev.AvoidNode = events.RunFailed, d.AvoidNode
	} else {
		ev.Type = events.Failed
	}
	return ev
}

// leaseEndPolicy settles lease-ending event e of live job j (leaseEnd's,
// not cancelled) under j's queue's policy: maxAttempts is the policy's
// when it gives one, and a rule matching the lease's end (why, the
// executor's failure reason, or else lease-expired or lease-returned)
// also bounds it by its retry limit and may avoid the node.
func (s *state) leaseEndPolicy(j *job, e events.Event, why events.FailureReason, reason string) events.Event {
	p := s.policy(j)
	if p == nil || e.Type == events.Cancelled {
		return e
	}
	switch {
	case why != "":
	case e.Type == events.LeaseReturned:
		why = events.ReasonLeaseReturned
	default:
		why = events.ReasonLeaseExpired
	}
	st := s.retryState(j)
	max := p.MaxAttempts
	if max == 0 {
		max = s.cfg.MaxAttempts
	}
	d := p.Decide(&st, events.Failure{Reason: why}, s.cfg.MaxAttempts)
	if d.Rule == 0 {
		// No rule: retried as without a policy, up to maxAttempts.
		e.Requeued, e.Reason = int(j.attempts) < max, reason
		if !e.Requeued {
			e.Reason = reason + "; attempts exhausted (" + strconv.Itoa(int(j.attempts)) + " of " + strconv.Itoa(max) + ")"
		}
		return e
	}
	e.Requeued, e.Rule, e.AvoidNode, e.Reason = d.Retry, d.Rule, d.AvoidNode, reason+"; "+d.Why
	return e
}

// noteRetry records in memory what event e, about job j and applied,
// changed of its retries and avoided nodes (events.Transition's rules:
// a requeuing event naming a rule counts a retry; AvoidNode adds the
// lease's node). Call before the lease ends.
func (s *state) noteRetry(j *job, e *events.Event) {
	if e.Rule == 0 || j.lease == nil {
		return
	}
	requeues := e.Type == events.RunFailed || e.Requeued && (e.Type == events.LeaseExpired || e.Type == events.LeaseReturned || e.Type == events.Preempted)
	if !requeues {
		return
	}
	r := slices.Clone(s.retries[j.id()])
	if len(r) < e.Rule {
		r = append(r, make([]int, e.Rule-len(r))...)
	}
	r[e.Rule-1]++
	if s.retries == nil {
		s.retries = map[string][]int{}
	}
	s.retries[j.id()] = r
	if e.AvoidNode {
		name := snapName(j.lease.cluster.name, j.lease.node)
		if nodes := j.sched().AvoidNodes; !slices.Contains(nodes, name) {
			j.setAvoid(j.failed(), append(slices.Clip(nodes), name))
		}
	}
}

// forgetRetries drops what the service kept of job j's retries (it ended).
func (s *state) forgetRetries(j *job) {
	if s.retries != nil {
		delete(s.retries, j.id())
	}
}

// restoreRetries enters a loaded job's retry counts (restore).
func (s *state) restoreRetries(j *job, st *events.Job) {
	if len(st.Retries) > 0 {
		if s.retries == nil {
			s.retries = map[string][]int{}
		}
		s.retries[j.id()] = slices.Clone(st.Retries)
	}
}
