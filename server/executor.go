package server

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/api"
	"github.com/flotilla-sched/flotilla/backend"
	"github.com/flotilla-sched/flotilla/events"
	"github.com/flotilla-sched/flotilla/submit"
)

// ErrUnknownCluster: a report without nodes from a cluster that has never
// registered its nodes. It is the executor protocol's (api), so that an
// executor tells it without linking the service.
var ErrUnknownCluster = api.ErrUnknownCluster

// ErrNotHeld: a report names a job its cluster does not hold: a job
// never leased, a lease attempt that never was, or the live lease of
// another cluster (api.ErrNotHeld).
var ErrNotHeld = api.ErrNotHeld

// JobPhase is what an executor says about a job it holds: the executor
// protocol's (api.JobPhase).
type JobPhase = api.JobPhase

// The phases of an executor's job report (api's).
const (
	PhasePending   = api.PhasePending
	PhaseRunning   = api.PhaseRunning
	PhaseSucceeded = api.PhaseSucceeded
	PhaseFailed    = api.PhaseFailed
	PhaseReturned  = api.PhaseReturned
	PhaseStopped   = api.PhaseStopped
)

var phases = api.Phases

// knownPhase reports whether p is one of phases (a switch: a report
// checks every job it lists).
func knownPhase(p JobPhase) bool {
	switch p {
	case PhasePending, PhaseRunning, PhaseSucceeded, PhaseFailed, PhaseReturned, PhaseStopped:
		return true
	}
	return false
}

// JobReport is one job in an executor's report.
type JobReport struct {
	Job string
	// Attempt is the lease's attempt number, as the lease gave it.
	Attempt  int
	Phase    JobPhase
	ExitCode int
	// Reason is the executor's sentence, kept on the event.
	Reason string
	// FailureReason classifies a failed run (phase failed or returned):
	// one of api.ReportedFailureReasons (oom, evicted, deadline), or ""
	// for none. A queue's retry policy matches it; on a returned job it
	// stands for lease-returned.
	FailureReason string
}

// Report is what an executor tells the service about its cluster. It
// lists every job the executor holds; leases not listed are not renewed
// (they expire after the lease timeout unless a later report lists them).
type Report struct {
	Cluster string
	// Pool is the cluster's pool (`executor -pool`; submit.CheckPool). A
	// report with nodes puts the cluster in it ("" is
	// backend.DefaultPool); one without nodes keeps the cluster's pool
	// when Pool is "", and moves the cluster when it names another.
	Pool string
	// Nodes are the cluster's nodes (Total in the service's schema; Cluster
	// empty or equal to Cluster). Nil keeps the nodes last reported (the
	// cluster must have reported some before); an empty non-nil slice says
	// the cluster has no nodes.
	Nodes []flotilla.Node
	Jobs  []JobReport
}

// Lease hands a job to an executor.
type Lease struct {
	// Job is the job as submitted; read it, do not modify it.
	Job     *flotilla.Job
	Attempt int
	Node    string
	// TerminationGracePeriod, ActiveDeadline, Runtime and ExitCode are the
	// job's, as submitted and settled by the submission rules.
	TerminationGracePeriod, ActiveDeadline, Runtime time.Duration
	ExitCode                                        int
}

// Kill tells an executor to stop a job.
type Kill struct {
	Job     string
	Attempt int
	// Reason says why: cancellation, preemption, a lease that ended, a
	// deadline.
	Reason string
	// GracePeriod is how long the job has to stop.
	GracePeriod time.Duration
}

// ReportReply is the service's answer to a report.
type ReportReply struct {
	// Leases are the cluster's leases the report did not list: new ones,
	// and ones whose earlier delivery the executor missed.
	Leases []Lease
	// Kill are jobs the report listed that the executor must stop: their
	// cancellation was requested, or their lease is no longer live
	// (preempted, expired, failed on a deadline, or leased again since).
	Kill []Kill
	// Cordoned: an operator cordoned the cluster; it gets no new lease
	// until it is uncordoned (its running jobs go on).
	Cordoned bool
}

// Report takes an executor's report: it stores the cluster's nodes when
// they changed, renews the leases listed, turns the phases reported into
// events (running, succeeded, failed, lease-returned, cancelled), and
// answers with the cluster's leases the report did not list and the jobs
// to kill. The events are one write.
//
// Bad input changes nothing and is reported whole, each problem a
// *flotilla.FieldError: no cluster name, a cluster that never reported
// nodes sending none (ErrUnknownCluster), invalid nodes, a job listed
// twice, an unknown phase, a job that does not exist (backend.ErrNotFound)
// or that the cluster does not hold (ErrNotHeld), an exit code that
// contradicts the phase. A report about a lease that has ended (a stale
// lease) is not an error: nothing changes for that job and the reply
// tells the executor to kill it.
//
// The jobs listed that have ended are no longer in memory: their records
// are read from the backend outside the service's lock, all in one call
// when the backend implements backend.JobLookup, and the report is then
// planned again under the lock (see endedReads).
func (s *Server) Report(ctx context.Context, r *Report) (*ReportReply, error) {
	if r == nil {
		return nil, flotilla.Errorf("report", "<nil>", flotilla.ErrRequired, "")
	}
	reply, ended, err := s.report(ctx, r, nil)
	if ended == nil {
		return reply, err
	}
	if err := ended.fetch(ctx, s.st.be); err != nil {
		return nil, err
	}
	reply, _, err = s.report(ctx, r, ended)
	return reply, err
}

// report is state.report under the lock.
func (s *Server) report(ctx context.Context, r *Report, ended *endedReads) (*ReportReply, *endedReads, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.st.report(ctx, r, ended)
}

// report is Report's work under the lock. With ended nil, when the report
// lists jobs that are not in memory it changes nothing and returns their
// ids to read (ended, unread); with ended read, it uses those records.
func (s *state) report(ctx context.Context, r *Report, ended *endedReads) (*ReportReply, *endedReads, error) {
	now := s.clock.Now()
	if err := s.fresh(ctx); err != nil {
		return nil, nil, err
	}
	c := s.clusters[r.Cluster]
	if err := checkCluster(r, c); err != nil {
		return nil, nil, err
	}
	// The nodes' problems and the jobs' are reported together.
	nodes, nodesErr := checkNodes(r, c, s.cat.Schema)
	if r.Pool != "" {
		nodesErr = errors.Join(nodesErr, submit.CheckPool("pool", r.Pool))
	}
	pool := poolOf(r.Pool)
	if c != nil && r.Nodes == nil && r.Pool == "" {
		pool = c.pool // a report without nodes or pool keeps the cluster's
	}
	if nodes == nil && nodesErr == nil && c != nil && c.pool != pool {
		// A cluster moving to another pool: its nodes are stored again
		// with the pool.
		nodes = append([]flotilla.Node{}, c.nodes...)
	}
	// The plan lives on the stack, and the report it holds with it.
	var p reportPlan
	p.start(s, c, r, now, ended)
	defer p.release()
	err := p.plan(ctx, r)
	if p.ended != nil && !p.ended.read {
		return nil, p.ended, nil
	}
	if err := errors.Join(nodesErr, err); err != nil {
		return nil, nil, err
	}
	reply, err := p.apply(ctx, r, nodes, pool)
	return reply, nil, err
}

// checkCluster validates a report's cluster, c (nil when it is new): a
// problem there makes the rest of the report meaningless.
func checkCluster(r *Report, c *cluster) error {
	if r.Cluster == "" {
		return flotilla.Errorf("cluster", "", flotilla.ErrRequired, "")
	}
	if err := checkName("cluster", "cluster", r.Cluster); err != nil {
		return err
	}
	if r.Nodes == nil && (c == nil || c.reported.IsZero() && c.nodes == nil) {
		return flotilla.Errorf("cluster", r.Cluster, ErrUnknownCluster, "report its nodes first")
	}
	return nil
}

// checkNodes validates a report's nodes (its cluster, c, checked) against
// the service's schema, returning the nodes to store (nil when they are
// unchanged).
func checkNodes(r *Report, c *cluster, schema *flotilla.ResourceSchema) ([]flotilla.Node, error) {
	var errs []error
	if r.Nodes == nil {
		return nil, nil
	}
	names := make(map[string]int, len(r.Nodes))
	for i := range r.Nodes {
		n := &r.Nodes[i]
		p := fmt.Sprintf("nodes[%d]", i)
		if n.Cluster != "" && n.Cluster != r.Cluster {
			errs = append(errs, flotilla.Errorf(p+".cluster", n.Cluster, flotilla.ErrInconsistent, "the report is from cluster %q", r.Cluster))
		}
		if k, dup := names[n.Name]; dup {
			errs = append(errs, flotilla.Errorf(p+".name", n.Name, flotilla.ErrDuplicate, "also nodes[%d]", k))
		}
		names[n.Name] = i
		if err := nodeNames(p, n); err != nil {
			errs = append(errs, err)
		}
		if err := n.Validate(schema); err != nil {
			// Node.Validate names fields `node "n1".total`; the report's
			// path replaces that prefix.
			prefix := fmt.Sprintf("node %q", n.Name)
			errs = append(errs, flotilla.RenameFields(err, func(f string) string {
				if rest, ok := strings.CutPrefix(f, prefix); ok {
					return p + rest
				}
				return p + "." + f
			}))
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	if c != nil && sameNodes(c.nodes, r.Nodes) {
		return nil, nil
	}
	out := make([]flotilla.Node, len(r.Nodes))
	for i, n := range r.Nodes {
		n.Cluster = r.Cluster
		n.Labels = cloneMap(n.Labels)
		n.Taints = slices.Clone(n.Taints)
		n.Total = slices.Clone(n.Total)
		out[i] = n
	}
	return out, nil
}

// nodeNames checks a reported node's name, labels and taints against the
// limits of submit's names.go (path p).
func nodeNames(p string, n *flotilla.Node) error {
	errs := []error{
		submit.CheckLength(p+".name", "node name", n.Name, submit.MaxNameBytes),
		submit.CheckLabels(p+".labels", n.Labels),
	}
	for i, t := range n.Taints {
		tp := p + ".taints[" + strconv.Itoa(i) + "]"
		errs = append(errs, submit.CheckLabelKey(tp+".key", t.Key),
			submit.CheckLength(tp+".value", "taint value", t.Value, submit.MaxLabelValueBytes))
	}
	return errors.Join(errs...)
}

// leaseKey names one lease of a job.
type leaseKey struct {
	job     string
	attempt int
}

// reportPlan is the executor protocol's work on one report: what the
// report will change, planned (plan, planJob) against the service's state
// s, then stored and applied (apply) and answered (reply). It lives on
// its caller's stack; the report is passed to its methods rather than
// kept, so that a caller's Report need not escape to the heap.
type reportPlan struct {
	s *state
	// c is the report's cluster (nil when it never reported), cluster its
	// name, now the report's time.
	c       *cluster
	cluster string
	now     time.Time
	events  []events.Event
	// renew counts the entries listing a live lease of the cluster as
	// pending or running: the leases the report renews (marked with
	// stamp), which the reply renews in its pass over the cluster's live
	// jobs.
	renew int
	// check are the positions of the other entries listed as pending or
	// running (stale leases, jobs that ended): the reply tells the
	// executor to kill them.
	check []int
	// grace holds the grace period of listed jobs that are no longer in
	// memory (they ended), for their kill orders.
	grace map[string]time.Duration
	// stamp marks the live leases the report lists (lease.listedIn).
	stamp uint64
	// ended are the records of listed jobs that are not in memory; nil
	// while there is none. Unread, it collects their ids.
	ended *endedReads
}

// start begins the plan of report r from cluster c at now over s; ended
// are the records of the jobs it lists that are not in memory, read (nil
// before they are). The plan uses the service's buffers until release.
func (p *reportPlan) start(s *state, c *cluster, r *Report, now time.Time, ended *endedReads) {
	s.reports++
	*p = reportPlan{s: s, c: c, cluster: r.Cluster, now: now, stamp: s.reports, check: s.scratch.check[:0], ended: ended}
}

// release gives the plan's buffers back to the service.
func (p *reportPlan) release() {
	p.s.scratch.check = p.check[:0]
}

// endedReads are the records of the jobs a report lists that were not in
// memory when it was first planned (they had ended, or never were), read
// from the backend between two holds of the service's lock: the first
// plan collects their ids and changes nothing; the second, under the lock
// again, uses the records. A terminal record never changes, so it is
// still right; an id that named no job still names none while no write
// has been applied since the ids were collected (changed). Any other job
// that is not in memory at the second plan (one that ended meanwhile) is
// read on its own.
type endedReads struct {
	// at are the report's positions of the jobs, increasing; ids their
	// ids; recs their records once read (the zero record for none).
	at   []int
	ids  []string
	recs []backend.Record
	read bool
	// next is the second plan's position in at.
	next int
	// changed is the service's changed channel when the ids were
	// collected: it is replaced by every applied write.
	changed chan struct{}
}

// endedLen is how many of the listed jobs were not in memory when the
// report was first planned.
func (p *reportPlan) endedLen() int {
	if p.ended == nil {
		return 0
	}
	return len(p.ended.ids)
}

// fetch reads the records from be, outside the service's lock: in one
// call when the backend implements backend.JobLookup, else one by one
// (backend.JobsByID).
func (e *endedReads) fetch(ctx context.Context, be backend.Backend) error {
	e.recs = make([]backend.Record, len(e.ids))
	if err := backend.JobsByID(ctx, be, e.ids, e.recs); err != nil {
		return err
	}
	e.read = true
	return nil
}

// endedRecord returns the record of the report's i-th job, id, which is
// not in memory: from p.ended once read, else from the backend. Before
// p.ended is read it collects id and returns later.
func (p *reportPlan) endedRecord(ctx context.Context, i int, id string) (rec backend.Record, later bool, err error) {
	s, e := p.s, p.ended
	if e == nil {
		e = &endedReads{changed: s.changed}
		p.ended = e
	}
	if !e.read {
		e.at, e.ids = append(e.at, i), append(e.ids, id)
		return rec, true, nil
	}
	for e.next < len(e.at) && e.at[e.next] < i {
		e.next++
	}
	if e.next < len(e.at) && e.at[e.next] == i {
		rec = e.recs[e.next]
		switch {
		case rec.Spec.Job != nil && rec.State.State.Terminal():
			return rec, false, nil
		case rec.Spec.Job == nil && e.changed == s.changed:
			return rec, false, flotilla.Errorf(jobField(i, "job"), id, backend.ErrNotFound, "no such job")
		}
	}
	rec, err = s.be.Job(ctx, id)
	if errors.Is(err, backend.ErrNotFound) {
		return rec, false, flotilla.Errorf(jobField(i, "job"), id, backend.ErrNotFound, "no such job")
	}
	return rec, false, err
}

// jobField is the path of a report's i-th job's field f.
func jobField(i int, f string) string { return "jobs[" + strconv.Itoa(i) + "]." + f }

// plan checks the report's jobs and plans its events. It marks the live
// leases listed with the plan's stamp, and finds jobs listed twice by
// those marks (a map only for jobs without a live lease). With p.ended
// nil (the records of the jobs not in memory not read), when there are
// such jobs, it leaves p.ended listing them to read, and returns no
// error.
func (p *reportPlan) plan(ctx context.Context, r *Report) error {
	s, c := p.s, p.c
	var errs []error
	// A job may be listed at two attempts (the old one stopping, the new
	// one leased again to the same cluster), not twice at one. Live leases
	// are marked with the plan's stamp; a map holds only the others.
	var seen map[leaseKey]int
	// The report lists its jobs in id order (an executor's reports do),
	// and most are live here: they are matched against the cluster's
	// sorted live jobs in one pass, k the position there, which moves
	// forward a few places at most for a job; the others are looked up
	// by id, and when one is sorted in here the pass goes on from its
	// place (a report listing its jobs in a few runs each in id order
	// looks up the first of each run, and of each stretch of other
	// jobs).
	var ids []string
	var live []*job
	var marks []leaseMark
	if c != nil {
		// Sorting in the leases made since the last sort costs a pass
		// over the cluster's live list: done once they are an eighth of
		// it, so that most of a report matches in the one pass below and
		// the rest (the newest leases) are looked up by id.
		if unsorted := len(c.live) - c.sorted; unsorted > 64 && unsorted > c.sorted/8 {
			c.sortLive()
		}
		ids, live, marks = c.ids[:c.sorted], c.live[:c.sorted], c.marks[:c.sorted]
	}
	k := 0
	for i := range r.Jobs {
		jr := &r.Jobs[i]
		if p.ended != nil && !p.ended.read {
			// The report is planned again once the jobs not in memory are
			// read: from the first on, only they are collected.
			if jr.Job != "" && s.jobs.get(jr.Job) == nil {
				p.ended.at, p.ended.ids = append(p.ended.at, i), append(p.ended.ids, jr.Job)
			}
			continue
		}
		if jr.Job == "" {
			errs = append(errs, flotilla.Errorf(jobField(i, "job"), "", flotilla.ErrRequired, ""))
			continue
		}
		if jr.Attempt < 1 {
			errs = append(errs, flotilla.Errorf(jobField(i, "attempt"), strconv.Itoa(jr.Attempt), flotilla.ErrOutOfRange, "lease attempts start at 1"))
			continue
		}
		var j *job
		var m *leaseMark // j's, when it is live
		here := false    // j is live here (found in c's list)
		for n := 0; n < maxSkip && k < len(ids) && ids[k] < jr.Job; n++ {
			k++
		}
		if k < len(ids) && ids[k] == jr.Job && live[k] != nil {
			// Live here: its mark is at the same place.
			j, m, here = live[k], &marks[k], true
			k++
		} else {
			// Further on, before k, not sorted in here, or a hole that
			// keeps the id of a lease that ended.
			j = s.jobs.get(jr.Job)
			if l := lease0(j); l != nil && l.cluster == c && l.sorted {
				at := c.place(j)
				m, here, k = &marks[at], true, at+1
			} else if l != nil {
				m = l.cluster.mark(j)
			}
		}
		if m != nil && jr.Attempt == int(j.attempts) {
			if m.listedIn == p.stamp {
				errs = append(errs, flotilla.Errorf(jobField(i, "job"), jr.Job, flotilla.ErrDuplicate, "also jobs[%d]", m.listedAt))
				continue
			}
			m.listedIn, m.listedAt = p.stamp, int32(i)
			if jr.Phase == PhaseRunning && j.state == events.RunningState && (here || j.lease.cluster == c) {
				// Most of a report: a job still running here. planJob
				// would only renew it.
				p.renew++
				continue
			}
		} else {
			k := leaseKey{jr.Job, jr.Attempt}
			if first, dup := seen[k]; dup {
				errs = append(errs, flotilla.Errorf(jobField(i, "job"), jr.Job, flotilla.ErrDuplicate, "also jobs[%d]", first))
				continue
			}
			if seen == nil {
				seen = make(map[leaseKey]int, p.endedLen())
			}
			seen[k] = i
		}
		if !knownPhase(jr.Phase) {
			errs = append(errs, flotilla.Errorf(jobField(i, "phase"), string(jr.Phase), flotilla.ErrUnknownName, "want one of %v", phases))
			continue
		}
		switch {
		case jr.Phase == PhaseSucceeded && jr.ExitCode != 0:
			errs = append(errs, flotilla.Errorf(jobField(i, "exitCode"), strconv.Itoa(jr.ExitCode), flotilla.ErrInconsistent, "a job that succeeded exits 0"))
			continue
		case jr.Phase == PhaseFailed && jr.ExitCode == 0:
			errs = append(errs, flotilla.Errorf(jobField(i, "exitCode"), "0", flotilla.ErrInconsistent, "a job that failed exits non-zero"))
			continue
		case jr.FailureReason != "" && jr.Phase != PhaseFailed && jr.Phase != PhaseReturned:
			errs = append(errs, flotilla.Errorf(jobField(i, "failureReason"), jr.FailureReason, flotilla.ErrInconsistent, "only a failed or returned job has a failure reason"))
			continue
		case jr.FailureReason != "" && !api.ReportedFailureReason(jr.FailureReason):
			errs = append(errs, flotilla.Errorf(jobField(i, "failureReason"), jr.FailureReason, flotilla.ErrUnknownName, "want one of %v", api.ReportedFailureReasons))
			continue
		}
		if err := p.planJob(ctx, i, jr, j); err != nil {
			errs = append(errs, err)
		}
	}
	if p.ended != nil && !p.ended.read {
		return nil // planned again once the ended jobs are read
	}
	return errors.Join(errs...)
}

// maxSkip is how many places a report's pass over its cluster's sorted
// live jobs moves forward for one job before it looks the job up by id.
const maxSkip = 16

// lease0 is j's live lease, nil when j is nil or has none.
func lease0(j *job) *lease {
	if j == nil {
		return nil
	}
	return j.lease
}

// planJob plans the i-th job of the report, j (nil when it has ended).
func (p *reportPlan) planJob(ctx context.Context, i int, jr *JobReport, j *job) error {
	c, clusterName, now := p.c, p.cluster, p.now
	attempts := 0
	if j != nil {
		attempts = int(j.attempts)
	} else {
		rec, later, err := p.endedRecord(ctx, i, jr.Job)
		if later || err != nil {
			return err
		}
		if p.grace == nil {
			p.grace = make(map[string]time.Duration, p.endedLen())
		}
		attempts = rec.State.Attempts
		p.grace[jr.Job] = rec.Spec.TerminationGracePeriod
	}
	if jr.Attempt < 1 || jr.Attempt > attempts {
		return flotilla.Errorf(jobField(i, "attempt"), strconv.Itoa(jr.Attempt), ErrNotHeld, "job %q has had %d leases", jr.Job, attempts)
	}
	live := j != nil && j.state.Live() && jr.Attempt == int(j.attempts)
	if live && j.lease.cluster != c {
		return flotilla.Errorf(jobField(i, "job"), jr.Job, ErrNotHeld, "its lease %d is cluster %q's", jr.Attempt, j.lease.cluster.name)
	}
	if !live {
		// A stale lease: the reply tells the executor to stop it.
		if jr.Phase == PhasePending || jr.Phase == PhaseRunning {
			p.check = append(p.check, i)
		}
		return nil
	}
	sj := j.spec
	ev := func(t events.Type, reason string) events.Event {
		return events.Event{Time: now, Queue: sj.Queue, JobSet: sj.JobSet, Job: sj.ID, Type: t,
			Cluster: clusterName, Node: j.lease.node, Attempt: int(j.attempts), Reason: reason}
	}
	switch jr.Phase {
	case PhasePending:
		p.renew++
	case PhaseRunning:
		p.renew++
		if j.state == events.LeasedState {
			p.events = append(p.events, ev(events.Running, jr.Reason))
		}
	case PhaseSucceeded:
		if j.state == events.LeasedState {
			p.events = append(p.events, ev(events.Running, ""))
		}
		p.events = append(p.events, ev(events.Succeeded, jr.Reason))
	case PhaseFailed:
		if j.state == events.LeasedState {
			p.events = append(p.events, ev(events.Running, ""))
		}
		what := strings.TrimSpace(fmt.Sprintf("exit code %d %s", jr.ExitCode, jr.Reason))
		p.events = append(p.events, p.s.failedRun(j, ev(events.Failed, ""),
			events.Failure{ExitCode: jr.ExitCode, Reason: events.FailureReason(jr.FailureReason)}, what))
	case PhaseReturned, PhaseStopped:
		p.events = append(p.events, p.s.leaseEnd(j, events.LeaseReturned, now, events.FailureReason(jr.FailureReason),
			strings.TrimSpace(fmt.Sprintf("returned by cluster %s %s", clusterName, jr.Reason))))
	}
	return nil
}

// leaseEnd is job.leaseEnd under the job's queue's retry policy
// (leaseEndPolicy); why is the failure reason the executor gave, ""
// for none.
func (s *state) leaseEnd(j *job, t events.Type, now time.Time, why events.FailureReason, reason string) events.Event {
	return s.leaseEndPolicy(j, j.leaseEnd(t, now, s.cfg.MaxAttempts, reason), why, reason)
}

// leaseEnd is the event that ends a live lease that was not renewed
// (lease-expired) or was given back (lease-returned): cancelled for a job
// whose cancellation was requested; otherwise the job is queued again,
// or fails when it has had maxAttempts leases (Config.MaxAttempts).
func (j *job) leaseEnd(t events.Type, now time.Time, maxAttempts int, reason string) events.Event {
	sj := j.spec
	e := events.Event{Time: now, Queue: sj.Queue, JobSet: sj.JobSet, Job: sj.ID, Type: t,
		Cluster: j.lease.cluster.name, Node: j.lease.node, Attempt: int(j.attempts), Reason: reason}
	switch {
	case j.cancelRequested:
		e.Type, e.Reason = events.Cancelled, "cancelled: "+reason
	case int(j.attempts) < maxAttempts:
		e.Requeued = true
	default:
		e.Reason = fmt.Sprintf("%s; attempts exhausted (%d of %d)", reason, j.attempts, maxAttempts)
	}
	return e
}

// apply stores and applies the plan and the report's nodes (nil: the
// nodes are unchanged) with the cluster's pool, and answers the report.
func (p *reportPlan) apply(ctx context.Context, r *Report, nodes []flotilla.Node, pool string) (*ReportReply, error) {
	s, now := p.s, p.now
	// The events first: a report retried after a failure to store the
	// nodes plans no event twice (the phases are applied already).
	w := &backend.Write{Events: p.events}
	s.followGangs(w, now)
	if _, err := s.commit(ctx, w); err != nil {
		return nil, err
	}
	if nodes != nil {
		stored := pool
		if stored == backend.DefaultPool {
			stored = ""
		}
		if err := s.be.PutExecutor(ctx, backend.Executor{Cluster: p.cluster, Nodes: nodes, Reported: now, Pool: stored}); err != nil {
			return nil, err
		}
		p.c = s.clusters.get(p.cluster)
		p.c.setNodes(s.nodes, nodes)
		s.setPool(p.c, pool)
		s.queued.fit.setNodes(s.knownNodes())
	}
	p.c.reported = now
	return p.reply(r), nil
}

// reply renews the leases the report (of the plan's stamp) lists as
// pending or running that are still live, and answers the report: the
// cluster's leases the report did not list, and the jobs to kill: those
// listed as pending or running whose lease is no longer live (after the
// report's own events), and those whose cancellation was requested. It
// renews and finds the leases to send in one pass over the cluster's live
// jobs; the entries it then checks for kills are the stale ones the plan
// collected (p.check), or every pending or running entry when a lease the
// report renews ended in its write (another gang member's event).
func (p *reportPlan) reply(r *Report) *ReportReply {
	s, c := p.s, p.c
	stamp, now := p.stamp, p.now
	out := &ReportReply{Cordoned: c.cordoned}
	renewed := 0
	for i, j := range c.live {
		if j == nil {
			continue
		}
		m := &c.marks[i]
		if m.listedIn == stamp {
			if ph := r.Jobs[m.listedAt].Phase; ph == PhasePending || ph == PhaseRunning {
				m.renewed = now
				renewed++
			}
		}
		switch {
		case j.cancelRequested:
			out.Kill = append(out.Kill, Kill{Job: j.id(), Attempt: int(j.attempts), GracePeriod: j.run.grace,
				Reason: "cancellation requested"})
		case m.listedIn != stamp && j.state == events.LeasedState:
			r := j.run
			out.Leases = append(out.Leases, Lease{Job: j.spec, Attempt: int(j.attempts), Node: j.lease.node,
				TerminationGracePeriod: r.grace, ActiveDeadline: r.deadline,
				Runtime: r.runtime, ExitCode: r.exitCode})
		}
	}
	kill := func(i int) {
		jr := &r.Jobs[i]
		if jr.Phase != PhasePending && jr.Phase != PhaseRunning {
			return
		}
		j := s.jobs.get(jr.Job)
		if j != nil && j.lease != nil && j.lease.cluster == c && int(j.attempts) == jr.Attempt {
			return // live here: renewed
		}
		g := p.grace[jr.Job]
		if j != nil {
			g = j.run.grace
		}
		out.Kill = append(out.Kill, Kill{Job: jr.Job, Attempt: jr.Attempt, GracePeriod: g,
			Reason: fmt.Sprintf("lease %d is no longer live", jr.Attempt)})
	}
	if renewed == p.renew {
		for _, i := range p.check {
			kill(i)
		}
	} else {
		for i := range r.Jobs {
			kill(i)
		}
	}
	slices.SortFunc(out.Leases, func(a, b Lease) int { return strings.Compare(a.Job.ID, b.Job.ID) })
	slices.SortFunc(out.Kill, func(a, b Kill) int { return strings.Compare(a.Job, b.Job) })
	return out
}

// sameNodes reports whether two node lists are equal.
func sameNodes(a, b []flotilla.Node) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := &a[i], &b[i]
		if x.Name != y.Name || x.Unschedulable != y.Unschedulable || !slices.Equal(x.Total, y.Total) ||
			!slices.Equal(x.Taints, y.Taints) || len(x.Labels) != len(y.Labels) {
			return false
		}
		for k, v := range x.Labels {
			if w, ok := y.Labels[k]; !ok || w != v {
				return false
			}
		}
	}
	return true
}

func cloneMap(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
