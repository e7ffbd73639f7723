package server

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/leanovate/gopter"
	"github.com/leanovate/gopter/gen"
	"github.com/leanovate/gopter/prop"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/backend"
	"github.com/flotilla-sched/flotilla/events"
	"github.com/flotilla-sched/flotilla/queue"
	"github.com/flotilla-sched/flotilla/scheduler"
)

// The pools' property test: random programs over three clusters whose
// executors name a pool (the default, a or b) and move between them,
// two queues, and jobs (some gangs) accepting random pools (a, b, c, or
// every pool). Commands: submit, an executor's report (its live leases
// running, one finished), cycles (some with submissions, cancellations,
// reprioritisations and reports made while Schedule runs), cancel,
// reprioritize, preempt, restart, clock advances past the lease timeout.
// After every command, against a naive model (each job's pools, each
// cluster's pool): every new lease is on a cluster of a pool its job
// accepts; the queued-job stores are in step with the queued jobs (the
// all-jobs store holds each, each pool's store exactly those that accept
// the pool, and the stores have not split only while no job names pools
// and the service knows one pool). After the program, with every
// executor reporting and finishing its jobs, every job that accepts a
// pool with a cluster runs: none is stuck queued.

type poolCmdKind uint8

const (
	poolSubmit poolCmdKind = iota
	poolReport
	poolCycleCmd
	poolCancel
	poolReprioritize
	poolPreempt
	poolRestart
	poolAdvance
)

var poolCmdNames = []string{"submit", "report", "cycle", "cancel", "reprioritize", "preempt", "restart", "advance"}

// poolCmd is one command; which fields apply depends on kind.
type poolCmd struct {
	kind poolCmdKind
	// submit: queue (A, B), count jobs of one cpu, a gang of them, the
	// pools they accept (nil: every pool).
	queue, count int
	gang         bool
	pools        []string
	// big: the jobs request 6 cpus, which only c2's nodes (8 cpus) fit;
	// a gang's are count jobs of 1 cpu and one of 6.
	big bool
	// report: the cluster, its pool ("" the default), finish one job.
	cluster int
	pool    string
	finish  bool
	// cancel, reprioritize, preempt: which job.
	pick int
	// cycle: commands run while Schedule runs (no pool moves).
	during []poolCmd
	// advance: how far.
	d time.Duration
}

func (c poolCmd) String() string {
	s := poolCmdNames[c.kind]
	switch c.kind {
	case poolSubmit:
		s += fmt.Sprintf(" q%d n%d gang=%v big=%v pools=%v", c.queue, c.count, c.gang, c.big, c.pools)
	case poolReport:
		s += fmt.Sprintf(" c%d pool=%q finish=%v", c.cluster, c.pool, c.finish)
	case poolCancel, poolReprioritize, poolPreempt:
		s += fmt.Sprintf(" pick=%d", c.pick)
	case poolAdvance:
		s += " " + c.d.String()
	case poolCycleCmd:
		for _, d := range c.during {
			s += " [" + d.String() + "]"
		}
	}
	return s
}

// decodePoolCmd draws one command from a seed (gopter shrinks a program
// by dropping seeds).
func decodePoolCmd(seed uint64, nested bool) poolCmd {
	r := rand.New(rand.NewPCG(seed, 23))
	c := poolCmd{queue: r.IntN(2), count: 1 + r.IntN(3), gang: r.IntN(4) == 0, cluster: r.IntN(3),
		pool: []string{"", "a", "b"}[r.IntN(3)], finish: r.IntN(2) == 0, pick: r.IntN(1000)}
	if c.big = r.IntN(4) == 0; c.big && c.gang {
		c.count = min(c.count, 2) // c2's two nodes hold a gang of two
	}
	if r.IntN(3) > 0 {
		for _, p := range []string{"a", "b", "c", backend.DefaultPool} {
			if r.IntN(3) == 0 {
				c.pools = append(c.pools, p)
			}
		}
		if c.pools == nil {
			c.pools = []string{"b"}
		}
	}
	if nested {
		c.kind = []poolCmdKind{poolSubmit, poolReport, poolCancel, poolReprioritize}[r.IntN(4)]
		return c
	}
	switch k := r.IntN(20); {
	case k < 5:
		c.kind = poolSubmit
	case k < 10:
		c.kind = poolReport
	case k < 14:
		c.kind = poolCycleCmd
		for range r.IntN(3) {
			c.during = append(c.during, decodePoolCmd(r.Uint64(), true))
		}
	case k < 15:
		c.kind = poolCancel
	case k < 16:
		c.kind = poolReprioritize
	case k < 17:
		c.kind = poolPreempt
	case k < 18:
		c.kind = poolRestart
	default:
		c.kind = poolAdvance
		c.d = []time.Duration{5 * time.Second, 40 * time.Second}[r.IntN(2)]
	}
	return c
}

// poolRun is one program's world and the naive model.
type poolRun struct {
	w *world
	// pools are the jobs' pools (nil: every pool), by id; ids in order.
	pools map[string][]string
	ids   []string
	// clusterPool is each cluster's pool, once it reported.
	clusterPool map[string]string
	// live is each live job's cluster and attempt at the last check.
	live    map[string]string
	submits int
}

func (r *poolRun) accepts(id, pool string) bool {
	ps := r.pools[id]
	return ps == nil || slices.Contains(ps, pool)
}

// do runs c; it returns what went wrong ("" when nothing did).
func (r *poolRun) do(c poolCmd) string {
	w := r.w
	switch c.kind {
	case poolSubmit:
		r.submits++
		t := cpuJobs(c.count, "1")
		if c.big {
			t = cpuJobs(c.count, "6")
		}
		t.Pools = c.pools
		ts := []JobTemplate{t}
		if c.gang {
			g := &GangSpec{ID: fmt.Sprintf("g%d", r.submits), Cardinality: c.count}
			if c.big {
				t = cpuJobs(c.count, "1")
				t.Pools = c.pools
				ts = []JobTemplate{t, cpuJobs(1, "6")}
				ts[1].Pools = c.pools
				g.Cardinality++
			}
			for i := range ts {
				ts[i].Gang = g
			}
		}
		ids, err := w.srv.Submit(w.ctx, &SubmitRequest{Queue: []string{"A", "B"}[c.queue], JobSet: "s", Jobs: ts})
		if err != nil {
			return "submit: " + err.Error()
		}
		for _, id := range ids {
			r.pools[id] = c.pools
		}
		r.ids = append(r.ids, ids...)
	case poolReport:
		name := fmt.Sprintf("c%d", c.cluster)
		var jobs []JobReport
		finished := false
		for _, st := range r.statuses() {
			if st.Cluster != name || !st.State.Live() {
				continue
			}
			p := PhaseRunning
			if c.finish && !finished {
				p, finished = PhaseSucceeded, true
			}
			jobs = append(jobs, JobReport{Job: st.Job, Attempt: st.Attempts, Phase: p})
		}
		if _, err := w.srv.Report(w.ctx, &Report{Cluster: name, Pool: c.pool, Nodes: nodesOf(name, 2, clusterCPU(name)), Jobs: jobs}); err != nil {
			return "report: " + err.Error()
		}
		r.clusterPool[name] = poolOf(c.pool)
	case poolCycleCmd:
		i := 0
		var msg string
		if _, err := r.cycleWith(func() {
			if i > 0 {
				return // the first pool's decision only
			}
			i++
			for _, d := range c.during {
				if d.kind == poolReport {
					if p, ok := r.clusterPool[fmt.Sprintf("c%d", d.cluster)]; ok {
						d.pool = p // no move while a cycle decides: the lease check reads the pool after it
					} else {
						continue
					}
				}
				if m := r.do(d); m != "" && msg == "" {
					msg = "during the cycle: " + m
				}
			}
		}); err != nil {
			return "cycle: " + err.Error()
		}
		return msg
	case poolCancel, poolReprioritize, poolPreempt:
		if len(r.ids) == 0 {
			return ""
		}
		id := r.ids[c.pick%len(r.ids)]
		var err error
		switch c.kind {
		case poolCancel:
			_, err = w.srv.Cancel(w.ctx, id)
		case poolReprioritize:
			_, err = w.srv.Reprioritize(w.ctx, Selection{IDs: []string{id}}, uint32(c.pick%7), "")
		default:
			_, err = w.srv.Preempt(w.ctx, Selection{IDs: []string{id}}, "ops", "")
		}
		_ = err // refusals (an ended job, a job not running) change nothing
	case poolRestart:
		w.restart()
	case poolAdvance:
		w.clock.Advance(c.d)
	}
	return ""
}

// cycleWith is world.cycleWith returning the cycle's error.
func (r *poolRun) cycleWith(during func()) (*CycleReport, error) {
	d := &r.w.srv.st.deps
	inner := d.schedule
	d.schedule = func(ctx context.Context, snap *scheduler.Snapshot, now time.Time) (*scheduler.Result, error) {
		res, err := inner(ctx, snap, now)
		during()
		return res, err
	}
	defer func() { d.schedule = inner }()
	return r.w.srv.Cycle(r.w.ctx)
}

func (r *poolRun) statuses() []JobStatus {
	st, err := r.w.srv.Status(r.w.ctx, r.ids...)
	if err != nil {
		r.w.t.Fatal(err)
	}
	return st
}

// check compares the service with the model after a command.
func (r *poolRun) check() string {
	live := map[string]string{}
	for _, st := range r.statuses() {
		if !st.State.Live() {
			continue
		}
		at := fmt.Sprintf("%s#%d", st.Cluster, st.Attempts)
		live[st.Job] = at
		if r.live[st.Job] == at {
			continue // not a new lease: its cluster may have moved since
		}
		if p := r.clusterPool[st.Cluster]; !r.accepts(st.Job, p) {
			return fmt.Sprintf("job %s accepting pools %v leased on %s in pool %s", st.Job, r.pools[st.Job], st.Cluster, p)
		}
	}
	r.live = live
	return r.checkStores()
}

// checkStores compares the queued-job stores with the queued jobs.
func (r *poolRun) checkStores() string {
	s := &r.w.srv.st
	var queued []*job
	namesPools := false
	for j := range s.jobs.all() {
		namesPools = namesPools || j.run.pools != ""
		if j.state == events.Queued {
			queued = append(queued, j)
		}
	}
	inStore := func(name string, st interface {
		Len() int
		Get(string) (*queue.Entry, bool)
	}, accept func(*job) bool) string {
		n := 0
		for _, j := range queued {
			if !accept(j) {
				continue
			}
			n++
			if _, ok := st.Get(j.id()); !ok {
				return fmt.Sprintf("store %s lacks queued job %s (pools %q)", name, j.id(), j.run.pools)
			}
		}
		if st.Len() != n {
			return fmt.Sprintf("store %s holds %d jobs, want the %d queued that accept it", name, st.Len(), n)
		}
		return ""
	}
	if m := inStore("of every job", s.queued.store, func(*job) bool { return true }); m != "" {
		return m
	}
	if m := r.checkNeverFit(queued); m != "" {
		return m
	}
	if m := r.checkDemand(queued); m != "" {
		return m
	}
	pools := s.poolNames()
	if s.queued.pools == nil {
		if namesPools || len(pools) > 1 {
			return fmt.Sprintf("one store while a job names pools (%v) or the service knows pools %v", namesPools, pools)
		}
		return ""
	}
	for _, p := range pools {
		if _, ok := s.queued.pools[p]; !ok {
			return "no store for pool " + p
		}
	}
	for p, st := range s.queued.pools {
		if m := inStore("of pool "+p, st, func(j *job) bool { return acceptsPool(j.run.pools, p) }); m != "" {
			return m
		}
	}
	return ""
}

// checkNeverFit compares the never-fit counts with a naive judgement of
// every queued job against every known node (jobs accepting only pools
// with no cluster never fit while some node is known), and the tracker's
// shapes with the queued jobs.
func (r *poolRun) checkNeverFit(queued []*job) string {
	s := &r.w.srv.st
	known := false
	for _, c := range s.clusters {
		known = known || len(c.nodes) > 0
	}
	want := map[string]int{}
	mates := gangMates(queued)
	for _, j := range queued {
		fits := false
		for _, p := range s.poolNames() {
			fits = fits || acceptsPool(j.run.pools, p) && r.fitsPool(mates, j, p)
		}
		if known && !fits {
			want[j.spec.Queue]++
		}
	}
	for q := range s.queues {
		if got := s.queued.fit.neverFit(q); got != want[q] {
			return fmt.Sprintf("queue %s counts %d never-fit jobs, want %d", q, got, want[q])
		}
	}
	n := 0
	for _, sh := range s.queued.fit.shapes {
		n += sh.n
	}
	if n != len(queued) {
		return fmt.Sprintf("the never-fit shapes count %d jobs, want the %d queued", n, len(queued))
	}
	return ""
}

// clusterCPU is the cpus of each of a cluster's nodes: 8 for c2, else 4.
func clusterCPU(name string) int64 {
	if name == "c2" {
		return 8
	}
	return 4
}

// gangMates are the queued jobs by gangKey, the gang members' only.
func gangMates(queued []*job) map[string][]*job {
	out := map[string][]*job{}
	for _, j := range queued {
		if j.spec.IsGang() {
			out[gangKey(j.spec)] = append(out[gangKey(j.spec)], j)
		}
	}
	return out
}

// fitsPool reports whether j, and each queued member of its gang, fits a
// node of pool (a gang runs whole).
func (r *poolRun) fitsPool(mates map[string][]*job, j *job, pool string) bool {
	jobs := []*job{j}
	if j.spec.IsGang() {
		jobs = mates[gangKey(j.spec)]
	}
	for _, m := range jobs {
		fits := false
		for _, c := range r.w.srv.st.clusters {
			for _, n := range c.nodes {
				fits = fits || c.pool == pool && m.spec.Requests.Fits(n.Total)
			}
		}
		if !fits {
			return false
		}
	}
	return true
}

// checkDemand compares each pool's cycle's demand of each queue with a
// naive sum of the requests of the queue's queued jobs that accept the
// pool and fit one of its nodes (every such job while the pool has no
// node).
func (r *poolRun) checkDemand(queued []*job) string {
	s := &r.w.srv.st
	mates := gangMates(queued)
	for _, p := range s.poolNames() {
		var totals []flotilla.Resources
		for _, c := range s.clusters {
			if c.pool == p {
				for _, n := range c.nodes {
					totals = append(totals, n.Total)
				}
			}
		}
		want := map[string]flotilla.Resources{}
		for _, j := range queued {
			if !acceptsPool(j.run.pools, p) {
				continue
			}
			fits := len(totals) == 0 || r.fitsPool(mates, j, p)
			d := want[j.spec.Queue]
			if d == nil {
				d = make(flotilla.Resources, len(j.spec.Requests))
				want[j.spec.Queue] = d
			}
			if fits {
				for i, v := range j.spec.Requests {
					d[i] += v
				}
			}
		}
		qd := s.snapshotQueued(p)
		for q := range s.queues {
			got, w := qd.Stats(q).Demand, want[q]
			if slices.ContainsFunc(got, func(v int64) bool { return v != 0 }) || slices.ContainsFunc(w, func(v int64) bool { return v != 0 }) {
				if !got.Equal(w) {
					return fmt.Sprintf("pool %s: queue %s's demand is %v, want %v", p, q, got, w)
				}
			}
		}
	}
	return ""
}

// settle has every executor report and finish its jobs, and cycles; then
// no job accepting a pool with a cluster may be queued.
func (r *poolRun) settle() string {
	w := r.w
	for range 40 {
		w.clock.Advance(time.Second)
		for _, name := range []string{"c0", "c1", "c2"} {
			p, ok := r.clusterPool[name]
			if !ok {
				continue
			}
			var jobs []JobReport
			for _, st := range r.statuses() {
				if st.Cluster == name && st.State.Live() {
					jobs = append(jobs, JobReport{Job: st.Job, Attempt: st.Attempts, Phase: PhaseSucceeded})
				}
			}
			if _, err := w.srv.Report(w.ctx, &Report{Cluster: name, Pool: p, Nodes: nodesOf(name, 2, clusterCPU(name)), Jobs: jobs}); err != nil {
				return "report: " + err.Error()
			}
		}
		if _, err := w.srv.Cycle(w.ctx); err != nil {
			return "cycle: " + err.Error()
		}
		if m := r.check(); m != "" {
			return m
		}
	}
	for _, st := range r.statuses() {
		if st.State != events.Queued {
			continue
		}
		big := false
		j := r.w.srv.st.jobs.get(st.Job)
		for _, m := range append(r.w.srv.st.gangs.members[gangKey(j.spec)], j) {
			big = big || m.spec.Requests[0] > 4000
		}
		for name, p := range r.clusterPool {
			if r.accepts(st.Job, p) && (!big || clusterCPU(name) == 8) {
				return fmt.Sprintf("job %s (pools %v) still queued though pool %s has a cluster: %s", st.Job, r.pools[st.Job], p, st.Reason)
			}
		}
	}
	return ""
}

func TestPropertyPoolsLeaseOnlyInAcceptedPoolsKeepTheStoresInStepAndStrandNoJob(t *testing.T) {
	params := gopter.DefaultTestParametersWithSeed(20261127)
	params.MinSuccessfulTests, params.MinSize, params.MaxSize = 150, 5, 60
	if testing.Short() {
		params.MinSuccessfulTests = 40
	}
	props := gopter.NewProperties(params)
	props.Property("pools", prop.ForAll(func(seeds []uint64) string {
		cmds := make([]poolCmd, len(seeds))
		for i, s := range seeds {
			cmds[i] = decodePoolCmd(s, false)
		}
		program := func() string {
			var b strings.Builder
			for _, c := range cmds {
				b.WriteString("\n  " + c.String())
			}
			return b.String()
		}
		r := &poolRun{w: newWorld(t), pools: map[string][]string{}, clusterPool: map[string]string{}}
		for _, q := range []string{"A", "B"} {
			if err := r.w.srv.CreateQueue(r.w.ctx, flotilla.Queue{Name: q}); err != nil {
				return err.Error()
			}
		}
		for i, c := range cmds {
			if m := r.do(c); m != "" {
				return fmt.Sprintf("command %d (%s): %s%s", i, c, m, program())
			}
			if m := r.check(); m != "" {
				return fmt.Sprintf("after command %d (%s): %s%s", i, c, m, program())
			}
		}
		if m := r.settle(); m != "" {
			return "settling: " + m + program()
		}
		return ""
	}, gen.SliceOf(gen.UInt64())))
	props.TestingRun(t)
}
