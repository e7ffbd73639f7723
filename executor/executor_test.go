package executor_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/api"
	"github.com/flotilla-sched/flotilla/backend"
	"github.com/flotilla-sched/flotilla/backend/memory"
	"github.com/flotilla-sched/flotilla/events"
	"github.com/flotilla-sched/flotilla/executor"
	"github.com/flotilla-sched/flotilla/httpapi"
	"github.com/flotilla-sched/flotilla/internal/fakeclock"
	"github.com/flotilla-sched/flotilla/scheduler"
	"github.com/flotilla-sched/flotilla/server"
)

func nodes(cluster string, n int) []api.Node {
	out := make([]api.Node, n)
	for i := range out {
		out[i] = api.Node{Name: fmt.Sprintf("%s-n%d", cluster, i), Resources: map[string]string{"cpu": "4", "memory": "16Gi"}}
	}
	return out
}

// TestJobsOfAKilledExecutorExpireAndRunToSuccessOnTheOtherCluster runs
// the service with two fake executors in process: one dies mid-run; its
// jobs' leases expire, they are leased to the other cluster, and every job
// succeeds, with never two live leases for one job.
func TestJobsOfAKilledExecutorExpireAndRunToSuccessOnTheOtherCluster(t *testing.T) {
	ctx := context.Background()
	schema := flotilla.MustResourceSchema("cpu", "memory")
	clk := fakeclock.New(time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC))
	be := memory.New(schema)
	srv, err := server.New(ctx, server.Config{Scheduler: scheduler.DefaultConfig(schema), Backend: be, Clock: clk,
		NewID: server.NewULIDs(clk, nil), LeaseTimeout: 30 * time.Second})
	require.NoError(t, err)
	require.NoError(t, srv.CreateQueue(ctx, flotilla.Queue{Name: "A"}))
	var exs []*executor.Executor
	for _, c := range []string{"c1", "c2"} {
		ex, err := executor.New(executor.Config{Cluster: c, Nodes: nodes(c, 4), Service: &httpapi.Local{Server: srv}, Clock: clk, Renew: 5 * time.Second})
		require.NoError(t, err)
		exs = append(exs, ex)
	}
	ids, err := srv.SubmitJSON(ctx, []byte(`{"queue": "A", "jobSet": "s", "jobs": [
		{"count": 60, "requests": {"cpu": "1"}, "runtime": "40s"},
		{"count": 4, "requests": {"cpu": "1"}, "runtime": "40s", "gang": {"id": "g", "cardinality": 4}}]}`))
	require.NoError(t, err)
	dead := map[int]bool{}
	var killedHeld []string
	for step := 0; step < 200; step++ {
		if step == 3 {
			dead[0] = true // c1 dies holding jobs
			killedHeld = exs[0].Held()
		}
		for i, ex := range exs {
			if !dead[i] {
				_, err := ex.Step(ctx)
				require.NoError(t, err)
			}
		}
		_, err := srv.Cycle(ctx)
		require.NoError(t, err)
		clk.Advance(5 * time.Second)
	}
	require.NotEmpty(t, killedHeld)
	for _, id := range ids {
		st, err := srv.Status(ctx, id)
		require.NoError(t, err)
		require.Equal(t, events.SucceededState, st[0].State, id)
	}
	evs, err := be.Events(ctx, "A", "s", 0, 0)
	require.NoError(t, err)
	live := map[string]string{}
	expired := map[string]bool{}
	for _, e := range evs {
		switch e.Type {
		case events.Leased:
			require.Empty(t, live[e.Job], "job %s leased while it holds a live lease", e.Job)
			live[e.Job] = e.Cluster
			if expired[e.Job] {
				require.Equal(t, "c2", e.Cluster, "after its lease expired on c1, %s runs on c2", e.Job)
			}
		case events.LeaseExpired:
			require.Equal(t, "c1", live[e.Job])
			expired[e.Job] = true
			delete(live, e.Job)
		case events.Succeeded, events.Failed, events.Preempted, events.LeaseReturned, events.Cancelled:
			delete(live, e.Job)
		}
	}
	for _, id := range killedHeld {
		require.True(t, expired[id], "the dead cluster's job %s shows lease-expired", id)
	}
}

// TestExecutorWhoseJobsTheServiceLostStopsThemAndLeasesAgain: a service
// restarted without its state (a new in-memory backend) refuses the
// executor's report of jobs it does not know; the executor stops them,
// reports again, and takes the new service's leases.
func TestExecutorWhoseJobsTheServiceLostStopsThemAndLeasesAgain(t *testing.T) {
	ctx := context.Background()
	schema := flotilla.MustResourceSchema("cpu", "memory")
	clk := fakeclock.New(time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC))
	newSrv := func() *server.Server {
		srv, err := server.New(ctx, server.Config{Scheduler: scheduler.DefaultConfig(schema), Backend: memory.New(schema), Clock: clk})
		require.NoError(t, err)
		require.NoError(t, srv.CreateQueue(ctx, flotilla.Queue{Name: "A"}))
		return srv
	}
	local := &httpapi.Local{Server: newSrv()}
	ex, err := executor.New(executor.Config{Cluster: "c1", Nodes: nodes("c1", 1), Service: local, Clock: clk})
	require.NoError(t, err)
	_, err = local.Server.SubmitJSON(ctx, []byte(`{"queue": "A", "jobSet": "s", "jobs": [{"requests": {"cpu": "1"}, "runtime": "1h"}]}`))
	require.NoError(t, err)
	_, err = ex.Step(ctx)
	require.NoError(t, err)
	_, err = local.Server.Cycle(ctx)
	require.NoError(t, err)
	_, err = ex.Step(ctx)
	require.NoError(t, err)
	require.Len(t, ex.Held(), 1)

	local.Server = newSrv() // the service lost everything
	ids, err := local.Server.SubmitJSON(ctx, []byte(`{"queue": "A", "jobSet": "s", "jobs": [{"requests": {"cpu": "1"}, "runtime": "1h"}]}`))
	require.NoError(t, err)
	_, err = ex.Step(ctx)
	require.NoError(t, err, "the refused jobs are dropped and the report made again")
	require.Empty(t, ex.Held())
	require.Equal(t, 1, ex.Finished(api.PhaseStopped))
	_, err = local.Server.Cycle(ctx)
	require.NoError(t, err)
	_, err = ex.Step(ctx)
	require.NoError(t, err)
	require.Equal(t, ids, ex.Held())
}

// The executor hears of its cluster's cordon in the service's answers:
// OnCordon is called once per change, Cordoned follows the last answer.
func TestExecutorIsToldOfItsClustersCordonOncePerChange(t *testing.T) {
	ctx := context.Background()
	schema := flotilla.MustResourceSchema("cpu", "memory")
	clk := fakeclock.New(time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC))
	srv, err := server.New(ctx, server.Config{Scheduler: scheduler.DefaultConfig(schema), Backend: memory.New(schema), Clock: clk})
	require.NoError(t, err)
	var heard []bool
	ex, err := executor.New(executor.Config{Cluster: "c1", Nodes: nodes("c1", 1), Service: &httpapi.Local{Server: srv}, Clock: clk,
		OnCordon: func(c bool) { heard = append(heard, c) }})
	require.NoError(t, err)
	step := func() {
		_, err := ex.Step(ctx)
		require.NoError(t, err)
	}
	step()
	require.NoError(t, srv.Cordon(ctx, backend.Cordon{Kind: backend.CordonCluster, Name: "c1"}, true))
	step()
	step()
	require.True(t, ex.Cordoned())
	require.NoError(t, srv.Cordon(ctx, backend.Cordon{Kind: backend.CordonCluster, Name: "c1"}, false))
	step()
	require.False(t, ex.Cordoned())
	require.Equal(t, []bool{true, false}, heard)
}
