package metrics

import (
	"context"
	"math"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/backend/memory"
	"github.com/flotilla-sched/flotilla/internal/fakeclock"
	"github.com/flotilla-sched/flotilla/scheduler"
	"github.com/flotilla-sched/flotilla/server"
	"github.com/flotilla-sched/flotilla/submit"
)

// FairnessError against the definition, by hand: half the sum over the
// queues with a fair share of |share − adjusted fair share|.
func TestFairnessErrorIsHalfTheSumOverActiveQueuesOfShareOffItsAdjustedFairShare(t *testing.T) {
	for _, tc := range []struct {
		name string
		qs   []scheduler.QueueReport
		want float64
	}{
		{"none", nil, 0},
		{"each at its adjusted fair share", []scheduler.QueueReport{
			{Share: 0.25, FairShare: 0.5, AdjustedFairShare: 0.25}, {Share: 0.75, FairShare: 0.5, AdjustedFairShare: 0.75}}, 0},
		{"one holds all", []scheduler.QueueReport{
			{Share: 1, FairShare: 0.5, AdjustedFairShare: 0.5}, {Share: 0, FairShare: 0.5, AdjustedFairShare: 0.5}}, 0.5},
		{"an inactive queue does not count", []scheduler.QueueReport{
			{Share: 0.6, FairShare: 1, AdjustedFairShare: 1}, {Share: 0.3, FairShare: 0, AdjustedFairShare: 0}}, 0.2},
		{"three queues", []scheduler.QueueReport{
			{Share: 0.5, FairShare: 0.25, AdjustedFairShare: 0.25}, {Share: 0.25, FairShare: 0.25, AdjustedFairShare: 0.25},
			{Share: 0, FairShare: 0.5, AdjustedFairShare: 0.5}}, 0.375},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.InDelta(t, tc.want, FairnessError(tc.qs), 1e-12)
		})
	}
}

// Through a service with a fake clock and two pools: each lease a cycle
// decides observes its job's wait since submission in its queue's
// histogram; each pool's fairness error is set from its own cycle; a
// scrape reports the resource-seconds a preemption took, per queue and
// resource, and the shares with their pool.
func TestCycleMetricsOfAServiceWithAFakeClock(t *testing.T) {
	ctx := context.Background()
	schema := flotilla.MustResourceSchema("cpu", "memory")
	clk := fakeclock.New(time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC))
	srv, err := server.New(ctx, server.Config{Scheduler: scheduler.DefaultConfig(schema), Backend: memory.New(schema), Clock: clk})
	require.NoError(t, err)
	for _, q := range []string{"A", "B"} {
		require.NoError(t, srv.CreateQueue(ctx, flotilla.Queue{Name: q}))
	}
	node := func(c string) []flotilla.Node {
		return []flotilla.Node{{Name: "n", Total: schema.MustParse(map[string]string{"cpu": "4", "memory": "8Gi"})}}
	}
	for c, p := range map[string]string{"ca": "a", "cb": "b"} {
		_, err := srv.Report(ctx, &server.Report{Cluster: c, Pool: p, Nodes: node(c)})
		require.NoError(t, err)
	}
	jobs := func(n int, cpu string, pools ...string) submit.JobTemplate {
		return submit.JobTemplate{Count: &n, Requests: map[string]string{"cpu": cpu}, Pools: pools}
	}
	a, err := srv.Submit(ctx, &submit.Request{Queue: "A", JobSet: "s", Jobs: []submit.JobTemplate{jobs(2, "2", "a")}})
	require.NoError(t, err)
	clk.Advance(3 * time.Second)
	_, err = srv.Submit(ctx, &submit.Request{Queue: "B", JobSet: "s", Jobs: []submit.JobTemplate{jobs(1, "1", "b")}})
	require.NoError(t, err)
	clk.Advance(5 * time.Second)
	m := New(func() *server.Server { return srv }, func() bool { return true })
	start := clk.Now()
	rep, err := srv.Cycle(ctx)
	require.NoError(t, err)
	m.Cycle(rep, clk.Now().Sub(start), nil)
	require.Equal(t, 3, rep.Leased)
	require.Equal(t, 2, testutil.CollectAndCount(m.wait), "a histogram per queue")
	h := testutil.ToFloat64(m.fairness.WithLabelValues("a"))
	require.Zero(t, h, "pool a: A alone, at its adjusted fair share")
	require.Zero(t, testutil.ToFloat64(m.fairness.WithLabelValues("b")))
	text := scrape(t, m)
	require.Contains(t, text, `flotilla_queue_wait_seconds_sum{queue="A"} 16`, "two jobs of A waited 8 s each")
	require.Contains(t, text, `flotilla_queue_wait_seconds_count{queue="A"} 2`)
	require.Contains(t, text, `flotilla_queue_wait_seconds_sum{queue="B"} 5`)
	require.Contains(t, text, `flotilla_queue_share{pool="a",queue="A"} 1`)
	require.Contains(t, text, `flotilla_queue_share{pool="b",queue="B"} 0.25`)

	// A runs for 60 s, then an operator preempts it.
	r, err := srv.Report(ctx, &server.Report{Cluster: "ca"})
	require.NoError(t, err)
	var running []server.JobReport
	for _, l := range r.Leases {
		running = append(running, server.JobReport{Job: l.Job.ID, Attempt: l.Attempt, Phase: server.PhaseRunning})
	}
	_, err = srv.Report(ctx, &server.Report{Cluster: "ca", Jobs: running})
	require.NoError(t, err)
	clk.Advance(time.Minute)
	_, err = srv.Preempt(ctx, server.Selection{IDs: a}, "ops", "")
	require.NoError(t, err)
	text = scrape(t, m)
	require.Contains(t, text, `flotilla_preemption_lost_resource_seconds_total{queue="A",resource="cpu"} 240`, "2 jobs × 2 cpu × 60 s")
	require.Contains(t, text, `flotilla_preemption_lost_resource_seconds_total{queue="A",resource="memory"} 0`)
	require.NotContains(t, text, `flotilla_preemption_lost_resource_seconds_total{queue="B"`)

	// Pool b out of balance: B holds it all, then A's new work there has
	// half of it for a fair share.
	_, err = srv.Report(ctx, &server.Report{Cluster: "cb"})
	require.NoError(t, err)
	_, err = srv.Submit(ctx, &submit.Request{Queue: "B", JobSet: "s", Jobs: []submit.JobTemplate{jobs(3, "1", "b")}})
	require.NoError(t, err)
	rep, err = srv.Cycle(ctx)
	require.NoError(t, err)
	m.Cycle(rep, 0, nil)
	_, err = srv.Submit(ctx, &submit.Request{Queue: "A", JobSet: "s", Jobs: []submit.JobTemplate{jobs(4, "1", "b")}})
	require.NoError(t, err)
	rep, err = srv.Cycle(ctx)
	require.NoError(t, err)
	m.Cycle(rep, 0, nil)
	var bq []scheduler.QueueReport
	for _, p := range rep.Pools {
		if p.Pool == "b" {
			bq = p.Result.Queues
		}
	}
	require.Positive(t, testutil.ToFloat64(m.fairness.WithLabelValues("b")))
	require.InDelta(t, FairnessError(bq), testutil.ToFloat64(m.fairness.WithLabelValues("b")), 1e-12)
	require.False(t, math.IsNaN(testutil.ToFloat64(m.fairness.WithLabelValues("b"))))
}

// scrape is the metrics' text exposition, as the handler serves it.
func scrape(t *testing.T, m *Metrics) string {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	require.Equal(t, 200, rec.Code)
	return rec.Body.String()
}

// The wait histogram observes the leases a cycle wrote, once each: a
// scheduled job whose lease was skipped (PoolResult.Skipped) is not
// observed, so when a later pool leases it the job counts once.
func TestWaitHistogramObservesOnlyTheLeasesWrittenOnce(t *testing.T) {
	now := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	job := func(id string, waited time.Duration) scheduler.Assignment {
		return scheduler.Assignment{Job: &flotilla.Job{ID: id, Queue: "A", SubmitTime: now.Add(-waited)}}
	}
	rep := &server.CycleReport{Time: now, Leased: 2, Pools: []server.PoolResult{
		{Pool: "a", Result: &scheduler.Result{Scheduled: []scheduler.Assignment{job("x", 4*time.Second), job("y", 2*time.Second)}},
			Skipped: []string{"x"}},
		{Pool: "b", Result: &scheduler.Result{Scheduled: []scheduler.Assignment{job("x", 4*time.Second)}}},
	}}
	m := New(func() *server.Server { return nil }, func() bool { return true })
	m.Cycle(rep, 0, nil)
	text := scrape(t, m)
	require.Contains(t, text, `flotilla_queue_wait_seconds_count{queue="A"} 2`)
	require.Contains(t, text, `flotilla_queue_wait_seconds_sum{queue="A"} 6`)
}
