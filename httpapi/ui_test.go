package httpapi_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/api"
	"github.com/flotilla-sched/flotilla/client"
	"github.com/flotilla-sched/flotilla/httpapi"
	"github.com/flotilla-sched/flotilla/server"
)

// get makes a GET with a bearer token (none when empty) and returns the
// status and body.
func get(t *testing.T, s *service, token, path string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, s.url+path, nil)
	require.NoError(t, err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return res.StatusCode, body
}

func getJSON[T any](t *testing.T, s *service, token, path string) T {
	t.Helper()
	code, body := get(t, s, token, path)
	require.Equal(t, http.StatusOK, code, "%s: %s", path, body)
	var v T
	require.NoError(t, json.Unmarshal(body, &v), "%s", body)
	return v
}

func TestJobSetPagesThroughTheAPIListEveryJobOnceByStateAndOrder(t *testing.T) {
	ctx := context.Background()
	s := newService(t, httpapi.Options{})
	require.NoError(t, s.srv.CreateQueue(ctx, flotilla.Queue{Name: "A"}))
	ids, err := s.srv.SubmitJSON(ctx, []byte(`{"queue": "A", "jobSet": "s", "jobs": [
		{"count": 150, "requests": {"cpu": "1"}, "priority": 3},
		{"count": 100, "requests": {"cpu": "1"}, "priority": 1}]}`))
	require.NoError(t, err)
	follow := func(query string) (rows []api.JobRow, pages int) {
		cursor := ""
		for {
			p := getJSON[api.JobsPage](t, s, "", "/v1/queues/A/jobsets/s/jobs?"+query+"&cursor="+url.QueryEscape(cursor))
			rows, pages = append(rows, p.Jobs...), pages+1
			require.Equal(t, api.JobSetSummary{Name: "s", Queued: 250}, p.Counts)
			require.Equal(t, uint64(250), p.LastSeq, "one submitted event a job")
			if p.Next == "" {
				return rows, pages
			}
			cursor = p.Next
		}
	}
	rows, pages := follow("limit=100")
	require.Equal(t, 3, pages)
	require.Len(t, rows, 250)
	want := slices.Sorted(slices.Values(ids)) // one submit time: by id
	for i, r := range rows {
		require.Equal(t, want[i], r.ID)
	}
	byPrio, _ := follow("limit=40&sort=priority&state=queued")
	require.Len(t, byPrio, 250)
	for i, r := range byPrio {
		want := uint32(1)
		if i >= 100 {
			want = 3
		}
		require.Equal(t, want, r.Priority, "row %d", i)
	}
	none, _ := follow("state=running")
	require.Empty(t, none)
	sets := getJSON[api.JobSetsPage](t, s, "", "/v1/queues/A/jobsets")
	require.Equal(t, []api.JobSetSummary{{Name: "s", Queued: 250}}, sets.JobSets)
}

func TestUIReadsWithABadParameterAre400NamingItAndItsValue(t *testing.T) {
	ctx := context.Background()
	s := newService(t, httpapi.Options{})
	require.NoError(t, s.srv.CreateQueue(ctx, flotilla.Queue{Name: "A"}))
	for _, c := range []struct {
		path  string
		probs []api.Problem
	}{
		{"/v1/overview?limit=0", []api.Problem{{Field: "limit", Value: "0"}}},
		{"/v1/overview?limit=many", []api.Problem{{Field: "limit", Value: "many"}}},
		{"/v1/cycles?limit=1001", []api.Problem{{Field: "limit", Value: "1001"}}},
		{"/v1/queues/A/jobsets?limit=-1", []api.Problem{{Field: "limit", Value: "-1"}}},
		{"/v1/clusters/c1/nodes?limit=x", []api.Problem{{Field: "limit", Value: "x"}}},
		{"/v1/queues/A/jobsets/s/jobs?state=done&sort=name&limit=0", []api.Problem{{Field: "state", Value: "done"}, {Field: "sort", Value: "name"}, {Field: "limit", Value: "0"}}},
		{"/v1/queues/A/jobsets/s/jobs?cursor=%25%25", []api.Problem{{Field: "cursor", Value: "%%"}}},
		{"/v1/queues/A/jobsets/s/jobs?state=none", []api.Problem{{Field: "state", Value: "none"}}},
	} {
		code, body := get(t, s, "", c.path)
		require.Equal(t, http.StatusBadRequest, code, "%s: %s", c.path, body)
		var e api.Error
		require.NoError(t, json.Unmarshal(body, &e))
		var got []api.Problem
		for _, p := range e.Problems {
			got = append(got, api.Problem{Field: p.Field, Value: p.Value})
		}
		require.Equal(t, c.probs, got, c.path)
		for _, p := range c.probs {
			require.Contains(t, e.Error, p.Field, c.path)
		}
	}
	for _, path := range []string{"/v1/queues/Z/jobsets", "/v1/queues/Z/jobsets/s/jobs", "/v1/clusters/c1/nodes"} {
		code, body := get(t, s, "", path)
		require.Equal(t, http.StatusNotFound, code, "%s: %s", path, body)
	}
}

func TestUIReadsShowOnlyWhatTheTokenMayWatch(t *testing.T) {
	ctx := context.Background()
	auth, err := httpapi.ParseAuth([]byte(authFile))
	require.NoError(t, err)
	s := newService(t, httpapi.Options{Auth: auth})
	for _, q := range []string{"A", "B"} {
		require.NoError(t, s.srv.CreateQueue(ctx, flotilla.Queue{Name: q}))
		_, err := s.srv.SubmitJSON(ctx, []byte(`{"queue": "`+q+`", "jobSet": "s", "jobs": [{"requests": {"cpu": "1"}}]}`))
		require.NoError(t, err)
	}
	c := s.client(t, "t-exec")
	_, err = c.Report(ctx, "c1", api.Report{Nodes: []api.Node{{Name: "n1", Resources: map[string]string{"cpu": "4"}}}})
	require.NoError(t, err)
	_, err = s.srv.Cycle(ctx)
	require.NoError(t, err)
	// bob watches B: the overview and the cycles show B alone, A's pages
	// are refused.
	ov := getJSON[api.Overview](t, s, "t-bob", "/v1/overview")
	require.Len(t, ov.Queues, 1)
	require.Equal(t, "B", ov.Queues[0].Name)
	require.Equal(t, []string{"B"}, cycleQueues(ov.LastCycle.Queues))
	cs := getJSON[api.CyclesPage](t, s, "t-bob", "/v1/cycles")
	require.Equal(t, []string{"B"}, cycleQueues(cs.Cycles[0].Queues))
	getJSON[api.JobsPage](t, s, "t-bob", "/v1/queues/B/jobsets/s/jobs")
	getJSON[api.NodesPage](t, s, "t-bob", "/v1/clusters/c1/nodes")
	for _, path := range []string{"/v1/queues/A/jobsets", "/v1/queues/A/jobsets/s/jobs"} {
		code, body := get(t, s, "t-bob", path)
		require.Equal(t, http.StatusForbidden, code, path)
		require.Contains(t, string(body), "may not read queue A")
	}
	// The executor's token and one without rights read nothing; no token
	// is 401.
	for _, tok := range []string{"t-exec", "t-none"} {
		for _, path := range []string{"/v1/overview", "/v1/cycles", "/v1/clusters/c1/nodes", "/v1/queues/A/jobsets", "/v1/queues/B/jobsets/s/jobs"} {
			code, body := get(t, s, tok, path)
			require.Equal(t, http.StatusForbidden, code, "%s %s: %s", tok, path, body)
			require.NotContains(t, string(body), `"jobs"`)
		}
	}
	code, _ := get(t, s, "", "/v1/overview")
	require.Equal(t, http.StatusUnauthorized, code)
	// The page itself needs no token: it asks for one.
	for _, path := range []string{"/ui/", "/ui/queues/A", "/ui/jobsets/A/s", "/ui/jobs/job-1", "/ui/clusters"} {
		code, body := get(t, s, "", path)
		require.Equal(t, http.StatusOK, code, path)
		require.Contains(t, string(body), `<script src="/ui/app.js"`, path)
	}
	code, body := get(t, s, "", "/ui/app.js")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, string(body), "sessionStorage")
}

func cycleQueues(qs []api.CycleQueue) []string {
	var out []string
	for _, q := range qs {
		out = append(out, q.Name)
	}
	return out
}

func TestUIPageIsServedAtUIAndItsAssetsWithTheirTypes(t *testing.T) {
	s := newService(t, httpapi.Options{})
	for path, ctype := range map[string]string{"/ui/": "text/html", "/ui/app.js": "text/javascript", "/ui/style.css": "text/css", "/ui/jobsets/A/s%2Fx": "text/html"} {
		res, err := http.Get(s.url + path)
		require.NoError(t, err)
		res.Body.Close()
		require.Equal(t, http.StatusOK, res.StatusCode, path)
		require.True(t, strings.HasPrefix(res.Header.Get("Content-Type"), ctype), "%s: %s", path, res.Header.Get("Content-Type"))
		require.Contains(t, res.Header.Get("Content-Security-Policy"), "default-src 'self'", path)
	}
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := c.Get(s.url + "/ui")
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, http.StatusMovedPermanently, res.StatusCode)
	require.Equal(t, "/ui/", res.Header.Get("Location"))
}

func TestTheGoClientFollowsTheUIPages(t *testing.T) {
	ctx := context.Background()
	s := newService(t, httpapi.Options{})
	for _, q := range []string{"A", "B", "C"} {
		require.NoError(t, s.srv.CreateQueue(ctx, flotilla.Queue{Name: q}))
	}
	ids, err := s.srv.SubmitJSON(ctx, []byte(`{"queue": "A", "jobSet": "s1", "jobs": [{"count": 25, "requests": {"cpu": "1"}}]}`))
	require.NoError(t, err)
	c := s.client(t, "")
	var got []string
	q := client.JobsQuery{Limit: 10, State: "queued", Sort: "priority"}
	for {
		p, err := c.Jobs(ctx, "A", "s1", q)
		require.NoError(t, err)
		for _, r := range p.Jobs {
			got = append(got, r.ID)
		}
		if p.Next == "" {
			break
		}
		q.Cursor = p.Next
	}
	require.Equal(t, slices.Sorted(slices.Values(ids)), got)
	ov, err := c.Overview(ctx, "A", 1)
	require.NoError(t, err)
	require.Equal(t, "B", ov.Queues[0].Name)
	require.Equal(t, "B", ov.Next)
	sets, err := c.JobSets(ctx, "A", "", 0)
	require.NoError(t, err)
	require.Equal(t, "s1", sets.JobSets[0].Name)
	cs, err := c.Cycles(ctx, 5)
	require.NoError(t, err)
	require.Empty(t, cs.Cycles, "no cluster: no cycle decided")
	_, err = c.Nodes(ctx, "c1", "", 0)
	require.ErrorIs(t, err, client.ErrNotFound)
	_, err = c.Jobs(ctx, "A", "s1", client.JobsQuery{State: "gone"})
	var ce *client.Error
	require.ErrorAs(t, err, &ce)
	require.Equal(t, http.StatusBadRequest, ce.Status)
}

// TestEndedJobsOfASetArePagedThroughTheAPIAndTheClient: ?state=cancelled
// lists the set's cancelled jobs (the server keeps no ended job; the
// backend's records do), page after page, by the client as by hand;
// sort=priority with an ended state is a 400 naming sort.
func TestEndedJobsOfASetArePagedThroughTheAPIAndTheClient(t *testing.T) {
	ctx := context.Background()
	s := newService(t, httpapi.Options{})
	require.NoError(t, s.srv.CreateQueue(ctx, flotilla.Queue{Name: "A"}))
	ids, err := s.srv.SubmitJSON(ctx, []byte(`{"queue": "A", "jobSet": "s/1", "jobs": [{"count": 250, "requests": {"cpu": "1"}}]}`))
	require.NoError(t, err)
	_, err = s.srv.Cancel(ctx, ids[:230]...)
	require.NoError(t, err)
	c, err := client.New(s.url, "", nil)
	require.NoError(t, err)
	var got []string
	q := client.JobsQuery{State: "cancelled", Limit: 100}
	for {
		p, err := c.Jobs(ctx, "A", "s/1", q)
		require.NoError(t, err)
		require.Equal(t, api.JobSetSummary{Name: "s/1", Queued: 20}, p.Counts)
		for _, r := range p.Jobs {
			require.Equal(t, "cancelled", r.State)
			got = append(got, r.ID)
		}
		if p.Next == "" {
			break
		}
		q.Cursor = p.Next
	}
	require.Equal(t, slices.Sorted(slices.Values(ids[:230])), got, "one submit time: by id")
	code, body := get(t, s, "", "/v1/queues/A/jobsets/s%2F1/jobs?state=succeeded&sort=priority")
	require.Equal(t, http.StatusBadRequest, code)
	var e api.Error
	require.NoError(t, json.Unmarshal(body, &e))
	require.Len(t, e.Problems, 1, e.Error)
	require.Equal(t, api.Problem{Field: "sort", Value: "priority"}, api.Problem{Field: e.Problems[0].Field, Value: e.Problems[0].Value})
}

// TestAJobSkippedAsTheSameAsAnotherQueuesJobNamesItNotToATokenThatMayNotReadThatQueue:
// the scheduler tells a job skipped because a job of another queue with
// the same requirements failed which job and queue that was; a token
// that may not read that queue (the web UI's job page, status -v) is
// shown neither, in the reason nor in the explanation, and an admin is.
func TestAJobSkippedAsTheSameAsAnotherQueuesJobNamesItNotToATokenThatMayNotReadThatQueue(t *testing.T) {
	ctx := context.Background()
	auth, err := httpapi.ParseAuth([]byte(`{"tokens": [{"token": "adm", "principal": "ops", "admin": true},
		{"token": "bob", "principal": "bob", "watch": ["B"]}]}`))
	require.NoError(t, err)
	s := newService(t, httpapi.Options{Auth: auth})
	for _, q := range []string{"A", "B"} {
		require.NoError(t, s.srv.CreateQueue(ctx, flotilla.Queue{Name: q}))
	}
	_, err = s.srv.Report(ctx, &server.Report{Cluster: "c1", Nodes: []flotilla.Node{{Name: "n1", Cluster: "c1", Total: flotilla.Resources{1000, 1 << 30}}}})
	require.NoError(t, err)
	a, err := s.srv.SubmitJSON(ctx, []byte(`{"queue": "A", "jobSet": "secret-set", "jobs": [{"requests": {"cpu": "2"}}]}`))
	require.NoError(t, err)
	b, err := s.srv.SubmitJSON(ctx, []byte(`{"queue": "B", "jobSet": "s", "jobs": [{"requests": {"cpu": "2"}}]}`))
	require.NoError(t, err)
	_, err = s.srv.Cycle(ctx)
	require.NoError(t, err)
	admin := getJSON[api.StatusResponse](t, s, "adm", "/v1/jobs?explain=true&id="+b[0])
	u := admin.Jobs[0].Explain.Unscheduled
	require.NotNil(t, u)
	require.Equal(t, a[0], u.SameAs, "the admin reads A: the job is named")
	require.Equal(t, "A", u.SameAsQueue)
	code, body := get(t, s, "bob", "/v1/jobs?explain=true&id="+b[0])
	require.Equal(t, http.StatusOK, code, "%s", body)
	require.NotContains(t, string(body), a[0], "bob may not read A")
	require.NotContains(t, string(body), `queue A`)
	var bob api.StatusResponse
	require.NoError(t, json.Unmarshal(body, &bob))
	require.Empty(t, bob.Jobs[0].Explain.Unscheduled.SameAsQueue)
	require.Contains(t, bob.Jobs[0].Reason, "same requirements as a job of another queue")
	require.Equal(t, u.Code, bob.Jobs[0].Explain.Unscheduled.Code)
}
