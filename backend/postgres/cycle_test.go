package postgres

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/backend"
	"github.com/flotilla-sched/flotilla/backend/backendtest"
	"github.com/flotilla-sched/flotilla/events"
	"github.com/flotilla-sched/flotilla/scheduler"
	"github.com/flotilla-sched/flotilla/server"
)

// queryCounter is a pgx tracer that counts the statements sent and the
// rows the database returned (SELECT and RETURNING rows: what was read).
type queryCounter struct {
	mu      sync.Mutex
	queries int
	rows    int64
	verbs   map[string]int
}

// returning marks a query whose rows count as read: a SELECT, or a
// statement with RETURNING.
type returning struct{}

func (c *queryCounter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.queries++
	verb, _, _ := strings.Cut(strings.TrimSpace(d.SQL), " ")
	c.verbs[strings.ToUpper(verb)]++
	return context.WithValue(ctx, returning{}, strings.Contains(d.SQL, "RETURNING"))
}

func (c *queryCounter) TraceQueryEnd(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryEndData) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if r, _ := ctx.Value(returning{}).(bool); r || d.CommandTag.Select() {
		c.rows += d.CommandTag.RowsAffected()
	}
}

func (c *queryCounter) TraceCopyFromStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceCopyFromStartData) context.Context {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.queries++
	c.verbs["COPY"]++
	return ctx
}

func (c *queryCounter) TraceCopyFromEnd(context.Context, *pgx.Conn, pgx.TraceCopyFromEndData) {}

// reset zeroes the counts and returns them as they were.
func (c *queryCounter) reset() (queries int, rows int64, verbs map[string]int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	queries, rows, verbs = c.queries, c.rows, c.verbs
	c.queries, c.rows, c.verbs = 0, 0, map[string]int{}
	return queries, rows, verbs
}

// openCounted opens the backend at u with a query counter.
func openCounted(t testing.TB, u string) (*Backend, *queryCounter) {
	t.Helper()
	qc := &queryCounter{verbs: map[string]int{}}
	b, err := openTuned(context.Background(), u, backendtest.Schema(), func(c *pgxpool.Config) { c.ConnConfig.Tracer = qc })
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { b.Close() })
	return b, qc
}

// storeQueued stores n queued jobs of queue A (10 job sets, one cpu and
// 1 GiB each) in Commits of 1,000.
func storeQueued(t testing.TB, be backend.Backend, n int, t0 time.Time) {
	t.Helper()
	ctx := context.Background()
	if err := be.CreateQueue(ctx, flotilla.Queue{Name: "A"}); err != nil {
		t.Fatal(err)
	}
	const batch = 1000
	w := &backend.Write{Jobs: make([]backend.JobSpec, batch), Events: make([]events.Event, batch)}
	for done := 0; done < n; done += batch {
		k := min(batch, n-done)
		w.Jobs, w.Events = w.Jobs[:k], w.Events[:k]
		for j := range k {
			i := done + j
			id, set := fmt.Sprintf("job-%08d", i), fmt.Sprintf("set-%02d", i%10)
			w.Jobs[j] = backend.JobSpec{
				Job: &flotilla.Job{ID: id, Queue: "A", JobSet: set, PriorityClass: flotilla.ArmadaDefault,
					SubmitTime: t0.Add(time.Duration(i)), Requests: flotilla.Resources{1000, 1 << 30}},
				Principal: "alice", Runtime: time.Minute,
			}
			w.Events[j] = events.Event{Queue: "A", JobSet: set, Job: id, Type: events.Submitted, Time: t0}
		}
		if _, err := be.Commit(ctx, w); err != nil {
			t.Fatal(err)
		}
	}
}

// steadyWorld is a service on PostgreSQL over a backlog of queued jobs,
// one cluster full of running jobs: each step, the executor reports
// `turnover` of them succeeded, and a cycle leases as many new ones.
type steadyWorld struct {
	srv   *server.Server
	clock *fixedClock
	held  map[string]int // job → attempt, running on the cluster
}

func newSteadyWorld(t testing.TB, be backend.Backend, nodes int) *steadyWorld {
	t.Helper()
	ctx := context.Background()
	clock := &fixedClock{now: time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC).Add(time.Hour)}
	srv, err := server.New(ctx, server.Config{Scheduler: scheduler.DefaultConfig(backendtest.Schema()), Backend: be, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	total := backendtest.Schema().MustParse(map[string]string{"cpu": "32", "memory": "128Gi"})
	var ns []flotilla.Node
	for i := range nodes {
		ns = append(ns, flotilla.Node{Name: fmt.Sprintf("n%04d", i), Cluster: "c1", Total: total})
	}
	w := &steadyWorld{srv: srv, clock: clock, held: map[string]int{}}
	w.report(t, 0, ns)
	return w
}

// report reports every held job running (the first `done` of them
// succeeded) and takes the reply's new leases.
func (w *steadyWorld) report(t testing.TB, done int, nodes []flotilla.Node) {
	t.Helper()
	r := &server.Report{Cluster: "c1", Nodes: nodes}
	for id, a := range w.held {
		p := server.PhaseRunning
		if done > 0 {
			p = server.PhaseSucceeded
			done--
			delete(w.held, id)
		}
		r.Jobs = append(r.Jobs, server.JobReport{Job: id, Attempt: a, Phase: p})
	}
	reply, err := w.srv.Report(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range reply.Leases {
		w.held[l.Job.ID] = l.Attempt
	}
}

// cycle runs one cycle a second after the last and returns how many jobs
// it leased.
func (w *steadyWorld) cycle(t testing.TB) int {
	t.Helper()
	w.clock.now = w.clock.now.Add(time.Second)
	rep, err := w.srv.Cycle(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return rep.Leased
}

// TestSteadyCycleOnPostgresReadsOnlyTheJobsItLeases: with the leader's
// memory authoritative, a steady-state cycle reads nothing from the
// database but what its one commit locks (the fence row, the queue, the
// jobs it leases, their job sets' numbers) and stores the usage history:
// the same statements and rows with a backlog of 2,000 queued jobs as with
// 20,000.
func TestSteadyCycleOnPostgresReadsOnlyTheJobsItLeases(t *testing.T) {
	var counts [2][2]int64
	for i, queued := range []int{2_000, 20_000} {
		be, qc := openCounted(t, freshSchema(t))
		storeQueued(t, be, queued, time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC))
		w := newSteadyWorld(t, be, 10) // 320 cores
		w.cycle(t)
		w.report(t, 0, nil)
		const turnover = 32
		for range 3 {
			w.report(t, turnover, nil)
			qc.reset()
			if leased := w.cycle(t); leased != turnover {
				t.Fatalf("a steady cycle leased %d jobs, want %d", leased, turnover)
			}
			q, rows, verbs := qc.reset()
			t.Logf("%d queued: a steady cycle leasing %d made %d statements %v and read %d rows", queued, turnover, q, verbs, rows)
			// The jobs leased, their 10 job sets' numbers, the fence row
			// (read, then share-locked) and the queue's row.
			if want := int64(turnover + 10 + 3); rows != want {
				t.Errorf("%d queued: a steady cycle read %d rows, want %d: the %d jobs it leased, their 10 job sets, the fence twice and the queue",
					queued, rows, want, turnover)
			}
			counts[i] = [2]int64{int64(q), rows}
		}
	}
	if counts[0] != counts[1] {
		t.Errorf("statements and rows of a steady cycle: %v with 2,000 queued, %v with 20,000: want the same", counts[0], counts[1])
	}
}

// BenchmarkSteadyCycleWith1MQueuedJobs: a steady-state cycle of the
// service on PostgreSQL over 1,000,000 queued jobs (one cluster of 100 ×
// 32-core nodes, full; each op, the executor reports 320 jobs succeeded,
// not timed, and the cycle leases 320 new ones). It reports the
// statements sent and the rows read per cycle, counted with a pgx tracer.
// Storing the backlog takes about a minute.
func BenchmarkSteadyCycleWith1MQueuedJobs(b *testing.B) {
	const queued, turnover = 1_000_000, 320
	be, qc := openCounted(b, freshSchema(b))
	storeQueued(b, be, queued, time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC))
	w := newSteadyWorld(b, be, 100)
	w.cycle(b)
	w.report(b, 0, nil)
	var queries, rows int64
	var elapsed time.Duration
	for b.Loop() {
		b.StopTimer()
		w.report(b, turnover, nil)
		qc.reset()
		b.StartTimer()
		start := time.Now()
		if leased := w.cycle(b); leased != turnover {
			b.Fatalf("a steady cycle leased %d, want %d", leased, turnover)
		}
		elapsed += time.Since(start)
		q, r, _ := qc.reset()
		queries += int64(q)
		rows += r
	}
	b.ReportMetric(float64(queries)/float64(b.N), "queries/cycle")
	b.ReportMetric(float64(rows)/float64(b.N), "rows-read/cycle")
}
