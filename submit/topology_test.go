package submit

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flotilla-sched/flotilla"
)

const (
	tBlock = "topology.flotilla.dev/block"
	tRack  = "topology.flotilla.dev/rack"
)

// topoCatalog is testCatalog with a two-level topology "default".
func topoCatalog() *Catalog {
	c := testCatalog()
	c.Topologies = []flotilla.Topology{{Name: "default", Levels: []string{tBlock, tRack}}}
	return c
}

func topoMember(count int, gt *GangTopologySpec) JobTemplate {
	t := member("g", 2, count, "", "")
	t.Gang.Topology = gt
	return t
}

func TestGangTopologyIsCheckedAgainstTheConfiguredTopologies(t *testing.T) {
	for _, tc := range []struct {
		name string
		ts   []JobTemplate
		want []problem
	}{
		{name: "required", ts: []JobTemplate{topoMember(2, &GangTopologySpec{Required: tRack})}},
		{name: "both, named", ts: []JobTemplate{topoMember(2, &GangTopologySpec{Name: "default", Required: tBlock, Preferred: tRack})}},
		{name: "no level", ts: []JobTemplate{topoMember(2, &GangTopologySpec{Name: "default"})},
			want: []problem{{"jobs[0].gang.topology.required", "", flotilla.ErrRequired}}},
		{name: "unknown topology", ts: []JobTemplate{topoMember(2, &GangTopologySpec{Name: "nvlink", Required: tRack})},
			want: []problem{{"jobs[0].gang.topology.name", "nvlink", flotilla.ErrUnknownName}}},
		{name: "unknown level", ts: []JobTemplate{topoMember(2, &GangTopologySpec{Preferred: "zone"})},
			want: []problem{{"jobs[0].gang.topology.preferred", "zone", flotilla.ErrUnknownName}}},
		{name: "preferred above required", ts: []JobTemplate{topoMember(2, &GangTopologySpec{Required: tRack, Preferred: tBlock})},
			want: []problem{{"jobs[0].gang.topology.preferred", tBlock, flotilla.ErrInconsistent}}},
		{name: "members disagree", ts: []JobTemplate{topoMember(1, &GangTopologySpec{Required: tRack}), topoMember(1, nil)},
			want: []problem{{"jobs[1].gang.topology.required", "", flotilla.ErrInconsistent}}},
		{name: "members disagree on two fields", ts: []JobTemplate{topoMember(1, &GangTopologySpec{Required: tRack}),
			topoMember(1, &GangTopologySpec{Name: "default", Required: tBlock})},
			want: []problem{{"jobs[1].gang.topology.name", "default", flotilla.ErrInconsistent}, {"jobs[1].gang.topology.required", tBlock, flotilla.ErrInconsistent}}},
		{name: "with a uniformity label", ts: []JobTemplate{func() JobTemplate {
			t := topoMember(2, &GangTopologySpec{Name: "default", Required: tBlock, Preferred: tRack})
			t.Gang.NodeUniformityLabel = "zone"
			return t
		}()}, want: []problem{{"jobs[0].gang.topology.required", tBlock, flotilla.ErrInconsistent}, {"jobs[0].gang.topology.preferred", tRack, flotilla.ErrInconsistent}}},
		{name: "key too long", ts: []JobTemplate{topoMember(2, &GangTopologySpec{Required: "x/" + strings.Repeat("k", MaxLabelValueBytes+1)})},
			want: []problem{{"jobs[0].gang.topology.required", Shown("x/" + strings.Repeat("k", MaxLabelValueBytes+1)), flotilla.ErrOutOfRange},
				{"jobs[0].gang.topology.required", "x/" + strings.Repeat("k", MaxLabelValueBytes+1), flotilla.ErrUnknownName}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var c counter
			specs, err := Rules{}.Jobs(request(tc.ts...), topoCatalog(), testNow, c.next)
			if tc.want == nil {
				require.NoError(t, err)
				require.Len(t, specs, 2)
				for _, s := range specs {
					assert.Equal(t, tc.ts[0].Gang.Topology.topology(), s.Job.Gang.Topology)
				}
				return
			}
			require.Nil(t, specs)
			requireProblems(t, err, tc.want...)
		})
	}
	// Without configured topologies, a gang that asks for one is refused.
	reject(t, request(topoMember(2, &GangTopologySpec{Required: tRack})),
		problem{"jobs[0].gang.topology.name", "", flotilla.ErrUnknownName})
}

func TestParseTakesGangTopology(t *testing.T) {
	req, err := Parse([]byte(`{"queue": "A", "jobSet": "s", "jobs": [{"count": 2, "requests": {"cpu": "1"},
		"gang": {"id": "g", "cardinality": 2, "topology": {"name": "default", "required": "` + tRack + `"}}}]}`))
	require.NoError(t, err)
	assert.Equal(t, &GangTopologySpec{Name: "default", Required: tRack}, req.Jobs[0].Gang.Topology)
	_, err = Parse([]byte(`{"queue": "A", "jobSet": "s", "jobs": [{"requests": {"cpu": "1"},
		"gang": {"id": "g", "cardinality": 1, "topology": {"require": "x"}}}]}`))
	require.Error(t, err)
	assert.ErrorIs(t, err, flotilla.ErrUnknownName)
}
