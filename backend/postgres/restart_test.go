package postgres

import (
	"context"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/backend"
	"github.com/flotilla-sched/flotilla/backend/backendtest"
	"github.com/flotilla-sched/flotilla/events"
	"github.com/flotilla-sched/flotilla/scheduler"
	"github.com/flotilla-sched/flotilla/server"
)

// fixedClock is a server.Clock the test moves.
type fixedClock struct{ now time.Time }

func (c *fixedClock) Now() time.Time { return c.now }

// newServer opens the service over b; its job ids start with prefix.
func newServer(t *testing.T, b backend.Backend, clock server.Clock, prefix string) *server.Server {
	t.Helper()
	n := 0
	srv, err := server.New(context.Background(), server.Config{
		Scheduler: scheduler.DefaultConfig(backendtest.Schema()),
		Backend:   b,
		Clock:     clock,
		NewID:     func() string { n++; return fmt.Sprintf("%s-%04d", prefix, n) },
	})
	if err != nil {
		t.Fatalf("server.New: %v", err)
	}
	return srv
}

// liveRecords reads every live job of b by id.
func liveRecords(t *testing.T, b backend.Backend) map[string]backend.Record {
	t.Helper()
	out := map[string]backend.Record{}
	if err := b.LiveJobs(context.Background(), func(r backend.Record) error {
		out[r.Spec.Job.ID] = r
		return nil
	}); err != nil {
		t.Fatalf("LiveJobs: %v", err)
	}
	return out
}

func TestASecondOpenRebuildsTheServiceWithTheSameLiveJobs(t *testing.T) {
	ctx := context.Background()
	u := freshSchema(t)
	clock := &fixedClock{now: time.Date(2026, 11, 22, 10, 0, 0, 123456789, time.UTC)}
	first := open(t, u)
	srv := newServer(t, first, clock, "first")
	for _, q := range []flotilla.Queue{{Name: "A"}, {Name: "B", PriorityFactor: 2}} {
		if err := srv.CreateQueue(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	total := backendtest.Schema().MustParse(map[string]string{"cpu": "4", "memory": "16Gi"})
	nodes := []flotilla.Node{{Name: "n1", Cluster: "c1", Total: total}, {Name: "n2", Cluster: "c1", Total: total}}
	if _, err := srv.Report(ctx, &server.Report{Cluster: "c1", Nodes: nodes}); err != nil {
		t.Fatal(err)
	}
	ids, err := srv.SubmitJSON(ctx, []byte(`{"queue": "A", "jobSet": "s1", "jobs": [
		{"count": 10, "requests": {"cpu": "1", "memory": "1Gi"}, "runtime": "8s", "clientId": "c",
		 "nodeSelector": {"zone": "a"}, "tolerations": [{"key": "gpu", "operator": "Exists"}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	gang, err := srv.SubmitJSON(ctx, []byte(`{"queue": "B", "jobSet": "g", "jobs": [
		{"count": 2, "requests": {"cpu": "3"}, "gang": {"id": "g1", "cardinality": 2}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	ids = append(ids, gang...)
	clock.now = clock.now.Add(time.Second)
	if _, err := srv.Cycle(ctx); err != nil {
		t.Fatal(err)
	}
	before, err := srv.Status(ctx, ids...)
	if err != nil {
		t.Fatal(err)
	}
	running := ""
	for _, st := range before {
		if st.State == events.LeasedState && running == "" {
			running = st.Job
		}
	}
	if running == "" {
		t.Fatal("the first cycle leased nothing; the test needs some leases")
	}
	if _, err := srv.Report(ctx, &server.Report{Cluster: "c1", Jobs: []server.JobReport{
		{Job: running, Attempt: 1, Phase: server.PhaseRunning}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := srv.Cancel(ctx, ids[len(ids)-3]); err != nil {
		t.Fatal(err)
	}
	before, _ = srv.Status(ctx, ids...)
	liveBefore := liveRecords(t, first)
	logBefore, err := first.Events(ctx, "A", "s1", 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	first.Close()

	second := open(t, u)
	liveAfter := liveRecords(t, second)
	if !slices.Equal(slices.Sorted(maps.Keys(liveBefore)), slices.Sorted(maps.Keys(liveAfter))) {
		t.Fatalf("live jobs after reopening %v, want %v", slices.Sorted(maps.Keys(liveAfter)), slices.Sorted(maps.Keys(liveBefore)))
	}
	// The records read back are the jobs as submitted, in the states the
	// first service left them.
	for i, id := range ids[:10] {
		r, ok := liveAfter[id]
		if !ok {
			continue
		}
		j := r.Spec.Job
		if j.NodeSelector["zone"] != "a" || len(j.Tolerations) != 1 || j.Tolerations[0].Key != "gpu" ||
			r.Spec.Runtime != 8*time.Second || r.Spec.ClientID != fmt.Sprintf("c-%d", i) ||
			!j.Requests.Equal(flotilla.Resources{1000, 1 << 30}) {
			t.Errorf("job %s read back = %+v, %+v; want it as submitted", id, *j, r.Spec)
		}
	}
	for _, st := range before {
		if st.State.Terminal() {
			continue
		}
		a, ok := liveAfter[st.Job]
		if !ok {
			t.Errorf("live job %s is not read back", st.Job)
		} else if d := sameRecord(a, st.Record); d != "" {
			t.Errorf("job %s read back: %s", st.Job, d)
		}
	}
	srv = newServer(t, second, clock, "second")
	after, err := srv.Status(ctx, ids...)
	if err != nil {
		t.Fatal(err)
	}
	for i := range before {
		b, a := before[i], after[i]
		if b.State != a.State || b.Attempts != a.Attempts || b.Cluster != a.Cluster || b.Node != a.Node ||
			b.CancelRequested != a.CancelRequested {
			t.Errorf("status of %s after the restart = %+v, want %+v", ids[i], a, b)
		}
	}
	// Idempotency and the logs' numbering survive the restart.
	again, err := srv.SubmitJSON(ctx, []byte(`{"queue": "A", "jobSet": "s1", "jobs": [
		{"count": 11, "requests": {"cpu": "1", "memory": "1Gi"}, "runtime": "8s", "clientId": "c"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(again[:10], ids[:10]) {
		t.Errorf("resubmitting client ids c-0…c-9 after the restart gave %v, want %v", again[:10], ids[:10])
	}
	logAfter, err := second.Events(ctx, "A", "s1", 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(logAfter) != len(logBefore)+1 || logAfter[len(logAfter)-1].Seq != uint64(len(logBefore)+1) {
		t.Errorf("log after the restart has %d events (last seq %d), want %d", len(logAfter), logAfter[len(logAfter)-1].Seq, len(logBefore)+1)
	}
}

// sameRecord reports how two records differ, or "".
func sameRecord(a, b backend.Record) string {
	ja, jb := a.Spec.Job, b.Spec.Job
	sa, sb := a.Spec, b.Spec
	sa.Job, sb.Job = nil, nil
	pa, pb := sa.Pools, sb.Pools
	sa.Pools, sb.Pools = nil, nil
	switch {
	case !reflect.DeepEqual(sa, sb) || !slices.Equal(pa, pb):
		return fmt.Sprintf("spec %+v != %+v", sb, sa)
	case ja.ID != jb.ID || ja.Queue != jb.Queue || ja.JobSet != jb.JobSet || ja.PriorityClass != jb.PriorityClass ||
		ja.Priority != jb.Priority || !ja.SubmitTime.Equal(jb.SubmitTime) || !ja.Requests.Equal(jb.Requests) ||
		!maps.Equal(ja.NodeSelector, jb.NodeSelector) || !slices.Equal(ja.Tolerations, jb.Tolerations) ||
		ja.Gang != jb.Gang || !slices.Equal(ja.AvoidClusters, jb.AvoidClusters):
		return fmt.Sprintf("job %+v != %+v", *jb, *ja)
	case a.State.State != b.State.State || a.State.Attempts != b.State.Attempts || a.State.Cluster != b.State.Cluster ||
		a.State.Node != b.State.Node || a.State.CancelRequested != b.State.CancelRequested ||
		!a.State.Submitted.Equal(b.State.Submitted) || !a.State.Leased.Equal(b.State.Leased) ||
		!slices.Equal(a.State.FailedClusters, b.State.FailedClusters):
		return fmt.Sprintf("state %+v != %+v", b.State, a.State)
	}
	return ""
}
