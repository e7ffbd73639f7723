package fairness

// FairShares writes into out each queue's fair share of the cluster:
//
//	out[q] = weights[q] / Σ weights of active queues   if active[q]
//	out[q] = 0                                          otherwise
//
// A queue's weight is 1/priorityFactor; a queue is active when it has queued,
// pending or running jobs (Armada's scheduler). Weights of active
// queues must be positive and finite (the scheduler's Config rejects
// factor ≤ 0); with no active queue every share is 0.
//
// weights, active and out must have the same length; out may be weights
// itself. It runs in O(n) and never allocates.
func FairShares(weights []float64, active []bool, out []float64) {
	weights, active = weights[:len(out)], active[:len(out)]
	sum := 0.0
	for q, w := range weights {
		if active[q] {
			sum += w
		}
	}
	for q, w := range weights {
		if active[q] && sum > 0 {
			out[q] = w / sum
		} else {
			out[q] = 0
		}
	}
}

// AdjustedFairShares writes into out each queue's demand-capped (adjusted)
// fair share, by water-filling: every active queue gets min(its demand, its
// weighted slice of what the others leave), and what a queue does not need is
// shared by weight among the queues that still want more. Formally, out is
//
//	out[q] = min(demand[q], λ·weights[q])   for active q, 0 otherwise
//
// with the level λ ≥ 1/Σweights chosen so that Σ out = min(1, Σ demand). So a
// queue whose demand is at least its fair share gets at least its fair share,
// no queue gets more than it asked for, and the allocation is max-min fair in
// share per unit of weight: a queue left short of its demand has the largest
// out/weight ratio of all (every queue short of demand sits exactly at λ, and
// every satisfied queue at or below it). Example: equal weights and demands
// 0.1, 0.6, 0.6 give 0.1, 0.45, 0.45.
//
// demand[q] is what the queue would cost if all its jobs ran, as a fraction of
// the cluster (Model.Share of its running plus queued requests); it may exceed
// 1. A negative or NaN demand counts as 0. Weights of active queues must be
// positive and finite, as for FairShares.
//
// Complexity: each round computes λ from the queues already capped and caps
// every queue whose demand is within its slice; λ never decreases, so the
// capped set only grows and the loop stops after k ≤ n+1 rounds of O(n)
// each: O(n·k) time, O(n²) in the worst case. In practice k is small: a
// round that caps few queues raises λ by little, so the next round rarely
// finds more (100 queues with a spread of demands take 3 rounds, about
// 0.6µs). It keeps no state between rounds beyond λ and never allocates.
//
// weights, active, demand and out must have the same length; out may be
// demand or weights itself.
func AdjustedFairShares(weights []float64, active []bool, demand []float64, out []float64) {
	n := len(out)
	weights, active, demand = weights[:n], active[:n], demand[:n]
	level, ok := adjustedLevel(1, weights, active, demand)
	if !ok {
		clear(out)
		return
	}
	for q := 0; q < n; q++ {
		if active[q] {
			out[q] = min(demandOf(demand[q]), level*weights[q])
		} else {
			out[q] = 0
		}
	}
}

// adjustedLevel is the water level of AdjustedFairShares for a budget B:
// the λ with Σ min(demand, λ·weight) = min(B, Σ demand) over the active
// entries; false when their weights sum to 0. The tree's water-filling
// uses it for a level without guarantees, so that a flat tree rounds as
// AdjustedFairShares does.
func adjustedLevel(B float64, weights []float64, active []bool, demand []float64) (float64, bool) {
	n := len(demand)
	weightSum := 0.0
	for q := 0; q < n; q++ {
		if active[q] {
			weightSum += weights[q]
		}
	}
	if weightSum <= 0 {
		return 0, false
	}
	// capped(q) ⇔ demand[q] ≤ level·weights[q]. Each round recomputes the
	// capped set from the level alone: mathematically it only grows, and
	// counting it guards the loop against a rounding wobble.
	level := B / weightSum
	lastCapped := -1
	for {
		capped, cappedDemand, freeWeight := 0, 0.0, 0.0
		for q := 0; q < n; q++ {
			if !active[q] {
				continue
			}
			if d := demandOf(demand[q]); d <= level*weights[q] {
				capped++
				cappedDemand += d
			} else {
				freeWeight += weights[q]
			}
		}
		if capped <= lastCapped || freeWeight <= 0 {
			break // stable, or everyone satisfied (Σ demand ≤ B)
		}
		lastCapped = capped
		next := (B - cappedDemand) / freeWeight
		if next <= level {
			break
		}
		level = next
	}
	return level, true
}

func demandOf(d float64) float64 {
	if d > 0 {
		return d
	}
	return 0 // negative or NaN
}
