// Package fairness decides how much of a cluster each queue deserves and which
// queue goes next when the scheduler fills the cluster one gang at a time.
//
// It has three parts, each usable on its own:
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
//     experimental prefer-large-jobs ordering.
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
