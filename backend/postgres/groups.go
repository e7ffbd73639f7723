package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/backend"
)

// encodeQuota is a quota vector as stored: a JSON object of the given
// resources' amounts, nil (SQL NULL) when none is given.
func encodeQuota(schema *flotilla.ResourceSchema, r flotilla.Resources) []byte {
	if backend.CloneQuota(r) == nil {
		return nil
	}
	buf := []byte{'{'}
	for i, v := range r {
		if v == flotilla.Absent {
			continue
		}
		if len(buf) > 1 {
			buf = append(buf, ',')
		}
		buf = strconv.AppendQuote(buf, schema.Name(i))
		buf = append(buf, ':')
		buf = strconv.AppendInt(buf, v, 10)
	}
	return append(buf, '}')
}

// decodeQuota reads a stored quota vector (nil for NULL): the resources
// it leaves out are flotilla.Absent. A resource the schema lacks is an
// error unless its amount is 0.
func decodeQuota(schema *flotilla.ResourceSchema, raw []byte, field string) (flotilla.Resources, error) {
	if raw == nil {
		return nil, nil
	}
	var m map[string]int64
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("%s: stored quota %s: %w", field, raw, err)
	}
	r := make(flotilla.Resources, schema.Len())
	for i := range r {
		r[i] = flotilla.Absent
	}
	for name, v := range m {
		i, ok := schema.Index(name)
		if !ok {
			if v != 0 {
				return nil, flotilla.Errorf(field, name, flotilla.ErrUnknownResource, "stored with amount %d; the backend's schema is %v", v, schema.Names())
			}
			continue
		}
		r[i] = v
	}
	return backend.CloneQuota(r), nil
}

// decodeQuotas reads the three stored quota vectors of the node at path p.
func decodeQuotas(schema *flotilla.ResourceSchema, p string, g, l, ll []byte) (gr, lr, llr flotilla.Resources, err error) {
	var errs [3]error
	gr, errs[0] = decodeQuota(schema, g, p+".guaranteed")
	lr, errs[1] = decodeQuota(schema, l, p+".limit")
	llr, errs[2] = decodeQuota(schema, ll, p+".lendingLimit")
	return gr, lr, llr, errors.Join(errs[:]...)
}

// groupColumns are a group row's columns, in scanGroup's order.
const groupColumns = "name, parent, priority_factor, guaranteed, quota_limit, lending_limit"

// CreateGroup stores a new group: backend.ErrExists when a group of that
// name exists.
func (b *Backend) CreateGroup(ctx context.Context, g flotilla.QueueGroup) error {
	return b.createGroup(ctx, g, nil)
}

// createGroup is CreateGroup fenced by fence (nil: unfenced).
func (b *Backend) createGroup(ctx context.Context, g flotilla.QueueGroup, fence *uint64) error {
	return b.putGroup(ctx, g, fence, "creating group", `INSERT INTO queue_groups (`+groupColumns+`)
			VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (name) DO NOTHING`, backend.ErrExists)
}

// UpdateGroup replaces a group: backend.ErrNotFound when there is none.
func (b *Backend) UpdateGroup(ctx context.Context, g flotilla.QueueGroup) error {
	return b.updateGroup(ctx, g, nil)
}

// updateGroup is UpdateGroup fenced by fence (nil: unfenced).
func (b *Backend) updateGroup(ctx context.Context, g flotilla.QueueGroup, fence *uint64) error {
	return b.putGroup(ctx, g, fence, "updating group", `UPDATE queue_groups SET parent = $2, priority_factor = $3,
			guaranteed = $4, quota_limit = $5, lending_limit = $6 WHERE name = $1`, backend.ErrNotFound)
}

// putGroup validates g and runs stmt ($1 … $6 as groupColumns) fenced by
// fence; a statement that changes no row is the group's unchanged error.
func (b *Backend) putGroup(ctx context.Context, g flotilla.QueueGroup, fence *uint64, what, stmt string, unchanged error) error {
	errs := []error{backend.ValidateGroup(b.schema, &g), textProblem("group.name", g.Name), textProblem("group.parent", g.Parent)}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if err := b.ready(ctx); err != nil {
		return err
	}
	gq, l, ll := encodeQuota(b.schema, g.Guaranteed), encodeQuota(b.schema, g.Limit), encodeQuota(b.schema, g.LendingLimit)
	return b.write(ctx, what, fence, false, 0, func(ctx context.Context, db querier) error {
		tag, err := db.Exec(ctx, stmt, g.Name, g.Parent, g.PriorityFactor, gq, l, ll)
		if err == nil && tag.RowsAffected() == 0 {
			return flotilla.Errorf("group", g.Name, unchanged, "")
		}
		return err
	})
}

// DeleteGroup removes a group: backend.ErrNotFound when there is none,
// backend.ErrNotEmpty while a queue or group names it as parent. It locks
// the group's row first; a queue or group written with it as parent
// meanwhile, by another writer, is not seen (the service writes under one
// lock).
func (b *Backend) DeleteGroup(ctx context.Context, name string) error {
	return b.deleteGroup(ctx, name, nil)
}

// deleteGroup is DeleteGroup fenced by fence (nil: unfenced).
func (b *Backend) deleteGroup(ctx context.Context, name string, fence *uint64) error {
	if err := b.ready(ctx); err != nil {
		return err
	}
	return b.write(ctx, "deleting group", fence, true, 0, func(ctx context.Context, db querier) error {
		var n string
		if err := db.QueryRow(ctx, "SELECT name FROM queue_groups WHERE name = $1 FOR UPDATE", name).Scan(&n); err != nil {
			if errors.Is(err, pgx.ErrNoRows) {
				return flotilla.Errorf("group", name, backend.ErrNotFound, "")
			}
			return err
		}
		var children []string
		err := db.QueryRow(ctx, `SELECT coalesce(array_agg(c ORDER BY c COLLATE "C"), '{}') FROM (
				SELECT 'queue ' || name AS c FROM queues WHERE parent = $1
				UNION ALL SELECT 'group ' || name FROM queue_groups WHERE parent = $1) AS children`, name).Scan(&children)
		if err != nil {
			return err
		}
		if len(children) > 0 {
			return flotilla.Errorf("group", name, backend.ErrNotEmpty, "has children: %s", strings.Join(children, ", "))
		}
		_, err = db.Exec(ctx, "DELETE FROM queue_groups WHERE name = $1", name)
		return err
	})
}

// ListGroups returns every group sorted by name.
func (b *Backend) ListGroups(ctx context.Context) ([]flotilla.QueueGroup, error) {
	if err := b.ready(ctx); err != nil {
		return nil, err
	}
	ctx, cancel := b.bound(ctx, 0)
	defer cancel()
	rows, _ := b.pool.Query(ctx, `SELECT `+groupColumns+` FROM queue_groups ORDER BY name COLLATE "C"`)
	gs, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (flotilla.QueueGroup, error) {
		var g flotilla.QueueGroup
		var gq, l, ll []byte
		if err := row.Scan(&g.Name, &g.Parent, &g.PriorityFactor, &gq, &l, &ll); err != nil {
			return g, err
		}
		var err error
		g.Guaranteed, g.Limit, g.LendingLimit, err = decodeQuotas(b.schema, fmt.Sprintf("group %q", g.Name), gq, l, ll)
		return g, err
	})
	if err != nil {
		return nil, b.fail(ctx, "listing groups", err)
	}
	return gs, nil
}
