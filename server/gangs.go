package server

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/flotilla-sched/flotilla/backend"
	"github.com/flotilla-sched/flotilla/events"
)

// A gang runs whole or not at all, so the service keeps its members
// together when a lease ends: when a member's lease ends (expired,
// returned, or preempted) and it is queued again, the gang's other live
// members are preempted and queued again with it, and the whole gang waits
// for a cycle that can place it; when a member's lease ends for good
// (attempts exhausted, preempted without requeue), the other members end
// too: live ones preempted, queued ones cancelled. In a queue with a
// retry policy a member's failed run is the gang's (retry.go): when it is
// retried (run-failed) the live mates are preempted and queued again with
// it; when it fails, the live mates fail and the queued ones are
// cancelled. Otherwise a member that finishes (succeeded, failed with an
// exit code, cancelled) leaves its running mates alone; but queued members of a gang that has fewer members left
// than its cardinality can never be placed whole (the scheduler places
// only whole gangs), so they are cancelled, saying why. Cancelling one
// queued member so ends its queued mates too.

// gangTable lists the non-terminal members of each gang, by gangKey: a
// gang id in use is not reused, and a gang is queued again whole.
type gangTable struct {
	members map[string][]*job
	// broken marks gangs that lost a member since they were last checked
	// (endBrokenGangs).
	broken map[string]bool
}

func (g *gangTable) add(j *job) {
	k := gangKey(j.spec)
	g.members[k] = append(g.members[k], j)
}

func (g *gangTable) remove(j *job) {
	k := gangKey(j.spec)
	ms := slices.DeleteFunc(g.members[k], func(m *job) bool { return m == j })
	if len(ms) == 0 {
		delete(g.members, k)
		delete(g.broken, k)
		return
	}
	g.members[k] = ms
	g.broken[k] = true
}

// endBrokenGangs cancels the queued members of gangs left with fewer
// members than their cardinality (see above), in one write. A gang whose
// other members are live stays marked: when their leases end and they are
// queued again, a later write cancels them. A failure leaves the gangs
// marked, for the next write to retry. The caller holds mu.
func (s *state) endBrokenGangs(ctx context.Context) {
	if len(s.gangs.broken) == 0 {
		return
	}
	now := s.clock.Now()
	w := &backend.Write{}
	var live map[string]bool
	for _, k := range slices.Sorted(maps.Keys(s.gangs.broken)) {
		ms := s.gangs.members[k]
		if len(ms) == 0 || len(ms) >= ms[0].spec.Gang.Cardinality {
			delete(s.gangs.broken, k)
			continue
		}
		for _, m := range ms {
			if m.state != events.Queued {
				if m.state.Live() {
					if live == nil {
						live = make(map[string]bool)
					}
					live[k] = true
				}
				continue
			}
			sj := m.spec
			w.Events = append(w.Events, events.Event{Time: now, Queue: sj.Queue, JobSet: sj.JobSet, Job: sj.ID,
				Type: events.Cancelled, Reason: fmt.Sprintf("gang %s cannot run whole: %d of its %d members have not ended",
					sj.Gang.ID, len(ms), sj.Gang.Cardinality)})
		}
	}
	if len(w.Events) > 0 {
		if _, err := s.commit(ctx, w); err != nil {
			return
		}
	}
	// The cancelled members marked their gangs again; those have no
	// queued member left. Those with live members stay marked.
	maps.DeleteFunc(s.gangs.broken, func(k string, _ bool) bool { return !live[k] })
}

// followGangs appends to w, for every gang member whose lease w ends, the
// events that end its gang mates' leases the same way (see above). The
// caller holds mu.
func (s *state) followGangs(w *backend.Write, now time.Time) {
	n := len(w.Events)
	var touched map[*job]bool
	for i := 0; i < n; i++ {
		e := &w.Events[i]
		switch {
		case e.Type == events.LeaseExpired, e.Type == events.LeaseReturned, e.Type == events.Preempted:
		case e.Type == events.RunFailed:
		case e.Type == events.Failed && s.retry[e.Queue] != nil:
			// Under a retry policy a member's failed run is the gang's.
		default:
			continue
		}
		requeue := e.Requeued || e.Type == events.RunFailed
		j := s.jobs.get(e.Job)
		if j == nil || !j.spec.IsGang() {
			continue
		}
		if touched == nil {
			// Members whose lease (or queued wait) this write ends
			// already; a running or cancel-requested event ends nothing.
			touched = make(map[*job]bool)
			for k := 0; k < n; k++ {
				switch w.Events[k].Type {
				case events.Running, events.CancelRequested, events.Leased:
					continue
				}
				if m := s.jobs.get(w.Events[k].Job); m != nil {
					touched[m] = true
				}
			}
		}
		for _, m := range s.gangs.members[gangKey(j.spec)] {
			if touched[m] {
				continue
			}
			touched[m] = true
			sj := m.spec
			ev := events.Event{Time: now, Queue: sj.Queue, JobSet: sj.JobSet, Job: sj.ID}
			why := fmt.Sprintf("gang %s: member %s lost its lease (%s)", sj.Gang.ID, e.Job, e.Type)
			if e.Type == events.RunFailed || e.Type == events.Failed {
				why = fmt.Sprintf("gang %s: member %s's run failed (%s)", sj.Gang.ID, e.Job, e.Type)
			}
			switch {
			case m.state.Live() && e.Type == events.Failed:
				ev.Type, ev.Cluster, ev.Node, ev.Attempt, ev.Reason = events.Failed, m.lease.cluster.name, m.lease.node, int(m.attempts), why
			case m.state.Live():
				ev.Type, ev.Cluster, ev.Node, ev.Attempt, ev.Reason = events.Preempted, m.lease.cluster.name, m.lease.node, int(m.attempts), why
				ev.Requeued = requeue && !m.cancelRequested
				if ev.Requeued && e.Rule != 0 {
					// The gang is retried under the rule: the retry
					// counts on every member, once per gang failure.
					ev.Rule = e.Rule
				}
			case m.state == events.Queued && !requeue:
				ev.Type, ev.Reason = events.Cancelled, why+" and ended"
			default:
				continue
			}
			w.Events = append(w.Events, ev)
		}
	}
}
