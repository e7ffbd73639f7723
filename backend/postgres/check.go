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
// every problem as a FieldError.
func (b *Backend) checkFields(w *backend.Write) []error {
	var errs []error
	text := func(field, s string) {
		if err := textProblem(field, s); err != nil {
			errs = append(errs, err)
		}
	}
	for i := range w.Jobs {
		s := &w.Jobs[i]
		p := func(f string) string { return fmt.Sprintf("jobs[%d].%s", i, f) }
		if s.Job == nil {
			errs = append(errs, flotilla.Errorf(fmt.Sprintf("jobs[%d]", i), "", flotilla.ErrRequired, "no job"))
			continue
		}
		j := s.Job
		if err := j.Validate(b.schema); err != nil {
			errs = append(errs, err)
		}
		if j.JobSet == "" {
			errs = append(errs, flotilla.Errorf(p("job.jobSet"), "", flotilla.ErrRequired, ""))
		}
		if s.TerminationGracePeriod < 0 {
			errs = append(errs, flotilla.Errorf(p("terminationGracePeriod"), s.TerminationGracePeriod.String(), flotilla.ErrNegative, ""))
		}
		if s.ActiveDeadline < 0 {
			errs = append(errs, flotilla.Errorf(p("activeDeadline"), s.ActiveDeadline.String(), flotilla.ErrNegative, ""))
		}
		if s.Runtime < 0 {
			errs = append(errs, flotilla.Errorf(p("runtime"), s.Runtime.String(), flotilla.ErrNegative, ""))
		}
		if err := timeProblem(p("job.submitTime"), j.SubmitTime); err != nil {
			errs = append(errs, err)
		}
		text(p("job.id"), j.ID)
		text(p("job.queue"), j.Queue)
		text(p("job.jobSet"), j.JobSet)
		text(p("job.priorityClass"), j.PriorityClass)
		text(p("job.gang.id"), j.Gang.ID)
		text(p("job.gang.nodeUniformityLabel"), j.Gang.NodeUniformityLabel)
		text(p("clientId"), s.ClientID)
		text(p("principal"), s.Principal)
		for k, v := range j.NodeSelector {
			text(p("job.nodeSelector"), k)
			text(p("job.nodeSelector."+k), v)
		}
		for k, t := range j.Tolerations {
			tp := p(fmt.Sprintf("job.tolerations[%d]", k))
			text(tp+".key", t.Key)
			text(tp+".value", t.Value)
			text(tp+".operator", string(t.Operator))
			text(tp+".effect", string(t.Effect))
		}
		for k, c := range j.AvoidClusters {
			text(p(fmt.Sprintf("job.avoidClusters[%d]", k)), c)
		}
	}
	for i := range w.Events {
		e := &w.Events[i]
		p := func(f string) string { return fmt.Sprintf("events[%d].%s", i, f) }
		if e.Queue == "" {
			errs = append(errs, flotilla.Errorf(p("queue"), "", flotilla.ErrRequired, ""))
		}
		if e.JobSet == "" {
			errs = append(errs, flotilla.Errorf(p("jobSet"), "", flotilla.ErrRequired, ""))
		}
		if e.Job == "" {
			errs = append(errs, flotilla.Errorf(p("job"), "", flotilla.ErrRequired, ""))
		}
		if !e.Type.Valid() {
			errs = append(errs, flotilla.Errorf(p("type"), e.Type.String(), flotilla.ErrMalformed, "not an event type"))
		}
		if err := timeProblem(p("time"), e.Time); err != nil {
			errs = append(errs, err)
		}
		if e.Attempt < 0 || e.Attempt > math.MaxInt32 {
			errs = append(errs, flotilla.Errorf(p("attempt"), strconv.Itoa(e.Attempt), flotilla.ErrOutOfRange, "want 0 to %d", math.MaxInt32))
		}
		text(p("queue"), e.Queue)
		text(p("jobSet"), e.JobSet)
		text(p("job"), e.Job)
		text(p("cluster"), e.Cluster)
		text(p("node"), e.Node)
		text(p("reason"), e.Reason)
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
