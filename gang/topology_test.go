package gang_test

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/binpack"
	"github.com/flotilla-sched/flotilla/gang"
)

const (
	lBlock = "topology.flotilla.dev/block"
	lRack  = "topology.flotilla.dev/rack"
	lHost  = "kubernetes.io/hostname"
)

var threeLevels = []flotilla.Topology{{Name: "default", Levels: []string{lBlock, lRack, lHost}}}

// rackNode is a node named block-rack-i in block b and rack r, with
// hostname label, of n cores.
func rackNode(b, r string, i int, n int64) *flotilla.Node {
	name := fmt.Sprintf("%s-%s-%d", b, r, i)
	return node(name, "", n, lBlock, b, lRack, r, lHost, name)
}

// topoGang builds a complete gang of n equal members asking for gt.
func topoGang(t testing.TB, id string, n int, req flotilla.Resources, gt flotilla.GangTopology) *gang.Gang {
	t.Helper()
	s := newStore(t)
	var acc gang.Accumulator
	var g *gang.Gang
	for i := range n {
		e, err := s.NewEntry(&flotilla.Job{ID: fmt.Sprintf("%s-%d", id, i), Queue: "A", Requests: req,
			Gang: flotilla.Gang{ID: id, Cardinality: n, Topology: gt}})
		require.NoError(t, err)
		g, _, err = acc.Add(e)
		require.NoError(t, err)
	}
	require.True(t, g.Complete())
	return g
}

// placeTopo places g with the three-level topology at level 0.
func placeTopo(t *testing.T, db *binpack.DB, g *gang.Gang) gang.Placement {
	t.Helper()
	var p gang.Placer
	p.SetTopologies(threeLevels)
	res, err := p.Place(db, g, 0, levelsOf(len(g.Members), top))
	require.NoError(t, err)
	return res
}

// racks of the form used by several tests: block b1 racks r1 (2 × 8
// cores), r2 (2 × 16); block b2 rack r1 (2 × 12): "r1" twice, in two blocks.
func threeRacks(t *testing.T) *binpack.DB {
	return newDB(t, 2,
		rackNode("b1", "r1", 0, 8), rackNode("b1", "r1", 1, 8),
		rackNode("b1", "r2", 0, 16), rackNode("b1", "r2", 1, 16),
		rackNode("b2", "r1", 0, 12), rackNode("b2", "r1", 1, 12))
}

func nodesOf(db *binpack.DB, nodes []int) []string {
	var out []string
	for _, n := range nodes {
		out = append(out, db.Node(n).Name)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func TestTopologyRequiredTakesTheFeasibleRackLeavingLeastFreeRoom(t *testing.T) {
	db := threeRacks(t)
	// 4 × 5 cores: b1/r1 (16) cannot hold 20; b2/r1 (24) and b1/r2 (32)
	// can: b2/r1 leaves less.
	res := placeTopo(t, db, topoGang(t, "g", 4, cores(5), flotilla.GangTopology{Required: lRack}))
	require.True(t, res.Placed, res.Why.String(schemaCM))
	assert.Equal(t, "b2/r1", res.Path, "the rack r1 of block b2, not that of b1")
	assert.Equal(t, lRack, res.Level)
	assert.Equal(t, []string{"b2-r1-0", "b2-r1-1"}, nodesOf(db, res.Nodes))
}

func TestTopologyRequiredTiesGoByDomainName(t *testing.T) {
	db := newDB(t, 1, rackNode("b2", "r1", 0, 8), rackNode("b1", "r9", 0, 8), rackNode("b1", "r3", 0, 8))
	res := placeTopo(t, db, topoGang(t, "g", 2, cores(4), flotilla.GangTopology{Required: lRack}))
	require.True(t, res.Placed)
	assert.Equal(t, "b1/r3", res.Path, "equal room: the first path, b1/r3 < b1/r9 < b2/r1")
}

func TestTopologyNodeWithoutALevelLabelIsOutsideThatLevelAndBelow(t *testing.T) {
	// b1 has a 64-core node with a block but no rack label: it is in
	// block b1 but in no rack, so a rack-bound gang cannot use it.
	db := newDB(t, 1, rackNode("b1", "r1", 0, 4), node("loose", "", 64, lBlock, "b1"),
		node("norack", "", 64, lRack, "r1", lHost, "norack"))
	g := topoGang(t, "g", 2, cores(4), flotilla.GangTopology{Required: lRack})
	res := placeTopo(t, db, g)
	require.False(t, res.Placed)
	assert.Equal(t, gang.NoDomainHasRoom, res.Why.Cause)
	assert.Equal(t, "b1/r1", res.Why.Path, "the node with a rack but no block is in no rack either")
	res = placeTopo(t, db, topoGang(t, "h", 2, cores(8), flotilla.GangTopology{Required: lBlock}))
	require.True(t, res.Placed)
	assert.Equal(t, []string{"loose"}, nodesOf(db, res.Nodes), "in block b1, on the node outside every rack")
}

func TestTopologyNoRoomNamesLevelBestDomainAndShortfall(t *testing.T) {
	db := threeRacks(t)
	res := placeTopo(t, db, topoGang(t, "g", 4, cores(10), flotilla.GangTopology{Required: lRack}))
	require.False(t, res.Placed)
	assert.Equal(t, gang.NoDomainHasRoom, res.Why.Cause)
	assert.Equal(t, `gang "g": no rack has 40 free cpu: best rack b1/r2 has 32 (8 short)`, res.Why.String(schemaCM))
	assert.True(t, res.Why.NeverFits, "no rack has 40 cores in all")
	db.Bind(2, 1, top, cores(1))
	res = placeTopo(t, db, topoGang(t, "h", 2, cores(16), flotilla.GangTopology{Required: lRack}))
	require.False(t, res.Placed)
	assert.Equal(t, `gang "h": no rack has 32 free cpu: best rack b1/r2 has 31 (1 short)`, res.Why.String(schemaCM))
	assert.False(t, res.Why.NeverFits, "b1/r2 would hold it empty")
	none := placeTopo(t, newDB(t, 1, node("n", "", 8)), topoGang(t, "k", 1, cores(1), flotilla.GangTopology{Required: lRack}))
	assert.Equal(t, gang.NoTopologyDomain, none.Why.Cause)
	assert.Contains(t, none.Why.String(schemaCM), `no node carries the topology level label "topology.flotilla.dev/rack"`)
}

func TestTopologyMemberThatDoesNotFitIsExplainedInItsRack(t *testing.T) {
	// b1/r1 has 16 cores free in all but on two nodes of 8: two 6-core
	// members fit, the third (6) not, though the sum (18)... use 3 × 5 = 15.
	db := newDB(t, 1, rackNode("b1", "r1", 0, 8), rackNode("b1", "r1", 1, 8))
	res := placeTopo(t, db, topoGang(t, "g", 3, cores(5), flotilla.GangTopology{Required: lRack}))
	require.False(t, res.Placed)
	assert.Equal(t, gang.MemberDoesNotFit, res.Why.Cause)
	assert.Equal(t, "b1/r1", res.Why.Path)
	assert.Equal(t, 2, res.Why.PlacedBefore)
	assert.Contains(t, res.Why.String(schemaCM), "does not fit in rack b1/r1 after 2 of 3 members were placed")
}

func TestTopologyPreferredTakesTheInnermostLevelThatHoldsTheGang(t *testing.T) {
	db := threeRacks(t)
	// 2 × 8 cores: one host of b1/r2 (16) holds it: a host beats a rack.
	res := placeTopo(t, db, topoGang(t, "g", 2, cores(8), flotilla.GangTopology{Preferred: lRack}))
	require.True(t, res.Placed)
	assert.Equal(t, lHost, res.Level)
	assert.Equal(t, "b1/r2/b1-r2-0", res.Path)
	assert.Equal(t, []string{"b1-r2-0"}, nodesOf(db, res.Nodes))
}

func TestTopologyPreferredGoesUpLevelByLevelThenPlacesAsWithout(t *testing.T) {
	db := threeRacks(t)
	// 5 × 8: no host, no rack (b1/r2 holds 4 of them); block b1 (6).
	res := placeTopo(t, db, topoGang(t, "g", 5, cores(8), flotilla.GangTopology{Preferred: lRack}))
	require.True(t, res.Placed, res.Why.String(schemaCM))
	assert.Equal(t, lBlock, res.Level)
	assert.Equal(t, "b1", res.Path)
	// 7 × 8: no block (b1 holds 6, b2 2): placed as without a topology,
	// over both blocks.
	db = threeRacks(t)
	res = placeTopo(t, db, topoGang(t, "h", 7, cores(8), flotilla.GangTopology{Preferred: lRack}))
	require.True(t, res.Placed, res.Why.String(schemaCM))
	assert.Empty(t, res.Level, "no domain of any level: as without a topology")
	blocks := map[string]bool{}
	for _, n := range res.Nodes {
		blocks[db.Node(n).Labels[lBlock]] = true
	}
	assert.Len(t, blocks, 2)
}

func TestTopologyRequiredAndPreferredNeverLeaveTheRequiredDomain(t *testing.T) {
	db := threeRacks(t)
	// required block, preferred rack: 3 × 6 = 18: no host; racks b1/r2
	// (32) and b2/r1 (24) hold it, b2/r1 the tighter.
	res := placeTopo(t, db, topoGang(t, "g", 3, cores(6), flotilla.GangTopology{Required: lBlock, Preferred: lRack}))
	require.True(t, res.Placed)
	assert.Equal(t, "b2/r1", res.Path)
	// required rack, preferred host: 3 × 8 = 24: no host holds it; rack
	// b2/r1 has 24 free but on two 12-core nodes (one member each): the
	// next tightest, b1/r2.
	res = placeTopo(t, db, topoGang(t, "h", 3, cores(8), flotilla.GangTopology{Required: lRack, Preferred: lHost}))
	require.True(t, res.Placed)
	assert.Equal(t, "b1/r2", res.Path)
	// required rack: 5 × 8 = 40 fits no rack, though it fits the cluster.
	res = placeTopo(t, db, topoGang(t, "k", 5, cores(8), flotilla.GangTopology{Required: lRack, Preferred: lHost}))
	assert.False(t, res.Placed)
	assert.Equal(t, lRack, res.Why.Level)
}

func TestTopologyPacksFewestLowerLevelDomainsFirst(t *testing.T) {
	// Block b1: racks r1 (4 × 1 core), r2 (12 × 1), r3 (8 × 1). Sixteen
	// one-core members required in the block go to r2 and then r3: two
	// racks, not three (smallest fit alone would not care).
	var nodes []*flotilla.Node
	for r, n := range map[string]int{"r1": 4, "r2": 12, "r3": 8} {
		for i := range n {
			nodes = append(nodes, rackNode("b1", r, i, 1))
		}
	}
	slices.SortFunc(nodes, func(a, b *flotilla.Node) int { return cmpString(a.Name, b.Name) })
	db := newDB(t, 1, nodes...)
	res := placeTopo(t, db, topoGang(t, "g", 16, cores(1), flotilla.GangTopology{Required: lBlock}))
	require.True(t, res.Placed)
	racks := map[string]int{}
	for _, n := range res.Nodes {
		racks[db.Node(n).Labels[lRack]]++
	}
	assert.Equal(t, map[string]int{"r2": 12, "r3": 4}, racks)
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func TestTopologyBadInputIsAnErrorNamingFieldAndValue(t *testing.T) {
	db := threeRacks(t)
	var p gang.Placer
	p.SetTopologies(threeLevels)
	for _, gt := range []flotilla.GangTopology{{Name: "nvlink", Required: lRack}, {Required: "zone"}} {
		_, err := p.Place(db, topoGang(t, "g", 1, cores(1), gt), 0, levelsOf(1, top))
		var fe *flotilla.FieldError
		require.True(t, errors.As(err, &fe), "%+v", gt)
		assert.ErrorIs(t, err, flotilla.ErrUnknownName)
		assert.Contains(t, fe.Field, `gang "g".topology`)
	}
	var none gang.Placer
	_, err := none.Place(db, topoGang(t, "g", 1, cores(1), flotilla.GangTopology{Required: lRack}), 0, levelsOf(1, top))
	assert.ErrorIs(t, err, flotilla.ErrUnknownName, "no topologies configured")
}

func TestTopologyFailedPlacementLeavesTheDBAsItWas(t *testing.T) {
	db := threeRacks(t)
	db.Bind(0, 1, top, cores(3))
	db.Forget()
	before := stateOf(db)
	for _, gt := range []flotilla.GangTopology{{Required: lRack}, {Required: lBlock, Preferred: lHost}} {
		res := placeTopo(t, db, topoGang(t, "g", 5, cores(9), gt))
		require.False(t, res.Placed)
		assert.Empty(t, before.diff(stateOf(db)))
	}
}

func TestAccumulatorRefusesAMemberWithAnotherTopology(t *testing.T) {
	s := newStore(t)
	var acc gang.Accumulator
	a, err := s.NewEntry(&flotilla.Job{ID: "a", Queue: "A", Requests: cores(1), Gang: flotilla.Gang{ID: "g", Cardinality: 2, Topology: flotilla.GangTopology{Required: lRack}}})
	require.NoError(t, err)
	b, err := s.NewEntry(&flotilla.Job{ID: "b", Queue: "A", Requests: cores(1), Gang: flotilla.Gang{ID: "g", Cardinality: 2, Topology: flotilla.GangTopology{Required: lBlock}}})
	require.NoError(t, err)
	_, _, err = acc.Add(a)
	require.NoError(t, err)
	_, _, err = acc.Add(b)
	var fe *flotilla.FieldError
	require.True(t, errors.As(err, &fe))
	assert.Equal(t, `gang "g".topology`, fe.Field)
	assert.ErrorIs(t, err, flotilla.ErrInconsistent)
	err = gang.ValidateSubmission([]*flotilla.Job{a.Job, b.Job}, nil)
	assert.ErrorIs(t, err, flotilla.ErrInconsistent)
}

func TestTopologyUnavoidedDomainsKeepOutOfAvoidedClusters(t *testing.T) {
	nodes := []*flotilla.Node{rackNode("b1", "r1", 0, 8), rackNode("b1", "r1", 1, 16)}
	nodes[0].Cluster = "c"
	nodes = append(nodes, node("b1-r1-x", "d", 16, lBlock, "b1", lRack, "r1", lHost, "x"))
	db := newDB(t, 1, nodes...)
	g := topoGang(t, "g", 2, cores(4), flotilla.GangTopology{Required: lRack})
	g.Members[0].Job.AvoidClusters = []string{"c"}
	var p gang.Placer
	p.SetTopologies(threeLevels)
	mark := db.Mark()
	res, err := p.PlaceWithin(db, g, 0, levelsOf(2, top), 0, gang.UnavoidedDomains)
	require.NoError(t, err)
	require.True(t, res.Placed)
	assert.Equal(t, "", res.Domain.Cluster, "rack b1/r1 of cluster c (8) is tighter but avoided")
	db.Rollback(mark)
	g.Members[1].Job.AvoidClusters = []string{"", "d"}
	res, err = p.PlaceWithin(db, g, 0, levelsOf(2, top), 0, gang.UnavoidedDomains)
	require.NoError(t, err)
	assert.Equal(t, gang.AllAvoided, res.Why.Cause, "every rack is in an avoided cluster")
}
