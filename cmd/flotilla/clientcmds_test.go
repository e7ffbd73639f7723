package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/backend/memory"
	"github.com/flotilla-sched/flotilla/httpapi"
	"github.com/flotilla-sched/flotilla/scheduler"
	"github.com/flotilla-sched/flotilla/server"
)

// The tests in this file run the client commands in process (run) against
// the HTTP API over an in-memory service on a loopback test server.

// inProcess is a service behind the HTTP API, with queue A.
type inProcess struct {
	srv *server.Server
	url string
	// watching receives a value each time a watch request arrives.
	watching chan struct{}
}

func newInProcess(t *testing.T) *inProcess {
	t.Helper()
	schema := flotilla.MustResourceSchema("cpu", "memory")
	srv, err := server.New(context.Background(), server.Config{
		Scheduler: scheduler.DefaultConfig(schema), Backend: memory.New(schema), Clock: server.SystemClock{},
	})
	require.NoError(t, err)
	require.NoError(t, srv.CreateQueue(context.Background(), flotilla.Queue{Name: "A"}))
	p := &inProcess{srv: srv, watching: make(chan struct{}, 16)}
	api := httpapi.New(srv, httpapi.Options{})
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("watch") == "true" {
			p.watching <- struct{}{}
		}
		api.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	p.url = ts.URL
	return p
}

// submit stores n queued jobs in job set s of queue A and returns their ids.
func (p *inProcess) submit(t *testing.T, n int) []string {
	t.Helper()
	ids, err := p.srv.SubmitJSON(context.Background(),
		[]byte(`{"queue": "A", "jobSet": "s", "jobs": [{"count": `+strconv.Itoa(n)+`, "requests": {"cpu": "1"}}]}`))
	require.NoError(t, err)
	return ids
}

// failingWriter fails every write, as a full disk does.
type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("no space left on device") }

func TestWatchUntilDonePrintsTheStoredEventsFromFromWhenTheSetIsAlreadyDone(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	p := newInProcess(t)
	ids := p.submit(t, 2)
	_, err := p.srv.Cancel(ctx, ids...)
	require.NoError(t, err)
	for _, tc := range []struct {
		from  string
		lines int
	}{{"0", 4}, {"3", 2}, {"9", 0}} {
		var out, errOut bytes.Buffer
		code := run(ctx, []string{"watch", "-server", p.url, "-queue", "A", "-jobset", "s", "-until-done", "-o", "json", "-from", tc.from}, &out, &errOut)
		require.Equal(t, 0, code, errOut.String())
		require.Len(t, parseEvents(t, out.String()), tc.lines, "-from %s: the stored events from -from, then exit: %s", tc.from, out.String())
	}
}

func TestWatchUntilDoneFromBeyondTheLogsEndExitsOnceTheSetIsDone(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	p := newInProcess(t)
	ids := p.submit(t, 2) // events 1 and 2
	done := make(chan int, 1)
	var out, errOut bytes.Buffer
	go func() {
		done <- run(ctx, []string{"watch", "-server", p.url, "-queue", "A", "-jobset", "s", "-until-done", "-o", "json", "-from", "5"}, &out, &errOut)
	}()
	<-p.watching
	_, err := p.srv.Cancel(ctx, ids...) // events 3 and 4 end the set
	require.NoError(t, err)
	select {
	case code := <-done:
		require.Equal(t, 0, code, errOut.String())
		require.Empty(t, out.String(), "nothing from 5 on")
	case <-ctx.Done():
		t.Fatal("watch -until-done -from 5 did not exit once every job had ended")
	}
}

func TestWatchExitsOneWhenItCannotWriteItsOutput(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	p := newInProcess(t)
	p.submit(t, 1)
	var errOut bytes.Buffer
	code := run(ctx, []string{"watch", "-server", p.url, "-queue", "A", "-jobset", "s"}, failingWriter{}, &errOut)
	require.NoError(t, ctx.Err(), "watch went on after its output failed: %s", errOut.String())
	require.Equal(t, 1, code, errOut.String())
}

func TestStatusJSONGivesEveryFieldOfServiceMDForEveryJob(t *testing.T) {
	ctx := context.Background()
	p := newInProcess(t)
	ids := p.submit(t, 1)
	var out, errOut bytes.Buffer
	code := run(ctx, []string{"status", "-server", p.url, "-o", "json", ids[0]}, &out, &errOut)
	require.Equal(t, 0, code, errOut.String())
	var got map[string]any
	require.NoError(t, json.Unmarshal(out.Bytes(), &got))
	for _, k := range []string{"job", "queue", "jobSet", "state", "attempts", "cluster", "node", "reason"} {
		require.Contains(t, got, k, "a queued job's status: %s", out.String())
	}
}
