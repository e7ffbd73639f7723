package sim

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/api"
	"github.com/flotilla-sched/flotilla/backend/memory"
	"github.com/flotilla-sched/flotilla/events"
	"github.com/flotilla-sched/flotilla/executor"
	"github.com/flotilla-sched/flotilla/httpapi"
	"github.com/flotilla-sched/flotilla/internal/fakeclock"
	"github.com/flotilla-sched/flotilla/scheduler"
	"github.com/flotilla-sched/flotilla/server"
	"github.com/flotilla-sched/flotilla/submit"
)

// Defaults of Config.
const (
	DefaultCycleInterval = 10 * time.Second
	DefaultRenew         = executor.DefaultRenew
	// DefaultMaxTime ends a run without Workload.Duration that is still
	// going after this much virtual time.
	DefaultMaxTime = 30 * 24 * time.Hour
)

// Start is the virtual clock's time at the start of every run: outputs
// count seconds from it.
var Start = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// Config is one simulation.
type Config struct {
	// Workload and Clusters are required.
	Workload *Workload
	Clusters *Clusters
	// Scheduler configures the service's cycles; nil means
	// scheduler.DefaultConfig over the clusters' resources. Its Schema is
	// replaced by the clusters' (every resource a node names, sorted).
	Scheduler *scheduler.Config
	// CycleInterval is the time between cycles; 0 means
	// DefaultCycleInterval.
	CycleInterval time.Duration
	// Renew is how often each executor reports; 0 means DefaultRenew.
	Renew time.Duration
	// LeaseTimeout is the service's; 0 means server.DefaultLeaseTimeout.
	LeaseTimeout time.Duration
	// RequeuePreempted queues preempted jobs again (the service's
	// Config.RequeuePreempted); false ends them preempted, as Armada does.
	RequeuePreempted bool
	// MaxTime bounds a run without Workload.Duration; 0 means
	// DefaultMaxTime.
	MaxTime time.Duration
	// Progress, when set, is called after every cycle with how far the
	// run has come (for a progress line); it must not keep the value's
	// address. Nil costs nothing.
	Progress func(Progress)
}

// Progress is how far a run has come, after one of its cycles.
type Progress struct {
	// Now is the virtual time reached; End is Workload.Duration (0 when
	// the run ends as its jobs do).
	Now, End time.Duration
	// Cycles run so far.
	Cycles int
	// Jobs is how many jobs the workload submits in all (counts times
	// repeats); Submitted and Ended how many have been submitted and have
	// ended so far.
	Jobs, Submitted, Ended int
}

// Run simulates cfg: it starts the service (server.New over
// backend/memory with a fake clock), creates the workload's queues, and
// one fake executor per cluster (httpapi.Local), then moves the clock
// from event to event — cycles every CycleInterval, executor reports
// every Renew (which end the jobs that reached their runtime and start
// new leases), and submissions — until Workload.Duration, or until every
// job has ended or nothing can change any more (at most MaxTime). It reads
// no real clock, starts no goroutine and sleeps never: the same cfg gives
// the same Output. Bad input is reported whole before anything runs, each
// problem a *flotilla.FieldError (workload fields under workload.,
// clusters' under clusters.); ctx cancels the run.
func Run(ctx context.Context, cfg Config) (*Output, error) {
	r, err := newRun(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if err := r.loop(ctx); err != nil {
		return nil, err
	}
	return r.out, nil
}

// template is a workload template as the run uses it.
type template struct {
	spec               *JobTemplate
	jobSet             string
	at, min, tail      time.Duration
	times              int   // submissions (1 + repetitions)
	expected, finished int   // jobs in all, jobs ended
	started            bool  // its first submission is scheduled
	dependents         []int // templates waiting on this one
	waiting            int   // templates of After not finished yet
}

// arrival is one submission due at a virtual time.
type arrival struct {
	at       time.Duration
	seq      int // tie-break: order of scheduling
	tpl      int
	repeat   int
	from, to int // job indexes within the submission
}

type arrivals []arrival

func (a arrivals) Len() int { return len(a) }
func (a arrivals) Less(i, j int) bool {
	if a[i].at != a[j].at {
		return a[i].at < a[j].at
	}
	return a[i].seq < a[j].seq
}
func (a arrivals) Swap(i, j int) { a[i], a[j] = a[j], a[i] }
func (a *arrivals) Push(x any)   { *a = append(*a, x.(arrival)) }
func (a *arrivals) Pop() any {
	old := *a
	x := old[len(old)-1]
	*a = old[:len(old)-1]
	return x
}

// jobRec is what the run knows of one job.
type jobRec struct {
	state       events.Job
	tpl         int
	preemptions int
}

// run is one simulation's state.
type run struct {
	cfg       Config
	clk       *fakeclock.Clock
	srv       *server.Server
	exs       []*executor.Executor
	schema    *flotilla.ResourceSchema
	rng       *rand.Rand
	tpls      []template
	jobSets   []jobSetLog
	arrivals  arrivals
	arrSeq    int
	jobs      map[string]*jobRec
	out       *Output
	cycle     int
	end       time.Duration // 0: none
	unended   int           // jobs submitted and not ended
	submitted int           // jobs submitted
	expected  int           // jobs the workload submits in all
	pending   int           // templates not started yet
	lastLease int           // leases of the last cycle
	live      int           // jobs holding a lease
	// observe, when a test sets it, sees every cycle's result.
	observe func(now time.Duration, res *scheduler.Result)
}

// jobSetLog is a (queue, job set) whose events the run follows.
type jobSetLog struct {
	queue, jobSet string
	next          uint64
}

func newRun(ctx context.Context, cfg Config) (*run, error) {
	if cfg.Workload == nil || cfg.Clusters == nil {
		var errs []error
		if cfg.Workload == nil {
			errs = append(errs, flotilla.Errorf("workload", "<nil>", flotilla.ErrRequired, ""))
		}
		if cfg.Clusters == nil {
			errs = append(errs, flotilla.Errorf("clusters", "<nil>", flotilla.ErrRequired, ""))
		}
		return nil, errors.Join(errs...)
	}
	var errs []error
	prefix := func(p string) func(string) string { return func(f string) string { return p + f } }
	if err := cfg.Workload.Validate(); err != nil {
		errs = append(errs, flotilla.RenameFields(err, prefix("workload.")))
	}
	if err := cfg.Clusters.Validate(); err != nil {
		errs = append(errs, flotilla.RenameFields(err, prefix("clusters.")))
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	schema := cfg.Clusters.schema()
	sc := scheduler.DefaultConfig(schema)
	if cfg.Scheduler != nil {
		sc = *cfg.Scheduler
		sc.Schema = schema
	}
	classes := map[string]bool{}
	for _, pc := range sc.PriorityClasses {
		classes[pc.Name] = true
	}
	if len(sc.PriorityClasses) == 0 {
		for _, pc := range flotilla.DefaultPriorityClasses() {
			classes[pc.Name] = true
		}
	}
	w := cfg.Workload
	for i, t := range w.JobTemplates {
		f := fmt.Sprintf("workload.jobTemplates[%d]", i)
		if _, err := schema.Parse(f+".requests", t.Requests); err != nil {
			errs = append(errs, err)
		}
		if t.PriorityClass != "" && !classes[t.PriorityClass] {
			errs = append(errs, flotilla.Errorf(f+".priorityClass", t.PriorityClass, flotilla.ErrUnknownName, "not a priority class of the configuration"))
		}
		if g := t.Gang; g != nil && g.Topology != nil && (g.Topology.Required != "" || g.Topology.Preferred != "") && g.NodeUniformityLabel == "" {
			gt := flotilla.GangTopology{Name: g.Topology.Name, Required: g.Topology.Required, Preferred: g.Topology.Preferred}
			if _, _, _, err := flotilla.ResolveTopology(sc.Topologies, f+".gang.topology", gt); err != nil {
				errs = append(errs, err)
			}
		}
	}
	groups, quotas, treeErrs := w.tree(schema, map[string]bool{})
	errs = append(errs, flotilla.RenameFields(errors.Join(treeErrs...), prefix("workload.")))
	errs = append(errs, w.usageConfig(&sc)...)
	for _, d := range []struct {
		f string
		v time.Duration
	}{{"cycleInterval", cfg.CycleInterval}, {"renew", cfg.Renew}, {"leaseTimeout", cfg.LeaseTimeout}, {"maxTime", cfg.MaxTime}} {
		if d.v < 0 {
			errs = append(errs, flotilla.Errorf(d.f, d.v.String(), flotilla.ErrNegative, ""))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if cfg.CycleInterval == 0 {
		cfg.CycleInterval = DefaultCycleInterval
	}
	if cfg.Renew == 0 {
		cfg.Renew = DefaultRenew
	}
	if cfg.MaxTime == 0 {
		cfg.MaxTime = DefaultMaxTime
	}

	r := &run{cfg: cfg, clk: fakeclock.New(Start), schema: schema, jobs: map[string]*jobRec{},
		rng: rand.New(rand.NewPCG(w.Seed, 0x51a7e5eed)), out: &Output{Resources: schema.Names(), Tree: w.HasTree(), Pools: cfg.Clusters.Pools() > 1}}
	if w.Duration != "" {
		r.end, _ = time.ParseDuration(w.Duration)
	}
	n := 0
	ids := func() string { n++; return fmt.Sprintf("job-%07d", n) }
	be := memory.New(schema)
	if sc.UsageHalfLife > 0 {
		if err := be.PutUsage(ctx, w.usageSeeds(schema.Len(), cfg.Clusters.poolNames())); err != nil {
			return nil, err
		}
	}
	srv, err := server.New(ctx, server.Config{Scheduler: sc, Backend: be, Clock: r.clk,
		NewID: ids, LeaseTimeout: cfg.LeaseTimeout, Seed: w.Seed, RequeuePreempted: cfg.RequeuePreempted})
	if err != nil {
		return nil, err // the scheduler's problems, under scheduler.
	}
	r.srv = srv
	// The service checks the whole tree at every change: parents first.
	for _, g := range byDepth(groups) {
		if err := srv.CreateGroup(ctx, *g); err != nil {
			return nil, err
		}
	}
	for i, q := range w.Queues {
		pf := 1.0
		if q.Weight != nil {
			pf = 1 / *q.Weight
		}
		if err := srv.CreateQueue(ctx, flotilla.Queue{Name: q.Name, PriorityFactor: pf, Parent: q.Parent,
			Guaranteed: quotas[i][0], Limit: quotas[i][1], LendingLimit: quotas[i][2]}); err != nil {
			return nil, err
		}
	}
	if err := r.executors(); err != nil {
		return nil, err
	}
	r.tpls = make([]template, len(w.JobTemplates))
	byID := map[string]int{}
	seenSet := map[[2]string]bool{}
	for i := range w.JobTemplates {
		t := &w.JobTemplates[i]
		byID[t.ID] = i
		tp := &r.tpls[i]
		tp.spec, tp.jobSet, tp.times = t, t.JobSet, 1
		if tp.jobSet == "" {
			tp.jobSet = t.ID
		}
		tp.at, _ = time.ParseDuration(orZero(t.Arrival.At))
		tp.min, _ = time.ParseDuration(orZero(t.Runtime.Minimum))
		tp.tail, _ = time.ParseDuration(orZero(t.Runtime.TailMean))
		if t.Repeat != nil {
			tp.times += t.Repeat.NumTimes
		}
		tp.expected = t.Count * tp.times
		r.expected += tp.expected
		if k := [2]string{t.Queue, tp.jobSet}; !seenSet[k] {
			seenSet[k] = true
			r.jobSets = append(r.jobSets, jobSetLog{queue: t.Queue, jobSet: tp.jobSet})
		}
	}
	r.pending = len(r.tpls)
	for i := range r.tpls {
		deps := map[int]bool{}
		for _, d := range r.tpls[i].spec.Arrival.After {
			deps[byID[d]] = true
		}
		r.tpls[i].waiting = len(deps)
		for j := range deps {
			r.tpls[j].dependents = append(r.tpls[j].dependents, i)
		}
	}
	for i := range r.tpls {
		if r.tpls[i].waiting == 0 {
			r.start(i, 0)
		}
	}
	return r, nil
}

// executors makes one fake executor per cluster, talking to the service
// in process.
func (r *run) executors() error {
	for _, cl := range r.cfg.Clusters.Clusters {
		var nodes []api.Node
		for _, nt := range cl.Nodes {
			for _, name := range nt.names() {
				nodes = append(nodes, api.Node{Name: name, Resources: nt.Resources, Labels: nt.Labels, Unschedulable: nt.Unschedulable, Taints: nt.Taints})
			}
		}
		ex, err := executor.New(executor.Config{Cluster: cl.Name, Nodes: nodes, Pool: cl.Pool, Service: &httpapi.Local{Server: r.srv}, Clock: r.clk, Renew: r.cfg.Renew})
		if err != nil {
			return err
		}
		r.exs = append(r.exs, ex)
	}
	return nil
}

func orZero(s string) string {
	if s == "" {
		return "0s"
	}
	return s
}

// start schedules every submission of template i, its first at now + At.
func (r *run) start(i int, now time.Duration) {
	tp := &r.tpls[i]
	tp.started = true
	r.pending--
	size := 1
	if tp.spec.Gang != nil {
		size = tp.spec.Gang.Cardinality
	}
	var period time.Duration
	if tp.spec.Repeat != nil {
		period, _ = time.ParseDuration(tp.spec.Repeat.Period)
	}
	for rep := 0; rep < tp.times; rep++ {
		at := now + tp.at + time.Duration(rep)*period
		if tp.spec.Arrival.Rate <= 0 {
			r.push(arrival{at: at, tpl: i, repeat: rep, from: 0, to: tp.spec.Count})
			continue
		}
		t := float64(at)
		for from := 0; from < tp.spec.Count; from += size {
			t += r.rng.ExpFloat64() / tp.spec.Arrival.Rate * float64(time.Second)
			r.push(arrival{at: time.Duration(math.Round(t/float64(time.Millisecond))) * time.Millisecond, tpl: i, repeat: rep, from: from, to: from + size})
		}
	}
	if tp.expected == 0 {
		r.finished(i, now)
	}
}

func (r *run) push(a arrival) {
	a.seq = r.arrSeq
	r.arrSeq++
	heap.Push(&r.arrivals, a)
}

// finished starts the templates that waited only for template i.
func (r *run) finished(i int, now time.Duration) {
	for _, d := range r.tpls[i].dependents {
		if r.tpls[d].waiting--; r.tpls[d].waiting == 0 {
			r.start(d, now)
		}
	}
}

// submit makes one arrival's submission.
func (r *run) submit(ctx context.Context, a arrival) error {
	tp := &r.tpls[a.tpl]
	t := tp.spec
	req := &submit.Request{Queue: t.Queue, JobSet: tp.jobSet, Jobs: make([]submit.JobTemplate, 0, a.to-a.from)}
	for k := a.from; k < a.to; k++ {
		rt := tp.min
		if tp.tail > 0 {
			rt += time.Duration(r.rng.ExpFloat64() * float64(tp.tail))
		}
		rt = rt.Round(time.Millisecond)
		jt := submit.JobTemplate{PriorityClass: t.PriorityClass, Priority: t.Priority, Requests: t.Requests,
			NodeSelector: t.NodeSelector, Tolerations: t.Tolerations, Runtime: rt.String(), Pools: t.Pools}
		if t.Gang != nil {
			g := k / t.Gang.Cardinality
			jt.Gang = &submit.GangSpec{ID: fmt.Sprintf("%s-%d-%d", t.ID, a.repeat, g), Cardinality: t.Gang.Cardinality,
				NodeUniformityLabel: t.Gang.NodeUniformityLabel, Topology: t.Gang.Topology}
		}
		req.Jobs = append(req.Jobs, jt)
	}
	ids, err := r.srv.Submit(ctx, req)
	if err != nil {
		return fmt.Errorf("sim: submitting template %s: %w", t.ID, err)
	}
	for _, id := range ids {
		r.jobs[id] = &jobRec{tpl: a.tpl}
		r.out.jobOrder = append(r.out.jobOrder, id)
	}
	r.unended += len(ids)
	r.submitted += len(ids)
	return nil
}

// step makes executor c report.
func (r *run) step(ctx context.Context, c int) error {
	if _, err := r.exs[c].Step(ctx); err != nil {
		return fmt.Errorf("sim: executor %s: %w", r.cfg.Clusters.Clusters[c].Name, err)
	}
	return nil
}

// follow reads the new events of every job set and updates the jobs.
func (r *run) follow(ctx context.Context, now time.Duration) error {
	for i := range r.jobSets {
		js := &r.jobSets[i]
		evs, err := r.srv.Events(ctx, js.queue, js.jobSet, js.next, 0)
		if err != nil {
			return err
		}
		for _, e := range evs {
			js.next = e.Seq + 1
			j := r.jobs[e.Job]
			if j == nil {
				continue
			}
			was := j.state.State
			next, err := events.Transition(j.state, e)
			if err != nil {
				return fmt.Errorf("sim: %w", err)
			}
			j.state = next
			if was.Live() != next.State.Live() {
				if next.State.Live() {
					r.live++
				} else {
					r.live--
				}
			}
			if e.Type == events.Preempted {
				j.preemptions++
			}
			if !was.Terminal() && next.State.Terminal() {
				r.unended--
				tp := &r.tpls[j.tpl]
				if tp.finished++; tp.finished == tp.expected {
					r.finished(j.tpl, now)
				}
			}
		}
	}
	return nil
}

// cycleRows runs one cycle and records its rows.
func (r *run) runCycle(ctx context.Context, now time.Duration) error {
	rep, err := r.srv.Cycle(ctx)
	if err != nil {
		return fmt.Errorf("sim: cycle %d: %w", r.cycle, err)
	}
	r.lastLease = rep.Leased
	for _, pr := range rep.Pools {
		res, pool := pr.Result, pr.Pool
		if !r.out.Pools {
			pool = ""
		}
		sched := map[string]int{}
		pre := map[string]int{}
		for _, a := range res.Scheduled {
			sched[a.Job.Queue]++
		}
		for _, p := range res.Preempted {
			pre[p.Job.Queue]++
		}
		for _, q := range res.Queues {
			r.out.Queues = append(r.out.Queues, QueueRow{Time: now.Seconds(), Cycle: r.cycle, Queue: q.Name, Pool: pool, Parent: q.Parent,
				Share: q.Share, FairShare: q.FairShare, AdjustedFairShare: q.AdjustedFairShare, Usage: q.Usage,
				Running: q.Running, Queued: q.Queued, Scheduled: sched[q.Name], Preempted: pre[q.Name],
				Allocated: append([]int64(nil), q.Allocated...)})
		}
		for _, g := range res.Groups {
			r.out.Groups = append(r.out.Groups, GroupRow{Time: now.Seconds(), Cycle: r.cycle, Group: g.Name, Pool: pool, Parent: g.Parent,
				Share: g.Share, FairShare: g.FairShare, AdjustedFairShare: g.AdjustedFairShare, Usage: g.Usage, Demand: g.Demand,
				Running: g.Running, Queued: g.Queued, Allocated: append([]int64(nil), g.Allocated...)})
		}
		if r.observe != nil {
			r.observe(now, res)
		}
	}
	r.cycle++
	return nil
}

// loop moves the clock from event to event until the run ends.
func (r *run) loop(ctx context.Context) error {
	var now, nextCycle, nextRenew time.Duration
	limit := r.cfg.MaxTime
	if r.end > 0 {
		limit = r.end
	}
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		// Submissions due now, then executor reports, then the cycle.
		for len(r.arrivals) > 0 && r.arrivals[0].at <= now {
			if err := r.submit(ctx, heap.Pop(&r.arrivals).(arrival)); err != nil {
				return err
			}
		}
		// Every executor reports every Renew, as executor.Run does: the
		// jobs that reached their runtime since its last report end then,
		// and it starts the leases the cycles made since.
		if now >= nextRenew {
			nextRenew += r.cfg.Renew
			for c := range r.exs {
				if err := r.step(ctx, c); err != nil {
					return err
				}
			}
		}
		if err := r.follow(ctx, now); err != nil {
			return err
		}
		if now >= nextCycle {
			if err := r.runCycle(ctx, now); err != nil {
				return err
			}
			nextCycle += r.cfg.CycleInterval
			if err := r.follow(ctx, now); err != nil {
				return err
			}
			if r.cfg.Progress != nil {
				r.cfg.Progress(Progress{Now: now, End: r.end, Cycles: r.cycle, Jobs: r.expected,
					Submitted: r.submitted, Ended: r.submitted - r.unended})
			}
			if r.end == 0 && r.pending == 0 && len(r.arrivals) == 0 && (r.unended == 0 || (r.lastLease == 0 && r.live == 0)) {
				break
			}
		}
		next := min(nextCycle, nextRenew)
		if len(r.arrivals) > 0 {
			next = min(next, r.arrivals[0].at)
		}
		if next > limit {
			break
		}
		r.clk.Advance(next - now)
		now = next
	}
	r.out.End = now.Seconds()
	r.out.finish(r)
	return nil
}
