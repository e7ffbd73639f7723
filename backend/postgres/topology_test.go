package postgres

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/backend/backendtest"
	"github.com/flotilla-sched/flotilla/scheduler"
	"github.com/flotilla-sched/flotilla/server"
)

// A gang's topology request is stored with its jobs and read back whole
// by a second open.
func TestGangTopologySurvivesAReopen(t *testing.T) {
	ctx := context.Background()
	u := freshSchema(t)
	clock := &fixedClock{now: time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)}
	first := open(t, u)
	cfg := scheduler.DefaultConfig(backendtest.Schema())
	cfg.Topologies = []flotilla.Topology{{Name: "default", Levels: []string{"block", "rack"}}}
	n := 0
	srv, err := server.New(ctx, server.Config{Scheduler: cfg, Backend: first, Clock: clock,
		NewID: func() string { n++; return fmt.Sprintf("t-%04d", n) }})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.CreateQueue(ctx, flotilla.Queue{Name: "A"}); err != nil {
		t.Fatal(err)
	}
	if _, err := srv.SubmitJSON(ctx, []byte(`{"queue": "A", "jobSet": "s", "jobs": [
		{"count": 2, "requests": {"cpu": "1"}, "gang": {"id": "g", "cardinality": 2,
		 "topology": {"name": "default", "required": "block", "preferred": "rack"}}}]}`)); err != nil {
		t.Fatal(err)
	}
	want := flotilla.GangTopology{Name: "default", Required: "block", Preferred: "rack"}
	recs := liveRecords(t, open(t, u))
	if len(recs) != 2 {
		t.Fatalf("%d live jobs, want 2", len(recs))
	}
	for id, r := range recs {
		if got := r.Spec.Job.Gang.Topology; got != want {
			t.Errorf("job %s: topology %+v, want %+v", id, got, want)
		}
	}
}
