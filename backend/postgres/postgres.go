package postgres

import (
	"cmp"
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/backend"
)

var _ backend.Backend = (*Backend)(nil)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// migrationLock is the key of the advisory lock Open holds while it
// migrates, so that concurrent Opens apply each migration once.
const migrationLock = 0x666c6f74696c6c61 // "flotilla"

// DefaultConnectTimeout bounds each attempt to connect when the URL sets
// no connect_timeout.
const DefaultConnectTimeout = 5 * time.Second

// DefaultCallTimeout bounds each call's database work when the URL sets
// no call_timeout: a statement or transaction the server does not answer
// within it fails with backend.ErrUnavailable (see the package comment).
const DefaultCallTimeout = 10 * time.Second

// rowsPerCallTimeout: a call over n rows (the jobs and events a Commit
// writes, the ids JobsByID reads, a page's records) is allowed
// n/rowsPerCallTimeout call timeouts more than the call timeout, so a
// Commit of 100,000 jobs and their 100,000 events gets three. Measured
// (BenchmarkCommitSubmit, on a loaded 2-core machine): 1,000 jobs with
// their events commit in 30 ms, 15 µs a row; the allowance is 100 µs a
// row at the default.
const rowsPerCallTimeout = 100_000

// callTimeoutParam is the URL parameter that sets the call timeout; the
// backend reads it and does not send it to the server.
const callTimeoutParam = "call_timeout"

// noAnswer is the cause of a call's context when its bound has passed:
// the database did not answer in time.
type noAnswer struct{ timeout time.Duration }

func (e *noAnswer) Error() string {
	return fmt.Sprintf("the database did not answer within the call timeout (%s, longer for calls over many rows)", e.timeout)
}

// Backend is the PostgreSQL backend. Open one with Open; it is safe for
// concurrent use.
type Backend struct {
	schema *flotilla.ResourceSchema
	pool   *pgxpool.Pool
	closed atomic.Bool
	// timeout is the call timeout; noAnswer the cause of a call's
	// context when its bound passes (one value, so that bound does not
	// allocate it).
	timeout  time.Duration
	noAnswer *noAnswer
	// unsettled are the transactions whose COMMIT outcome a call could
	// not learn, pendingCount their number (read by every call first).
	unsettled    unsettled
	pendingCount atomic.Int32
	// beforeCommit, when set (by this package's tests), runs in Commit
	// and the fenced writes just before the transaction commits, with
	// the transaction's connection.
	beforeCommit func(conn *pgconn.PgConn)
	// leaseNow, when set (by this package's tests), replaces the
	// database's clock in Lead and Resign, so that a test moves the
	// lease's time forward without waiting.
	leaseNow func() time.Time
}

// Open connects to the database at url (a PostgreSQL URL or key=value
// string, as pgx reads it; a search_path parameter selects the schema the
// tables live in, a call_timeout parameter the call timeout, a Go
// duration or whole seconds, DefaultCallTimeout when absent), applies the
// migrations it has not applied yet, and returns a backend for jobs whose
// requests are in schema.
func Open(ctx context.Context, url string, schema *flotilla.ResourceSchema) (*Backend, error) {
	return openTuned(ctx, url, schema, nil)
}

// openTuned is Open; tune, when set (by this package's tests), adjusts the
// pool's configuration first (a query tracer).
func openTuned(ctx context.Context, url string, schema *flotilla.ResourceSchema, tune func(*pgxpool.Config)) (*Backend, error) {
	if schema == nil {
		return nil, flotilla.Errorf("schema", "", flotilla.ErrRequired, "")
	}
	cfg, timeout, err := poolConfig(url)
	if err != nil {
		return nil, err
	}
	if tune != nil {
		tune(cfg)
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres: connecting: %w", err)
	}
	b := &Backend{schema: schema, pool: pool, timeout: timeout, noAnswer: &noAnswer{timeout: timeout}}
	if err := b.migrate(ctx); err != nil {
		pool.Close()
		return nil, err
	}
	return b, nil
}

// poolConfig parses url into the pool's configuration, with the default
// connect timeout when url sets none, and the call timeout (the
// call_timeout parameter, removed from the parameters sent to the server;
// DefaultCallTimeout when absent).
func poolConfig(url string) (*pgxpool.Config, time.Duration, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, 0, flotilla.Errorf("url", redact(url), flotilla.ErrMalformed, "%v", err)
	}
	if cfg.ConnConfig.ConnectTimeout == 0 {
		// A server that does not answer must not hold a call (and the
		// service's lock) for the kernel's TCP timeout.
		cfg.ConnConfig.ConnectTimeout = DefaultConnectTimeout
	}
	timeout := DefaultCallTimeout
	if v, ok := cfg.ConnConfig.RuntimeParams[callTimeoutParam]; ok {
		delete(cfg.ConnConfig.RuntimeParams, callTimeoutParam)
		if timeout, err = parseCallTimeout(v); err != nil {
			return nil, 0, err
		}
	}
	return cfg, timeout, nil
}

// maxCallTimeout is the largest call_timeout: a day, as good as none,
// and far from overflowing a bound over many rows.
const maxCallTimeout = 24 * time.Hour

// parseCallTimeout reads a call_timeout: a Go duration ("10s", "500ms")
// or whole seconds, as connect_timeout; positive, at most maxCallTimeout.
func parseCallTimeout(v string) (time.Duration, error) {
	d, err := time.ParseDuration(v)
	if err != nil {
		n, nerr := strconv.ParseInt(v, 10, 64)
		if nerr != nil {
			return 0, flotilla.Errorf("url."+callTimeoutParam, v, flotilla.ErrMalformed, "want a duration (10s, 500ms) or whole seconds")
		}
		d = time.Duration(min(max(n, -1), int64(maxCallTimeout/time.Second)+1)) * time.Second
	}
	if d <= 0 || d > maxCallTimeout {
		return 0, flotilla.Errorf("url."+callTimeoutParam, v, flotilla.ErrOutOfRange, "want a positive duration up to %s", maxCallTimeout)
	}
	return d, nil
}

// bound limits ctx to one call's time: the call timeout, plus its share
// for each of the rows the call writes or reads (rowsPerCallTimeout).
// When the bound passes, the context's cause is b.noAnswer: pgx gives up
// the statement in progress at once (it sets a deadline on the socket and
// closes the connection) and fail classifies the error as
// backend.ErrUnavailable.
func (b *Backend) bound(ctx context.Context, rows int) (context.Context, context.CancelFunc) {
	d := b.timeout + time.Duration(rows)*(b.timeout/rowsPerCallTimeout)
	return context.WithTimeoutCause(ctx, d, b.noAnswer)
}

// redact hides a URL's password.
func redact(url string) string {
	if cfg, err := pgconn.ParseConfig(url); err == nil && cfg.Password != "" {
		return strings.ReplaceAll(url, cfg.Password, "xxxxx")
	}
	return url
}

// migration is one embedded SQL file, migrations/NNNN_name.sql.
type migration struct {
	version int
	name    string
	sql     string
}

// migrations lists the embedded migrations in version order.
func migrations() ([]migration, error) {
	names, err := fs.Glob(migrationFiles, "migrations/*.sql")
	if err != nil {
		return nil, err
	}
	var out []migration
	for _, n := range names {
		base := strings.TrimPrefix(n, "migrations/")
		num, _, ok := strings.Cut(base, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v <= 0 {
			return nil, fmt.Errorf("postgres: migration file %s is not named NNNN_name.sql", n)
		}
		b, err := migrationFiles.ReadFile(n)
		if err != nil {
			return nil, err
		}
		out = append(out, migration{version: v, name: base, sql: string(b)})
	}
	slices.SortFunc(out, func(a, b migration) int { return cmp.Compare(a.version, b.version) })
	for i := range out {
		if out[i].version != i+1 {
			return nil, fmt.Errorf("postgres: migration %s: want version %d", out[i].name, i+1)
		}
	}
	return out, nil
}

// migrateTimeouts bounds a migration, in call timeouts: waiting for the
// migration lock (another process may be migrating) and applying the
// migrations are allowed this many.
const migrateTimeouts = 10

// migrate applies the migrations the database lacks, each in its own
// transaction, under an advisory lock. The whole is bounded by
// migrateTimeouts call timeouts.
func (b *Backend) migrate(ctx context.Context) error {
	ms, err := migrations()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeoutCause(ctx, migrateTimeouts*b.timeout, b.noAnswer)
	defer cancel()
	conn, err := b.pool.Acquire(ctx)
	if err != nil {
		return b.fail(ctx, "connecting", err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1)", int64(migrationLock)); err != nil {
		return b.fail(ctx, "taking the migration lock", err)
	}
	defer func() {
		// A fresh context (bounded: the server may have gone silent): the
		// lock must go even when ctx has ended.
		uctx, cancel := b.bound(context.Background(), 0)
		defer cancel()
		if _, err := conn.Exec(uctx, "SELECT pg_advisory_unlock($1)", int64(migrationLock)); err != nil {
			conn.Conn().Close(uctx)
		}
	}()
	if _, err := conn.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version integer PRIMARY KEY,
		name text NOT NULL,
		applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
		return b.fail(ctx, "creating schema_migrations", err)
	}
	applied := map[int]bool{}
	rows, err := conn.Query(ctx, "SELECT version FROM schema_migrations")
	if err != nil {
		return b.fail(ctx, "reading schema_migrations", err)
	}
	vs, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	if err != nil {
		return b.fail(ctx, "reading schema_migrations", err)
	}
	for _, v := range vs {
		applied[int(v)] = true
	}
	if len(vs) > 0 && int(slices.Max(vs)) > len(ms) {
		return fmt.Errorf("postgres: the database is at migration %d, newer than this program's %d", slices.Max(vs), len(ms))
	}
	for _, m := range ms {
		if applied[m.version] {
			continue
		}
		err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, m.sql); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, "INSERT INTO schema_migrations (version, name) VALUES ($1, $2)", m.version, m.name)
			return err
		})
		if err != nil {
			return b.fail(ctx, "applying migration "+m.name, err)
		}
	}
	return nil
}

// Close closes the connections, waiting for the calls in progress; later
// calls return backend.ErrClosed. Closing twice is not an error.
func (b *Backend) Close() error {
	if b.closed.Swap(true) {
		return nil
	}
	b.pool.Close()
	return nil
}

// ready is the check every method makes first: the context is live, the
// backend open, and no earlier COMMIT's outcome is still unknown (see
// settlePending).
func (b *Backend) ready(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if b.closed.Load() {
		return backend.ErrClosed
	}
	if b.pendingCount.Load() > 0 {
		return b.settlePending(ctx)
	}
	return nil
}

// fail classifies a database error of a call whose context is ctx (the
// call's bound, see bound): ErrClosed once the backend is closed,
// ErrUnavailable when the bound passed (the server did not answer in
// time), the caller's context's error once it has ended, ErrUnavailable
// when the server could not be reached or went away, else err with what
// was being done.
func (b *Backend) fail(ctx context.Context, what string, err error) error {
	if b.closed.Load() {
		return fmt.Errorf("postgres: %s: %w (%v)", what, backend.ErrClosed, err)
	}
	if context.Cause(ctx) == error(b.noAnswer) {
		return fmt.Errorf("postgres: %s: %w: %w (%v)", what, backend.ErrUnavailable, b.noAnswer, err)
	}
	if cerr := ctx.Err(); cerr != nil && !errors.Is(err, cerr) {
		return fmt.Errorf("postgres: %s: %w (%v)", what, cerr, err)
	}
	if ctx.Err() == nil && unavailable(err) {
		return fmt.Errorf("postgres: %s: %w: %w", what, backend.ErrUnavailable, err)
	}
	return fmt.Errorf("postgres: %s: %w", what, err)
}

// unavailable reports whether err says the server cannot be used now
// rather than that it refused the statement: connecting failed or timed
// out, the connection broke or was closed, or the server reported a
// connection exception (class 08), that it is shutting down or starting
// (57P01–57P03), or that it has no free connection slot (53300).
func unavailable(err error) bool {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return strings.HasPrefix(pe.Code, "08") || pe.Code == "57P01" || pe.Code == "57P02" ||
			pe.Code == "57P03" || pe.Code == "53300"
	}
	var ce *pgconn.ConnectError
	var ne net.Error
	return errors.As(err, &ce) || errors.As(err, &ne) || pgconn.Timeout(err) || pgconn.SafeToRetry(err) ||
		errors.Is(err, pgconn.ErrConnClosed) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
}

// queueProblems validates q for storing.
func (b *Backend) queueProblems(q *flotilla.Queue) error {
	if err := errors.Join(q.Validate(),
		backend.CheckTreeFields(b.schema, fmt.Sprintf("queue %q", q.Name), q.Name, q.Parent, q.Guaranteed, q.Limit, q.LendingLimit)); err != nil {
		return err
	}
	var errs []error
	if err := textProblem("queue.name", q.Name); err != nil {
		errs = append(errs, err)
	}
	if err := textProblem("queue.parent", q.Parent); err != nil {
		errs = append(errs, err)
	}
	for c, m := range q.LimitsByPriorityClass {
		if err := textProblem("queue.limitsByPriorityClass", c); err != nil {
			errs = append(errs, err)
		}
		for r := range m {
			if err := textProblem("queue.limitsByPriorityClass."+c, r); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// queueColumns are a queue row's columns, in scanQueue's order.
const queueColumns = "name, priority_factor, limits, parent, guaranteed, quota_limit, lending_limit"

// CreateQueue stores a new queue: backend.ErrExists when the name is taken.
func (b *Backend) CreateQueue(ctx context.Context, q flotilla.Queue) error {
	return b.createQueue(ctx, q, nil)
}

// createQueue is CreateQueue fenced by fence (nil: unfenced).
func (b *Backend) createQueue(ctx context.Context, q flotilla.Queue, fence *uint64) error {
	return b.putQueue(ctx, q, fence, "creating queue", `INSERT INTO queues (`+queueColumns+`)
			VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (name) DO NOTHING`, backend.ErrExists)
}

// UpdateQueue replaces a queue: backend.ErrNotFound when there is none.
func (b *Backend) UpdateQueue(ctx context.Context, q flotilla.Queue) error {
	return b.updateQueue(ctx, q, nil)
}

// updateQueue is UpdateQueue fenced by fence (nil: unfenced).
func (b *Backend) updateQueue(ctx context.Context, q flotilla.Queue, fence *uint64) error {
	return b.putQueue(ctx, q, fence, "updating queue",
		`UPDATE queues SET priority_factor = $2, limits = $3, parent = $4, guaranteed = $5, quota_limit = $6, lending_limit = $7
			WHERE name = $1`, backend.ErrNotFound)
}

// putQueue validates q and runs stmt ($1 name, $2 priority factor, $3
// limits, $4 parent, $5–$7 the quota vectors) fenced by fence; a
// statement that changes no row is the queue's unchanged error.
func (b *Backend) putQueue(ctx context.Context, q flotilla.Queue, fence *uint64, what, stmt string, unchanged error) error {
	if err := b.queueProblems(&q); err != nil {
		return err
	}
	if err := b.ready(ctx); err != nil {
		return err
	}
	limits, err := jsonOrNil(q.LimitsByPriorityClass == nil, q.LimitsByPriorityClass)
	if err != nil {
		return flotilla.Errorf("queue.limitsByPriorityClass", "", flotilla.ErrMalformed, "%v", err)
	}
	g, l, ll := encodeQuota(b.schema, q.Guaranteed), encodeQuota(b.schema, q.Limit), encodeQuota(b.schema, q.LendingLimit)
	return b.write(ctx, what, fence, false, 0, func(ctx context.Context, db querier) error {
		tag, err := db.Exec(ctx, stmt, q.Name, q.PriorityFactor, limits, q.Parent, g, l, ll)
		if err == nil && tag.RowsAffected() == 0 {
			return flotilla.Errorf("queue", q.Name, unchanged, "")
		}
		return err
	})
}

// DeleteQueue removes a queue's definition: backend.ErrNotFound when there
// is none, backend.ErrNotEmpty while it has live jobs. It locks the queue's
// row first (after the fence row, through a WithFence view), so that no
// Commit adds jobs to it meanwhile.
func (b *Backend) DeleteQueue(ctx context.Context, name string) error {
	return b.deleteQueue(ctx, name, nil)
}

// deleteQueue is DeleteQueue fenced by fence (nil: unfenced).
func (b *Backend) deleteQueue(ctx context.Context, name string, fence *uint64) error {
	if err := b.ready(ctx); err != nil {
		return err
	}
	return b.write(ctx, "deleting queue", fence, true, 0, func(ctx context.Context, db querier) error {
		var n string
		if err := db.QueryRow(ctx, "SELECT name FROM queues WHERE name = $1 FOR UPDATE", name).Scan(&n); err != nil {
			if errors.Is(err, pgx.ErrNoRows) {
				return flotilla.Errorf("queue", name, backend.ErrNotFound, "")
			}
			return err
		}
		var live int64
		if err := db.QueryRow(ctx, "SELECT count(*) FROM jobs WHERE queue = $1 AND live", name).Scan(&live); err != nil {
			return err
		}
		if live > 0 {
			return flotilla.Errorf("queue", name, backend.ErrNotEmpty, "%d live jobs", live)
		}
		_, err := db.Exec(ctx, "DELETE FROM queues WHERE name = $1", name)
		return err
	})
}

// scanQueue returns the reader of a queue row (queueColumns).
func (b *Backend) scanQueue(row pgx.CollectableRow) (flotilla.Queue, error) {
	var q flotilla.Queue
	var limits, g, l, ll []byte
	if err := row.Scan(&q.Name, &q.PriorityFactor, &limits, &q.Parent, &g, &l, &ll); err != nil {
		return q, err
	}
	if limits != nil {
		if err := json.Unmarshal(limits, &q.LimitsByPriorityClass); err != nil {
			return q, fmt.Errorf("queue %q: stored limits: %w", q.Name, err)
		}
	}
	var err error
	p := fmt.Sprintf("queue %q", q.Name)
	q.Guaranteed, q.Limit, q.LendingLimit, err = decodeQuotas(b.schema, p, g, l, ll)
	return q, err
}

// Queue returns one queue: backend.ErrNotFound when there is none.
func (b *Backend) Queue(ctx context.Context, name string) (flotilla.Queue, error) {
	if err := b.ready(ctx); err != nil {
		return flotilla.Queue{}, err
	}
	ctx, cancel := b.bound(ctx, 0)
	defer cancel()
	rows, _ := b.pool.Query(ctx, "SELECT "+queueColumns+" FROM queues WHERE name = $1", name)
	q, err := pgx.CollectExactlyOneRow(rows, b.scanQueue)
	if errors.Is(err, pgx.ErrNoRows) {
		return flotilla.Queue{}, flotilla.Errorf("queue", name, backend.ErrNotFound, "")
	}
	if err != nil {
		return flotilla.Queue{}, b.fail(ctx, "reading queue", err)
	}
	return q, nil
}

// ListQueues returns every queue sorted by name.
func (b *Backend) ListQueues(ctx context.Context) ([]flotilla.Queue, error) {
	if err := b.ready(ctx); err != nil {
		return nil, err
	}
	ctx, cancel := b.bound(ctx, 0)
	defer cancel()
	rows, _ := b.pool.Query(ctx, `SELECT `+queueColumns+` FROM queues ORDER BY name COLLATE "C"`)
	qs, err := pgx.CollectRows(rows, b.scanQueue)
	if err != nil {
		return nil, b.fail(ctx, "listing queues", err)
	}
	return qs, nil
}

// PutExecutor stores a cluster's report, replacing the previous one.
func (b *Backend) PutExecutor(ctx context.Context, e backend.Executor) error {
	return b.putExecutor(ctx, e, nil)
}

// putExecutor is PutExecutor fenced by fence (nil: unfenced).
func (b *Backend) putExecutor(ctx context.Context, e backend.Executor, fence *uint64) error {
	var errs []error
	if e.Cluster == "" {
		errs = append(errs, flotilla.Errorf("executor.cluster", "", flotilla.ErrRequired, ""))
	}
	if err := textProblem("executor.cluster", e.Cluster); err != nil {
		errs = append(errs, err)
	}
	seen := make(map[string]bool, len(e.Nodes))
	stored := make([]node, len(e.Nodes))
	for i := range e.Nodes {
		n := &e.Nodes[i]
		p := fmt.Sprintf("executor %q.nodes[%d]", e.Cluster, i)
		if err := n.Validate(b.schema); err != nil {
			errs = append(errs, err)
			continue
		}
		if n.Cluster != e.Cluster {
			errs = append(errs, flotilla.Errorf(p+".cluster", n.Cluster, flotilla.ErrInconsistent, "the report is cluster %q's", e.Cluster))
		}
		if seen[n.Name] {
			errs = append(errs, flotilla.Errorf(p+".name", n.Name, backend.ErrDuplicate, "in one report"))
		}
		seen[n.Name] = true
		if err := textProblem(p+".name", n.Name); err != nil {
			errs = append(errs, err)
		}
		s := node{Name: n.Name, Labels: n.Labels, Unschedulable: n.Unschedulable,
			Total: appendResources(nil, b.schema, n.Total)}
		for k, v := range n.Labels {
			for _, err := range []error{textProblem(p+".labels", k), textProblem(p+".labels."+k, v)} {
				if err != nil {
					errs = append(errs, err)
				}
			}
		}
		for k, t := range n.Taints {
			tp := fmt.Sprintf("%s.taints[%d]", p, k)
			for _, err := range []error{textProblem(tp+".key", t.Key), textProblem(tp+".value", t.Value), textProblem(tp+".effect", string(t.Effect))} {
				if err != nil {
					errs = append(errs, err)
				}
			}
			s.Taints = append(s.Taints, taint{Key: t.Key, Value: t.Value, Effect: t.Effect})
		}
		stored[i] = s
	}
	if err := timeProblem("executor.reported", e.Reported); err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	if err := b.ready(ctx); err != nil {
		return err
	}
	nodes, err := json.Marshal(stored)
	if err != nil {
		return fmt.Errorf("postgres: encoding nodes: %w", err)
	}
	return b.write(ctx, "storing executor", fence, false, len(e.Nodes), func(ctx context.Context, db querier) error {
		_, err := db.Exec(ctx, `INSERT INTO executors (cluster, reported, nodes, pool) VALUES ($1, $2, $3, $4)
			ON CONFLICT (cluster) DO UPDATE SET reported = EXCLUDED.reported, nodes = EXCLUDED.nodes, pool = EXCLUDED.pool`,
			e.Cluster, encodeTime(e.Reported), nodes, e.Pool)
		return err
	})
}

// ListExecutors returns every cluster's last report, sorted by cluster.
func (b *Backend) ListExecutors(ctx context.Context) ([]backend.Executor, error) {
	if err := b.ready(ctx); err != nil {
		return nil, err
	}
	ctx, cancel := b.bound(ctx, 0)
	defer cancel()
	rows, _ := b.pool.Query(ctx, `SELECT cluster, reported, nodes, pool FROM executors ORDER BY cluster COLLATE "C"`)
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (backend.Executor, error) {
		var e backend.Executor
		var reported *int64
		var raw []byte
		if err := row.Scan(&e.Cluster, &reported, &raw, &e.Pool); err != nil {
			return e, err
		}
		e.Reported = decodeTime(reported)
		var stored []node
		if err := json.Unmarshal(raw, &stored); err != nil {
			return e, fmt.Errorf("executor %q: stored nodes: %w", e.Cluster, err)
		}
		e.Nodes = make([]flotilla.Node, len(stored))
		for i, s := range stored {
			total, err := decodeResources(b.schema, s.Total, fmt.Sprintf("executor %q.nodes[%d].total", e.Cluster, i))
			if err != nil {
				return e, err
			}
			n := flotilla.Node{Name: s.Name, Cluster: e.Cluster, Labels: s.Labels, Total: total, Unschedulable: s.Unschedulable}
			for _, t := range s.Taints {
				n.Taints = append(n.Taints, flotilla.Taint{Key: t.Key, Value: t.Value, Effect: t.Effect})
			}
			e.Nodes[i] = n
		}
		return e, nil
	})
	if err != nil {
		return nil, b.fail(ctx, "listing executors", err)
	}
	return out, nil
}

// PutUsage stores every record atomically.
func (b *Backend) PutUsage(ctx context.Context, rs []backend.UsageRecord) error {
	return b.putUsage(ctx, rs, nil)
}

// putUsage is PutUsage fenced by fence (nil: unfenced).
func (b *Backend) putUsage(ctx context.Context, rs []backend.UsageRecord, fence *uint64) error {
	var errs []error
	seen := make(map[string]bool, len(rs))
	keys, values, ats := make([]string, len(rs)), make([][]byte, len(rs)), make([]*int64, len(rs))
	for i, r := range rs {
		p := fmt.Sprintf("usage[%d]", i)
		if r.Key == "" {
			errs = append(errs, flotilla.Errorf(p+".key", "", flotilla.ErrRequired, ""))
		} else if seen[r.Key] {
			errs = append(errs, flotilla.Errorf(p+".key", r.Key, backend.ErrDuplicate, "in one write"))
		}
		seen[r.Key] = true
		if err := textProblem(p+".key", r.Key); err != nil {
			errs = append(errs, err)
		}
		if len(r.Value) != b.schema.Len() {
			errs = append(errs, flotilla.Errorf(p+".value", strconv.Itoa(len(r.Value)), flotilla.ErrInconsistent,
				"want %d entries, one per resource", b.schema.Len()))
		}
		m := make(map[string]float64, len(r.Value))
		for k, v := range r.Value {
			if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
				errs = append(errs, flotilla.Errorf(fmt.Sprintf("%s.value[%d]", p, k), strconv.FormatFloat(v, 'g', -1, 64),
					flotilla.ErrOutOfRange, "want finite and non-negative"))
			} else if k < b.schema.Len() {
				m[b.schema.Name(k)] = v
			}
		}
		if err := timeProblem(p+".at", r.At); err != nil {
			errs = append(errs, err)
		}
		keys[i], ats[i] = r.Key, encodeTime(r.At)
		values[i], _ = json.Marshal(m) // finite floats always marshal
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	if err := b.ready(ctx); err != nil {
		return err
	}
	return b.write(ctx, "storing usage", fence, false, len(rs), func(ctx context.Context, db querier) error {
		_, err := db.Exec(ctx, `INSERT INTO usage (key, value, at)
			SELECT * FROM unnest($1::text[], $2::jsonb[], $3::bigint[])
			ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value, at = EXCLUDED.at`, keys, values, ats)
		return err
	})
}

// ListUsage returns every key's record, sorted by key.
func (b *Backend) ListUsage(ctx context.Context) ([]backend.UsageRecord, error) {
	if err := b.ready(ctx); err != nil {
		return nil, err
	}
	ctx, cancel := b.bound(ctx, 0)
	defer cancel()
	rows, _ := b.pool.Query(ctx, `SELECT key, value, at FROM usage ORDER BY key COLLATE "C"`)
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (backend.UsageRecord, error) {
		var r backend.UsageRecord
		var raw []byte
		var at *int64
		if err := row.Scan(&r.Key, &raw, &at); err != nil {
			return r, err
		}
		r.At = decodeTime(at)
		var m map[string]float64
		if err := json.Unmarshal(raw, &m); err != nil {
			return r, fmt.Errorf("usage %q: stored value: %w", r.Key, err)
		}
		r.Value = make([]float64, b.schema.Len())
		for name, v := range m {
			if i, ok := b.schema.Index(name); ok {
				r.Value[i] = v
			} else if v != 0 {
				return r, flotilla.Errorf(fmt.Sprintf("usage %q.value", r.Key), name, flotilla.ErrUnknownResource, "stored with %g", v)
			}
		}
		return r, nil
	})
	if err != nil {
		return nil, b.fail(ctx, "listing usage", err)
	}
	return out, nil
}
