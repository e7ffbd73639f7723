package gang_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/binpack"
	"github.com/flotilla-sched/flotilla/gang"
)

// mixedTopoGang builds a complete gang whose members request reqs, one
// each, asking for gt.
func mixedTopoGang(t testing.TB, id string, gt flotilla.GangTopology, reqs ...flotilla.Resources) *gang.Gang {
	t.Helper()
	s := newStore(t)
	var acc gang.Accumulator
	var g *gang.Gang
	for i, req := range reqs {
		e, err := s.NewEntry(&flotilla.Job{ID: fmt.Sprintf("%s-%d", id, i), Queue: "A", Requests: req,
			Gang: flotilla.Gang{ID: id, Cardinality: len(reqs), Topology: gt}})
		require.NoError(t, err)
		g, _, err = acc.Add(e)
		require.NoError(t, err)
	}
	require.True(t, g.Complete())
	return g
}

// Packing rack by rack (roomiest rack first when none holds the gang) is a
// heuristic: when it strands a member, a smallest-fit attempt over the
// whole domain may still hold the gang, and the domain then takes it, as
// it would a gang with the level as its node-uniformity label. Block b1:
// rack r1 one 7-core node, r2 one 5-core node; members 5, 4, 3 cores:
// rack-first puts 5 on the 7-core node, 4 on the 5-core one and strands
// 3; smallest fit puts 5 on the 5-core node and 4 and 3 on the 7-core one.
func TestTopologyDomainThatPackingStrandsFallsBackToSmallestFitInIt(t *testing.T) {
	mk := func() *binpack.DB {
		return newDB(t, 1, rackNode("b1", "r1", 0, 7), rackNode("b1", "r2", 0, 5))
	}
	for _, gt := range []flotilla.GangTopology{{Required: lBlock}, {Required: lBlock, Preferred: lRack}} {
		db := mk()
		res := placeTopo(t, db, mixedTopoGang(t, "g", gt, cores(5), cores(4), cores(3)))
		require.True(t, res.Placed, "%+v: %s", gt, res.Why.String(schemaCM))
		assert.Equal(t, "b1", res.Path)
		assert.Equal(t, lBlock, res.Level)
	}
	// Today's placement with the block as uniformity label agrees.
	db := mk()
	var acc gang.Accumulator
	s := newStore(t)
	var g *gang.Gang
	for i, n := range []int64{5, 4, 3} {
		e, err := s.NewEntry(&flotilla.Job{ID: fmt.Sprint("u-", i), Queue: "A", Requests: cores(n),
			Gang: flotilla.Gang{ID: "u", Cardinality: 3, NodeUniformityLabel: lBlock}})
		require.NoError(t, err)
		g, _, err = acc.Add(e)
		require.NoError(t, err)
	}
	var p gang.Placer
	res, err := p.Place(db, g, 0, levelsOf(3, top))
	require.NoError(t, err)
	assert.True(t, res.Placed)
}

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
