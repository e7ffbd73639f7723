package priority_test

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/leanovate/gopter"
	"github.com/leanovate/gopter/gen"
	"github.com/leanovate/gopter/prop"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	flotilla "github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/fairness"
	"github.com/flotilla-sched/flotilla/priority"
)

const gi = int64(1) << 30 // bytes in one Gi

var t0 = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

// seedModel is the cluster of seeds/armada-priority.md: 10 cpu, 20Gi, 5 gpu,
// every resource weighted 1.
func seedModel(t testing.TB) (*flotilla.ResourceSchema, fairness.Model) {
	t.Helper()
	schema := flotilla.MustResourceSchema("cpu", "memory", "nvidia.com/gpu")
	m, err := fairness.NewAsset(schema, flotilla.Resources{10000, 20 * gi, 5},
		map[string]float64{"cpu": 1, "memory": 1, "nvidia.com/gpu": 1})
	require.NoError(t, err)
	return schema, m
}

func gopterParams() *gopter.TestParameters {
	p := gopter.DefaultTestParametersWithSeed(20240101)
	p.MinSuccessfulTests = 500
	return p
}

func TestSeedUsageIsEight(t *testing.T) {
	_, m := seedModel(t)
	use := flotilla.Resources{5000, 2 * gi, 1}
	assert.InDelta(t, 8.0, m.Usage(use), 1e-12)

	// With no memory of the past (halfTime 0) the queue priority is the
	// current usage, valued by the same model.
	qp, err := priority.NewQueuePriorities(0, t0)
	require.NoError(t, err)
	require.NoError(t, qp.UpdateResources(t0.Add(time.Second), &m, map[string]flotilla.Resources{"a": use}))
	assert.InDelta(t, 8.0, qp.Priority("a"), 1e-12)
}

func TestDecayAfterOneHalfTime(t *testing.T) {
	for _, c := range []struct{ a, b float64 }{{0, 8}, {2, 10}, {10, 2}, {5, 5}, {100, 0}} {
		got := priority.Decay(c.a, c.b, time.Hour, time.Hour)
		assert.InDelta(t, c.a+(c.b-c.a)/2, got, 1e-12, "A=%v B=%v", c.a, c.b)
	}
	assert.Equal(t, 15.0, priority.Decay(10, 20, time.Hour, time.Hour), "seed: one half-time from 10 toward 20")
}

func TestDecayConvergesUnderConstantUsage(t *testing.T) {
	p := 0.0
	for range 400 {
		p = priority.Decay(p, 8, 10*time.Minute, time.Hour)
	}
	assert.InDelta(t, 8.0, p, 1e-9)
	p = 50
	for range 400 {
		p = priority.Decay(p, 8, 10*time.Minute, time.Hour)
	}
	assert.InDelta(t, 8.0, p, 1e-9)
}

func TestDecayEdges(t *testing.T) {
	assert.Equal(t, 3.0, priority.Decay(3, 9, 0, time.Hour), "no time, no change")
	assert.Equal(t, 3.0, priority.Decay(3, 9, -time.Hour, time.Hour), "negative elapsed reads as zero")
	assert.Equal(t, 9.0, priority.Decay(3, 9, time.Nanosecond, 0), "no memory: jump to usage")
	// Not the seed's literal formula: a longer gap moves the priority more.
	short := priority.Decay(0, 8, time.Minute, time.Hour)
	long := priority.Decay(0, 8, 5*time.Hour, time.Hour)
	assert.Less(t, short, long)
}

func TestQueuePrioritiesUpdate(t *testing.T) {
	qp, err := priority.NewQueuePriorities(time.Hour, t0)
	require.NoError(t, err)
	require.NoError(t, qp.SetFactor("b", 2))
	require.NoError(t, qp.Update(t0.Add(time.Hour), map[string]float64{"a": 8, "b": 4}))
	assert.InDelta(t, 4.0, qp.Priority("a"), 1e-12)
	assert.InDelta(t, 2.0, qp.Priority("b"), 1e-12)
	assert.InDelta(t, 4.0, qp.EffectivePriority("b"), 1e-12, "priority × factor")

	// a stops using anything: it decays toward 0.
	require.NoError(t, qp.Update(t0.Add(2*time.Hour), map[string]float64{"b": 4}))
	assert.InDelta(t, 2.0, qp.Priority("a"), 1e-12)
	assert.InDelta(t, 3.0, qp.Priority("b"), 1e-12)
	assert.Equal(t, t0.Add(2*time.Hour), qp.Now())

	qs := qp.Queues()
	require.Len(t, qs, 2)
	assert.Equal(t, "a", qs[0].Name)
	assert.Equal(t, priority.QueuePriority{Name: "b", Priority: 3, Factor: 2, Effective: 6}, qs[1])
	assert.Zero(t, qp.Priority("nobody"))
	assert.Zero(t, qp.EffectivePriority("nobody"))
}

func TestQueuePrioritiesRejectsBadInputWithoutChange(t *testing.T) {
	qp, err := priority.NewQueuePriorities(time.Hour, t0)
	require.NoError(t, err)
	require.NoError(t, qp.Update(t0.Add(time.Hour), map[string]float64{"a": 8}))
	before := qp.Queues()

	cases := []struct {
		name  string
		err   error
		field string
		run   func() error
	}{
		{"time backwards", flotilla.ErrOutOfRange, "now", func() error {
			return qp.Update(t0, map[string]float64{"a": 1})
		}},
		{"negative usage", flotilla.ErrNegative, "usage.b", func() error {
			return qp.Update(t0.Add(2*time.Hour), map[string]float64{"a": 1, "b": -1})
		}},
		{"NaN usage", flotilla.ErrMalformed, "usage.a", func() error {
			return qp.Update(t0.Add(2*time.Hour), map[string]float64{"a": math.NaN()})
		}},
		{"empty queue name", flotilla.ErrRequired, "usage", func() error {
			return qp.Update(t0.Add(2*time.Hour), map[string]float64{"": 1})
		}},
		{"zero factor", flotilla.ErrOutOfRange, "queues.a.priorityFactor", func() error { return qp.SetFactor("a", 0) }},
		{"negative factor in list", flotilla.ErrOutOfRange, "queues[1].priorityFactor", func() error {
			return qp.SetFactors([]flotilla.Queue{{Name: "a", PriorityFactor: 3}, {Name: "z", PriorityFactor: -1}})
		}},
		{"nil model", flotilla.ErrRequired, "usageModel", func() error {
			return qp.UpdateResources(t0.Add(2*time.Hour), nil, nil)
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.run()
			var fe *flotilla.FieldError
			require.ErrorAs(t, err, &fe)
			assert.ErrorIs(t, err, c.err)
			assert.Equal(t, c.field, fe.Field)
			assert.Equal(t, before, qp.Queues())
			assert.Equal(t, t0.Add(time.Hour), qp.Now())
		})
	}

	_, err = priority.NewQueuePriorities(-time.Second, t0)
	assert.ErrorIs(t, err, flotilla.ErrNegative)
}

func TestUpdateResourcesRejectsWrongLength(t *testing.T) {
	_, m := seedModel(t)
	qp, err := priority.NewQueuePriorities(time.Hour, t0)
	require.NoError(t, err)
	err = qp.UpdateResources(t0, &m, map[string]flotilla.Resources{"a": {1, 2}})
	assert.ErrorIs(t, err, flotilla.ErrInconsistent)
	err = qp.UpdateResources(t0, &m, map[string]flotilla.Resources{"a": {1, -2, 0}})
	assert.ErrorIs(t, err, flotilla.ErrNegative)
	assert.Empty(t, qp.Queues())
}

func TestSetFactorsZeroMeansOne(t *testing.T) {
	qp, err := priority.NewQueuePriorities(time.Hour, t0)
	require.NoError(t, err)
	require.NoError(t, qp.SetFactors([]flotilla.Queue{{Name: "a"}, {Name: "b", PriorityFactor: 0.5}}))
	qs := qp.Queues()
	assert.Equal(t, 1.0, qs[0].Factor)
	assert.Equal(t, 0.5, qs[1].Factor)
}

// A factor below flotilla.MinPriorityFactor would make the weight 1/factor
// (and the queue-priority arithmetic) non-finite: SetFactor and SetFactors
// refuse it like Queue.Validate does, and change nothing.
func TestSetFactorsRejectsFactorsBelowTheMinimum(t *testing.T) {
	qp, err := priority.NewQueuePriorities(time.Hour, t0)
	require.NoError(t, err)
	for _, f := range []float64{1e-310, 1e-7, -1, math.NaN(), math.Inf(1)} {
		err := qp.SetFactors([]flotilla.Queue{{Name: "a", PriorityFactor: 1}, {Name: "b", PriorityFactor: f}})
		require.ErrorIs(t, err, flotilla.ErrOutOfRange, "factor %g", f)
		var fe *flotilla.FieldError
		require.ErrorAs(t, err, &fe)
		assert.Equal(t, "queues[1].priorityFactor", fe.Field)
		assert.ErrorIs(t, qp.SetFactor("c", f), flotilla.ErrOutOfRange, "factor %g", f)
	}
	assert.Empty(t, qp.Queues(), "nothing was set")
	require.NoError(t, qp.SetFactor("a", flotilla.MinPriorityFactor))
}

func TestDecayProperties(t *testing.T) {
	props := gopter.NewProperties(gopterParams())
	value := gen.Float64Range(0, 1e6)
	dur := gen.Int64Range(0, int64(1000*time.Hour))
	half := gen.Int64Range(1, int64(100*time.Hour))

	props.Property("moves toward usage and never overshoots", prop.ForAll(
		func(prev, usage float64, dt, ht int64) bool {
			next := priority.Decay(prev, usage, time.Duration(dt), time.Duration(ht))
			lo, hi := math.Min(prev, usage), math.Max(prev, usage)
			return next >= lo && next <= hi && math.Abs(next-usage) <= math.Abs(prev-usage)
		}, value, value, dur, half))

	props.Property("a longer gap never moves less", prop.ForAll(
		func(prev, usage float64, d1, d2, ht int64) bool {
			a := priority.Decay(prev, usage, time.Duration(min(d1, d2)), time.Duration(ht))
			b := priority.Decay(prev, usage, time.Duration(max(d1, d2)), time.Duration(ht))
			return math.Abs(b-usage) <= math.Abs(a-usage)
		}, value, value, dur, dur, half))

	props.Property("two steps equal one step under constant usage", prop.ForAll(
		func(prev, usage float64, d1, d2, ht int64) bool {
			h := time.Duration(ht)
			two := priority.Decay(priority.Decay(prev, usage, time.Duration(d1), h), usage, time.Duration(d2), h)
			one := priority.Decay(prev, usage, time.Duration(d1+d2), h)
			return math.Abs(two-one) <= 1e-9*math.Max(1, math.Max(math.Abs(prev), math.Abs(usage)))
		}, gen.Float64Range(0, 1000), gen.Float64Range(0, 1000), dur, dur, half))

	props.Property("tracker matches Decay queue by queue", prop.ForAll(
		func(ua, ub float64, d1, d2 int64) bool {
			qp, _ := priority.NewQueuePriorities(time.Hour, t0)
			t1 := t0.Add(time.Duration(d1))
			t2 := t1.Add(time.Duration(d2))
			_ = qp.Update(t1, map[string]float64{"a": ua, "b": ub})
			_ = qp.Update(t2, map[string]float64{"a": ua})
			wantA := priority.Decay(priority.Decay(0, ua, time.Duration(d1), time.Hour), ua, time.Duration(d2), time.Hour)
			wantB := priority.Decay(priority.Decay(0, ub, time.Duration(d1), time.Hour), 0, time.Duration(d2), time.Hour)
			return qp.Priority("a") == wantA && qp.Priority("b") == wantB
		}, value, value, dur, dur))

	props.TestingRun(t)
}

func TestErrorsAreFieldErrors(t *testing.T) {
	_, err := priority.NewQueuePriorities(-1, t0)
	var fe *flotilla.FieldError
	require.True(t, errors.As(err, &fe))
	assert.Equal(t, "priorityHalftime", fe.Field)
	assert.Equal(t, "-1ns", fe.Value)
}
