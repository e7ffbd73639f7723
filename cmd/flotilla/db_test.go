package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net"
	"net/url"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

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

// freePort returns a loopback address no one listens on now.
func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
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
	start(t, ctx, "executor", "-server", url, "-cluster", "c1", "-nodes", nodes, "-renew", "300ms")
	jobs := writeFile(t, "jobs.json", `{"queue": "A", "jobSet": "s1", "jobs": [{"count": 40, "requests": {"cpu": "1"}, "runtime": "2s", "clientId": "batch"}]}`)
	code, out, errOut := runClient(t, ctx, url, "submit", jobs)
	require.Equal(t, 0, code, errOut)
	ids := strings.Fields(out)
	require.Len(t, ids, 40)

	// Kill the server once jobs run.
	for {
		code, out, _ := runClient(t, ctx, url, "events", "-queue", "A", "-jobset", "s1", "-o", "json")
		require.Equal(t, 0, code)
		if strings.Contains(out, `"type":"running"`) {
			break
		}
		require.NoError(t, ctx.Err())
		time.Sleep(100 * time.Millisecond)
	}
	require.NoError(t, srv.cmd.Process.Signal(syscall.SIGKILL))
	<-srv.done
	srv.done <- nil // for the cleanup

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
	stored := parseEvents(t, out)
	submitted := map[string]int{}
	live := map[string]bool{}
	final := map[string]events.Type{}
	for i, e := range stored {
		require.Equal(t, uint64(i+1), e.Seq, "sequence numbers go on across the restart")
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
	for _, id := range ids {
		require.Equal(t, 1, submitted[id], "job %s stored once", id)
		require.Equal(t, events.Succeeded, final[id], "job %s", id)
	}
	require.Len(t, submitted, 40)
}
