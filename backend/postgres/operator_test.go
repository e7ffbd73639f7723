package postgres

import (
	"context"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/backend"
	"github.com/flotilla-sched/flotilla/backend/backendtest"
	"github.com/flotilla-sched/flotilla/events"
	"github.com/flotilla-sched/flotilla/server"
)

// operatorWorld is a service over PostgreSQL with queue A and cluster c1
// of one 1-cpu node: three 1-cpu jobs of priority 5 in A/s, the first
// running.
type operatorWorld struct {
	t     *testing.T
	ctx   context.Context
	url   string
	clock *fixedClock
	be    *Backend
	srv   *server.Server
	ids   []string
}

func newOperatorWorld(t *testing.T) *operatorWorld {
	w := &operatorWorld{t: t, ctx: context.Background(), url: freshSchema(t),
		clock: &fixedClock{now: time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)}}
	w.be = open(t, w.url)
	w.srv = newServer(t, w.be, w.clock, "j")
	w.must(w.srv.CreateQueue(w.ctx, flotilla.Queue{Name: "A"}))
	total := backendtest.Schema().MustParse(map[string]string{"cpu": "1", "memory": "4Gi"})
	_, err := w.srv.Report(w.ctx, &server.Report{Cluster: "c1", Nodes: []flotilla.Node{{Name: "n1", Cluster: "c1", Total: total}}})
	w.must(err)
	w.ids, err = w.srv.SubmitJSON(w.ctx, []byte(`{"queue": "A", "jobSet": "s", "jobs": [
		{"count": 3, "priority": 5, "requests": {"cpu": "1"}, "runtime": "8s"}]}`))
	w.must(err)
	w.leaseNext(w.ids[0])
	return w
}

func (w *operatorWorld) must(err error) {
	w.t.Helper()
	if err != nil {
		w.t.Fatal(err)
	}
}

// leaseNext runs a cycle, requires it to lease want, and reports it
// running.
func (w *operatorWorld) leaseNext(want string) {
	w.t.Helper()
	w.clock.now = w.clock.now.Add(time.Second)
	_, err := w.srv.Cycle(w.ctx)
	w.must(err)
	st, err := w.srv.Status(w.ctx, want)
	w.must(err)
	if st[0].State != events.LeasedState {
		w.t.Fatalf("job %s is %s, want it leased", want, st[0].State)
	}
	_, err = w.srv.Report(w.ctx, &server.Report{Cluster: "c1", Jobs: []server.JobReport{
		{Job: want, Attempt: st[0].Attempts, Phase: server.PhaseRunning}}})
	w.must(err)
}

// finish reports the running job id succeeded.
func (w *operatorWorld) finish(id string) {
	w.t.Helper()
	st, err := w.srv.Status(w.ctx, id)
	w.must(err)
	w.clock.now = w.clock.now.Add(time.Second)
	_, err = w.srv.Report(w.ctx, &server.Report{Cluster: "c1", Jobs: []server.JobReport{
		{Job: id, Attempt: st[0].Attempts, Phase: server.PhaseSucceeded}}})
	w.must(err)
}

// restart closes the backend and opens the service again on a new one.
func (w *operatorWorld) restart() {
	w.t.Helper()
	w.be.Close()
	w.be = open(w.t, w.url)
	w.srv = newServer(w.t, w.be, w.clock, "k")
	_, err := w.srv.Report(w.ctx, &server.Report{Cluster: "c1"})
	w.must(err)
}

// requireReplayIsStored replays the job set's stored log and requires
// every job's state to equal the one the backend stores, field by field.
func requireReplayIsStored(t *testing.T, b backend.Backend, queue, set string) *events.JobSet {
	t.Helper()
	ctx := context.Background()
	log, err := b.Events(ctx, queue, set, 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	js, err := events.Replay(queue, set, slices.Values(log))
	if err != nil {
		t.Fatalf("replay of %s/%s: %v", queue, set, err)
	}
	for j := range js.Jobs() {
		r, err := b.Job(ctx, j.ID)
		if err != nil {
			t.Fatal(err)
		}
		got, want := r.State, j
		for _, x := range []*events.Job{&got, &want} {
			x.Submitted, x.Leased, x.Finished = x.Submitted.UTC(), x.Leased.UTC(), x.Finished.UTC()
			if len(x.FailedClusters) == 0 {
				x.FailedClusters = nil
			}
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("job %s stored %+v, replayed %+v", j.ID, got, want)
		}
	}
	return js
}

// Reprioritized jobs after a restart on PostgreSQL: the replay of the
// stored log rebuilds every job's state exactly (the priority given
// included), and the restarted service leases by the new priority.
func TestReprioritizedJobsReplayExactlyAfterARestart(t *testing.T) {
	w := newOperatorWorld(t)
	res, err := w.srv.Reprioritize(w.ctx, server.Selection{IDs: w.ids}, 1, "ops")
	w.must(err)
	if !slices.Equal(res.Reprioritized, w.ids[1:]) || !slices.Equal(res.Live, w.ids[:1]) {
		t.Fatalf("reprioritize answered %+v", res)
	}
	_, err = w.srv.Reprioritize(w.ctx, server.Selection{IDs: w.ids[1:2]}, 7, "ops")
	w.must(err)
	w.restart()
	js := requireReplayIsStored(t, w.be, "A", "s")
	if j, _ := js.Job(w.ids[1]); !j.Reprioritized || j.Priority != 7 {
		t.Errorf("replayed %s: %+v, want priority 7", w.ids[1], j)
	}
	if j, _ := js.Job(w.ids[0]); j.Reprioritized {
		t.Errorf("the running job was reprioritized: %+v", j)
	}
	w.finish(w.ids[0])
	w.leaseNext(w.ids[2]) // priority 1 before ids[1]'s 7
}

// Cordons are stored: a service restarted on PostgreSQL still leases
// nothing of a cordoned queue and nothing to a cordoned cluster.
func TestCordonsHoldAcrossARestartOnPostgreSQL(t *testing.T) {
	w := newOperatorWorld(t)
	w.must(w.srv.Cordon(w.ctx, backend.Cordon{Kind: backend.CordonQueue, Name: "A"}, true))
	w.must(w.srv.Cordon(w.ctx, backend.Cordon{Kind: backend.CordonCluster, Name: "c1"}, true))
	w.restart()
	q, err := w.srv.Queue(w.ctx, "A")
	w.must(err)
	cs, err := w.srv.ListClusters(w.ctx)
	w.must(err)
	if !q.Cordoned || len(cs) != 1 || !cs[0].Cordoned {
		t.Fatalf("after the restart: queue %+v, clusters %+v; want both cordoned", q, cs)
	}
	w.finish(w.ids[0])
	w.must(w.srv.Cordon(w.ctx, backend.Cordon{Kind: backend.CordonQueue, Name: "A"}, false))
	w.clock.now = w.clock.now.Add(time.Second)
	rep, err := w.srv.Cycle(w.ctx)
	w.must(err)
	if rep.Leased != 0 {
		t.Fatalf("a cycle leased %d jobs to the cordoned cluster", rep.Leased)
	}
	w.must(w.srv.Cordon(w.ctx, backend.Cordon{Kind: backend.CordonCluster, Name: "c1"}, false))
	w.leaseNext(w.ids[1])
}
