package postgres

import (
	"cmp"
	"context"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/flotilla-sched/flotilla/backend"
	"github.com/flotilla-sched/flotilla/events"
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

var _ backend.EndedCounts = (*Backend)(nil)

// EndedCounts returns a job set's ended jobs per terminal state
// (backend.EndedCounts): its rows of ended_counts (migration 0009),
// which the writes that end jobs keep.
func (b *Backend) EndedCounts(ctx context.Context, queue, jobSet string) (backend.EndedCount, error) {
	var out backend.EndedCount
	if err := b.ready(ctx); err != nil {
		return out, err
	}
	ctx, cancel := b.bound(ctx, 4)
	defer cancel()
	rows, _ := b.pool.Query(ctx, "SELECT state, n FROM ended_counts WHERE queue = $1 AND job_set = $2", queue, jobSet)
	defer rows.Close()
	for rows.Next() {
		var st int16
		var n int64
		if err := rows.Scan(&st, &n); err != nil {
			return out, b.fail(ctx, "reading ended counts", err)
		}
		out.Add(events.State(st), int(n))
	}
	if err := rows.Err(); err != nil {
		return out, b.fail(ctx, "reading ended counts", err)
	}
	return out, nil
}

// endedKey is a job set and terminal state of ended_counts.
type endedKey struct {
	queue, jobSet string
	state         events.State
}

// endedDeltas is what a write changes in ended_counts: it remembers the
// stored jobs' states before the write's events.
type endedDeltas struct {
	before []events.State
}

func newEndedDeltas(touched []events.Job) endedDeltas {
	d := endedDeltas{before: make([]events.State, len(touched))}
	for i := range touched {
		d.before[i] = touched[i].State
	}
	return d
}

// store adds to ended_counts the new jobs stored ended and the stored
// jobs that reached a terminal state (and takes from their former
// state's count a job that went from one terminal state to another), in
// one statement, the keys in order (no deadlock between writers).
func (d endedDeltas) store(ctx context.Context, tx pgx.Tx, states, touched []events.Job) error {
	delta := map[endedKey]int64{}
	for i := range states {
		if st := &states[i]; st.State.Terminal() {
			delta[endedKey{st.Queue, st.JobSet, st.State}]++
		}
	}
	for i := range touched {
		st, was := &touched[i], d.before[i]
		if st.State == was {
			continue
		}
		if was.Terminal() {
			delta[endedKey{st.Queue, st.JobSet, was}]--
		}
		if st.State.Terminal() {
			delta[endedKey{st.Queue, st.JobSet, st.State}]++
		}
	}
	if len(delta) == 0 {
		return nil
	}
	keys := slices.SortedFunc(maps.Keys(delta), func(a, b endedKey) int {
		return cmp.Or(strings.Compare(a.queue, b.queue), strings.Compare(a.jobSet, b.jobSet), cmp.Compare(a.state, b.state))
	})
	qs, ss, sts, ns := make([]string, len(keys)), make([]string, len(keys)), make([]int16, len(keys)), make([]int64, len(keys))
	for i, k := range keys {
		qs[i], ss[i], sts[i], ns[i] = k.queue, k.jobSet, int16(k.state), delta[k]
	}
	_, err := tx.Exec(ctx, `INSERT INTO ended_counts (queue, job_set, state, n)
		SELECT * FROM unnest($1::text[], $2::text[], $3::smallint[], $4::bigint[])
		ON CONFLICT (queue, job_set, state) DO UPDATE SET n = ended_counts.n + EXCLUDED.n`, qs, ss, sts, ns)
	return err
}
