package main

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flotilla-sched/flotilla/client"
	"github.com/flotilla-sched/flotilla/events"
)

// TestServeOnPostgresUnderLoadNoJobFailsWhileItsExecutorsLive is issue
// 24's load run: serve on PostgreSQL (lease timeout 5s), three fake
// executors renewing every 300 ms, and 20 clients each submitting 30
// batches of 20 short jobs back to back (12,000 jobs, as the run
// had; 10 batches with -short).
// Against a loaded but live service a report may take longer than a
// renew period; the executors must not abandon their own reports, so no
// lease expires and no job fails while every executor lives. Afterwards
// every acknowledged job ended succeeded, none with a lease-expired.
func TestServeOnPostgresUnderLoadNoJobFailsWhileItsExecutorsLive(t *testing.T) {
	batches := 30
	if testing.Short() {
		batches = 10
	}
	db := postgresURL(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	_, url := serveOn(t, ctx, "-db", db, "-cycle", "100ms", "-lease-timeout", "5s")
	code, _, errOut := runClient(t, ctx, url, "queue", "create", "L")
	require.Equal(t, 0, code, errOut)
	nodes := writeFile(t, "nodes.json", `[{"name": "node", "count": 16, "resources": {"cpu": "16", "memory": "64Gi"}}]`)
	for _, c := range []string{"c1", "c2", "c3"} {
		start(t, ctx, "executor", "-server", url, "-cluster", c, "-nodes", nodes, "-renew", "300ms", "-lease-timeout", "5s")
	}
	const clients, perBatch = 20, 20
	var (
		mu    sync.Mutex
		acked = map[string][]string{} // by job set
		wg    sync.WaitGroup
		errs  = make(chan error, clients)
	)
	began := time.Now()
	for k := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cl, err := client.New(url, "", nil)
			if err != nil {
				errs <- err
				return
			}
			set := fmt.Sprintf("s%d", k)
			for b := range batches {
				file := fmt.Sprintf(`{"queue": "L", "jobSet": %q, "jobs": [{"count": %d, "requests": {"cpu": "1"}, "runtime": "%dms", "clientId": "c%d-b%d"}]}`,
					set, perBatch, 100+(b*37+k*11)%400, k, b)
				ids, err := cl.Submit(ctx, []byte(file))
				if err != nil {
					errs <- fmt.Errorf("client %d, batch %d: %w", k, b, err)
					return
				}
				mu.Lock()
				acked[set] = append(acked[set], ids...)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	total, failed, expired := 0, 0, 0
	for k := range clients {
		set := fmt.Sprintf("s%d", k)
		code, _, errOut := runClient(t, ctx, url, "watch", "-queue", "L", "-jobset", set, "-until-done")
		require.Equal(t, 0, code, errOut)
		code, out, errOut := runClient(t, ctx, url, "events", "-queue", "L", "-jobset", set, "-o", "json")
		require.Equal(t, 0, code, errOut)
		stored := parseEvents(t, out)
		final := requireLog(t, stored, acked[set])
		for _, id := range acked[set] {
			total++
			if final[id] != events.Succeeded {
				failed++
			}
		}
		for _, e := range stored {
			if e.Type == events.LeaseExpired {
				expired++
			}
		}
	}
	t.Logf("%d jobs from %d clients, all ended %s after the start: %d did not succeed, %d leases expired",
		total, clients, time.Since(began).Round(time.Millisecond), failed, expired)
	require.Equal(t, clients*batches*perBatch, total)
	require.Zero(t, expired, "a lease expired while every executor lived")
	require.Zero(t, failed, "a job did not succeed while every executor lived")
}
