package priority_test

import (
	"math"
	"testing"

	"github.com/leanovate/gopter"
	"github.com/leanovate/gopter/gen"
	"github.com/leanovate/gopter/prop"
	"github.com/stretchr/testify/assert"

	flotilla "github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/priority"
)

func TestCalculateSeedExamples(t *testing.T) {
	def := priority.DefaultWeights()
	assert.Equal(t, priority.Weights{FairShare: 100000, Queue: 10000, Bank: 0, Urgency: 1000}, def)
	bank10 := def
	bank10.Bank = 10
	bank1000 := def
	bank1000.Bank = 1000

	cases := []struct {
		name string
		f    priority.Factors
		w    priority.Weights
		want uint32
	}{
		{"first job, neutral queue and bank", priority.Factors{FairShare: 0.5, Urgency: 16}, def, 50000},
		{"user2 under bank A (300)", priority.Factors{FairShare: 0.5, Bank: 300, Urgency: 16}, bank10, 53000},
		// The seed multiplies 300 × −5 and prints 48500; the bank factor is
		// −5 and its weight 10, so the job's priority is 50000 − 50.
		{"user2 under bank C (−5)", priority.Factors{FairShare: 0.5, Bank: -5, Urgency: 16}, bank10, 49950},
		{"bonds: bank A 100, queue bronze 1", priority.Factors{FairShare: 0.5, Queue: 1, Bank: 100, Urgency: 16}, bank1000, 160000},
		{"negative total clamps to 0", priority.Factors{FairShare: 0, Urgency: 1}, def, 0},
		{"overflow clamps to 2^32-1", priority.Factors{FairShare: 1, Queue: 1 << 40, Urgency: 16}, def, math.MaxUint32},
		{"negative sum held at urgency 0", priority.Factors{FairShare: 0, Urgency: 0}, bank1000, 0},
		{"huge sum expedited at urgency 31", priority.Factors{FairShare: 1, Queue: 1 << 40, Urgency: 31}, bank1000, math.MaxUint32},
		{"rounds half away from zero", priority.Factors{FairShare: 0.000005, Urgency: 16}, def, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := priority.Calculate(c.f, c.w)
			assert.Equal(t, c.want, got.Priority)
		})
	}
}

// TestCalculateUrgencyZeroHoldsAndThirtyOneExpedites: urgency is looked at
// before any other factor. 0 holds the job (priority 0) and 31 expedites it
// (priority 2^32 − 1) whatever the weighted sum would be; every other
// urgency goes through the sum. The terms are kept in every case.
func TestCalculateUrgencyZeroHoldsAndThirtyOneExpedites(t *testing.T) {
	def := priority.DefaultWeights()
	cases := []struct {
		name     string
		f        priority.Factors
		want     uint32
		override priority.UrgencyOverride
	}{
		{"0 holds", priority.Factors{FairShare: 0.5, Urgency: 0}, 0, priority.Held},
		{"0 holds a job whose sum is huge", priority.Factors{FairShare: 1, Queue: 1 << 40, Urgency: 0}, 0, priority.Held},
		{"1 is in the sum", priority.Factors{FairShare: 0.5, Urgency: 1}, 35000, priority.NotOverridden},
		{"16 is neutral", priority.Factors{FairShare: 0.5, Urgency: 16}, 50000, priority.NotOverridden},
		{"30 is in the sum", priority.Factors{FairShare: 0.5, Urgency: 30}, 64000, priority.NotOverridden},
		{"31 expedites", priority.Factors{FairShare: 0.5, Urgency: 31}, math.MaxUint32, priority.Expedited},
		{"31 expedites a job whose sum is negative", priority.Factors{FairShare: 0, Bank: -1e12, Urgency: 31}, math.MaxUint32, priority.Expedited},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := priority.Calculate(c.f, def)
			assert.Equal(t, c.want, got.Priority)
			assert.Equal(t, c.override, got.Override)
			assert.Equal(t, priority.Term{Factor: float64(c.f.Urgency), Weight: 1000, Product: float64(c.f.Urgency-16) * 1000}, got.Urgency,
				"the urgency term is shown as computed")
			assert.Equal(t, priority.Term{Factor: c.f.FairShare, Weight: 100000, Product: c.f.FairShare * 100000}, got.FairShare,
				"the other terms are shown as computed")
		})
	}
	assert.Equal(t, "hold", priority.Held.String())
	assert.Equal(t, "expedite", priority.Expedited.String())
	assert.Equal(t, "", priority.NotOverridden.String())
}

func TestCalculateTerms(t *testing.T) {
	w := priority.DefaultWeights()
	w.Bank = 1000
	c := priority.Calculate(priority.Factors{FairShare: 0.5, Queue: 1, Bank: 100, Urgency: 18}, w)
	assert.Equal(t, priority.Term{Factor: 0.5, Weight: 100000, Product: 50000}, c.FairShare)
	assert.Equal(t, priority.Term{Factor: 1, Weight: 10000, Product: 10000}, c.Queue)
	assert.Equal(t, priority.Term{Factor: 100, Weight: 1000, Product: 100000}, c.Bank)
	assert.Equal(t, priority.Term{Factor: 18, Weight: 1000, Product: 2000}, c.Urgency)
	assert.Equal(t, uint32(162000), c.Priority)
}

func TestJobPriorityReversesOrder(t *testing.T) {
	assert.Equal(t, uint32(math.MaxUint32), priority.JobPriority(0))
	assert.Equal(t, uint32(0), priority.JobPriority(math.MaxUint32))
	// Higher multi-factor priority → lower flotilla.Job.Priority → runs
	// first under DESIGN.md's "lower number first".
	hi, lo := priority.JobPriority(160000), priority.JobPriority(50000)
	assert.Less(t, hi, lo)
	j := flotilla.Job{Priority: priority.JobPriority(53000)}
	assert.Equal(t, uint32(math.MaxUint32-53000), j.Priority)
}

func TestWeightsValidate(t *testing.T) {
	assert.NoError(t, priority.DefaultWeights().Validate())
	err := priority.Weights{Urgency: -1}.Validate()
	var fe *flotilla.FieldError
	assert.ErrorAs(t, err, &fe)
	assert.ErrorIs(t, err, flotilla.ErrNegative)
	assert.Equal(t, "weights.urgency", fe.Field)
	assert.Equal(t, "-1", fe.Value)
}

func TestCalculateProperties(t *testing.T) {
	props := gopter.NewProperties(gopterParams())
	anyFloat := gen.OneGenOf(gen.Float64(), gen.Float64Range(-1e6, 1e6),
		gen.OneConstOf(math.NaN(), math.Inf(1), math.Inf(-1), 0.0, -0.0, math.MaxFloat64, -math.MaxFloat64))
	anyInt := gen.OneGenOf(gen.Int64(), gen.Int64Range(-1e6, 1e6), gen.OneConstOf(int64(math.MaxInt64), int64(math.MinInt64)))

	props.Property("priority is 0 at urgency 0, 2^32-1 at 31, else the clamped, rounded sum, for any factor and weight values", prop.ForAll(
		func(fs, bank float64, queue int64, urgency int, wf, wq, wb, wu int64) bool {
			f := priority.Factors{FairShare: fs, Queue: queue, Bank: bank, Urgency: urgency}
			w := priority.Weights{FairShare: wf, Queue: wq, Bank: wb, Urgency: wu}
			c := priority.Calculate(f, w)
			sum := c.FairShare.Product + c.Queue.Product + c.Bank.Product + c.Urgency.Product
			var want uint64
			switch {
			case urgency == 0:
				want = 0
			case urgency == 31:
				want = math.MaxUint32
			case math.IsNaN(sum) || sum <= 0:
				want = 0
			case sum >= math.MaxUint32:
				want = math.MaxUint32
			default:
				want = uint64(math.Round(sum))
			}
			return uint64(c.Priority) == want && want <= math.MaxUint32
		},
		anyFloat, anyFloat, anyInt, gen.OneGenOf(gen.IntRange(-1000, 1000), gen.IntRange(0, 31)), anyInt, anyInt, anyInt, anyInt,
	))

	props.Property("with weights ≥ 0, more fair-share never lowers the priority", prop.ForAll(
		func(a, b float64, urgency int, wf int64) bool {
			w := priority.DefaultWeights()
			w.FairShare = wf
			lo := priority.Calculate(priority.Factors{FairShare: math.Min(a, b), Urgency: urgency}, w)
			hi := priority.Calculate(priority.Factors{FairShare: math.Max(a, b), Urgency: urgency}, w)
			return hi.Priority >= lo.Priority
		},
		gen.Float64Range(0, 1), gen.Float64Range(0, 1), gen.IntRange(0, 31), gen.Int64Range(0, 1<<40),
	))

	props.Property("JobPriority reverses the order strictly", prop.ForAll(
		func(a, b uint32) bool {
			return (a < b) == (priority.JobPriority(a) > priority.JobPriority(b))
		}, gen.UInt32(), gen.UInt32()))

	props.TestingRun(t, gopter.ConsoleReporter(false))
}
