package flotilla

import (
	"errors"
	"testing"

	"github.com/leanovate/gopter"
	"github.com/leanovate/gopter/gen"
	"github.com/leanovate/gopter/prop"
	"github.com/stretchr/testify/assert"
)

const (
	lBlock = "topology.flotilla.dev/block"
	lRack  = "topology.flotilla.dev/rack"
	lHost  = "kubernetes.io/hostname"
)

func testTopologies() []Topology {
	return []Topology{
		{Name: "nvlink", Levels: []string{"topology.flotilla.dev/nvlink", lHost}},
		{Name: "default", Levels: []string{lBlock, lRack, lHost}},
	}
}

func TestJobValidateGangTopology(t *testing.T) {
	cases := []struct {
		name string
		edit func(j *Job)
		want []problem
	}{
		{"required", func(j *Job) { j.Gang.Topology = GangTopology{Required: lRack} }, nil},
		{"preferred with name", func(j *Job) { j.Gang.Topology = GangTopology{Name: "x", Preferred: lRack} }, nil},
		{"name alone", func(j *Job) { j.Gang.Topology = GangTopology{Name: "nvlink"} },
			[]problem{{`job "a-1".gang.topology.required`, ErrRequired}}},
		{"with a uniformity label", func(j *Job) {
			j.Gang.NodeUniformityLabel = "zone"
			j.Gang.Topology = GangTopology{Required: lRack}
		}, []problem{{`job "a-1".gang.topology.required`, ErrInconsistent}}},
		{"without gang", func(j *Job) { j.Gang = Gang{Topology: GangTopology{Preferred: lRack}} },
			[]problem{{`job "a-1".gang.topology.preferred`, ErrInconsistent}}},
	}
	for _, c := range cases {
		j := validJob()
		j.Gang.NodeUniformityLabel = ""
		c.edit(j)
		checkProblems(t, c.name, j.Validate(testSchema), c.want)
	}
}

// A topology refused whole names each of its fields with its own value,
// not their values run together ("nvlinktopology.flotilla.dev/rack").
func TestGangTopologyRefusedWholeNamesEachFieldWithItsOwnValue(t *testing.T) {
	values := func(err error) map[string]string {
		out := map[string]string{}
		for _, p := range Problems(err) {
			var fe *FieldError
			if errors.As(p, &fe) {
				out[fe.Field] = fe.Value
			}
		}
		return out
	}
	j := validJob()
	j.Gang = Gang{Topology: GangTopology{Name: "nvlink", Required: lRack, Preferred: lHost}}
	assert.Equal(t, map[string]string{`job "a-1".gang.topology.name`: "nvlink", `job "a-1".gang.topology.required`: lRack,
		`job "a-1".gang.topology.preferred`: lHost}, values(j.Validate(testSchema)), "set without gang.id")
	j = validJob()
	j.Gang.NodeUniformityLabel = "zone"
	j.Gang.Topology = GangTopology{Name: "nvlink", Required: lRack, Preferred: lHost}
	assert.Equal(t, map[string]string{`job "a-1".gang.topology.required`: lRack, `job "a-1".gang.topology.preferred`: lHost},
		values(j.Validate(testSchema)), "with a uniformity label: the levels, not the name")
	errs := GangTopology{Required: lRack}.Disagreements("t", "g", "jobs[0].gang.topology", GangTopology{Name: "nvlink", Required: lHost})
	assert.Len(t, errs, 2)
	assert.Equal(t, [2]string{"t.name", ""}, [2]string{errs[0].Field, errs[0].Value})
	assert.Equal(t, [2]string{"t.required", lRack}, [2]string{errs[1].Field, errs[1].Value})
	assert.Contains(t, errs[1].Error(), `jobs[0].gang.topology.required is "`+lHost+`"`)
	assert.ErrorIs(t, errs[1], ErrInconsistent)
}

func TestFindTopologyDefaultsToDefaultThenFirst(t *testing.T) {
	ts := testTopologies()
	assert.Equal(t, "default", FindTopology(ts, "").Name, "the one named default, though listed second")
	assert.Equal(t, "nvlink", FindTopology(ts, "nvlink").Name)
	assert.Nil(t, FindTopology(ts, "other"))
	assert.Equal(t, "nvlink", FindTopology(ts[:1], "").Name, "no default: the first")
	assert.Nil(t, FindTopology(nil, ""))
}

func TestResolveTopologyNamesFieldAndValue(t *testing.T) {
	ts := testTopologies()
	top, r, p, err := ResolveTopology(ts, "g", GangTopology{Required: lBlock, Preferred: lRack})
	assert.NoError(t, err)
	assert.Equal(t, "default", top.Name)
	assert.Equal(t, [2]int{0, 1}, [2]int{r, p})
	_, r, p, err = ResolveTopology(ts, "g", GangTopology{Name: "nvlink", Preferred: lHost})
	assert.NoError(t, err)
	assert.Equal(t, [2]int{-1, 1}, [2]int{r, p})
	top, r, p, err = ResolveTopology(ts, "g", GangTopology{})
	assert.NoError(t, err)
	assert.Nil(t, top)
	assert.Equal(t, [2]int{-1, -1}, [2]int{r, p})

	bad := []struct {
		gt    GangTopology
		field string
		class error
	}{
		{GangTopology{Name: "fat-tree", Required: lRack}, "g.name", ErrUnknownName},
		{GangTopology{Required: "zone"}, "g.required", ErrUnknownName},
		{GangTopology{Name: "nvlink", Preferred: lRack}, "g.preferred", ErrUnknownName},
		{GangTopology{Required: lRack, Preferred: lBlock}, "g.preferred", ErrInconsistent},
	}
	for _, b := range bad {
		_, _, _, err := ResolveTopology(ts, "g", b.gt)
		var fe *FieldError
		if assert.True(t, errors.As(err, &fe), "%+v", b.gt) {
			assert.Equal(t, b.field, fe.Field)
			assert.ErrorIs(t, err, b.class)
		}
	}
}

func TestValidateTopologies(t *testing.T) {
	checkProblems(t, "valid", ValidateTopologies("topologies", testTopologies()), nil)
	checkProblems(t, "none", ValidateTopologies("topologies", nil), nil)
	checkProblems(t, "every problem", ValidateTopologies("topologies", []Topology{
		{Name: "", Levels: []string{"a"}},
		{Name: "t", Levels: nil},
		{Name: "t", Levels: []string{"a", "", "a"}},
	}), []problem{
		{"topologies[0].name", ErrRequired},
		{"topologies[1].levels", ErrRequired},
		{"topologies[2].name", ErrDuplicate},
		{"topologies[2].levels[1]", ErrRequired},
		{"topologies[2].levels[2]", ErrDuplicate},
	})
}

// The fast path agrees with Validate on the gang topology's rules.
func TestJobFastValidityAgreesWithValidateOnTopology(t *testing.T) {
	schema := MustResourceSchema("cpu")
	params := gopter.DefaultTestParametersWithSeed(13)
	params.MinSuccessfulTests = 2000
	p := gopter.NewProperties(params)
	pick := func(xs ...string) gopter.Gen { return gen.OneConstOf(stringsToAny(xs)...) }
	p.Property("valid(j) == (report(j) == nil)", prop.ForAll(
		func(gangID, label, name, req, pref string) bool {
			card := 0
			if gangID != "" {
				card = 2
			}
			j := &Job{ID: "a", Queue: "q", Requests: Resources{1},
				Gang: Gang{ID: gangID, Cardinality: card, NodeUniformityLabel: label, Topology: GangTopology{Name: name, Required: req, Preferred: pref}}}
			return j.valid(schema) == (j.report(schema) == nil)
		},
		pick("", "g"), pick("", "zone"), pick("", "t"), pick("", lRack), pick("", lHost),
	))
	p.TestingRun(t)
}

// A gang topology names a level, and never comes with a node-uniformity
// label: each problem names its own field and value.
func TestGangTopologyLevelProblemsNameEachFieldAndValue(t *testing.T) {
	type problem struct{ field, value string }
	for _, c := range []struct {
		name       string
		gt         GangTopology
		uniformity string
		want       []problem
	}{
		{"a required level", GangTopology{Required: "rack"}, "", nil},
		{"no level", GangTopology{Name: "nv"}, "", []problem{{"g.required", ""}}},
		{"no level, with a label", GangTopology{Name: "nv"}, "zone", []problem{{"g.required", ""}}},
		{"both levels with a label", GangTopology{Required: "block", Preferred: "rack"}, "zone",
			[]problem{{"g.required", "block"}, {"g.preferred", "rack"}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var got []problem
			for _, err := range c.gt.LevelProblems("g", c.uniformity) {
				got = append(got, problem{err.Field, err.Value})
			}
			assert.Equal(t, c.want, got)
		})
	}
}
