package fairness

import (
	"cmp"
	"math"
	"slices"

	"github.com/flotilla-sched/flotilla"
)

// TreeInput is what one cycle knows about the leaves of a Tree; every slice
// is indexed by queue (not node) and has Tree.NumQueues() entries.
type TreeInput struct {
	// Demand is each queue's demand vector d (running plus queued requests,
	// as today's demand), laid out by the tree's schema; nil is none. An
	// inactive queue's demand is ignored.
	Demand []flotilla.Resources
	// Active says which queues have queued, pending or running jobs.
	Active []bool
	// Usage is each queue's decayed average share u ∈ [0,1] (docs/queue-tree.md
	// §8); nil turns usage memory off for this computation. With usage on
	// the weights are scaled by UsageMultiplier with k = Tree.UsageWeight().
	Usage []float64
}

// TreeShares holds the fair shares of every node of a Tree (docs/queue-tree.md
// §4), indexed by node (Tree.QueueNode maps a queue to its node), as
// fractions of the cluster in the Model's cost. Compute fills it; the slices
// are reused by the next Compute, so a caller that keeps numbers copies them.
// The zero TreeShares is ready to use; it is not safe for concurrent use.
type TreeShares struct {
	// FairShare is F: water-filling with floors min(G, Λ) and caps Λ, a
	// group's budget its own F, the root's 1. 0 for an inactive node.
	FairShare []float64
	// AdjustedFairShare is A: floors min(G, D), caps D, a group's budget its
	// own A. 0 for an inactive node.
	AdjustedFairShare []float64
	// GuaranteedPart is Ĝ = G·min(1, B/Σγ) from the A pass (B the parent's
	// A, Σγ its active children's floors): the guarantee scaled when the
	// parent's guarantees are oversubscribed; 0 for an inactive node and
	// under a parent with nothing to share.
	GuaranteedPart []float64
	// Demand is D⁺ = max(D, r): the node's demand cost scaled into its limit
	// box (a group's is its active children's D⁺ summed, then scaled), at
	// least its lending reserve r. 0 for an inactive node.
	Demand []float64
	// Guaranteed is G: a queue's c(g), a group's max(c(g_eff), Σ children's G).
	Guaranteed []float64
	// LimitReach is Λ: the cost at which the node's demand direction meets
	// its limit (a group's also at most its active children's Λ summed), at
	// least its reserve r; +Inf when no limited resource is demanded.
	LimitReach []float64
	// Reserve is r = c(max(0, g − lendingLimit)); a node with r > 0 is
	// active even with no jobs.
	Reserve []float64
	// Active is a queue's input flag or r > 0; a group's: some child active.
	Active []bool
	// UsageFreeFairShare is F⁰, F with the configured weights (equal to
	// FairShare when usage is off).
	UsageFreeFairShare []float64
	// Usage is the u the multipliers compare with F⁰: a queue's input, a
	// group's children's sum, with reserves counted as used (see
	// effectiveUsage); 0 when usage is off.
	Usage []float64
	// Multiplier is m = UsageMultiplier(u, F⁰, k) of a node with an active
	// queue below it (itself, for a queue), else 1: a node active only
	// through its lending reserve keeps its weight, since the queues below
	// it are inactive and its usage cannot be compared with its F⁰.
	Multiplier []float64
	// Weight is w' = w·m, the weight rules 4, 6 and 7 use.
	Weight []float64

	busy   []bool    // per node: an active queue at or below it
	vec    []float64 // node × resource: demand vectors scaled into the limit boxes
	floor  []float64 // per child of the group being filled
	caps   []float64
	w      []float64
	x      []float64
	on     []bool
	capped []bool
	bps    []breakpoint
}

type breakpoint struct {
	t float64 // the level at which the child reaches its cap
	j int32
}

func grow[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}

func (s *TreeShares) resize(n, nR, fan int) {
	s.FairShare, s.AdjustedFairShare = grow(s.FairShare, n), grow(s.AdjustedFairShare, n)
	s.GuaranteedPart, s.Demand = grow(s.GuaranteedPart, n), grow(s.Demand, n)
	s.Guaranteed, s.LimitReach, s.Reserve = grow(s.Guaranteed, n), grow(s.LimitReach, n), grow(s.Reserve, n)
	s.Active, s.busy, s.UsageFreeFairShare = grow(s.Active, n), grow(s.busy, n), grow(s.UsageFreeFairShare, n)
	s.Usage, s.Multiplier, s.Weight = grow(s.Usage, n), grow(s.Multiplier, n), grow(s.Weight, n)
	s.vec = grow(s.vec, n*nR)
	s.floor, s.caps, s.w, s.x = grow(s.floor, fan), grow(s.caps, fan), grow(s.w, fan), grow(s.x, fan)
	s.on, s.capped, s.bps = grow(s.on, fan), grow(s.capped, fan), grow(s.bps, fan)[:0]
}

// Compute fills s with the fair shares of tree t under cost model m for one
// cycle's input (docs/queue-tree.md; with usage memory when in.Usage is given):
//
//  1. bottom-up: each node's D⁺, Λ, G and r, and which nodes are active;
//  2. with usage on: F⁰ by a top-down F pass with the configured weights, a
//     group's u as its children's sum, and w' = w·UsageMultiplier(u, F⁰, k);
//  3. top-down water-filling at every group (the root's budget is 1): F
//     with floors min(G, Λ) and caps Λ; A with floors min(G, D⁺), caps D⁺,
//     and Ĝ. See waterFill for one group.
//
// A flat tree (no groups, guarantees, limits or lending limits, usage off)
// gives exactly FairShares and AdjustedFairShares of the queues' weights and
// demand costs m.Share(d), bit for bit.
//
// m must be built for the tree's schema; in's slices must have
// t.NumQueues() entries and each demand vector the schema's length (Compute
// panics otherwise, like the flat functions). It runs in O(nodes ×
// resources + Σ fan-out·log fan-out) and, once s has grown to the tree's
// size, never allocates.
func (s *TreeShares) Compute(t *Tree, m *Model, in TreeInput) {
	n, nR := t.NumNodes(), t.schema.Len()
	s.resize(n, nR, t.maxFanOut)
	s.bottomUp(t, m, in)
	copy(s.Weight, t.weight)
	if in.Usage == nil {
		s.topDown(t, s.FairShare, false)
		s.topDown(t, s.AdjustedFairShare, true)
		copy(s.UsageFreeFairShare, s.FairShare)
		clear(s.Usage)
		for v := range s.Multiplier {
			s.Multiplier[v] = 1
		}
		return
	}
	s.topDown(t, s.UsageFreeFairShare, false)
	s.effectiveUsage(t, in.Usage)
	for v := range n {
		s.Multiplier[v] = 1
		if s.busy[v] {
			s.Multiplier[v] = UsageMultiplier(s.Usage[v], s.UsageFreeFairShare[v], t.usageWeight)
		}
		s.Weight[v] = t.weight[v] * s.Multiplier[v]
	}
	s.topDown(t, s.FairShare, false)
	s.topDown(t, s.AdjustedFairShare, true)
}

// effectiveUsage sets s.Usage, children before parents: a queue's u is its
// input; a group's is its children's sum (docs/queue-tree.md) plus the part
// of its F⁰ its children cannot take (a lending reserve it holds beyond
// their reach). A queue active only through its lending reserve counts as
// having used its F⁰: it holds that capacity for itself, so neither it nor
// its group is favoured for the reserve's idle time. Where no lending
// reserve is held this is exactly the spec's sum.
func (s *TreeShares) effectiveUsage(t *Tree, usage []float64) {
	for k := len(t.order) - 1; k >= 0; k-- {
		v := int(t.order[k])
		f0 := s.UsageFreeFairShare[v]
		if v >= t.nGroups {
			s.Usage[v] = usage[v-t.nGroups]
			if s.Active[v] && !s.busy[v] {
				s.Usage[v] = f0
			}
			continue
		}
		u, children := 0.0, 0.0
		for _, c := range t.childList[t.childStart[v]:t.childStart[v+1]] {
			u += s.Usage[c]
			children += s.UsageFreeFairShare[c]
		}
		s.Usage[v] = u + max(0, f0-children)
	}
}

// bottomUp computes D⁺, Λ, G, r and Active, children before parents. While
// a group waits for its turn, its Demand, LimitReach and Guaranteed entries
// accumulate its children's D⁺, Λ and G, and its vec their scaled demand.
func (s *TreeShares) bottomUp(t *Tree, m *Model, in TreeInput) {
	n, nR := t.NumNodes(), t.schema.Len()
	g := t.nGroups
	clear(s.Demand[:g])
	clear(s.LimitReach[:g])
	clear(s.Guaranteed[:g])
	clear(s.Active[:g])
	clear(s.busy[:g])
	clear(s.vec[:g*nR])
	for k := n - 1; k >= 0; k-- {
		v := int(t.order[k])
		vec := s.vec[v*nR : (v+1)*nR]
		var pre, childReach, guaranteed float64
		active := false
		if v >= g {
			q := v - g
			active, childReach = in.Active[q], math.Inf(1)
			s.busy[v] = active
			clear(vec)
			if d := in.Demand[q]; active && d != nil {
				for i := range vec {
					vec[i] = float64(d[i])
				}
				pre = m.Share(d)
			}
			if gv := t.guaranteed[v]; gv != nil {
				guaranteed = m.Share(gv)
			}
		} else {
			active, pre, childReach = s.Active[v], s.Demand[v], s.LimitReach[v]
			guaranteed = s.Guaranteed[v]
			if gv := t.guaranteed[v]; gv != nil {
				guaranteed = max(guaranteed, m.Share(gv))
			}
		}
		demand, reach := pre, childReach
		if t.limited[v] {
			limit, scale := t.limit[v*nR:(v+1)*nR], math.Inf(1)
			for i, x := range vec {
				if x > 0 && limit[i] < scale*x {
					scale = limit[i] / x
				}
			}
			if scale < 1 {
				demand = scale * pre
				for i := range vec {
					vec[i] *= scale
				}
			}
			if !math.IsInf(scale, 1) {
				reach = min(reach, scale*pre)
			}
		}
		reserve := 0.0
		if r := t.reserve[v]; r != nil {
			reserve = m.Share(r)
		}
		if reserve > 0 {
			active = true
			demand, reach = max(demand, reserve), max(reach, reserve)
		}
		if !active {
			demand, reach = 0, math.Inf(1)
		}
		s.Demand[v], s.LimitReach[v], s.Guaranteed[v] = demand, reach, guaranteed
		s.Reserve[v], s.Active[v] = reserve, active
		if p := int(t.parent[v]); p >= 0 {
			s.Guaranteed[p] += guaranteed
			s.busy[p] = s.busy[p] || s.busy[v]
			if active {
				s.Active[p] = true
				s.Demand[p] += demand
				s.LimitReach[p] += reach
				parent := s.vec[p*nR : (p+1)*nR]
				for i, x := range vec {
					parent[i] += x
				}
			}
		}
	}
}

// topDown runs one water-filling pass from the root down: the F pass
// (adjusted false: floors min(G, Λ), caps Λ) or the A pass (floors min(G, D⁺),
// caps D⁺, and Ĝ), each group sharing its own result in out among its active
// children by the weights s.Weight.
func (s *TreeShares) topDown(t *Tree, out []float64, adjusted bool) {
	n := t.NumNodes()
	s.fillChildren(t, n, 1, out, adjusted)
	for _, v := range t.order {
		if int(v) < t.nGroups {
			s.fillChildren(t, int(v), out[v], out, adjusted)
		}
	}
}

// fillChildren water-fills budget among the children of p (p = NumNodes():
// the root) and writes their shares into out.
func (s *TreeShares) fillChildren(t *Tree, p int, budget float64, out []float64, adjusted bool) {
	kids := t.childList[t.childStart[p]:t.childStart[p+1]]
	k := len(kids)
	for j, c := range kids {
		s.on[j], s.w[j] = s.Active[c], s.Weight[c]
		capacity := s.LimitReach[c]
		if adjusted {
			capacity = s.Demand[c]
		}
		s.caps[j], s.floor[j] = capacity, min(s.Guaranteed[c], capacity)
	}
	scale := waterFill(budget, s.on[:k], s.floor[:k], s.caps[:k], s.w[:k], s.x[:k], s.capped[:k], &s.bps, !adjusted)
	for j, c := range kids {
		out[c] = s.x[j]
		if adjusted {
			s.GuaranteedPart[c] = 0
			if s.on[j] {
				s.GuaranteedPart[c] = s.Guaranteed[c] * scale
			}
		}
	}
}

// waterFill shares budget B among the children j with on[j], each with a
// floor γ_j ≤ cap u_j and a weight w_j > 0 (docs/queue-tree.md):
//
//	if Σγ ≥ B:  x_j = γ_j · B/Σγ
//	else:       x_j = min(u_j, γ_j + λ·w_j), the least λ ≥ 0 with Σ x = min(B, Σ u)
//
// and x_j = 0 for the others; it returns min(1, B/Σγ), the factor the
// guarantees are scaled by (0 when B ≤ 0). λ is exact: the children's
// breakpoints (u_j − γ_j)/w_j are sorted, and the first one above the level
// the uncapped children would get fixes the capped set S; λ is then
// (B − Σγ − Σ_S (u − γ)) / Σ_not S w summed in child order. proportional
// computes the uncapped children's part as (B − Σγ − Σ_S(u − γ))·w_j/Σw
// instead of λ·w_j: the same number, rounded as FairShares rounds it (as
// the λ form rounds as AdjustedFairShares does), which is what makes a flat
// tree give today's shares bit for bit.
func waterFill(B float64, on []bool, floor, caps, w, x []float64, capped []bool, bps *[]breakpoint, proportional bool) float64 {
	sumFloor, sumCap, some := 0.0, 0.0, false
	for j := range x {
		x[j] = 0
		if on[j] {
			sumFloor += floor[j]
			sumCap += caps[j]
			some = true
		}
	}
	if !some || !(B > 0) {
		return 0
	}
	if sumFloor >= B {
		scale := B / sumFloor
		for j := range x {
			if on[j] {
				x[j] = floor[j] * scale
			}
		}
		return scale
	}
	if sumFloor == 0 && !proportional {
		// No guarantee at this level: AdjustedFairShares' own iteration,
		// so that a flat tree rounds as the flat function does.
		level, _ := adjustedLevel(B, w, on, caps)
		for j := range x {
			if on[j] {
				x[j] = min(caps[j], level*w[j])
			}
		}
		return 1
	}
	if sumCap <= B {
		for j := range x {
			if on[j] {
				x[j] = caps[j]
			}
		}
		return 1
	}
	rest := B - sumFloor
	b, freeW := (*bps)[:0], 0.0
	for j := range x {
		capped[j] = false
		if on[j] {
			b = append(b, breakpoint{t: (caps[j] - floor[j]) / w[j], j: int32(j)})
			freeW += w[j]
		}
	}
	slices.SortFunc(b, func(a, c breakpoint) int { return cmp.Compare(a.t, c.t) })
	cappedRest := 0.0
	for _, bp := range b {
		if freeW <= 0 || bp.t >= (rest-cappedRest)/freeW {
			break
		}
		capped[bp.j] = true
		cappedRest += caps[bp.j] - floor[bp.j]
		freeW -= w[bp.j]
	}
	*bps = b
	cappedRest, freeW = 0, 0
	for j := range x {
		if !on[j] {
			continue
		}
		if capped[j] {
			cappedRest += caps[j] - floor[j]
		} else {
			freeW += w[j]
		}
	}
	if !(freeW > 0) { // rounding capped everyone: every cap fits
		for j := range x {
			if on[j] {
				x[j] = caps[j]
			}
		}
		return 1
	}
	left := rest - cappedRest
	level := left / freeW
	for j := range x {
		if !on[j] {
			continue
		}
		part := level * w[j]
		if proportional {
			part = left * w[j] / freeW
		}
		x[j] = min(caps[j], floor[j]+part)
	}
	return 1
}

// SumShares writes each node's share into out (indexed by node): a queue's
// m.Share(alloc[q]) (alloc indexed by queue, nil is nothing), a group's its
// children's sum (docs/queue-tree.md). It never allocates.
func (t *Tree) SumShares(m *Model, alloc []flotilla.Resources, out []float64) {
	clear(out[:t.nGroups])
	for k := len(t.order) - 1; k >= 0; k-- {
		v := int(t.order[k])
		if v >= t.nGroups {
			out[v] = 0
			if a := alloc[v-t.nGroups]; a != nil {
				out[v] = m.Share(a)
			}
		}
		if p := t.parent[v]; p >= 0 {
			out[p] += out[v]
		}
	}
}
