package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/flotilla-sched/flotilla/api"
	"github.com/flotilla-sched/flotilla/backend"
	"github.com/flotilla-sched/flotilla/events"
	"github.com/flotilla-sched/flotilla/httpapi"
)

// opsRoutes are the operator's routes FuzzOperatorHandlers posts to.
var opsRoutes = []string{"/v1/jobs/reprioritize", "/v1/jobs/preempt", "/v1/queues/%s/cordon", "/v1/clusters/%s/cordon"}

// FuzzOperatorHandlers posts arbitrary bodies to the operator's routes
// over a service with queued and running jobs: the handler never panics
// nor answers 5xx; a 4xx changes nothing (no event); a 200 reprioritize
// wrote one reprioritized event with the priority asked for each job it
// lists as reprioritized, and none for the others; a 200 preempt wrote
// one preempted event (with the reason asked) for each job it lists as
// preempted, each of which had been leased or running, and nothing else;
// a cordon (the fuzzed bytes are the name in the path) stores one cordon
// of a queue or cluster that exists, or is refused and stores none.
func FuzzOperatorHandlers(f *testing.F) {
	f.Add(0, []byte(`{"jobIds": ["job-1", "job-3"], "priority": 4}`))
	f.Add(0, []byte(`{"queue": "A", "jobSet": "s", "priority": 0}`))
	f.Add(0, []byte(`{"queue": "A", "priority": 1}`))
	f.Add(0, []byte(`{"jobIds": ["job-1"], "priority": -1}`))
	f.Add(0, []byte(`{"jobIds": ["job-1"], "priority": 4294967296}`))
	f.Add(0, []byte(`{"jobIds": [], "priority": 2, "x": 1}`))
	f.Add(0, []byte(`{"jobSet": "s", "priority": 2}`))
	f.Add(1, []byte(`{"jobIds": ["job-1", "job-5"], "reason": "runaway"}`))
	f.Add(1, []byte(`{"queue": "B"}`))
	f.Add(1, []byte(`{"cluster": "c1", "node": "n1"}`))
	f.Add(1, []byte(`{"cluster": "c1", "node": "n2"}`))
	f.Add(1, []byte(`{"node": "n1"}`))
	f.Add(1, []byte(`{"queue": "A", "cluster": "c1"}`))
	f.Add(2, []byte("A"))
	f.Add(2, []byte("Z"))
	f.Add(3, []byte("c1"))
	f.Add(3, []byte("c1/../x"))
	f.Fuzz(func(t *testing.T, route int, body []byte) {
		s := opsService(t)
		ctx := context.Background()
		if _, err := s.srv.Cycle(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := s.srv.SubmitJSON(ctx, []byte(`{"queue": "A", "jobSet": "s", "jobs": [{"requests": {"cpu": "9"}}]}`)); err != nil {
			t.Fatal(err)
		}
		before := s.allEvents(t)
		h := httpapi.New(s.srv, httpapi.Options{})
		path := opsRoutes[(route%len(opsRoutes)+len(opsRoutes))%len(opsRoutes)]
		cordon := strings.Contains(path, "%s")
		if cordon { // the body is the name in the path
			path = fmt.Sprintf(path, url.PathEscape(string(body)))
			body = nil
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body)))
		after := s.allEvents(t)
		cs, err := s.be.ListCordons(ctx)
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case rec.Code >= 500:
			t.Fatalf("%s: %d %s", path, rec.Code, rec.Body)
		case rec.Code >= 300: // a refusal, or the mux's redirect of an unclean path
			if !slices.Equal(before, after) || len(cs) != 0 {
				t.Fatalf("%s: refused with %d but wrote %d events, cordons %v", path, rec.Code, len(after)-len(before), cs)
			}
		case cordon:
			if rec.Code != http.StatusNoContent || len(cs) != 1 || !slices.Equal(before, after) {
				t.Fatalf("%s: %d, cordons %v", path, rec.Code, cs)
			}
			if q := cs[0]; q.Kind == backend.CordonQueue && q.Name != "A" && q.Name != "B" || q.Kind == backend.CordonCluster && q.Name != "c1" {
				t.Fatalf("%s cordoned %v, which does not exist", path, q)
			}
		case path == "/v1/jobs/reprioritize":
			var req api.ReprioritizeRequest
			var res api.ReprioritizeResponse
			if json.Unmarshal(body, &req) != nil || req.Priority == nil || json.Unmarshal(rec.Body.Bytes(), &res) != nil {
				t.Fatalf("200 for %q: %s", body, rec.Body)
			}
			var got []string
			for _, e := range after {
				if e.Seq > lastSeq(before, e.Queue) {
					if e.Type != events.Reprioritized || e.Priority != *req.Priority {
						t.Fatalf("wrote %+v for %q", e, body)
					}
					got = append(got, e.Job)
				}
			}
			slices.Sort(got)
			if !slices.Equal(got, res.Reprioritized) {
				t.Fatalf("events for %v, answer lists %v", got, res.Reprioritized)
			}
		default:
			var req api.PreemptRequest
			var res api.PreemptResponse
			if json.Unmarshal(body, &req) != nil || json.Unmarshal(rec.Body.Bytes(), &res) != nil {
				t.Fatalf("200 for %q: %s", body, rec.Body)
			}
			var got []string
			for _, e := range after {
				if e.Seq > lastSeq(before, e.Queue) {
					if e.Type != events.Preempted || !strings.HasSuffix(e.Reason, req.Reason) || e.Cluster != "c1" {
						t.Fatalf("wrote %+v for %q", e, body)
					}
					got = append(got, e.Job)
				}
			}
			slices.Sort(got)
			if !slices.Equal(got, res.Preempted) {
				t.Fatalf("events for %v, answer lists %v", got, res.Preempted)
			}
		}
	})
}

// lastSeq is the last sequence number of queue's job set s in evs.
func lastSeq(evs []events.Event, queue string) uint64 {
	var n uint64
	for _, e := range evs {
		if e.Queue == queue {
			n = max(n, e.Seq)
		}
	}
	return n
}
