package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/flotilla-sched/flotilla/backend"
)

// PutCordon cordons or uncordons a queue or a cluster (backend.Cordons).
func (b *Backend) PutCordon(ctx context.Context, c backend.Cordon, on bool) error {
	return b.putCordon(ctx, c, on, nil)
}

// putCordon is PutCordon, fenced by fence unless nil.
func (b *Backend) putCordon(ctx context.Context, c backend.Cordon, on bool, fence *uint64) error {
	err := c.Check()
	if err == nil {
		err = textProblem("cordon.name", c.Name)
	}
	if err != nil {
		return err
	}
	if err := b.ready(ctx); err != nil {
		return err
	}
	return b.write(ctx, "storing a cordon", fence, false, 1, func(ctx context.Context, db querier) error {
		var err error
		if on {
			_, err = db.Exec(ctx, `INSERT INTO cordons (kind, name) VALUES ($1, $2) ON CONFLICT DO NOTHING`, string(c.Kind), c.Name)
		} else {
			_, err = db.Exec(ctx, `DELETE FROM cordons WHERE kind = $1 AND name = $2`, string(c.Kind), c.Name)
		}
		return err
	})
}

// ListCordons returns every cordon, sorted by kind, then name.
func (b *Backend) ListCordons(ctx context.Context) ([]backend.Cordon, error) {
	if err := b.ready(ctx); err != nil {
		return nil, err
	}
	ctx, cancel := b.bound(ctx, 0)
	defer cancel()
	rows, _ := b.pool.Query(ctx, `SELECT kind, name FROM cordons ORDER BY kind COLLATE "C", name COLLATE "C"`)
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (backend.Cordon, error) {
		var c backend.Cordon
		err := row.Scan((*string)(&c.Kind), &c.Name)
		return c, err
	})
	if err != nil {
		return nil, b.fail(ctx, "reading cordons", err)
	}
	return out, nil
}
