package executor

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/api"
	"github.com/flotilla-sched/flotilla/client"
)

// DefaultRenew is how often Run reports when Config.Renew is 0.
const DefaultRenew = 5 * time.Second

// Reporter is the service as an executor sees it: one call that takes
// the cluster's report and answers with leases and kill orders.
// *client.Client implements it over HTTP, Local in process. Report must
// not keep r.Jobs after it returns: the executor reuses that slice for
// its next report.
type Reporter interface {
	Report(ctx context.Context, cluster string, r api.Report) (api.ReportReply, error)
}

// Config describes one fake cluster.
type Config struct {
	// Cluster names the cluster; required.
	Cluster string
	// Nodes are the cluster's nodes.
	Nodes []api.Node
	// Service is where the executor reports; required.
	Service Reporter
	// Clock tells the time; required.
	Clock Clock
	// Renew is Run's reporting period; 0 means DefaultRenew.
	Renew time.Duration
}

// Clock tells the time (a service's server.Clock is one).
type Clock interface{ Now() time.Time }

// task is one job the executor holds: its lease's attempt, when it
// reaches its runtime, and its phase.
type task struct {
	id       string
	attempt  int
	ends     time.Time
	phase    api.JobPhase
	exitCode int
	reason   string
}

// Executor is a fake cluster: it "runs" each job it is leased for the
// job's runtime, and reports it running, then succeeded, or failed with
// its exit code when that is not 0. It stops the jobs the service tells it
// to kill, reporting them stopped. Every report renews the leases of the
// jobs it lists; an executor that stops reporting lets them expire.
//
// An Executor is not safe for concurrent use: one goroutine calls Step (or
// Run).
type Executor struct {
	cfg Config
	// tasks are the jobs the executor holds, one per job id, sorted by id
	// (the order of reports): a report reads them in one pass over dense
	// memory. merge is scratch for adding new ones.
	tasks, merge []task
	// jobs is the last report's Jobs, reused by the next.
	jobs []api.JobReport
	// registered: the service has the cluster's nodes.
	registered bool
	// Finished counts the jobs the executor reported ended, by phase.
	finished map[api.JobPhase]int
}

// New checks cfg and returns an executor holding no jobs.
func New(cfg Config) (*Executor, error) {
	var errs []error
	if cfg.Cluster == "" {
		errs = append(errs, errors.New("executor: a cluster name is required"))
	}
	if cfg.Service == nil {
		errs = append(errs, errors.New("executor: a service to report to is required"))
	}
	if cfg.Clock == nil {
		errs = append(errs, errors.New("executor: a clock is required"))
	}
	if cfg.Renew < 0 {
		errs = append(errs, fmt.Errorf("executor: renew period %s is negative", cfg.Renew))
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	if cfg.Renew == 0 {
		cfg.Renew = DefaultRenew
	}
	return &Executor{cfg: cfg, finished: map[api.JobPhase]int{}}, nil
}

// Held returns the ids of the jobs the executor holds, sorted.
func (e *Executor) Held() []string {
	ids := make([]string, len(e.tasks))
	for i := range e.tasks {
		ids[i] = e.tasks[i].id
	}
	return ids
}

// find returns the held task of job id, or nil.
func (e *Executor) find(id string) *task {
	i, ok := slices.BinarySearchFunc(e.tasks, id, func(t task, id string) int { return strings.Compare(t.id, id) })
	if !ok {
		return nil
	}
	return &e.tasks[i]
}

// forget drops a held job.
func (e *Executor) forget(id string) {
	if i, ok := slices.BinarySearchFunc(e.tasks, id, func(t task, id string) int { return strings.Compare(t.id, id) }); ok {
		e.tasks = slices.Delete(e.tasks, i, i+1)
	}
}

// hold takes new tasks, whose ids the executor does not hold, sorted by
// id: one merge with the held ones.
func (e *Executor) hold(add []task) {
	if len(add) == 0 {
		return
	}
	if len(e.tasks) == 0 || e.tasks[len(e.tasks)-1].id < add[0].id {
		e.tasks = append(e.tasks, add...)
		return
	}
	out := e.merge[:0]
	i, j := 0, 0
	for i < len(e.tasks) && j < len(add) {
		if e.tasks[i].id < add[j].id {
			out = append(out, e.tasks[i])
			i++
		} else {
			out = append(out, add[j])
			j++
		}
	}
	out = append(append(out, e.tasks[i:]...), add[j:]...)
	e.tasks, e.merge = out, e.tasks[:0]
}

// Finished counts the jobs reported ended in a phase (succeeded, failed,
// stopped).
func (e *Executor) Finished(p api.JobPhase) int { return e.finished[p] }

// Step makes one report at the clock's time: jobs whose runtime has
// passed are reported succeeded or failed, killed ones stopped, the
// others running; then it takes the reply's new leases (started at once)
// and kill orders. The nodes are sent with the first report and after any
// failed one. On error nothing the executor holds changes, so the next
// Step reports the same again.
func (e *Executor) Step(ctx context.Context) (api.ReportReply, error) {
	now := e.cfg.Clock.Now()
	// The report takes the spare Jobs slice (a retry below, which calls
	// Step again, finds none and makes its own) and gives it back at the
	// end.
	rep := api.Report{Jobs: slices.Grow(e.jobs[:0], len(e.tasks))}
	e.jobs = nil
	defer func() { clear(rep.Jobs); e.jobs = rep.Jobs[:0] }()
	if !e.registered {
		rep.Nodes = e.cfg.Nodes
		if rep.Nodes == nil {
			rep.Nodes = []api.Node{}
		}
	}
	ended := 0
	for i := range e.tasks {
		t := &e.tasks[i]
		if t.phase == api.PhaseRunning && !now.Before(t.ends) {
			t.phase = api.PhaseSucceeded
			if t.exitCode != 0 {
				t.phase = api.PhaseFailed
			}
		}
		rep.Jobs = append(rep.Jobs, api.JobReport{Job: t.id, Attempt: t.attempt, Phase: string(t.phase), ExitCode: exitCodeOf(t), Reason: t.reason})
		if t.phase != api.PhaseRunning && t.phase != api.PhasePending {
			ended++
		}
	}
	reply, err := e.cfg.Service.Report(ctx, e.cfg.Cluster, rep)
	if err != nil {
		e.registered = false
		// Jobs the service refuses as not its leases (it lost them, e.g.
		// a restart without a database) are stopped and forgotten, and
		// the report is made again without them.
		if dropped := e.dropRefused(err, rep.Jobs); dropped > 0 {
			return e.Step(ctx)
		}
		// A service that does not know the cluster (it restarted) gets
		// the nodes at once.
		if rep.Nodes == nil && RefusedAs(err, api.ErrUnknownCluster) {
			return e.Step(ctx)
		}
		return api.ReportReply{}, err
	}
	e.registered = true
	if ended > 0 {
		kept := e.tasks[:0]
		for _, t := range e.tasks {
			if t.phase != api.PhaseRunning && t.phase != api.PhasePending {
				e.finished[t.phase]++
				continue
			}
			kept = append(kept, t)
		}
		clear(e.tasks[len(kept):]) // drop the strings the ended ones held
		e.tasks = kept
	}
	var add []task
	for _, l := range reply.Leases {
		rt, _ := time.ParseDuration(orZero(l.Runtime))
		nt := task{id: l.Job, attempt: l.Attempt, ends: now.Add(rt), phase: api.PhaseRunning, exitCode: l.ExitCode}
		if t := e.find(l.Job); t != nil {
			if t.attempt != l.Attempt {
				*t = nt // a new lease of a job held at another attempt
			}
			continue // else a lease already held: the service re-sent it
		}
		add = append(add, nt)
	}
	slices.SortFunc(add, func(a, b task) int { return strings.Compare(a.id, b.id) })
	add = slices.CompactFunc(add, func(a, b task) bool { return a.id == b.id })
	e.hold(add)
	for _, k := range reply.Kill {
		if t := e.find(k.Job); t != nil && t.attempt == k.Attempt && (t.phase == api.PhaseRunning || t.phase == api.PhasePending) {
			t.phase, t.reason = api.PhaseStopped, "killed: "+k.Reason
		}
	}
	return reply, nil
}

// dropRefused forgets the jobs of a refused report that the service says
// do not exist or are not the cluster's, and returns how many it forgot.
func (e *Executor) dropRefused(err error, jobs []api.JobReport) int {
	dropped := 0
	for _, i := range RefusedJobs(err, jobs) {
		if t := e.find(jobs[i].Job); t != nil && t.attempt == jobs[i].Attempt {
			e.forget(jobs[i].Job)
			e.finished[api.PhaseStopped]++
			dropped++
		}
	}
	return dropped
}

// RefusedJobs returns the indexes in jobs of the entries a refused report
// was refused for because the service says the job does not exist
// (api.ErrNotFound) or is not the cluster's (api.ErrNotHeld): problems at
// jobs[i].job or jobs[i].attempt, from a service in process
// (*flotilla.FieldError) or over HTTP (*client.Error), told by the
// problem's text. An executor forgets those leases; any executor of the
// protocol may use it.
func RefusedJobs(err error, jobs []api.JobReport) []int {
	var fields []string
	for _, p := range problems(err) {
		if strings.HasPrefix(p.text, api.ErrNotFound.Error()) || strings.HasPrefix(p.text, api.ErrNotHeld.Error()) {
			fields = append(fields, p.field)
		}
	}
	var idx []int
	for _, f := range fields {
		var i int
		var rest string
		if n, _ := fmt.Sscanf(f, "jobs[%d].%s", &i, &rest); n != 2 || i < 0 || i >= len(jobs) || (rest != "job" && rest != "attempt") {
			continue
		}
		idx = append(idx, i)
	}
	return idx
}

// RefusedAs reports whether the service refused a report with class (one
// of api's refusals): errors.Is, or a problem's text, in process or over
// HTTP.
func RefusedAs(err, class error) bool {
	if errors.Is(err, class) {
		return true
	}
	for _, p := range problems(err) {
		if strings.HasPrefix(p.text, class.Error()) {
			return true
		}
	}
	return false
}

// problem is one problem of a refusal: the field it names and its error's
// text without the field.
type problem struct{ field, text string }

// problems lists a refusal's problems: over HTTP the error body's, in
// process each *flotilla.FieldError's (its wrapped error's text).
func problems(err error) []problem {
	var out []problem
	var ce *client.Error
	if errors.As(err, &ce) {
		for _, p := range ce.Body.Problems {
			out = append(out, problem{p.Field, p.Error})
		}
		return out
	}
	for _, p := range flotilla.Problems(err) {
		var fe *flotilla.FieldError
		if errors.As(p, &fe) && fe.Err != nil {
			out = append(out, problem{fe.Field, fe.Err.Error()})
		}
	}
	return out
}

func exitCodeOf(t *task) int {
	if t.phase == api.PhaseFailed {
		return t.exitCode
	}
	return 0
}

func orZero(s string) string {
	if strings.TrimSpace(s) == "" {
		return "0s"
	}
	return s
}

// Run calls Step every Renew period until ctx ends, and returns ctx's
// error. A failed report is retried at the next period; onError (if not
// nil) hears of it.
func (e *Executor) Run(ctx context.Context, onError func(error)) error {
	return Every(ctx, e.cfg.Renew, func(ctx context.Context) error {
		_, err := e.Step(ctx)
		return err
	}, onError)
}

// Every calls step every period until ctx ends, and returns ctx's error:
// the loop of an executor of the protocol. A step that takes longer than
// the period is abandoned (its context ends) and made again, so a stuck
// connection does not let leases expire; a failed step is retried at the
// next period, and onError (if not nil) hears of it.
func Every(ctx context.Context, period time.Duration, step func(context.Context) error, onError func(error)) error {
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		stepCtx, cancel := context.WithTimeout(ctx, period)
		err := step(stepCtx)
		cancel()
		if err != nil && ctx.Err() == nil && onError != nil {
			onError(err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}
