package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/api"
	"github.com/flotilla-sched/flotilla/httpapi"
)

// BenchmarkUIReads1MQueuedJobsIn100Queues measures the web UI's reads
// through the handler (JSON encoded, no network) over 1,000,000 queued
// jobs in 100 queues: 99 queues of 5,000 jobs and one whose job set
// holds 505,000 (submitted in batches of 5,000 at priorities 1 and 2 in
// turn, so a page by priority reads two interleaved levels). Issue 22's
// goals: the overview ≤ 200 ms, a page of 100 jobs ≤ 100 ms.
func BenchmarkUIReads1MQueuedJobsIn100Queues(b *testing.B) {
	s := newService(b, httpapi.Options{})
	ctx := context.Background()
	for q := range 100 {
		name := fmt.Sprintf("q%02d", q)
		if err := s.srv.CreateQueue(ctx, flotilla.Queue{Name: name}); err != nil {
			b.Fatal(err)
		}
		batches := 1
		if q == 0 {
			batches = 101
		}
		for i := range batches {
			file := fmt.Sprintf(`{"queue": %q, "jobSet": "big", "jobs": [{"count": 5000, "priority": %d, "requests": {"cpu": "1"}}]}`, name, 1+i%2)
			if _, err := s.srv.SubmitJSON(ctx, []byte(file)); err != nil {
				b.Fatal(err)
			}
			s.clock.Advance(1e6) // a millisecond between submissions
		}
	}
	h := httpapi.New(s.srv, httpapi.Options{})
	get := func(b *testing.B, path string, v any) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		if rec.Code != http.StatusOK {
			b.Fatalf("%s: %d %s", path, rec.Code, rec.Body)
		}
		if v != nil {
			if err := json.Unmarshal(rec.Body.Bytes(), v); err != nil {
				b.Fatal(err)
			}
		}
	}
	var ov api.Overview
	get(b, "/v1/overview", &ov)
	if n := len(ov.Queues); n != 100 {
		b.Fatalf("%d queues", n)
	}
	// The cursor of a page in the middle of the big set, by each order.
	middle := func(query string) string {
		var p api.JobsPage
		get(b, "/v1/queues/q00/jobsets/big/jobs?limit=1000&"+query, &p)
		for range 250 {
			get(b, "/v1/queues/q00/jobsets/big/jobs?limit=1000&"+query+"&cursor="+url.QueryEscape(p.Next), &p)
		}
		return url.QueryEscape(p.Next)
	}
	bySubmit, byPriority := middle("sort=submitted"), middle("sort=priority")
	for _, c := range []struct{ name, path string }{
		{"Overview", "/v1/overview"},
		{"JobsFirstPage", "/v1/queues/q00/jobsets/big/jobs?limit=100"},
		{"JobsMiddlePage", "/v1/queues/q00/jobsets/big/jobs?limit=100&cursor=" + bySubmit},
		{"JobsMiddlePageByPriorityQueued", "/v1/queues/q00/jobsets/big/jobs?limit=100&state=queued&sort=priority&cursor=" + byPriority},
		{"JobsRunningNone", "/v1/queues/q00/jobsets/big/jobs?limit=100&state=running"},
		{"JobSets", "/v1/queues/q00/jobsets"},
		{"Cycles", "/v1/cycles"},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				get(b, c.path, nil)
			}
		})
	}
}
