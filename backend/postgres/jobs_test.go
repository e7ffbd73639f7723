package postgres

import (
	"context"
	"errors"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/backend"
	"github.com/flotilla-sched/flotilla/events"
)

// TestCommitWhoseConnectionDiesAtCOMMITLearnsItWasRolledBack: the
// writer's server process is terminated just before COMMIT; Commit learns
// the outcome (rolled back) instead of answering ErrOutcomeUnknown, and
// is ErrUnavailable with nothing applied.
func TestCommitWhoseConnectionDiesAtCOMMITLearnsItWasRolledBack(t *testing.T) {
	ctx := context.Background()
	u := freshSchema(t)
	b := open(t, u)
	if err := b.CreateQueue(ctx, flotilla.Queue{Name: "A"}); err != nil {
		t.Fatal(err)
	}
	killer, err := pgx.Connect(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	defer killer.Close(ctx)
	b.beforeCommit = func(c *pgconn.PgConn) {
		pid := c.PID()
		// Terminate the writer's server process, waiting (5 s at most)
		// until it is gone, before Commit sends COMMIT.
		var ok bool
		if err := killer.QueryRow(ctx, "SELECT pg_terminate_backend($1, 5000)", int32(pid)).Scan(&ok); err != nil || !ok {
			t.Errorf("pg_terminate_backend(%d) = %v, %v", pid, ok, err)
		}
	}
	w := oneJob("lost")
	_, err = b.Commit(ctx, w)
	if !errors.Is(err, backend.ErrUnavailable) || errors.Is(err, backend.ErrOutcomeUnknown) {
		t.Fatalf("Commit whose connection died: error %v, want ErrUnavailable (rolled back)", err)
	}
	// The server died before COMMIT, so nothing was applied, and the
	// backend works on.
	b.beforeCommit = nil
	if _, err := b.Job(ctx, "lost"); !errors.Is(err, backend.ErrNotFound) {
		t.Errorf("Job(lost) after the lost commit: %v, want ErrNotFound", err)
	}
	out, err := b.Commit(ctx, w)
	if err != nil || len(out) != 1 || out[0].Seq != 1 {
		t.Errorf("Commit again = %+v, %v; want the event with seq 1", out, err)
	}
}

// TestNewLeadersFenceWaitsForTheOldLeadersCommitInFlightThenRefusesIt:
// the fence check is atomic with the write. An old leader's Commit that
// has passed the check (its fence equal to the stored one) and not yet
// committed holds the fence row, so a new leader's raise waits for it:
// the old write lands before the raise (and so before the new leader's
// reload reads), never after; from the raise on the old fence is refused.
func TestNewLeadersFenceWaitsForTheOldLeadersCommitInFlightThenRefusesIt(t *testing.T) {
	ctx := context.Background()
	u := freshSchema(t)
	old, successor := open(t, u), open(t, u)
	if err := old.CreateQueue(ctx, flotilla.Queue{Name: "A"}); err != nil {
		t.Fatal(err)
	}
	if _, err := old.Commit(ctx, &backend.Write{Fence: 5}); err != nil {
		t.Fatal(err)
	}
	watcher, err := pgx.Connect(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	defer watcher.Close(ctx)
	raised := make(chan error, 1)
	old.beforeCommit = func(*pgconn.PgConn) {
		go func() { _, err := successor.Commit(ctx, &backend.Write{Fence: 6}); raised <- err }()
		for {
			select {
			case err := <-raised:
				raised <- err
				t.Errorf("the successor's fence write did not wait for the old leader's commit in flight")
				return
			default:
			}
			var waiting bool
			if err := watcher.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_stat_activity
				WHERE pid <> pg_backend_pid() AND wait_event_type = 'Lock' AND query LIKE '%fence%')`).Scan(&waiting); err != nil {
				t.Errorf("watching locks: %v", err)
				return
			}
			if waiting {
				return
			}
		}
	}
	w := oneJob("in-flight")
	w.Fence = 5
	if _, err := old.Commit(ctx, w); err != nil {
		t.Fatalf("the old leader's Commit in flight: %v, want it applied", err)
	}
	old.beforeCommit = nil
	if err := <-raised; err != nil {
		t.Fatalf("the successor's fence write: %v", err)
	}
	if _, err := successor.Job(ctx, "in-flight"); err != nil {
		t.Errorf("the successor reads the old leader's write after its fence: %v", err)
	}
	late := oneJob("late")
	late.Fence = 5
	if _, err := old.Commit(ctx, late); !errors.Is(err, backend.ErrFenced) {
		t.Errorf("the old leader's Commit after the raise: %v, want ErrFenced", err)
	}
}

// oneJob is a write of one new job in A/s with its submitted event.
func oneJob(id string) *backend.Write {
	t0 := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	return &backend.Write{
		Jobs:   []backend.JobSpec{{Job: &flotilla.Job{ID: id, Queue: "A", JobSet: "s", SubmitTime: t0, Requests: flotilla.Resources{1000, 0}}}},
		Events: []events.Event{{Queue: "A", JobSet: "s", Job: id, Type: events.Submitted, Time: t0}},
	}
}

func TestFencesAboveMaxInt64KeepTheirOrder(t *testing.T) {
	ctx := context.Background()
	b := open(t, freshSchema(t))
	if err := b.CreateQueue(ctx, flotilla.Queue{Name: "A"}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		fence uint64
		ok    bool
	}{
		{0, true},
		{math.MaxInt64, true},
		{math.MaxInt64 - 1, false},
		{1 << 63, true},
		{math.MaxInt64, false},
		{math.MaxUint64 - 1, true},
		{1<<63 + 5, false},
		{math.MaxUint64, true},
		{math.MaxUint64, true},
		{0, false},
	} {
		_, err := b.Commit(ctx, &backend.Write{Fence: c.fence})
		if c.ok && err != nil {
			t.Errorf("Commit with fence %d: %v, want it applied", c.fence, err)
		}
		if !c.ok && !errors.Is(err, backend.ErrFenced) {
			t.Errorf("Commit with fence %d: %v, want ErrFenced", c.fence, err)
		}
	}
}

func TestTextPostgreSQLCannotHoldIsAFieldErrorAndNothingIsStored(t *testing.T) {
	ctx := context.Background()
	b := open(t, freshSchema(t))
	if err := b.CreateQueue(ctx, flotilla.Queue{Name: "A"}); err != nil {
		t.Fatal(err)
	}
	w := oneJob("nul\x00id")
	w.Jobs[0].ClientID = "bad\xff"
	_, err := b.Commit(ctx, w)
	var fe *flotilla.FieldError
	if !errors.As(err, &fe) || !errors.Is(err, flotilla.ErrMalformed) {
		t.Fatalf("Commit of a job id with a NUL byte: %v, want a FieldError of ErrMalformed", err)
	}
	for _, field := range []string{"jobs[0].job.id", "jobs[0].clientId", "events[0].job"} {
		if !hasField(err, field) {
			t.Errorf("error %v names no %s", err, field)
		}
	}
	if es, err := b.Events(ctx, "A", "s", 1, 0); err != nil || len(es) != 0 {
		t.Errorf("Events after the refused write = %v, %v; want none", es, err)
	}
	if err := b.CreateQueue(ctx, flotilla.Queue{Name: "q\x00"}); !errors.Is(err, flotilla.ErrMalformed) {
		t.Errorf("CreateQueue with a NUL byte: %v, want ErrMalformed", err)
	}
}

// hasField reports whether err holds a FieldError naming field.
func hasField(err error, field string) bool {
	if fe, ok := err.(*flotilla.FieldError); ok {
		return fe.Field == field
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range j.Unwrap() {
			if hasField(e, field) {
				return true
			}
		}
	}
	return false
}

func TestRequestsAreStoredByResourceNameSoTheSchemaCanGrow(t *testing.T) {
	ctx := context.Background()
	u := freshSchema(t)
	b := open(t, u)
	if err := b.CreateQueue(ctx, flotilla.Queue{Name: "A"}); err != nil {
		t.Fatal(err)
	}
	w := oneJob("j")
	w.Jobs[0].Job.Requests = flotilla.Resources{1500, 1 << 30}
	if _, err := b.Commit(ctx, w); err != nil {
		t.Fatal(err)
	}
	b.Close()
	grown, err := Open(ctx, u, flotilla.MustResourceSchema("nvidia.com/gpu", "memory", "cpu"))
	if err != nil {
		t.Fatal(err)
	}
	defer grown.Close()
	r, err := grown.Job(ctx, "j")
	if err != nil {
		t.Fatal(err)
	}
	if want := (flotilla.Resources{0, 1 << 30, 1500}); !r.Spec.Job.Requests.Equal(want) {
		t.Errorf("requests read with a grown schema = %v, want %v", r.Spec.Job.Requests, want)
	}
	shrunk, err := Open(ctx, u, flotilla.MustResourceSchema("memory"))
	if err != nil {
		t.Fatal(err)
	}
	defer shrunk.Close()
	if _, err := shrunk.Job(ctx, "j"); !errors.Is(err, flotilla.ErrUnknownResource) {
		t.Errorf("Job read with a schema without cpu: %v, want ErrUnknownResource", err)
	}
}

func TestDeleteQueueWaitsForACommitToItAndThenIsErrNotEmpty(t *testing.T) {
	ctx := context.Background()
	u := freshSchema(t)
	b := open(t, u)
	if err := b.CreateQueue(ctx, flotilla.Queue{Name: "A"}); err != nil {
		t.Fatal(err)
	}
	watcher, err := pgx.Connect(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	defer watcher.Close(ctx)
	deleted := make(chan error, 1)
	b.beforeCommit = func(*pgconn.PgConn) {
		// The Commit has checked and written everything; DeleteQueue now
		// runs while it is uncommitted, and must wait for it.
		go func() { deleted <- b.DeleteQueue(ctx, "A") }()
		for {
			select {
			case err := <-deleted:
				deleted <- err // DeleteQueue did not wait
				return
			default:
			}
			var waiting bool
			if err := watcher.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_stat_activity
				WHERE pid <> pg_backend_pid() AND wait_event_type = 'Lock' AND query LIKE '%FROM queues WHERE name = $1 FOR UPDATE%')`).Scan(&waiting); err != nil {
				t.Errorf("watching locks: %v", err)
				return
			}
			if waiting {
				return
			}
		}
	}
	if _, err := b.Commit(ctx, oneJob("j")); err != nil {
		t.Fatalf("Commit: %v", err)
	}
	if err := <-deleted; !errors.Is(err, backend.ErrNotEmpty) {
		t.Errorf("DeleteQueue during a Commit of a job to the queue: %v, want ErrNotEmpty once the job is stored", err)
	}
	if _, err := b.Queue(ctx, "A"); err != nil {
		t.Errorf("Queue(A) after the refused delete: %v", err)
	}
}

func TestConcurrentCommitsRaisingFencesAreAppliedOrErrFencedNeverDeadlocked(t *testing.T) {
	ctx := context.Background()
	b := open(t, freshSchema(t))
	const writers, writes = 4, 25
	var wg sync.WaitGroup
	errs := make(chan error, writers*writes)
	for k := range writers {
		wg.Go(func() {
			for i := range writes {
				// Writers interleave their fences: 1, 2, 3, ... with k.
				_, err := b.Commit(ctx, &backend.Write{Fence: uint64(i*writers + k + 1)})
				if err != nil && !errors.Is(err, backend.ErrFenced) {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("Commit: %v, want it applied or ErrFenced", err)
	}
	if _, err := b.Commit(ctx, &backend.Write{Fence: writers * writes}); err != nil {
		t.Errorf("Commit with the highest fence given: %v, want it applied", err)
	}
	if _, err := b.Commit(ctx, &backend.Write{Fence: writers*writes - 1}); !errors.Is(err, backend.ErrFenced) {
		t.Errorf("Commit below the highest fence: %v, want ErrFenced", err)
	}
}
