package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flotilla-sched/flotilla/api"
)

// queueStatuses reads `queue list -o json` as queue → status.
func queueStatuses(t *testing.T, ctx context.Context, url string) map[string]api.QueueStatus {
	t.Helper()
	code, out, errOut := runClient(t, ctx, url, "queue", "list", "-o", "json")
	require.Equal(t, 0, code, errOut)
	var qs []api.Queue
	require.NoError(t, json.Unmarshal([]byte(out), &qs))
	st := map[string]api.QueueStatus{}
	for _, q := range qs {
		st[q.Name] = *q.Status
	}
	return st
}

// Jobs larger than every node, through a real serve and a fake executor:
// submit stores them (rc 0, their ids printed) and warns on standard
// error naming the resource and the largest node; `queue list` counts
// them apart; their queue, whose only demand they are, gets adjusted fair
// share 0, and the other queue the cluster.
func TestSubmitOfJobsNoNodeCanRunWarnsStoresThemAndLeavesTheClusterToTheOtherQueue(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	_, url := serveOn(t, ctx, "-cycle", "100ms")
	for _, q := range []string{"A", "B"} {
		code, _, errOut := runClient(t, ctx, url, "queue", "create", q)
		require.Equal(t, 0, code, errOut)
	}
	nodes := writeFile(t, "nodes.json", `[{"name": "n", "count": 2, "resources": {"cpu": "2", "memory": "4Gi"}},
		{"name": "big", "resources": {"cpu": "4", "memory": "1Gi"}}]`)
	start(t, ctx, "executor", "-server", url, "-cluster", "c1", "-nodes", nodes, "-renew", "200ms")
	for {
		code, out, errOut := runClient(t, ctx, url, "cluster", "list")
		require.Equal(t, 0, code, errOut)
		if strings.Contains(out, "c1") {
			break
		}
		require.NoError(t, ctx.Err(), "the executor never registered")
		time.Sleep(50 * time.Millisecond)
	}
	jobsA := writeFile(t, "a.json", `{"queue": "A", "jobSet": "s", "jobs": [
		{"count": 3, "requests": {"cpu": "16"}, "runtime": "1h"},
		{"requests": {"cpu": "1"}, "runtime": "1h", "count": 0},
		{"count": 2, "requests": {"cpu": "3", "memory": "2Gi"}, "runtime": "1h"}]}`)
	code, out, errOut := runClient(t, ctx, url, "submit", jobsA)
	require.Equal(t, 0, code, errOut)
	require.Len(t, strings.Fields(out), 5, "every job is stored")
	require.Equal(t, "warning: jobs[0]: requests cpu=16 but the largest node (c1/big) has 4: no node of any cluster fits it yet\n"+
		"warning: jobs[2]: requests cpu=3, memory=2Gi but no node has all of it: the largest by cpu (c1/big) has memory=1Gi: no node of any cluster fits it yet\n",
		errOut)
	jobsB := writeFile(t, "b.json", `{"queue": "B", "jobSet": "s", "jobs": [{"count": 20, "requests": {"cpu": "1"}, "runtime": "1h"}]}`)
	code, _, errOut = runClient(t, ctx, url, "submit", jobsB)
	require.Equal(t, 0, code, errOut)
	require.Empty(t, errOut)

	// A cycle's leases appear as its decision is written, a chunk at a
	// time; its shares once the whole decision is: wait for both.
	var st map[string]api.QueueStatus
	for {
		st = queueStatuses(t, ctx, url)
		if st["B"].Leased+st["B"].Running == 8 && st["B"].AdjustedFairShare > 0 {
			break
		}
		require.NoError(t, ctx.Err(), "B never got the cluster: %+v", st)
		time.Sleep(50 * time.Millisecond)
	}
	require.Equal(t, 5, st["A"].Queued)
	require.Equal(t, 5, st["A"].NeverFit)
	require.Zero(t, st["A"].AdjustedFairShare, "A's only demand never fits")
	require.InDelta(t, 1, st["B"].AdjustedFairShare, 1e-9)
	require.Zero(t, st["B"].NeverFit)
	code, out, errOut = runClient(t, ctx, url, "queue", "list")
	require.Equal(t, 0, code, errOut)
	require.Regexp(t, `(?m)^QUEUE\s+FACTOR\s+QUEUED\s+NEVER-FIT\s+LEASED\s`, out)
	require.Regexp(t, `(?m)^A\s+1\s+5\s+5\s+0\s+0\s`, out)
	require.Regexp(t, `(?m)^B\s+1\s+12\s+0\s`, out)
}
