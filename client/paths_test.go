package client_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/flotilla-sched/flotilla/client"
)

// TestClientSendsEachNameAsOnePathSegmentEscapedOnce: a queue, job set,
// cluster or group name holding "/", "%", a space, "?" or "#" reaches the
// server's route as that name, escaped once (escaped twice, the server
// reads "a%2Fb" for "a/b" and misses the job set). The server here is the
// service's own routing (http.ServeMux patterns) and answers with the
// names it read. A base with a path prefix keeps it. ("." and ".." are
// refused at creation: no path reaches them.)
func TestClientSendsEachNameAsOnePathSegmentEscapedOnce(t *testing.T) {
	got := map[string]string{}
	mux := http.NewServeMux()
	// echo notes the names the route read and answers {} (or, for a job
	// set's events, no event: an empty body).
	echo := func(names ...string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			for _, n := range names {
				got[n] = r.PathValue(n)
			}
			if strings.HasSuffix(r.Pattern, "/events") {
				return
			}
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(map[string]any{})
		}
	}
	mux.Handle("GET /p/v1/queues/{queue}/jobsets/{jobSet}/events", echo("queue", "jobSet"))
	mux.Handle("GET /p/v1/queues/{queue}/jobsets/{jobSet}/jobs", echo("queue", "jobSet"))
	mux.Handle("GET /p/v1/queues/{queue}/jobsets", echo("queue"))
	mux.Handle("GET /p/v1/queues/{queue}", echo("queue"))
	mux.Handle("GET /p/v1/groups/{group}", echo("group"))
	mux.Handle("GET /p/v1/clusters/{cluster}/nodes", echo("cluster"))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	c, err := client.New(srv.URL+"/p", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, name := range []string{"plain", "a/b", "100%", "50%2F", "a b", "q?x=1", "h#1", "é/ü", "a+b", "a.b"} {
		calls := []struct {
			what string
			call func() error
			want map[string]string
		}{
			{"Events", func() error { _, err := c.Events(ctx, name, name+"-s", 1, 0); return err }, map[string]string{"queue": name, "jobSet": name + "-s"}},
			{"Jobs", func() error { _, err := c.Jobs(ctx, name, name+"-s", client.JobsQuery{}); return err }, map[string]string{"queue": name, "jobSet": name + "-s"}},
			{"JobSets", func() error { _, err := c.JobSets(ctx, name, "", 0); return err }, map[string]string{"queue": name}},
			{"Queue", func() error { _, err := c.Queue(ctx, name); return err }, map[string]string{"queue": name}},
			{"Group", func() error { _, err := c.Group(ctx, name); return err }, map[string]string{"group": name}},
			{"Nodes", func() error { _, err := c.Nodes(ctx, name, "", 0); return err }, map[string]string{"cluster": name}},
		}
		for _, tc := range calls {
			clear(got)
			if err := tc.call(); err != nil {
				t.Errorf("%s of %q: %v", tc.what, name, err)
				continue
			}
			for k, v := range tc.want {
				if got[k] != v {
					t.Errorf("%s of %q: the server read %s %q, want %q", tc.what, name, k, got[k], v)
				}
			}
		}
	}
}
