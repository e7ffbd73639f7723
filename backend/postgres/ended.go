package postgres

import (
	"context"
	"math"

	"github.com/flotilla-sched/flotilla/backend"
)

var _ backend.EndedJobs = (*Backend)(nil)

// endedOrder is the submit-order key of migration 0008's jobs_ended
// index: a job without a submit time first.
const endedOrder = "COALESCE(submit_time, -9223372036854775808)"

// EndedJobs returns a page of a job set's ended jobs in one state, in
// submit order (backend.EndedJobs): one query that reads q.Limit rows of
// the jobs_ended index from the page's start.
func (b *Backend) EndedJobs(ctx context.Context, q backend.EndedQuery) ([]backend.Record, error) {
	if err := backend.CheckEndedQuery(q); err != nil {
		return nil, err
	}
	if err := b.ready(ctx); err != nil {
		return nil, err
	}
	ctx, cancel := b.bound(ctx, q.Limit)
	defer cancel()
	// Two texts rather than one with "$4 OR …": each plans as a plain
	// range of the index.
	sql := "SELECT " + stateColumns + ", " + specColumns + " FROM jobs" +
		" WHERE queue = $1 AND job_set = $2 AND state = $3 AND NOT live"
	args := []any{q.Queue, q.JobSet, int16(q.State), q.Limit}
	if q.After != nil {
		after := int64(math.MinInt64)
		if t := encodeTime(q.After.SubmitTime); t != nil {
			after = *t
		}
		sql += " AND (" + endedOrder + ", id) > ($5::bigint, $6::text)"
		args = append(args, after, q.After.ID)
	}
	rows, _ := b.pool.Query(ctx, sql+" ORDER BY "+endedOrder+", id LIMIT $4", args...)
	defer rows.Close()
	sc := b.newRecordScanner()
	out := []backend.Record{}
	for rows.Next() {
		r, err := sc.scan(rows)
		if err != nil {
			return nil, b.fail(ctx, "reading ended jobs", err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, b.fail(ctx, "reading ended jobs", err)
	}
	return out, nil
}

var _ backend.JobSetNames = (*Backend)(nil)

// JobSetNames returns a page of a queue's job sets by name
// (backend.JobSetNames): a range of job_sets' primary key.
func (b *Backend) JobSetNames(ctx context.Context, queue, after string, limit int) ([]string, error) {
	if err := backend.CheckJobSetNamesLimit(limit); err != nil {
		return nil, err
	}
	if err := b.ready(ctx); err != nil {
		return nil, err
	}
	ctx, cancel := b.bound(ctx, limit)
	defer cancel()
	rows, _ := b.pool.Query(ctx, "SELECT name FROM job_sets WHERE queue = $1 AND name > $2 ORDER BY name LIMIT $3", queue, after, limit)
	defer rows.Close()
	out := []string{}
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			return nil, b.fail(ctx, "reading job sets", err)
		}
		out = append(out, name)
	}
	if err := rows.Err(); err != nil {
		return nil, b.fail(ctx, "reading job sets", err)
	}
	return out, nil
}
