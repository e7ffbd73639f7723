package httpapi_test

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flotilla-sched/flotilla/api"
	"github.com/flotilla-sched/flotilla/events"
	"github.com/flotilla-sched/flotilla/executor"
	"github.com/flotilla-sched/flotilla/httpapi"
)

// TestSixteenClientsSubmitAndCancelWhileExecutorsReportAndCyclesRun runs
// 16 clients submitting and cancelling over HTTP while two executors
// report and cycles run, all at once (run it with -race). Afterwards every
// job submitted exists once, each job set's log replays, and no job holds
// two live leases.
func TestSixteenClientsSubmitAndCancelWhileExecutorsReportAndCyclesRun(t *testing.T) {
	ctx := context.Background()
	s := newService(t, httpapi.Options{})
	admin := s.client(t, "")
	_, err := admin.CreateQueue(ctx, api.Queue{Name: "A"})
	require.NoError(t, err)
	rounds := 20
	if testing.Short() {
		rounds = 5
	}
	var wg sync.WaitGroup
	ids := make([][]string, 16)
	errs := make(chan error, 64)
	for c := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cl := s.client(t, "")
			set := fmt.Sprintf("s%d", c%4)
			for r := range rounds {
				got, err := cl.Submit(ctx, []byte(fmt.Sprintf(`{"queue": "A", "jobSet": %q, "jobs": [{"count": 5, "requests": {"cpu": "1"}, "runtime": "1s", "clientId": "c%d-r%d"}]}`, set, c, r)))
				if err != nil {
					errs <- err
					return
				}
				ids[c] = append(ids[c], got...)
				if r%3 == 0 {
					if _, err := cl.Cancel(ctx, got[0]); err != nil {
						errs <- err
						return
					}
				}
			}
		}()
	}
	stop := make(chan struct{})
	var bg sync.WaitGroup
	for _, name := range []string{"c1", "c2"} {
		ex, err := executor.New(executor.Config{Cluster: name, Service: s.client(t, ""), Clock: s.clock,
			Nodes: []api.Node{{Name: "n1", Resources: map[string]string{"cpu": "16", "memory": "64Gi"}}}})
		require.NoError(t, err)
		bg.Add(1)
		go func() {
			defer bg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := ex.Step(ctx); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	bg.Add(1)
	go func() {
		defer bg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := s.srv.Cycle(ctx); err != nil {
				errs <- err
				return
			}
		}
	}()
	wg.Wait()
	close(stop)
	bg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	seen := map[string]bool{}
	for _, list := range ids {
		for _, id := range list {
			require.False(t, seen[id], "job %s returned twice", id)
			seen[id] = true
		}
	}
	require.Len(t, seen, 16*rounds*5)
	total := 0
	for k := range 4 {
		set := fmt.Sprintf("s%d", k)
		evs, err := s.be.Events(ctx, "A", set, 0, 0)
		require.NoError(t, err)
		js := events.NewJobSet("A", set)
		live := map[string]bool{}
		for _, e := range evs {
			require.NoError(t, js.Apply(e))
			if e.Type == events.Leased {
				require.False(t, live[e.Job], "job %s leased twice", e.Job)
				live[e.Job] = true
			} else if j, _ := js.Job(e.Job); !j.State.Live() {
				delete(live, e.Job)
			}
		}
		total += js.Len()
	}
	require.Equal(t, len(seen), total, "every job stored once")
}

// TestStuckWatcherDoesNotStallSubmissionsOrCycles opens a watch that never
// reads its stream and a request whose body never finishes, then stores
// many events and runs cycles: neither client holds anything the service
// needs.
func TestStuckWatcherDoesNotStallSubmissionsOrCycles(t *testing.T) {
	ctx := context.Background()
	s := newService(t, httpapi.Options{})
	c := s.client(t, "")
	_, err := c.CreateQueue(ctx, api.Queue{Name: "A"})
	require.NoError(t, err)
	addr := strings.TrimPrefix(s.url, "http://")
	stuck, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer stuck.Close()
	_, err = fmt.Fprintf(stuck, "GET /v1/queues/A/jobsets/s/events?watch=true HTTP/1.1\r\nHost: %s\r\n\r\n", addr)
	require.NoError(t, err)
	slow, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer slow.Close()
	_, err = fmt.Fprintf(slow, "POST /v1/jobs HTTP/1.1\r\nHost: %s\r\nContent-Length: 100000\r\n\r\n{\"queue\": \"A\"", addr)
	require.NoError(t, err)
	// Enough events to fill the stuck watcher's socket buffers many times.
	for range 50 {
		_, err := c.Submit(ctx, submitFile("s", 1000))
		require.NoError(t, err)
		_, err = s.srv.Cycle(ctx)
		require.NoError(t, err)
	}
	evs, err := c.Events(ctx, "A", "s", 0, 0)
	require.NoError(t, err)
	require.Len(t, evs, 50_000)
}
