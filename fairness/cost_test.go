package fairness_test

import (
	"math"
	"testing"

	"github.com/leanovate/gopter/gen"
	"github.com/leanovate/gopter/prop"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/fairness"
)

// Cost is Share(alloc+req) − Share(alloc), and, while the resource that
// dominates alloc+req also dominates alloc, that resource's fraction in
// req exactly: equal requests cost the same bits on every such alloc.
func TestCostIsTheShareAddedWithoutRoundingNoise(t *testing.T) {
	total := flotilla.Resources{cores(32000), gi(128000), 0}
	m := fairness.NewDRF(total)
	job := flotilla.Resources{cores(1), gi(4), 0}
	for _, tc := range []struct {
		name  string
		alloc flotilla.Resources
		want  float64
		job   flotilla.Resources // nil: one core and 4Gi
	}{
		{"empty", flotilla.Resources{0, 0, 0}, 1.0 / 32000, nil},
		{"cpu dominates before and after", flotilla.Resources{cores(2003), gi(4012), 0}, 1.0 / 32000, nil},
		{"tie before: the resource that dominates after", flotilla.Resources{cores(1000), gi(4000), 0}, 1.0 / 32000, nil},
		{"memory dominates before and after", flotilla.Resources{0, gi(64000), 0}, 4.0 / 128000, nil},
		// Memory dominates before (32001/128000), cpu after (8003/32000):
		// the subtraction itself (NaN).
		{"dominance changes", flotilla.Resources{cores(7999), gi(32001), 0}, math.NaN(), flotilla.Resources{cores(4), gi(4), 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The subtraction Share(alloc+req) − Share(alloc) differs in the
			// last bits from alloc to alloc; Cost does not.
			req := job
			if tc.job != nil {
				req = tc.job
			}
			after := tc.alloc.Clone()
			after.Add(req)
			if math.IsNaN(tc.want) {
				tc.want = m.Share(after) - m.Share(tc.alloc)
				assert.InDelta(t, 8003.0/32000-32001.0/128000, tc.want, 1e-15)
			}
			assert.Equal(t, tc.want, m.Cost(tc.alloc, req))
			assert.InDelta(t, m.Share(after)-m.Share(tc.alloc), m.Cost(tc.alloc, req), 1e-15)
		})
	}
	// The subtraction's noise, which Cost removes: one 1-core job costs a
	// queue holding 2,003 cores other than one holding 7.
	a, b := flotilla.Resources{cores(2003), 0, 0}, flotilla.Resources{cores(7), 0, 0}
	sub := func(x flotilla.Resources) float64 {
		y := x.Clone()
		y.Add(job)
		return m.Share(y) - m.Share(x)
	}
	require.NotEqual(t, sub(a), sub(b), "the noise this test is about")
	assert.Equal(t, m.Cost(a, job), m.Cost(b, job))

	var zero fairness.Model
	assert.Zero(t, zero.Cost(job, job))
}

// Cost agrees with the subtraction it replaces, under both models, to
// rounding; under asset fairness it is Share(req) whatever alloc is.
func TestPropertyCostIsShareDifference(t *testing.T) {
	total := flotilla.Resources{cores(640), gi(5120), gpus(80)}
	drf := fairness.NewDRF(total)
	asset, err := fairness.NewAsset(seedSchema, total, allOnes())
	require.NoError(t, err)
	amount := func(hi int64) func(int64) int64 { return func(x int64) int64 { return x % hi } }
	c, g, gp := amount(cores(640)), amount(gi(5120)), amount(81)
	p := properties(t)
	p.Property("Cost ≈ Share(alloc+req) − Share(alloc); Price is Share(alloc+req) and Cost exactly", prop.ForAll(func(v []int64) bool {
		alloc := flotilla.Resources{c(v[0]), g(v[1]), gp(v[2])}
		req := flotilla.Resources{c(v[3]), g(v[4]), gp(v[5])}
		after := alloc.Clone()
		after.Add(req)
		for _, m := range []*fairness.Model{&drf, &asset} {
			if a, c := m.Price(alloc, req); a != m.Share(after) || c != m.Cost(alloc, req) {
				return false // Price is the two calls, bit for bit
			}
			want := m.Share(after) - m.Share(alloc)
			if math.Abs(m.Cost(alloc, req)-want) > 1e-12*math.Max(1, m.Share(after)) {
				return false
			}
		}
		return asset.Cost(alloc, req) == asset.Share(req)
	}, gen.SliceOfN(6, gen.Int64Range(0, 1<<40))))
	p.TestingRun(t)
}

// Price is Share(alloc+req) and Cost(alloc, req) bit for bit where the
// resources tie, which the property above, drawing from wide ranges,
// never reaches: every alloc and req of 0–6 units per resource on small
// clusters, where the dominant resource of alloc+req often ties with
// another (the first of equals dominates, as in Cost) and the fractions
// are not exact in binary. Also on the zero Model.
func TestPriceIsShareAndCostWhereResourcesTie(t *testing.T) {
	var models []*fairness.Model
	for _, total := range []flotilla.Resources{{10, 10, 10}, {10, 20, 30}, {3, 6, 0}} {
		drf := fairness.NewDRF(total)
		asset, err := fairness.NewAsset(seedSchema, total, allOnes())
		require.NoError(t, err)
		models = append(models, &drf, &asset)
	}
	models = append(models, &fairness.Model{})
	for _, m := range models {
		for k := range 7 * 7 * 7 * 7 * 7 * 7 {
			v := [6]int64{}
			for i, x := 0, k; i < 6; i, x = i+1, x/7 {
				v[i] = int64(x % 7)
			}
			alloc, req := flotilla.Resources{v[0], v[1], v[2]}, flotilla.Resources{v[3], v[4], v[5]}
			after := alloc.Clone()
			after.Add(req)
			a, c := m.Price(alloc, req)
			if a != m.Share(after) || c != m.Cost(alloc, req) {
				t.Fatalf("%v model on %v + %v: Price %v, %v; Share and Cost %v, %v", m.Kind(), alloc, req, a, c, m.Share(after), m.Cost(alloc, req))
			}
		}
	}
}
