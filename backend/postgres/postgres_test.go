package postgres

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/backend"
	"github.com/flotilla-sched/flotilla/backend/backendtest"
	"github.com/flotilla-sched/flotilla/events"
	"github.com/flotilla-sched/flotilla/server"
)

// serverURL is the test server's URL from FLOTILLA_POSTGRES_URL (which
// scripts/test sets, starting a server with scripts/postgres). Without
// it the test is skipped, except under CI=true, where it fails.
func serverURL(t testing.TB) string {
	t.Helper()
	u := os.Getenv("FLOTILLA_POSTGRES_URL")
	if u == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("FLOTILLA_POSTGRES_URL is not set under CI=true: run the tests with scripts/test, which starts PostgreSQL")
		}
		t.Skip("FLOTILLA_POSTGRES_URL is not set: run scripts/test, or eval \"$(scripts/postgres start)\" first")
	}
	return u
}

// freshSchema creates an empty schema on the test server, dropped when
// the test ends, and returns a URL whose connections use it.
func freshSchema(t testing.TB) string {
	t.Helper()
	base := serverURL(t)
	var rnd [6]byte
	_, _ = rand.Read(rnd[:])
	name := "flotilla_test_" + hex.EncodeToString(rnd[:])
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatalf("connecting to %s: %v", base, err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+name); err != nil {
		t.Fatalf("creating schema %s: %v", name, err)
	}
	t.Cleanup(func() {
		conn, err := pgx.Connect(ctx, base)
		if err != nil {
			t.Errorf("connecting to drop schema %s: %v", name, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP SCHEMA "+name+" CASCADE"); err != nil {
			t.Errorf("dropping schema %s: %v", name, err)
		}
	})
	return withSearchPath(t, base, name)
}

// withSearchPath adds search_path=schema to a URL or key=value string.
func withSearchPath(t testing.TB, base, schema string) string {
	t.Helper()
	if !strings.Contains(base, "://") {
		return base + " search_path=" + schema
	}
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("FLOTILLA_POSTGRES_URL %q: %v", base, err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

// open opens a backend over the suite's schema at u, closed when the test
// ends.
func open(t testing.TB, u string) *Backend {
	t.Helper()
	b, err := Open(context.Background(), u, backendtest.Schema())
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

func TestConformance(t *testing.T) {
	serverURL(t)
	backendtest.Run(t, func(t *testing.T) backend.Backend {
		return open(t, freshSchema(t))
	})
}

// migrationsApplied counts the rows of schema_migrations at u.
func migrationsApplied(t *testing.T, b *Backend) int {
	t.Helper()
	var n int
	if err := b.pool.QueryRow(context.Background(), "SELECT count(*) FROM schema_migrations").Scan(&n); err != nil {
		t.Fatalf("counting migrations: %v", err)
	}
	return n
}

func TestOpenTwiceAppliesEachMigrationOnceAndKeepsTheData(t *testing.T) {
	ctx := context.Background()
	u := freshSchema(t)
	ms, err := migrations()
	if err != nil {
		t.Fatal(err)
	}
	first := open(t, u)
	if err := first.CreateQueue(ctx, flotilla.Queue{Name: "A", PriorityFactor: 2}); err != nil {
		t.Fatal(err)
	}
	first.Close()
	second := open(t, u)
	if n := migrationsApplied(t, second); n != len(ms) {
		t.Errorf("schema_migrations has %d rows after two Opens, want %d", n, len(ms))
	}
	q, err := second.Queue(ctx, "A")
	if err != nil || q.PriorityFactor != 2 {
		t.Errorf("Queue(A) after reopening = %+v, %v; want it as created", q, err)
	}
}

func TestConcurrentOpensApplyEachMigrationOnce(t *testing.T) {
	u := freshSchema(t)
	ms, err := migrations()
	if err != nil {
		t.Fatal(err)
	}
	const n = 6
	bs := make([]*Backend, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { bs[i], errs[i] = Open(context.Background(), u, backendtest.Schema()) })
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil {
			t.Errorf("Open %d of %d concurrent: %v", i, n, errs[i])
			continue
		}
		defer bs[i].Close()
	}
	if t.Failed() {
		return
	}
	if got := migrationsApplied(t, bs[0]); got != len(ms) {
		t.Errorf("schema_migrations has %d rows, want %d", got, len(ms))
	}
}

func TestMigrationsAreNumberedFromOneWithoutGaps(t *testing.T) {
	ms, err := migrations()
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) == 0 || ms[0].name != "0001_init.sql" {
		t.Fatalf("migrations = %v, want 0001_init.sql first", ms)
	}
}

func TestBackendClosedWhileLiveJobsReadsReturnsErrClosed(t *testing.T) {
	ctx := context.Background()
	b := open(t, freshSchema(t))
	if err := b.CreateQueue(ctx, flotilla.Queue{Name: "A"}); err != nil {
		t.Fatal(err)
	}
	submitN(t, b, "A", "s", 0, 2*livePage+10)
	seen := 0
	err := b.LiveJobs(ctx, func(backend.Record) error {
		seen++
		if seen == 1 {
			b.Close()
		}
		return nil
	})
	if !errors.Is(err, backend.ErrClosed) {
		t.Errorf("LiveJobs with Close during its first page: error %v, want ErrClosed", err)
	}
	if seen != livePage {
		t.Errorf("LiveJobs visited %d records, want the first page's %d", seen, livePage)
	}
	if _, err := b.Job(ctx, "j00000"); !errors.Is(err, backend.ErrClosed) {
		t.Errorf("Job after Close: %v, want ErrClosed", err)
	}
}

// submitN commits jobs j<from>…j<from+n-1> to q/s with their submitted
// events, in writes of at most 1,000.
func submitN(t testing.TB, b backend.Backend, q, s string, from, n int) {
	t.Helper()
	t0 := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	for lo := from; lo < from+n; lo += 1000 {
		w := &backend.Write{}
		for i := lo; i < min(lo+1000, from+n); i++ {
			id := fmt.Sprintf("j%05d", i)
			w.Jobs = append(w.Jobs, backend.JobSpec{Job: &flotilla.Job{ID: id, Queue: q, JobSet: s,
				SubmitTime: t0, Requests: flotilla.Resources{1000, 1 << 30}}})
			w.Events = append(w.Events, events.Event{Queue: q, JobSet: s, Job: id, Type: events.Submitted, Time: t0})
		}
		if _, err := b.Commit(context.Background(), w); err != nil {
			t.Fatalf("Commit: %v", err)
		}
	}
}

// TestEventsWithoutALimitReadsTheWholeLogPageByPage: a log longer than a
// page comes back whole and in order, from any starting point, each page a
// call of its own bound.
func TestEventsWithoutALimitReadsTheWholeLogPageByPage(t *testing.T) {
	ctx := context.Background()
	b := open(t, freshSchema(t))
	if err := b.CreateQueue(ctx, flotilla.Queue{Name: "A"}); err != nil {
		t.Fatal(err)
	}
	const n = eventsPage + 3
	submitN(t, b, "A", "s", 0, n)
	for _, from := range []uint64{0, 2, n - eventsPage, n - eventsPage + 1, n, n + 1} {
		evs, err := b.Events(ctx, "A", "s", from, 0)
		if err != nil {
			t.Fatalf("Events from %d: %v", from, err)
		}
		first := max(from, 1)
		want := 0
		if first <= n {
			want = int(n - first + 1)
		}
		if len(evs) != want {
			t.Fatalf("Events from %d: %d events, want %d", from, len(evs), want)
		}
		for i, e := range evs {
			if e.Seq != first+uint64(i) || e.Job != fmt.Sprintf("j%05d", first+uint64(i)-1) {
				t.Fatalf("Events from %d: [%d] is seq %d of %s, want seq %d", from, i, e.Seq, e.Job, first+uint64(i))
			}
		}
	}
}

func TestExecutorsAndQueuesReadBackWhole(t *testing.T) {
	ctx := context.Background()
	b := open(t, freshSchema(t))
	reported := time.Date(2026, 11, 22, 10, 0, 0, 987654321, time.FixedZone("x", 3600))
	e := backend.Executor{Cluster: "c1", Reported: reported, Nodes: []flotilla.Node{
		{Name: "n1", Cluster: "c1", Total: flotilla.Resources{32000, 1 << 40}, Labels: map[string]string{"zone": "a", "gpu": "x"},
			Taints: []flotilla.Taint{{Key: "gpu", Value: "true", Effect: flotilla.TaintNoSchedule}}, Unschedulable: true},
		{Name: "n2", Cluster: "c1", Total: flotilla.Resources{1, 0}},
	}}
	if err := b.PutExecutor(ctx, e); err != nil {
		t.Fatal(err)
	}
	es, err := b.ListExecutors(ctx)
	if err != nil || len(es) != 1 {
		t.Fatalf("ListExecutors = %v, %v", es, err)
	}
	got := es[0]
	if !got.Reported.Equal(reported) || got.Reported.Location() != time.UTC || len(got.Nodes) != 2 {
		t.Fatalf("executor read back = %+v, want %+v", got, e)
	}
	for i, n := range got.Nodes {
		w := e.Nodes[i]
		if n.Name != w.Name || n.Cluster != w.Cluster || !n.Total.Equal(w.Total) || !maps.Equal(n.Labels, w.Labels) ||
			!slices.Equal(n.Taints, w.Taints) || n.Unschedulable != w.Unschedulable {
			t.Errorf("node %d read back = %+v, want %+v", i, n, w)
		}
	}
	q := flotilla.Queue{Name: "A", PriorityFactor: 0.5,
		LimitsByPriorityClass: map[string]map[string]float64{"armada-default": {"cpu": 0.25, "memory": 1}}}
	if err := b.CreateQueue(ctx, q); err != nil {
		t.Fatal(err)
	}
	gq, err := b.Queue(ctx, "A")
	if err != nil || gq.PriorityFactor != 0.5 || gq.LimitsByPriorityClass["armada-default"]["cpu"] != 0.25 ||
		gq.LimitsByPriorityClass["armada-default"]["memory"] != 1 {
		t.Errorf("Queue(A) = %+v, %v; want %+v", gq, err, q)
	}
}

// withParam adds key=value to a postgres:// URL.
func withParam(t testing.TB, base, key, value string) string {
	t.Helper()
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("%q: %v", base, err)
	}
	q := u.Query()
	q.Set(key, value)
	u.RawQuery = q.Encode()
	return u.String()
}

func TestOpenWhenNoServerListensIsErrUnavailable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	_, err = Open(context.Background(), "postgres://postgres@"+addr+"/postgres?sslmode=disable", backendtest.Schema())
	if !errors.Is(err, backend.ErrUnavailable) {
		t.Errorf("Open with nothing listening: error %v, want ErrUnavailable", err)
	}
}

func TestOpenOnAServerThatNeverAnswersIsErrUnavailableWithinTheConnectTimeout(t *testing.T) {
	// A listener that accepts (in the kernel's backlog) and never speaks.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	u := "postgres://postgres@" + ln.Addr().String() + "/postgres?sslmode=disable&connect_timeout=1"
	start := time.Now()
	_, err = Open(context.Background(), u, backendtest.Schema())
	if !errors.Is(err, backend.ErrUnavailable) {
		t.Errorf("Open on a silent server: error %v, want ErrUnavailable", err)
	}
	if d := time.Since(start); d > 4*time.Second {
		t.Errorf("Open on a silent server with connect_timeout=1 took %s", d)
	}
}

func TestConnectTimeoutDefaultsWhenTheURLSetsNone(t *testing.T) {
	for _, c := range []struct {
		url  string
		want time.Duration
	}{
		{"postgres://postgres@127.0.0.1:1/postgres", DefaultConnectTimeout},
		{"postgres://postgres@127.0.0.1:1/postgres?connect_timeout=2", 2 * time.Second},
	} {
		cfg, _, err := poolConfig(c.url)
		if err != nil {
			t.Fatal(err)
		}
		if got := cfg.ConnConfig.ConnectTimeout; got != c.want {
			t.Errorf("%s: connect timeout %s, want %s", c.url, got, c.want)
		}
	}
}

func TestCallTimeoutIsTheURLsCallTimeoutDefaultWhenAbsentAndNotSentToTheServer(t *testing.T) {
	const base = "postgres://postgres@127.0.0.1:1/postgres"
	for _, c := range []struct {
		param string // "": none
		want  time.Duration
		err   error // the FieldError's sentinel (field url.call_timeout)
	}{
		{"", DefaultCallTimeout, nil},
		{"3", 3 * time.Second, nil},
		{"1500ms", 1500 * time.Millisecond, nil},
		{"2m", 2 * time.Minute, nil},
		{"0", 0, flotilla.ErrOutOfRange},
		{"-1s", 0, flotilla.ErrOutOfRange},
		{"soon", 0, flotilla.ErrMalformed},
		{"24h", 24 * time.Hour, nil},
		{"24h0m1s", 0, flotilla.ErrOutOfRange},
		{"86401", 0, flotilla.ErrOutOfRange},
		{"99999999999999", 0, flotilla.ErrOutOfRange},
		{"1e3", 0, flotilla.ErrMalformed},
	} {
		u := base
		if c.param != "" {
			u += "?call_timeout=" + url.QueryEscape(c.param)
		}
		for _, s := range []string{u, "host=127.0.0.1 port=1 user=postgres call_timeout=" + c.param} {
			if c.param == "" && !strings.Contains(s, "://") {
				continue
			}
			cfg, got, err := poolConfig(s)
			if c.err != nil {
				var fe *flotilla.FieldError
				if !errors.As(err, &fe) || fe.Field != "url.call_timeout" || fe.Value != c.param || !errors.Is(err, c.err) {
					t.Errorf("%s: error %v, want a FieldError url.call_timeout %q %v", s, err, c.param, c.err)
				}
				continue
			}
			if err != nil || got != c.want {
				t.Errorf("%s: call timeout %s, %v; want %s", s, got, err, c.want)
				continue
			}
			if v, ok := cfg.ConnConfig.RuntimeParams["call_timeout"]; ok {
				t.Errorf("%s: call_timeout=%q would be sent to the server as a run-time parameter", s, v)
			}
		}
	}
}

func TestConnectionsTheServerEndsAreErrUnavailableAndTheNextCallReconnects(t *testing.T) {
	ctx := context.Background()
	name := fmt.Sprintf("flotilla_test_%d", time.Now().UnixNano())
	u := withParam(t, withParam(t, freshSchema(t), "application_name", name), "pool_max_conns", "1")
	b := open(t, u)
	if err := b.CreateQueue(ctx, flotilla.Queue{Name: "A"}); err != nil {
		t.Fatal(err)
	}
	// The server ends the backend's one connection (as it does to every
	// connection when it shuts down).
	admin, err := pgx.Connect(ctx, serverURL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	var ended int
	if err := admin.QueryRow(ctx, "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = $1", name).Scan(&ended); err != nil {
		t.Fatal(err)
	}
	if ended != 1 {
		t.Fatalf("ended %d connections, want the pool's 1", ended)
	}
	if _, err := b.ListQueues(ctx); !errors.Is(err, backend.ErrUnavailable) {
		t.Errorf("ListQueues on a connection the server ended: error %v, want ErrUnavailable", err)
	}
	qs, err := b.ListQueues(ctx)
	if err != nil || len(qs) != 1 {
		t.Errorf("ListQueues afterwards: %v, %v; want queue A", qs, err)
	}
}

// silentCeiling is how long a call on a server gone silent may take in the
// tests, whose call timeout is 1 s: generous, for a loaded machine; the
// kernel's TCP timeout it replaces is many minutes.
const silentCeiling = 15 * time.Second

// submitWrite is a write submitting jobs ids to A/s.
func submitWrite(ids ...string) *backend.Write {
	w := &backend.Write{}
	for _, id := range ids {
		o := oneJob(id)
		w.Jobs, w.Events = append(w.Jobs, o.Jobs...), append(w.Events, o.Events...)
	}
	return w
}

// TestCallsOnAServerGoneSilentAreErrUnavailableWithinTheCallTimeout: with
// the server silent on open connections (a partition: no RST, no FIN),
// a Commit and a read each fail with ErrUnavailable within the call
// timeout, storing nothing; once the network heals, the same Commit is
// applied, numbered after the last one, with no gap.
func TestCallsOnAServerGoneSilentAreErrUnavailableWithinTheCallTimeout(t *testing.T) {
	ctx := context.Background()
	px, u := throughProxy(t, withParam(t, freshSchema(t), "call_timeout", "1s"))
	b := open(t, u)
	if err := b.CreateQueue(ctx, flotilla.Queue{Name: "A"}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Commit(ctx, submitWrite("a")); err != nil {
		t.Fatal(err)
	}
	px.silence()
	w := submitWrite("b1", "b2")
	start := time.Now()
	_, err := b.Commit(ctx, w)
	if d := time.Since(start); !errors.Is(err, backend.ErrUnavailable) || d > silentCeiling {
		t.Errorf("Commit on a silent server: error %v after %s; want ErrUnavailable within the call timeout", err, d)
	}
	start = time.Now()
	_, err = b.ListQueues(ctx)
	if d := time.Since(start); !errors.Is(err, backend.ErrUnavailable) || d > silentCeiling {
		t.Errorf("ListQueues on a silent server: error %v after %s; want ErrUnavailable within the call timeout", err, d)
	}
	px.heal()
	out, err := b.Commit(ctx, w)
	if err != nil || len(out) != 2 || out[0].Seq != 2 || out[1].Seq != 3 {
		t.Fatalf("the same Commit once healed = %+v, %v; want applied with seqs 2 and 3", out, err)
	}
	if r, err := b.Job(ctx, "b2"); err != nil || r.State.State != events.Queued {
		t.Errorf("Job(b2) once healed = %+v, %v; want it queued", r.State, err)
	}
}

// TestACommitCutOffBySilenceAtCOMMITIsWholeOrAbsentOnceHealed: the
// network goes silent just before COMMIT is sent. Commit returns
// ErrOutcomeUnknown within the call timeout; once healed, the write is
// either wholly applied (the held COMMIT arrives) or not at all (the
// connection was lost), its jobs and events together, and the job set's
// log stays gap-free.
func TestACommitCutOffBySilenceAtCOMMITIsWholeOrAbsentOnceHealed(t *testing.T) {
	for _, c := range []struct {
		name string
		heal func(*partitionProxy)
		want int // the cut-off Commit's jobs stored; -1: 0 or 3
	}{
		{"the held COMMIT arrives", (*partitionProxy).heal, -1},
		{"the connection is lost", (*partitionProxy).healLosing, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			px, u := throughProxy(t, withParam(t, freshSchema(t), "call_timeout", "1s"))
			b := open(t, u)
			if err := b.CreateQueue(ctx, flotilla.Queue{Name: "A"}); err != nil {
				t.Fatal(err)
			}
			if _, err := b.Commit(ctx, submitWrite("a")); err != nil {
				t.Fatal(err)
			}
			b.beforeCommit = func(*pgconn.PgConn) { px.silence() }
			start := time.Now()
			_, err := b.Commit(ctx, submitWrite("c1", "c2", "c3"))
			if d := time.Since(start); !errors.Is(err, backend.ErrOutcomeUnknown) || d > silentCeiling {
				t.Errorf("Commit cut off at COMMIT: error %v after %s; want ErrOutcomeUnknown within the call timeout", err, d)
			}
			b.beforeCommit = nil
			c.heal(px)
			// Into the same job set: it waits for the cut-off
			// transaction's end (the job set's row is locked), whichever
			// way it ended.
			out, err := b.Commit(ctx, submitWrite("d"))
			if err != nil {
				t.Fatalf("Commit once healed: %v", err)
			}
			var jobs, evs, maxSeq, seqs int
			if err := b.pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM jobs WHERE id LIKE 'c%'),
				(SELECT count(*) FROM events WHERE job LIKE 'c%'), (SELECT max(seq) FROM events), (SELECT count(*) FROM events)`).
				Scan(&jobs, &evs, &maxSeq, &seqs); err != nil {
				t.Fatal(err)
			}
			t.Logf("the cut-off Commit's 3 jobs: %d stored, its events: %d", jobs, evs)
			if !(jobs == 0 && evs == 0 || jobs == 3 && evs == 3) || c.want >= 0 && jobs != c.want {
				t.Errorf("after the cut-off Commit: %d of its 3 jobs and %d of its 3 events stored; want all or none (%d)", jobs, evs, c.want)
			}
			if maxSeq != seqs || uint64(maxSeq) != out[0].Seq {
				t.Errorf("the log holds %d events numbered up to %d, the last Commit's is %d; want 1…n without a gap", seqs, maxSeq, out[0].Seq)
			}
		})
	}
}

// TestServiceOverASilentDatabaseFailsCallsWithinTheCallTimeoutAndCarriesOn:
// the service over a database gone silent answers a submit and a cycle
// with ErrUnavailable (the API's 503) within the call timeout, so its lock
// is free again (a call that needs the lock and not the database is
// answered meanwhile); once the network heals the same submit is stored
// and the next cycle leases every job.
func TestServiceOverASilentDatabaseFailsCallsWithinTheCallTimeoutAndCarriesOn(t *testing.T) {
	ctx := context.Background()
	px, u := throughProxy(t, withParam(t, freshSchema(t), "call_timeout", "1s"))
	b := open(t, u)
	clock := &fixedClock{now: time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)}
	srv := newServer(t, b, clock, "job")
	if err := srv.CreateQueue(ctx, flotilla.Queue{Name: "A"}); err != nil {
		t.Fatal(err)
	}
	total := backendtest.Schema().MustParse(map[string]string{"cpu": "4", "memory": "16Gi"})
	if _, err := srv.Report(ctx, &server.Report{Cluster: "c1", Nodes: []flotilla.Node{{Name: "n1", Cluster: "c1", Total: total}}}); err != nil {
		t.Fatal(err)
	}
	submit := func(clientID string) ([]string, error) {
		return srv.SubmitJSON(ctx, []byte(`{"queue": "A", "jobSet": "s", "jobs": [
			{"count": 2, "requests": {"cpu": "1", "memory": "1Gi"}, "clientId": "`+clientID+`"}]}`))
	}
	if _, err := submit("first"); err != nil {
		t.Fatal(err)
	}
	px.silence()
	submitted, answered := make(chan error, 1), make(chan error, 1)
	go func() { _, err := submit("second"); submitted <- err }()
	go func() { _, err := srv.Queue(ctx, "A"); answered <- err }()
	ceiling := time.After(2 * silentCeiling)
	for range 2 {
		select {
		case err := <-submitted:
			if !errors.Is(err, backend.ErrUnavailable) {
				t.Errorf("Submit over a silent database: %v, want ErrUnavailable", err)
			}
		case err := <-answered:
			if err != nil {
				t.Errorf("Queue(A), from memory, while the database is silent: %v", err)
			}
		case <-ceiling:
			t.Fatalf("Submit over a silent database, or a Queue call beside it, unanswered after %s", 2*silentCeiling)
		}
	}
	clock.now = clock.now.Add(time.Second)
	if _, err := srv.Cycle(ctx); !errors.Is(err, backend.ErrUnavailable) {
		t.Errorf("Cycle over a silent database: %v, want ErrUnavailable", err)
	}
	px.heal()
	if ids, err := submit("second"); err != nil || len(ids) != 2 {
		t.Fatalf("the same Submit once healed: %v, %v", ids, err)
	}
	clock.now = clock.now.Add(time.Second)
	rep, err := srv.Cycle(ctx)
	if err != nil || rep.Leased != 4 {
		t.Fatalf("Cycle once healed: %+v, %v; want the 4 jobs leased", rep, err)
	}
	if q, err := srv.Queue(ctx, "A"); err != nil || q.Queued != 0 || q.Leased != 4 {
		t.Errorf("Queue(A) once healed: %+v, %v; want 4 leased", q, err)
	}
}

func TestErrorsTheServerRefusesAreNotErrUnavailable(t *testing.T) {
	ctx := context.Background()
	b := open(t, freshSchema(t))
	var err error
	_, err = b.pool.Exec(ctx, "SELECT no_such_column FROM queues")
	if err == nil || unavailable(err) {
		t.Errorf("a statement the server refuses: %v, classified unavailable", err)
	}
	_, err = Open(ctx, withParam(t, serverURL(t), "search_path", "x")+"&dbname=no_such_database", backendtest.Schema())
	if err == nil || errors.Is(err, backend.ErrUnavailable) {
		t.Errorf("Open on a database that does not exist: %v, want an error that is not ErrUnavailable", err)
	}
}

func TestLeaseConformance(t *testing.T) {
	serverURL(t)
	backendtest.RunLeases(t, func(t *testing.T) (backend.Backend, func(time.Duration)) {
		b := open(t, freshSchema(t))
		var mu sync.Mutex
		now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
		b.leaseNow = func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
		return b, func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	})
}

// TestLeadRunsOnTheDatabaseClock: without the tests' clock, Lead and
// Resign use the database's now(): a lease taken lasts the ttl from the
// call, a second process does not lead while it lives, and takes it with a
// higher token once the holder resigns.
func TestLeadRunsOnTheDatabaseClock(t *testing.T) {
	b := open(t, freshSchema(t))
	ctx := context.Background()
	a, err := b.Lead(ctx, "a", "http://a", time.Minute)
	if err != nil || !a.Leading || a.Expires.Sub(a.Now) != time.Minute {
		t.Fatalf("Lead(a): %+v, %v; want leading for a minute", a, err)
	}
	if d := time.Since(a.Now); d < -time.Minute || d > time.Minute {
		t.Errorf("the lease's Now %s is not the database's clock (this machine's is %s)", a.Now, time.Now())
	}
	c, err := b.Lead(ctx, "c", "http://c", time.Minute)
	if err != nil || c.Leading || c.Holder != "a" {
		t.Fatalf("Lead(c) while a leads: %+v, %v", c, err)
	}
	if err := b.Resign(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	c, err = b.Lead(ctx, "c", "http://c", time.Minute)
	if err != nil || !c.Leading || c.Token <= a.Token {
		t.Fatalf("Lead(c) after a resigned: %+v, %v; want leading with a token above %d", c, err, a.Token)
	}
}
