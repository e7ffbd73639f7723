package gang_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/gang"
)

// A gang whose members avoid the only cluster with racks, too large for
// any rack even empty (the level is skipped unsearched), is AllAvoided
// when placed within the unavoided domains: not a panic.
func TestTopologyUnavoidedRequiredLevelSkippedForSizeIsAllAvoided(t *testing.T) {
	nodes := []*flotilla.Node{rackNode("b1", "r1", 0, 8), rackNode("b1", "r1", 1, 8), node("loose", "d", 64)}
	nodes[0].Cluster, nodes[1].Cluster = "c", "c"
	db := newDB(t, 1, nodes...)
	g := topoGang(t, "g", 2, cores(12), flotilla.GangTopology{Required: lRack})
	g.Members[0].Job.AvoidClusters = []string{"c"}
	var p gang.Placer
	p.SetTopologies(threeLevels)
	before := stateOf(db)
	var res gang.Placement
	require.NotPanics(t, func() {
		var err error
		res, err = p.PlaceWithin(db, g, 0, levelsOf(2, top), 0, gang.UnavoidedDomains)
		require.NoError(t, err)
	})
	assert.False(t, res.Placed)
	assert.Equal(t, gang.AllAvoided, res.Why.Cause)
	assert.Empty(t, before.diff(stateOf(db)))
}
