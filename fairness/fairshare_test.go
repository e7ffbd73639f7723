package fairness_test

import (
	"cmp"
	"math"
	"reflect"
	"slices"
	"testing"

	"github.com/leanovate/gopter"
	"github.com/leanovate/gopter/gen"
	"github.com/leanovate/gopter/prop"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/floats/scalar"

	"github.com/flotilla-sched/flotilla/fairness"
)

const tol = 1e-9

func TestFairShares(t *testing.T) {
	tests := []struct {
		name    string
		weights []float64
		active  []bool
		want    []float64
	}{
		{"factors 1, 2, 10", []float64{1, 0.5, 0.1}, []bool{true, true, true}, []float64{1 / 1.6, 0.5 / 1.6, 0.1 / 1.6}},
		{"equal weights", []float64{1, 1, 1, 1}, []bool{true, true, true, true}, []float64{0.25, 0.25, 0.25, 0.25}},
		{"inactive queue excluded", []float64{1, 0.5, 0.1}, []bool{true, false, true}, []float64{1 / 1.1, 0, 0.1 / 1.1}},
		{"single active queue gets everything", []float64{3, 1}, []bool{false, true}, []float64{0, 1}},
		{"no active queue", []float64{1, 1}, []bool{false, false}, []float64{0, 0}},
		{"no queues", nil, nil, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out := make([]float64, len(tc.weights))
			fairness.FairShares(tc.weights, tc.active, out)
			assert.InDeltaSlice(t, tc.want, out, 1e-15)
		})
	}
}

func TestFairSharesInPlace(t *testing.T) {
	w := []float64{1, 3}
	fairness.FairShares(w, []bool{true, true}, w)
	assert.Equal(t, []float64{0.25, 0.75}, w)
}

func TestAdjustedFairShares(t *testing.T) {
	tests := []struct {
		name    string
		weights []float64
		active  []bool
		demand  []float64
		want    []float64
	}{
		{"equal weights, one small demand", []float64{1, 1, 1}, []bool{true, true, true}, []float64{0.1, 0.6, 0.6}, []float64{0.1, 0.45, 0.45}},
		{"all demands large: plain fair shares", []float64{1, 0.5, 0.1}, []bool{true, true, true}, []float64{2, 2, 2}, []float64{1 / 1.6, 0.5 / 1.6, 0.1 / 1.6}},
		{"all demands small: everyone satisfied", []float64{1, 1, 1}, []bool{true, true, true}, []float64{0.1, 0.2, 0.3}, []float64{0.1, 0.2, 0.3}},
		{"demands sum to exactly 1", []float64{1, 1}, []bool{true, true}, []float64{0.3, 0.7}, []float64{0.3, 0.7}},
		{"cascade: capping one frees room that caps the next", []float64{1, 1, 1, 1}, []bool{true, true, true, true}, []float64{0.05, 0.26, 0.5, 0.5}, []float64{0.05, 0.26, 0.345, 0.345}},
		{"weighted leftover", []float64{1, 2, 1}, []bool{true, true, true}, []float64{0.1, 1, 1}, []float64{0.1, 0.6, 0.3}},
		{"inactive queue excluded", []float64{1, 1, 1}, []bool{true, false, true}, []float64{0.1, 0.6, 0.6}, []float64{0.1, 0, 0.6}},
		{"zero, negative and NaN demand count as 0", []float64{1, 1, 1, 1}, []bool{true, true, true, true}, []float64{0, -1, math.NaN(), 3}, []float64{0, 0, 0, 1}},
		{"no active queue", []float64{1, 1}, []bool{false, false}, []float64{1, 1}, []float64{0, 0}},
		{"no queues", nil, nil, nil, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out := make([]float64, len(tc.weights))
			fairness.AdjustedFairShares(tc.weights, tc.active, tc.demand, out)
			assert.InDeltaSlice(t, tc.want, out, 1e-12)
		})
	}
}

func TestAdjustedFairSharesInPlace(t *testing.T) {
	d := []float64{0.1, 0.6, 0.6}
	fairness.AdjustedFairShares([]float64{1, 1, 1}, []bool{true, true, true}, d, d)
	assert.InDeltaSlice(t, []float64{0.1, 0.45, 0.45}, d, 1e-15)
}

func TestFairSharesDoNotAllocate(t *testing.T) {
	w, a, d := make([]float64, 100), make([]bool, 100), make([]float64, 100)
	for i := range w {
		w[i], a[i], d[i] = 1/float64(1+i%7), i%5 != 0, float64(i%13)/40
	}
	out := make([]float64, 100)
	assert.Zero(t, testing.AllocsPerRun(100, func() {
		fairness.FairShares(w, a, out)
		fairness.AdjustedFairShares(w, a, d, out)
	}))
}

// queueSpec is one generated queue.
type queueSpec struct {
	Weight float64
	Active bool
	Demand float64
}

// genQueues generates up to 100 queues (gopter's default size). Weights are
// 1/priorityFactor for factors in [0.1, 100]; demands mix exact zeros, small
// and large values and repeats of round numbers, so ties and "exactly at the
// level" cases occur.
func genQueues() gopter.Gen {
	weight := gen.OneGenOf(
		gen.Float64Range(0.01, 10),
		gen.OneConstOf(1.0, 0.5, 0.1, 2.0),
	)
	demand := gen.OneGenOf(
		gen.Const(0.0),
		gen.Float64Range(0, 0.1),
		gen.Float64Range(0, 1.5),
		gen.OneConstOf(0.1, 0.25, 0.5, 1.0),
	)
	return gen.SliceOf(gen.Struct(reflect.TypeOf(queueSpec{}), map[string]gopter.Gen{
		"Weight": weight,
		"Active": gen.Bool(),
		"Demand": demand,
	}))
}

func split(qs []queueSpec) (w []float64, a []bool, d []float64) {
	for _, q := range qs {
		w, a, d = append(w, q.Weight), append(a, q.Active), append(d, q.Demand)
	}
	return w, a, d
}

func properties(t *testing.T) *gopter.Properties {
	p := gopter.DefaultTestParametersWithSeed(20261121)
	p.MinSuccessfulTests = 500
	return gopter.NewProperties(p)
}

func TestFairSharesProperties(t *testing.T) {
	props := properties(t)
	props.Property("active shares are weight/Σweights, sum to 1; inactive are 0", prop.ForAll(
		func(qs []queueSpec) bool {
			w, a, _ := split(qs)
			out := make([]float64, len(qs))
			fairness.FairShares(w, a, out)
			var sumW float64
			anyActive := false
			for i := range qs {
				if a[i] {
					sumW += w[i]
					anyActive = true
				}
			}
			for i := range qs {
				if !a[i] && out[i] != 0 || a[i] && !scalar.EqualWithinAbsOrRel(out[i], w[i]/sumW, tol, tol) {
					return false
				}
			}
			if !anyActive {
				return floats.Sum(out) == 0
			}
			return math.Abs(floats.Sum(out)-1) < tol
		},
		genQueues(),
	))
	props.TestingRun(t)
}

// adjustedOracle computes demand-capped fair shares the slow, obvious way:
// visit active queues by increasing demand/weight; each either fits under the
// even split of what remains (capped at its demand) or, with every queue
// after it, takes its weighted slice of the remainder.
func adjustedOracle(w []float64, a []bool, d []float64) []float64 {
	out := make([]float64, len(w))
	var idx []int
	freeWeight := 0.0
	for i := range w {
		if a[i] {
			idx = append(idx, i)
			freeWeight += w[i]
		}
	}
	dem := func(i int) float64 { return max(d[i], 0) }
	slices.SortFunc(idx, func(i, j int) int { return cmp.Compare(dem(i)/w[i], dem(j)/w[j]) })
	remaining := 1.0
	for k, i := range idx {
		if dem(i) <= remaining*w[i]/freeWeight {
			out[i] = dem(i)
			remaining -= dem(i)
			freeWeight -= w[i]
			continue
		}
		for _, j := range idx[k:] {
			out[j] = remaining * w[j] / freeWeight
		}
		break
	}
	return out
}

func TestAdjustedFairSharesProperties(t *testing.T) {
	props := properties(t)
	props.Property("never above demand, never negative, 0 when inactive", prop.ForAll(
		func(qs []queueSpec) bool {
			w, a, d := split(qs)
			out := make([]float64, len(qs))
			fairness.AdjustedFairShares(w, a, d, out)
			for i := range qs {
				if out[i] < 0 || out[i] > d[i]+tol || !a[i] && out[i] != 0 {
					return false
				}
			}
			return true
		},
		genQueues(),
	))
	props.Property("Σ out = min(1, Σ active demand)", prop.ForAll(
		func(qs []queueSpec) bool {
			w, a, d := split(qs)
			out := make([]float64, len(qs))
			fairness.AdjustedFairShares(w, a, d, out)
			sumD := 0.0
			for i := range qs {
				if a[i] {
					sumD += d[i]
				}
			}
			return math.Abs(floats.Sum(out)-min(1, sumD)) < tol
		},
		genQueues(),
	))
	props.Property("a queue demanding at least its fair share gets at least its fair share", prop.ForAll(
		func(qs []queueSpec) bool {
			w, a, d := split(qs)
			fair, out := make([]float64, len(qs)), make([]float64, len(qs))
			fairness.FairShares(w, a, fair)
			fairness.AdjustedFairShares(w, a, d, out)
			for i := range qs {
				if a[i] && d[i] >= fair[i] && out[i] < fair[i]-tol {
					return false
				}
			}
			return true
		},
		genQueues(),
	))
	// Max-min fairness in share per unit of weight: if queue u is left short
	// of its demand (out[u] < demand[u]), then out[u]/w[u] ≥ out[j]/w[j] for
	// every active queue j — no queue, satisfied or not, holds more per unit
	// of weight than one that still wants more. Hence all short queues share
	// one ratio, the water level.
	props.Property("max-min: a short queue's out/weight is the largest", prop.ForAll(
		func(qs []queueSpec) bool {
			w, a, d := split(qs)
			out := make([]float64, len(qs))
			fairness.AdjustedFairShares(w, a, d, out)
			for u := range qs {
				if !a[u] || out[u] >= d[u]-tol {
					continue
				}
				for j := range qs {
					if a[j] && out[u]/w[u] < out[j]/w[j]-tol*max(1, out[j]/w[j]) {
						return false
					}
				}
			}
			return true
		},
		genQueues(),
	))
	props.Property("agrees with a sort-based oracle", prop.ForAll(
		func(qs []queueSpec) bool {
			w, a, d := split(qs)
			out := make([]float64, len(qs))
			fairness.AdjustedFairShares(w, a, d, out)
			return floats.EqualApprox(out, adjustedOracle(w, a, d), tol)
		},
		genQueues(),
	))
	props.TestingRun(t)
}

func TestAdjustedOracleSanity(t *testing.T) {
	got := adjustedOracle([]float64{1, 1, 1}, []bool{true, true, true}, []float64{0.1, 0.6, 0.6})
	require.InDeltaSlice(t, []float64{0.1, 0.45, 0.45}, got, 1e-15)
}
