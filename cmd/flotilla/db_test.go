package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/flotilla-sched/flotilla/api"
	"github.com/flotilla-sched/flotilla/events"
)

// postgresURL returns a URL of a fresh schema on the test PostgreSQL
// server (FLOTILLA_POSTGRES_URL, which scripts/test sets), dropped at the
// end of the test. Without a server the test is skipped, except under
// CI=true, where it fails.
func postgresURL(t *testing.T) string {
	t.Helper()
	base := os.Getenv("FLOTILLA_POSTGRES_URL")
	if base == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("FLOTILLA_POSTGRES_URL is not set under CI=true: run the tests with scripts/test, which starts PostgreSQL")
		}
		t.Skip("FLOTILLA_POSTGRES_URL is not set: run scripts/test")
	}
	var rnd [6]byte
	_, _ = rand.Read(rnd[:])
	schema := "flotilla_serve_" + hex.EncodeToString(rnd[:])
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, base)
	require.NoError(t, err)
	_, err = conn.Exec(ctx, "CREATE SCHEMA "+schema)
	require.NoError(t, err)
	require.NoError(t, conn.Close(ctx))
	t.Cleanup(func() {
		if conn, err := pgx.Connect(ctx, base); err == nil {
			_, _ = conn.Exec(ctx, "DROP SCHEMA "+schema+" CASCADE")
			_ = conn.Close(ctx)
		}
	})
	u, err := url.Parse(base)
	require.NoError(t, err)
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

// freePort returns a loopback address no one listens on now, with a port
// outside the kernel's ephemeral range: a test that restarts a server on
// the same address would otherwise find the port taken, now and then, by
// the local end of some other connection made while the server was away.
func freePort(t *testing.T) string {
	t.Helper()
	lo, hi := 32768, 60999
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		_, _ = fmt.Sscan(string(b), &lo, &hi)
	}
	from, n := 0, 0
	switch {
	case lo > 12000:
		from, n = 10000, lo-10000
	case hi < 63000:
		from, n = hi+1, 65535-hi
	}
	for range 100 {
		port := 0 // the kernel's choice, when no range is left outside
		if n > 0 {
			port = from + mrand.IntN(n)
		}
		ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			continue
		}
		addr := ln.Addr().String()
		require.NoError(t, ln.Close())
		return addr
	}
	t.Fatal("no free loopback port outside the ephemeral range")
	return ""
}

// TestServeOnPostgresLosesNothingAcknowledgedWhenKilledAndRestarted runs
// serve on PostgreSQL with an executor, kills the server with SIGKILL
// while jobs run, and starts it again on the same database and address:
// every job acknowledged before the kill is there once, the executor goes
// on, every job ends succeeded, and no job ever held two live leases.
func TestServeOnPostgresLosesNothingAcknowledgedWhenKilledAndRestarted(t *testing.T) {
	db := postgresURL(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	addr := freePort(t)
	args := []string{"-listen", addr, "-db", db, "-cycle", "100ms", "-lease-timeout", "3s"}
	srv, url := serveOn(t, ctx, args...)
	code, _, errOut := runClient(t, ctx, url, "queue", "create", "A")
	require.Equal(t, 0, code, errOut)
	nodes := writeFile(t, "nodes.json", `[{"name": "node", "count": 2, "resources": {"cpu": "8", "memory": "32Gi"}}]`)
	start(t, ctx, "executor", "-server", url, "-cluster", "c1", "-nodes", nodes, "-renew", "300ms", "-lease-timeout", "3s")
	jobs := writeFile(t, "jobs.json", `{"queue": "A", "jobSet": "s1", "jobs": [{"count": 40, "requests": {"cpu": "1"}, "runtime": "2s", "clientId": "batch"}]}`)
	code, out, errOut := runClient(t, ctx, url, "submit", jobs)
	require.Equal(t, 0, code, errOut)
	ids := strings.Fields(out)
	require.Len(t, ids, 40)

	// Kill the server once jobs run.
	waitForEvent(t, ctx, url, "A", "s1", "running")
	killServe(t, srv)

	_, url2 := serveOn(t, ctx, args...)
	require.Equal(t, url, url2)
	// Submitting the same file again is idempotent: the same ids.
	code, out, errOut = runClient(t, ctx, url, "submit", jobs)
	require.Equal(t, 0, code, errOut)
	require.Equal(t, ids, strings.Fields(out))
	code, _, errOut = runClient(t, ctx, url, "watch", "-queue", "A", "-jobset", "s1", "-until-done")
	require.Equal(t, 0, code, errOut)

	code, out, errOut = runClient(t, ctx, url, "events", "-queue", "A", "-jobset", "s1", "-o", "json")
	require.Equal(t, 0, code, errOut)
	final := requireLog(t, parseEvents(t, out), ids)
	for _, id := range ids {
		require.Equal(t, events.Succeeded, final[id], "job %s", id)
	}
}

// ownPostgres starts a PostgreSQL server of the test's own with
// scripts/postgres (so that the test may stop and start it without
// disturbing the other tests' server) and returns its URL and directory;
// the server is stopped and its directory removed when the test ends.
// Without FLOTILLA_POSTGRES_URL (no PostgreSQL meant for tests) the test is
// skipped, except under CI=true, where it fails.
func ownPostgres(t *testing.T) (url, dir string) {
	t.Helper()
	postgresURL(t) // skips or fails as every PostgreSQL test does
	out, err := exec.Command("../../scripts/postgres", "start").Output()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		t.Fatalf("scripts/postgres start: %v\n%s", err, ee.Stderr)
	}
	require.NoError(t, err)
	for _, line := range strings.Split(string(out), "\n") {
		if v, ok := strings.CutPrefix(line, "export FLOTILLA_POSTGRES_URL="); ok {
			url = strings.Trim(v, "'")
		}
		if v, ok := strings.CutPrefix(line, "export FLOTILLA_POSTGRES_DIR="); ok {
			dir = strings.Trim(v, "'")
		}
	}
	require.NotEmpty(t, url, "scripts/postgres start printed %q", out)
	require.NotEmpty(t, dir, "scripts/postgres start printed %q", out)
	t.Cleanup(func() { _ = exec.Command("../../scripts/postgres", "stop", dir).Run() })
	return url, dir
}

// stderrText is what the process has written to stderr so far.
func (p *proc) stderrText() string {
	lw := p.cmd.Stderr.(*lockedWriter)
	lw.mu.Lock()
	defer lw.mu.Unlock()
	return p.stderr.String()
}

// postgresCtl runs scripts/postgres down or up on the test's own server.
func postgresCtl(verb, dir string) error {
	out, err := exec.Command("../../scripts/postgres", verb, dir).CombinedOutput()
	if err != nil {
		return fmt.Errorf("scripts/postgres %s: %w\n%s", verb, err, out)
	}
	return nil
}

// requireLog checks a job set's stored log against the ids acknowledged
// to the submitter: sequence numbers 1, 2, …; every acknowledged job
// submitted exactly once and nothing else submitted; no job leased while
// it holds a live lease. It returns each job's last event type.
func requireLog(t *testing.T, stored []events.Event, acked []string) map[string]events.Type {
	t.Helper()
	submitted := map[string]int{}
	live := map[string]bool{}
	final := map[string]events.Type{}
	for i, e := range stored {
		require.Equal(t, uint64(i+1), e.Seq, "sequence numbers are gap-free")
		switch e.Type {
		case events.Submitted:
			submitted[e.Job]++
		case events.Leased:
			require.False(t, live[e.Job], "job %s leased while it holds a live lease", e.Job)
			live[e.Job] = true
		case events.Running, events.CancelRequested:
		default: // every other event ends the live lease
			delete(live, e.Job)
		}
		final[e.Job] = e.Type
	}
	for _, id := range acked {
		require.Equal(t, 1, submitted[id], "job %s stored once", id)
	}
	require.Len(t, submitted, len(acked), "every stored job was acknowledged")
	return final
}

// TestServeOnPostgresThatRestartsAnswers503ThenResumesLosingNothing runs
// serve on a PostgreSQL server of its own, with an executor and a
// submitter sending batches (each with a client id, retried after a
// failure). The database is taken down mid-load: submissions get 503
// quickly (not a hang) and cycles fail and are retried; once it is back,
// submissions succeed again without restarting serve, and every
// acknowledged job is stored once and succeeds.
func TestServeOnPostgresThatRestartsAnswers503ThenResumesLosingNothing(t *testing.T) {
	db, dir := ownPostgres(t)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	srv, url := serveOn(t, ctx, "-db", db, "-cycle", "100ms", "-lease-timeout", "5s")
	code, _, errOut := runClient(t, ctx, url, "queue", "create", "A")
	require.Equal(t, 0, code, errOut)
	nodes := writeFile(t, "nodes.json", `[{"name": "node", "count": 2, "resources": {"cpu": "16", "memory": "64Gi"}}]`)
	start(t, ctx, "executor", "-server", url, "-cluster", "c1", "-nodes", nodes, "-renew", "300ms", "-lease-timeout", "5s")

	const batches, perBatch, downAfter = 12, 50, 4
	var acked []string
	failures, down := 0, false
	for b := range batches {
		jobs := writeFile(t, fmt.Sprintf("jobs%d.json", b), fmt.Sprintf(
			`{"queue": "A", "jobSet": "s1", "jobs": [{"count": %d, "requests": {"cpu": "1"}, "runtime": "200ms", "clientId": "b%d"}]}`,
			perBatch, b))
		if b == downAfter {
			require.NoError(t, postgresCtl("down", dir))
			down = true
		}
		for {
			began := time.Now()
			code, out, errOut := runClient(t, ctx, url, "submit", jobs)
			if code == 0 {
				ids := strings.Fields(out)
				require.Len(t, ids, perBatch)
				acked = append(acked, ids...)
				break
			}
			require.Equal(t, 1, code, errOut)
			require.Contains(t, errOut, "503", "a database that is down is a 503")
			require.Contains(t, errOut, "storage unavailable; retry")
			require.Less(t, time.Since(began), 10*time.Second, "a 503 comes quickly")
			failures++
			if down && failures >= 3 && strings.Contains(srv.stderrText(), "cycle failed") {
				// Clients and cycles have met the outage; the database
				// comes back and serve carries on by itself.
				require.NoError(t, postgresCtl("up", dir))
				down = false
			}
			require.NoError(t, ctx.Err())
		}
	}
	require.GreaterOrEqual(t, failures, 3, "submissions while the database was down failed")
	code, _, errOut = runClient(t, ctx, url, "watch", "-queue", "A", "-jobset", "s1", "-until-done")
	require.Equal(t, 0, code, errOut)
	code, out, errOut := runClient(t, ctx, url, "events", "-queue", "A", "-jobset", "s1", "-o", "json")
	require.Equal(t, 0, code, errOut)
	final := requireLog(t, parseEvents(t, out), acked)
	for _, id := range acked {
		require.Equal(t, events.Succeeded, final[id], "job %s", id)
	}
	require.Len(t, acked, batches*perBatch)
}

// crashLoad is the load of the crash test: batches of jobs, each job
// with a client id, submitted one batch at a time by `flotilla submit`,
// each batch retried until it is acknowledged.
type crashLoad struct {
	batches, perBatch, sets int
	// acked[b] are batch b's ids once acknowledged; retries counts the
	// submissions that failed and were sent again.
	acked   [][]string
	retries int
}

// file is batch b's submission: templates of 100 jobs, each template a
// runtime of 0–1s drawn from rng, in job set s<b mod sets>.
func (l *crashLoad) file(b int, rng *mrand.Rand) string {
	var ts []string
	for k := 0; k < l.perBatch/100; k++ {
		ts = append(ts, fmt.Sprintf(`{"count": 100, "requests": {"cpu": "1"}, "runtime": "%dms", "clientId": "b%d-t%d"}`,
			rng.IntN(1001), b, k))
	}
	return fmt.Sprintf(`{"queue": "A", "jobSet": "s%d", "jobs": [%s]}`, b%l.sets, strings.Join(ts, ", "))
}

// submit submits every batch in order, retrying a batch after any
// failure of the service (exit code 1) until it is acknowledged. It runs
// in its own goroutine: it returns its problem instead of failing t.
func (l *crashLoad) submit(ctx context.Context, bin, url, dir string, rng *mrand.Rand) error {
	for b := range l.batches {
		path := filepath.Join(dir, fmt.Sprintf("batch%d.json", b))
		if err := os.WriteFile(path, []byte(l.file(b, rng)), 0o600); err != nil {
			return err
		}
		for {
			cmd := exec.CommandContext(ctx, bin, "submit", "-server", url, path)
			var out, errOut strings.Builder
			cmd.Stdout, cmd.Stderr = &out, &errOut
			err := cmd.Run()
			if err == nil {
				ids := strings.Fields(out.String())
				if len(ids) != l.perBatch {
					return fmt.Errorf("batch %d: %d ids acknowledged, want %d", b, len(ids), l.perBatch)
				}
				l.acked[b] = ids
				break
			}
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 1 || ctx.Err() != nil {
				return fmt.Errorf("batch %d: %v: %s", b, err, errOut.String())
			}
			l.retries++
		}
	}
	return nil
}

// TestServeOnPostgresKilled20TimesMidLoadLosesNothingAndReplayGivesTheStoredState
// is issue 11's first fault test: serve on PostgreSQL is killed with
// SIGKILL at 20 moments of a seeded schedule while a submitter sends
// 100,000 jobs in batches of 1,000 (client ids: a batch whose answer was
// lost is sent again) and two fake executors run them (0–1s each); it is
// restarted each time on the same database and address. Afterwards every
// acknowledged job exists exactly once, every job ended, no job ever held
// two live leases, and replaying each job set's events gives the state
// `flotilla status` reports.
func TestServeOnPostgresKilled20TimesMidLoadLosesNothingAndReplayGivesTheStoredState(t *testing.T) {
	const kills = 20
	load := &crashLoad{batches: 100, perBatch: 1000, sets: 10}
	if testing.Short() {
		load.batches = 10
	}
	load.acked = make([][]string, load.batches)
	db := postgresURL(t)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	addr := freePort(t)
	args := []string{"-listen", addr, "-db", db, "-cycle", "100ms", "-lease-timeout", "5s"}
	srv, url := serveOn(t, ctx, args...)
	code, _, errOut := runClient(t, ctx, url, "queue", "create", "A")
	require.Equal(t, 0, code, errOut)
	nodes := writeFile(t, "nodes.json", `[{"name": "node", "count": 64, "resources": {"cpu": "16", "memory": "64Gi"}}]`)
	for _, c := range []string{"c1", "c2"} {
		start(t, ctx, "executor", "-server", url, "-cluster", c, "-nodes", nodes, "-renew", "300ms", "-lease-timeout", "5s")
	}

	began := time.Now()
	rng := mrand.New(mrand.NewPCG(11, 0))
	submitted := make(chan error, 1)
	bin, dir := binary(t), t.TempDir()
	go func() { submitted <- load.submit(ctx, bin, url, dir, mrand.New(mrand.NewPCG(12, 0))) }()
	// The schedule: 20 moments in the first 40s, drawn from the seed.
	var at []time.Duration
	for range kills {
		at = append(at, time.Duration(rng.Int64N(int64(40*time.Second))))
	}
	slices.Sort(at)
	var restarts []time.Duration
	for _, d := range at {
		select { // the schedule's next moment
		case <-time.After(time.Until(began.Add(d))):
		case <-ctx.Done():
			t.Fatal(ctx.Err())
		}
		killServe(t, srv)
		t0 := time.Now()
		var url2 string
		srv, url2 = serveOn(t, ctx, args...)
		restarts = append(restarts, time.Since(t0))
		require.Equal(t, url, url2)
	}
	require.NoError(t, <-submitted)
	t.Logf("load submitted in %s (%d submissions retried); restarts took %v",
		time.Since(began).Round(time.Millisecond), load.retries, restarts)

	var acked []string
	for _, ids := range load.acked {
		acked = append(acked, ids...)
	}
	require.Len(t, acked, load.batches*load.perBatch)
	bySet := make([][]string, load.sets)
	for b, ids := range load.acked {
		bySet[b%load.sets] = append(bySet[b%load.sets], ids...)
	}
	for s := range load.sets {
		set := fmt.Sprintf("s%d", s)
		code, _, errOut := runClient(t, ctx, url, "watch", "-queue", "A", "-jobset", set, "-until-done", "-o", "json")
		require.Equal(t, 0, code, errOut)
	}
	t.Logf("every job ended %s after the start", time.Since(began).Round(time.Millisecond))
	for s := range load.sets {
		set := fmt.Sprintf("s%d", s)
		code, out, errOut := runClient(t, ctx, url, "events", "-queue", "A", "-jobset", set, "-o", "json")
		require.Equal(t, 0, code, errOut)
		log := parseEvents(t, out)
		requireLog(t, log, bySet[s])
		replayed, err := events.Replay("A", set, slices.Values(log))
		require.NoError(t, err)
		ids := bySet[s]
		for len(ids) > 0 {
			n := min(len(ids), 1000)
			code, out, errOut := runClient(t, ctx, url, append([]string{"status", "-o", "json"}, ids[:n]...)...)
			require.Equal(t, 0, code, errOut)
			for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
				var st api.JobStatus
				require.NoError(t, json.Unmarshal([]byte(line), &st), line)
				j, ok := replayed.Job(st.Job)
				require.True(t, ok, "job %s is in its set's log", st.Job)
				require.True(t, j.State.Terminal(), "job %s ended (%s)", st.Job, j.State)
				got := api.JobStatus{Job: j.ID, Queue: j.Queue, JobSet: j.JobSet, State: j.State.String(), Attempts: j.Attempts,
					Cluster: j.Cluster, Node: j.Node, CancelRequested: j.CancelRequested}
				st.Reason = ""
				require.Equal(t, st, got, "job %s: replayed state vs stored", st.Job)
			}
			ids = ids[n:]
		}
	}
}

// waitForEvent polls a job set's events until one of type typ is stored.
func waitForEvent(t *testing.T, ctx context.Context, url, queue, set, typ string) {
	t.Helper()
	for {
		code, out, _ := runClient(t, ctx, url, "events", "-queue", queue, "-jobset", set, "-o", "json")
		require.Equal(t, 0, code)
		if strings.Contains(out, `"type":"`+typ+`"`) {
			return
		}
		require.NoError(t, ctx.Err())
		time.Sleep(50 * time.Millisecond)
	}
}

// killServe kills a serve process with SIGKILL and waits for it to end.
func killServe(t *testing.T, srv *proc) {
	t.Helper()
	require.NoError(t, srv.cmd.Process.Signal(syscall.SIGKILL))
	<-srv.done
	srv.done <- nil // for the cleanup
}
