// Package sim is a discrete-event simulator of the real service: Run
// starts a server.Server over backend/memory with a fake clock, one fake
// executor (package executor, reached in process through httpapi.Local)
// per cluster of a cluster file, creates a workload's queues, and moves
// the virtual clock from event to event — a scheduling cycle every
// Config.CycleInterval, every executor's report every Config.Renew, and
// the workload's submissions — never sleeping and starting no goroutine.
// Like executor.Run in production, an executor tells the service of the
// jobs that reached their runtime, and takes the leases the cycles made,
// at its next report (so a job's finish time is the first report at or
// after its end, within Renew); a cycle sees every job that ended up to
// its time, as executors report before a cycle of the same time. What is
// simulated is the code that runs in production; the same Config (and
// Workload.Seed) gives the same Output.
//
// # Files
//
// A workload (ParseWorkload, strict JSON: every problem a
// *flotilla.FieldError at its JSON path, all at once) has queues with
// weights (priority factor = 1/weight) and job templates: count,
// requests, priority class, gang cardinality, arrival (at a virtual time,
// as a Poisson process at a rate, after other templates' jobs have all
// ended), runtime (Armada's shifted exponential: minimum plus an
// exponential tail of mean tailMean), and repeats (numTimes more
// submissions, period apart). A cluster file (ParseClusters) has clusters
// of docs/scenarios.md's node templates; the resource schema is every resource
// a node names, sorted.
//
//	{"seed": 1, "duration": "2h",
//	 "queues": [{"name": "A", "weight": 2}, {"name": "B"}],
//	 "jobTemplates": [{"id": "a", "queue": "A", "count": 100,
//	   "requests": {"cpu": "1"}, "priorityClass": "armada-preemptible",
//	   "priority": 1, "nodeSelector": {"zone": "b"},
//	   "tolerations": [{"key": "dedicated", "operator": "Exists"}],
//	   "arrival": {"at": "10m", "rate": 0.5, "after": ["b"]},
//	   "runtime": {"minimum": "1m", "tailMean": "5m"},
//	   "repeat": {"numTimes": 3, "period": "1h"}}]}
//
//	{"clusters": [{"name": "c1", "nodes": [
//	   {"name": "node", "count": 10, "resources": {"cpu": "32", "memory": "256Gi"}}]}]}
//
// A workload may also have a queue tree (docs/queue-tree.md): groups, each with
// a parent, a weight and quotas, queues with a parent and quotas, and
// usage memory (usageHalfLife, usageWeight; they set the scheduler's
// Config.UsageHalfLife and UsageWeight, and a scheduler configuration
// that sets them otherwise is refused). Quotas map resource names of the
// cluster file to quantities. The tree is judged as the scheduler judges
// it (fairness.NewTree), every problem at its path with the value as
// written:
//
//	{"usageHalfLife": "3h", "usageWeight": 1,
//	 "groups": [{"name": "research", "weight": 2,
//	   "guaranteed": {"cpu": "64"}, "limit": {"cpu": "256"}, "lendingLimit": {"cpu": "32"}}],
//	 "queues": [{"name": "nlp", "parent": "research", "guaranteed": {"cpu": "16"}, "usage": 0.5}], ...}
//
// A queue's usage (in [0, 1], as docs/scenarios.md's queues[].usage)
// seeds its decayed average share at Start, the history the run begins
// with: {"name": "heavy", "usage": 1} held the whole cluster lately. It
// is judged with the tree (fairness.NewTree: outside [0, 1] is
// ErrOutOfRange at queues[i].usage; a group takes none), accepted and
// unused without usage memory, and otherwise written to the service's
// backend before server.New as the records a restarted service restores
// (server.UsageShareKey), at Start in every pool, so each pool's first
// cycle starts from it with no time passed.
//
// Run creates the groups in the service (parents first) before the
// queues; the service carries the usage memory from cycle to cycle, its
// time the virtual clock's.
//
// A template may also carry a priority (lower runs first within its
// queue and class), a node selector and tolerations (judged by
// flotilla.Job's rules), the pools it accepts (pools: names of
// clusters' pools, each once; absent accepts every pool) and, for a gang,
// a node-uniformity label or a topology ({"name", "required",
// "preferred"}: one domain of a level of a topology of
// Config.Scheduler.Topologies, the config file's topologies; checked by
// Run, naming workload.jobTemplates[i].gang.topology). A cluster's pool
// puts it in a pool with its own fair shares and cycle:
//
//	{"id": "train", "queue": "A", "count": 8, "requests": {"cpu": "4"},
//	 "pools": ["h100"], "gang": {"cardinality": 4,
//	   "topology": {"required": "topology.flotilla.dev/rack"}}}
//
// Not
// supported yet: exit codes in job templates. Armada's YAML simulator
// files are read by the `flotilla simulate` command (cmd/flotilla), which
// maps them onto these types.
// Config.Scheduler takes a scheduler.Config as a Go value; the `flotilla
// simulate` command (cmd/flotilla) reads docs/scenarios.md's
// `config`/`priorityClasses` into it, and draws the plots.
//
// Config.Progress, when set, is called after every cycle with a
// Progress (virtual time, cycles, jobs submitted and ended) for a
// progress line.
//
// # Outputs
//
// Output has one QueueRow per cycle and queue (the scheduler's
// scheduler.QueueReport plus what the cycle scheduled and preempted) and
// one JobRow per job (its times from its events, its state, attempts and
// preemptions). WriteDir writes them as queues.csv, jobs.csv,
// queues.jsonl and jobs.jsonl, with the column names of issue 13:
// time, cycle, queue, share, fairShare, adjustedFairShare, running,
// queued, scheduled, preempted, allocated.<resource> (in the schema's
// units: milli-cpu, bytes, whole units); and job, queue, jobSet,
// submitted, leased, finished (virtual seconds; empty in CSV, null in
// JSON, when it never happened), state, attempts, preemptions. With a
// queue tree or usage memory (Output.Tree), queue rows add parent (after
// queue) and usage (after adjustedFairShare), and Output has one GroupRow
// per cycle and group (the scheduler's scheduler.GroupReport), written as
// groups.csv and groups.jsonl: time, cycle, group, parent, share,
// fairShare, adjustedFairShare, usage, demand, running, queued,
// allocated.<resource>.
package sim
