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

// queueShares reads `queue list -o json` as queue@pool → fair share.
func queueShares(t *testing.T, ctx context.Context, url string) map[string]float64 {
	t.Helper()
	code, out, errOut := runClient(t, ctx, url, "queue", "list", "-o", "json")
	require.Equal(t, 0, code, errOut)
	var qs []api.Queue
	require.NoError(t, json.Unmarshal([]byte(out), &qs))
	fair := map[string]float64{}
	for _, q := range qs {
		for _, p := range q.Status.Pools {
			fair[q.Name+"@"+p.Pool] = p.FairShare
		}
	}
	return fair
}

// statusOf reads `status -o json` of jobs.
func statusOf(t *testing.T, ctx context.Context, url string, ids ...string) []api.JobStatus {
	t.Helper()
	code, out, errOut := runClient(t, ctx, url, append([]string{"status", "-o", "json"}, ids...)...)
	require.Equal(t, 0, code, errOut)
	var sts []api.JobStatus
	dec := json.NewDecoder(strings.NewReader(out))
	for dec.More() {
		var st api.JobStatus
		require.NoError(t, dec.Decode(&st))
		sts = append(sts, st)
	}
	require.Len(t, sts, len(ids))
	return sts
}

// Two pools through a real serve and two fake executors: queue B's jobs
// accept pool b only, queue A's both; pool a's fair shares count A alone,
// pool b's A and B; B's jobs never lease to pool a's cluster; `cluster
// list` and `queue list` show the pools; a bad -pool exits 2.
func TestTwoPoolsAgainstServeHaveTheirOwnFairSharesAndKeepJobsInTheirPools(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	_, url := serveOn(t, ctx, "-cycle", "100ms")
	for _, q := range []string{"A", "B"} {
		code, _, errOut := runClient(t, ctx, url, "queue", "create", q)
		require.Equal(t, 0, code, errOut)
	}
	nodes := writeFile(t, "nodes.json", `[{"name": "n", "count": 2, "resources": {"cpu": "2", "memory": "4Gi"}}]`)
	code, _, errOut := runClient(t, ctx, url, "executor", "-cluster", "cx", "-nodes", nodes, "-pool", "a b")
	require.Equal(t, 2, code)
	require.Contains(t, errOut, `pool "a b"`)
	start(t, ctx, "executor", "-server", url, "-cluster", "ca", "-nodes", nodes, "-pool", "a", "-renew", "200ms")
	start(t, ctx, "executor", "-server", url, "-cluster", "cb", "-nodes", nodes, "-pool", "b", "-renew", "200ms")
	bad := writeFile(t, "bad.json", `{"queue": "B", "jobSet": "s", "jobs": [{"requests": {"cpu": "1"}, "pools": ["b", "b", "-x"]}]}`)
	code, _, errOut = runClient(t, ctx, url, "submit", bad)
	require.Equal(t, 2, code)
	require.Contains(t, errOut, `jobs[0].pools[1] "b"`)
	require.Contains(t, errOut, `jobs[0].pools[2] "-x"`)
	jobsB := writeFile(t, "b.json", `{"queue": "B", "jobSet": "s", "jobs": [{"count": 8, "requests": {"cpu": "1"}, "runtime": "1h", "pools": ["b"]}]}`)
	code, out, errOut := runClient(t, ctx, url, "submit", jobsB)
	require.Equal(t, 0, code, errOut)
	idsB := strings.Fields(out)
	jobsA := writeFile(t, "a.json", `{"queue": "A", "jobSet": "s", "jobs": [{"count": 8, "requests": {"cpu": "1"}, "runtime": "1h", "pools": ["a", "b"]}]}`)
	code, _, errOut = runClient(t, ctx, url, "submit", jobsA)
	require.Equal(t, 0, code, errOut)

	var fair map[string]float64
	for {
		fair = queueShares(t, ctx, url)
		if fair["A@b"] > 0 && fair["A@a"] > 0 {
			break
		}
		require.NoError(t, ctx.Err(), "no cycle saw both queues: %v", fair)
		time.Sleep(50 * time.Millisecond)
	}
	require.InDelta(t, 1, fair["A@a"], 1e-9, "pool a: only A has work accepting it")
	require.Zero(t, fair["B@a"])
	require.InDelta(t, 0.5, fair["A@b"], 1e-9)
	require.InDelta(t, 0.5, fair["B@b"], 1e-9)
	for _, st := range statusOf(t, ctx, url, idsB...) {
		require.NotEqual(t, "ca", st.Cluster, "job %s of pool b leased to pool a's cluster", st.Job)
	}
	code, out, errOut = runClient(t, ctx, url, "events", "-queue", "B", "-jobset", "s", "-o", "json")
	require.Equal(t, 0, code, errOut)
	for _, e := range parseEvents(t, out) {
		require.NotEqual(t, "ca", e.Cluster, "event %+v", e)
	}
	code, out, errOut = runClient(t, ctx, url, "cluster", "list")
	require.Equal(t, 0, code, errOut)
	require.Regexp(t, `(?m)^ca\s+a\s+2\s`, out)
	require.Regexp(t, `(?m)^cb\s+b\s+2\s`, out)
	code, out, errOut = runClient(t, ctx, url, "queue", "list")
	require.Equal(t, 0, code, errOut)
	require.Regexp(t, `(?m)^B\s.*\n  @a\s+0\s+-\s+0\s+0\.000\s+0\.000\s`, out, "B has no work in pool a")
	require.Regexp(t, `(?m)^B\s.*\n.*\n  @b\s+\d+\s+-\s+\d+\s+\S+\s+0\.500\s`, out)
}

// Pools survive a restart on PostgreSQL: the clusters' pools are read
// back before their executors report again, and jobs accepting pool b
// only stay queued while pool a's cluster alone reports, then run on
// pool b's once it reports.
func TestServeOnPostgresRebuildsPoolsAfterARestart(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	srv, url, args, nodes := servePostgresWithQueueA(t, ctx)
	ea := start(t, ctx, "executor", "-server", url, "-cluster", "ca", "-nodes", nodes, "-pool", "a", "-renew", "200ms")
	eb := start(t, ctx, "executor", "-server", url, "-cluster", "cb", "-nodes", nodes, "-pool", "b", "-renew", "200ms")
	for {
		code, out, errOut := runClient(t, ctx, url, "cluster", "list", "-o", "json")
		require.Equal(t, 0, code, errOut)
		if strings.Contains(out, `"pool":"a"`) && strings.Contains(out, `"pool":"b"`) {
			break
		}
		require.NoError(t, ctx.Err())
		time.Sleep(50 * time.Millisecond)
	}
	for _, p := range []*proc{ea, eb} {
		require.NoError(t, p.cmd.Process.Kill())
	}
	jobs := writeFile(t, "jobs.json", `{"queue": "A", "jobSet": "s", "jobs": [{"count": 2, "requests": {"cpu": "1"}, "runtime": "1h", "pools": ["b"]}]}`)
	code, out, errOut := runClient(t, ctx, url, "submit", jobs)
	require.Equal(t, 0, code, errOut)
	ids := strings.Fields(out)
	killServe(t, srv)

	_, url2 := serveOn(t, ctx, args...)
	require.Equal(t, url, url2)
	code, out, errOut = runClient(t, ctx, url, "cluster", "list", "-o", "json")
	require.Equal(t, 0, code, errOut)
	var cs []api.Cluster
	require.NoError(t, json.Unmarshal([]byte(out), &cs))
	require.Len(t, cs, 2)
	require.Equal(t, "a", cs[0].Pool)
	require.Equal(t, "b", cs[1].Pool)
	start(t, ctx, "executor", "-server", url, "-cluster", "ca", "-nodes", nodes, "-pool", "a", "-renew", "200ms")
	// Pool a's cluster reports and cycles run: the jobs stay queued.
	waitForReported(t, ctx, url, "ca")
	time.Sleep(500 * time.Millisecond) // five cycles with ca alive
	for _, st := range statusOf(t, ctx, url, ids...) {
		require.Equal(t, "queued", st.State, "job %s accepting pool b only", st.Job)
		require.Contains(t, st.Reason, "pool b:")
	}
	start(t, ctx, "executor", "-server", url, "-cluster", "cb", "-nodes", nodes, "-pool", "b", "-renew", "200ms")
	waitForEvent(t, ctx, url, "A", "s", "running")
	for {
		sts := statusOf(t, ctx, url, ids...)
		if sts[0].Cluster != "" && sts[1].Cluster != "" {
			require.Equal(t, "cb", sts[0].Cluster)
			require.Equal(t, "cb", sts[1].Cluster)
			break
		}
		require.NoError(t, ctx.Err())
		time.Sleep(50 * time.Millisecond)
	}
}

// waitForReported polls `cluster list` until cluster c is alive.
// servePostgresWithQueueA starts serve on PostgreSQL at a free port with
// a 100 ms cycle and creates queue A; it returns serve's arguments, for a
// restart, and a nodes file of one 4-cpu node: where the restart tests of
// pools begin.
func servePostgresWithQueueA(t *testing.T, ctx context.Context) (srv *proc, url string, args []string, nodes string) {
	t.Helper()
	args = []string{"-listen", freePort(t), "-db", postgresURL(t), "-cycle", "100ms"}
	srv, url = serveOn(t, ctx, args...)
	code, _, errOut := runClient(t, ctx, url, "queue", "create", "A")
	require.Equal(t, 0, code, errOut)
	return srv, url, args, writeFile(t, "nodes.json", `[{"name": "n", "count": 1, "resources": {"cpu": "4", "memory": "4Gi"}}]`)
}

func waitForReported(t *testing.T, ctx context.Context, url, c string) {
	t.Helper()
	for {
		code, out, errOut := runClient(t, ctx, url, "cluster", "list", "-o", "json")
		require.Equal(t, 0, code, errOut)
		var cs []api.Cluster
		require.NoError(t, json.Unmarshal([]byte(out), &cs))
		for _, x := range cs {
			if x.Name == c && x.Alive {
				return
			}
		}
		require.NoError(t, ctx.Err())
		time.Sleep(50 * time.Millisecond)
	}
}

// With one pool, jobs naming only another wait, before and after a
// restart on PostgreSQL (the restarted service splits its queued jobs by
// pool because they name pools, though it knows one pool).
func TestServeOnPostgresKeepsJobsOfAnotherPoolQueuedAfterARestartWithOnePool(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	srv, url, args, nodes := servePostgresWithQueueA(t, ctx)
	e := start(t, ctx, "executor", "-server", url, "-cluster", "c1", "-nodes", nodes, "-renew", "200ms")
	waitForReported(t, ctx, url, "c1")
	jobs := writeFile(t, "jobs.json", `{"queue": "A", "jobSet": "s", "jobs": [{"count": 2, "requests": {"cpu": "1"}, "runtime": "1h", "pools": ["gpu"]}]}`)
	code, out, errOut := runClient(t, ctx, url, "submit", jobs)
	require.Equal(t, 0, code, errOut)
	ids := strings.Fields(out)
	require.NoError(t, e.cmd.Process.Kill())
	killServe(t, srv)

	_, url2 := serveOn(t, ctx, args...)
	require.Equal(t, url, url2)
	start(t, ctx, "executor", "-server", url, "-cluster", "c1", "-nodes", nodes, "-renew", "200ms")
	waitForReported(t, ctx, url, "c1")
	time.Sleep(500 * time.Millisecond) // five cycles with c1 alive
	for _, st := range statusOf(t, ctx, url, ids...) {
		require.Equal(t, "queued", st.State, "job %s accepting pool gpu only", st.Job)
		require.Contains(t, st.Reason, "no cluster is in its pools (gpu)")
	}
}
