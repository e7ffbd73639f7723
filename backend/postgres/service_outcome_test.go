package postgres

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/backend"
	"github.com/flotilla-sched/flotilla/backend/backendtest"
	"github.com/flotilla-sched/flotilla/events"
	"github.com/flotilla-sched/flotilla/server"
)

// TestServiceWhoseCOMMITTheNetworkDeliversLateAgreesWithTheDatabase: the
// network holds one write's COMMIT on its way past the call timeout, the
// other connections passing, and delivers it once the service has
// answered. What the service answered holds: an executor's report that
// failed is applied when sent again, and a submit that failed and is
// retried runs; the service's state and the database's agree, and the
// next cycles lease and expire as usual.
func TestServiceWhoseCOMMITTheNetworkDeliversLateAgreesWithTheDatabase(t *testing.T) {
	ctx := context.Background()
	px, u := throughProxy(t, withParam(t, freshSchema(t), "call_timeout", "1s"))
	b := open(t, u)
	clock := &fixedClock{now: time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)}
	srv := newServer(t, b, clock, "job")
	if err := srv.CreateQueue(ctx, flotilla.Queue{Name: "A"}); err != nil {
		t.Fatal(err)
	}
	total := backendtest.Schema().MustParse(map[string]string{"cpu": "4", "memory": "16Gi"})
	nodes := []flotilla.Node{{Name: "n1", Cluster: "c1", Total: total}}
	report := func(jobs ...server.JobReport) (*server.ReportReply, error) {
		return srv.Report(ctx, &server.Report{Cluster: "c1", Nodes: nodes, Jobs: jobs})
	}
	if _, err := report(); err != nil {
		t.Fatal(err)
	}
	submit := func(clientID string) ([]string, error) {
		return srv.SubmitJSON(ctx, []byte(`{"queue": "A", "jobSet": "s", "jobs": [
			{"count": 2, "requests": {"cpu": "1", "memory": "1Gi"}, "clientId": "`+clientID+`"}]}`))
	}
	// late holds the COMMIT of the next write on its way, runs call (which
	// must fail, nothing applied), and then has the network deliver it.
	late := func(what string, call func() error) {
		t.Helper()
		var held string
		b.beforeCommit = func(conn *pgconn.PgConn) {
			held = conn.Conn().LocalAddr().String()
			px.hold(held, true, false)
			b.beforeCommit = nil
		}
		err := call()
		b.beforeCommit = nil
		if held == "" {
			t.Fatalf("%s: no COMMIT was held", what)
		}
		if !errors.Is(err, backend.ErrUnavailable) || errors.Is(err, backend.ErrOutcomeUnknown) {
			t.Errorf("%s with its COMMIT held: %v, want ErrUnavailable (settled: not applied)", what, err)
		}
		px.release(held)
		// The held transaction, were it alive, would commit now: wait for
		// it by locking the rows it locked (the job set's, the jobs').
		tx, err := b.pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback(ctx) //nolint:errcheck
		if _, err := tx.Exec(ctx, "SELECT FROM job_sets FOR UPDATE"); err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec(ctx, "SELECT FROM jobs FOR UPDATE"); err != nil {
			t.Fatal(err)
		}
		if err := tx.Rollback(ctx); err != nil {
			t.Fatal(err)
		}
	}

	ids, err := submit("first")
	if err != nil {
		t.Fatal(err)
	}
	clock.now = clock.now.Add(time.Second)
	if rep, err := srv.Cycle(ctx); err != nil || rep.Leased != 2 {
		t.Fatalf("Cycle: %+v, %v; want the 2 jobs leased", rep, err)
	}
	running := []server.JobReport{{Job: ids[0], Attempt: 1, Phase: server.PhaseRunning}, {Job: ids[1], Attempt: 1, Phase: server.PhaseRunning}}
	if _, err := report(running...); err != nil {
		t.Fatal(err)
	}
	succeeded := []server.JobReport{{Job: ids[0], Attempt: 1, Phase: server.PhaseSucceeded}, {Job: ids[1], Attempt: 1, Phase: server.PhaseRunning}}
	late("a report", func() error { _, err := report(succeeded...); return err })
	if r, err := b.Job(ctx, ids[0]); err != nil || r.State.State != events.RunningState {
		t.Errorf("the report's job once the held COMMIT was delivered: %+v, %v; want running as the service said", r.State, err)
	}
	if _, err := report(succeeded...); err != nil {
		t.Errorf("the report sent again: %v, want it applied", err)
	}
	if r, err := b.Job(ctx, ids[0]); err != nil || r.State.State != events.SucceededState {
		t.Errorf("the report's job once the report was sent again: %+v, %v; want succeeded", r.State, err)
	}

	late("a submit", func() error { _, err := submit("second"); return err })
	again, err := submit("second")
	if err != nil || len(again) != 2 {
		t.Fatalf("the submit retried: %v, %v", again, err)
	}
	clock.now = clock.now.Add(time.Second)
	rep, err := srv.Cycle(ctx)
	if err != nil || rep.Leased != 2 {
		t.Errorf("Cycle after the retried submit: %+v, %v; want its 2 jobs leased", rep, err)
	}
	// The executor goes silent: its leases expire, as the database's
	// states allow.
	clock.now = clock.now.Add(server.DefaultLeaseTimeout + time.Second)
	rep, err = srv.Cycle(ctx)
	if err != nil || rep.Expired != 3 {
		t.Errorf("Cycle once the executor went silent: %+v, %v; want its 3 leases expired", rep, err)
	}
	live := liveRecords(t, b)
	for _, id := range append([]string{ids[1]}, again...) {
		if r, ok := live[id]; !ok || r.State.State != events.Queued {
			t.Errorf("job %s after its lease expired: %+v, want queued", id, r.State)
		}
	}
}
