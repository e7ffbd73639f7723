package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/api"
	"github.com/flotilla-sched/flotilla/backend"
	"github.com/flotilla-sched/flotilla/httpapi"
	"github.com/flotilla-sched/flotilla/server"
	"github.com/flotilla-sched/flotilla/submit"
)

// FuzzHandlers posts arbitrary bodies to the submit, report, cancel,
// queue and group routes: the handler never panics nor answers 5xx, a 400
// stores nothing (no event, no queue, no group), and a 200 submit stores
// one submitted event per id returned.
func FuzzHandlers(f *testing.F) {
	f.Add(0, []byte(`{"queue": "A", "jobSet": "s", "jobs": [{"count": 2, "requests": {"cpu": "1"}}]}`))
	f.Add(0, []byte(`{"queue": "A", "jobSet": "s", "jobs": [{"requests": {"cpu": "1"}, "gang": {"id": "g", "cardinality": 1}, "clientId": "x"}]}`))
	f.Add(0, []byte(`{"queue": "A", "jobs": [{"requests": {"cpu": "-1"}}], "x": 1}`))
	f.Add(0, []byte(`{"queue": "B", "jobSet": "s", "jobs": [{"requests": {"gpu": "1"}}]}`))
	f.Add(1, []byte(`{"nodes": [{"name": "n1", "resources": {"cpu": "4"}}]}`))
	f.Add(1, []byte(`{"nodes": [{"name": "n1", "resources": {"cpu": "4x"}}], "jobs": [{"job": "j", "attempt": 1, "phase": "running"}]}`))
	f.Add(2, []byte(`{"jobIds": ["job-1"]}`))
	f.Add(3, []byte(`{"name": "Q", "priorityFactor": -1}`))
	// Refusals of names and requests: not path segments, not UTF-8, over
	// their limits, zero in every resource.
	f.Add(3, []byte(`{"name": ".."}`))
	f.Add(3, []byte("{\"name\": \"q\xff\"}"))
	f.Add(3, []byte(`{"name": "`+strings.Repeat("q", 254)+`"}`))
	f.Add(0, []byte(`{"queue": "A", "jobSet": ".", "jobs": [{"requests": {"cpu": "1"}}]}`))
	f.Add(0, []byte("{\"queue\": \"A\", \"jobSet\": \"s\xfe\", \"jobs\": [{\"requests\": {\"cpu\": \"1\"}}]}"))
	f.Add(0, []byte(`{"queue": "A", "jobSet": "s", "jobs": [{"count": 3, "requests": {"cpu": "0", "memory": "0"}}]}`))
	f.Add(0, []byte(`{"queue": "A", "jobSet": "s", "jobs": [{"requests": {"cpu": "1"}, "clientId": "`+strings.Repeat("c", 254)+`"}]}`))
	f.Add(0, []byte(`{"queue": "A", "jobSet": "s", "jobs": [{"requests": {"cpu": "1"}, "nodeSelector": {"zone": "`+strings.Repeat("z", 64)+`"}}]}`))
	f.Add(1, []byte(`{"nodes": [{"name": "`+strings.Repeat("n", 254)+`", "resources": {"cpu": "4"}}]}`))
	// The queue tree: quotas, parents, cycles.
	f.Add(3, []byte(`{"name": "Q", "parent": "G", "guaranteed": {"cpu": "2"}, "limit": {"cpu": "1"}}`))
	f.Add(3, []byte(`{"name": "Q", "parent": "A", "lendingLimit": {"gpu": "x"}}`))
	f.Add(4, []byte(`{"name": "H", "parent": "G", "priorityFactor": 2, "guaranteed": {"cpu": "4", "memory": "1Gi"}}`))
	f.Add(4, []byte(`{"name": "G", "parent": "G"}`))
	f.Add(4, []byte(`{"name": "A"}`))
	f.Add(4, []byte(`{"name": "K", "limit": {"cpu": "-1"}, "priorityFactor": -3}`))
	// Retry policies and failure reasons.
	f.Add(3, []byte(`{"name": "R", "retryPolicy": {"maxAttempts": 5, "rules": [{"onExitCodes": [137, 143], "onReasons": ["oom", "evicted", "deadline", "lease-expired", "lease-returned"], "retryLimit": 3, "avoidSameNode": true}]}}`))
	f.Add(3, []byte(`{"name": "R", "retryPolicy": {"maxAttempts": -1, "rules": [{}, {"onExitCodes": [0, 256, 1, 1], "onReasons": ["x"], "retryLimit": -1}]}}`))
	f.Add(3, []byte(`{"name": "R", "priorityFactor": -1, "retryPolicy": {"rules": [{"onReasons": ["oom"]}], "extra": 1}}`))
	f.Add(3, []byte(`{"name": "R", "guaranteed": {"cpu": "x"}, "retryPolicy": {"rules": null}}`))
	f.Add(1, []byte(`{"nodes": [{"name": "n1", "resources": {"cpu": "4"}}], "jobs": [{"job": "j", "attempt": 1, "phase": "failed", "exitCode": 137, "failureReason": "oom"}]}`))
	f.Add(1, []byte(`{"nodes": [{"name": "n1", "resources": {"cpu": "4"}}], "jobs": [{"job": "j", "attempt": 1, "phase": "running", "failureReason": "lease-expired"}]}`))
	// Route 5 submits once cluster c1 has reported a node of 4 cpu and
	// 8Gi: templates no node can run get warnings.
	f.Add(5, []byte(`{"queue": "A", "jobSet": "s", "jobs": [{"count": 2, "requests": {"cpu": "8"}}, {"count": 0, "requests": {"cpu": "9"}}, {"requests": {"cpu": "1"}}, {"requests": {"memory": "9Gi"}, "pools": ["x"]}]}`))
	f.Add(5, []byte(`{"queue": "A", "jobSet": "s", "jobs": [{"requests": {"cpu": "4", "memory": "8Gi"}}, {"requests": {"nvidia.com/gpu": "1"}}]}`))
	f.Fuzz(func(t *testing.T, route int, body []byte) {
		s := newService(t, httpapi.Options{MaxBodyBytes: 1 << 16})
		ctx := context.Background()
		if err := s.srv.CreateQueue(ctx, flotilla.Queue{Name: "A"}); err != nil {
			t.Fatal(err)
		}
		if err := s.srv.CreateGroup(ctx, flotilla.QueueGroup{Name: "G"}); err != nil {
			t.Fatal(err)
		}
		paths := []string{"/v1/jobs", "/v1/clusters/c1/report", "/v1/jobs/cancel", "/v1/queues", "/v1/groups", "/v1/jobs"}
		route = (route%len(paths) + len(paths)) % len(paths)
		path := paths[route]
		if route == 5 {
			node := flotilla.Node{Name: "n1", Total: s.srv.Schema().MustParse(map[string]string{"cpu": "4", "memory": "8Gi"})}
			if _, err := s.srv.Report(ctx, &server.Report{Cluster: "c1", Nodes: []flotilla.Node{node}}); err != nil {
				t.Fatal(err)
			}
		}
		tree := treeOf(t, s)
		h := httpapi.New(s.srv, httpapi.Options{MaxBodyBytes: 1 << 16})
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body)))
		if rec.Code >= 500 {
			t.Fatalf("%s: %d %s", path, rec.Code, rec.Body)
		}
		evs, err := s.be.Events(ctx, "A", "s", 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case rec.Code == http.StatusBadRequest || rec.Code == http.StatusRequestEntityTooLarge:
			if len(evs) != 0 {
				t.Fatalf("%s: refused with %d but stored %d events", path, rec.Code, len(evs))
			}
			if after := treeOf(t, s); after != tree {
				t.Fatalf("%s: refused with %d but changed the tree:\n%s\nthen\n%s", path, rec.Code, tree, after)
			}
			var e api.Error
			if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || e.Error == "" {
				t.Fatalf("%s: a refusal's body is an api.Error: %q", path, rec.Body)
			}
		case rec.Code == http.StatusOK && path == "/v1/jobs":
			var resp api.SubmitResponse
			if err := json.Unmarshal(rec.Body.Bytes(), &resp); err != nil {
				t.Fatal(err)
			}
			for _, id := range resp.JobIDs {
				if _, err := s.be.Job(ctx, id); err != nil {
					t.Fatalf("id %q returned but not stored: %v", id, err)
				}
			}
			checkSubmitWarnings(t, s, body, route == 5, resp.Warnings)
		}
	})
}

// checkSubmitWarnings checks an accepted submission's warnings against a
// naive judgement of its templates: with the node (4 cpu, 8Gi, in the
// default pool) known, a template of jobs gets one warning, in file
// order, exactly when some request exceeds the node's or it names pools
// without the default one; with no node known, none.
func checkSubmitWarnings(t *testing.T, s *service, body []byte, known bool, got []api.SubmitWarning) {
	t.Helper()
	req, err := submit.Parse(body)
	if err != nil {
		t.Fatalf("accepted, but submit.Parse refuses it: %v", err)
	}
	schema := s.srv.Schema()
	node := schema.MustParse(map[string]string{"cpu": "4", "memory": "8Gi"})
	var want []string
	for i, tp := range req.Jobs {
		if !known || tp.Count != nil && *tp.Count == 0 {
			continue
		}
		r, err := schema.Parse("requests", tp.Requests)
		if err != nil {
			t.Fatalf("accepted requests %v: %v", tp.Requests, err)
		}
		if !r.Fits(node) || tp.Pools != nil && !slices.Contains(tp.Pools, backend.DefaultPool) {
			want = append(want, fmt.Sprintf("jobs[%d]", i))
		}
	}
	var fields []string
	for _, w := range got {
		if !strings.HasPrefix(w.Message, w.Field+": ") {
			t.Fatalf("warning %q does not start with its field %s", w.Message, w.Field)
		}
		fields = append(fields, w.Field)
	}
	if !slices.Equal(fields, want) {
		t.Fatalf("warnings for %v, want for %v", fields, want)
	}
}

// treeOf is the service's queues and groups, as text.
func treeOf(t *testing.T, s *service) string {
	t.Helper()
	qs, err := s.srv.ListQueues(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	gs, err := s.srv.ListGroups(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	out := ""
	for _, q := range qs {
		out += fmt.Sprintf("queue %+v retry %s\n", q.Queue, policyText(q.RetryPolicy))
	}
	for _, g := range gs {
		out += fmt.Sprintf("group %+v\n", g.QueueGroup)
	}
	return out
}

// FuzzParseAuth: any auth file is refused with *flotilla.FieldError
// problems only, or accepted; an accepted file gives each token exactly
// the rights its entry lists (checked against a plain decoding of the
// file and the rights table: admin adds reading, listing and cancelling
// everywhere, never submitting or reporting), and no other token any.
func FuzzParseAuth(f *testing.F) {
	f.Add([]byte(authFile))
	f.Add([]byte(`{"tokens": [{"token": "x"}, {"token": "x", "principal": "p"}, {"principal": "q"}]}`))
	f.Add([]byte(`{"tokens": [{"token": "a", "principal": "p", "submit": ["*"], "executor": ["c1", "c2"]}]}`))
	f.Add([]byte(`{"tokens": []}`))
	f.Add([]byte(`{"tokens": [{"token": "a", "principal": "p", "admin": "yes"}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		auth, err := httpapi.ParseAuth(data)
		if err != nil {
			for _, e := range flotilla.Problems(err) {
				var fe *flotilla.FieldError
				if !errors.As(e, &fe) {
					t.Fatalf("problem %v is not a *flotilla.FieldError", e)
				}
			}
			return
		}
		var file httpapi.AuthFile
		if err := json.Unmarshal(data, &file); err != nil {
			t.Fatalf("ParseAuth accepted %q, encoding/json refuses it: %v", data, err)
		}
		if len(file.Tokens) == 0 {
			t.Fatal("an auth file without tokens was accepted")
		}
		in := func(list []string, name string) bool {
			return slices.Contains(list, "*") || slices.Contains(list, name)
		}
		for _, e := range file.Tokens {
			p, ok := auth.Lookup(e.Token)
			if !ok || p.Name != e.Principal || e.Principal == "" {
				t.Fatalf("token of %q: got %+v, %v", e.Principal, p, ok)
			}
			for _, name := range append(append(append([]string{"A", "*"}, e.Submit...), e.Watch...), e.Executor...) {
				if p.Admin() != e.Admin || p.MaySubmit(name) != in(e.Submit, name) ||
					p.MayCancel(name) != (e.Admin || in(e.Submit, name)) ||
					p.MayWatch(name) != (e.Admin || in(e.Watch, name) || in(e.Submit, name)) ||
					p.MayList() != (e.Admin || len(e.Watch) > 0 || len(e.Submit) > 0) ||
					p.MayReport(name) != in(e.Executor, name) {
					t.Fatalf("principal %q has the wrong rights on %q", e.Principal, name)
				}
			}
		}
		if _, ok := auth.Lookup(string(data) + "\x00not a token"); ok {
			t.Fatal("an unknown token was found")
		}
	})
}

// FuzzQueryRoutes sends arbitrary queue names, query strings and bodies
// to the routes FuzzHandlers leaves out (job status, a job set's events,
// reading, updating and deleting a queue or a group, listing groups, the
// web UI's paged reads): the
// handler never panics nor answers 5xx, a refusal is an api.Error, and no
// read, nor any refused write, changes the service's queues, groups or
// event log.
func FuzzQueryRoutes(f *testing.F) {
	f.Add(0, "A", "id=job-1&explain=true", []byte(nil))
	f.Add(0, "A", "explain=maybe", []byte(nil))
	f.Add(1, "A", "from=2&limit=1", []byte(nil))
	f.Add(1, "A", "from=-1&limit=x&watch=perhaps", []byte(nil))
	f.Add(1, "B", "watch=true", []byte(nil))
	f.Add(2, "A", "", []byte(nil))
	f.Add(3, "A", "", []byte(`{"name": "A", "priorityFactor": 2}`))
	f.Add(3, "A", "", []byte(`{"name": "B", "priorityFactor": -1, "x": 1}`))
	f.Add(4, "A", "", []byte(nil))
	f.Add(4, "Z", "", []byte(nil))
	f.Add(2, "..", "", []byte(nil))
	f.Add(3, ".", "", []byte(`{"name": "."}`))
	f.Add(3, "q\xff", "", []byte("{\"name\": \"q\xff\"}"))
	f.Add(1, "A", "watch=true&from=1", []byte(nil))
	f.Add(5, "G", "", []byte(nil))
	f.Add(6, "G", "", []byte(`{"name": "G", "parent": "H"}`))
	f.Add(6, "H", "", []byte(`{"limit": {"cpu": "1"}, "guaranteed": {"cpu": "2"}}`))
	f.Add(6, "Z", "", []byte(`{"name": "Z"}`))
	f.Add(7, "G", "", []byte(nil))
	f.Add(7, "H", "", []byte(nil))
	f.Add(8, "", "", []byte(nil))
	// The web UI's paged reads.
	f.Add(9, "", "limit=1&after=A", []byte(nil))
	f.Add(9, "", "limit=0", []byte(nil))
	f.Add(10, "", "limit=1001", []byte(nil))
	f.Add(11, "A", "after=&limit=2", []byte(nil))
	f.Add(11, "Z", "limit=x", []byte(nil))
	f.Add(12, "A", "state=queued&sort=priority&limit=1", []byte(nil))
	f.Add(12, "A", "state=done&sort=name&limit=-1", []byte(nil))
	f.Add(12, "A", "cursor=MC4wLjAueA&limit=5", []byte(nil))
	f.Add(12, "A", "cursor=%ff%fe&sort=submitted", []byte(nil))
	f.Add(12, "q\xff", "state=running", []byte(nil))
	f.Add(13, "c1", "limit=1", []byte(nil))
	f.Add(13, "..", "after=n", []byte(nil))
	f.Fuzz(func(t *testing.T, route int, name, query string, body []byte) {
		s := newService(t, httpapi.Options{MaxBodyBytes: 1 << 16})
		ctx := context.Background()
		if err := s.srv.CreateQueue(ctx, flotilla.Queue{Name: "A"}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.srv.SubmitJSON(ctx, []byte(`{"queue": "A", "jobSet": "s", "jobs": [{"requests": {"cpu": "1"}}]}`)); err != nil {
			t.Fatal(err)
		}
		for _, g := range []flotilla.QueueGroup{{Name: "G"}, {Name: "H", Parent: "G"}} {
			if err := s.srv.CreateGroup(ctx, g); err != nil {
				t.Fatal(err)
			}
		}
		before, err := s.be.Events(ctx, "A", "s", 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		tree := treeOf(t, s)
		routes := []struct{ method, path string }{
			{http.MethodGet, "/v1/jobs"},
			{http.MethodGet, "/v1/queues/" + url.PathEscape(name) + "/jobsets/s/events"},
			{http.MethodGet, "/v1/queues/" + url.PathEscape(name)},
			{http.MethodPut, "/v1/queues/" + url.PathEscape(name)},
			{http.MethodDelete, "/v1/queues/" + url.PathEscape(name)},
			{http.MethodGet, "/v1/groups/" + url.PathEscape(name)},
			{http.MethodPut, "/v1/groups/" + url.PathEscape(name)},
			{http.MethodDelete, "/v1/groups/" + url.PathEscape(name)},
			{http.MethodGet, "/v1/groups"},
			{http.MethodGet, "/v1/overview"},
			{http.MethodGet, "/v1/cycles"},
			{http.MethodGet, "/v1/queues/" + url.PathEscape(name) + "/jobsets"},
			{http.MethodGet, "/v1/queues/" + url.PathEscape(name) + "/jobsets/s/jobs"},
			{http.MethodGet, "/v1/clusters/" + url.PathEscape(name) + "/nodes"},
		}
		rt := routes[(route%len(routes)+len(routes))%len(routes)]
		req, err := http.NewRequest(rt.method, "http://flotilla"+rt.path+"?"+query, bytes.NewReader(body))
		if err != nil {
			t.Skip("not a request:", err)
		}
		watching := req.URL.Query().Get("watch") != ""
		if watching { // a watch that parsed would follow the log until its client leaves
			cctx, cancel := context.WithCancel(ctx)
			cancel()
			req = req.WithContext(cctx)
		}
		rec := httptest.NewRecorder()
		httpapi.New(s.srv, httpapi.Options{MaxBodyBytes: 1 << 16}).ServeHTTP(rec, req)
		if rec.Code >= 500 && !watching {
			t.Fatalf("%s %s: %d %s", rt.method, req.URL, rec.Code, rec.Body)
		}
		if rec.Code >= 400 && rec.Code < 500 {
			var e api.Error
			if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || e.Error == "" {
				t.Fatalf("%s %s: a refusal's body is an api.Error: %q", rt.method, req.URL, rec.Body)
			}
		}
		after, err := s.be.Events(ctx, "A", "s", 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(after) != len(before) {
			t.Fatalf("%s %s changed the event log: %d events, then %d", rt.method, req.URL, len(before), len(after))
		}
		if rt.method == http.MethodGet || rec.Code >= 300 {
			if after := treeOf(t, s); after != tree {
				t.Fatalf("%s %s (%d) changed the queues or groups:\n%s\nthen\n%s", rt.method, req.URL, rec.Code, tree, after)
			}
		}
	})
}

// policyText is a retry policy as JSON ("null" for none).
func policyText(p *api.RetryPolicy) string {
	b, _ := json.Marshal(p)
	return string(b)
}
