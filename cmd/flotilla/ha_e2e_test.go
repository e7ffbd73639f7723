package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/backend"
	"github.com/flotilla-sched/flotilla/backend/postgres"
	"github.com/flotilla-sched/flotilla/events"
)

// The tests of this file run two serve processes on one PostgreSQL
// database (highly available serve) with fake executors pointed at both.

// logLine is one line of serve's JSON log.
type logLine struct {
	Time      time.Time `json:"time"`
	Msg       string    `json:"msg"`
	Token     uint64    `json:"token"`
	Loaded    string    `json:"loaded"`
	SinceTerm string    `json:"sinceTerm"`
	Err       string    `json:"err"`
}

// logLines are the lines of p's log with message msg so far.
func logLines(t *testing.T, p *proc, msg string) []logLine {
	t.Helper()
	var out []logLine
	for _, s := range strings.Split(p.stderrText(), "\n") {
		var l logLine
		if json.Unmarshal([]byte(s), &l) == nil && l.Msg == msg {
			out = append(out, l)
		}
	}
	return out
}

// waitLog waits until p has logged n lines with message msg, and returns
// the nth.
func waitLog(t *testing.T, ctx context.Context, p *proc, msg string, n int) logLine {
	t.Helper()
	for {
		if ls := logLines(t, p, msg); len(ls) >= n {
			return ls[n-1]
		}
		select {
		case <-ctx.Done():
			t.Fatalf("waiting for %q (#%d) in the log: %v\n%s", msg, n, ctx.Err(), p.stderrText())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// leaderGauge reads flotilla_leader from the server at url.
func leaderGauge(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url + "/metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	for _, line := range strings.Split(string(body), "\n") {
		if v, ok := strings.CutPrefix(line, "flotilla_leader "); ok {
			return v
		}
	}
	t.Fatalf("%s/metrics has no flotilla_leader", url)
	return ""
}

// logProblems logs the last warnings and errors of p's log.
func logProblems(t *testing.T, name string, p *proc) {
	t.Helper()
	var lines []string
	for _, s := range strings.Split(p.stderrText(), "\n") {
		if !strings.Contains(s, `"level":"INFO"`) && s != "" {
			lines = append(lines, s)
		}
	}
	lines = lines[max(0, len(lines)-40):]
	t.Logf("%s's last warnings and errors:\n%s", name, strings.Join(lines, "\n"))
}

// twoServers starts two serve processes on db with the leader lease ttl;
// the first leads. It returns them and their URLs.
func twoServers(t *testing.T, ctx context.Context, db string, ttl time.Duration) ([2]*proc, [2]string) {
	t.Helper()
	var ps [2]*proc
	var urls [2]string
	for i := range ps {
		ps[i], urls[i] = serveOn(t, ctx, "-db", db, "-cycle", "100ms", "-lease-timeout", "5s", "-leader-ttl", ttl.String())
		if i == 0 {
			waitLog(t, ctx, ps[0], "first cycle as leader", 1)
		}
	}
	require.Equal(t, "1", leaderGauge(t, urls[0]))
	require.Equal(t, "0", leaderGauge(t, urls[1]))
	return ps, urls
}

// requireEveryJobSucceeded checks each job set's stored log (requireLog:
// every acknowledged job once, no job leased while it held a live lease)
// and that every job succeeded.
func requireEveryJobSucceeded(t *testing.T, ctx context.Context, url string, sets int, bySet [][]string) {
	t.Helper()
	for s := range sets {
		set := fmt.Sprintf("s%d", s)
		code, _, errOut := runClient(t, ctx, url, "watch", "-queue", "A", "-jobset", set, "-until-done")
		require.Equal(t, 0, code, errOut)
		code, out, errOut := runClient(t, ctx, url, "events", "-queue", "A", "-jobset", set, "-o", "json")
		require.Equal(t, 0, code, errOut)
		log := parseEvents(t, out)
		final := requireLog(t, log, bySet[s])
		for _, id := range bySet[s] {
			if final[id] != events.Succeeded {
				for _, e := range log {
					if e.Job == id {
						t.Logf("%d %s %s %s/%s attempt %d %s", e.Seq, e.Time.Format("15:04:05.000"), e.Type, e.Cluster, e.Node, e.Attempt, e.Reason)
					}
				}
			}
			require.Equal(t, events.Succeeded, final[id], "job %s", id)
		}
	}
}

// TestTwoServersOnPostgresLeaderKilledMidLoadOtherLeadsWithinTheTTL is
// issue 11's failover test: two serve processes share one database (the
// first leads), two fake executors and a submitter are pointed at both;
// 15,000 jobs are submitted in batches of 1,000 (client ids: a batch
// whose answer was lost is sent again). The leader is killed with SIGKILL
// mid-load. The other leads, and runs its first cycle, within the lease
// ttl plus its takeover (fence, reload, cycle); afterwards every
// acknowledged job exists once, every job succeeded, and no job ever held
// two live leases.
func TestTwoServersOnPostgresLeaderKilledMidLoadOtherLeadsWithinTheTTL(t *testing.T) {
	const ttl = 3 * time.Second
	load := &crashLoad{batches: 15, perBatch: 1000, sets: 5}
	if testing.Short() {
		load.batches = 4
	}
	load.acked = make([][]string, load.batches)
	db := postgresURL(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	ps, urls := twoServers(t, ctx, db, ttl)
	both := urls[0] + "," + urls[1]
	code, _, errOut := runClient(t, ctx, both, "queue", "create", "A")
	require.Equal(t, 0, code, errOut)
	nodes := writeFile(t, "nodes.json", `[{"name": "node", "count": 64, "resources": {"cpu": "16", "memory": "64Gi"}}]`)
	// One executor starts with each server.
	exs := []*proc{
		start(t, ctx, "executor", "-server", urls[0]+","+urls[1], "-cluster", "c1", "-nodes", nodes, "-renew", "300ms", "-lease-timeout", "5s"),
		start(t, ctx, "executor", "-server", urls[1]+","+urls[0], "-cluster", "c2", "-nodes", nodes, "-renew", "300ms", "-lease-timeout", "5s"),
	}
	t.Cleanup(func() {
		if t.Failed() {
			logProblems(t, "server 2", ps[1])
			logProblems(t, "executor c1", exs[0])
			logProblems(t, "executor c2", exs[1])
		}
	})

	began := time.Now()
	submitted := make(chan error, 1)
	bin, dir := binary(t), t.TempDir()
	go func() { submitted <- load.submit(ctx, bin, both, dir, mrand.New(mrand.NewPCG(13, 0))) }()
	// Mid-load: once 100 jobs of the first job set have succeeded.
	for {
		code, out, errOut := runClient(t, ctx, both, "events", "-queue", "A", "-jobset", "s0", "-o", "json")
		if code == 1 && strings.Contains(errOut, `jobSet "s0": not found`) {
			time.Sleep(50 * time.Millisecond) // not submitted yet
			continue
		}
		require.Equal(t, 0, code, errOut)
		if strings.Count(out, `"type":"succeeded"`) >= 100 {
			break
		}
		require.NoError(t, ctx.Err())
		time.Sleep(50 * time.Millisecond)
	}
	require.NoError(t, ps[0].cmd.Process.Signal(syscall.SIGKILL))
	killed := time.Now()
	<-ps[0].done
	ps[0].done <- nil // for the cleanup

	leading := waitLog(t, ctx, ps[1], "leading", 1)
	first := waitLog(t, ctx, ps[1], "first cycle as leader", 1)
	sinceTerm, err := time.ParseDuration(first.SinceTerm)
	require.NoError(t, err)
	failover := first.Time.Sub(killed)
	t.Logf("from the kill to the new leader's first cycle: %s (lease ttl %s; fence + reload %s, + first cycle %s)",
		failover.Round(time.Millisecond), ttl, leading.Loaded, sinceTerm.Round(time.Millisecond))
	// The lease was renewed at most ttl/3 before the kill, and the
	// follower tries just after it ends; a second covers the loaded
	// machine's latencies.
	require.LessOrEqual(t, failover, ttl+sinceTerm+time.Second, "the other server leads within the ttl plus its takeover")
	require.Equal(t, "1", leaderGauge(t, urls[1]))

	require.NoError(t, <-submitted)
	t.Logf("load of %d jobs submitted in %s (%d submissions retried)", load.batches*load.perBatch,
		time.Since(began).Round(time.Millisecond), load.retries)
	bySet := make([][]string, load.sets)
	for b, ids := range load.acked {
		require.Len(t, ids, load.perBatch)
		bySet[b%load.sets] = append(bySet[b%load.sets], ids...)
	}
	requireEveryJobSucceeded(t, ctx, both, load.sets, bySet)
	t.Logf("every job ended %s after the start", time.Since(began).Round(time.Millisecond))
}

// TestDeposedLeaderPausedPastItsTTLIsFencedAndStepsDown: the leader of
// two servers is paused with SIGSTOP while its executor's jobs run, past
// its lease ttl; the other takes over and writes (its token fences the
// database). Resumed with SIGCONT, the deposed leader steps down (it
// forwards to the new leader and reports flotilla_leader 0), a write
// under its token is refused by the database with ErrFenced, every job
// succeeds, and no job ever held two live leases.
func TestDeposedLeaderPausedPastItsTTLIsFencedAndStepsDown(t *testing.T) {
	const ttl = 2 * time.Second
	db := postgresURL(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	ps, urls := twoServers(t, ctx, db, ttl)
	// Clients try the follower first: the paused leader accepts
	// connections (the kernel does) but answers nothing.
	both := urls[1] + "," + urls[0]
	code, _, errOut := runClient(t, ctx, both, "queue", "create", "A")
	require.Equal(t, 0, code, errOut)
	nodes := writeFile(t, "nodes.json", `[{"name": "node", "count": 4, "resources": {"cpu": "8", "memory": "32Gi"}}]`)
	start(t, ctx, "executor", "-server", both, "-cluster", "c1", "-nodes", nodes, "-renew", "300ms", "-lease-timeout", "5s")
	jobs := writeFile(t, "jobs.json", `{"queue": "A", "jobSet": "s0", "jobs": [{"count": 200, "requests": {"cpu": "1"}, "runtime": "500ms", "clientId": "p"}]}`)
	code, out, errOut := runClient(t, ctx, both, "submit", jobs)
	require.Equal(t, 0, code, errOut)
	ids := strings.Fields(out)
	require.Len(t, ids, 200)
	waitForEvent(t, ctx, both, "A", "s0", "running")
	oldToken := waitLog(t, ctx, ps[0], "leading", 1).Token

	require.NoError(t, ps[0].cmd.Process.Signal(syscall.SIGSTOP))
	first := waitLog(t, ctx, ps[1], "first cycle as leader", 1)
	newToken := waitLog(t, ctx, ps[1], "leading", 1).Token
	require.Greater(t, newToken, oldToken)
	time.Sleep(ttl / 2) // let the new leader run cycles while the old one is paused
	require.NoError(t, ps[0].cmd.Process.Signal(syscall.SIGCONT))
	resumed := time.Now()

	stepped := waitLog(t, ctx, ps[0], "stepped down", 1)
	t.Logf("the new leader took over (fence, reload, first cycle: %s); the resumed leader stepped down %s after SIGCONT",
		first.SinceTerm, stepped.Time.Sub(resumed).Round(time.Millisecond))
	// A cycle the resumed leader ran before it noticed fails: its writes
	// are refused (or cancelled with its term).
	for _, l := range logLines(t, ps[0], "cycle failed") {
		if l.Time.After(resumed.Add(-time.Second)) {
			t.Logf("the resumed leader's cycle failed: %s", l.Err)
			require.True(t, strings.Contains(l.Err, "no longer leads") || strings.Contains(l.Err, "fenced") ||
				strings.Contains(l.Err, "context canceled"), "a write of the resumed leader: %s", l.Err)
		}
	}
	require.Equal(t, "0", leaderGauge(t, urls[0]))
	// Once it knows the new leader (ready), it forwards to it.
	for {
		resp, err := http.Get(urls[0] + "/readyz")
		require.NoError(t, err)
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			break
		}
		require.NoError(t, ctx.Err())
		time.Sleep(20 * time.Millisecond)
	}
	code, _, errOut = runClient(t, ctx, urls[0], "queue", "list")
	require.Equal(t, 0, code, "the deposed leader forwards to the new one: %s", errOut)

	// The database refuses a write under the deposed leader's token.
	be, err := postgres.Open(ctx, db, flotilla.MustResourceSchema(defaultResources()...))
	require.NoError(t, err)
	defer be.Close()
	_, err = be.Commit(ctx, &backend.Write{Fence: oldToken})
	require.ErrorIs(t, err, backend.ErrFenced)

	requireEveryJobSucceeded(t, ctx, both, 1, [][]string{ids})
}

// TestTwoServersAdvertisingOneURLNeverBothLead: the advertised URL is not
// who holds the lease. Two live processes that advertise one URL (a load
// balancer's, or the same unspecified listening address on two hosts)
// are two holders: the second follows, it does not renew the first's
// lease as its own and lead under the same token.
func TestTwoServersAdvertisingOneURLNeverBothLead(t *testing.T) {
	db := postgresURL(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	args := []string{"-db", db, "-cycle", "100ms", "-leader-ttl", "10s", "-advertise", "http://flotilla.invalid:8080"}
	first, url0 := serveOn(t, ctx, args...)
	waitLog(t, ctx, first, "first cycle as leader", 1)
	// The second process takes part in a first election round before it
	// listens: by then it has either led or followed.
	second, url1 := serveOn(t, ctx, args...)
	require.Empty(t, logLines(t, second, "leading"), "the second process led under the first's lease:\n%s", second.stderrText())
	require.Equal(t, "0", leaderGauge(t, url1))
	require.Equal(t, "1", leaderGauge(t, url0))
}

// TestFollowerWithAuthForwardsOnlyRequestsWithAKnownToken: a follower
// started with -auth refuses a request without a known token (401) itself
// rather than forwarding it: the leader it forwards to may have been
// started without -auth (on loopback), and would take the request as
// trusted. The leader still checks the token's rights.
func TestFollowerWithAuthForwardsOnlyRequestsWithAKnownToken(t *testing.T) {
	db := postgresURL(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	args := []string{"-db", db, "-cycle", "100ms", "-leader-ttl", "10s"}
	leader, _ := serveOn(t, ctx, args...)
	waitLog(t, ctx, leader, "first cycle as leader", 1)
	auth := writeFile(t, "auth.json", `{"tokens": [{"token": "t-ops", "principal": "ops", "admin": true}]}`)
	_, url := serveOn(t, ctx, append(args, "-auth", auth)...)

	code, _, errOut := runClient(t, ctx, url, "queue", "create", "A")
	require.Equal(t, 1, code, "no token: refused by the follower: %s", errOut)
	require.Contains(t, errOut, "401")
	code, _, errOut = runClient(t, ctx, url, "queue", "create", "A", "-token", "t-unknown")
	require.Equal(t, 1, code, "an unknown token: refused by the follower: %s", errOut)
	require.Contains(t, errOut, "401")
	code, out, errOut := runClient(t, ctx, url, "queue", "list", "-token", "t-ops")
	require.Equal(t, 0, code, errOut)
	require.Len(t, strings.Split(strings.TrimSpace(out), "\n"), 1, "nothing was created: %s", out)
	code, _, errOut = runClient(t, ctx, url, "queue", "create", "A", "-token", "t-ops")
	require.Equal(t, 0, code, "a known token is forwarded: %s", errOut)
}

// TestWatchOnALeaderThatStepsDownDoesNotHangSilently: a watch served by
// a leader follows that leader's own writes; once it steps down it writes
// nothing more. The watch must end with the term (the client resumes
// elsewhere, or reports the failure), not stay open and silent while the
// new leader writes the job set's events.
func TestWatchOnALeaderThatStepsDownDoesNotHangSilently(t *testing.T) {
	const ttl = 2 * time.Second
	db := postgresURL(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	ps, urls := twoServers(t, ctx, db, ttl)
	code, _, errOut := runClient(t, ctx, urls[0], "queue", "create", "A")
	require.Equal(t, 0, code, errOut)
	submit := func(url string) string {
		t.Helper()
		jobs := writeFile(t, "jobs.json", `{"queue": "A", "jobSet": "s", "jobs": [{"requests": {"cpu": "1"}}]}`)
		code, out, errOut := runClient(t, ctx, url, "submit", jobs)
		require.Equal(t, 0, code, errOut)
		return strings.TrimSpace(out)
	}
	first := submit(urls[0])
	w := start(t, ctx, "watch", "-server", urls[0], "-queue", "A", "-jobset", "s", "-o", "json")
	lines := make(chan string)
	go func() {
		defer close(lines)
		for {
			line, err := w.stdout.ReadString('\n')
			if err != nil {
				return
			}
			lines <- line
		}
	}()
	for line := range lines {
		if strings.Contains(line, first) {
			break // the watch is open on the leader
		}
	}

	require.NoError(t, ps[0].cmd.Process.Signal(syscall.SIGSTOP))
	waitLog(t, ctx, ps[1], "first cycle as leader", 1)
	require.NoError(t, ps[0].cmd.Process.Signal(syscall.SIGCONT))
	waitLog(t, ctx, ps[0], "stepped down", 1)
	second := submit(urls[1])

	bound := time.After(15 * time.Second)
	for {
		select {
		case line, ok := <-lines:
			if !ok {
				<-w.done
				t.Logf("the watch ended: %s", w.stderrText())
				return
			}
			if strings.Contains(line, second) {
				return // resumed and delivered the new leader's event
			}
		case <-bound:
			t.Fatalf("the watch on the deposed leader neither ended nor delivered the new leader's event %s in 15 s; its stderr:\n%s", second, w.stderrText())
		}
	}
}
