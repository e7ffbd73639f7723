package postgres

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/backend"
)

// storedC counts the jobs and events of ids starting with c, and the
// events of the log with the highest sequence number.
func storedC(t *testing.T, b *Backend) (jobs, evs, seqs, maxSeq int) {
	t.Helper()
	if err := b.pool.QueryRow(context.Background(), `SELECT (SELECT count(*) FROM jobs WHERE id LIKE 'c%'),
		(SELECT count(*) FROM events WHERE job LIKE 'c%'), (SELECT count(*) FROM events), (SELECT coalesce(max(seq), 0) FROM events)`).
		Scan(&jobs, &evs, &seqs, &maxSeq); err != nil {
		t.Fatal(err)
	}
	return jobs, evs, seqs, maxSeq
}

// TestACOMMITHeldPastTheCallTimeoutHasItsOutcomeSettledBeforeCommitReturns:
// the network holds one connection's traffic at COMMIT, one way, past the
// call timeout, while the other connections pass; then it delivers what
// it held. Commit does not answer ErrOutcomeUnknown: it learns the
// outcome first, ending the server's transaction if need be, so what it
// answers is what the database holds, before and after the held bytes
// arrive.
//   - COMMIT held on its way to the server: the transaction is ended
//     before it arrives, Commit is ErrUnavailable (nothing applied), and
//     the COMMIT delivered later applies nothing.
//   - The server's answer held: the write is applied, and Commit returns
//     its events.
func TestACOMMITHeldPastTheCallTimeoutHasItsOutcomeSettledBeforeCommitReturns(t *testing.T) {
	for _, c := range []struct {
		name      string
		toServer  bool
		toClient  bool
		wantJobs  int
		wantError error
	}{
		{"COMMIT held on its way", true, false, 0, backend.ErrUnavailable},
		{"the answer held", false, true, 3, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			px, u := throughProxy(t, withParam(t, freshSchema(t), "call_timeout", "1s"))
			b := open(t, u)
			if err := b.CreateQueue(ctx, flotilla.Queue{Name: "A"}); err != nil {
				t.Fatal(err)
			}
			if _, err := b.Commit(ctx, submitWrite("a")); err != nil {
				t.Fatal(err)
			}
			var held string
			b.beforeCommit = func(conn *pgconn.PgConn) {
				held = conn.Conn().LocalAddr().String()
				px.hold(held, c.toServer, c.toClient)
			}
			start := time.Now()
			out, err := b.Commit(ctx, submitWrite("c1", "c2", "c3"))
			d := time.Since(start)
			b.beforeCommit = nil
			t.Logf("Commit with its COMMIT held: %d events, error %v, after %s", len(out), err, d.Round(time.Millisecond))
			if errors.Is(err, backend.ErrOutcomeUnknown) || !errors.Is(err, c.wantError) || (err == nil) != (c.wantError == nil) {
				t.Errorf("Commit with its COMMIT held: error %v, want %v", err, c.wantError)
			}
			if err == nil && (len(out) != 3 || out[2].Seq != 4) {
				t.Errorf("Commit with its COMMIT held = %+v, want its 3 events numbered 2 to 4", out)
			}
			if d > silentCeiling {
				t.Errorf("Commit with its COMMIT held answered after %s, want within the call timeout and a settle", d)
			}
			jobs, evs, _, _ := storedC(t, b)
			if jobs != c.wantJobs || evs != c.wantJobs {
				t.Errorf("when Commit returned: %d jobs and %d events of the write stored, want %d", jobs, evs, c.wantJobs)
			}
			// The network delivers what it held; a Commit into the same
			// job set would wait for the first transaction, were it alive.
			px.release(held)
			next, err := b.Commit(ctx, submitWrite("d"))
			if err != nil {
				t.Fatalf("Commit after the held bytes were delivered: %v", err)
			}
			jobs, evs, seqs, maxSeq := storedC(t, b)
			if jobs != c.wantJobs || evs != c.wantJobs {
				t.Errorf("once the held bytes were delivered: %d jobs and %d events of the write stored, want %d as when Commit returned",
					jobs, evs, c.wantJobs)
			}
			if seqs != maxSeq || uint64(maxSeq) != next[0].Seq {
				t.Errorf("the log holds %d events numbered up to %d, the last Commit's is %d; want 1…n without a gap", seqs, maxSeq, next[0].Seq)
			}
		})
	}
}

// TestCallsAfterAnUnsettledCOMMITWaitUntilItsOutcomeIsFinal: the whole
// network goes silent at COMMIT, so Commit cannot learn the outcome
// (ErrOutcomeUnknown). Every later call is ErrUnavailable while the
// outcome cannot be learned (concurrent calls sharing one attempt); once
// the network heals (delivering the held COMMIT, or not in time), the
// next call learns it first, so what it reads no longer changes.
func TestCallsAfterAnUnsettledCOMMITWaitUntilItsOutcomeIsFinal(t *testing.T) {
	ctx := context.Background()
	px, u := throughProxy(t, withParam(t, freshSchema(t), "call_timeout", "1s"))
	b := open(t, u)
	if err := b.CreateQueue(ctx, flotilla.Queue{Name: "A"}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Commit(ctx, submitWrite("a")); err != nil {
		t.Fatal(err)
	}
	b.beforeCommit = func(*pgconn.PgConn) { px.silence() }
	if _, err := b.Commit(ctx, submitWrite("c1", "c2", "c3")); !errors.Is(err, backend.ErrOutcomeUnknown) {
		t.Fatalf("Commit cut off at COMMIT by a silent network: %v, want ErrOutcomeUnknown", err)
	}
	b.beforeCommit = nil
	// Concurrent calls share one settle: together they wait about one
	// call timeout (1 s), not one each (6 s).
	const callers = 6
	errs := make(chan error, callers)
	start := time.Now()
	for range callers {
		go func() { _, err := b.ListQueues(ctx); errs <- err }()
	}
	for range callers {
		if err := <-errs; !errors.Is(err, backend.ErrUnavailable) || !errors.Is(err, errNotSettled) {
			t.Errorf("ListQueues while the COMMIT's outcome cannot be learned: %v, want ErrUnavailable (not settled)", err)
		}
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("%d concurrent calls while the outcome cannot be learned took %s, want about one call timeout (1 s)", callers, d)
	}
	px.heal()
	var live []string
	if err := b.LiveJobs(ctx, func(r backend.Record) error { live = append(live, r.Spec.Job.ID); return nil }); err != nil {
		t.Fatalf("LiveJobs once healed: %v", err)
	}
	if n := len(live); n != 1 && n != 4 {
		t.Errorf("LiveJobs once healed: %v, want a, and c1…c3 all or none", live)
	}
	if _, err := b.Commit(ctx, submitWrite("d")); err != nil {
		t.Fatalf("Commit into the same job set once healed: %v", err)
	}
	jobs, _, _, _ := storedC(t, b)
	if jobs != len(live)-1 {
		t.Errorf("the cut-off write's jobs: %d stored once a later Commit into its job set went through, %d when LiveJobs read; want no change",
			jobs, len(live)-1)
	}
}

// TestARaiseEndsTheTransactionsOfAWedgedLeaderWithinTheCallTimeout: the
// old leader's Commit holds the fence row (share-locked) when its process
// stops (paused) or its connection goes silent both ways (partitioned),
// and its own call timeout is long. The successor's raise of the fence
// completes within its call timeout all the same: it ends the old
// transaction. The old leader's Commit then fails with nothing applied,
// and its later writes are refused.
func TestARaiseEndsTheTransactionsOfAWedgedLeaderWithinTheCallTimeout(t *testing.T) {
	for _, partitioned := range []bool{false, true} {
		name := map[bool]string{false: "paused", true: "partitioned"}[partitioned]
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			u := freshSchema(t)
			const callTimeout = 2 * time.Second
			px, oldURL := throughProxy(t, withParam(t, u, "call_timeout", "1h"))
			old, successor := open(t, oldURL), open(t, withParam(t, u, "call_timeout", callTimeout.String()))
			if err := old.CreateQueue(ctx, flotilla.Queue{Name: "A"}); err != nil {
				t.Fatal(err)
			}
			if _, err := old.Commit(ctx, &backend.Write{Fence: 5}); err != nil {
				t.Fatal(err)
			}
			atCommit, resume := make(chan string, 1), make(chan struct{})
			old.beforeCommit = func(conn *pgconn.PgConn) {
				addr := conn.Conn().LocalAddr().String()
				if partitioned {
					px.hold(addr, true, true)
					atCommit <- addr
					return
				}
				atCommit <- addr
				<-resume
			}
			w := oneJob("in-flight")
			w.Fence = 5
			committed := make(chan error, 1)
			go func() { _, err := old.Commit(ctx, w); committed <- err }()
			addr := <-atCommit

			start := time.Now()
			_, err := successor.Commit(ctx, &backend.Write{Fence: 6})
			d := time.Since(start)
			t.Logf("the successor raised the fence in %s: %v", d.Round(time.Millisecond), err)
			if err != nil {
				t.Errorf("the successor's raise while the old leader is %s in a transaction: %v, want it applied", name, err)
			}
			if d > callTimeout {
				t.Errorf("the successor's raise took %s, want within its call timeout %s", d, callTimeout)
			}
			if partitioned {
				px.release(addr)
			} else {
				close(resume)
			}
			if err := <-committed; !errors.Is(err, backend.ErrUnavailable) || errors.Is(err, backend.ErrOutcomeUnknown) {
				t.Errorf("the old leader's Commit once %s no more: %v, want ErrUnavailable (rolled back)", name, err)
			}
			old.beforeCommit = nil
			if _, err := successor.Job(ctx, "in-flight"); !errors.Is(err, backend.ErrNotFound) {
				t.Errorf("the old leader's write ended by the raise: Job = %v, want ErrNotFound", err)
			}
			late := oneJob("late")
			late.Fence = 5
			if _, err := old.Commit(ctx, late); !errors.Is(err, backend.ErrFenced) {
				t.Errorf("the old leader's Commit after the raise: %v, want ErrFenced", err)
			}
		})
	}
}
