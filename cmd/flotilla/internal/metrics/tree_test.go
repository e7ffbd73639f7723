package metrics

import (
	"context"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/backend/memory"
	"github.com/flotilla-sched/flotilla/scheduler"
	"github.com/flotilla-sched/flotilla/server"
)

// fakeSource is a service's queues and groups as the collector reads them.
type fakeSource struct {
	qs   []server.QueueInfo
	gs   []server.GroupInfo
	lost map[string][]float64
}

func (f fakeSource) ListQueues(context.Context) ([]server.QueueInfo, error) { return f.qs, nil }
func (f fakeSource) ListGroups(context.Context) ([]server.GroupInfo, error) { return f.gs, nil }
func (f fakeSource) PreemptionLoss() map[string][]float64                   { return f.lost }
func (f fakeSource) Schema() *flotilla.ResourceSchema {
	return flotilla.MustResourceSchema("cpu", "memory")
}

// A scrape reports each group's share, fair share, adjusted fair share and
// usage, and each queue's usage, as the last cycle left them.
func TestScrapeReportsEachGroupsSharesAndUsageAndEachQueuesUsage(t *testing.T) {
	src := fakeSource{
		qs: []server.QueueInfo{{Queue: flotilla.Queue{Name: "nlp", Parent: "research"},
			Report: scheduler.QueueReport{Share: 0.5, FairShare: 0.264, AdjustedFairShare: 0.406, Usage: 0.375}}},
		gs: []server.GroupInfo{
			{QueueGroup: flotilla.QueueGroup{Name: "research"},
				Report: scheduler.GroupReport{Share: 0.6875, FairShare: 0.583, AdjustedFairShare: 0.594, Usage: 0.625}},
			{QueueGroup: flotilla.QueueGroup{Name: "prod"}},
		},
	}
	c := newQueueCollector(func() source { return src })
	want := `
# HELP flotilla_group_adjusted_fair_share The queue group's demand-adjusted fair share in the pool's last cycle.
# TYPE flotilla_group_adjusted_fair_share gauge
flotilla_group_adjusted_fair_share{group="prod",pool="default"} 0
flotilla_group_adjusted_fair_share{group="research",pool="default"} 0.594
# HELP flotilla_group_fair_share The queue group's fair share in the pool's last cycle.
# TYPE flotilla_group_fair_share gauge
flotilla_group_fair_share{group="prod",pool="default"} 0
flotilla_group_fair_share{group="research",pool="default"} 0.583
# HELP flotilla_group_share The queue group's share (its children's summed) in the pool's last cycle.
# TYPE flotilla_group_share gauge
flotilla_group_share{group="prod",pool="default"} 0
flotilla_group_share{group="research",pool="default"} 0.6875
# HELP flotilla_group_usage The queue group's decayed average share after the pool's last cycle (its children's summed; 0 when usage memory is off).
# TYPE flotilla_group_usage gauge
flotilla_group_usage{group="prod",pool="default"} 0
flotilla_group_usage{group="research",pool="default"} 0.625
# HELP flotilla_queue_usage The queue's decayed average share after the pool's last cycle (the scheduler's usage memory; 0 when off).
# TYPE flotilla_queue_usage gauge
flotilla_queue_usage{pool="default",queue="nlp"} 0.375
# HELP flotilla_queue_adjusted_fair_share The queue's demand-adjusted fair share in the pool's last cycle.
# TYPE flotilla_queue_adjusted_fair_share gauge
flotilla_queue_adjusted_fair_share{pool="default",queue="nlp"} 0.406
`
	require.NoError(t, testutil.CollectAndCompare(c, strings.NewReader(want),
		"flotilla_group_share", "flotilla_group_fair_share", "flotilla_group_adjusted_fair_share", "flotilla_group_usage",
		"flotilla_queue_usage", "flotilla_queue_adjusted_fair_share"))
	follower := newQueueCollector(func() source { return nil })
	require.Equal(t, 0, testutil.CollectAndCount(follower), "a follower reports no queue or group")
}

// The service's groups reach the scrape through New: a group created in
// the service is reported (zero before its first cycle).
func TestScrapeOfAServiceReportsItsGroups(t *testing.T) {
	srv := newTestServer(t)
	require.NoError(t, srv.CreateGroup(context.Background(), flotilla.QueueGroup{Name: "research"}))
	m := New(func() *server.Server { return srv }, func() bool { return true })
	require.Equal(t, 1, testutil.CollectAndCount(m.reg, "flotilla_group_fair_share"))
	require.Equal(t, 1, testutil.CollectAndCount(m.reg, "flotilla_queue_usage"))
}

func newTestServer(t *testing.T) *server.Server {
	t.Helper()
	schema := flotilla.MustResourceSchema("cpu", "memory")
	srv, err := server.New(context.Background(), server.Config{
		Scheduler: scheduler.DefaultConfig(schema), Backend: memory.New(schema), Clock: server.SystemClock{},
	})
	require.NoError(t, err)
	require.NoError(t, srv.CreateQueue(context.Background(), flotilla.Queue{Name: "A"}))
	return srv
}
