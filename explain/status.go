package explain

import (
	"fmt"
	"io"

	"github.com/flotilla-sched/flotilla/api"
	"github.com/flotilla-sched/flotilla/httpapi"
	"github.com/flotilla-sched/flotilla/internal/safetext"
	"github.com/flotilla-sched/flotilla/priority"
)

// WriteStatus prints `flotilla status -v`: for each job, the long form
// `flotilla explain` prints for a scenario's job, from what the service
// knows (its status, the last cycle's reason and shares, its place in its
// queue now), then, with flux priorities, the jobs' breakdowns as
// `flotilla priority` prints them.
func WriteStatus(w io.Writer, sts []api.JobStatus) error {
	var flux []priority.Breakdown
	for i, s := range sts {
		if i > 0 {
			if _, err := fmt.Fprintln(w); err != nil {
				return err
			}
		}
		ex := FromStatus(s)
		if err := ex.WriteText(w); err != nil {
			return err
		}
		if s.Explain != nil && s.Explain.Flux != nil {
			flux = append(flux, httpapi.PriorityBreakdown(s.Job, s.Explain.Flux))
		}
	}
	if len(flux) == 0 {
		return nil
	}
	if _, err := fmt.Fprintln(w, "\nflux priorities:"); err != nil {
		return err
	}
	return priority.WriteJobsTable(w, flux)
}

// FromStatus is a service job's status in explain's form.
func FromStatus(s api.JobStatus) *Explanation {
	n := safetext.Name
	header := fmt.Sprintf("job %s: %s, %d attempt(s)", n(s.Job), s.State, s.Attempts)
	if s.Cluster != "" {
		header += ", on " + n(s.Cluster) + "/" + n(s.Node)
	}
	if s.CancelRequested {
		header += " (cancel requested)"
	}
	if r := s.RetryText(); r != "" {
		header += ", retry " + r
	}
	ex := &Explanation{Job: s.Job, Queue: s.Queue, JobSet: s.JobSet, State: s.State, Summary: s.Reason, header: header}
	e := s.Explain
	if e == nil {
		return ex
	}
	ex.Priority = Priority{Class: e.Priority.Class, ClassPriority: e.Priority.ClassPriority, Priority: e.Priority.Priority}
	if p := e.Place; p != nil {
		ex.Place = &Place{Position: p.Position, Queued: p.Queued, Ahead: p.Ahead, AheadRequests: p.AheadRequests, Partial: p.Partial, GangIncomplete: p.GangIncomplete}
	}
	if q := e.QueueShare; q != nil {
		ex.QueueShare = &QueueShare{Share: q.Share, FairShare: q.FairShare, AdjustedFairShare: q.AdjustedFairShare,
			Demand: q.Demand, Running: q.Running, Queued: q.Queued, Pool: q.Pool}
	}
	ex.Unscheduled = e.Unscheduled
	return ex
}
