// Package server is the queueing service of SERVICE.md: queues, job sets,
// submission with validation, leasing to many clusters through their
// executors, lease renewal and expiry, cancellation, scheduling cycles, and
// the event logs from which every job's state is rebuilt. It runs over the
// storage interfaces of package backend (backend/memory by default) and
// decides with package scheduler.
//
// # The service
//
// New opens a Server over a Config: the scheduler's configuration, the
// submission rules, a backend.Backend, and a Clock. The service reads time
// only from that clock and starts no goroutine: the caller runs cycles
// (Cycle, or Run, which loops on a ticker in the caller's goroutine) and
// passes executors' reports in (Report).
//
//   - Queues: CreateQueue, UpdateQueue, DeleteQueue (refused while the
//     queue has jobs that have not ended), Queue, ListQueues.
//   - Submit and SubmitJSON apply the submission rules (below) and store
//     the jobs with their submitted events in one write; a client id used
//     before in the queue returns the existing job's id.
//   - Cancel and CancelJobSet: queued jobs end cancelled at once; leased
//     and running ones get cancel-requested, their executor is told to
//     kill them, and they end cancelled when it reports them stopped or
//     their lease expires.
//   - Report is the executor protocol. An executor reports its cluster's
//     nodes and every job it holds with its phase; the report renews those
//     leases, turns phases into events, and the reply carries the
//     cluster's leases the executor does not list yet and the jobs it must
//     kill (cancelled, preempted, or leases that ended). Leases not
//     renewed within the lease timeout expire: the job is queued again and
//     avoids that cluster while another can take it
//     (flotilla.Job.AvoidClusters), and after MaxAttempts leases it fails.
//     A cluster that has not reported within the lease timeout leaves the
//     cycles' snapshots.
//   - Cycle expires leases, fails jobs past their active deadline, takes a
//     snapshot of every live cluster (a gang lands in one), calls
//     scheduler.Schedule, and writes the decision as leased and preempted
//     events. Submissions, cancellations and reports go on while Schedule
//     runs.
//   - Events and Watch read a job set's log from a sequence number; Status
//     gives a job's state and, for a queued job, the last cycle's
//     quantified reason why it waits.
//
// # State and storage
//
// The Server keeps what cycles need in memory, updated incrementally: the
// queues, the queued jobs in a queue.Store (the scheduler's Queued seam),
// the non-terminal jobs with their leases, and the clusters' nodes. Every
// change is first one backend.Commit; only when it succeeds does the
// in-memory state change, so what the backend refuses changes nothing.
// Jobs that end are forgotten in memory and read back from the backend.
// New rebuilds the state from the backend; lease renewal times live in
// memory only, so after a restart every live lease has a fresh timeout.
// A cycle's snapshot lists the running jobs by cluster, then by job id, so
// that it depends on the state only, not on the order of the changes that
// made it. A queued job costs the service under 1 KiB of memory, backend
// and queued-job store included (BenchmarkServiceSubmit1M).
//
// # Submission rules
//
// The submission rules are also a pure function, for callers that check
// submissions without a service:
//
//   - ParseSubmit decodes a submit file (SubmitRequest, JobTemplate)
//     strictly, every problem named by its JSON path;
//   - SubmitRules.Jobs applies SERVICE.md's submission rules (grace
//     period, default deadlines by CPU or GPU, count expansion of client
//     ids, gangs whole in one request, classes, resources, tolerations)
//     and expands a request into the []backend.JobSpec to store, or
//     rejects it whole with every problem named;
//   - SubmitRules.ParseJobs does both, reporting the file's type errors
//     together with the rules' problems.
//
// Bad input anywhere (a submission, a report, a queue definition) is
// rejected whole before anything changes, every problem a
// *flotilla.FieldError naming the field and value, usable with errors.Is
// against the sentinels of packages flotilla, backend and server.
package server
