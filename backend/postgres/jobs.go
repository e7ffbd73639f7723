package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/backend"
	"github.com/flotilla-sched/flotilla/events"
)

// setKey names a job set.
type setKey struct{ queue, name string }

func compareSets(a, b setKey) int {
	if c := strings.Compare(a.queue, b.queue); c != 0 {
		return c
	}
	return strings.Compare(a.name, b.name)
}

// biasFence maps a fencing token to the stored bigint, keeping the order.
func biasFence(f uint64) int64 { return int64(f ^ 1<<63) }

// unbiasFence is biasFence's inverse.
func unbiasFence(v int64) uint64 { return uint64(v) ^ 1<<63 }

// Commit applies w in one transaction; see backend.Jobs. Locks are taken
// in one order by every Commit (the fence row, the queues' rows, the job
// sets' rows sorted, the stored jobs' rows sorted), so concurrent Commits
// wait for each other but never deadlock.
func (b *Backend) Commit(ctx context.Context, w *backend.Write) ([]events.Event, error) {
	if w == nil {
		return nil, flotilla.Errorf("write", "", flotilla.ErrRequired, "nil write")
	}
	errs := b.checkFields(w)
	newIdx, errs := checkPairs(w, errs)
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	if err := b.ready(ctx); err != nil {
		return nil, err
	}
	ctx, cancel := b.bound(ctx, len(w.Jobs)+len(w.Events))
	defer cancel()
	tx, err := b.pool.Begin(ctx)
	if err != nil {
		return nil, b.fail(ctx, "commit", err)
	}
	// Within the call's bound, so that a server gone silent does not hold
	// the rollback either; once ctx has ended, pgx closes the connection
	// instead (the server rolls back when it sees it closed). A no-op
	// after Commit.
	defer tx.Rollback(ctx) //nolint:errcheck
	out, xid, err := b.commit(ctx, tx, w, newIdx)
	if err != nil {
		return nil, err
	}
	if err := b.commitTx(ctx, tx, "commit", xid); err != nil {
		return nil, err
	}
	return out, nil
}

// outcomeUnknown reports whether a failed COMMIT may have been applied:
// the connection was lost (or the server went away) after the COMMIT may
// have been sent.
func outcomeUnknown(err error) bool {
	if errors.Is(err, pgx.ErrTxCommitRollback) {
		return false
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Severity == "FATAL" || pe.Severity == "PANIC" ||
			strings.HasPrefix(pe.Code, "08") || strings.HasPrefix(pe.Code, "57P")
	}
	return !pgconn.SafeToRetry(err)
}

// commit is Commit's work inside the transaction: it checks w against the
// stored state, then writes it. It returns the transaction's id too.
func (b *Backend) commit(ctx context.Context, tx pgx.Tx, w *backend.Write, newIdx map[string]int) ([]events.Event, int64, error) {
	xid, err := b.checkFence(ctx, tx, w.Fence)
	if err != nil {
		return nil, 0, err
	}
	out, err := b.commitChecked(ctx, tx, w, newIdx)
	return out, xid, err
}

// commitChecked is commit's work once the fence is checked.
func (b *Backend) commitChecked(ctx context.Context, tx pgx.Tx, w *backend.Write, newIdx map[string]int) ([]events.Event, error) {
	fail := func(what string, err error) ([]events.Event, error) { return nil, b.fail(ctx, what, err) }
	if len(w.Events) == 0 {
		return []events.Event{}, nil
	}

	// The queues named, locked against DeleteQueue.
	var queues []string
	for i := range w.Events {
		queues = append(queues, w.Events[i].Queue)
	}
	slices.Sort(queues)
	queues = slices.Compact(queues)
	rows, _ := tx.Query(ctx, `SELECT name FROM queues WHERE name = ANY($1) ORDER BY name COLLATE "C" FOR SHARE`, queues)
	found, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return fail("locking queues", err)
	}
	var errs []error
	if len(found) < len(queues) {
		reported := map[string]bool{}
		for i := range w.Events {
			q := w.Events[i].Queue
			if !slices.Contains(found, q) && !reported[q] {
				reported[q] = true
				errs = append(errs, flotilla.Errorf(fmt.Sprintf("events[%d].queue", i), q, backend.ErrNotFound, ""))
			}
		}
	}

	// New jobs whose id or client id is taken.
	if len(w.Jobs) > 0 {
		dups, err := b.duplicates(ctx, tx, w)
		if err != nil {
			return fail("checking job ids", err)
		}
		errs = append(errs, dups...)
	}

	// The stored jobs the events name, locked, in id order.
	var refs []string
	for i := range w.Events {
		if _, ok := newIdx[w.Events[i].Job]; !ok {
			refs = append(refs, w.Events[i].Job)
		}
	}
	touched := map[string]int{}
	var touchedStates []events.Job
	if len(refs) > 0 {
		slices.Sort(refs)
		refs = slices.Compact(refs)
		rows, _ := tx.Query(ctx, "SELECT "+stateColumns+" FROM jobs WHERE id = ANY($1) ORDER BY id COLLATE \"C\" FOR UPDATE", refs)
		touchedStates, err = pgx.CollectRows(rows, scanState)
		if err != nil {
			return fail("reading jobs", err)
		}
		for k := range touchedStates {
			touched[touchedStates[k].ID] = k
		}
	}

	// Each event applied to its job's state; ended counts the jobs that
	// reach a terminal state (from the stored states, before the events).
	ended := newEndedDeltas(touchedStates)
	states := make([]events.Job, len(w.Jobs))
	for i := range w.Events {
		e := &w.Events[i]
		var st *events.Job
		if idx, ok := newIdx[e.Job]; ok {
			st = &states[idx]
		} else if k, ok := touched[e.Job]; ok {
			st = &touchedStates[k]
		} else {
			errs = append(errs, flotilla.Errorf(fmt.Sprintf("events[%d].job", i), e.Job, backend.ErrNotFound, ""))
			continue
		}
		n, err := events.Transition(*st, *e)
		if err != nil {
			errs = append(errs, fmt.Errorf("events[%d]: %w", i, err))
			continue
		}
		*st = n
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}

	// Sequence numbers: each job set's row locked and advanced, in order.
	counts := map[setKey]int64{}
	for i := range w.Events {
		counts[setKey{w.Events[i].Queue, w.Events[i].JobSet}]++
	}
	keys := make([]setKey, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, compareSets)
	qs, ns, cs := make([]string, len(keys)), make([]string, len(keys)), make([]int64, len(keys))
	for i, k := range keys {
		qs[i], ns[i], cs[i] = k.queue, k.name, counts[k]
	}
	rows, _ = tx.Query(ctx, `INSERT INTO job_sets (queue, name, last_seq)
		SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[])
		ON CONFLICT (queue, name) DO UPDATE SET last_seq = job_sets.last_seq + EXCLUDED.last_seq
		RETURNING queue, name, last_seq`, qs, ns, cs)
	next := map[setKey]uint64{}
	var q, n string
	var last int64
	_, err = pgx.ForEachRow(rows, []any{&q, &n, &last}, func() error {
		k := setKey{q, n}
		next[k] = uint64(last-counts[k]) + 1
		return nil
	})
	if err != nil {
		return fail("numbering events", err)
	}

	out := make([]events.Event, len(w.Events))
	for i := range w.Events {
		e := w.Events[i]
		k := setKey{e.Queue, e.JobSet}
		e.Seq = next[k]
		next[k]++
		e.Time = decodeTime(encodeTime(e.Time))
		out[i] = e
	}
	if len(w.Jobs) > 0 {
		if _, err := tx.CopyFrom(ctx, pgx.Identifier{"jobs"}, jobColumns, b.jobRows(w.Jobs, states)); err != nil {
			return nil, b.copyFailed(ctx, "storing jobs", err)
		}
	}
	if _, err := tx.CopyFrom(ctx, pgx.Identifier{"events"}, eventColumns, eventRows(out)); err != nil {
		return fail("storing events", err)
	}
	if len(touchedStates) > 0 {
		if err := updateStates(ctx, tx, touchedStates); err != nil {
			return fail("updating jobs", err)
		}
	}
	if err := ended.store(ctx, tx, states, touchedStates); err != nil {
		return fail("counting ended jobs", err)
	}
	return out, nil
}

// checkFence refuses a write fenced below the highest applied fence and
// raises the stored fence to the write's. The row is share-locked when the
// fence stays (concurrent writers of one leader proceed together) and
// updated when it grows (raise), so a write with a lower fence that
// commits after a raise sees it. It returns the transaction's id, read
// with the fence (see commitTx).
func (b *Backend) checkFence(ctx context.Context, tx pgx.Tx, fence uint64) (xid int64, err error) {
	fenced := func(stored uint64) error {
		return flotilla.Errorf("fence", strconv.FormatUint(fence, 10), backend.ErrFenced, "a write with fence %d was applied", stored)
	}
	var biased int64
	if err := tx.QueryRow(ctx, "SELECT biased, pg_current_xact_id()::text::bigint FROM fence").Scan(&biased, &xid); err != nil {
		return 0, b.fail(ctx, "reading the fence", err)
	}
	switch stored := unbiasFence(biased); {
	case fence < stored:
		return 0, fenced(stored)
	case fence > stored:
		n, err := b.raise(ctx, tx, "UPDATE fence SET biased = $1 WHERE biased <= $1", biasFence(fence))
		if err != nil {
			return 0, b.fail(ctx, "raising the fence", err)
		}
		if n == 1 {
			return xid, nil
		}
	}
	if err := tx.QueryRow(ctx, "SELECT biased FROM fence FOR SHARE").Scan(&biased); err != nil {
		return 0, b.fail(ctx, "locking the fence", err)
	}
	if stored := unbiasFence(biased); fence < stored {
		return 0, fenced(stored)
	}
	return xid, nil
}

// duplicates returns an ErrDuplicate FieldError for each new job of w
// whose id, or client id in its queue, is stored already.
func (b *Backend) duplicates(ctx context.Context, tx pgx.Tx, w *backend.Write) ([]error, error) {
	ids := make([]string, len(w.Jobs))
	var cq, cc []string
	for i := range w.Jobs {
		ids[i] = w.Jobs[i].Job.ID
		if c := w.Jobs[i].ClientID; c != "" {
			cq, cc = append(cq, w.Jobs[i].Job.Queue), append(cc, c)
		}
	}
	rows, _ := tx.Query(ctx, `SELECT '', id, '', id FROM jobs WHERE id = ANY($1)
		UNION ALL
		SELECT 'c', j.client_id, j.queue, j.id FROM jobs j JOIN unnest($2::text[], $3::text[]) AS u(q, c)
			ON j.queue = u.q AND j.client_id = u.c`, ids, cq, cc)
	type hit struct{ Kind, Key, Queue, ID string }
	hits, err := pgx.CollectRows(rows, pgx.RowToStructByPos[hit])
	if err != nil || len(hits) == 0 {
		return nil, err
	}
	storedIDs, storedClients := map[string]bool{}, map[clientKey]string{}
	for _, h := range hits {
		if h.Kind == "" {
			storedIDs[h.Key] = true
		} else {
			storedClients[clientKey{h.Queue, h.Key}] = h.ID
		}
	}
	var errs []error
	for i := range w.Jobs {
		j := w.Jobs[i].Job
		if storedIDs[j.ID] {
			errs = append(errs, flotilla.Errorf(fmt.Sprintf("jobs[%d].job.id", i), j.ID, backend.ErrDuplicate, "the job is stored already"))
		}
		if c := w.Jobs[i].ClientID; c != "" {
			if id, ok := storedClients[clientKey{j.Queue, c}]; ok {
				errs = append(errs, flotilla.Errorf(fmt.Sprintf("jobs[%d].clientId", i), c, backend.ErrDuplicate,
					"used in queue %q by job %q", j.Queue, id))
			}
		}
	}
	return errs, nil
}

// copyFailed classifies a failed COPY of new jobs: a unique violation is a
// job or client id a concurrent write stored first.
func (b *Backend) copyFailed(ctx context.Context, what string, err error) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "23505" {
		return flotilla.Errorf("jobs", pe.Detail, backend.ErrDuplicate, "stored by a concurrent write")
	}
	return b.fail(ctx, what, err)
}

var jobColumns = []string{
	"id", "queue", "job_set", "priority_class", "priority", "submit_time", "requests", "node_selector", "tolerations",
	"avoid_clusters", "gang_id", "gang_cardinality", "gang_uniformity", "client_id", "principal", "grace", "deadline",
	"runtime", "spec_exit_code", "gang_topology", "gang_required", "gang_preferred", "pools",
	"state", "live", "attempts", "cancel_requested", "cluster", "node", "failed_clusters", "submitted", "leased",
	"finished", "reason", "exit_code", "priority_now", "retry",
}

// jobRows is the COPY source of new jobs with their states.
func (b *Backend) jobRows(specs []backend.JobSpec, states []events.Job) pgx.CopyFromSource {
	var buf []byte
	return pgx.CopyFromSlice(len(specs), func(i int) ([]any, error) {
		s, st := &specs[i], &states[i]
		j := s.Job
		buf = appendResources(buf[:0], b.schema, j.Requests)
		requests := slices.Clone(buf)
		selector, err := jsonOrNil(j.NodeSelector == nil, j.NodeSelector)
		if err != nil {
			return nil, err
		}
		var tols []byte
		if j.Tolerations != nil {
			ts := make([]toleration, len(j.Tolerations))
			for k, t := range j.Tolerations {
				ts[k] = toleration{Key: t.Key, Operator: t.Operator, Value: t.Value, Effect: t.Effect}
			}
			if tols, err = json.Marshal(ts); err != nil {
				return nil, err
			}
		}
		var clientID *string
		if s.ClientID != "" {
			clientID = &s.ClientID
		}
		row := []any{
			j.ID, j.Queue, j.JobSet, j.PriorityClass, int64(j.Priority), encodeTime(j.SubmitTime), requests, selector, tols,
			j.AvoidClusters, j.Gang.ID, int32(j.Gang.Cardinality), j.Gang.NodeUniformityLabel, clientID, s.Principal,
			int64(s.TerminationGracePeriod), int64(s.ActiveDeadline), int64(s.Runtime), int64(s.ExitCode),
			j.Gang.Topology.Name, j.Gang.Topology.Required, j.Gang.Topology.Preferred, s.Pools,
		}
		return appendState(row, st)
	})
}

// appendState appends the state columns of jobColumns.
func appendState(row []any, st *events.Job) ([]any, error) {
	failed, err := jsonOrNil(st.FailedClusters == nil, st.FailedClusters)
	if err != nil {
		return nil, err
	}
	retry, err := encodeRetry(st)
	if err != nil {
		return nil, err
	}
	return append(row, int16(st.State), !st.State.Terminal(), int32(st.Attempts), st.CancelRequested, st.Cluster, st.Node,
		failed, encodeTime(st.Submitted), encodeTime(st.Leased), encodeTime(st.Finished), st.Reason, int64(st.ExitCode),
		priorityNow(st), retry), nil
}

// retryState is the retry column's JSON form.
type retryState struct {
	Retries    []int    `json:"retries,omitempty"`
	Rule       int      `json:"rule,omitempty"`
	AvoidNodes []string `json:"avoidNodes,omitempty"`
}

// encodeRetry is the retry column: NULL when the job has no retry state.
func encodeRetry(st *events.Job) ([]byte, error) {
	if st.Retries == nil && st.Rule == 0 && st.AvoidNodes == nil {
		return nil, nil
	}
	return json.Marshal(retryState{Retries: st.Retries, Rule: st.Rule, AvoidNodes: st.AvoidNodes})
}

// priorityNow is the priority_now column: the priority a reprioritized
// event gave, NULL when none did.
func priorityNow(st *events.Job) *int64 {
	if !st.Reprioritized {
		return nil
	}
	p := int64(st.Priority)
	return &p
}

// updateStates stores the states of stored jobs, in one statement.
func updateStates(ctx context.Context, tx pgx.Tx, sts []events.Job) error {
	n := len(sts)
	var (
		ids, clusters, nodes, reasons = make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		state                         = make([]int16, n)
		live, cancel                  = make([]bool, n), make([]bool, n)
		attempts                      = make([]int32, n)
		failed                        = make([][]byte, n)
		submitted, leased, finished   = make([]*int64, n), make([]*int64, n), make([]*int64, n)
		exit                          = make([]int64, n)
		prio                          = make([]*int64, n)
		retry                         = make([][]byte, n)
	)
	for i := range sts {
		st := &sts[i]
		row, err := appendState(nil, st)
		if err != nil {
			return err
		}
		ids[i], state[i], live[i], attempts[i], cancel[i] = st.ID, row[0].(int16), row[1].(bool), row[2].(int32), row[3].(bool)
		clusters[i], nodes[i], failed[i] = st.Cluster, st.Node, row[6].([]byte)
		submitted[i], leased[i], finished[i] = row[7].(*int64), row[8].(*int64), row[9].(*int64)
		reasons[i], exit[i], prio[i], retry[i] = st.Reason, row[11].(int64), row[12].(*int64), row[13].([]byte)
	}
	_, err := tx.Exec(ctx, `UPDATE jobs SET state = u.state, live = u.live, attempts = u.attempts,
		cancel_requested = u.cancel, cluster = u.cluster, node = u.node, failed_clusters = u.failed,
		submitted = u.submitted, leased = u.leased, finished = u.finished, reason = u.reason, exit_code = u.exit,
		priority_now = u.prio, retry = u.retry
		FROM unnest($1::text[], $2::smallint[], $3::boolean[], $4::integer[], $5::boolean[], $6::text[], $7::text[],
			$8::jsonb[], $9::bigint[], $10::bigint[], $11::bigint[], $12::text[], $13::bigint[], $14::bigint[], $15::jsonb[])
			AS u(id, state, live, attempts, cancel, cluster, node, failed, submitted, leased, finished, reason, exit, prio, retry)
		WHERE jobs.id = u.id`,
		ids, state, live, attempts, cancel, clusters, nodes, failed, submitted, leased, finished, reasons, exit, prio, retry)
	return err
}

var eventColumns = []string{"queue", "job_set", "seq", "time", "job", "type", "cluster", "node", "attempt", "reason", "exit_code", "requeued",
	"priority", "rule", "avoid_node"}

// eventRows is the COPY source of numbered events.
func eventRows(es []events.Event) pgx.CopyFromSource {
	return pgx.CopyFromSlice(len(es), func(i int) ([]any, error) {
		e := &es[i]
		return []any{e.Queue, e.JobSet, int64(e.Seq), encodeTime(e.Time), e.Job, int16(e.Type), e.Cluster, e.Node,
			int32(e.Attempt), e.Reason, int64(e.ExitCode), e.Requeued, int64(e.Priority), int32(e.Rule), e.AvoidNode}, nil
	})
}
