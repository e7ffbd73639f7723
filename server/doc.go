// Package server is the queueing service (README; docs/http-api.md): queues, job sets,
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
//   - The queue tree (docs/queue-tree.md): groups (CreateGroup, UpdateGroup,
//     DeleteGroup, refused while a queue or group has the group as parent;
//     Group, ListGroups) and the queues' Parent, Guaranteed, Limit and
//     LendingLimit. Every change of a queue or group is checked against the
//     whole tree (fairness.NewTree's rules: parents that exist and are
//     groups, no cycle, limits at least and lending limits at most the
//     guarantee, a group's explicit guarantee covering its children's) and
//     refused whole, each problem named `queue "NAME".field` or
//     `group "NAME".field`, before anything is stored. Names are unique
//     across queues and groups (backend.ErrExists). A change takes effect
//     at the next cycle, while jobs run: each snapshot carries the groups
//     (Snapshot.Groups) and the queues as defined then.
//   - Submit and SubmitJSON apply the submission rules (below) and store
//     the jobs with their submitted events in one write; a client id used
//     before in the queue returns the existing job's id. A request costs
//     a few allocations, not some per job: its ids (the service's own
//     ULIDs, when Config.NewID is nil) and each template's client ids are
//     slices of one string, its jobs and the service's records of them
//     one block each, and its client ids are looked up in one call when
//     the backend implements backend.ClientIDLookup.
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
//     cycles' snapshots. The jobs a report lists that have ended (an
//     executor back after a failover lists many) are read from the
//     backend outside the service's lock, in one call when the backend
//     implements backend.JobLookup, so that a database's round trips do
//     not hold up the service.
//   - Cycle expires leases, fails jobs past their active deadline, takes a
//     snapshot of every live cluster (a gang lands in one; a node that
//     shrank under its live jobs is full, not an error: the core takes
//     it as it is, see scheduler's Result.OverCommitted),
//     calls scheduler.Schedule, and writes the decision as leased and
//     preempted events, once per pool (below). Submissions, cancellations
//     and reports go on while Schedule runs.
//   - Events and Watch read a job set's log from a sequence number; Status
//     gives a job's state and, for a queued job, the last cycle's
//     quantified reason why it waits. Detail gives the long form
//     (`flotilla status -v`): class and priority, its place in its queue
//     (scheduler.PositionOf, read for the asking), its queue's last report
//     and, with flux, its priority breakdown.
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
// A commit whose outcome is unknown (backend.ErrOutcomeUnknown) makes the
// service rebuild its state from the backend the same way; when that
// rebuild fails too (the backend is down, backend.ErrUnavailable), every
// later call rebuilds first and fails with the backend's error until a
// rebuild succeeds, so no call answers from, or writes after, a partial
// state. The rebuild is only as good as the backend's reads: a backend
// whose ErrOutcomeUnknown write may still be applied later must refuse
// reads until its outcome is final (backend/postgres does: it ends the
// transaction first). A commit the backend refuses as a transition the
// state machine does not allow (events.ErrRefused) rebuilds too: the
// service made the write from its state, so the backend's state differs
// from it (a write applied after the service was told it was not), and
// every later write made from it would be refused as well.
// A cycle's snapshot lists the running jobs by cluster, each cluster's in
// the order it keeps them, copied from dense per-cluster lists kept up to
// date as leases come and go; the scheduler's decisions do not depend on
// that order, so a cycle's result depends on the state only, not on the
// order of the changes that made it. Each running job hints its node's
// place in the snapshot's nodes (scheduler.Running.NodeIndex), so
// Schedule finds it without a lookup by name. A queued job costs the
// service under 1 KiB of memory, backend and queued-job store included
// (BenchmarkServiceSubmit1M): the non-terminal jobs are found by id
// through a pointer-free hash index of handles (internal/idindex), whose
// ids sit in dense blocks beside the jobs, rather than a map the garbage
// collector scans, and a request's jobs are allocated together, so
// Submit's allocations grow with a request's templates, not its jobs. A
// report, whose jobs an executor lists in id order, is matched against
// its cluster's live jobs (kept sorted by id, with their ids in a dense
// list; a report sorts in the newer leases once they are an eighth of
// them) in one pass; only the jobs not found there (leased since the last
// sort, ended, or listed out of order) are looked up by id, and the reply
// reuses the plan's lookups.
//
// # The locking shell and the state
//
// # Pools
//
// A cluster belongs to one pool (Report.Pool, stored with its nodes;
// backend.DefaultPool when its executor names none) and a job accepts
// the pools its template names (backend.JobSpec.Pools; all when none).
// Each cycle decides once per known pool, in name order: the pool's live
// clusters, the queued jobs that accept it, and the pool's own state from
// its last cycle (rate limits, queue priorities, usage memory; lastCycle
// keeps a poolCycle per pool, and the usage history stores the lottery
// and share records of a pool other than the default as
// <prefix><queue>/<pool>). The pools' decisions follow one another, each
// written before the next pool's snapshot is taken, so a job leased in
// one pool is not queued for the next. While the service knows one pool
// and no job names pools, the one queue.Store is that pool's; once it
// knows two or more, or a job names pools, each pool gets a store of the
// queued jobs accepting it besides the store of all (queuedJobs.split):
// measured at 100,000 queued jobs, 677 B a job with one pool, 948 with
// two, 1,084 with three.
//
// A Server is a thin locking shell over the state it owns (type state):
// each method takes the service's one lock, calls one method of the
// state, and releases it. The lock goes to the goroutines waiting for it
// in the order they asked (fifoLock), so a report waits for those ahead
// of it only. A few methods release it part way, for work that must not
// hold up the service: Cycle runs scheduler.Schedule between locked parts
// (cycleStart writes the expiries; each pool's part takes its snapshot
// and marks the queued-job stores as read, so that changes to them wait
// until cycleDecided applies them; then the decision is written a chunk of
// 1,000 preemptions or leases at a time, each chunk locked on its own,
// by a decisionWriter, and cycleEnd keeps what the cycle leaves); Report
// fetches the
// records of the ended jobs a report lists between two locked plans;
// Watch waits for events unlocked; and Status, Detail and Events read
// the backend unlocked. What the shell reads unlocked are the state's
// dependencies (configuration, scheduler, backend, clock), which New
// sets and nothing changes.
//
// The state's parts are small types, each with the methods that serve
// it: the queued-job store and its changes deferred during a cycle
// (queuedJobs), the non-terminal jobs by id (jobTable), the gangs'
// members (gangTable), the clusters and their live leases (clusterMap,
// cluster), what the last cycle left (lastCycle), the usage history
// (usageState, fluxState) and the buffers reused from call to call
// (scratch). The executor protocol's work on one report is a reportPlan,
// which plans, applies and answers it over a pointer to the state.
//
// # Usage history
//
// The service records, per queue, the resource × time its leases use: each
// leased or running job charges its requests from the event that leased
// it to the event that ends its lease (succeeded, failed, cancelled,
// preempted, lease-expired, lease-returned), in the schema's units times
// seconds, a second used at time s counting 0.5^((t−s)/h) at time t
// (h = Config.UsageHalfLife, default one week). Between two changes of a
// queue's leases the usage rate is constant, so the decayed integral is
// exact: value·β + rate·(h/ln 2)·(1 − β), β = 0.5^(Δt/h). QueueUsage and
// QueueInfo.Usage read it.
//
// At the end of every cycle (also while draining) the history is stored
// with one backend.Usage.PutUsage call, a record per key, names
// path-escaped (url.PathEscape):
//
//   - queue/<queue>: the queue's usage, At the cycle's time;
//   - lottery/<queue> (lottery/<queue>/<pool> outside the default pool):
//     under scheduler.Lottery, the queue priority the
//     cycle left (scheduler.Result.QueuePriorities), a scalar in cpu cores
//     (the asset model's unit) stored in the cpu entry of Value, every
//     other entry 0, and At the priorities' time. New restores
//     Snapshot.QueuePriorities from these records, so a restarted service
//     leases as the old one would have (given the same Seed for the same
//     cycle: cycle n of a process uses Config.Seed + n);
//   - flux/<user>/<bank>: a flux association's usage (below), At the
//     cycle's time;
//   - share/<queue> (share/<queue>/<pool> outside the default pool): with
//     the scheduler's usage memory on
//     (scheduler.Config.UsageHalfLife), the queue's decayed average share
//     u ∈ [0,1] the last cycle left (scheduler.Result.Usage) in entry 0 of
//     Value, At the usage's time. New restores Snapshot.Usage from these
//     records, so a restarted service weighs the queues as the old one
//     would have; in one process each cycle's Result.Usage is the next
//     cycle's Snapshot.Usage (a cycle that returns none keeps the last).
//
// New restores the records and charges the live leases from when they
// started, or from the record's time when they started before it, so a
// restart loses at most the usage of leases that ended between the last
// stored cycle and the restart. A store that fails is reported in
// CycleReport.UsageErr and done again by the next cycle.
//
// # Flux-accounting priorities
//
// With Config.Flux (FluxConfig), a job belongs to the flux association
// (user, bank): the user is the principal that submitted it (set by the
// caller from its authentication: submit.Request.Principal, or
// SubmitJSONAs; a submit file cannot carry it), or
// FluxConfig.DefaultUser for a job with no principal; the bank is the
// queue's (FluxConfig.Banks, by default the queue's name). The principal is
// stored with the job (backend.JobSpec.Principal). A submission whose
// association is not in the tree is rejected. At submit a job's Priority is
// its association's multi-factor priority at the default urgency, mapped
// with priority.JobPriority (lower runs first): the submit file's priority
// is replaced. At the end of every cycle, each association's usage since
// the last cycle, valued in core-seconds (FluxConfig.UsageWeights), is
// added to the tree, and every FluxConfig.RecomputeEvery cycles the tree
// ranks the associations again and the queued jobs of every (user, queue)
// whose priority changed are re-queued with a new *flotilla.Job copy. The
// cost is O(associations + groups) when no priority changed and one pass
// over the live jobs plus a store re-insertion per changed job otherwise
// (BenchmarkFluxReprioritize100kQueuedJobs). Server.WithBankTree changes
// the tree under the service's lock.
//
// # Submission rules
//
// The submission rules are package submit's, a pure function the service
// applies to every submission (Config.Submit); callers may check
// submissions with it without a service.
//
// Bad input anywhere (a submission, a report, a queue definition) is
// rejected whole before anything changes, every problem a
// *flotilla.FieldError naming the field and value, usable with errors.Is
// against the sentinels of packages flotilla, backend and server.
package server
