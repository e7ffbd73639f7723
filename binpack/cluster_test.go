package binpack_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/binpack"
)

func clusterNodes() []*flotilla.Node {
	mk := func(name, cluster string, cpu int64, labels map[string]string) *flotilla.Node {
		n := node3(name, 0, cpu, 4*cpu)
		n.Cluster, n.Labels = cluster, labels
		return n
	}
	tainted := mk("d-r1-tainted", "", 64, map[string]string{"rack": "r1"})
	tainted.Taints = []flotilla.Taint{{Key: "dedicated", Value: "x", Effect: flotilla.TaintNoSchedule}}
	return []*flotilla.Node{
		mk("d-r1", "", 32, map[string]string{"rack": "r1", "zone": "a"}),
		mk("d-r2", "", 16, map[string]string{"rack": "r2"}),
		mk("e-r1", "east", 8, map[string]string{"rack": "r1"}),
		mk("e-none", "east", 8, nil),
		tainted,
		mk("d-empty", "", 4, map[string]string{"rack": ""}),
	}
}

func admitted(db *binpack.DB, id binpack.ConstraintID) []string {
	var out []string
	for n := range db.NodeCount() {
		if db.Admits(id, n) {
			out = append(out, db.Node(n).Name)
		}
	}
	return out
}

func TestRestrict(t *testing.T) {
	db := mustNew(t, binpack.Options{}, clusterNodes()...)
	tol := db.Constraints(nil, []flotilla.Toleration{{Key: "dedicated", Operator: flotilla.TolerationExists}})
	zoneA := db.Constraints(map[string]string{"zone": "a"}, nil)

	east := db.Restrict(binpack.NoConstraint, binpack.Restriction{Cluster: "east"})
	assert.Equal(t, []string{"e-r1", "e-none"}, admitted(db, east))
	assert.Equal(t, east, db.Restrict(binpack.NoConstraint, binpack.Restriction{Cluster: "east"}), "interned")
	assert.NotEqual(t, binpack.NoConstraint, east)

	r1 := db.Restrict(binpack.NoConstraint, binpack.Restriction{Label: "rack", Value: "r1"})
	assert.Equal(t, []string{"d-r1"}, admitted(db, r1), "the tainted node needs a toleration")
	assert.Equal(t, []string{"d-r1", "d-r1-tainted"}, admitted(db, db.Restrict(tol, binpack.Restriction{Label: "rack", Value: "r1"})))
	assert.Equal(t, []string{"d-empty"}, admitted(db, db.Restrict(binpack.NoConstraint, binpack.Restriction{Label: "rack"})),
		"an empty value matches a present, empty label only")
	assert.Empty(t, admitted(db, db.Restrict(zoneA, binpack.Restriction{Cluster: "east"})))
	assert.Empty(t, admitted(db, db.Restrict(binpack.NoConstraint, binpack.Restriction{Cluster: "west"})))
	assert.Equal(t, binpack.ConstraintID(99), db.Restrict(99, binpack.Restriction{}), "out of range: unchanged")

	// Select stays inside the domain, even when a better node is outside.
	q := query(r3(0, 8, 8), 0, 0)
	q.Constraint = east
	assert.Equal(t, "e-r1", selectName(db, q))
	db.Bind(2, 0, 0, r3(0, 8, 8))
	assert.Equal(t, "e-none", selectName(db, q))
	db.Bind(3, 0, 0, r3(0, 8, 8))
	assert.Equal(t, "", selectName(db, q))
	q.Constraint = binpack.NoConstraint
	assert.Equal(t, "d-r2", selectName(db, q), "unrestricted, the default cluster has room")

	// Known pairs cost nothing.
	assert.Zero(t, testing.AllocsPerRun(100, func() {
		db.Restrict(tol, binpack.Restriction{Label: "rack", Value: "r1"})
		db.Select(q)
	}))
}

// TestAvoidExcludesTheNamedClustersOrIsTheSameConstraint: Avoid admits the
// nodes of the base constraint outside the named clusters, interned as a
// set; when that changes nothing or leaves nothing it is the base id.
func TestAvoidExcludesTheNamedClustersOrIsTheSameConstraint(t *testing.T) {
	db := mustNew(t, binpack.Options{}, clusterNodes()...)
	tol := db.Constraints(nil, []flotilla.Toleration{{Key: "dedicated", Operator: flotilla.TolerationExists}})
	rack1 := db.Constraints(map[string]string{"rack": "r1"}, nil)
	zoneA := db.Constraints(map[string]string{"zone": "a"}, nil)

	notEast := db.Avoid(binpack.NoConstraint, []string{"east"})
	assert.NotEqual(t, binpack.NoConstraint, notEast)
	assert.Equal(t, []string{"d-r1", "d-r2", "d-empty"}, admitted(db, notEast), "the tainted node still needs a toleration")
	assert.Equal(t, notEast, db.Avoid(binpack.NoConstraint, []string{"east", "east"}), "a set: repeats do not matter")
	assert.Equal(t, db.Avoid(binpack.NoConstraint, []string{"west", "east"}), db.Avoid(binpack.NoConstraint, []string{"east", "west"}), "nor order")
	assert.Equal(t, admitted(db, notEast), admitted(db, db.Avoid(binpack.NoConstraint, []string{"east", "west"})), "a name no node carries excludes nothing")
	assert.Equal(t, []string{"d-r1"}, admitted(db, db.Avoid(rack1, []string{"east"})))
	assert.Equal(t, []string{"d-r1", "d-r2", "d-r1-tainted", "d-empty"}, admitted(db, db.Avoid(tol, []string{"east"})))
	notDefault := db.Avoid(binpack.NoConstraint, []string{""})
	assert.Equal(t, []string{"e-r1", "e-none"}, admitted(db, notDefault), "the API may avoid the default cluster")

	assert.Equal(t, binpack.NoConstraint, db.Avoid(binpack.NoConstraint, nil), "nothing avoided")
	assert.Equal(t, binpack.NoConstraint, db.Avoid(binpack.NoConstraint, []string{"west"}), "no such cluster: nothing changes")
	assert.Equal(t, zoneA, db.Avoid(zoneA, []string{"east"}), "the constraint admits no node there: nothing changes")
	assert.Equal(t, binpack.NoConstraint, db.Avoid(binpack.NoConstraint, []string{"", "east"}), "every node avoided: nothing to prefer")
	assert.Equal(t, zoneA, db.Avoid(zoneA, []string{""}), "every admitted node avoided: nothing to prefer")
	assert.Equal(t, binpack.ConstraintID(99), db.Avoid(99, []string{"east"}), "out of range: unchanged")

	// Select keeps out of the avoided cluster, even when its node is the
	// better fit.
	q := query(r3(0, 8, 8), 0, 0)
	assert.Equal(t, "e-r1", selectName(db, q), "unrestricted, east's 8-core node fits best")
	q.Constraint = notEast
	assert.Equal(t, "d-r2", selectName(db, q))

	// Known sets cost nothing.
	avoid := []string{"east", "west"}
	db.Avoid(tol, avoid)
	assert.Zero(t, testing.AllocsPerRun(100, func() {
		db.Avoid(tol, avoid)
		db.Select(q)
	}))
}

// TestAvoidNodesExcludesTheNamedNodes: AvoidNodes is Avoid by node name:
// a set, the base id when it changes or leaves nothing, composing with
// Avoid, distinct from avoiding a cluster of the same name.
func TestAvoidNodesExcludesTheNamedNodes(t *testing.T) {
	db := mustNew(t, binpack.Options{}, clusterNodes()...)
	notR1 := db.AvoidNodes(binpack.NoConstraint, []string{"d-r1", "e-r1"})
	assert.Equal(t, []string{"d-r2", "e-none", "d-empty"}, admitted(db, notR1))
	assert.Equal(t, notR1, db.AvoidNodes(binpack.NoConstraint, []string{"e-r1", "d-r1", "d-r1"}), "a set")
	assert.Equal(t, binpack.NoConstraint, db.AvoidNodes(binpack.NoConstraint, []string{"nowhere"}), "no such node: nothing changes")
	assert.Equal(t, binpack.NoConstraint, db.AvoidNodes(binpack.NoConstraint, nil))
	both := db.AvoidNodes(db.Avoid(binpack.NoConstraint, []string{"east"}), []string{"d-r1"})
	assert.Equal(t, []string{"d-r2", "d-empty"}, admitted(db, both), "composes with Avoid")
	assert.NotEqual(t, db.Avoid(binpack.NoConstraint, []string{"d-r1"}), db.AvoidNodes(binpack.NoConstraint, []string{"d-r1"}), "a node is not a cluster")
	q := query(r3(0, 8, 8), 0, 0)
	q.Constraint = db.AvoidNodes(binpack.NoConstraint, []string{"e-r1"})
	assert.NotEqual(t, "e-r1", selectName(db, q), "Select keeps off the avoided node, although it fits best")
}

func TestExplainIn(t *testing.T) {
	db := mustNew(t, binpack.Options{}, clusterNodes()...)
	east := binpack.Restriction{Cluster: "east"}
	q := query(r3(0, 10, 10), 0, 0)

	r := db.ExplainIn(q, east)
	assert.Equal(t, binpack.TooLarge, r.Kind, "east's nodes have 8 cores; the default cluster's do not count")
	assert.Equal(t, "e-r1", r.NodeName)
	assert.Equal(t, 2, r.Candidates)
	assert.Equal(t, binpack.Fits, db.Explain(q).Kind)

	q.Requests = r3(0, 4, 4)
	db.Bind(2, 1, 0, r3(0, 6, 0))
	db.Bind(3, 1, 0, r3(0, 5, 0))
	r = db.ExplainIn(q, east)
	assert.Equal(t, binpack.Insufficient, r.Kind)
	assert.Equal(t, "e-none", r.NodeName)
	assert.Equal(t, 1, r.Resource)
	assert.Equal(t, core, r.Short)
	assert.Equal(t, "0/2 nodes fit: 2 short of cpu by at least 1", r.String(schema3))

	q.Requests = r3(0, 2, 2)
	r = db.ExplainIn(q, east)
	assert.Equal(t, binpack.Fits, r.Kind)
	assert.Equal(t, "e-r1", r.NodeName)

	assert.Equal(t, binpack.NoNodes, db.ExplainIn(q, binpack.Restriction{Cluster: "west"}).Kind)
	q.OnlyNode = 0
	assert.Equal(t, binpack.NoNodes, db.ExplainIn(q, east).Kind, "the only node is outside the domain")
	q.OnlyNode = -1

	q.Constraint = db.Constraints(map[string]string{"zone": "a"}, nil)
	r = db.ExplainIn(q, binpack.Restriction{Label: "rack", Value: "r2"})
	assert.Equal(t, binpack.NoMatchingNode, r.Kind)
	assert.Equal(t, 1, r.Selector, "only the domain's nodes are counted")
	assert.Zero(t, r.Taints)
	q.Constraint, q.Requests = binpack.NoConstraint, r3(0, 40, 0)
	r = db.ExplainIn(q, binpack.Restriction{Label: "rack", Value: "r1"})
	assert.Equal(t, binpack.TooLarge, r.Kind)
	assert.Equal(t, "d-r1", r.NodeName)
	assert.Equal(t, 1, r.Candidates)
	assert.Equal(t, 1, r.Taints)
	assert.Zero(t, r.Selector)
	q.Queue = 9
	assert.Equal(t, binpack.InvalidQuery, db.ExplainIn(q, east).Kind)
}

func TestClustersAndLabelValues(t *testing.T) {
	db := mustNew(t, binpack.Options{}, clusterNodes()...)
	assert.Equal(t, []string{"", "east"}, db.Clusters())
	assert.Equal(t, []string{"", "r1", "r2"}, db.LabelValues("", "rack"))
	assert.Equal(t, []string{"r1"}, db.LabelValues("east", "rack"))
	assert.Empty(t, db.LabelValues("east", "zone"))
	assert.Empty(t, mustNew(t, binpack.Options{}).Clusters())
}

func TestCompareIndexed(t *testing.T) {
	db := mustNew(t, binpack.Options{}, node3("a", 0, 1, 1))
	assert.Equal(t, 1, db.CompareIndexed(r3(1, 0, 0), r3(0, 64, 64)), "gpu first by default")
	assert.Equal(t, -1, db.CompareIndexed(r3(0, 1, 9), r3(0, 2, 0)))
	assert.Equal(t, 0, db.CompareIndexed(r3(1, 2, 3), r3(1, 2, 3)))
	assert.Equal(t, -1, db.CompareIndexed(flotilla.Resources{}, r3(0, 0, 1)), "shorter vectors pad with zeros")

	memFirst := mustNew(t, binpack.Options{IndexedResources: []binpack.IndexedResource{{Name: "memory", Resolution: 1 << 30}}}, node3("a", 0, 1, 1))
	assert.Equal(t, 1, memFirst.CompareIndexed(r3(0, 1, 2), r3(9, 9, 1)), "memory only; resolution ignored")
	assert.Equal(t, 0, memFirst.CompareIndexed(r3(0, 1, 2), r3(9, 9, 2)))
}

func TestPropertyRestrictedSelect(t *testing.T) {
	runProperty(t, "Select on a restricted constraint is the best node of the domain", func(seed int64) string {
		rng := rand.New(rand.NewPCG(uint64(seed), 0xc1))
		clusters := []string{"", "east", "west"}
		var nodes []*flotilla.Node
		for i := range rng.IntN(12) {
			n := node3(fmt.Sprint("n", i), int64(rng.IntN(2)), int64(rng.IntN(5))*4, int64(rng.IntN(5))*8)
			n.Cluster = clusters[rng.IntN(3)]
			n.Labels = map[string]string{}
			if rng.IntN(4) > 0 {
				n.Labels["rack"] = []string{"", "r1", "r2"}[rng.IntN(3)]
			}
			if rng.IntN(3) == 0 {
				n.Labels["zone"] = "a"
			}
			if rng.IntN(5) == 0 {
				n.Taints = []flotilla.Taint{{Key: "dedicated", Value: "x", Effect: flotilla.TaintNoSchedule}}
			}
			n.Unschedulable = rng.IntN(8) == 0
			nodes = append(nodes, n)
		}
		db, err := binpack.New(binpack.Options{Schema: schema3, Levels: twoLevels, Queues: 3}, nodes)
		if err != nil {
			return err.Error()
		}
		base := []binpack.ConstraintID{binpack.NoConstraint,
			db.Constraints(map[string]string{"zone": "a"}, nil),
			db.Constraints(nil, []flotilla.Toleration{{Operator: flotilla.TolerationExists}})}
		for step := range 40 {
			r := binpack.Restriction{Cluster: clusters[rng.IntN(3)]}
			if rng.IntN(2) == 0 {
				r.Label, r.Value = "rack", []string{"", "r1", "r2"}[rng.IntN(3)]
			}
			c := base[rng.IntN(len(base))]
			rid := db.Restrict(c, r)
			q := &binpack.Query{Requests: r3(int64(rng.IntN(2)), int64(rng.IntN(9)), int64(rng.IntN(17))),
				Level: rng.IntN(2), Queue: rng.IntN(3), Constraint: rid, OnlyNode: -1}
			inDomain := func(n int) bool {
				nd := nodes[n]
				if nd.Cluster != r.Cluster {
					return false
				}
				v, ok := nd.Labels[r.Label]
				return r.Label == "" || (ok && v == r.Value)
			}
			want, wantKey, wantTier, candidates, domain := -1, flotilla.Resources(nil), 0, 0, 0
			for n := range nodes {
				if db.Admits(rid, n) != (inDomain(n) && db.Admits(c, n)) {
					return fmt.Sprintf("seed %d step %d: node %d admitted %v, in domain %v", seed, step, n, db.Admits(rid, n), inDomain(n))
				}
				if inDomain(n) {
					domain++
				}
				if !inDomain(n) || !db.Admits(c, n) || nodes[n].Unschedulable {
					continue
				}
				candidates++
				a := db.Allocatable(n, q.Level)
				if !q.Requests.Fits(a) {
					continue
				}
				tier := int(db.Tier(n, q.Queue))
				if want < 0 || tier < wantTier || (tier == wantTier && slices.Compare(a, wantKey) < 0) {
					want, wantKey, wantTier = n, a, tier
				}
			}
			got, ok := db.Select(q)
			if got != want || ok != (want >= 0) {
				return fmt.Sprintf("seed %d step %d: Select in %+v = %d, oracle %d", seed, step, r, got, want)
			}
			q.Constraint = c
			why := db.ExplainIn(q, r)
			switch {
			case domain == 0 && why.Kind != binpack.NoNodes,
				domain > 0 && (why.Kind == binpack.Fits) != ok,
				domain > 0 && !ok && why.Candidates != candidates:
				return fmt.Sprintf("seed %d step %d: ExplainIn %+v; domain %d, candidates %d, fits %v", seed, step, why, domain, candidates, ok)
			}
			if ok {
				db.Bind(got, q.Queue, q.Level, q.Requests)
			}
		}
		return ""
	})
}
