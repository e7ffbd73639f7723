package scheduler_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/queue"
	"github.com/flotilla-sched/flotilla/scheduler"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// world is a small builder for cycles in tests.
type world struct {
	t       testing.TB
	schema  *flotilla.ResourceSchema
	cfg     scheduler.Config
	nodes   []*flotilla.Node
	queues  []*flotilla.Queue
	store   *queue.Store
	running []scheduler.Running
	seq     int
}

func newWorld(t testing.TB) *world {
	schema := flotilla.MustResourceSchema("cpu", "memory", "nvidia.com/gpu")
	w := &world{t: t, schema: schema, cfg: scheduler.DefaultConfig(schema)}
	// The rule tests read per-job reasons; aggregate reports have their own.
	w.cfg.ReportEveryUnscheduled = true
	w.resetStore()
	return w
}

func (w *world) resetStore() {
	s, err := queue.New(w.cfg.Schema, w.cfg.PriorityClasses, w.cfg.DefaultPriorityClass)
	require.NoError(w.t, err)
	w.store = s
}

func (w *world) res(cpu string) flotilla.Resources {
	return w.schema.MustParse(map[string]string{"cpu": cpu})
}

func (w *world) addNodes(n int, cpu string) {
	for range n {
		w.nodes = append(w.nodes, &flotilla.Node{Name: fmt.Sprintf("node-%d", len(w.nodes)), Total: w.res(cpu)})
	}
}

func (w *world) addQueue(name string, factor float64) {
	w.queues = append(w.queues, &flotilla.Queue{Name: name, PriorityFactor: factor})
}

func (w *world) job(q, cpu string, mod ...func(*flotilla.Job)) *flotilla.Job {
	w.seq++
	j := &flotilla.Job{ID: fmt.Sprintf("%s-%d", q, w.seq), Queue: q, Requests: w.res(cpu), SubmitTime: t0}
	for _, m := range mod {
		m(j)
	}
	return j
}

func (w *world) submit(q string, n int, cpu string, mod ...func(*flotilla.Job)) []*flotilla.Job {
	var js []*flotilla.Job
	for range n {
		j := w.job(q, cpu, mod...)
		require.NoError(w.t, w.store.Add(j))
		js = append(js, j)
	}
	return js
}

func (w *world) snapshot() *scheduler.Snapshot {
	return &scheduler.Snapshot{Nodes: w.nodes, Queues: w.queues, Running: w.running, Queued: w.store}
}

func (w *world) schedule() *scheduler.Result {
	s, err := scheduler.New(w.cfg)
	require.NoError(w.t, err)
	res, err := s.Schedule(context.Background(), w.snapshot(), t0)
	require.NoError(w.t, err)
	return res
}

// apply moves scheduled jobs from the store to running.
func (w *world) apply(res *scheduler.Result) {
	for _, a := range res.Scheduled {
		_, ok := w.store.Remove(a.Job.ID)
		require.True(w.t, ok, a.Job.ID)
		w.running = append(w.running, scheduler.Running{Job: a.Job, Node: a.Node, Start: t0})
	}
}

func countByQueue(as []scheduler.Assignment) map[string]int {
	m := map[string]int{}
	for _, a := range as {
		m[a.Job.Queue]++
	}
	return m
}

func withPriority(p uint32) func(*flotilla.Job) { return func(j *flotilla.Job) { j.Priority = p } }

// labelledNode adds a node of cpu cores named name, with labels.
func labelledNode(w *world, name, cpu string, labels map[string]string) {
	w.nodes = append(w.nodes, &flotilla.Node{Name: name, Total: w.res(cpu), Labels: labels})
}
