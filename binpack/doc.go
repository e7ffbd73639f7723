// Package binpack is the node database the scheduler places jobs with: it
// answers "which node should this job go to?" thousands of times per cycle
// and records each placement so the next answer sees it.
//
// A DB tracks, per node and per priority level, the allocatable resources:
// at level l, the node's total minus the requests of jobs bound at level l
// or above, so a job bound at level L uses capacity at every level ≤ L
// (Armada's urgency-based preemption: a higher-priority job may be placed
// over lower-priority ones, which then become preemption victims).
// Non-preemptible jobs are bound by the caller at the top level.
//
// Select implements Armada's per-queue bin-packing. For a job of queue q it
// looks first at the nodes whose only user is q, then at unused nodes, then
// at nodes q shares with other queues, and last at nodes only other queues
// use; a node's users are the queues with jobs bound to it right now. The
// third tier is Flotilla's refinement of Armada's "nodes with multiple
// users": a queue that must share spreads onto nodes it already shares
// before it intrudes on another queue's own nodes, which is what keeps
// preemption to fair share from displacing a queue's jobs on the nodes it
// filled (the two-node example of Armada's scheduler documentation). Within a tier it picks the fitting node with the smallest free
// resources at the job's level, compared lexicographically over the indexed
// resources (by default nvidia.com/gpu, cpu, memory), each rounded down to a
// resolution, ties going to the lowest node index. An indexed resource the
// schema lacks is capacity 0 on every node and is skipped
// (ValidateIndexedResources states what an explicit list may hold). A node fits when the
// request fits exactly in every resource, its labels satisfy the job's node
// selector, the job tolerates its NoSchedule and NoExecute taints, and it is
// not cordoned; a query restricted to one node (OnlyNode, for an evicted job
// returning to its node) ignores the cordon.
//
// A node may be bound more than its total (Kubernetes lets a node's
// allocatable shrink under its pods; Bind does not refuse it). Such a node
// is over-committed, full, at every level where the jobs bound at that
// level or above request more than its total: its allocatable there is
// negative in some resource, and it takes nothing at that level, not even
// a job requesting none of that resource (a request fits only where every
// entry of allocatable is at least the request's, and no request is
// negative). It stays a node like any other: indexed (its key, negative in
// a component, sorts before every query's, so the scans skip it at no
// cost), a candidate in Explain, and as jobs are unbound from it, its
// allocatable rises until, back under its total, it takes jobs again. So
// a caller's preemption makes room on it only once the jobs left fit its
// total. Explain counts it under no room, never as cordoned, measuring
// its negative free capacity as none: it is short of the whole request.
//
// Typical use, per scheduling cycle:
//
//	db, err := binpack.New(opts, nodes)
//	// bind the running jobs: db.Bind(node, queue, level, requests)
//	db.Forget()
//	m := db.Mark()
//	for _, job := range gang {
//		q := binpack.Query{Requests: job.Requests, Level: lvl, Queue: qi,
//			Constraint: db.Constraints(job.NodeSelector, job.Tolerations), OnlyNode: -1}
//		n, ok := db.Select(&q)
//		if !ok {
//			db.Rollback(m) // all or nothing
//			reason := db.Explain(&q)
//			break
//		}
//		db.Bind(n, qi, lvl, job.Requests)
//	}
//	db.Forget() // keep the placements, drop the undo log
//
// Restrict confines a constraint to a placement domain (a cluster, or one
// label value within it), for gangs; Avoid takes the nodes of some
// clusters out of a constraint, for a job that prefers other clusters
// (flotilla.Job.AvoidClusters): the caller searches with the avoiding
// constraint first and falls back to the plain one. Both are interned like
// constraints.
//
// Explain and ExplainIn answer a query Select could not: they count every
// node examined once, under the first check it fails (node selector term,
// untolerated taint, cordon, too small even when empty, no room at the
// query's level, an over-committed node's included), grouped by the term,
// taint or first short resource with the smallest shortfall among the
// group, in kube-scheduler's manner:
// "0/3 nodes fit: 1 untolerated taint gpu=true:NoSchedule, 1 cordoned, 1
// short of cpu by at least 3". Reason.Kind says whether the job could fit
// an empty DB (Insufficient) or not (ReasonKind.Unresolvable).
//
// Costs, for N nodes, L levels and R resources: New is O(N·L·log N);
// Select is O(log N) plus the candidates it steps over that are in the
// rounded key range but do not fit, and allocates nothing; Bind and Unbind
// are O(L·R) and allocate nothing in steady state; each node they change
// costs O(log N) once, in the next Select at each changed level; Rollback
// costs one Unbind or Bind per change undone; Explain is O(N·R) and is meant
// only for jobs that did not fit. Memory is O(N·L·R) plus N/8 bytes per
// distinct constraint.
//
// Internally every level has two btree indexes: one keyed by (owner, key,
// node) over nodes with at most one user, which answers the own and unused
// tiers, and one keyed by (key, node) over nodes with at least one user,
// which answers the shared tier (skipping the querying queue's own nodes).
// Bind only marks the node dirty at the levels whose allocatable changed
// (every level when its owner changed); a query re-indexes the dirty nodes
// of the index it is about to scan. Cordoned nodes are not indexed. The
// per-node arrays and indexes use dense int32 node and queue numbers.
//
// A DB is not safe for concurrent use, not even for concurrent Selects:
// Select updates the lazy indexes and scratch state. Build one per cycle (or
// per goroutine) or guard it.
package binpack
