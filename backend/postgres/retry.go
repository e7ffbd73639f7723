package postgres

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/flotilla-sched/flotilla/backend"
	"github.com/flotilla-sched/flotilla/events"
)

// PutRetryPolicy stores or removes a queue's retry policy
// (backend.RetryPolicies), as its JSON form.
func (b *Backend) PutRetryPolicy(ctx context.Context, queue string, p *events.RetryPolicy) error {
	return b.putRetryPolicy(ctx, queue, p, nil)
}

// putRetryPolicy is PutRetryPolicy, fenced by fence unless nil.
func (b *Backend) putRetryPolicy(ctx context.Context, queue string, p *events.RetryPolicy, fence *uint64) error {
	err := backend.CheckRetryPolicy(queue, p)
	if err == nil {
		err = textProblem("queue", queue)
	}
	if err != nil {
		return err
	}
	var doc []byte
	if p != nil {
		if doc, err = json.Marshal(p); err != nil {
			return err
		}
	}
	if err := b.ready(ctx); err != nil {
		return err
	}
	return b.write(ctx, "storing a retry policy", fence, false, 1, func(ctx context.Context, db querier) error {
		var err error
		if p != nil {
			_, err = db.Exec(ctx, `INSERT INTO retry_policies (queue, policy) VALUES ($1, $2)
				ON CONFLICT (queue) DO UPDATE SET policy = EXCLUDED.policy`, queue, doc)
		} else {
			_, err = db.Exec(ctx, `DELETE FROM retry_policies WHERE queue = $1`, queue)
		}
		return err
	})
}

// ListRetryPolicies returns every stored retry policy by queue name.
func (b *Backend) ListRetryPolicies(ctx context.Context) (map[string]*events.RetryPolicy, error) {
	if err := b.ready(ctx); err != nil {
		return nil, err
	}
	ctx, cancel := b.bound(ctx, 0)
	defer cancel()
	rows, _ := b.pool.Query(ctx, `SELECT queue, policy FROM retry_policies`)
	out := map[string]*events.RetryPolicy{}
	var queue string
	var doc []byte
	_, err := pgx.ForEachRow(rows, []any{&queue, &doc}, func() error {
		var p events.RetryPolicy
		if err := json.Unmarshal(doc, &p); err != nil {
			return fmt.Errorf("queue %q: stored retry policy: %w", queue, err)
		}
		out[queue] = &p
		return nil
	})
	if err != nil {
		return nil, b.fail(ctx, "reading retry policies", err)
	}
	return out, nil
}
