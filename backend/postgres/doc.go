// Package postgres is a backend.Backend on PostgreSQL (through pgx's
// connection pool), for a service whose state must outlive its process. It
// passes the conformance suite, backend/backendtest, unchanged.
//
//	b, err := postgres.Open(ctx, "postgres://user@host/db", schema)
//	defer b.Close()
//	srv, err := server.New(ctx, server.Config{Backend: b, ...})
//
// It is a module of its own (github.com/flotilla-sched/flotilla/backend/postgres)
// so that the core module takes no database dependency.
//
// # Schema
//
// Open applies the SQL migrations embedded in the package
// (migrations/NNNN_name.sql), in order, each in its own transaction, and
// records each in the table schema_migrations (version, name,
// applied_at); it holds a PostgreSQL advisory lock meanwhile, so
// concurrent Opens apply each migration once. A database migrated by a
// newer program (a version this one lacks) is refused. The tables live in
// the first schema of the connection's search_path (a search_path
// parameter in the URL chooses it):
//
//   - queues (name, priority_factor, limits): limits is the JSON object
//     of LimitsByPriorityClass, or NULL.
//   - jobs: one row per job, its id the key: the spec (queue, job_set,
//     priority_class, priority, submit_time, requests, node_selector,
//     tolerations, avoid_clusters, gang_id, gang_cardinality,
//     gang_uniformity, client_id, principal, grace, deadline, runtime,
//     spec_exit_code, gang_topology, gang_required, gang_preferred: the
//     gang's flotilla.GangTopology, empty when not set; pools: NULL for
//     every pool) and the state its events left it in (state,
//     attempts, cancel_requested, cluster, node, failed_clusters,
//     submitted, leased, finished, reason, exit_code, priority_now: the
//     priority a reprioritized event gave, NULL when none did; retry: the
//     retries per rule, last rule and nodes avoided, JSON, NULL when
//     none) with live, true
//     while the state is not terminal. A unique index on (queue,
//     client_id) makes client ids unique per queue; a partial index on
//     (queue, id) of the live jobs serves LiveJobs and DeleteQueue; one
//     on (queue, job_set, state, submit time, id) of the ended jobs
//     serves EndedJobs (migration 8).
//   - events (queue, job_set, seq, time, job, type, cluster, node,
//     attempt, reason, exit_code, requeued, priority, rule, avoid_node),
//     keyed by (queue, job_set, seq).
//   - cordons (kind, name): the queues and clusters an operator
//     cordoned.
//   - retry_policies (queue, policy): each queue's retry policy, its
//     JSON form (migration 5).
//   - job_sets (queue, name, last_seq): each job set's last sequence
//     number, kept when its queue is deleted so that a queue created again
//     continues its logs; its primary key serves JobSetNames.
//   - ended_counts (queue, job_set, state, n): each job set's ended jobs
//     per terminal state, kept by the write that ends them, in its
//     transaction (migration 9; EndedCounts).
//   - fence (one row, biased): the highest fencing token applied, stored
//     as token − 2^63 so that bigint order is the tokens' order.
//   - executors (cluster, reported, nodes, pool: ” for the default
//     pool) and usage (key, value, at).
//   - leader (one row: holder, address, token, expires): the leader
//     lease (migration 2).
//
// Times are Unix nanoseconds (bigint; NULL is the zero time, so times run
// from 1678 to 2262, and a time outside is refused with a FieldError),
// durations nanoseconds. Resource amounts (a job's requests, a node's
// total, a usage record's value) are JSON objects keyed by resource name,
// so the service's resource schema can grow without a migration: a
// resource the stored data lacks reads as zero, and a stored non-zero
// amount of a resource the schema lacks is an error
// (flotilla.ErrUnknownResource) when read. Text columns hold UTF-8
// without NUL bytes; other strings are refused with a FieldError
// (flotilla.ErrMalformed) before anything is written.
//
// # Commit
//
// A Commit is one transaction. Its input is checked first without the
// database, as backend/memory checks it. Then, in the transaction: the
// fence row is read and, when the write's fence is higher, raised (else
// share-locked, so that writers of one leader do not wait for each
// other); the queues the events name are share-locked (DeleteQueue
// locks its queue's row exclusively, so it never deletes a queue a Commit
// is adding jobs to); new jobs whose id or client id is stored are
// refused; the stored jobs the events name are read and locked in id
// order; each event is applied with events.Transition. Only then are
// sequence numbers taken: one upsert of the job sets' rows, in (queue,
// name) order, adds each set's event count to its last_seq, so numbers
// are gap-free and a refused write (rolled back) consumes none. New jobs
// and the events are written with COPY, and the stored jobs' new states
// with one UPDATE over arrays. Every Commit takes its locks in the same
// order (fence, queues, job sets, jobs), so concurrent Commits wait but
// do not deadlock.
//
// # Fenced queue, executor and usage writes
//
// Backend implements backend.Fenced: WithFence(token) returns a view
// whose CreateQueue, UpdateQueue, DeleteQueue, the group writes,
// PutExecutor, PutUsage, PutCordon and PutRetryPolicy
// each run in one transaction that checks the fence row first, as Commit
// does (refused with backend.ErrFenced below the highest applied fence;
// raised to the token when above it, else share-locked), then writes; a
// refused write rolls back and raises nothing. The fence row comes first,
// then the queue's row, in Commit's lock order. Backend's own such writes
// are unfenced, one statement each (DeleteQueue one transaction).
//
// # A COMMIT left unanswered
//
// When a COMMIT fails in a way that leaves its outcome unknown (the
// connection was lost, the server ended it, or the call's bound passed
// or its caller went away, after COMMIT may have been sent), the
// transaction may still commit later: a network partition that heals
// delivers a COMMIT held past the call. A caller that reloads its state
// meanwhile (the service does on backend.ErrOutcomeUnknown) would then
// disagree with the database for good. So the backend settles the
// outcome before it answers. Each transaction's first statement reads
// its id (pg_current_xact_id(), with the fence, in the same round trip),
// and the connection's server process id is known; after a COMMIT left
// unanswered, a new connection asks pg_xact_status(id): committed, and
// Commit returns the events as stored; aborted, and it returns an error
// wrapping backend.ErrUnavailable (nothing applied). While the
// transaction is in progress, the backend terminates the server process
// that runs it, only while that process still runs that transaction
// (pg_stat_activity's backend_xid, so a process id reused is never hit),
// waits until it has exited (pg_terminate_backend's timeout) and asks
// again: a server process ends its transaction before it exits (committed
// when the COMMIT reached it first, else rolled back), and a COMMIT that
// arrives afterwards finds no process to apply it. The settle runs under
// a call timeout of its own, from a context that ignores the caller's
// cancellation. Only when the database does not answer it is the error
// ErrOutcomeUnknown; then every later call of the backend settles that
// transaction first and fails with ErrUnavailable (wrapping
// errNotSettled) until it can, so a reload never reads a state a late
// COMMIT can still change. The fenced queue, group, executor, usage,
// cordon and retry-policy writes
// (and DeleteQueue) are settled the same way; Backend's unfenced
// one-statement writes are not (nothing else writes through them while
// a service runs). This needs PostgreSQL 14 or later (pg_xact_status,
// pg_terminate_backend with a timeout), and a server process per
// transaction that outlives its client's connection only until
// terminated (a pooler in front, e.g. PgBouncer, must run in session or
// transaction mode, and the backend's role may terminate its own
// processes, as every role may).
//
// Why terminate rather than only ask: a transaction in progress whose
// COMMIT is in flight has no outcome to learn yet, and waiting for it
// could take as long as the partition lasts. Why not a write id stored in
// the transaction and looked up: it tells a committed write from one not
// committed yet, not from one that will never commit, so it too must end
// the transaction first, and it costs a row per write.
//
// # A leader held up inside a transaction
//
// Every fenced transaction share-locks the fence row first, so a new
// leader's raise of the fence waits for the previous term's writes in
// flight: a write that passed the fence check lands before the raise or
// not at all. A previous leader paused, wedged or cut off inside such a
// transaction would hold the row as long as its connection lives (the
// server sees an idle transaction, or a COPY waiting for data, and keeps
// it). So a raise that has waited a quarter of the call timeout
// terminates the server processes it waits for (pg_blocking_pids), from
// another connection, until it has the row: they are the previous terms'
// (a term raises its fence once, before its writes), and their
// transactions roll back. A successor's raise therefore completes within
// its call timeout; its writes after the raise wait on no lock of the
// previous term, whose transactions all held the fence row first. (A
// server-side idle_in_transaction_session_timeout would not cover a
// transaction stopped inside a COPY, and would end a paused writer's
// transaction even with no successor waiting.)
//
// # A server that goes away
//
// An error of a call that could not reach the server wraps
// backend.ErrUnavailable: connecting failed or timed out, the connection
// broke or was closed, the server did not answer within the call's bound
// (below), or the server said it is shutting down, starting up, or out of
// connection slots. Nothing was applied (except when a COMMIT's outcome is
// unknown: that error wraps backend.ErrOutcomeUnknown). The pool
// reconnects by itself: once the server is back, the next call succeeds.
// Each attempt to connect is bounded by the URL's connect_timeout,
// DefaultConnectTimeout when it sets none.
//
// A server that stops answering on an open connection (a network
// partition, or a server process that hangs: no RST, no FIN) is bounded
// too. Every call runs under a context deadline of its own: the URL's
// call_timeout (a Go duration, "10s", or whole seconds, up to 24h;
// DefaultCallTimeout, 10 s, when it sets none; the backend reads it and
// does not send it to the server), plus a call timeout per 100,000 rows
// the call writes or reads (a Commit's jobs and events, JobsByID's ids,
// Events' limit), so that a Commit of 100,000 jobs gets three. Measured
// on the loaded 2-core machine: 1,000 jobs and their events commit in
// about 30 ms (BenchmarkCommitSubmit, 15 µs a row; the allowance is
// 100 µs a row), 100,000 in 2.9–4.6 s against a bound of 30 s. A call
// that reads in pages bounds each page, not the whole: LiveJobs's pages of
// 1,000, so a start-up load of a million jobs takes as long as it needs
// while the server answers (BenchmarkRestartWith1MQueuedJobs restarted in
// 18.7 s, its LiveJobs 11.6 s, each page a few milliseconds), and Events
// without a limit in pages of 10,000. Open's migrations, which may wait
// for another process's, get ten call timeouts. When the deadline passes,
// the call returns backend.ErrUnavailable (during COMMIT, the settled
// outcome, or ErrOutcomeUnknown: see below) with the server still silent: the service's lock is released,
// its clients get 503, its cycles fail and are retried, and once the
// network heals the next calls succeed. A transaction cut off is rolled
// back by the server when the connection ends (it never sees COMMIT), or
// committed whole when the COMMIT was sent before the silence; either way
// its jobs and events are stored together or not at all.
//
// Why a client-side deadline: pgx (v5) gives up a statement whose context
// ends by setting a deadline on the socket at once (its default
// pgconn.DeadlineContextWatcherHandler, which this backend keeps), then
// closes the connection and sends the server a cancel request in the
// background; the call returns without waiting for the server. pgconn's
// CancelRequestContextWatcherHandler, which asks the server to cancel
// first, would wait on a server that does not answer. A server-side
// statement_timeout cannot help: a silent server enforces nothing the
// client hears. TCP keepalive and TCP_USER_TIMEOUT would notice a dead
// peer only (a hung server process's kernel still acknowledges every
// packet) and only after the kernel's probes; the deadline covers both.
// A deadline costs a timer per call, nothing beside a round trip
// (BenchmarkCommitSubmit, BenchmarkPutUsage).
//
// # Reads
//
// LiveJobs reads the live jobs in pages of 1,000 by (queue, id), keyset
// pagination over the partial index. A goroutine of its own reads the
// next page while the callback goes through the current one (the
// database's work and the caller's overlap: a restart over 1,000,000
// queued jobs, BenchmarkRestartWith1MQueuedJobs); no connection is held
// while it waits for the callback, memory stays at three pages whatever
// the number of jobs, and the goroutine has ended when LiveJobs returns.
// Events reads one job set's log by sequence number with LIMIT; without
// a limit, in pages of 10,000 (keyset pagination by sequence number).
//
// # Leader lease
//
// Backend implements backend.Leases on the leader table. Lead is one
// INSERT … ON CONFLICT DO UPDATE … RETURNING statement on the database's
// clock (now()): it creates the row on the first call, takes the lease
// when it has ended or is the caller's, and otherwise returns the live
// holder unchanged; a new acquisition's token is one above the greater of
// the row's token and the highest applied fence. Concurrent Leads
// serialise on the row's lock, so exactly one of them leads. Processes
// need no synchronised clocks: Lease.Expires and Lease.Now are both the
// database's. Resign is one UPDATE that ends the caller's live lease.
//
// # Tests
//
// The tests need a server: FLOTILLA_POSTGRES_URL names it (each test works
// in a fresh schema it drops afterwards). scripts/test starts a throwaway
// server with scripts/postgres when the variable is not set. Without it
// the tests are skipped, except under CI=true, where they fail.
package postgres
