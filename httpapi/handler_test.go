package httpapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/api"
	"github.com/flotilla-sched/flotilla/backend"
	"github.com/flotilla-sched/flotilla/backend/memory"
	"github.com/flotilla-sched/flotilla/client"
	"github.com/flotilla-sched/flotilla/events"
	"github.com/flotilla-sched/flotilla/httpapi"
	"github.com/flotilla-sched/flotilla/internal/fakeclock"
	"github.com/flotilla-sched/flotilla/scheduler"
	"github.com/flotilla-sched/flotilla/server"
)

// service is a server behind the HTTP handler on a loopback test server.
type service struct {
	srv   *server.Server
	be    *memory.Backend
	url   string
	clock *fakeclock.Clock
}

func newService(t testing.TB, opts httpapi.Options) *service {
	t.Helper()
	schema := flotilla.MustResourceSchema("cpu", "memory")
	clk := fakeclock.New(time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC))
	be := memory.New(schema)
	n := 0
	var mu sync.Mutex
	srv, err := server.New(context.Background(), server.Config{
		Scheduler: scheduler.DefaultConfig(schema), Backend: be, Clock: clk,
		NewID: func() string { mu.Lock(); defer mu.Unlock(); n++; return "job-" + strconv.Itoa(n) },
	})
	require.NoError(t, err)
	ts := httptest.NewServer(httpapi.New(srv, opts))
	t.Cleanup(ts.Close)
	return &service{srv: srv, be: be, url: ts.URL, clock: clk}
}

func (s *service) client(t testing.TB, token string) *client.Client {
	c, err := client.New(s.url, token, nil)
	require.NoError(t, err)
	return c
}

func TestJobGoesFromSubmitToSucceededThroughTheHTTPAPI(t *testing.T) {
	ctx := context.Background()
	s := newService(t, httpapi.Options{})
	c := s.client(t, "")
	_, err := c.CreateQueue(ctx, api.Queue{Name: "A"})
	require.NoError(t, err)
	_, err = c.Report(ctx, "c1", api.Report{Nodes: []api.Node{{Name: "n1", Resources: map[string]string{"cpu": "4", "memory": "8Gi"}}}})
	require.NoError(t, err)
	ids, err := c.Submit(ctx, []byte(`{"queue": "A", "jobSet": "s1", "jobs": [{"count": 2, "requests": {"cpu": "1"}, "runtime": "20s"}]}`))
	require.NoError(t, err)
	require.Equal(t, []string{"job-1", "job-2"}, ids)
	_, err = s.srv.Cycle(ctx)
	require.NoError(t, err)
	reply, err := c.Report(ctx, "c1", api.Report{})
	require.NoError(t, err)
	require.Len(t, reply.Leases, 2)
	require.Equal(t, "20s", reply.Leases[0].Runtime)
	require.Equal(t, map[string]string{"cpu": "1"}, reply.Leases[0].Requests)
	var done []api.JobReport
	for _, l := range reply.Leases {
		done = append(done, api.JobReport{Job: l.Job, Attempt: l.Attempt, Phase: "succeeded"})
	}
	_, err = c.Report(ctx, "c1", api.Report{Jobs: done})
	require.NoError(t, err)
	sts, err := c.Status(ctx, ids...)
	require.NoError(t, err)
	require.Equal(t, "succeeded", sts[0].State)
	evs, err := c.Events(ctx, "A", "s1", 0, 0)
	require.NoError(t, err)
	require.Len(t, evs, 8)
	require.Equal(t, events.Submitted, evs[0].Type)
	require.Equal(t, uint64(8), evs[7].Seq)
}

func TestWatchFollowsNewEventsAndResumesFromASequenceNumberMissingNothing(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := newService(t, httpapi.Options{})
	c := s.client(t, "")
	_, err := c.CreateQueue(ctx, api.Queue{Name: "A"})
	require.NoError(t, err)
	_, err = c.Submit(ctx, []byte(`{"queue": "A", "jobSet": "s1", "jobs": [{"count": 3, "requests": {"cpu": "1"}}]}`))
	require.NoError(t, err)
	got := make(chan events.Event, 16)
	errc := make(chan error, 1)
	wctx, stop := context.WithCancel(ctx)
	go func() {
		errc <- c.Watch(wctx, "A", "s1", 2, func(e events.Event) error { got <- e; return nil })
	}()
	require.Equal(t, uint64(2), (<-got).Seq)
	require.Equal(t, uint64(3), (<-got).Seq)
	_, err = c.Submit(ctx, []byte(`{"queue": "A", "jobSet": "s1", "jobs": [{"requests": {"cpu": "1"}}]}`))
	require.NoError(t, err)
	require.Equal(t, uint64(4), (<-got).Seq, "a new event reaches the watcher")
	stop()
	require.Error(t, <-errc)
	// Resume after the last seen: nothing missed, nothing twice.
	_, err = c.Cancel(ctx, "job-1")
	require.NoError(t, err)
	evs, err := c.Events(ctx, "A", "s1", 5, 0)
	require.NoError(t, err)
	require.Len(t, evs, 1)
	require.Equal(t, events.Cancelled, evs[0].Type)
}

func TestBadInputIsA400NamingFieldAndValueAndStoresNothing(t *testing.T) {
	ctx := context.Background()
	s := newService(t, httpapi.Options{})
	c := s.client(t, "")
	_, err := c.CreateQueue(ctx, api.Queue{Name: "A"})
	require.NoError(t, err)
	_, err = c.Submit(ctx, []byte(`{"queue": "A", "jobSet": "s1", "jobs": [{"requests": {"cpu": "lots"}, "colour": "red"}]}`))
	var ce *client.Error
	require.True(t, errors.As(err, &ce), "%v", err)
	require.ErrorIs(t, err, client.ErrBadRequest)
	fields := map[string]string{}
	for _, p := range ce.Body.Problems {
		fields[p.Field] = p.Value
	}
	require.Equal(t, "lots", fields["jobs[0].requests.cpu"])
	require.Contains(t, fields, "jobs[0].colour")
	_, err = c.Events(ctx, "A", "s1", 0, 0)
	require.ErrorIs(t, err, client.ErrNotFound, "nothing stored: the job set does not exist")
}

func TestCancelOfAnUnknownJobOrQueueIsA404AsStatusIs(t *testing.T) {
	ctx := context.Background()
	auth, err := httpapi.ParseAuth([]byte(authFile))
	require.NoError(t, err)
	s := newService(t, httpapi.Options{Auth: auth})
	ops, alice := s.client(t, "t-ops"), s.client(t, "t-alice")
	_, err = ops.CreateQueue(ctx, api.Queue{Name: "A"})
	require.NoError(t, err)
	for name, call := range map[string]func() error{
		"status":                 func() error { _, err := ops.Status(ctx, "no-such-job"); return err },
		"cancel by an admin":     func() error { _, err := ops.Cancel(ctx, "no-such-job"); return err },
		"cancel by a submitter":  func() error { _, err := alice.Cancel(ctx, "no-such-job"); return err },
		"cancel a missing queue": func() error { _, err := ops.CancelJobSet(ctx, "Z", "s"); return err },
	} {
		require.ErrorIs(t, call(), client.ErrNotFound, name)
	}
}

// downBackend is a backend whose storage cannot be reached.
type downBackend struct{ *memory.Backend }

func (downBackend) CreateQueue(context.Context, flotilla.Queue) error {
	return fmt.Errorf("connecting: %w", backend.ErrUnavailable)
}

func (downBackend) Job(context.Context, string) (backend.Record, error) {
	return backend.Record{}, fmt.Errorf("connecting: %w", backend.ErrUnavailable)
}

func TestStorageUnavailableIsA503WithRetryAfter(t *testing.T) {
	schema := flotilla.MustResourceSchema("cpu", "memory")
	srv, err := server.New(context.Background(), server.Config{
		Scheduler: scheduler.DefaultConfig(schema), Backend: downBackend{memory.New(schema)},
		Clock: fakeclock.New(time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)),
	})
	require.NoError(t, err)
	ts := httptest.NewServer(httpapi.New(srv, httpapi.Options{}))
	defer ts.Close()
	for _, c := range []struct{ method, path, body string }{
		{"POST", "/v1/queues", `{"name": "A"}`},
		{"GET", "/v1/jobs?id=j1", ""},
	} {
		req, err := http.NewRequest(c.method, ts.URL+c.path, strings.NewReader(c.body))
		require.NoError(t, err)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, "%s %s: %s", c.method, c.path, body)
		require.Equal(t, "1", resp.Header.Get("Retry-After"))
		require.Contains(t, string(body), "storage unavailable; retry")
	}
}

// GET /v1/jobs's explain is a boolean: another value is a 400 naming the
// field and value (with every other problem of the request), not a
// status without the explanation asked for.
func TestStatusExplainThatIsNotABooleanIsA400NamingIt(t *testing.T) {
	ctx := context.Background()
	s := newService(t, httpapi.Options{})
	c := s.client(t, "")
	_, err := c.CreateQueue(ctx, api.Queue{Name: "A"})
	require.NoError(t, err)
	_, err = c.Submit(ctx, []byte(`{"queue": "A", "jobSet": "s1", "jobs": [{"requests": {"cpu": "1"}}]}`))
	require.NoError(t, err)
	get := func(query string) (int, api.StatusResponse, api.Error) {
		resp, err := http.Get(s.url + "/v1/jobs?" + query)
		require.NoError(t, err)
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		var ok api.StatusResponse
		var bad api.Error
		if resp.StatusCode == http.StatusOK {
			require.NoError(t, json.Unmarshal(body, &ok))
		} else {
			require.NoError(t, json.Unmarshal(body, &bad))
		}
		return resp.StatusCode, ok, bad
	}
	problems := func(e api.Error) map[string]string {
		m := map[string]string{}
		for _, p := range e.Problems {
			m[p.Field] = p.Value
		}
		return m
	}
	for _, c := range []struct {
		query   string
		code    int
		explain bool
		fields  map[string]string
	}{
		{"id=job-1&explain=true", http.StatusOK, true, nil},
		{"id=job-1&explain=1", http.StatusOK, true, nil},
		{"id=job-1&explain=false", http.StatusOK, false, nil},
		{"id=job-1", http.StatusOK, false, nil},
		{"id=job-1&explain=yes", http.StatusBadRequest, false, map[string]string{"explain": "yes"}},
		{"explain=verbose", http.StatusBadRequest, false, map[string]string{"explain": "verbose", "id": ""}},
	} {
		code, ok, bad := get(c.query)
		require.Equal(t, c.code, code, c.query)
		if c.code != http.StatusOK {
			require.Equal(t, c.fields, problems(bad), c.query)
			continue
		}
		require.Len(t, ok.Jobs, 1, c.query)
		require.Equal(t, c.explain, ok.Jobs[0].Explain != nil, c.query)
	}
}

// A job set's log longer than one page is read whole, in order, page after
// page, and from/limit cut it where asked even across page boundaries.
func TestEventsOfALogLongerThanAPageComeWholeAndInOrder(t *testing.T) {
	ctx := context.Background()
	s := newService(t, httpapi.Options{})
	c := s.client(t, "")
	_, err := c.CreateQueue(ctx, api.Queue{Name: "A"})
	require.NoError(t, err)
	const n = 9000 // more than two pages
	_, err = c.Submit(ctx, []byte(fmt.Sprintf(`{"queue": "A", "jobSet": "s1", "jobs": [{"count": %d, "requests": {"cpu": "1"}}]}`, n)))
	require.NoError(t, err)
	for _, tc := range []struct {
		from        uint64
		limit       int
		first, want int
	}{
		{0, 0, 1, n},
		{1, 4096, 1, 4096},
		{1, 4097, 1, 4097},
		{4000, 200, 4000, 200},
		{4097, 0, 4097, n - 4096},
		{8999, 10, 8999, 2},
		{n + 1, 0, 0, 0},
	} {
		evs, err := c.Events(ctx, "A", "s1", tc.from, tc.limit)
		require.NoError(t, err, "from %d limit %d", tc.from, tc.limit)
		require.Len(t, evs, tc.want, "from %d limit %d", tc.from, tc.limit)
		for i, e := range evs {
			require.Equal(t, uint64(tc.first+i), e.Seq, "from %d limit %d: event %d", tc.from, tc.limit, i)
		}
	}
}

// A request no route takes is refused as every other request is: with an
// api.Error body, 404 for an unknown path and 405 (with Allow) for a known
// path and another method.
func TestRequestNoRouteTakesGetsAnAPIError(t *testing.T) {
	s := newService(t, httpapi.Options{})
	h := httpapi.New(s.srv, httpapi.Options{})
	cases := []struct {
		method, path string
		code         int
		allow        string
	}{
		{http.MethodGet, "/v2/queues", http.StatusNotFound, ""},
		{http.MethodGet, "/v1/queues/%2F/jobsets/s/events", http.StatusNotFound, ""},
		{http.MethodPatch, "/v1/queues/A", http.StatusMethodNotAllowed, "DELETE, GET, HEAD, PUT"},
		{http.MethodGet, "/v1/jobs/cancel", http.StatusMethodNotAllowed, "POST"},
	}
	for _, c := range cases {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(c.method, c.path, nil))
		require.Equal(t, c.code, rec.Code, "%s %s", c.method, c.path)
		require.Equal(t, c.allow, rec.Header().Get("Allow"), "%s %s", c.method, c.path)
		require.Equal(t, "application/json", rec.Header().Get("Content-Type"))
		var e api.Error
		require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &e), "%s %s: %q", c.method, c.path, rec.Body)
		require.Contains(t, e.Error, c.path[:8], "%s %s", c.method, c.path)
	}
}
