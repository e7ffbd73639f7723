package fairness

import (
	"math"
	"time"
)

// UsageDecay returns β = 2^(−Δt/h), the weight the old usage keeps over a
// cycle of length dt under half-life h (docs/queue-tree.md): 1 when dt ≤ 0 or
// h ≤ 0 (nothing decays; usage is off), 0.5 when dt = h.
func UsageDecay(dt, halfLife time.Duration) float64 {
	if dt <= 0 || halfLife <= 0 {
		return 1
	}
	return math.Exp2(-float64(dt) / float64(halfLife))
}

// DecayUsage updates each leaf's decayed average share after a cycle of
// length dt: u[q] ← β·u[q] + (1 − β)·share[q] with β = UsageDecay(dt,
// halfLife). Shares are clamped into [0,1] first (a share above the whole
// cluster, possible with rounding, counts as 1; NaN as 0), so u stays in
// [0,1]. u and share have the same length; it never allocates and reads no
// clock: dt is the caller's.
func DecayUsage(u, share []float64, dt, halfLife time.Duration) {
	beta := UsageDecay(dt, halfLife)
	share = share[:len(u)]
	for q, s := range share {
		s = min(max(s, 0), 1)
		if !(s >= 0) {
			s = 0
		}
		u[q] = beta*u[q] + (1-beta)*s
	}
}

// UsageMultiplier is m = clamp(1 + k·(1 − u/F⁰), 1/(1+k), 1+k), the factor
// usage memory applies to a node's weight (docs/queue-tree.md): a node
// that used exactly its usage-free fair share F⁰ keeps its weight, one that
// used nothing gets up to (1+k)×, one that used much more down to 1/(1+k).
// With F⁰ ≤ 0 (the node cannot be given anything, so its weight does not
// matter) or k ≤ 0 it is 1; a NaN u counts as 0.
func UsageMultiplier(u, f0, k float64) float64 {
	if !(f0 > 0) || !(k > 0) {
		return 1
	}
	if !(u >= 0) {
		u = 0
	}
	return min(max(1+k*(1-u/f0), 1/(1+k)), 1+k)
}
