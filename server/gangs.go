package server

import (
	"fmt"
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
// too: live ones preempted, queued ones cancelled. A member that finishes
// (succeeded, failed with an exit code, cancelled) leaves the others
// alone.

func (s *Server) addGangMember(j *job) {
	k := gangKey(j.spec.Job)
	s.gangs[k] = append(s.gangs[k], j)
}

func (s *Server) removeGangMember(j *job) {
	k := gangKey(j.spec.Job)
	ms := slices.DeleteFunc(s.gangs[k], func(m *job) bool { return m == j })
	if len(ms) == 0 {
		delete(s.gangs, k)
		return
	}
	s.gangs[k] = ms
}

// followGangs appends to w, for every gang member whose lease w ends, the
// events that end its gang mates' leases the same way (see above). The
// caller holds mu.
func (s *Server) followGangs(w *backend.Write, now time.Time) {
	n := len(w.Events)
	var touched map[*job]bool
	for i := 0; i < n; i++ {
		e := &w.Events[i]
		if e.Type != events.LeaseExpired && e.Type != events.LeaseReturned && e.Type != events.Preempted {
			continue
		}
		j := s.jobs[e.Job]
		if j == nil || !j.spec.Job.IsGang() {
			continue
		}
		if touched == nil {
			touched = make(map[*job]bool)
			for k := 0; k < n; k++ {
				if m := s.jobs[w.Events[k].Job]; m != nil {
					touched[m] = true
				}
			}
		}
		for _, m := range s.gangs[gangKey(j.spec.Job)] {
			if touched[m] {
				continue
			}
			touched[m] = true
			sj := m.spec.Job
			ev := events.Event{Time: now, Queue: sj.Queue, JobSet: sj.JobSet, Job: sj.ID}
			why := fmt.Sprintf("gang %s: member %s lost its lease (%s)", sj.Gang.ID, e.Job, e.Type)
			switch {
			case m.state.Live():
				ev.Type, ev.Cluster, ev.Node, ev.Attempt, ev.Reason = events.Preempted, m.cluster.name, m.node, m.attempts, why
				ev.Requeued = e.Requeued && !m.cancelRequested
			case m.state == events.Queued && !e.Requeued:
				ev.Type, ev.Reason = events.Cancelled, why+" and ended"
			default:
				continue
			}
			w.Events = append(w.Events, ev)
		}
	}
}
