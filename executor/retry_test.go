package executor_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/api"
	"github.com/flotilla-sched/flotilla/backend/memory"
	"github.com/flotilla-sched/flotilla/events"
	"github.com/flotilla-sched/flotilla/executor"
	"github.com/flotilla-sched/flotilla/httpapi"
	"github.com/flotilla-sched/flotilla/internal/fakeclock"
	"github.com/flotilla-sched/flotilla/scheduler"
	"github.com/flotilla-sched/flotilla/server"
)

func TestDefaultFailureReasonIsOOMFor137Only(t *testing.T) {
	for code, want := range map[int]string{137: "oom", 1: "", 143: "", 0: ""} {
		require.Equal(t, want, executor.DefaultFailureReason("j", code), "exit %d", code)
	}
}

// The fake executor reports a job failing with 137 as oom and a reason a
// test injects for another code; a queue's rules on those reasons retry
// the jobs (run-failed naming the reason) until their limit.
func TestFailureReasonsReportedMatchTheQueuesRetryRules(t *testing.T) {
	ctx := context.Background()
	schema := flotilla.MustResourceSchema("cpu", "memory")
	clk := fakeclock.New(time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC))
	be := memory.New(schema)
	srv, err := server.New(ctx, server.Config{Scheduler: scheduler.DefaultConfig(schema), Backend: be, Clock: clk,
		NewID: server.NewULIDs(clk, nil), LeaseTimeout: 30 * time.Second})
	require.NoError(t, err)
	policy := &events.RetryPolicy{MaxAttempts: 9, Rules: []events.RetryRule{
		{OnReasons: []events.FailureReason{events.ReasonOOM}, RetryLimit: 1},
		{OnReasons: []events.FailureReason{events.ReasonEvicted}, RetryLimit: 2},
	}}
	require.NoError(t, srv.CreateQueue(ctx, flotilla.Queue{Name: "A"}, server.WithRetryPolicy(policy)))
	ex, err := executor.New(executor.Config{Cluster: "c1", Nodes: nodes("c1", 2), Service: &httpapi.Local{Server: srv}, Clock: clk,
		Renew: 5 * time.Second, FailureReason: func(job string, code int) string {
			if code == 2 {
				return api.FailureEvicted
			}
			return executor.DefaultFailureReason(job, code)
		}})
	require.NoError(t, err)
	ids, err := srv.SubmitJSON(ctx, []byte(`{"queue": "A", "jobSet": "s", "jobs": [
		{"requests": {"cpu": "1"}, "runtime": "5s", "exitCode": 137},
		{"requests": {"cpu": "1"}, "runtime": "5s", "exitCode": 2}]}`))
	require.NoError(t, err)
	for step := 0; step < 40; step++ {
		_, err := ex.Step(ctx)
		require.NoError(t, err)
		_, err = srv.Cycle(ctx)
		require.NoError(t, err)
		clk.Advance(5 * time.Second)
	}
	evs, err := be.Events(ctx, "A", "s", 0, 0)
	require.NoError(t, err)
	count := map[string]map[events.Type]int{}
	for _, e := range evs {
		if count[e.Job] == nil {
			count[e.Job] = map[events.Type]int{}
		}
		count[e.Job][e.Type]++
		if e.Type == events.RunFailed {
			want := map[string]string{ids[0]: "(oom)", ids[1]: "(evicted)"}[e.Job]
			require.True(t, strings.Contains(e.Reason, want), "%s: %s", e.Job, e.Reason)
		}
	}
	require.Equal(t, 1, count[ids[0]][events.RunFailed], "oom retried once")
	require.Equal(t, 2, count[ids[1]][events.RunFailed], "evicted retried twice")
	for _, id := range ids {
		require.Equal(t, 1, count[id][events.Failed], id)
	}
}
