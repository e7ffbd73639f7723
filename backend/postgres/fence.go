package postgres

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/backend"
	"github.com/flotilla-sched/flotilla/events"
)

var _ backend.Fenced = (*Backend)(nil)

// WithFence returns a view of b whose queue, group, executor and usage
// writes are fenced by token (backend.Fenced). Each of them is one transaction that
// first checks token against the fence row as Commit does (checkFence:
// refused with backend.ErrFenced below the highest applied fence, the row
// raised to token when token is above it, else share-locked), then
// writes; a refused write rolls back, raising nothing. The view shares b's
// pool: its reads, Commit, lookups and lease are b's, and closing it
// closes b.
func (b *Backend) WithFence(token uint64) backend.Backend {
	return fencedView{Backend: b, token: token}
}

// fencedView is WithFence's view. Embedding *Backend keeps every method of
// b, the optional interfaces too; the ten unfenced writes are replaced.
type fencedView struct {
	*Backend
	token uint64
}

func (v fencedView) CreateQueue(ctx context.Context, q flotilla.Queue) error {
	return v.createQueue(ctx, q, &v.token)
}

func (v fencedView) UpdateQueue(ctx context.Context, q flotilla.Queue) error {
	return v.updateQueue(ctx, q, &v.token)
}

func (v fencedView) DeleteQueue(ctx context.Context, name string) error {
	return v.deleteQueue(ctx, name, &v.token)
}

func (v fencedView) CreateGroup(ctx context.Context, g flotilla.QueueGroup) error {
	return v.createGroup(ctx, g, &v.token)
}

func (v fencedView) UpdateGroup(ctx context.Context, g flotilla.QueueGroup) error {
	return v.updateGroup(ctx, g, &v.token)
}

func (v fencedView) DeleteGroup(ctx context.Context, name string) error {
	return v.deleteGroup(ctx, name, &v.token)
}

func (v fencedView) PutExecutor(ctx context.Context, e backend.Executor) error {
	return v.putExecutor(ctx, e, &v.token)
}

func (v fencedView) PutUsage(ctx context.Context, rs []backend.UsageRecord) error {
	return v.putUsage(ctx, rs, &v.token)
}

func (v fencedView) PutCordon(ctx context.Context, c backend.Cordon, on bool) error {
	return v.putCordon(ctx, c, on, &v.token)
}

func (v fencedView) PutRetryPolicy(ctx context.Context, queue string, p *events.RetryPolicy) error {
	return v.putRetryPolicy(ctx, queue, p, &v.token)
}

// querier is where a write sends its statements: the pool or a
// transaction.
type querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// write runs fn, a queue, group, executor or usage write over rows rows (see
// bound), with the call's bounded context: on the pool when it is
// unfenced (fence nil) and needs no transaction (inTx false), else in one
// transaction, after checkFence when fenced, committed by commitTx (a
// COMMIT whose answer is lost is settled). An error of fn holding a
// *flotilla.FieldError is a refusal (ErrExists, ErrNotFound, ErrNotEmpty),
// returned as is and rolling the transaction back; any other is the
// database's, classified by fail as what failed.
func (b *Backend) write(ctx context.Context, what string, fence *uint64, inTx bool, rows int,
	fn func(ctx context.Context, db querier) error) error {
	ctx, cancel := b.bound(ctx, rows)
	defer cancel()
	classify := func(err error) error {
		var fe *flotilla.FieldError
		if err == nil || errors.As(err, &fe) {
			return err
		}
		return b.fail(ctx, what, err)
	}
	if fence == nil && !inTx {
		return classify(fn(ctx, b.pool))
	}
	tx, err := b.pool.Begin(ctx)
	if err != nil {
		return b.fail(ctx, what, err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // a no-op after Commit; see Commit
	var xid int64
	if fence != nil {
		if xid, err = b.checkFence(ctx, tx, *fence); err != nil {
			return err // classified already
		}
	} else if err := tx.QueryRow(ctx, "SELECT pg_current_xact_id()::text::bigint").Scan(&xid); err != nil {
		return classify(err)
	}
	if err := fn(ctx, tx); err != nil {
		return classify(err)
	}
	return b.commitTx(ctx, tx, what, xid)
}
