package server

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/backend"
	"github.com/flotilla-sched/flotilla/events"
	"github.com/flotilla-sched/flotilla/queue"
	"github.com/flotilla-sched/flotilla/scheduler"
	"github.com/flotilla-sched/flotilla/submit"
)

// Defaults of Config.
const (
	// DefaultLeaseTimeout is how long a lease lives without a renewal, and
	// how long a cluster may go without reporting before it leaves
	// scheduling.
	DefaultLeaseTimeout = 30 * time.Second
	// DefaultMaxAttempts is how many leases a job may have before a lease
	// that expires or is returned fails it.
	DefaultMaxAttempts = 3
)

// Clock tells the service the time. The service reads nothing else: tests
// pass a fake clock and advance it.
type Clock interface {
	Now() time.Time
}

// SystemClock is the Clock of a real service: time.Now.
type SystemClock struct{}

// Now returns time.Now().
func (SystemClock) Now() time.Time { return time.Now() }

// Config is what a Server needs.
type Config struct {
	// Scheduler decides the cycles; its Schema is the service's resource
	// schema, and its classes and default class are what submissions are
	// checked against. Required (Schema non-nil).
	Scheduler scheduler.Config
	// Submit are the submission rules; the zero value means the defaults.
	Submit submit.Rules
	// Backend stores everything; required. The Server does not close it.
	Backend backend.Backend
	// Clock tells the time; required.
	Clock Clock
	// NewID gives job ids; nil means time-ordered random ids (NewULIDs).
	NewID submit.IDSource
	// LeaseTimeout: a lease not renewed for this long expires, and a
	// cluster that has not reported for this long leaves scheduling.
	// 0 means DefaultLeaseTimeout.
	LeaseTimeout time.Duration
	// MaxAttempts: a job whose lease expires or is returned after this many
	// leases fails instead of being queued again. 0 means
	// DefaultMaxAttempts.
	MaxAttempts int
	// RequeuePreempted queues preempted jobs again instead of ending them
	// (the preempted event then carries requeued), unless their
	// cancellation was requested.
	RequeuePreempted bool
	// Fence is this service's fencing token, passed with every write (see
	// backend.Write.Fence); a newer leader uses a higher one.
	Fence uint64
	// Seed seeds the cycles' random choices: cycle n uses Seed + n.
	Seed uint64
	// UsageHalfLife is the half-life of the queues' usage history (see
	// QueueUsage); 0 means DefaultUsageHalfLife.
	UsageHalfLife time.Duration
	// Flux, when set, prioritises jobs with flux-accounting's
	// multi-factor priority and charges their usage to flux associations
	// (see FluxConfig).
	Flux *FluxConfig
}

func (c Config) withDefaults() Config {
	if c.LeaseTimeout == 0 {
		c.LeaseTimeout = DefaultLeaseTimeout
	}
	if c.MaxAttempts == 0 {
		c.MaxAttempts = DefaultMaxAttempts
	}
	return c
}

// Validate reports every problem of the configuration, each a
// *flotilla.FieldError (the scheduler's under scheduler., the submission
// rules' under submitRules.).
func (c Config) Validate() error {
	var errs []error
	if err := c.Scheduler.Validate(); err != nil {
		errs = append(errs, flotilla.RenameFields(err, func(f string) string { return "scheduler." + f }))
	}
	errs = append(errs, c.Submit.Validate())
	if c.Backend == nil {
		errs = append(errs, flotilla.Errorf("backend", "<nil>", flotilla.ErrRequired, ""))
	}
	if c.Clock == nil {
		errs = append(errs, flotilla.Errorf("clock", "<nil>", flotilla.ErrRequired, ""))
	}
	if c.LeaseTimeout < 0 {
		errs = append(errs, flotilla.Errorf("leaseTimeout", c.LeaseTimeout.String(), flotilla.ErrNegative, ""))
	}
	if c.MaxAttempts < 0 {
		errs = append(errs, flotilla.Errorf("maxAttempts", strconv.Itoa(c.MaxAttempts), flotilla.ErrNegative, ""))
	}
	if c.UsageHalfLife < 0 {
		errs = append(errs, flotilla.Errorf("usageHalfLife", c.UsageHalfLife.String(), flotilla.ErrNegative, ""))
	}
	if c.Flux != nil {
		errs = append(errs, c.Flux.validate(c.Scheduler.Schema))
	}
	return errors.Join(errs...)
}

// Server is the queueing service: queues, submission, cancellation,
// leasing to clusters through their executors, cycles and event logs,
// over a backend.Backend.
//
// It keeps what cycles need in memory (queues, queued jobs in a
// queue.Store, live jobs and their leases, clusters' nodes) and changes it
// only after the backend has committed the change: every change is one
// backend.Commit, and what the backend refuses changes nothing. Terminal
// jobs are forgotten in memory and read back from the backend.
//
// A Server is safe for concurrent use. It starts no goroutine: cycles run
// when the caller calls Cycle (or Run, which loops). Lease renewal times
// are kept in memory only, so after a restart every live lease gets a
// fresh lease timeout.
type Server struct {
	// The Server is a locking shell over st: each method locks mu, calls
	// one state method and unlocks, but for the work done outside the
	// lock (a cycle's Schedule, a report's ended jobs, the backend reads
	// of Status, Detail, Events and Watch), which reads only st's
	// immutable deps. mu hands itself over in the order it was asked for
	// (fifoLock).
	mu fifoLock
	st state
}

// state is the service's in-memory state, which its Server guards: every
// method of state is called with the Server's mu held, but for the
// fields of deps, which do not change after New and may be read without
// it.
type state struct {
	deps
	// queues are the queue definitions, by name; groups the queue tree's
	// groups (queues.go, groups.go).
	queues map[string]*flotilla.Queue
	groups map[string]*flotilla.QueueGroup
	// cordonedQueues are the queues an operator cordoned (cordon.go).
	cordonedQueues map[string]bool
	// retry are the queues' retry policies, by queue name; retries the
	// retry counts per rule of the live jobs that have any, by job id
	// (retry.go).
	retry   map[string]*events.RetryPolicy
	retries map[string][]int
	// queued holds the queued jobs, and their changes while a cycle reads
	// them.
	queued queuedJobs
	// jobs are the non-terminal jobs, by id.
	jobs jobTable
	// gangs lists the non-terminal members of each gang.
	gangs gangTable
	// clusters are the executors' clusters, by name; nodes maps a node's
	// name in the cycle's snapshot (cluster/node) to it.
	clusters clusterMap
	nodes    map[string]nodeRef
	// scratch are buffers reused from one call to the next.
	scratch scratch
	// last is what the last cycle left for the next and for Status.
	last lastCycle
	// changed is closed and replaced whenever events are stored, to wake
	// watchers.
	changed chan struct{}
	// stopping makes cycles lease nothing (Drain).
	stopping bool
	// usage is the usage history (usage.go, flux.go).
	usage *usageState
	// losses are the resource-seconds preemptions took from each queue
	// since the process started (metrics.go).
	losses preemptionLosses
	// reports counts the executors' reports, to stamp the leases each
	// lists (leaseMark.listedIn).
	reports uint64
	// ui is what the web UI reads besides the rest (uiread.go).
	ui uiState
	// stale: a load began and did not finish (the backend failed during
	// it), so the in-memory state is partial; fresh loads again before the
	// state is used.
	stale bool
}

// deps are what the service works with and never changes after New: its
// configuration and the scheduler, backend and clock it was given.
type deps struct {
	cfg   Config
	sched *scheduler.Scheduler
	be    backend.Backend
	clock Clock
	// newIDs returns n fresh job ids: Config.NewID's, or a request's
	// ULIDs as slices of one string when the service makes its own.
	newIDs func(n int) []string
	cat    submit.Catalog
	// schedule is sched.Schedule; a benchmark wraps it to time it.
	schedule func(context.Context, *scheduler.Snapshot, time.Time) (*scheduler.Result, error)
	// positionLimit is DetailPositionLimit (a test lowers it).
	positionLimit int
	// betweenChunks, when a test sets it, is called between the chunks of
	// a cycle's decision, with the lock released.
	betweenChunks func()
}

// New opens the service over cfg.Backend: it loads the queues, the live
// jobs and the clusters' last reports (a restart picks up where the last
// process stopped; every live lease gets a fresh timeout from now).
func New(ctx context.Context, cfg Config) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	sched, err := scheduler.New(cfg.Scheduler)
	if err != nil {
		return nil, err
	}
	sc := sched.Config()
	d := deps{
		cfg:    cfg,
		sched:  sched,
		be:     cfg.Backend,
		clock:  cfg.Clock,
		newIDs: cfg.NewID.Batch(),
		cat: submit.Catalog{
			Schema:               sc.Schema,
			PriorityClasses:      sc.PriorityClasses,
			DefaultPriorityClass: sc.DefaultPriorityClass,
			Topologies:           sc.Topologies,
		},
		schedule:      sched.Schedule,
		positionLimit: DetailPositionLimit,
	}
	if d.newIDs == nil {
		d.newIDs = newULIDSource(cfg.Clock, nil).batch
	}
	s := &Server{mu: newFIFOLock(), st: state{deps: d, changed: make(chan struct{})}}
	if err := s.st.load(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// load rebuilds the in-memory state from the backend. Until it succeeds
// the state is stale (see fresh).
func (s *state) load(ctx context.Context) error {
	s.stale = true
	if err := s.loadState(ctx); err != nil {
		return err
	}
	s.stale = false
	return nil
}

// fresh makes the in-memory state whole before it is used: after a load
// that failed it loads again, and returns that load's error (with the
// backend's class, e.g. backend.ErrUnavailable) when it fails too. The
// caller holds mu.
func (s *state) fresh(ctx context.Context) error {
	if !s.stale {
		return nil
	}
	return s.load(context.WithoutCancel(ctx))
}

// loadState is load's work.
func (s *state) loadState(ctx context.Context) error {
	sc := s.sched.Config()
	store, err := queue.New(sc.Schema, sc.PriorityClasses, sc.DefaultPriorityClass)
	if err != nil {
		return err
	}
	s.queued.store, s.queued.deferred, s.queued.pools = store, nil, nil
	s.queued.fit.reset()
	s.queued.newStore = func() *queue.Store {
		st, _ := queue.New(sc.Schema, sc.PriorityClasses, sc.DefaultPriorityClass) // as above, which did not fail
		return st
	}
	s.queues = make(map[string]*flotilla.Queue)
	s.jobs = jobTable{}
	s.gangs = gangTable{members: make(map[string][]*job), broken: make(map[string]bool)}
	s.clusters = make(clusterMap)
	s.nodes = make(map[string]nodeRef)
	qs, err := s.be.ListQueues(ctx)
	if err != nil {
		return fmt.Errorf("server: loading queues: %w", err)
	}
	for i := range qs {
		s.queues[qs[i].Name] = &qs[i]
	}
	gs, err := s.be.ListGroups(ctx)
	if err != nil {
		return fmt.Errorf("server: loading groups: %w", err)
	}
	s.groups = make(map[string]*flotilla.QueueGroup, len(gs))
	for i := range gs {
		s.groups[gs[i].Name] = &gs[i]
	}
	now := s.clock.Now()
	es, err := s.be.ListExecutors(ctx)
	if err != nil {
		return fmt.Errorf("server: loading executors: %w", err)
	}
	for _, e := range es {
		c := s.clusters.get(e.Cluster)
		// The cluster's nodes are known, but it takes part in cycles only
		// once its executor reports to this process: a cluster that died
		// before the restart gets no leases.
		c.setNodes(s.nodes, e.Nodes)
		c.pool = poolOf(e.Pool)
	}
	s.queued.fit.setNodes(s.knownNodes())
	if err := s.loadCordons(ctx); err != nil {
		return fmt.Errorf("server: loading cordons: %w", err)
	}
	if err := s.loadRetryPolicies(ctx); err != nil {
		return fmt.Errorf("server: loading retry policies: %w", err)
	}
	s.retries = map[string][]int{}
	namesPools := false
	err = s.be.LiveJobs(ctx, func(r backend.Record) error {
		j := newJob(r.Spec)
		j.restore(s, r.State, now)
		namesPools = namesPools || j.run.pools != ""
		return nil
	})
	if err != nil {
		return fmt.Errorf("server: loading live jobs: %w", err)
	}
	// The stores split as they had before the restart: once the service
	// knows two pools, or a job names pools (queued or live: a live job
	// queued again must join only its pools' stores).
	if pools := s.poolNames(); len(pools) > 1 || namesPools {
		s.queued.split(pools, &s.jobs)
	}
	s.ui.rebuild(s.jobs.all())
	// Gangs that lost members before the restart are settled by the first
	// write (endBrokenGangs).
	for k, ms := range s.gangs.members {
		if len(ms) < ms[0].spec.Gang.Cardinality {
			s.gangs.broken[k] = true
		}
	}
	return s.loadUsage(ctx, now)
}

// Now is the service's clock.
func (s *Server) Now() time.Time { return s.st.clock.Now() }

// Schema is the service's resource schema.
func (s *Server) Schema() *flotilla.ResourceSchema { return s.st.cat.Schema }

// commit stores w and applies its events to the in-memory state. specs
// are w.Jobs, indexed by id for the submitted events. The caller holds mu.
// When the backend cannot say whether it applied the write, the state is
// reloaded from it. So it is when the backend refuses a transition
// (events.ErrRefused): w was made from the in-memory state, which the
// backend's no longer matches (a write applied after its caller was told
// otherwise), and every later write made from it would be refused too.
func (s *state) commit(ctx context.Context, w *backend.Write) ([]events.Event, error) {
	if len(w.Jobs) == 0 && len(w.Events) == 0 {
		return nil, nil
	}
	if s.stale {
		// w was made from a partial state: refuse it; the caller's next
		// call loads again first (fresh).
		return nil, fmt.Errorf("server: the state is being reloaded: %w", backend.ErrUnavailable)
	}
	w.Fence = s.cfg.Fence
	stored, err := s.be.Commit(ctx, w)
	if err != nil {
		if errors.Is(err, backend.ErrOutcomeUnknown) || errors.Is(err, events.ErrRefused) {
			if lerr := s.load(context.WithoutCancel(ctx)); lerr != nil {
				err = errors.Join(err, lerr)
			}
		}
		return nil, err
	}
	specs := writeSpecs{jobs: w.Jobs}
	if len(w.Jobs) > 0 {
		// The new jobs' slots in the job table, fetched together
		// (idindex.Index.Prefetch) before the events insert them one by
		// one.
		specs.hashes = s.jobs.hashes(s.scratch.hashes, len(w.Jobs), func(i int) string { return w.Jobs[i].Job.ID })
		s.scratch.hashes = specs.hashes[:0]
	}
	// A submit's jobs join the queue together (queue.Store.AddAll).
	specs.batch = len(w.Jobs) > 0 && !slices.ContainsFunc(stored, func(e events.Event) bool { return e.Type != events.Submitted })
	if specs.batch {
		specs.queued = s.scratch.queued[:0]
	}
	for i := range stored {
		s.apply(&stored[i], &specs)
	}
	if len(specs.queued) > 0 {
		s.queued.addAll(specs.queued)
		clear(specs.queued)
		if cap(specs.queued) <= maxSubmitScratch {
			s.scratch.queued = specs.queued[:0]
		}
	}
	close(s.changed)
	s.changed = make(chan struct{})
	s.endBrokenGangs(ctx)
	return stored, nil
}

// writeSpecs finds the spec of a write's submitted events: the next of
// jobs when the events come in the jobs' order (as Submit writes them),
// else by a map built on first need.
type writeSpecs struct {
	jobs []backend.JobSpec
	// hashes are the jobs' ids' hashes in the job table's index.
	hashes []uint32
	next   int
	byID   map[string]int
	// slab holds the write's new jobs (newJob): one allocation per
	// write, not per job. A job that ends keeps its place until its
	// slab-mates end too. run is the runSpec of the last of them, which
	// the next shares when equal (the jobs of a template).
	slab []job
	run  *runSpec
	// batch: the write holds submitted events only, and apply collects
	// their jobs in queued for one queue.Store.AddAll.
	batch  bool
	queued []*flotilla.Job
}

// newJob is the package's newJob for a job of the write, placed in the
// write's slab.
func (ws *writeSpecs) newJob(sp *backend.JobSpec) *job {
	if ws.slab == nil {
		ws.slab = make([]job, 0, len(ws.jobs))
	}
	if len(ws.slab) == cap(ws.slab) {
		return newJob(*sp) // not reached: a write's jobs are submitted once
	}
	if r := runSpecOf(sp); ws.run == nil || *ws.run != r {
		ws.run = new(runSpec)
		*ws.run = r
	}
	ws.slab = ws.slab[:len(ws.slab)+1] // zero: set the two fields
	j := &ws.slab[len(ws.slab)-1]
	j.spec, j.run = sp.Job, ws.run
	return j
}

// spec returns the spec of the job of a submitted event of the write and
// its index in jobs; nil when the write has none.
func (ws *writeSpecs) spec(id string) (*backend.JobSpec, int) {
	if ws.byID == nil && ws.next < len(ws.jobs) && ws.jobs[ws.next].Job.ID == id {
		ws.next++
		return &ws.jobs[ws.next-1], ws.next - 1
	}
	if ws.byID == nil {
		ws.byID = make(map[string]int, len(ws.jobs))
		for i := range ws.jobs {
			ws.byID[ws.jobs[i].Job.ID] = i
		}
	}
	if i, ok := ws.byID[id]; ok {
		return &ws.jobs[i], i
	}
	return nil, -1
}
