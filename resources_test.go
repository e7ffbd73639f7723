package flotilla

import (
	"errors"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestAddSaturating(t *testing.T) {
	r := Resources{math.MaxInt64 - 1, math.MinInt64 + 1, 5}
	r.AddSaturating(Resources{10, -10, -7})
	assert.Equal(t, Resources{math.MaxInt64, math.MinInt64, -2}, r)
	r = Resources{1, 2, 3}
	r.AddSaturating(Resources{4, 5, 6})
	assert.Equal(t, Resources{5, 7, 9}, r, "no overflow: a plain sum")
}

func TestAddCheckedLeavesOverflowUnchanged(t *testing.T) {
	r := Resources{math.MaxInt64, 1}
	assert.False(t, r.AddChecked(Resources{1, 1}))
	assert.Equal(t, Resources{math.MaxInt64, 1}, r)
}

// TestResourceSchemaCountsEachResourceInItsDefaultUnit: cpu in milli-units,
// everything else in whole units (bytes of memory), as Kubernetes' scheduler
// counts them; Parse, Format, String and Quantity all use the unit, and a
// node of 8Pi of memory, beyond the milli-unit range, parses.
func TestResourceSchemaCountsEachResourceInItsDefaultUnit(t *testing.T) {
	s := MustResourceSchema("cpu", "memory", "nvidia.com/gpu", "ephemeral-storage")
	assert.Equal(t, []Unit{UnitMilli, UnitWhole, UnitWhole, UnitWhole}, []Unit{s.Unit(0), s.Unit(1), s.Unit(2), s.Unit(3)})
	cases := []struct {
		in   map[string]string
		want Resources
		back map[string]string
		str  string
	}{
		{map[string]string{"cpu": "1.5", "memory": "4Gi", "nvidia.com/gpu": "2"},
			Resources{1500, 4 << 30, 2, 0},
			map[string]string{"cpu": "1500m", "memory": "4Gi", "nvidia.com/gpu": "2"},
			"cpu=1500m memory=4Gi nvidia.com/gpu=2"},
		{map[string]string{"cpu": "64", "memory": "4Ti", "ephemeral-storage": "8Pi"},
			Resources{64_000, 4 << 40, 0, 8 << 50},
			map[string]string{"cpu": "64", "memory": "4Ti", "ephemeral-storage": "8Pi"},
			"cpu=64 memory=4Ti ephemeral-storage=8Pi"},
		{map[string]string{"memory": "0.5", "nvidia.com/gpu": "100m"},
			Resources{0, 1, 1, 0},
			map[string]string{"memory": "1", "nvidia.com/gpu": "1"},
			"memory=1 nvidia.com/gpu=1"},
		{map[string]string{"memory": "1536"}, Resources{0, 1536, 0, 0}, map[string]string{"memory": "1536"}, "memory=1536"},
	}
	for _, c := range cases {
		got, err := s.Parse("r", c.in)
		require.NoError(t, err, "%v", c.in)
		assert.Equal(t, c.want, got, "%v", c.in)
		assert.Equal(t, c.back, s.Format(got))
		assert.Equal(t, c.str, s.String(got))
	}
	assert.Equal(t, "4Ti", s.Quantity(1, 4<<40))
	assert.Equal(t, "1500m", s.Quantity(0, 1500), "cpu values are milli-units")
	v, err := s.ParseQuantity(1, "100Mi")
	require.NoError(t, err)
	assert.Equal(t, int64(100<<20), v)

	_, err = s.Parse("r", map[string]string{"memory": "8Ei", "cpu": "9.3e15"})
	var fe *FieldError
	require.ErrorAs(t, err, &fe)
	assert.ErrorIs(t, err, ErrOutOfRange)
	assert.Len(t, err.(interface{ Unwrap() []error }).Unwrap(), 2, "both out of range: %v", err)
}

// ResourceSchema.Parse names each problem by the resource's path, an empty
// resource name as "" (r."", not a path ending in a dot).
func TestResourceSchemaParseNamesEachProblemByItsResource(t *testing.T) {
	s := MustResourceSchema("cpu", "memory")
	_, err := s.Parse("r", map[string]string{"": "1", "cpus": "1", "memory": "-1", "cpu": "x"})
	checkProblems(t, "parse", err, []problem{
		{`r.""`, ErrUnknownResource},
		{"r.cpu", ErrMalformed},
		{"r.cpus", ErrUnknownResource},
		{"r.memory", ErrNegative},
	})
}

// TestNewResourceSchemaOfReportsEveryProblem: explicit units are checked, and
// an empty name, a duplicate and an unknown unit are reported together.
func TestNewResourceSchemaOfReportsEveryProblem(t *testing.T) {
	s, err := NewResourceSchemaOf(ResourceSpec{"cpu", UnitWhole}, ResourceSpec{"example.com/milli", UnitMilli})
	require.NoError(t, err)
	assert.Equal(t, UnitWhole, s.Unit(0))
	assert.Equal(t, UnitMilli, s.Unit(1))
	r := s.MustParse(map[string]string{"cpu": "1.5", "example.com/milli": "1.5"})
	assert.Equal(t, Resources{2, 1500}, r, "whole cpu rounds up; a milli resource keeps the fraction")

	_, err = NewResourceSchemaOf(ResourceSpec{"", UnitMilli}, ResourceSpec{"a", UnitWhole}, ResourceSpec{"a", UnitWhole}, ResourceSpec{"b", 0})
	var fields []string
	for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
		var fe *FieldError
		require.True(t, errors.As(e, &fe), "%v", e)
		fields = append(fields, fe.Field)
	}
	assert.Equal(t, []string{"resources[0]", "resources[2]", "resources[3].unit"}, fields)
	assert.ErrorIs(t, err, ErrRequired)
	assert.ErrorIs(t, err, ErrDuplicate)
	assert.ErrorIs(t, err, ErrOutOfRange)
}

// TestClusterOf100000NodesOf4TiBSumsExactly: the cluster total of the
// largest scenario, 100,000 nodes of 64 cpu and 4 TiB of memory, fits with
// AddChecked (no saturation) and formats back exactly.
func TestClusterOf100000NodesOf4TiBSumsExactly(t *testing.T) {
	s := MustResourceSchema("cpu", "memory")
	node := s.MustParse(map[string]string{"cpu": "64", "memory": "4Ti"})
	total := s.Zero()
	for range 100_000 {
		require.True(t, total.AddChecked(node))
	}
	assert.Equal(t, Resources{6_400_000_000, 100_000 << 42}, total)
	assert.Equal(t, "cpu=6250Ki memory=400000Ti", s.String(total))
}
