package scenario

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flotilla-sched/flotilla"
)

const (
	tBlock = "topology.flotilla.dev/block"
	tRack  = "topology.flotilla.dev/rack"
	tHost  = "kubernetes.io/hostname"
)

// topologyFile is baseFile with a three-level topology and an "nvlink"
// one, racks on its nodes, and round 0's jobs a gang asking for gt.
func topologyFile(gt *GangTopologySpec) *File {
	f := baseFile()
	f.Config.Topologies = []TopologySpec{
		{Name: "default", Levels: []string{tBlock, tRack, tHost}},
		{Name: "nvlink", Levels: []string{"topology.flotilla.dev/nvlink", tHost}},
	}
	f.Nodes[0].Labels = map[string]string{tBlock: "b1", tRack: "r1"}
	f.Rounds[0].Submit[0].Gang = &GangSpec{ID: "g", Topology: gt}
	return f
}

func TestTopologyFieldsAreValidated(t *testing.T) {
	cases := []struct {
		name  string
		edit  func(f *File)
		field string
		err   error
	}{
		{"topology unnamed", func(f *File) { f.Config.Topologies[0].Name = "" }, "config.topologies[0].name", flotilla.ErrRequired},
		{"topology twice", func(f *File) { f.Config.Topologies[1].Name = "default" }, "config.topologies[1].name", flotilla.ErrDuplicate},
		{"no levels", func(f *File) { f.Config.Topologies[1].Levels = nil }, "config.topologies[1].levels", flotilla.ErrRequired},
		{"empty level", func(f *File) { f.Config.Topologies[0].Levels[1] = "" }, "config.topologies[0].levels[1]", flotilla.ErrRequired},
		{"level twice", func(f *File) { f.Config.Topologies[0].Levels[2] = tBlock }, "config.topologies[0].levels[2]", flotilla.ErrDuplicate},
		{"no level asked", func(f *File) { f.Rounds[0].Submit[0].Gang.Topology = &GangTopologySpec{Name: "nvlink"} },
			"rounds[0].submit[0].gang.topology.required", flotilla.ErrRequired},
		{"unknown topology", func(f *File) { f.Rounds[0].Submit[0].Gang.Topology.Name = "fat-tree" },
			"rounds[0].submit[0].gang.topology.name", flotilla.ErrUnknownName},
		{"unknown level", func(f *File) { f.Rounds[0].Submit[0].Gang.Topology.Required = "zone" },
			"rounds[0].submit[0].gang.topology.required", flotilla.ErrUnknownName},
		{"level of another topology", func(f *File) {
			f.Rounds[0].Submit[0].Gang.Topology = &GangTopologySpec{Name: "nvlink", Preferred: tRack}
		}, "rounds[0].submit[0].gang.topology.preferred", flotilla.ErrUnknownName},
		{"preferred above required", func(f *File) {
			f.Rounds[0].Submit[0].Gang.Topology = &GangTopologySpec{Required: tRack, Preferred: tBlock}
		}, "rounds[0].submit[0].gang.topology.preferred", flotilla.ErrInconsistent},
		{"with a uniformity label", func(f *File) { f.Rounds[0].Submit[0].Gang.NodeUniformityLabel = "zone" },
			"rounds[0].submit[0].gang.topology.required", flotilla.ErrInconsistent},
		{"no topologies configured", func(f *File) { f.Config.Topologies = nil },
			"rounds[0].submit[0].gang.topology.name", flotilla.ErrUnknownName},
		{"members disagree", func(f *File) {
			f.Rounds[0].Submit[0].Count = ptr(2)
			j := JobTemplate{ID: "a2", Queue: "A", Count: ptr(2), Requests: map[string]string{"cpu": "1"},
				Gang: &GangSpec{ID: "g", Topology: &GangTopologySpec{Required: tBlock}}}
			f.Rounds[0].Submit = append(f.Rounds[0].Submit, j)
		}, "rounds[0].submit[1].gang.topology.required", flotilla.ErrInconsistent},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := topologyFile(&GangTopologySpec{Required: tRack})
			tc.edit(f)
			_, err := Parse(marshal(t, f))
			requireFieldError(t, err, tc.field, tc.err)
			requireAllFieldErrors(t, err)
			_, err = f.Build()
			requireFieldError(t, err, tc.field, tc.err)
		})
	}
}

func TestTopologyReachesTheSchedulerAndItsJobs(t *testing.T) {
	f := topologyFile(&GangTopologySpec{Required: tRack, Preferred: tHost})
	b, err := f.Build()
	require.NoError(t, err)
	cfg := b.SchedulerConfig()
	require.Len(t, cfg.Topologies, 2)
	assert.Equal(t, []string{tBlock, tRack, tHost}, cfg.Topologies[0].Levels)
	j := b.Rounds[0].Submit[0]
	assert.Equal(t, flotilla.GangTopology{Required: tRack, Preferred: tHost}, j.Gang.Topology)
	out, err := Run(context.Background(), b)
	require.NoError(t, err)
	assert.Len(t, out.Rounds[0].Scheduled, 4, "both nodes are in rack b1/r1")
}

// A config file (serve -config) takes the topologies too.
func TestConfigFileTakesTopologies(t *testing.T) {
	c, err := ParseConfigFile([]byte(`{"config": {"topologies": [{"name": "default", "levels": ["` + tRack + `"]}]}}`))
	require.NoError(t, err)
	cfg, _, err := c.BuildConfig([]string{"cpu"})
	require.NoError(t, err)
	assert.Equal(t, []flotilla.Topology{{Name: "default", Levels: []string{tRack}}}, cfg.Topologies)
	c, err = ParseConfigFile([]byte(`{"config": {"topologies": [{"name": "default", "levels": []}]}}`))
	require.NoError(t, err)
	_, _, err = c.BuildConfig([]string{"cpu"})
	requireFieldError(t, err, "config.topologies[0].levels", flotilla.ErrRequired)
}
