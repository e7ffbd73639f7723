// Package fairness decides how much of a cluster each queue deserves and which
// queue goes next when the scheduler fills the cluster one gang at a time.
//
// It has four parts, each usable on its own:
//
//   - Cost models. A Model turns a resource vector (a queue's allocation, a
//     gang's requests) into one number. NewDRF builds dominant-resource
//     fairness (the default, as Armada now does): the largest fraction of any
//     resource. NewAsset builds asset fairness (seeds/armada-priority.md): a
//     weighted sum in cpu-equivalent units, each resource divided by its
//     resource factor total_r/total_cpu; a resource the cluster or the
//     schema lacks costs nothing, whatever its weight. Model is one concrete type with no
//     interface behind it, so Share is a short loop that never allocates; the
//     scheduler calls it once per gang attempt.
//
//   - Fair shares. FairShares gives each active queue weight/Σweights of the
//     cluster (a queue's weight is 1/priorityFactor). AdjustedFairShares caps
//     each queue at its demand and shares what the capped queues leave by
//     weight among the rest (water-filling), so a cluster with one small and
//     two large queues is split small-first.
//
//   - Progressive-filling selection. A Selector is an indexed min-heap of one
//     Candidate per queue: the queue's next gang, described by the fraction of
//     its fair share the queue would hold after that gang. The scheduler
//     peeks the best candidate, tries the gang, then Updates (or Removes) that
//     queue and peeks again. See Compare for the order, including Armada's
//     experimental prefer-large-jobs ordering. A Bracket chooses by the
//     same order among a fixed number of slots, as a knockout tournament
//     whose update replays one path: a queue tree's group ranks its
//     children with one.
//
//   - Queue trees (docs/queue-tree.md). NewTree validates a TreeSpec — groups and
//     leaf queues under an implicit root, each with a weight and optional
//     per-resource guaranteed, limit and lendingLimit quantities (Absent
//     marks a resource not given) — reporting every problem at once with the
//     scenario file's field paths, and builds a dense Tree (node i is group
//     i, node NumGroups()+q is queue q). TreeShares.Compute then gives every
//     node, for one cycle's demands and active flags, its fairShare F and
//     adjustedFairShare A by top-down water-filling: at each group the active
//     children first get their guarantees (capped at demand for A, at limit
//     reach for F; scaled in proportion when they oversubscribe the group's
//     budget), then share the rest by weight up to those caps. Costs are the
//     Model's, against the whole cluster, and a group is charged the sum of
//     its members' costs. A limit scales a node's whole demand vector into
//     its box; a lending limit keeps g − lendingLimit of an idle node's
//     guarantee as its own (the node stays active with that demand). Compute
//     also reports the guaranteed part Ĝ that the tree tournament keys on,
//     and D, G, Λ. λ is found exactly, by sorting the children's breakpoints;
//     a flat tree (no groups, guarantees, limits or lending limits, usage
//     off) gives FairShares and AdjustedFairShares bit for bit. Usage memory
//     (rule 9) is optional: DecayUsage ages each queue's average share with
//     β = 2^(−Δt/h), and Compute, given the usages, scales each node's weight
//     by UsageMultiplier(u, F⁰, k) ∈ [1/(1+k), 1+k], F⁰ being the usage-free
//     fair share (so the F pass runs twice). 10,000 queues in four levels
//     take about 1 ms and no allocation once a TreeShares has grown.
//     SumShares adds leaf shares up the tree.
//
// A typical cycle:
//
//	model := fairness.NewDRF(clusterTotal)
//	fairness.FairShares(weights, active, fair)
//	fairness.AdjustedFairShares(weights, active, demand, adjusted)
//	sel := fairness.NewSelector(false)
//	for q := range queues {
//		share, gang := model.Share(alloc[q]), model.Share(next[q])
//		sel.Push(fairness.NewCandidate(q, names[q], prio[q], share, gang, fair[q], adjusted[q]))
//	}
//	for sel.Len() > 0 {
//		c, _ := sel.Peek()
//		// try c.Queue's next gang; then Update c.Queue with its following
//		// gang, or Remove it when it has none left.
//	}
//
// Everything here is deterministic: no clock, no randomness, no goroutines, no
// package-level mutable state. Models are immutable after construction and
// safe for concurrent use; a Selector is not safe for concurrent use.
package fairness
