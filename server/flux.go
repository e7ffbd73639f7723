package server

import (
	"context"
	"errors"
	"maps"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/backend"
	"github.com/flotilla-sched/flotilla/events"
	"github.com/flotilla-sched/flotilla/fairness"
	"github.com/flotilla-sched/flotilla/priority"
	"github.com/flotilla-sched/flotilla/submit"
)

// DefaultFluxUser is the flux user of jobs submitted without a principal
// when FluxConfig.DefaultUser is empty.
const DefaultFluxUser = "anonymous"

// FluxConfig makes the service prioritise jobs with flux-accounting's
// multi-factor priority over a bank hierarchy (package priority).
//
// A job's association is (user, bank): the user is the principal that
// submitted it (submit.Request.Principal, or DefaultUser when there is
// none), the bank is Banks[queue], or the queue's name when Banks does not
// list the queue. At submit the association must exist in Tree (otherwise
// the submission is rejected, field "principal" or "queue"), and the job's
// Priority is set from the association's fair-share, the bank's and the
// queue's priority values and the default urgency (priority.Calculate, as
// BankTree.Prioritize computes it), mapped with priority.JobPriority: the
// priority given in the submit file is replaced. The scheduler orders a
// queue by priority class first and by Job.Priority within a class, so a
// heavy user's jobs run after a light user's of the same class.
//
// Leased and running jobs charge their association resource × seconds,
// valued as UsageWeights say, into the tree (BankTree.AddUsage) at the end
// of every cycle; every RecomputeEvery cycles the tree ranks associations
// again (BankTree.Recompute) and queued jobs whose priority changed are
// re-queued with the new one.
type FluxConfig struct {
	// Tree is the bank hierarchy, built by the caller (NewBankTree,
	// LoadBankTree); required. The Server owns it after New: change it
	// only through Server.WithBankTree. Its half-life is the
	// associations' usage half-life. The records' usage is added to the
	// usage the tree holds at New, so build it without usage when the
	// service has run before.
	Tree *priority.BankTree
	// Banks maps a queue name to the bank its jobs are charged to; a
	// queue not listed uses the bank named like the queue.
	Banks map[string]string
	// DefaultUser is the user of jobs submitted without a principal;
	// empty means DefaultFluxUser.
	DefaultUser string
	// UsageWeights value one unit of each resource (a cpu core, a byte of
	// memory, a GPU) in the tree's usage unit: usage charged to an
	// association is Σ weight × amount × seconds. Nil means {"cpu": 1}:
	// core-seconds.
	UsageWeights map[string]float64
	// RecomputeEvery: fair-share is recomputed and queued jobs
	// re-prioritised every this many cycles; 0 means every cycle.
	RecomputeEvery int
}

// validate reports the configuration's problems, fields under flux.
func (c *FluxConfig) validate(schema *flotilla.ResourceSchema) error {
	var errs []error
	if c.Tree == nil {
		errs = append(errs, flotilla.Errorf("flux.tree", "<nil>", flotilla.ErrRequired, ""))
	}
	for _, q := range slices.Sorted(maps.Keys(c.Banks)) {
		if q == "" {
			errs = append(errs, flotilla.Errorf("flux.banks", q, flotilla.ErrRequired, "a queue name"))
		}
		if c.Banks[q] == "" {
			errs = append(errs, flotilla.Errorf("flux.banks."+q, "", flotilla.ErrRequired, "a bank name"))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(c.UsageWeights)) {
		v := c.UsageWeights[name]
		field := "flux.usageWeights." + name
		if schema != nil {
			if _, ok := schema.Index(name); !ok {
				errs = append(errs, flotilla.Errorf(field, name, flotilla.ErrUnknownResource, "not in the schema"))
			}
		}
		if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
			errs = append(errs, flotilla.Errorf(field, strconv.FormatFloat(v, 'g', -1, 64), flotilla.ErrOutOfRange, "want finite and ≥ 0"))
		}
	}
	if c.RecomputeEvery < 0 {
		errs = append(errs, flotilla.Errorf("flux.recomputeEvery", strconv.Itoa(c.RecomputeEvery), flotilla.ErrNegative, ""))
	}
	return errors.Join(errs...)
}

type assocKey struct{ user, bank string }

// groupKey names the jobs that share a flux priority: one user's jobs in
// one queue (the queue gives the bank).
type groupKey struct{ user, queue string }

// fluxState is the service's side of the flux tree.
type fluxState struct {
	cfg  FluxConfig
	tree *priority.BankTree
	// weights values the schema's resources in the tree's unit, per
	// schema unit (a milli-cpu weighs a thousandth of a core).
	weights []float64
	assocs  map[assocKey]*accrual
	// banks holds each bank's priority value, refreshed whenever the tree
	// may have changed.
	banks map[string]float64
	// groups holds the priority last given to each group's queued jobs.
	groups map[groupKey]uint32
	cycles int
	// stale: some queued jobs may not have their group's priority.
	stale bool
	// lastRequeued counts the jobs the last re-prioritisation re-queued.
	lastRequeued int
	// repriced, when set, is told of each job whose priority changed.
	repriced func(*job)
}

func newFluxState(cfg *FluxConfig, schema *flotilla.ResourceSchema) *fluxState {
	f := &fluxState{cfg: *cfg, tree: cfg.Tree, assocs: map[assocKey]*accrual{}, groups: map[groupKey]uint32{}}
	if f.cfg.DefaultUser == "" {
		f.cfg.DefaultUser = DefaultFluxUser
	}
	if f.cfg.RecomputeEvery == 0 {
		f.cfg.RecomputeEvery = 1
	}
	w := f.cfg.UsageWeights
	if w == nil {
		w = map[string]float64{fairness.ResourceCPU: 1}
	}
	f.weights = make([]float64, schema.Len())
	for name, v := range w {
		if i, ok := schema.Index(name); ok {
			if schema.Unit(i) == flotilla.UnitMilli {
				v /= 1000
			}
			f.weights[i] = v
		}
	}
	f.refresh()
	return f
}

// refresh re-reads the banks' priority values.
func (f *fluxState) refresh() {
	f.banks = map[string]float64{priority.RootBank: 0}
	for _, b := range f.tree.Banks() {
		f.banks[b.Name] = b.Priority
	}
}

func (f *fluxState) accrual(k assocKey, t time.Time, n int) *accrual {
	a := f.assocs[k]
	if a == nil {
		a = newAccrual(n, t, true)
		f.assocs[k] = a
	}
	return a
}

// restore enters an association's stored usage: into its accrual as of
// the record's time, and into the tree decayed to the tree's clock (or
// now, when later).
func (f *fluxState) restore(k assocKey, r backend.UsageRecord, now time.Time) {
	a := newAccrual(len(r.Value), r.At, true)
	copy(a.val, r.Value)
	f.assocs[k] = a
	t := laterOf(f.tree.Now(), now)
	h := f.tree.HalfLife()
	amount := f.weigh(a.valueAt(t, h))
	_ = f.tree.AddUsage(k.user, k.bank, amount, t) // an association no longer in the tree keeps only its record
}

func laterOf(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// weigh values a resource × seconds vector in the tree's unit.
func (f *fluxState) weigh(v []float64) float64 {
	sum := 0.0
	for i, x := range v {
		sum += f.weights[i] * x
	}
	return max(sum, 0)
}

// assoc is the association a job is charged to.
func (f *fluxState) assoc(principal, queue string) assocKey {
	user := principal
	if user == "" {
		user = f.cfg.DefaultUser
	}
	return assocKey{user: user, bank: f.bank(queue)}
}

// bank is the bank a queue's jobs are charged to.
func (f *fluxState) bank(queue string) string {
	if b, ok := f.cfg.Banks[queue]; ok {
		return b
	}
	return queue
}

// priority is the Job.Priority of the jobs of association k in queue,
// or a problem naming why there is none.
func (f *fluxState) priority(k assocKey, queue string) (uint32, error) {
	c, err := f.calculation(k, queue)
	if err != nil {
		return 0, err
	}
	return priority.JobPriority(c.Priority), nil
}

// submit sets the flux priority of jobs about to be submitted (their
// Jobs are not shared yet), or returns the problems, one per association.
func (f *fluxState) submit(specs []backend.JobSpec) []error {
	var errs []error
	failed := map[assocKey]bool{}
	for i := range specs {
		sp := &specs[i]
		k := f.assoc(sp.Principal, sp.Job.Queue)
		if failed[k] {
			continue
		}
		p, err := f.priority(k, sp.Job.Queue)
		if err != nil {
			failed[k] = true
			errs = append(errs, err)
			continue
		}
		sp.Job.Priority = p
		g := groupKey{k.user, sp.Job.Queue}
		if old, ok := f.groups[g]; ok && old != p {
			// The tree changed since the group's jobs were given old
			// (WithBankTree): the next re-prioritisation moves them.
			f.stale = true
		}
		f.groups[g] = p
	}
	return errs
}

// cycle charges the associations' usage to the tree at now and, every
// RecomputeEvery cycles, ranks them again and re-prioritises the queued
// jobs of jobs, re-queueing in q those whose priority changed.
func (f *fluxState) cycle(now time.Time, jobs *jobTable, q *queuedJobs) {
	t := laterOf(f.tree.Now(), now)
	h := f.tree.HalfLife()
	for k, a := range f.assocs {
		a.advance(now, h)
		if amount := f.weigh(a.pending); amount > 0 {
			// An association no longer in the tree, or at MaxUsage,
			// keeps its usage in its record only.
			_ = f.tree.AddUsage(k.user, k.bank, amount, t)
		}
		clear(a.pending)
	}
	if f.cycles++; f.cycles%f.cfg.RecomputeEvery != 0 {
		return
	}
	_ = f.tree.Recompute(t) // t is not before the tree's clock
	f.refresh()
	f.lastRequeued = f.reprioritize(jobs, q, false)
}

// loaded ranks the associations after a load and gives every queued job
// of jobs its group's current priority.
func (f *fluxState) loaded(now time.Time, jobs *jobTable, q *queuedJobs) {
	_ = f.tree.Recompute(laterOf(f.tree.Now(), now))
	f.refresh()
	f.lastRequeued = f.reprioritize(jobs, q, true)
}

// reprioritize recomputes each group's priority and re-queues the queued
// jobs of the groups whose priority changed (all queued jobs when all),
// each as a new copy of its *flotilla.Job. It costs O(groups) when no
// priority changed, and otherwise one pass over the live jobs plus a
// store removal and insertion per job whose priority changed. It returns
// how many jobs it re-queued.
func (f *fluxState) reprioritize(jobs *jobTable, q *queuedJobs, all bool) int {
	changed := all || f.stale
	f.stale = false
	for g, old := range f.groups {
		p, err := f.priority(assocKey{user: g.user, bank: f.bank(g.queue)}, g.queue)
		if err != nil {
			continue // the association is gone: its jobs keep their priority
		}
		if p != old {
			f.groups[g] = p
			changed = true
		}
	}
	if !changed {
		return 0
	}
	n := 0
	for j := range jobs.all() {
		if j.state != events.Queued || j.reprioritized {
			continue
		}
		user := j.run.principal
		if user == "" {
			user = f.cfg.DefaultUser
		}
		g := groupKey{user, j.spec.Queue}
		p, ok := f.groups[g]
		if !ok {
			var err error
			if p, err = f.priority(assocKey{user: user, bank: f.bank(g.queue)}, g.queue); err != nil {
				continue
			}
			f.groups[g] = p
		}
		if j.sched().Priority == p {
			continue
		}
		c := *j.sched()
		c.Priority = p
		q.remove(j)
		j.own = &c
		q.add(j)
		if f.repriced != nil {
			f.repriced(j)
		}
		n++
	}
	return n
}

// WithBankTree runs fn with the flux tree under the service's lock (to add
// associations, change shares or weights); the banks' priority values are
// re-read afterwards, and queued jobs get the new priorities at the next
// re-prioritisation. Without Config.Flux, fn is not called and the result
// is nil.
func (s *Server) WithBankTree(fn func(*priority.BankTree) error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.st.withBankTree(fn)
}

// withBankTree is WithBankTree under the lock.
func (s *state) withBankTree(fn func(*priority.BankTree) error) error {
	if err := s.fresh(context.Background()); err != nil {
		return err
	}
	f := s.usage.flux
	if f == nil {
		return nil
	}
	err := fn(f.tree)
	f.refresh()
	return err
}

// SubmitJSONAs is SubmitJSON for a caller that knows who submits (the
// principal of its authentication): the jobs are stored with it
// (backend.JobSpec.Principal) and, with Config.Flux, charged to its
// association. A submit file cannot name its principal.
func (s *Server) SubmitJSONAs(ctx context.Context, principal string, data []byte) ([]string, error) {
	res, err := s.SubmitJSONResult(ctx, principal, data)
	return res.IDs, err
}

// SubmitJSONResult is SubmitJSONAs with the submission's warnings: one for
// each template whose jobs no node the service knows can run
// (SubmitResult.Warnings).
func (s *Server) SubmitJSONResult(ctx context.Context, principal string, data []byte) (SubmitResult, error) {
	req, _ := submit.Parse(data) // for the queue name; ParseJobs reports the problems
	q := ""
	if req != nil {
		q = req.Queue
	}
	return s.submit(ctx, q, func(now time.Time) ([]backend.JobSpec, []int, error) {
		specs, counts, err := s.st.cfg.Submit.ParseJobsCounted(data, &s.st.cat, now, s.st.newIDs)
		for i := range specs {
			specs[i].Principal = principal
		}
		return specs, counts, err
	})
}
