package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/backend"
	"github.com/flotilla-sched/flotilla/events"
)

// stateColumns are the columns scanState reads.
const stateColumns = `id, queue, job_set, state, attempts, cancel_requested, cluster, node, failed_clusters,
	submitted, leased, finished, reason, exit_code, priority_now, retry`

// specColumns are the columns scanRecord reads after stateColumns.
const specColumns = `priority_class, priority, submit_time, requests, node_selector, tolerations, avoid_clusters,
	gang_id, gang_cardinality, gang_uniformity, client_id, principal, grace, deadline, runtime, spec_exit_code,
	gang_topology, gang_required, gang_preferred, pools`

// stateDest holds a row's state columns while they are scanned.
type stateDest struct {
	j                           events.Job
	state                       int16
	attempts                    int32
	failed                      []byte
	submitted, leased, finished *int64
	exit                        int64
	prio                        *int64
	retry                       []byte
}

func (d *stateDest) targets() []any {
	return []any{&d.j.ID, &d.j.Queue, &d.j.JobSet, &d.state, &d.attempts, &d.j.CancelRequested, &d.j.Cluster, &d.j.Node,
		&d.failed, &d.submitted, &d.leased, &d.finished, &d.j.Reason, &d.exit, &d.prio, &d.retry}
}

func (d *stateDest) job() (events.Job, error) {
	j := d.j
	j.State, j.Attempts, j.ExitCode = events.State(d.state), int(d.attempts), int(d.exit)
	j.Submitted, j.Leased, j.Finished = decodeTime(d.submitted), decodeTime(d.leased), decodeTime(d.finished)
	if d.prio != nil {
		j.Reprioritized, j.Priority = true, uint32(*d.prio)
	}
	if d.failed != nil {
		// Into a local: &j.FailedClusters would move j to the heap for
		// every job.
		var failed []string
		if err := json.Unmarshal(d.failed, &failed); err != nil {
			return j, fmt.Errorf("job %q: stored failed clusters: %w", j.ID, err)
		}
		j.FailedClusters = failed
	}
	if d.retry != nil {
		var r retryState
		if err := json.Unmarshal(d.retry, &r); err != nil {
			return j, fmt.Errorf("job %q: stored retry state: %w", j.ID, err)
		}
		j.Retries, j.Rule, j.AvoidNodes = r.Retries, r.Rule, r.AvoidNodes
	}
	return j, nil
}

// scanState reads stateColumns.
func scanState(row pgx.CollectableRow) (events.Job, error) {
	var d stateDest
	if err := row.Scan(d.targets()...); err != nil {
		return events.Job{}, err
	}
	return d.job()
}

// recordScanner reads rows of stateColumns then specColumns into
// records, with one set of scan targets for every row it reads.
type recordScanner struct {
	b                                  *Backend
	d                                  stateDest
	class, gangID, uniformity          string
	avoid                              []string
	priority                           int64
	submit                             *int64
	requests, selector, tols           []byte
	card                               int32
	clientID                           *string
	principal                          string
	grace, deadline, runtime, specExit int64
	topology                           flotilla.GangTopology
	pools                              []string
	dst                                []any
}

func (b *Backend) newRecordScanner() *recordScanner {
	r := &recordScanner{b: b}
	r.dst = append(r.d.targets(), &r.class, &r.priority, &r.submit, &r.requests, &r.selector, &r.tols, &r.avoid,
		&r.gangID, &r.card, &r.uniformity, &r.clientID, &r.principal, &r.grace, &r.deadline, &r.runtime, &r.specExit,
		&r.topology.Name, &r.topology.Required, &r.topology.Preferred, &r.pools)
	return r
}

// scanRecord reads stateColumns, then specColumns.
func (b *Backend) scanRecord(row pgx.CollectableRow) (backend.Record, error) {
	return b.newRecordScanner().scan(row)
}

// scan reads one row.
func (r *recordScanner) scan(row pgx.CollectableRow) (backend.Record, error) {
	r.avoid, r.requests, r.selector, r.tols, r.pools = nil, r.requests[:0], nil, nil, nil
	if err := row.Scan(r.dst...); err != nil {
		return backend.Record{}, err
	}
	st, err := r.d.job()
	if err != nil {
		return backend.Record{}, err
	}
	j := &flotilla.Job{ID: st.ID, Queue: st.Queue, JobSet: st.JobSet, PriorityClass: r.class,
		Priority: uint32(r.priority), SubmitTime: decodeTime(r.submit), AvoidClusters: r.avoid,
		Gang: flotilla.Gang{ID: r.gangID, Cardinality: int(r.card), NodeUniformityLabel: r.uniformity, Topology: r.topology}}
	if j.Requests, err = decodeResources(r.b.schema, r.requests, ""); err != nil {
		// Again, to name the field: the name costs an allocation per job.
		_, err = decodeResources(r.b.schema, r.requests, fmt.Sprintf("job %q.requests", j.ID))
		return backend.Record{}, err
	}
	if r.selector != nil {
		if err := json.Unmarshal(r.selector, &j.NodeSelector); err != nil {
			return backend.Record{}, fmt.Errorf("job %q: stored node selector: %w", j.ID, err)
		}
	}
	if r.tols != nil {
		var ts []toleration
		if err := json.Unmarshal(r.tols, &ts); err != nil {
			return backend.Record{}, fmt.Errorf("job %q: stored tolerations: %w", j.ID, err)
		}
		j.Tolerations = make([]flotilla.Toleration, len(ts))
		for k, t := range ts {
			j.Tolerations[k] = flotilla.Toleration{Key: t.Key, Operator: t.Operator, Value: t.Value, Effect: t.Effect}
		}
	}
	spec := backend.JobSpec{Job: j, Principal: r.principal,
		TerminationGracePeriod: time.Duration(r.grace), ActiveDeadline: time.Duration(r.deadline),
		Runtime: time.Duration(r.runtime), ExitCode: int(r.specExit), Pools: r.pools}
	if r.clientID != nil {
		spec.ClientID = *r.clientID
	}
	return backend.Record{Spec: spec, State: st}, nil
}

// Job returns one job's record; backend.ErrNotFound when there is none.
func (b *Backend) Job(ctx context.Context, id string) (backend.Record, error) {
	if err := b.ready(ctx); err != nil {
		return backend.Record{}, err
	}
	ctx, cancel := b.bound(ctx, 0)
	defer cancel()
	rows, _ := b.pool.Query(ctx, "SELECT "+stateColumns+", "+specColumns+" FROM jobs WHERE id = $1", id)
	r, err := pgx.CollectExactlyOneRow(rows, b.scanRecord)
	if errors.Is(err, pgx.ErrNoRows) {
		return backend.Record{}, flotilla.Errorf("job", id, backend.ErrNotFound, "")
	}
	if err != nil {
		return backend.Record{}, b.fail(ctx, "reading job", err)
	}
	return r, nil
}

var _ backend.JobLookup = (*Backend)(nil)

// JobsByID is Job for many ids in one query (a join of the ids, numbered,
// with the jobs' primary key), so that an id given twice is answered at
// each of its places; see backend.JobLookup.
func (b *Backend) JobsByID(ctx context.Context, ids []string, recs []backend.Record) error {
	if len(recs) != len(ids) {
		return flotilla.Errorf("recs", strconv.Itoa(len(recs)), flotilla.ErrInconsistent, "want %d, one per id", len(ids))
	}
	if err := b.ready(ctx); err != nil {
		return err
	}
	clear(recs)
	if len(ids) == 0 {
		return nil
	}
	ctx, cancel := b.bound(ctx, len(ids))
	defer cancel()
	rows, _ := b.pool.Query(ctx, "SELECT q.ord, "+stateColumns+", "+specColumns+
		" FROM unnest($1::text[]) WITH ORDINALITY AS q(id, ord) JOIN jobs USING (id)", ids)
	defer rows.Close()
	sc := b.newRecordScanner()
	var ord int64
	sc.dst = append([]any{&ord}, sc.dst...)
	for rows.Next() {
		r, err := sc.scan(rows)
		if err != nil {
			return b.fail(ctx, "reading jobs", err)
		}
		recs[ord-1] = r // ord is 1 to len(ids)
	}
	if err := rows.Err(); err != nil {
		return b.fail(ctx, "reading jobs", err)
	}
	return nil
}

// JobByClientID returns the id of the job submitted to queue with
// clientID; backend.ErrNotFound when there is none.
func (b *Backend) JobByClientID(ctx context.Context, queue, clientID string) (string, error) {
	if err := b.ready(ctx); err != nil {
		return "", err
	}
	ctx, cancel := b.bound(ctx, 0)
	defer cancel()
	var id string
	err := b.pool.QueryRow(ctx, "SELECT id FROM jobs WHERE queue = $1 AND client_id = $2", queue, clientID).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) || (err == nil && clientID == "") {
		return "", flotilla.Errorf("clientId", clientID, backend.ErrNotFound, "in queue %q", queue)
	}
	if err != nil {
		return "", b.fail(ctx, "reading client id", err)
	}
	return id, nil
}

// Events returns a job set's events from sequence number from on, at most
// limit (≤ 0: all); see backend.Jobs. Without a limit the log is read in
// pages of eventsPage events, each a call of its own bound.
func (b *Backend) Events(ctx context.Context, queue, jobSet string, from uint64, limit int) ([]events.Event, error) {
	if err := b.ready(ctx); err != nil {
		return nil, err
	}
	var exists bool
	qctx, cancel := b.bound(ctx, 0)
	err := b.pool.QueryRow(qctx, "SELECT EXISTS (SELECT 1 FROM queues WHERE name = $1)", queue).Scan(&exists)
	if err != nil {
		err = b.fail(qctx, "reading events", err)
	}
	cancel()
	if err != nil {
		return nil, err
	}
	if !exists {
		return nil, flotilla.Errorf("queue", queue, backend.ErrNotFound, "")
	}
	if limit > 0 {
		return b.events(ctx, queue, jobSet, from, limit, nil)
	}
	var out []events.Event
	for {
		n := len(out)
		if out, err = b.events(ctx, queue, jobSet, from, eventsPage, out); err != nil {
			return nil, err
		}
		if len(out)-n < eventsPage {
			return out, nil
		}
		from = out[len(out)-1].Seq + 1
	}
}

// eventsPage is how many events a read of a whole log reads at a time.
const eventsPage = 10_000

// events appends to out the job set's events from sequence number from on,
// at most limit (> 0), in one query bounded for limit rows.
func (b *Backend) events(ctx context.Context, queue, jobSet string, from uint64, limit int, out []events.Event) ([]events.Event, error) {
	if out == nil {
		out = []events.Event{}
	}
	if from > 1<<63-1 {
		return out, nil
	}
	ctx, cancel := b.bound(ctx, limit)
	defer cancel()
	rows, _ := b.pool.Query(ctx, `SELECT seq, time, job, type, cluster, node, attempt, reason, exit_code, requeued, priority, rule, avoid_node
		FROM events WHERE queue = $1 AND job_set = $2 AND seq >= $3 ORDER BY seq LIMIT $4`,
		queue, jobSet, int64(max(from, 1)), int64(limit))
	out, err := pgx.AppendRows(out, rows, func(row pgx.CollectableRow) (events.Event, error) {
		e := events.Event{Queue: queue, JobSet: jobSet}
		var seq, exit, prio int64
		var t *int64
		var typ int16
		var attempt, rule int32
		if err := row.Scan(&seq, &t, &e.Job, &typ, &e.Cluster, &e.Node, &attempt, &e.Reason, &exit, &e.Requeued, &prio, &rule, &e.AvoidNode); err != nil {
			return e, err
		}
		e.Rule = int(rule)
		e.Seq, e.Time, e.Type, e.Attempt, e.ExitCode = uint64(seq), decodeTime(t), events.Type(typ), int(attempt), int(exit)
		e.Priority = uint32(prio)
		return e, nil
	})
	if err != nil {
		return nil, b.fail(ctx, "reading events", err)
	}
	return out, nil
}

// livePage is how many records LiveJobs reads in one query.
const livePage = 1000

// livePageRead is one page LiveJobs's reader read, or its error.
type livePageRead struct {
	page []backend.Record
	err  error
}

// LiveJobs calls fn with every job not in a terminal state, by queue and
// then id, reading livePage records at a time (keyset pagination over the
// index of live jobs). A goroutine reads the next page while fn runs
// through the current one, so that the database's time and the caller's
// overlap; no connection is held while it waits for fn. It has ended when
// LiveJobs returns.
func (b *Backend) LiveJobs(ctx context.Context, fn func(backend.Record) error) error {
	ctx, cancel := context.WithCancel(ctx)
	pages := make(chan livePageRead, 1)
	// free takes back the pages fn has been through, for the reader to
	// read into again.
	free := make(chan []backend.Record, 2)
	done := make(chan struct{})
	defer func() {
		cancel()
		for range pages { // let the reader end
		}
		<-done
	}()
	go func() {
		defer close(done)
		defer close(pages)
		b.readLive(ctx, pages, free)
	}()
	for p := range pages {
		if p.err != nil {
			return p.err
		}
		// Checked again for every page: one read while Close ran is not
		// handed out.
		if err := b.ready(ctx); err != nil {
			return err
		}
		for _, r := range p.page {
			if err := fn(r); err != nil {
				return err
			}
		}
		clear(p.page)
		select {
		case free <- p.page[:0]:
		default:
		}
	}
	return nil
}

// readLive reads the pages of live jobs into pages until the last page,
// an error, or ctx's end, reusing the buffers free hands back.
func (b *Backend) readLive(ctx context.Context, pages chan<- livePageRead, free <-chan []backend.Record) {
	const sel = "SELECT " + stateColumns + ", " + specColumns + " FROM jobs WHERE live"
	var lastQueue, lastID string
	sc := b.newRecordScanner()
	scan := func(row pgx.CollectableRow) (backend.Record, error) { return sc.scan(row) }
	for first := true; ; first = false {
		if err := b.ready(ctx); err != nil {
			pages <- livePageRead{err: err}
			return
		}
		var buf []backend.Record
		select {
		case buf = <-free:
		default:
			buf = make([]backend.Record, 0, livePage)
		}
		// Each page is a call of its own bound: a load of a million jobs
		// takes as long as it needs while the server answers.
		pctx, cancel := b.bound(ctx, livePage)
		var rows pgx.Rows
		if first {
			rows, _ = b.pool.Query(pctx, sel+" ORDER BY queue, id LIMIT $1", livePage)
		} else {
			rows, _ = b.pool.Query(pctx, sel+" AND (queue, id) > ($2, $3) ORDER BY queue, id LIMIT $1", livePage, lastQueue, lastID)
		}
		page, err := pgx.AppendRows(buf, rows, scan)
		if err != nil {
			err = b.fail(pctx, "reading live jobs", err)
		}
		cancel()
		if err != nil {
			pages <- livePageRead{err: err}
			return
		}
		more := len(page) == livePage
		if more { // read before the page is handed over (and cleared)
			last := page[len(page)-1].Spec.Job
			lastQueue, lastID = last.Queue, last.ID
		}
		select {
		case pages <- livePageRead{page: page}:
		case <-ctx.Done():
			return
		}
		if !more {
			return
		}
	}
}
