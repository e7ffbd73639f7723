package backend

import (
	"fmt"

	"github.com/flotilla-sched/flotilla"
)

// CheckFields reports the problems every backend refuses in the jobs and
// events of w, each on its own (pairs of them, such as a job without its
// submitted event, are the backend's to check): a missing job, one that
// does not validate against schema or names no job set, a negative grace
// period, deadline or runtime; an event without queue, job set or job,
// or of no valid type. Each problem is a *flotilla.FieldError at the
// write's path (jobs[2].runtime, events[0].queue). A backend adds what its
// storage cannot hold (time, attempt or text ranges).
func (w *Write) CheckFields(schema *flotilla.ResourceSchema) []error {
	var errs []error
	for i := range w.Jobs {
		s := &w.Jobs[i]
		p := func(f string) string { return fmt.Sprintf("jobs[%d].%s", i, f) }
		if s.Job == nil {
			errs = append(errs, flotilla.Errorf(fmt.Sprintf("jobs[%d]", i), "", flotilla.ErrRequired, "no job"))
			continue
		}
		if err := s.Job.Validate(schema); err != nil {
			errs = append(errs, err)
		}
		if s.Job.JobSet == "" {
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
	}
	return errs
}
