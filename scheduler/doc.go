// Package scheduler composes queue, fairness, binpack and gang into one
// scheduling cycle: given a snapshot of nodes, queues, running and queued
// jobs, and the time, it decides which queued jobs to place on which nodes,
// which running jobs to preempt, and why the others wait.
//
// # The cycle
//
// Progressive filling (Armada's scheduler, "Job scheduling order"):
// among the queues' next units (a job, or a complete gang), the one from the
// queue whose fraction of its fair share would be smallest after the unit is
// tried first; a higher priority class always goes first; ties go by queue
// name. Each queue is bin-packed on its own: the queue's own nodes, then
// unused nodes, then nodes it shares, then other queues' nodes, and within
// each the smallest node that fits (package binpack).
//
// Limits, all from Config: maxQueueLookback per queue, counted in units (a
// gang once; evicted jobs not at all); maximumResourceFractionToSchedule per
// cycle, checked before each unit, so a cycle may overshoot by one; global
// and per-queue token buckets read at now, a gang taking one token per
// member (a gang larger than a bucket is reported and skipped, never
// blocking its queue), with state carried in Snapshot.RateLimits and
// Result.RateLimits; per-queue, per-priority-class caps. A job whose
// requirements equal one that already failed this cycle is skipped without a
// node search (the scheduling-key cache).
//
// # Queue trees
//
// Snapshot.Groups, Queue.Parent and the queues' and groups' Guaranteed,
// Limit and LendingLimit make the queues a tree (tree.go; the semantics in
// the repository's docs/queue-tree.md). Fair shares are then water-filled
// top down (fairness.TreeShares), progressive filling is a tournament along
// each queue's path (tournament.go: the guarantee tier, then the key
// (share + cost − guaranteed part)/weight at every group), limits and
// lending holds refuse placements (ReasonLimit, ReasonLendingLimit), and a
// queue holding at most its guarantee is never evicted to fair share.
// Config.UsageHalfLife adds usage memory, carried from cycle to cycle in
// Snapshot.Usage and Result.Usage. A snapshot with none of these runs the
// flat code, unchanged.
//
// # Configuration
//
// New validates the whole Config at once (Config.Validate), including the
// indexed resources the node database will use, so a bad config never
// reaches Schedule. A resource name the schema lacks is not an error in
// resource weights, indexed resources, round fractions or per-class and
// per-queue caps: it is a resource of capacity 0 on every node, which weighs
// nothing, orders no nodes and binds no cap (Armada's default config indexes
// nvidia.com/gpu on CPU-only clusters). Queues are validated by Schedule
// with flotilla's Queue.Validate; a priority factor below
// flotilla.MinPriorityFactor is rejected there so weights stay finite.
//
// # Queued jobs: the storage seam
//
// Snapshot.Queued is a Queued: *queue.Store in memory, or any store that
// keeps, per queue, the job count, the demand (sum of requests) and the
// count of jobs per scheduling key up to date as jobs come and go, and
// reads a queue in order through a batch cursor (queue.EntryReader). A
// cycle checks the store's priority classes against the Config once, takes
// each queue's demand from the store, and reads each queue only as far as
// it can use it. So a cycle's cost follows what the cluster can take, not
// the backlog: once every job left in a queue has a scheduling key that
// already failed this cycle (and the queue has no gang members left, no
// per-class cap, and no limit about to refuse it), the queue is finished
// without reading on, its remainder counted per key with the cached reason.
// Jobs read from the store are checked cheaply (Job.Validate's
// allocation-free path, queue, class and class priority, and that each
// sorts after the queue's last valid job, so none is taken twice): a job
// the store should not have handed out is reported with ReasonInvalid and
// never placed. An error reading the store fails the cycle.
//
// Running jobs are checked every cycle, as cheaply as that allows:
// Job.Validate's allocation-free path, ids unique (one hash each), queue
// and class known (compared by name when there are at most eight, hashed
// otherwise), and node known. A node whose running jobs request more
// than its total is not an error (Kubernetes lets a node's allocatable
// shrink under its pods): it is over-committed, a full node, named in
// Result.OverCommitted. The node database keeps it as it is (package
// binpack): it takes nothing new until preemption brings it back under its
// total, and a job that only it could take is told there is no room
// (ReasonNoRoom), not that it never fits. Urgency preemption places a job
// there only if the jobs it preempts bring the node, job included, within
// its total, and new work displaces its evicted jobs only as far as that
// too; its evicted jobs go back to it within what it held (each going back
// adds nothing to it), so eviction to fair share alone preempts nothing
// there. No node ends holding more than its total or what it held. A
// caller can spare the lookup of each job's node by name with
// Running.NodeIndex, the node's place in Snapshot.Nodes (from 1): the
// hint is checked against the name and ignored when it does not match.
//
// # Reporting
//
// Result.Unscheduled groups the jobs examined and not placed by (queue,
// reason code, scheduling key), with a count, the first job's reason and up
// to UnscheduledExamples example jobs; Result.NotExamined counts, per
// queue, the jobs a limit kept the cycle from reaching. Every queued job is
// in exactly one of Scheduled, an Unscheduled group's count, or a
// NotExamined count. Config.ReportEveryUnscheduled adds the per-job list
// (Result.UnscheduledJobs) and turns off the early finish, so that every
// job gets its own reason as it would be examined; placements are the same
// either way.
//
// # Topologies
//
// Config.Topologies are the node-label hierarchies gangs may ask for
// (flotilla.GangTopology; gang.Placer's rules). A gang with a topology
// makes every search a gang makes (free capacity, evicted jobs' capacity,
// lower-priority jobs' capacity at its class) in the topology's domains,
// so the room it may take by urgency counts towards a domain; a required
// level that no domain holds is reported with the level and the closest
// domain (NodeSearch.Level and Domain). A gang that names a topology or
// level the config lacks is ReasonInvalid. Evicted gangs go back to the
// nodes they ran on, topology or not.
//
// # Preemption
//
// The node database tracks allocatable per priority level, plus one level
// below every class where evicted jobs hold their capacity. A gang's
// members all hold their capacity at its highest member's level (the top
// level when one is non-preemptible), since the gang goes whole.
//
// Urgency: a new job that finds no free capacity searches again at its own
// class's level, where preemptible jobs of lower priority do not count. If
// it lands, the fewest such jobs on that node are preempted, lowest priority
// first, then those that would be rescheduled last; a gang member takes its
// gang with it, so a gang is a victim only when every member is of lower
// priority. Non-preemptible jobs are never preempted. A job placed
// earlier in the same cycle that is displaced this way is offered again.
//
// To fair share: before filling, queues whose share exceeds
// protectedFractionOfFairShare × max(fair share, adjusted fair share) have
// their preemptible jobs evicted, node by node with evictionProbability
// drawn from Snapshot.Seed, whole gangs together. Evicted jobs go first in
// their queues and may only return to their own node. When the fill is
// done, the evicted jobs that did not return (displaced, or offered when
// their node was full) are offered once more, in rescheduling order, into
// the free capacity of their own nodes, never preempting: room may have
// appeared since (urgency preemption took a gang off the node). Evicted
// jobs that still do not return are preempted; a gang with any member not
// returned is preempted whole. So no job is preempted to fair share while
// its node ends the cycle with room for it.
//
// Displacement: new work displaces evicted jobs only when no free capacity
// exists, and then those that would be rescheduled last. Only jobs still
// evicted when it searches: those put back earlier in the cycle (their
// queue's turn in progressive filling came before this job's) run again,
// as in Armada. So a job larger than what any one node's remaining
// evicted jobs hold waits, even while its queue is below its fair share
// and theirs above, when the jobs put back first are spread over the
// nodes (whole-node-job-after-staggered-starts in testdata/scenarios);
// its reason says so. The rescheduling
// order is the order in which the fill would offer the evicted jobs back
// were no new work to come between: higher class priority first, then the
// queue that would hold the smallest fraction of its fair share after the
// job (its allocation after the evictions plus its evicted jobs ahead of
// this one), then the queue name, and within a queue the evicted order; a
// gang ranks as its member offered first. The order is fixed at eviction
// time (as in Armada), not updated as the fill changes the queues'
// standing. A lone job walks the evicted jobs from the last, summing per
// node (among the nodes its selector, taints and cordons admit; its queue's
// tiers play no part) what they hold, until some node fits; of the nodes
// the last job walked made fit, the lowest-numbered is chosen, and the
// walked jobs on it are displaced, each with its whole gang, wherever its
// members are. A gang walks the same way, releasing each walked job's
// holds and asking the gang placer again until the gang fits; the walked
// jobs on the nodes it then uses are displaced, the others keep their
// holds. Past 32 walked jobs, and for a job or gang placed by urgency, the
// placement displaces on each node it used the evicted jobs there
// rescheduled last, until the node's free capacity is not negative.
// A displaced job is preempted to fair share; its Preemption.For names the
// job it made room for, as an urgency victim's does.
//
// Gangs do the same as a unit: free capacity first, then evicted jobs'
// capacity, then a search at the level of the gang's lowest class,
// preempting on each node it used.
//
// # Avoided clusters
//
// A job with Job.AvoidClusters (a gang: the clusters any member avoids)
// makes every search it would make (free capacity, evicted jobs' capacity,
// urgency when its class may preempt) first among the nodes outside those
// clusters (binpack.DB.Avoid; for a gang, the domains of the other
// clusters, gang.UnavoidedDomains), and only when none of them takes it,
// the same searches over every node. So it lands in an avoided cluster
// only when no other cluster can take it in this cycle; a job that may
// preempt preempts elsewhere rather than take free room in an avoided
// cluster, and one that may not takes the free room. When every node the
// job could use is in an avoided cluster, or none is, it searches once.
// The scheduling key covers AvoidClusters, and a search outside them that
// found nothing is remembered by key for the rest of the cycle, as
// failures are. A job that fits nowhere is explained over every node.
// The lottery strategy does the same with its one search (free capacity).
// Jobs without AvoidClusters pay one length check.
//
// # Why a job waits
//
// Every examined job that is not placed gets a Reason in
// Result.Unscheduled. A job that found no node gets ReasonNeverFits when it
// could not fit even on an empty cluster (no node matches its node
// selector, tolerations and the cordons, or none that matches is large
// enough; for a gang, no cluster or label value could hold it), which only
// a change of nodes or job resolves, and ReasonNoRoom when it would fit an
// empty matching node but none has room now: kube-scheduler's
// UnschedulableAndUnresolvable and Unschedulable. Reason.Search names
// every filter that excluded nodes with its node count, and the shortfall
// per resource; the message says the same: "0/3 nodes fit: 1 untolerated
// taint gpu=true:NoSchedule, 1 cordoned, 1 short of cpu by at least 3". Room is measured at the job's last search: free
// capacity, plus what evicted jobs not yet put back hold when there are
// any, plus, when the job may preempt, what preemptible jobs of lower
// priority hold; the message says which ("room counts what evicted jobs
// hold; the 32 put back earlier in this cycle, ahead of this job in
// fair-share order, keep theirs"). A job
// skipped by the scheduling-key cache gets the first job's code and
// findings, and Reason.Search.SameAs names that job (the cache is shared
// by the queues: SameAsQueue, and the message, name its queue when it is
// another queue than the skipped job's). For a gang,
// Reason.Search.Member names the member that did not fit where the gang
// came closest, and PlacedBefore how many of its mates were placed there
// first. A gang that was not placed is explained (its node search's
// findings) only when its reason is kept: when a member is the first of
// its Unscheduled group, or with Config.ReportEveryUnscheduled; the
// others' would be dropped.
//
// PositionOf gives a queued job's place in its queue (how many jobs a
// cycle would offer before it, and what they request; a gang counts where
// its last member completes it): for explaining one job, not part of a
// cycle.
//
// # Strategies
//
// Config.Strategy chooses progressive filling (the default) or Armada's
// legacy slice-and-lottery leasing over half-life queue priorities (package
// priority), whose state is carried in Snapshot.QueuePriorities and
// Result.QueuePriorities. The lottery never preempts and leases lone jobs
// only.
//
// # Determinism
//
// Schedule is pure: it reads no clock (now is an argument), draws randomness
// only from the snapshot's seed, starts no goroutines and does no I/O. The
// caller acts on the Result (bind, evict) and owns the next snapshot.
package scheduler
