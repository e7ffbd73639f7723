package scheduler_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/leanovate/gopter"
	"github.com/leanovate/gopter/gen"
	"github.com/leanovate/gopter/prop"
	"github.com/stretchr/testify/require"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/queue"
	"github.com/flotilla-sched/flotilla/scheduler"
)

// genWorld is a random cluster, queues, running and queued jobs, drawn from
// one seed so that gopter can report a failing seed.
type genWorld struct {
	seed   uint64
	cfg    scheduler.Config
	snap   *scheduler.Snapshot
	queued []*flotilla.Job
}

func makeWorld(t testing.TB, seed uint64, lookback int) *genWorld {
	return makeWorldClasses(t, seed, lookback, []string{"", flotilla.ArmadaDefault, flotilla.ArmadaPreemptible})
}

// makeWorldClasses draws jobs' priority classes from classes.
func makeWorldClasses(t testing.TB, seed uint64, lookback int, classes []string) *genWorld {
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	schema := flotilla.MustResourceSchema("cpu", "memory", "nvidia.com/gpu")
	cfg := scheduler.DefaultConfig(schema)
	cfg.MaxQueueLookback = lookback
	cfg.ReportEveryUnscheduled = true
	w := &genWorld{seed: seed, cfg: cfg, snap: &scheduler.Snapshot{}}
	zones := []string{"a", "b"}
	for i := range 1 + rng.IntN(8) {
		n := &flotilla.Node{
			Name:   fmt.Sprintf("n%d", i),
			Labels: map[string]string{"zone": zones[rng.IntN(2)]},
			Total: flotilla.Resources{
				int64(1+rng.IntN(16)) * 1000,
				int64(1+rng.IntN(64)) << 30,
				int64(rng.IntN(3)) * 1000,
			},
			Unschedulable: rng.IntN(10) == 0,
			Cluster:       fmt.Sprintf("c%d", rng.IntN(2)),
		}
		if rng.IntN(4) == 0 {
			n.Taints = []flotilla.Taint{{Key: "dedicated", Value: "gpu", Effect: flotilla.TaintNoSchedule}}
		}
		if rng.IntN(6) == 0 {
			n.Taints = append(n.Taints, flotilla.Taint{Key: "soft", Effect: flotilla.TaintPreferNoSchedule})
		}
		w.snap.Nodes = append(w.snap.Nodes, n)
	}
	factors := []float64{0.5, 1, 2, 4}
	for i := range 1 + rng.IntN(4) {
		w.snap.Queues = append(w.snap.Queues, &flotilla.Queue{Name: fmt.Sprintf("q%d", i), PriorityFactor: factors[rng.IntN(4)]})
	}
	store, err := queue.New(cfg.Schema, cfg.PriorityClasses, cfg.DefaultPriorityClass)
	require.NoError(t, err)
	newJob := func(id int) *flotilla.Job {
		j := &flotilla.Job{
			ID:            fmt.Sprintf("j%03d", id),
			Queue:         w.snap.Queues[rng.IntN(len(w.snap.Queues))].Name,
			PriorityClass: classes[rng.IntN(len(classes))],
			Priority:      uint32(rng.IntN(3)),
			SubmitTime:    t0.Add(time.Duration(rng.IntN(5)) * time.Second),
			Requests: flotilla.Resources{
				int64(1+rng.IntN(8)) * 500,
				int64(1+rng.IntN(16)) << 30,
				0,
			},
		}
		if rng.IntN(8) == 0 {
			j.Requests[2] = 1000
		}
		if rng.IntN(4) == 0 {
			j.NodeSelector = map[string]string{"zone": zones[rng.IntN(2)]}
		}
		if rng.IntN(3) == 0 {
			j.Tolerations = []flotilla.Toleration{{Key: "dedicated", Operator: flotilla.TolerationExists}}
		}
		return j
	}
	// Running jobs: placed first-fit wherever they fit, ignoring constraints
	// as a real cluster's history may.
	used := make([]flotilla.Resources, len(w.snap.Nodes))
	for i, n := range w.snap.Nodes {
		used[i] = n.Total.Clone()
	}
	id := 0
	for range rng.IntN(12) {
		j := newJob(id)
		id++
		ni := rng.IntN(len(w.snap.Nodes))
		if j.Requests.Fits(used[ni]) {
			used[ni].Sub(j.Requests)
			w.snap.Running = append(w.snap.Running, scheduler.Running{Job: j, Node: w.snap.Nodes[ni].Name, Start: t0})
		}
	}
	// Running gangs: preemptible members of one queue over several nodes.
	gangs := rng.IntN(3)
	if !slices.Contains(classes, flotilla.ArmadaPreemptible) {
		gangs = 0 // a preemption-free world
	}
	for g := range gangs {
		size := 2 + rng.IntN(2)
		q := w.snap.Queues[rng.IntN(len(w.snap.Queues))].Name
		var members []scheduler.Running
		for m := range size {
			j := newJob(id)
			id++
			j.Queue, j.PriorityClass = q, flotilla.ArmadaPreemptible
			j.Gang = flotilla.Gang{ID: fmt.Sprintf("g%d", g), Cardinality: size}
			ni := (rng.IntN(len(w.snap.Nodes)) + m) % len(w.snap.Nodes)
			if !j.Requests.Fits(used[ni]) {
				break
			}
			used[ni].Sub(j.Requests)
			members = append(members, scheduler.Running{Job: j, Node: w.snap.Nodes[ni].Name, Start: t0})
		}
		if len(members) == size {
			w.snap.Running = append(w.snap.Running, members...)
			continue
		}
		for _, m := range members {
			for ni, n := range w.snap.Nodes {
				if n.Name == m.Node {
					used[ni].Add(m.Job.Requests)
				}
			}
		}
	}
	// Queued gangs, in preemption-capable worlds: 2–4 members of one queue,
	// sometimes with a uniformity label, sometimes one member short.
	for g := range gangs * 2 {
		size := 2 + rng.IntN(3)
		q := w.snap.Queues[rng.IntN(len(w.snap.Queues))].Name
		label := []string{"", "", "zone"}[rng.IntN(3)]
		present := size
		if rng.IntN(5) == 0 {
			present--
		}
		for range present {
			j := newJob(id)
			id++
			j.Queue, j.NodeSelector = q, nil
			j.Gang = flotilla.Gang{ID: fmt.Sprintf("q%d", g), Cardinality: size, NodeUniformityLabel: label}
			require.NoError(t, store.Add(j))
			w.queued = append(w.queued, j)
		}
	}
	for range rng.IntN(60) {
		j := newJob(id)
		id++
		require.NoError(t, store.Add(j))
		w.queued = append(w.queued, j)
	}
	w.snap.Queued = store
	return w
}

func (w *genWorld) schedule(t testing.TB) *scheduler.Result {
	s, err := scheduler.New(w.cfg)
	require.NoError(t, err)
	res, err := s.Schedule(context.Background(), w.snap, t0)
	require.NoError(t, err)
	return res
}

func properties(t *testing.T) *gopter.Properties {
	params := gopter.DefaultTestParametersWithSeed(20261121)
	params.MinSuccessfulTests = 300
	return gopter.NewProperties(params)
}

func TestPropertyAgreesWithNaiveOracle(t *testing.T) {
	p := properties(t)
	// One non-preemptible class: nothing can be preempted, so the naive
	// progressive-filling cycle is the whole specification.
	p.Property("fast cycle == naive cycle", prop.ForAll(func(seed uint64, lookback int) string {
		w := makeWorldClasses(t, seed, lookback, []string{"", flotilla.ArmadaDefault})
		got := w.schedule(t).Scheduled
		o := &oracle{schema: w.cfg.Schema, classes: map[string]flotilla.PriorityClass{}, defClass: w.cfg.DefaultPriorityClass, lookback: lookback}
		for _, pc := range w.cfg.PriorityClasses {
			o.classes[pc.Name] = pc
		}
		want := o.run(w.snap, w.queued)
		if len(got) != len(want) {
			return fmt.Sprintf("seed %d: %d placements, oracle %d", seed, len(got), len(want))
		}
		for i := range got {
			if got[i].Job.ID != want[i].Job.ID || got[i].Node != want[i].Node {
				return fmt.Sprintf("seed %d: placement %d is %s→%s, oracle %s→%s", seed, i, got[i].Job.ID, got[i].Node, want[i].Job.ID, want[i].Node)
			}
		}
		return ""
	}, gen.UInt64(), gen.IntRange(0, 6)))
	p.TestingRun(t)
}

func TestPropertyPlacementsAreValid(t *testing.T) {
	p := properties(t)
	p.Property("no over-commit at any priority; selectors, taints and cordons honoured", prop.ForAll(func(seed uint64) string {
		w := makeWorld(t, seed, 0)
		res := w.schedule(t)
		if msg := overCommitted(w, res); msg != "" {
			return fmt.Sprintf("seed %d: %s", seed, msg)
		}
		nodes := map[string]*flotilla.Node{}
		for _, n := range w.snap.Nodes {
			nodes[n.Name] = n
		}
		for _, a := range res.Scheduled {
			n := nodes[a.Node]
			if n.Unschedulable {
				return fmt.Sprintf("seed %d: %s placed on cordoned %s", seed, a.Job.ID, a.Node)
			}
			if !flotilla.SelectorMatches(a.Job.NodeSelector, n.Labels) || !flotilla.TaintsTolerated(n.Taints, a.Job.Tolerations) {
				return fmt.Sprintf("seed %d: %s on %s violates selector or taints", seed, a.Job.ID, a.Node)
			}
		}
		return ""
	}, gen.UInt64()))
	p.TestingRun(t)
}

// overCommitted checks the cluster after applying res: at every class
// priority p, the jobs that count there (priority ≥ p, and non-preemptible
// ones always) fit every node. It returns a description of the first
// violation, or "".
func overCommitted(w *genWorld, res *scheduler.Result) string {
	class := func(j *flotilla.Job) flotilla.PriorityClass {
		pc, _ := classIn(w.cfg, j)
		return pc
	}
	gone := map[string]bool{}
	for _, p := range res.Preempted {
		gone[p.Job.ID] = true
	}
	type placed struct {
		j    *flotilla.Job
		node string
	}
	var all []placed
	for _, r := range w.snap.Running {
		if !gone[r.Job.ID] {
			all = append(all, placed{r.Job, r.Node})
		}
	}
	for _, a := range res.Scheduled {
		all = append(all, placed{a.Job, a.Node})
	}
	for _, pc := range w.cfg.PriorityClasses {
		free := map[string]flotilla.Resources{}
		for _, n := range w.snap.Nodes {
			free[n.Name] = n.Total.Clone()
		}
		for _, x := range all {
			c := class(x.j)
			if c.Priority >= pc.Priority || !c.Preemptible {
				free[x.node].Sub(x.j.Requests)
				if free[x.node].AnyNegative() {
					return fmt.Sprintf("%s over-committed at priority %d by %s", x.node, pc.Priority, x.j.ID)
				}
			}
		}
	}
	return ""
}

func TestPropertyDeterministic(t *testing.T) {
	p := properties(t)
	p.Property("same inputs, same result", prop.ForAll(func(seed uint64, lookback int) bool {
		a := makeWorld(t, seed, lookback).schedule(t)
		b := makeWorld(t, seed, lookback).schedule(t)
		if len(a.Scheduled) != len(b.Scheduled) || len(a.UnscheduledJobs) != len(b.UnscheduledJobs) {
			return false
		}
		for i := range a.Scheduled {
			if a.Scheduled[i].Job.ID != b.Scheduled[i].Job.ID || a.Scheduled[i].Node != b.Scheduled[i].Node {
				return false
			}
		}
		for i := range a.UnscheduledJobs {
			if a.UnscheduledJobs[i].Job.ID != b.UnscheduledJobs[i].Job.ID || !reflect.DeepEqual(a.UnscheduledJobs[i].Reason, b.UnscheduledJobs[i].Reason) {
				return false
			}
		}
		return true
	}, gen.UInt64(), gen.IntRange(0, 6)))
	p.TestingRun(t)
}

// After a cycle without lookback, no queue is below its fair share holding a
// queued job that would still fit somewhere while another queue is above
// its own fair share.
func TestPropertyNoStarvedQueueBesideAnOverServedOne(t *testing.T) {
	p := properties(t)
	p.Property("max-min after filling", prop.ForAll(func(seed uint64) string {
		w := makeWorld(t, seed, 0)
		res := w.schedule(t)
		free := map[string]flotilla.Resources{}
		for _, n := range w.snap.Nodes {
			free[n.Name] = n.Total.Clone()
		}
		for _, r := range w.snap.Running {
			free[r.Node].Sub(r.Job.Requests)
		}
		for _, a := range res.Scheduled {
			free[a.Node].Sub(a.Job.Requests)
		}
		over := ""
		for _, q := range res.Queues {
			if q.Share > q.FairShare+1e-12 {
				over = q.Name
			}
		}
		if over == "" {
			return ""
		}
		report := map[string]scheduler.QueueReport{}
		for _, q := range res.Queues {
			report[q.Name] = q
		}
		for _, u := range res.UnscheduledJobs {
			q := report[u.Job.Queue]
			// A gang member fits only with its whole gang, which
			// TestPropertyGangsAllOrNothing and package gang check.
			if q.Share >= q.FairShare || u.Job.IsGang() {
				continue
			}
			for _, n := range w.snap.Nodes {
				if !n.Unschedulable && u.Job.Requests.Fits(free[n.Name]) &&
					flotilla.SelectorMatches(u.Job.NodeSelector, n.Labels) && flotilla.TaintsTolerated(n.Taints, u.Job.Tolerations) {
					return fmt.Sprintf("seed %d: %s below fair share with %s fitting on %s while %s is above", seed, q.Name, u.Job.ID, n.Name, over)
				}
			}
		}
		return ""
	}, gen.UInt64()))
	p.TestingRun(t)
}
