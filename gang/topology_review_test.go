package gang_test

import (
	"fmt"
	"slices"
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

// asTopology turns the world's gang into one asking for gt instead of a
// uniformity label.
func asTopology(g *gang.Gang, gt flotilla.GangTopology) {
	g.UniformityLabel, g.Topology = "", gt
	for _, e := range g.Members {
		e.Job.Gang.NodeUniformityLabel, e.Job.Gang.Topology = "", gt
	}
}

// A node-uniformity label is a one-level required topology: on generated
// worlds (clusters, cordons, taints, selectors, unequal members, running
// jobs), a gang requiring the level of the topology [rack] lands on
// exactly the nodes the same gang with the uniformity label rack does, or
// fails as it does. And with a level below ([zone, rack], zone required),
// a gang the uniformity label zone places is placed too.
func TestPropertyRequiredTopologyIsAtLeastTheUniformityLabel(t *testing.T) {
	runProperty(t, "required topology ⊇ uniformity label", 1500, func(seed int64) string {
		for _, c := range []struct {
			label  string
			levels []string
		}{{"rack", []string{"rack"}}, {"zone", []string{"zone", "rack"}}} {
			w, err := newWorld(seed)
			if err != nil {
				return err.Error()
			}
			asTopology(w.g, flotilla.GangTopology{})
			w.g.UniformityLabel = c.label
			for _, e := range w.g.Members {
				e.Job.Gang.NodeUniformityLabel = c.label
			}
			before := stateOf(w.db)
			mark := w.db.Mark()
			want, err := new(gang.Placer).Place(w.db, w.g, w.q, w.levels)
			if err != nil {
				return err.Error()
			}
			wantNodes := slices.Clone(want.Nodes)
			w.db.Rollback(mark)
			asTopology(w.g, flotilla.GangTopology{Required: c.label})
			var p gang.Placer
			p.SetTopologies([]flotilla.Topology{{Name: "t", Levels: c.levels}})
			got, err := p.Place(w.db, w.g, w.q, w.levels)
			if err != nil {
				return err.Error()
			}
			if !got.Placed {
				if d := before.diff(stateOf(w.db)); d != "" {
					return fmt.Sprintf("seed %d %v: a failed placement changed the db: %s", seed, c.levels, d)
				}
			}
			switch {
			case want.Placed && !got.Placed:
				return fmt.Sprintf("seed %d %v: the uniformity label places it on %v, the topology not: %s", seed, c.levels, wantNodes, got.Why.String(schemaCM))
			case len(c.levels) == 1 && got.Placed != want.Placed:
				return fmt.Sprintf("seed %d %v: topology placed %v, uniformity label %v", seed, c.levels, got.Placed, want.Placed)
			case len(c.levels) == 1 && want.Placed && !slices.Equal(got.Nodes, wantNodes):
				return fmt.Sprintf("seed %d %v: topology nodes %v, uniformity label %v", seed, c.levels, got.Nodes, wantNodes)
			}
			w.db.Rollback(mark)
		}
		return ""
	})
}

// BenchmarkTopologyRequiredRackNoneHolds: 10,000 8-core nodes in 40 blocks
// × 25 racks, 6 cores used on each, a gang of 2 × 5 cores requiring a
// rack: every rack has the summed 10 free but no node has 5, so every
// rack is tried and none packs (the failure path of a gang search, which
// a scheduler makes several times per gang).
func BenchmarkTopologyRequiredRackNoneHolds(b *testing.B) {
	var nodes []*flotilla.Node
	for blk := range 40 {
		for r := range 25 {
			for i := range 10 {
				nodes = append(nodes, node(fmt.Sprintf("n%d-%d-%d", blk, r, i), "", 8, lBlock, fmt.Sprint("b", blk), lRack, fmt.Sprint("r", r)))
			}
		}
	}
	db := newDB(b, 2, nodes...)
	for i := range nodes {
		db.Bind(i, 1, top, cores(6))
	}
	db.Forget()
	g := topoGang(b, "g", 2, cores(5), flotilla.GangTopology{Required: lRack})
	var p gang.Placer
	p.SetTopologies([]flotilla.Topology{{Name: "default", Levels: []string{lBlock, lRack}}})
	p.DeferExplanations(true)
	b.ReportAllocs()
	for b.Loop() {
		if res, _ := p.Place(db, g, 0, levelsOf(2, top)); res.Placed {
			b.Fatal("placed")
		}
	}
}
