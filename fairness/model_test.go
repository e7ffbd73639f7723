package fairness_test

import (
	"errors"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/fairness"
)

// gi is n Gi of memory in bytes, memory's default unit.
func gi(n int64) int64 { return n << 30 }

// cores is n cpus in milli-units, cpu's default unit.
func cores(n float64) int64 { return int64(n * 1000) }

// gpus is n GPUs in whole units, nvidia.com/gpu's default unit.
func gpus(n int64) int64 { return n }

var seedSchema = flotilla.MustResourceSchema("cpu", "memory", "nvidia.com/gpu")

// seedTotal is the cluster of seeds/armada-priority.md: 10 cpu, 20Gi, 5 GPUs.
var seedTotal = flotilla.Resources{cores(10), gi(20), gpus(5)}

func allOnes() map[string]float64 {
	return map[string]float64{"cpu": 1, "memory": 1, "nvidia.com/gpu": 1}
}

func TestAssetUsage(t *testing.T) {
	tests := []struct {
		name      string
		weights   map[string]float64
		r         flotilla.Resources
		wantUsage float64
		wantShare float64
	}{
		{"seed example: 5 + 2/2 + 1/0.5", allOnes(), flotilla.Resources{cores(5), gi(2), gpus(1)}, 8, 8.0 / 30},
		{"seed example, seed default weights (memory 0)", nil, flotilla.Resources{cores(5), gi(2), gpus(1)}, 7, 7.0 / 20},
		{"whole cluster, all weights 1", allOnes(), seedTotal, 30, 1},
		{"whole cluster, default weights", nil, seedTotal, 20, 1},
		{"nothing", nil, flotilla.Resources{0, 0, 0}, 0, 0},
		{"memory only costs nothing by default", nil, flotilla.Resources{0, gi(20), 0}, 0, 0},
		{"gpu weight 2", map[string]float64{"cpu": 1, "nvidia.com/gpu": 2}, flotilla.Resources{cores(1), 0, gpus(1)}, 1 + 2*2, 5.0 / 30},
		{"cpu not named weighs 0", map[string]float64{"nvidia.com/gpu": 1}, flotilla.Resources{cores(4), 0, gpus(1)}, 2, 0.2},
		{"fractional cpu", allOnes(), flotilla.Resources{500, 0, 0}, 0.5, 0.5 / 30},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, err := fairness.NewAsset(seedSchema, seedTotal, tc.weights)
			require.NoError(t, err)
			assert.Equal(t, fairness.Asset, m.Kind())
			assert.Equal(t, 3, m.Len())
			assert.InDelta(t, tc.wantUsage, m.Usage(tc.r), 1e-12)
			assert.InDelta(t, tc.wantShare, m.Share(tc.r), 1e-12)
		})
	}
}

// The seed example is exactly 8, not merely close to it.
func TestAssetSeedExampleExact(t *testing.T) {
	m, err := fairness.NewAsset(seedSchema, seedTotal, allOnes())
	require.NoError(t, err)
	assert.Equal(t, 8.0, m.Usage(flotilla.Resources{cores(5), gi(2), gpus(1)}))
}

// TestAssetUsageDoesNotDependOnUnits: factor_r = total_r / total_cpu is a
// ratio of amounts in r's own unit, so the seed example costs 8 cpu whether
// memory and GPUs are counted in whole units (the default), all resources in
// milli-units, or cpu in whole cores.
func TestAssetUsageDoesNotDependOnUnits(t *testing.T) {
	mustSchemaOf := func(t *testing.T, specs ...flotilla.ResourceSpec) *flotilla.ResourceSchema {
		s, err := flotilla.NewResourceSchemaOf(specs...)
		require.NoError(t, err)
		return s
	}
	allMilli := mustSchemaOf(t,
		flotilla.ResourceSpec{Name: "cpu", Unit: flotilla.UnitMilli},
		flotilla.ResourceSpec{Name: "memory", Unit: flotilla.UnitMilli},
		flotilla.ResourceSpec{Name: "nvidia.com/gpu", Unit: flotilla.UnitMilli})
	wholeCPU := mustSchemaOf(t,
		flotilla.ResourceSpec{Name: "cpu", Unit: flotilla.UnitWhole},
		flotilla.ResourceSpec{Name: "memory", Unit: flotilla.UnitWhole},
		flotilla.ResourceSpec{Name: "nvidia.com/gpu", Unit: flotilla.UnitWhole})
	for _, schema := range []*flotilla.ResourceSchema{seedSchema, allMilli, wholeCPU} {
		total := schema.MustParse(map[string]string{"cpu": "10", "memory": "20Gi", "nvidia.com/gpu": "5"})
		used := schema.MustParse(map[string]string{"cpu": "5", "memory": "2Gi", "nvidia.com/gpu": "1"})
		m, err := fairness.NewAsset(schema, total, allOnes())
		require.NoError(t, err)
		assert.Equal(t, 8.0, m.Usage(used), "units %v %v %v", schema.Unit(0), schema.Unit(1), schema.Unit(2))
		assert.Equal(t, 8.0/30, m.Share(used))
	}
}

func TestAssetResourceMissingFromCluster(t *testing.T) {
	// No GPUs in the cluster: the gpu factor would be 0, so GPUs cost nothing.
	m, err := fairness.NewAsset(seedSchema, flotilla.Resources{cores(10), gi(20), 0}, nil)
	require.NoError(t, err)
	assert.Equal(t, 5.0, m.Usage(flotilla.Resources{cores(5), 0, gpus(1)}))
	assert.Equal(t, 0.5, m.Share(flotilla.Resources{cores(5), 0, gpus(1)}))

	// The default weights name a GPU the schema may not have.
	cpuMem := flotilla.MustResourceSchema("memory", "cpu")
	m, err = fairness.NewAsset(cpuMem, flotilla.Resources{gi(8), cores(4)}, nil)
	require.NoError(t, err)
	assert.Equal(t, 2.0, m.Usage(flotilla.Resources{gi(8), cores(2)}))
}

// A weight for a resource the schema lacks is a weight on a resource of
// capacity 0: it contributes nothing, and the model is the one without it.
func TestAssetWeightForResourceAbsentFromSchemaContributesNothing(t *testing.T) {
	cpuMem := flotilla.MustResourceSchema("cpu", "memory")
	total := flotilla.Resources{cores(10), gi(20)}
	with, err := fairness.NewAsset(cpuMem, total, map[string]float64{"cpu": 1, "memory": 1, "nvidia.com/gpu": 5})
	require.NoError(t, err)
	without, err := fairness.NewAsset(cpuMem, total, map[string]float64{"cpu": 1, "memory": 1})
	require.NoError(t, err)
	v := flotilla.Resources{cores(5), gi(2)}
	assert.Equal(t, without.Usage(v), with.Usage(v))
	assert.Equal(t, without.Share(v), with.Share(v))
	assert.Equal(t, 6.0, with.Usage(v))
}

func TestNewAssetErrors(t *testing.T) {
	noCPU := flotilla.MustResourceSchema("memory", "nvidia.com/gpu")
	tests := []struct {
		name    string
		schema  *flotilla.ResourceSchema
		total   flotilla.Resources
		weights map[string]float64
		want    []error
		fields  []string
	}{
		{"nil schema", nil, seedTotal, nil, []error{flotilla.ErrRequired}, []string{"schema"}},
		{"total of wrong length", seedSchema, flotilla.Resources{1, 2}, nil, []error{flotilla.ErrInconsistent}, []string{"total"}},
		{"cpu missing from schema", noCPU, flotilla.Resources{gi(1), gpus(1)}, map[string]float64{"memory": 1}, []error{flotilla.ErrUnknownResource}, []string{"schema"}},
		{"total cpu 0", seedSchema, flotilla.Resources{0, gi(1), gpus(1)}, nil, []error{flotilla.ErrOutOfRange}, []string{"total.cpu"}},
		{"negative total", seedSchema, flotilla.Resources{cores(1), -1, 0}, nil, []error{flotilla.ErrNegative}, []string{"total.memory"}},
		{"NaN weight for a resource the schema lacks", seedSchema, seedTotal, map[string]float64{"cpu": 1, "tpu": math.NaN()}, []error{flotilla.ErrOutOfRange}, []string{"weights.tpu"}},
		{"weights whose sum overflows", seedSchema, seedTotal, map[string]float64{"cpu": math.MaxFloat64, "memory": math.MaxFloat64}, []error{flotilla.ErrOutOfRange}, []string{"weights"}},
		{"negative weight", seedSchema, seedTotal, map[string]float64{"cpu": 1, "memory": -0.5}, []error{flotilla.ErrNegative}, []string{"weights.memory"}},
		{"NaN weight", seedSchema, seedTotal, map[string]float64{"cpu": math.NaN()}, []error{flotilla.ErrOutOfRange}, []string{"weights.cpu"}},
		{"infinite weight", seedSchema, seedTotal, map[string]float64{"cpu": math.Inf(1)}, []error{flotilla.ErrOutOfRange}, []string{"weights.cpu"}},
		{"all weights zero", seedSchema, seedTotal, map[string]float64{}, []error{flotilla.ErrOutOfRange}, []string{"weights"}},
		{"only weight on a resource the cluster lacks", seedSchema, flotilla.Resources{cores(1), gi(1), 0}, map[string]float64{"nvidia.com/gpu": 1}, []error{flotilla.ErrOutOfRange}, []string{"weights"}},
		{
			"every problem at once", seedSchema, flotilla.Resources{0, -1, 0},
			map[string]float64{"tpu": -1, "memory": -1},
			[]error{flotilla.ErrNegative, flotilla.ErrOutOfRange, flotilla.ErrNegative, flotilla.ErrNegative},
			[]string{"total.memory", "total.cpu", "weights.memory", "weights.tpu"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, err := fairness.NewAsset(tc.schema, tc.total, tc.weights)
			require.Error(t, err)
			assert.Equal(t, fairness.Kind(0), m.Kind())
			errs := []error{err}
			if j, ok := err.(interface{ Unwrap() []error }); ok {
				errs = j.Unwrap()
			}
			require.Len(t, errs, len(tc.want), "%v", err)
			for i, e := range errs {
				assert.ErrorIs(t, e, tc.want[i])
				var fe *flotilla.FieldError
				require.True(t, errors.As(e, &fe), "%T is not a *FieldError", e)
				assert.Equal(t, tc.fields[i], fe.Field)
			}
		})
	}
}

func TestDRFShare(t *testing.T) {
	tests := []struct {
		name  string
		total flotilla.Resources
		r     flotilla.Resources
		want  float64
	}{
		{"seed cluster, seed usage: cpu dominates", seedTotal, flotilla.Resources{cores(5), gi(2), gpus(1)}, 0.5},
		{"memory dominates", seedTotal, flotilla.Resources{cores(1), gi(10), 0}, 0.5},
		{"gpu dominates", seedTotal, flotilla.Resources{cores(1), gi(1), gpus(4)}, 0.8},
		{"whole cluster", seedTotal, seedTotal, 1},
		{"nothing", seedTotal, flotilla.Resources{0, 0, 0}, 0},
		{"resource the cluster lacks is ignored", flotilla.Resources{cores(32), gi(256), 0}, flotilla.Resources{cores(8), gi(16), gpus(1)}, 0.25},
		{"more than the cluster", seedTotal, flotilla.Resources{cores(20), 0, 0}, 2},
		{"cluster with nothing", flotilla.Resources{0, 0, 0}, flotilla.Resources{cores(1), 0, 0}, 0},
		{"one 1-core job of 1000 × 32 cores", flotilla.Resources{cores(32000), gi(128000), 0}, flotilla.Resources{cores(1), gi(4), 0}, 1.0 / 32000},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := fairness.NewDRF(tc.total)
			assert.Equal(t, fairness.DominantResource, m.Kind())
			assert.Equal(t, len(tc.total), m.Len())
			assert.InDelta(t, tc.want, m.Share(tc.r), 1e-15)
			assert.Equal(t, m.Share(tc.r), m.Usage(tc.r))
		})
	}
}

func TestZeroModel(t *testing.T) {
	var m fairness.Model
	assert.Equal(t, 0.0, m.Share(flotilla.Resources{1, 2, 3}))
	assert.Equal(t, 0.0, m.Usage(flotilla.Resources{1, 2, 3}))
}

func TestKindString(t *testing.T) {
	assert.Equal(t, "dominant-resource", fairness.DominantResource.String())
	assert.Equal(t, "asset", fairness.Asset.String())
	assert.Equal(t, "Kind(9)", fairness.Kind(9).String())
}

func TestDefaultAssetWeightsIsFresh(t *testing.T) {
	w := fairness.DefaultAssetWeights()
	assert.Equal(t, map[string]float64{"cpu": 1, "nvidia.com/gpu": 1}, w)
	w["cpu"] = 7
	assert.Equal(t, 1.0, fairness.DefaultAssetWeights()["cpu"])
}

func TestModelIsACopy(t *testing.T) {
	total := seedTotal.Clone()
	m := fairness.NewDRF(total)
	total[0] = 1
	assert.Equal(t, 0.5, m.Share(flotilla.Resources{cores(5), 0, 0}))
}

func TestShareDoesNotAllocate(t *testing.T) {
	drf := fairness.NewDRF(seedTotal)
	asset, err := fairness.NewAsset(seedSchema, seedTotal, allOnes())
	require.NoError(t, err)
	r := flotilla.Resources{cores(5), gi(2), gpus(1)}
	sink := 0.0
	allocs := testing.AllocsPerRun(100, func() {
		sink += drf.Share(r) + drf.Usage(r) + asset.Share(r) + asset.Usage(r)
	})
	assert.Zero(t, allocs)
	assert.NotZero(t, sink)
}
