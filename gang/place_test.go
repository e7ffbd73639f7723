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

// Two 32-core nodes each run 16 one-core jobs: a 32-member one-core gang
// fills them exactly; with one more member it is not placed at all and the
// DB is exactly as before.
func TestPlaceExactFitAndAllOrNothing(t *testing.T) {
	for _, size := range []int{32, 33} {
		db := newDB(t, 2, node("n1", "", 32), node("n2", "", 32))
		for n := range 2 {
			for range 16 {
				db.Bind(n, 1, preemptible, cores(1)) // queue 1's running jobs
			}
		}
		db.Forget()
		before := stateOf(db)
		var acc gang.Accumulator
		g := uniformGang(t, &acc, "g", size, cores(1), "")
		var p gang.Placer
		res, err := p.Place(db, g, 0, levelsOf(size, preemptible))
		require.NoError(t, err)
		if size == 32 {
			require.True(t, res.Placed)
			require.Len(t, res.Nodes, 32)
			assert.Equal(t, gang.Fits, res.Why.Cause)
			for n := range 2 {
				assert.Equal(t, int64(0), db.Allocatable(n, 0)[0], "node %d full", n)
				assert.Equal(t, 16, db.Jobs(n, 0))
			}
			assert.Equal(t, 32, db.Pending(), "binds stay in the undo log for the caller to Forget")
			continue
		}
		require.False(t, res.Placed)
		assert.Nil(t, res.Nodes)
		assert.Empty(t, before.diff(stateOf(db)))
		why := res.Why
		assert.Equal(t, gang.MemberDoesNotFit, why.Cause)
		assert.Equal(t, 32, why.PlacedBefore)
		assert.Equal(t, 32, why.Member, "equal members go in member order: the last one is left")
		assert.Equal(t, "g-32", why.Job)
		assert.Equal(t, binpack.Insufficient, why.Reason.Kind)
		assert.Equal(t, 0, why.Reason.Resource, "cpu")
		assert.Equal(t, core, why.Reason.Short)
		assert.Equal(t, `gang "g": member 32 (job "g-32") does not fit in the default cluster after 32 of 33 members were placed: `+
			`0/2 nodes fit: 2 short of cpu by at least 1`, why.String(schemaCM))
	}
}

// Values v1, v2, v3 of a uniformity label each cover two 32-core nodes; v1
// and v3 nodes have one core used. Four 16-core members fit only on v2.
func TestPlaceUniformityLabel(t *testing.T) {
	var nodes []*flotilla.Node
	for _, v := range []string{"v1", "v2", "v3"} {
		for i := range 2 {
			nodes = append(nodes, node(v+"-"+string(rune('a'+i)), "", 32, "rack", v))
		}
	}
	db := newDB(t, 2, nodes...)
	for _, n := range []int{0, 1, 4, 5} {
		db.Bind(n, 1, top, cores(1))
	}
	db.Forget()
	var acc gang.Accumulator
	g := uniformGang(t, &acc, "g", 4, cores(16), "rack")
	var p gang.Placer
	res, err := p.Place(db, g, 0, levelsOf(4, top))
	require.NoError(t, err)
	require.True(t, res.Placed)
	assert.Equal(t, binpack.Restriction{Label: "rack", Value: "v2"}, res.Domain)
	for i, n := range res.Nodes {
		assert.Equal(t, "v2", db.Node(n).Labels["rack"], "member %d", i)
	}
	assert.Equal(t, []int{2, 2, 3, 3}, slices.Sorted(slices.Values(res.Nodes)))
}

// When several values hold the gang, the tightest fit wins (least free
// capacity left), then the lowest value.
func TestPlaceUniformityTieBreaks(t *testing.T) {
	t.Run("tightest", func(t *testing.T) {
		db := newDB(t, 2,
			node("a", "", 32, "rack", "v1"), node("b", "", 32, "rack", "v2"), node("c", "", 32, "rack", "v3"))
		db.Bind(0, 1, top, cores(2))
		db.Bind(1, 1, top, cores(8)) // v2 has the least free, and still holds the gang
		db.Bind(2, 1, top, cores(4))
		db.Forget()
		var acc gang.Accumulator
		res, err := new(gang.Placer).Place(db, uniformGang(t, &acc, "g", 2, cores(8), "rack"), 0, levelsOf(2, top))
		require.NoError(t, err)
		require.True(t, res.Placed)
		assert.Equal(t, "v2", res.Domain.Value)
		assert.Equal(t, []int{1, 1}, res.Nodes)
	})
	t.Run("lowest value", func(t *testing.T) {
		db := newDB(t, 1, node("a", "", 32, "rack", "v3"), node("b", "", 32, "rack", "v1"), node("c", "", 32, "rack", "v2"))
		var acc gang.Accumulator
		res, err := new(gang.Placer).Place(db, uniformGang(t, &acc, "g", 2, cores(8), "rack"), 0, levelsOf(2, top))
		require.NoError(t, err)
		require.True(t, res.Placed)
		assert.Equal(t, "v1", res.Domain.Value)
		assert.Equal(t, []int{1, 1}, res.Nodes)
	})
	t.Run("most members placed explains the failure", func(t *testing.T) {
		db := newDB(t, 1, node("a", "", 16, "rack", "v1"), node("b", "", 32, "rack", "v2"), node("c", "", 8, "rack", "v3"))
		var acc gang.Accumulator
		g := uniformGang(t, &acc, "g", 3, cores(16), "rack")
		before := stateOf(db)
		res, err := new(gang.Placer).Place(db, g, 0, levelsOf(3, top))
		require.NoError(t, err)
		require.False(t, res.Placed)
		assert.Empty(t, before.diff(stateOf(db)))
		assert.Equal(t, "v2", res.Domain.Value)
		assert.Equal(t, 2, res.Why.PlacedBefore)
		assert.Equal(t, binpack.Insufficient, res.Why.Reason.Kind)
		assert.Equal(t, "b", res.Why.Reason.NodeName, "the reason is about the domain's own nodes")
		assert.Contains(t, res.Why.String(schemaCM), `in the default cluster on rack=v2 after 2 of 3 members were placed`)
	})
}

func TestPlaceNoNodeCarriesLabel(t *testing.T) {
	db := newDB(t, 1, node("a", "", 32, "zone", "z1"), node("b", "", 32))
	var acc gang.Accumulator
	before := stateOf(db)
	res, err := new(gang.Placer).Place(db, uniformGang(t, &acc, "g", 2, cores(1), "rack"), 0, levelsOf(2, top))
	require.NoError(t, err)
	require.False(t, res.Placed)
	assert.Equal(t, gang.NoUniformityLabel, res.Why.Cause)
	assert.Equal(t, `gang "g": no node carries the node-uniformity label "rack"`, res.Why.String(schemaCM))
	assert.Empty(t, before.diff(stateOf(db)))

	empty := newDB(t, 1)
	res, err = new(gang.Placer).Place(empty, uniformGang(t, &acc, "h", 1, cores(1), ""), 0, []int{0})
	require.NoError(t, err)
	assert.Equal(t, gang.NoNodes, res.Why.Cause)
	assert.Equal(t, `gang "h": no nodes`, res.Why.String(schemaCM))

	// A lone job is a gang of one, explained as a job.
	lone, complete, err := acc.Add(member(t, newStore(t), "solo", "", 0, cores(64)))
	require.NoError(t, err)
	require.True(t, complete)
	res, err = new(gang.Placer).Place(db, lone, 0, []int{0})
	require.NoError(t, err)
	assert.Equal(t, `job "solo" does not fit in the default cluster: 0/2 nodes fit: 2 short of cpu by at least 32 even when empty`,
		res.Why.String(schemaCM))
}

// A gang never spans clusters, even when the clusters together would hold
// it; a lone cluster that holds it is chosen.
func TestPlaceOneCluster(t *testing.T) {
	db := newDB(t, 1, node("a1", "a", 32), node("b1", "b", 16), node("b2", "b", 8))
	var acc gang.Accumulator
	g := uniformGang(t, &acc, "g", 2, cores(20), "")
	before := stateOf(db)
	res, err := new(gang.Placer).Place(db, g, 0, levelsOf(2, top))
	require.NoError(t, err)
	require.False(t, res.Placed)
	assert.Empty(t, before.diff(stateOf(db)))
	assert.Equal(t, "a", res.Domain.Cluster, "a places one member, b none")
	assert.Contains(t, res.Why.String(schemaCM), `in cluster "a" after 1 of 2 members were placed: 0/1 nodes fit: 1 short of cpu by at least 8`)

	g = uniformGang(t, &acc, "h", 2, cores(8), "")
	res, err = new(gang.Placer).Place(db, g, 0, levelsOf(2, top))
	require.NoError(t, err)
	require.True(t, res.Placed)
	assert.Equal(t, "b", res.Domain.Cluster, "b has less free capacity: the tighter fit")
	assert.Equal(t, []int{2, 1}, res.Nodes)
	for _, n := range res.Nodes {
		assert.Equal(t, "b", db.Node(n).Cluster)
	}
}

// PlaceWithin UnavoidedDomains tries only the clusters no member avoids
// (Job.AvoidClusters, the union over the members), with uniformity-label
// domains confined to those clusters; with none left the gang is not
// placed, Cause AllAvoided, and the DB is untouched. Avoids says whether
// the confinement can matter: some domain avoided and some not.
func TestPlaceWithinUnavoidedDomainsKeepsOutOfEveryClusterAMemberAvoids(t *testing.T) {
	db := newDB(t, 1, node("a1", "a", 8, "rack", "r1"), node("b1", "b", 16, "rack", "r1"), node("b2", "b", 16, "rack", "r2"), node("c1", "c", 32, "rack", "r1"))
	var acc gang.Accumulator
	var p gang.Placer
	place := func(g *gang.Gang, within gang.Domains) gang.Placement {
		t.Helper()
		m := db.Mark()
		res, err := p.PlaceWithin(db, g, 0, levelsOf(len(g.Members), top), 0, within)
		require.NoError(t, err)
		db.Rollback(m)
		return res
	}
	g := uniformGang(t, &acc, "g", 2, cores(4), "")
	assert.False(t, p.Avoids(db, g), "no member avoids anything")
	assert.Equal(t, "a", place(g, gang.UnavoidedDomains).Domain.Cluster, "nothing avoided: the tightest cluster")

	g.Members[0].Job.AvoidClusters = []string{"a"}
	g.Members[1].Job.AvoidClusters = []string{"b", "x"}
	assert.True(t, p.Avoids(db, g))
	assert.Equal(t, "a", place(g, gang.AllDomains).Domain.Cluster)
	assert.Equal(t, "c", place(g, gang.UnavoidedDomains).Domain.Cluster, "a and b are avoided, by one member each")

	r := uniformGang(t, &acc, "r", 2, cores(4), "rack")
	r.Members[1].Job.AvoidClusters = []string{"a"}
	res := place(r, gang.UnavoidedDomains)
	assert.Equal(t, binpack.Restriction{Cluster: "b", Label: "rack", Value: "r1"}, res.Domain, "the tightest rack outside a")

	g.Members[0].Job.AvoidClusters = []string{"a", "c"}
	assert.False(t, p.Avoids(db, g), "every cluster avoided: nothing to prefer")
	before := stateOf(db)
	res = place(g, gang.UnavoidedDomains)
	assert.False(t, res.Placed)
	assert.Equal(t, gang.AllAvoided, res.Why.Cause)
	assert.False(t, res.Why.NeverFits)
	assert.Empty(t, before.diff(stateOf(db)))
	assert.Equal(t, `gang "g": every cluster that could hold it is one a member avoids`, res.Why.String(schemaCM))

	g.Members[0].Job.AvoidClusters = []string{"a"}
	g.Members[1].Job.AvoidClusters = nil
	assert.Zero(t, testing.AllocsPerRun(50, func() {
		m := db.Mark()
		if !p.Avoids(db, g) {
			t.Fatal("a is avoided, b and c are not")
		}
		if res, err := p.PlaceWithin(db, g, 0, []int{top, top}, 0, gang.UnavoidedDomains); err != nil || !res.Placed {
			t.Fatalf("%v %v", res.Placed, err)
		}
		db.Rollback(m)
	}), "after warm-up")
}

// PlaceWithin UnavoidedDomains keeps every member off every node a member
// avoids (Job.AvoidNodes, the union over the members); a gang that does
// not fit on the other nodes is not placed, and the DB is untouched.
// Avoiding every node leaves nothing to prefer (binpack.DB.AvoidNodes):
// the gang goes where it would without. Avoids is true as soon as a
// member avoids a node.
func TestPlaceWithinUnavoidedDomainsKeepsOffEveryNodeAMemberAvoids(t *testing.T) {
	db := newDB(t, 1, node("n1", "", 8), node("n2", "", 16), node("n3", "", 32))
	var acc gang.Accumulator
	var p gang.Placer
	place := func(g *gang.Gang, within gang.Domains) gang.Placement {
		t.Helper()
		m := db.Mark()
		res, err := p.PlaceWithin(db, g, 0, levelsOf(len(g.Members), top), 0, within)
		require.NoError(t, err)
		db.Rollback(m)
		return res
	}
	names := func(res gang.Placement) []string {
		var out []string
		for _, n := range res.Nodes {
			out = append(out, db.Node(n).Name)
		}
		return out
	}
	g := uniformGang(t, &acc, "g", 2, cores(4), "")
	assert.False(t, p.Avoids(db, g), "no member avoids anything")
	assert.Equal(t, []string{"n1", "n1"}, names(place(g, gang.UnavoidedDomains)), "nothing avoided: the tightest node")

	g.Members[0].Job.AvoidNodes = []string{"n1"}
	g.Members[1].Job.AvoidNodes = []string{"n2", "x"}
	assert.True(t, p.Avoids(db, g))
	assert.Equal(t, []string{"n1", "n1"}, names(place(g, gang.AllDomains)))
	assert.Equal(t, []string{"n3", "n3"}, names(place(g, gang.UnavoidedDomains)), "n1 and n2 are avoided, by one member each")

	g.Members[0].Job.AvoidNodes = []string{"n3", "n1"}
	assert.True(t, p.Avoids(db, g))
	assert.Equal(t, []string{"n1", "n1"}, names(place(g, gang.UnavoidedDomains)), "every node avoided: as without")

	big := uniformGang(t, &acc, "big", 2, cores(12), "")
	big.Members[1].Job.AvoidNodes = []string{"n3"}
	require.True(t, place(big, gang.AllDomains).Placed)
	before := stateOf(db)
	res := place(big, gang.UnavoidedDomains)
	assert.False(t, res.Placed, "n1 and n2 hold one member of 12 cores, not two")
	assert.Equal(t, gang.MemberDoesNotFit, res.Why.Cause)
	assert.Empty(t, before.diff(stateOf(db)))
}

// Members go largest first: 8, 16, 16 cores fill a 16- and a 24-core node
// exactly, which smallest-first would not.
func TestPlaceLargestFirst(t *testing.T) {
	db := newDB(t, 1, node("a", "", 16), node("b", "", 24))
	s := newStore(t)
	var acc gang.Accumulator
	var g *gang.Gang
	for i, c := range []int64{8, 16, 16} {
		var err error
		g, _, err = acc.Add(member(t, s, string(rune('x'+i)), "g", 3, cores(c)))
		require.NoError(t, err)
	}
	res, err := new(gang.Placer).Place(db, g, 0, levelsOf(3, top))
	require.NoError(t, err)
	require.True(t, res.Placed)
	assert.Equal(t, []int{1, 0, 1}, res.Nodes, "per member, in member order")
}

// Members of different priority classes are bound at their own levels, and
// a member's node selector holds within the domain.
func TestPlaceLevelsAndSelectors(t *testing.T) {
	db := newDB(t, 1, node("a", "", 32, "zone", "x"), node("b", "", 32, "zone", "y"))
	s := newStore(t)
	mk := func(id, class string, sel map[string]string) *flotilla.Job {
		return &flotilla.Job{ID: id, Queue: "A", PriorityClass: class, Requests: cores(4), NodeSelector: sel,
			Gang: flotilla.Gang{ID: "g", Cardinality: 2}}
	}
	var acc gang.Accumulator
	var g *gang.Gang
	for _, j := range []*flotilla.Job{
		mk("hi", flotilla.ArmadaDefault, map[string]string{"zone": "y"}),
		mk("lo", flotilla.ArmadaPreemptible, nil),
	} {
		e, err := s.NewEntry(j)
		require.NoError(t, err)
		g, _, err = acc.Add(e)
		require.NoError(t, err)
	}
	assert.Equal(t, int32(20000), g.ClassPriority, "the gang's class is its lowest member's")
	res, err := new(gang.Placer).Place(db, g, 0, []int{top, preemptible})
	require.NoError(t, err)
	require.True(t, res.Placed)
	assert.Equal(t, 1, res.Nodes[0], "hi needs zone y")
	assert.Equal(t, 1, res.Nodes[1], "lo joins it on the queue's own node")
	assert.Equal(t, 32*core-8*core, db.Allocatable(1, preemptible)[0])
	assert.Equal(t, 32*core-4*core, db.Allocatable(1, top)[0], "only hi holds capacity at the top level")
}

func TestPlaceBadInput(t *testing.T) {
	db := newDB(t, 2, node("a", "", 32))
	var acc gang.Accumulator
	g := uniformGang(t, &acc, "g", 2, cores(1), "")
	var p gang.Placer
	var fe *flotilla.FieldError

	_, err := p.Place(nil, g, 0, []int{0, 0})
	require.ErrorIs(t, err, flotilla.ErrRequired)
	_, err = p.Place(db, nil, 0, nil)
	require.ErrorIs(t, err, flotilla.ErrRequired)

	before := stateOf(db)
	_, err = p.Place(db, g, 2, []int{0, 5, 1})
	require.Error(t, err)
	assert.ErrorIs(t, err, flotilla.ErrOutOfRange)
	assert.ErrorIs(t, err, flotilla.ErrInconsistent)
	require.ErrorAs(t, err, &fe)
	assert.Equal(t, "queue", fe.Field)
	assert.Equal(t, "2", fe.Value)
	for _, want := range []string{`queue "2"`, `levels "3"`, `levels[1] "5"`} {
		assert.Contains(t, err.Error(), want)
	}

	incomplete := &gang.Gang{ID: "h", Cardinality: 3, Members: g.Members}
	_, err = p.Place(db, incomplete, 0, []int{0, 0})
	require.ErrorAs(t, err, &fe)
	assert.Equal(t, `gang "h".members`, fe.Field)
	assert.ErrorIs(t, err, flotilla.ErrInconsistent)

	bad := &gang.Gang{ID: "b", Cardinality: 2, Members: []*queueEntry{g.Members[0], nil}}
	_, err = p.Place(db, bad, 0, []int{0, 0})
	require.ErrorAs(t, err, &fe)
	assert.Equal(t, `gang "b".members[1]`, fe.Field)

	short := member(t, newStore(t), "s", "c", 1, flotilla.Resources{core})
	_, err = p.Place(db, &gang.Gang{ID: "c", Cardinality: 1, Members: []*queueEntry{short}}, 0, []int{0})
	require.ErrorAs(t, err, &fe)
	assert.Equal(t, `gang "c".members[0].requests`, fe.Field)
	neg := member(t, newStore(t), "n", "d", 1, flotilla.Resources{-core, 0})
	_, err = p.Place(db, &gang.Gang{ID: "d", Cardinality: 1, Members: []*queueEntry{neg}}, 0, []int{0})
	assert.ErrorIs(t, err, flotilla.ErrNegative)
	assert.Empty(t, before.diff(stateOf(db)))
	assert.False(t, errors.Is(err, flotilla.ErrDuplicate))
}

// After warm-up, Place allocates nothing: placing, failing, and with a
// uniformity label.
func TestPlaceAllocations(t *testing.T) {
	var nodes []*flotilla.Node
	for i := range 8 {
		nodes = append(nodes, node(string(rune('a'+i)), []string{"", "b"}[i%2], 32, "rack", []string{"r1", "r2"}[i/4]))
	}
	db := newDB(t, 1, nodes...)
	var acc gang.Accumulator
	fits := uniformGang(t, &acc, "fits", 4, cores(8), "")
	uniform := uniformGang(t, &acc, "uniform", 4, cores(8), "rack")
	uniform.Members[1].Job.NodeSelector = map[string]string{"rack": "r2"}
	uniform.Members[2].Job.Tolerations = []flotilla.Toleration{{Key: "dedicated", Operator: flotilla.TolerationExists}}
	tooBig := uniformGang(t, &acc, "big", 9, cores(32), "rack")
	s := newStore(t)
	var mixed *gang.Gang
	for i, c := range []int64{1, 8, 2, 8, 4} {
		var err error
		mixed, _, err = acc.Add(member(t, s, string(rune('p'+i)), "mixed", 5, cores(c)))
		require.NoError(t, err)
	}
	levels := levelsOf(9, top)
	var p gang.Placer
	for _, g := range []*gang.Gang{fits, uniform, tooBig, mixed} {
		m := db.Mark()
		run := func() {
			res, err := p.Place(db, g, 0, levels[:len(g.Members)])
			if err != nil || res.Placed == (g == tooBig) {
				t.Fatalf("%s: %v %v", g.ID, res.Placed, err)
			}
			db.Rollback(m)
		}
		run()
		allocs := testing.AllocsPerRun(50, run)
		if g == tooBig {
			assert.LessOrEqual(t, allocs, 4.0, "a gang that does not fit allocates only its explanation")
		} else {
			assert.Zero(t, allocs, g.ID)
		}
	}
}

// NeverFits: a gang that no domain could hold even with every node empty
// never fits; one that some domain could hold when empty has no room now.
func TestPlaceNeverFitsOnlyWhenNoDomainHoldsTheGangEmpty(t *testing.T) {
	cases := []struct {
		name      string
		nodes     []*flotilla.Node
		busy      map[int]int64 // node → cores bound
		members   int
		cores     int64
		label     string
		neverFits bool
	}{
		{name: "room when empty, none now", nodes: []*flotilla.Node{node("a", "", 32), node("b", "", 32)},
			busy: map[int]int64{0: 20, 1: 20}, members: 2, cores: 16, neverFits: false},
		{name: "a member larger than every node", nodes: []*flotilla.Node{node("a", "", 32), node("b", "", 32)},
			members: 2, cores: 40, neverFits: true},
		{name: "members fit nodes, the sum exceeds every cluster", nodes: []*flotilla.Node{node("a", "x", 32), node("b", "y", 32)},
			members: 2, cores: 20, neverFits: true},
		{name: "too small in one cluster, no room in the other", nodes: []*flotilla.Node{node("a", "east", 8), node("b", "west", 64)},
			busy: map[int]int64{1: 60}, members: 2, cores: 16, neverFits: false},
		{name: "no node carries the label", nodes: []*flotilla.Node{node("a", "", 32)},
			members: 2, cores: 1, label: "rack", neverFits: true},
		{name: "cordoned nodes do not count", nodes: []*flotilla.Node{node("a", "", 32), {Name: "c", Total: cores(32), Unschedulable: true}},
			members: 2, cores: 20, neverFits: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			db := newDB(t, 2, c.nodes...)
			for n, busy := range c.busy {
				db.Bind(n, 1, top, cores(busy))
			}
			db.Forget()
			var acc gang.Accumulator
			g := uniformGang(t, &acc, "g", c.members, cores(c.cores), c.label)
			res, err := new(gang.Placer).Place(db, g, 0, levelsOf(c.members, top))
			require.NoError(t, err)
			require.False(t, res.Placed)
			assert.Equal(t, c.neverFits, res.Why.NeverFits, res.Why.String(schemaCM))
		})
	}
}

// TestPlaceAtExplainsAMemberThatDoesNotFitAtTheSearchLevel: PlaceAt
// selects members at level search, so the explanation of a member that does
// not fit is computed at that level too, not at level 0.
func TestPlaceAtExplainsAMemberThatDoesNotFitAtTheSearchLevel(t *testing.T) {
	db := newDB(t, 2, node("a", "", 8))
	db.Bind(0, 1, preemptible, cores(4)) // a preemptible job of another queue
	db.Bind(0, 1, top, cores(2))
	db.Forget()
	var acc gang.Accumulator
	g := uniformGang(t, &acc, "g", 1, cores(7), "")
	var p gang.Placer
	res, err := p.PlaceAt(db, g, 0, []int{top}, top)
	require.NoError(t, err)
	require.False(t, res.Placed)
	require.Equal(t, gang.MemberDoesNotFit, res.Why.Cause)
	// At the search level (top) node a has 6 cores free: 1 short, not 5.
	require.Equal(t, binpack.Insufficient, res.Why.Reason.Kind)
	require.Equal(t, 0, res.Why.Reason.Resource)
	require.Equal(t, 1*core, res.Why.Reason.Short, "explained at level 0 instead of the search level: %s", res.Why.String(schemaCM))
}

// TestPlaceDomainFreeCapacitySaturatesInsteadOfOverflowing: a domain's free
// capacity is summed with saturation, so a cluster of 1,000 nodes with 10 TB
// of ephemeral storage each (1e16 milli-units, a sum past int64) stays a
// candidate, and the gang goes to the tightest cluster that holds it rather
// than to a looser one (a wrapping sum went negative and dropped it).
func TestPlaceDomainFreeCapacitySaturatesInsteadOfOverflowing(t *testing.T) {
	schema := flotilla.MustResourceSchema("cpu", "memory", "ephemeral-storage")
	var nodes []*flotilla.Node
	for i := range 1000 {
		nodes = append(nodes, &flotilla.Node{Name: fmt.Sprint("a", i), Cluster: "a",
			Total: flotilla.Resources{1 * core, 4 * gi, 10_000_000_000_000 * 1000}})
	}
	for i := range 1000 {
		nodes = append(nodes, &flotilla.Node{Name: fmt.Sprint("b", i), Cluster: "b",
			Total: flotilla.Resources{2 * core, 8 * gi, 1_000_000_000_000 * 1000}})
	}
	db, err := binpack.New(binpack.Options{Schema: schema, Levels: twoLevels, Queues: 1}, nodes)
	require.NoError(t, err)
	var acc gang.Accumulator
	g := uniformGang(t, &acc, "g", 2, flotilla.Resources{core, gi, 1000}, "")
	var p gang.Placer
	res, err := p.Place(db, g, 0, levelsOf(2, top))
	require.NoError(t, err)
	require.True(t, res.Placed)
	require.Equal(t, "a", res.Domain.Cluster, "cluster a (1,000 cores free) is tighter than b (2,000)")
}
