// Package backend is what the queueing service needs from storage: small
// interfaces over queues, jobs and their event logs, executors and usage
// history, composed into Backend. The service keeps its live state in
// memory and writes every change through these interfaces before it
// acknowledges it; on start, and when a standby becomes leader, it rebuilds
// that state from them (Jobs.LiveJobs, Jobs.Events).
//
// backend/memory is the default implementation, for tests and a single
// process. A database implementation (PostgreSQL, issue 11) implements the
// same interfaces and passes the same conformance suite, backend/backendtest,
// so nothing here assumes shared memory: values cross the interface by copy,
// except the *flotilla.Job of a JobSpec, which is immutable after submit and
// which a backend may keep (see JobSpec).
//
// # Atomicity and failure
//
// Every write method is atomic: it applies all of its input or none of it.
// An error means nothing was applied, with one exception: an error
// wrapping ErrOutcomeUnknown (a database connection lost during a commit)
// means the write may or may not have been applied, and the caller must
// read back (Jobs.Job, Jobs.Events) before it retries. An error wrapping
// ErrUnavailable means the storage could not be reached (a database down
// or restarting): nothing was applied, and a later call may succeed. Bad
// input is rejected whole, every problem named at once (errors.Join of
// *flotilla.FieldError values naming the field path and value), and never
// panics. Errors classify with errors.Is against the sentinels of this
// package, events.ErrRefused for a transition the state machine refuses,
// the sentinels of package flotilla for malformed input, and
// context.Canceled or context.DeadlineExceeded when the context ended
// before the write was applied.
//
// # Event logs
//
// Each job set (queue, job set name) has one log. Jobs.Commit gives each
// event its log's next sequence number: 1, 2, 3, … with no gap, never
// reused, also under concurrent writers and across restarts. Replaying a
// log with events.Replay rebuilds exactly the states Jobs.Job and
// Jobs.LiveJobs report.
//
// # Fencing
//
// One leader writes job changes. A leader holds a fencing token, a number
// that grows with every change of leadership, and passes it as
// Write.Fence. A backend remembers the highest Fence of every write it has
// applied and refuses with ErrFenced any write whose Fence is lower, so a
// deposed leader cannot write once its successor has. Fence 0 is the
// lowest: unfenced writes (tests, a single process) are accepted until the
// first fenced write is applied, and refused after it. Job writes
// (Jobs.Commit) are always fenced. The other writes (queues, executors,
// usage) are fenced only through the view a backend that implements
// Fenced returns for a token: a leader writes through it, so a deposed
// leader's queue, executor or usage write is refused in the backend too,
// not only by its own clock; writes outside it (an administrator's
// tool, a test, a single process) are not fenced.
//
// # Leader election
//
// A backend may also implement Leases: one lease row that elects the
// leader among processes sharing the backend, on the backend's own clock
// (a database's now()). Its Token is what the leader passes as
// Write.Fence: it grows with every new acquisition and is above every
// fence applied before, so a new leader's first write (an empty Commit
// with its token) fences off its predecessor. backend/backendtest's
// RunLeases is its conformance suite.
//
// Every method is safe for concurrent use.
package backend
