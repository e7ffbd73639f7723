package postgres

import (
	"fmt"
	"math"
	"strconv"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/backend"
	"github.com/flotilla-sched/flotilla/events"
)

// checkFields is Commit's check of each job and event of w on its own:
// every problem as a FieldError (backend.Write's CheckFields, and what
// PostgreSQL cannot hold).
func (b *Backend) checkFields(w *backend.Write) []error {
	errs := w.CheckFields(b.schema)
	// text checks s, naming its field (built only on a problem).
	text := func(s string, field func() string) {
		if ok := textOK(s); !ok {
			errs = append(errs, textProblem(field(), s))
		}
	}
	for i := range w.Jobs {
		s := &w.Jobs[i]
		p := func(f string) string { return fmt.Sprintf("jobs[%d].%s", i, f) }
		if s.Job == nil {
			continue // reported by CheckFields
		}
		j := s.Job
		if err := timeProblem(p("job.submitTime"), j.SubmitTime); err != nil {
			errs = append(errs, err)
		}
		text(j.ID, func() string { return p("job.id") })
		text(j.Queue, func() string { return p("job.queue") })
		text(j.JobSet, func() string { return p("job.jobSet") })
		text(j.PriorityClass, func() string { return p("job.priorityClass") })
		text(j.Gang.ID, func() string { return p("job.gang.id") })
		text(j.Gang.NodeUniformityLabel, func() string { return p("job.gang.nodeUniformityLabel") })
		text(j.Gang.Topology.Name, func() string { return p("job.gang.topology.name") })
		text(j.Gang.Topology.Required, func() string { return p("job.gang.topology.required") })
		text(j.Gang.Topology.Preferred, func() string { return p("job.gang.topology.preferred") })
		text(s.ClientID, func() string { return p("clientId") })
		text(s.Principal, func() string { return p("principal") })
		for k, v := range j.NodeSelector {
			text(k, func() string { return p("job.nodeSelector") })
			text(v, func() string { return p("job.nodeSelector." + k) })
		}
		for k, t := range j.Tolerations {
			tp := func() string { return p(fmt.Sprintf("job.tolerations[%d]", k)) }
			text(t.Key, func() string { return tp() + ".key" })
			text(t.Value, func() string { return tp() + ".value" })
			text(string(t.Operator), func() string { return tp() + ".operator" })
			text(string(t.Effect), func() string { return tp() + ".effect" })
		}
		for k, c := range j.AvoidClusters {
			text(c, func() string { return p(fmt.Sprintf("job.avoidClusters[%d]", k)) })
		}
	}
	for i := range w.Events {
		e := &w.Events[i]
		p := func(f string) string { return fmt.Sprintf("events[%d].%s", i, f) }
		if err := timeProblem(p("time"), e.Time); err != nil {
			errs = append(errs, err)
		}
		if e.Attempt < 0 || e.Attempt > math.MaxInt32 {
			errs = append(errs, flotilla.Errorf(p("attempt"), strconv.Itoa(e.Attempt), flotilla.ErrOutOfRange, "want 0 to %d", math.MaxInt32))
		}
		text(e.Queue, func() string { return p("queue") })
		text(e.JobSet, func() string { return p("jobSet") })
		text(e.Job, func() string { return p("job") })
		text(e.Cluster, func() string { return p("cluster") })
		text(e.Node, func() string { return p("node") })
		text(e.Reason, func() string { return p("reason") })
	}
	return errs
}

// clientKey names a client id in its queue.
type clientKey struct{ queue, clientID string }

// checkPairs is Commit's check of w as a whole: job ids and client ids
// distinct, every new job with exactly one submitted event and every
// submitted event with its job, in the same job set. It returns each new
// job's index by id.
func checkPairs(w *backend.Write, errs []error) (map[string]int, []error) {
	newIdx := make(map[string]int, len(w.Jobs))
	clients := map[clientKey]struct{}{}
	submitted := make([]bool, len(w.Jobs))
	for i := range w.Jobs {
		s := &w.Jobs[i]
		if s.Job == nil {
			continue
		}
		if _, dup := newIdx[s.Job.ID]; dup {
			errs = append(errs, flotilla.Errorf(fmt.Sprintf("jobs[%d].job.id", i), s.Job.ID, backend.ErrDuplicate, "twice in one write"))
		} else {
			newIdx[s.Job.ID] = i
		}
		if s.ClientID != "" {
			k := clientKey{s.Job.Queue, s.ClientID}
			if _, dup := clients[k]; dup {
				errs = append(errs, flotilla.Errorf(fmt.Sprintf("jobs[%d].clientId", i), s.ClientID, backend.ErrDuplicate,
					"twice in queue %q in one write", s.Job.Queue))
			}
			clients[k] = struct{}{}
		}
	}
	for i := range w.Events {
		e := &w.Events[i]
		if e.Type != events.Submitted {
			continue
		}
		idx, ok := newIdx[e.Job]
		switch {
		case !ok:
			errs = append(errs, flotilla.Errorf(fmt.Sprintf("events[%d].job", i), e.Job, flotilla.ErrInconsistent,
				"a submitted event needs its job in the write's jobs"))
		case submitted[idx]:
			errs = append(errs, flotilla.Errorf(fmt.Sprintf("events[%d].job", i), e.Job, backend.ErrDuplicate, "a second submitted event"))
		default:
			submitted[idx] = true
			if j := w.Jobs[idx].Job; j.Queue != e.Queue || j.JobSet != e.JobSet {
				errs = append(errs, flotilla.Errorf(fmt.Sprintf("events[%d].jobSet", i), e.Queue+"/"+e.JobSet, flotilla.ErrInconsistent,
					"the job is in %s/%s", j.Queue, j.JobSet))
			}
		}
	}
	for i, s := range w.Jobs {
		if s.Job != nil && !submitted[i] && newIdx[s.Job.ID] == i {
			errs = append(errs, flotilla.Errorf(fmt.Sprintf("jobs[%d].job.id", i), s.Job.ID, flotilla.ErrInconsistent,
				"a new job needs its submitted event in the write"))
		}
	}
	return newIdx, errs
}
