package postgres

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/flotilla-sched/flotilla/backend"
)

// sentCommit is a transaction whose COMMIT was sent (or may have been)
// and not answered: the server process that ran it and its transaction
// id (pg_current_xact_id, 64 bits with the epoch).
type sentCommit struct {
	pid uint32
	xid int64
}

// unsettled holds the transactions whose COMMIT outcome a call could not
// learn (the database did not answer): until each is settled (settle),
// every call of the backend settles them first and fails while it cannot,
// so that no read sees the database before an outcome is final.
type unsettled struct {
	mu      sync.Mutex
	pending []sentCommit
	// busy is closed when the settle in progress ends (nil: none runs);
	// failed is the error of the last settle that failed.
	busy   chan struct{}
	failed error
}

// errNotSettled is the cause of a call refused while an earlier COMMIT's
// outcome is not known.
var errNotSettled = errors.New("an earlier COMMIT's outcome is not settled yet")

// settlePending settles the transactions left unsettled by earlier calls,
// in order; while one cannot be settled, it returns an error wrapping
// backend.ErrUnavailable. One call settles at a time: a call that finds
// a settle running waits for it (or for its own context) and takes its
// result, so concurrent calls wait one call timeout, not one each.
func (b *Backend) settlePending(ctx context.Context) error {
	u := &b.unsettled
	for {
		u.mu.Lock()
		if len(u.pending) == 0 {
			u.mu.Unlock()
			return nil
		}
		if busy := u.busy; busy != nil {
			u.mu.Unlock()
			select {
			case <-busy:
			case <-ctx.Done():
				return ctx.Err()
			}
			u.mu.Lock()
			failed := len(u.pending) > 0 && u.busy == nil && u.failed != nil
			err := u.failed
			u.mu.Unlock()
			if failed {
				return fmt.Errorf("postgres: %w: %w: %w", backend.ErrUnavailable, errNotSettled, err)
			}
			continue
		}
		c, busy := u.pending[0], make(chan struct{})
		u.busy = busy
		u.mu.Unlock()
		_, err := b.settle(ctx, c)
		if errors.Is(err, errForgotten) {
			err = nil // final: what the database holds no longer changes
		}
		u.mu.Lock()
		u.busy, u.failed = nil, err
		if err == nil {
			u.pending = u.pending[1:]
			b.pendingCount.Add(-1)
		}
		u.mu.Unlock()
		close(busy)
		if err != nil {
			return fmt.Errorf("postgres: %w: %w: %w", backend.ErrUnavailable, errNotSettled, err)
		}
	}
}

// leaveUnsettled records c for the next calls to settle first.
func (b *Backend) leaveUnsettled(c sentCommit) {
	b.unsettled.mu.Lock()
	defer b.unsettled.mu.Unlock()
	b.unsettled.pending = append(b.unsettled.pending, c)
	b.pendingCount.Add(1)
}

// errForgotten: the server no longer knows a transaction's outcome; it
// ended long ago, so its outcome is final, but which is not known.
var errForgotten = errors.New("the server no longer knows the transaction's outcome")

// settleWait is how long one pg_terminate_backend waits for the process
// to exit before settle asks again.
const settleWait = time.Second

// settle makes the outcome of c's transaction final and returns it (true:
// committed), within a call timeout of its own (the caller's context may
// have ended: the client went away). It asks the server for the
// transaction's status (pg_xact_status); while it is in progress (the
// COMMIT may be on its way, held in a partitioned network), it terminates
// the server process that runs it (pg_terminate_backend, only while that
// process still runs c's transaction, so that a process id reused is
// never hit) and waits for it to exit: a process ends its transaction
// before it exits, committed when the COMMIT reached it first, else
// rolled back, and a COMMIT that arrives later finds no process to apply
// it. An error (the database does not answer) leaves the outcome unknown.
func (b *Backend) settle(ctx context.Context, c sentCommit) (committed bool, err error) {
	ctx, cancel := b.bound(context.WithoutCancel(ctx), 0)
	defer cancel()
	xid := strconv.FormatInt(c.xid, 10)
	xid32 := strconv.FormatUint(uint64(c.xid)&0xffff_ffff, 10)
	for {
		var status *string
		if err := b.pool.QueryRow(ctx, "SELECT pg_xact_status($1::text::xid8)", xid).Scan(&status); err != nil {
			return false, b.fail(ctx, "settling a COMMIT", err)
		}
		switch {
		case status == nil:
			// Older than the oldest transaction the server remembers
			// (not reached: a settle follows its COMMIT within seconds):
			// ended long ago, final, but which way is not known.
			return false, fmt.Errorf("postgres: settling a COMMIT: %w (transaction %s)", errForgotten, xid)
		case *status == "committed":
			return true, nil
		case *status == "aborted":
			return false, nil
		}
		wait := min(settleWait, time.Until(deadline(ctx))/2).Milliseconds()
		var ended int
		err := b.pool.QueryRow(ctx, `SELECT count(*) FROM (SELECT pg_terminate_backend(pid, greatest($3::bigint, 1))
			FROM pg_stat_activity WHERE pid = $1 AND backend_xid::text = $2) AS t`, int32(c.pid), xid32, wait).Scan(&ended)
		if err != nil {
			return false, b.fail(ctx, "ending the transaction of a COMMIT unanswered", err)
		}
		if ended == 0 {
			// The process was ending already: ask again shortly.
			select {
			case <-time.After(10 * time.Millisecond):
			case <-ctx.Done():
				return false, b.fail(ctx, "settling a COMMIT", ctx.Err())
			}
		}
	}
}

// deadline is ctx's deadline (every context settle runs under has one).
func deadline(ctx context.Context) time.Time {
	d, _ := ctx.Deadline()
	return d
}

// commitTx commits tx, a transaction of what (for errors) whose id is
// xid, under ctx (the call's bound). When the COMMIT fails in a way that
// leaves its outcome unknown (outcomeUnknown), the outcome is settled
// (settle): nil when the transaction committed, an error wrapping
// backend.ErrUnavailable when it was rolled back; when it cannot be
// settled (the database does not answer), the error wraps
// backend.ErrOutcomeUnknown and the next calls settle it first.
func (b *Backend) commitTx(ctx context.Context, tx pgx.Tx, what string, xid int64) error {
	c := sentCommit{pid: tx.Conn().PgConn().PID(), xid: xid}
	if b.beforeCommit != nil {
		b.beforeCommit(tx.Conn().PgConn())
	}
	err := tx.Commit(ctx)
	if err == nil {
		return nil
	}
	if !outcomeUnknown(err) {
		return b.fail(ctx, what, err)
	}
	committed, serr := b.settle(ctx, c)
	switch {
	case serr != nil:
		if !errors.Is(serr, errForgotten) {
			b.leaveUnsettled(c)
		}
		return fmt.Errorf("postgres: %s: %w (%v; learning the outcome: %v)", what, backend.ErrOutcomeUnknown, err, serr)
	case committed:
		return nil
	default:
		return fmt.Errorf("postgres: %s: %w: the connection was lost at COMMIT and the transaction rolled back (%v)",
			what, backend.ErrUnavailable, err)
	}
}

// raiseGrace is the part of the call timeout a fence raise waits for the
// transactions that hold the fence row before it ends them.
const raiseGrace = 4

// raise runs stmt, the UPDATE that raises the fence row in tx. Every
// fenced transaction share-locks that row first, so the raise waits for
// the writes in flight of the previous terms; one whose client stopped
// mid-transaction (a process paused or wedged, a network partitioned)
// would hold it as long as its connection lives. So after a quarter of
// the call timeout, the server processes the raise still waits for
// (pg_blocking_pids) are terminated, from another connection, until the
// raise has its lock: they are the previous terms' (a term raises its
// fence once, before its writes) and the server rolls them back. A raise
// waits at most a quarter of the call timeout and the time their server
// processes take to exit.
func (b *Backend) raise(ctx context.Context, tx pgx.Tx, stmt string, args ...any) (int64, error) {
	pid := tx.Conn().PgConn().PID()
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() { b.endBlockers(ctx, pid, done) })
	tag, err := tx.Exec(ctx, stmt, args...)
	close(done)
	wg.Wait()
	return tag.RowsAffected(), err
}

// endBlockers terminates the server processes that hold up process pid,
// from raiseGrace of the call timeout on, until done is closed or ctx
// ends.
func (b *Backend) endBlockers(ctx context.Context, pid uint32, done <-chan struct{}) {
	t := time.NewTimer(b.timeout / raiseGrace)
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case <-ctx.Done():
			return
		case <-t.C:
		}
		// Each terminated process is waited for (at most settleWait), so
		// the next round sees the next holder, if any.
		wait := min(settleWait, time.Until(deadline(ctx))/2).Milliseconds()
		_, _ = b.pool.Exec(ctx, `SELECT pg_terminate_backend(p, greatest($2::bigint, 1))
			FROM unnest(pg_blocking_pids($1)) AS p`, int32(pid), wait)
		t.Reset(10 * time.Millisecond)
	}
}
