package server

import (
	"context"
	"errors"
	"fmt"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/backend"
	"github.com/flotilla-sched/flotilla/events"
)

// The operator's verbs (docs/operator-commands.md): reprioritize and preempt. Each is one
// write of events, so that a replay of the job sets' logs rebuilds what
// it did; a request the service refuses writes nothing.

// Selection names the jobs an operator's verb applies to: IDs, or the
// jobs of Queue (those of JobSet only when it is set), or the jobs leased
// on Cluster (on Node only when it is set). Exactly one way.
type Selection struct {
	IDs           []string
	Queue, JobSet string
	Cluster, Node string
}

// check reports a selection that names jobs in no way, or in more than
// one; needSet makes JobSet required with Queue.
func (sel *Selection) check(needSet bool) error {
	ways := 0
	if len(sel.IDs) > 0 {
		ways++
	}
	if sel.Queue != "" || sel.JobSet != "" {
		ways++
	}
	if sel.Cluster != "" || sel.Node != "" {
		ways++
	}
	switch {
	case ways == 0:
		return flotilla.Errorf("jobIds", "", flotilla.ErrRequired, "name jobs by id, by queue or by cluster")
	case ways > 1:
		return flotilla.Errorf("jobIds", fmt.Sprint(sel.IDs), flotilla.ErrInconsistent,
			"name jobs one way: by id, by queue (and job set) or by cluster (and node)")
	case sel.JobSet != "" && sel.Queue == "":
		return flotilla.Errorf("queue", "", flotilla.ErrRequired, "a job set is named within its queue")
	case needSet && sel.Queue != "" && sel.JobSet == "":
		return flotilla.Errorf("jobSet", "", flotilla.ErrRequired, "name the job set of queue %q", sel.Queue)
	case sel.Node != "" && sel.Cluster == "":
		return flotilla.Errorf("cluster", "", flotilla.ErrRequired, "a node is named within its cluster")
	}
	return nil
}

// selected returns the non-terminal jobs sel names, sorted by id, and the
// ids of those that ended (ids only). An id that names no job, or a queue
// or cluster that does not exist, is backend.ErrNotFound, all named. The
// caller holds mu.
func (s *state) selected(ctx context.Context, sel *Selection) ([]*job, []string, error) {
	var js []*job
	switch {
	case len(sel.IDs) > 0:
		var errs []error
		var ended []string
		seen := make(map[string]bool, len(sel.IDs))
		for _, id := range sel.IDs {
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
				return nil, nil, err
			}
			ended = append(ended, id)
		}
		if len(errs) > 0 {
			return nil, nil, errors.Join(errs...)
		}
		sortJobs(js)
		return js, ended, nil
	case sel.Queue != "":
		if _, ok := s.queues[sel.Queue]; !ok {
			return nil, nil, flotilla.Errorf("queue", sel.Queue, backend.ErrNotFound, "no such queue")
		}
		for j := range s.jobs.all() {
			if j.spec.Queue == sel.Queue && (sel.JobSet == "" || j.spec.JobSet == sel.JobSet) {
				js = append(js, j)
			}
		}
	default:
		c, ok := s.clusters[sel.Cluster]
		if !ok {
			return nil, nil, flotilla.Errorf("cluster", sel.Cluster, backend.ErrNotFound, "no such cluster")
		}
		if _, ok := c.index[sel.Node]; sel.Node != "" && !ok {
			return nil, nil, flotilla.Errorf("node", sel.Node, backend.ErrNotFound, "cluster %q reports no such node", sel.Cluster)
		}
		for j := range c.jobs() {
			if sel.Node == "" || j.lease.node == sel.Node {
				js = append(js, j)
			}
		}
	}
	sortJobs(js)
	return js, nil, nil
}

// ReprioritizeResult says what a reprioritization did.
type ReprioritizeResult struct {
	// Reprioritized are queued jobs that now have the new priority.
	Reprioritized []string
	// Live are leased or running jobs: docs/operator-commands.md leaves them alone.
	Live []string
	// Finished are jobs that had ended; nothing changed for them.
	Finished []string
}

// Reprioritize gives the queued jobs sel names (by id, or a queue's job
// set: docs/operator-commands.md's reprioritize takes no cluster and needs the job set
// with the queue) the per-job priority p, one reprioritized event each, in
// one write; by names who asked (the events' reason). Leased and running
// jobs are reported in Live and left alone. The queued jobs take their new
// place in their queue at once; a job with the new priority already gets
// an event too (the operator's action is recorded). An unknown job or
// queue is backend.ErrNotFound and changes nothing.
func (s *Server) Reprioritize(ctx context.Context, sel Selection, p uint32, by string) (ReprioritizeResult, error) {
	if err := sel.check(true); err != nil {
		return ReprioritizeResult{}, err
	}
	if sel.Cluster != "" {
		return ReprioritizeResult{}, flotilla.Errorf("cluster", sel.Cluster, flotilla.ErrInconsistent,
			"reprioritize names jobs by id or by queue and job set")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.st.reprioritize(ctx, &sel, p, by)
}

// reprioritize is Reprioritize under the lock.
func (s *state) reprioritize(ctx context.Context, sel *Selection, p uint32, by string) (ReprioritizeResult, error) {
	if err := s.fresh(ctx); err != nil {
		return ReprioritizeResult{}, err
	}
	js, ended, err := s.selected(ctx, sel)
	if err != nil {
		return ReprioritizeResult{}, err
	}
	res := ReprioritizeResult{Finished: ended}
	now := s.clock.Now()
	w := &backend.Write{}
	for _, j := range js {
		if j.state != events.Queued {
			res.Live = append(res.Live, j.id())
			continue
		}
		sj := j.spec
		w.Events = append(w.Events, events.Event{Time: now, Queue: sj.Queue, JobSet: sj.JobSet, Job: sj.ID,
			Type: events.Reprioritized, Priority: p, Reason: fmt.Sprintf("priority %d given by %s", p, principalName(by))})
		res.Reprioritized = append(res.Reprioritized, sj.ID)
	}
	if _, err := s.commit(ctx, w); err != nil {
		return ReprioritizeResult{}, err
	}
	return res, nil
}

// principalName is who acted, for an event's reason.
func principalName(by string) string {
	if by == "" {
		return "an operator"
	}
	return by
}

// setPriority gives queued job j priority p (a reprioritized event): it
// leaves its queue and enters again at its new place. The caller holds
// mu.
func (s *state) setPriority(j *job, p uint32) {
	if j.sched().Priority == p {
		j.reprioritized = true
		return
	}
	queued := j.state == events.Queued
	if queued {
		s.queued.remove(j)
	}
	j.withPriority(p)
	s.ui.repriced(j)
	if queued {
		s.queued.add(j)
	}
}

// withPriority gives j priority p, marked as an operator's, outside any
// queue (the caller moves it).
func (j *job) withPriority(p uint32) {
	j.reprioritized = true
	if j.sched().Priority == p {
		return
	}
	c := *j.sched()
	c.Priority = p
	j.own = &c
}

// PreemptResult says what a preemption did.
type PreemptResult struct {
	// Preempted are the leased or running jobs preempted: those named and
	// their gang mates (a gang is preempted whole, as a cycle does).
	Preempted []string
	// Queued are queued jobs named: there is nothing to preempt.
	Queued []string
	// Finished are jobs that had ended; nothing changed for them.
	Finished []string
}

// Preempt ends the leased and running jobs sel names as a cycle's
// preemption would: one preempted event each (with the lease's cluster,
// node and attempt; requeued when Config.RequeuePreempted says so and
// the job's cancellation was not requested), their gang mates' too, in one
// write; the executor is told to kill them (with their grace period) in
// its next report's answer, as for a cycle's preemptions. The events'
// reason names by and reason. sel may name a queue without a job set,
// and a cluster (with or without a node). An unknown job, queue, cluster
// or node is backend.ErrNotFound and changes nothing.
func (s *Server) Preempt(ctx context.Context, sel Selection, by, reason string) (PreemptResult, error) {
	if err := sel.check(false); err != nil {
		return PreemptResult{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.st.preempt(ctx, &sel, by, reason)
}

// preempt is Preempt under the lock.
func (s *state) preempt(ctx context.Context, sel *Selection, by, reason string) (PreemptResult, error) {
	if err := s.fresh(ctx); err != nil {
		return PreemptResult{}, err
	}
	js, ended, err := s.selected(ctx, sel)
	if err != nil {
		return PreemptResult{}, err
	}
	res := PreemptResult{Finished: ended}
	why := "preempted by " + principalName(by)
	if reason != "" {
		why += ": " + reason
	}
	now := s.clock.Now()
	w := &backend.Write{}
	for _, j := range js {
		if !j.state.Live() {
			res.Queued = append(res.Queued, j.id())
			continue
		}
		sj := j.spec
		w.Events = append(w.Events, events.Event{Time: now, Queue: sj.Queue, JobSet: sj.JobSet, Job: sj.ID,
			Type: events.Preempted, Cluster: j.lease.cluster.name, Node: j.lease.node, Attempt: int(j.attempts),
			Reason: why, Requeued: s.cfg.RequeuePreempted && !j.cancelRequested})
	}
	s.followGangs(w, now)
	stored, err := s.commit(ctx, w)
	if err != nil {
		return PreemptResult{}, err
	}
	for _, e := range stored {
		if e.Type == events.Preempted {
			res.Preempted = append(res.Preempted, e.Job)
		}
	}
	return res, nil
}
