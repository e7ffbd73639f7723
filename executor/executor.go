package executor

import (
	"cmp"
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
	// Pool is the cluster's pool (`executor -pool`), sent with every
	// report; "" is the default pool.
	Pool string
	// Service is where the executor reports; required.
	Service Reporter
	// Clock tells the time; required.
	Clock Clock
	// Renew is Run's reporting period; 0 means DefaultRenew.
	Renew time.Duration
	// LeaseTimeout is the service's lease timeout, which bounds how long
	// Run lets a report take (Loop); 0 means api.DefaultLeaseTimeout.
	LeaseTimeout time.Duration
	// OnCordon, when set, hears when the service's answer says the
	// cluster was cordoned (true: no new leases until it is uncordoned)
	// or uncordoned (false), once per change (the first answer that says
	// cordoned is a change).
	OnCordon func(cordoned bool)
	// FailureReason, when set, gives the failure reason a job that fails
	// with exitCode is reported with (api.ReportedFailureReasons, or ""
	// for none), so that a test makes a job fail evicted or on its
	// deadline; nil is DefaultFailureReason.
	FailureReason func(job string, exitCode int) string
}

// OOMExitCode is the exit code of a process killed by SIGKILL (128 + 9),
// which a container killed for its memory exits with.
const OOMExitCode = 137

// DefaultFailureReason is the failure reason the fake executor reports a
// failed job with: oom for OOMExitCode, none for another code.
func DefaultFailureReason(job string, exitCode int) string {
	if exitCode == OOMExitCode {
		return api.FailureOOM
	}
	return ""
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
	// cordoned: the service's last answer said the cluster is cordoned.
	cordoned bool
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
	if cfg.LeaseTimeout < 0 {
		errs = append(errs, fmt.Errorf("executor: lease timeout %s is negative", cfg.LeaseTimeout))
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
	rep := api.Report{Jobs: slices.Grow(e.jobs[:0], len(e.tasks)), Pool: e.cfg.Pool}
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
		jr := api.JobReport{Job: t.id, Attempt: t.attempt, Phase: string(t.phase), ExitCode: exitCodeOf(t), Reason: t.reason}
		if t.phase == api.PhaseFailed {
			jr.FailureReason = e.failureReason(t.id, t.exitCode)
		}
		rep.Jobs = append(rep.Jobs, jr)
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
	if reply.Cordoned != e.cordoned {
		e.cordoned = reply.Cordoned
		if e.cfg.OnCordon != nil {
			e.cfg.OnCordon(reply.Cordoned)
		}
	}
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

// failureReason is the reason a job failing with code is reported with.
func (e *Executor) failureReason(job string, code int) string {
	if e.cfg.FailureReason != nil {
		return e.cfg.FailureReason(job, code)
	}
	return DefaultFailureReason(job, code)
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

// Cordoned reports whether the service's last answer said the cluster is
// cordoned (no new leases until it is uncordoned).
func (e *Executor) Cordoned() bool { return e.cordoned }

// Run calls Step every Renew period until ctx ends, and returns ctx's
// error. A report may run until shortly before the oldest lease it
// renews would expire (see Loop); a failed report is retried at the next
// period; onError (if not nil) hears of it.
func (e *Executor) Run(ctx context.Context, onError func(error)) error {
	return Every(ctx, Loop{Period: e.cfg.Renew, LeaseTimeout: e.cfg.LeaseTimeout}, func(ctx context.Context) error {
		_, err := e.Step(ctx)
		return err
	}, onError)
}

// Timer is the time a Loop waits on: Now, and AfterFunc, which calls f
// once d has passed unless the stop it returns is called first (as
// time.AfterFunc and its Timer's Stop).
type Timer interface {
	Now() time.Time
	AfterFunc(d time.Duration, f func()) (stop func() bool)
}

// realTime is Timer on time's clock.
type realTime struct{}

func (realTime) Now() time.Time { return time.Now() }
func (realTime) AfterFunc(d time.Duration, f func()) func() bool {
	return time.AfterFunc(d, f).Stop
}

// Loop is the timing of an executor's reports: one starts every Period;
// each may run until its Deadline.
type Loop struct {
	// Period is how often a report starts (the renew period).
	Period time.Duration
	// LeaseTimeout is the service's (server.Config.LeaseTimeout): a
	// lease not renewed for this long expires. 0 means
	// api.DefaultLeaseTimeout.
	LeaseTimeout time.Duration
	// Timer tells the time and waits; nil means the real clock.
	Timer Timer
}

// ErrReportTooLate is the cause of a report's context when its deadline
// passes (Loop.Deadline): the leases it would renew expire meanwhile.
var ErrReportTooLate = errors.New("executor: the report did not finish before the leases it renews would expire")

// Deadline returns until when a report that starts at start may run,
// when the last report that succeeded started at renewed: shortly (a
// tenth of the lease timeout) before the leases that report renewed
// would expire, the oldest the new one renews, and the time its reply
// needs to arrive; a slow service's report is not abandoned while it
// can still renew them. At least a Period, so that a call stuck on a
// connection gone silent is made again in time once no lease is left
// to save.
func (l Loop) Deadline(start, renewed time.Time) time.Time {
	lt := cmp.Or(l.LeaseTimeout, api.DefaultLeaseTimeout)
	return maxTime(start.Add(l.Period), renewed.Add(lt-lt/10))
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// Every calls step every l.Period until ctx ends, and returns ctx's
// error: the loop of an executor of the protocol. Each step's context
// ends at its deadline (Loop.Deadline, with ErrReportTooLate as its
// cause), not at the period: a report the service is slow to answer
// finishes and renews its leases, and the next starts when it has ended
// (at once when it took longer than the period). A failed step is
// retried at the next period, and onError (if not nil) hears of it. It
// waits on l.Timer, and starts no goroutine of its own (the real clock's
// timers run their functions in theirs).
func Every(ctx context.Context, l Loop, step func(context.Context) error, onError func(error)) error {
	clock := l.Timer
	if clock == nil {
		clock = realTime{}
	}
	renewed := clock.Now()
	for {
		start := clock.Now()
		err := runStep(ctx, clock, start, l.Deadline(start, renewed), step)
		if err == nil {
			renewed = start
		} else if ctx.Err() == nil && onError != nil {
			onError(err)
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if wait := start.Add(l.Period).Sub(clock.Now()); wait > 0 {
			next := make(chan struct{})
			stop := clock.AfterFunc(wait, func() { close(next) })
			select {
			case <-ctx.Done():
				stop()
				return ctx.Err()
			case <-next:
			}
		}
	}
}

// runStep runs step with a context that ends at deadline.
func runStep(ctx context.Context, clock Timer, start, deadline time.Time, step func(context.Context) error) error {
	stepCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stop := clock.AfterFunc(deadline.Sub(start), func() { cancel(ErrReportTooLate) })
	defer stop()
	return step(stepCtx)
}
