package binpack_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/binpack"
)

// The seed's example (seeds/armada-scheduler.md, urgency-based preemption).
func TestAllocatableByLevel(t *testing.T) {
	cpu := flotilla.MustResourceSchema("cpu")
	db := mustNew(t, binpack.Options{Schema: cpu}, &flotilla.Node{Name: "n", Total: flotilla.Resources{32 * core}})
	db.Bind(0, 0, 1, flotilla.Resources{10 * core}) // armada-default, 30000
	db.Bind(0, 1, 0, flotilla.Resources{20 * core}) // armada-preemptible, 20000
	require.Equal(t, flotilla.Resources{22 * core}, db.Allocatable(0, 1), "level 1 (30000)")
	require.Equal(t, flotilla.Resources{2 * core}, db.Allocatable(0, 0), "level 0 (20000)")

	_, ok := db.Select(&binpack.Query{Requests: flotilla.Resources{22 * core}, Level: 1, OnlyNode: -1})
	require.True(t, ok, "22 cores fit at level 1")
	_, ok = db.Select(&binpack.Query{Requests: flotilla.Resources{3 * core}, Level: 0, OnlyNode: -1})
	require.True(t, !ok, "3 cores do not fit at level 0")

	// Binding over the preemptible job drives level 0 negative: that job
	// is now an urgency-preemption victim.
	db.Bind(0, 2, 1, flotilla.Resources{22 * core})
	require.Equal(t, flotilla.Resources{0}, db.Allocatable(0, 1))
	require.Equal(t, flotilla.Resources{-20 * core}, db.Allocatable(0, 0))
	lvl, ok := db.Level(30000)
	require.Equal(t, 1, lvl)
	require.True(t, ok)
}

func TestTiers(t *testing.T) {
	// Free cores: own (q0's) 16, unused 20, other (q1's) 28, shared
	// (q0 and q1) 30.
	setup := func(t *testing.T) *binpack.DB {
		db := mustNew(t, binpack.Options{},
			node3("own", 0, 32, 256), node3("unused", 0, 20, 256),
			node3("other", 0, 32, 256), node3("shared", 0, 32, 256))
		db.Bind(0, 0, 0, r3(0, 16, 0))
		db.Bind(2, 1, 0, r3(0, 4, 0))
		db.Bind(3, 0, 0, r3(0, 1, 0))
		db.Bind(3, 1, 0, r3(0, 1, 0))
		return db
	}
	cases := []struct {
		name  string
		queue int
		cpu   int64
		prep  func(db *binpack.DB)
		want  string
	}{
		{"own first", 0, 1, nil, "own"},
		{"unused before others' smaller nodes", 2, 1, nil, "unused"},
		{"q1 goes to its own node", 1, 4, nil, "other"},
		{"own too small: unused", 0, 17, nil, "unused"},
		{"own and unused too small: a node q0 shares before a node only q1 uses", 0, 21, nil, "shared"},
		{"q1: other is its own, so q1 prefers it", 1, 21, nil, "other"},
		{"only the shared node is large enough", 0, 29, nil, "shared"},
		{"unbind returns node to unused", 3, 21, func(db *binpack.DB) { db.Unbind(0, 0, 0, r3(0, 16, 0)) }, "own"},
		{"shared and other queues' nodes compete by size", 2, 5, func(db *binpack.DB) {
			db.Bind(1, 3, 0, r3(0, 20, 0))
			db.Bind(3, 3, 0, r3(0, 20, 0))
		}, "shared"},
		{"nothing fits", 0, 33, nil, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			db := setup(t)
			if c.prep != nil {
				c.prep(db)
			}
			require.Equal(t, c.want, selectName(db, query(r3(0, c.cpu, 1), 0, c.queue)))
		})
	}
	db := setup(t)
	require.Equal(t, binpack.TierOwn, db.Tier(0, 0))
	require.Equal(t, binpack.TierUnused, db.Tier(1, 0))
	require.Equal(t, binpack.TierShared, db.Tier(2, 0))
	require.Equal(t, binpack.TierJoined, db.Tier(3, 0))
	require.Equal(t, []int{0, 1}, db.Users(3))
	require.Equal(t, []int{}, db.Users(1))
}

func TestSmallestFit(t *testing.T) {
	nodes := func() []*flotilla.Node {
		return []*flotilla.Node{
			node3("a", 0, 8, 64), node3("b", 0, 4, 128), node3("c", 1, 2, 16),
			node3("d", 0, 5, 10), node3("e", 0, 7, 8), node3("f", 0, 4, 128),
		}
	}
	cases := []struct {
		name    string
		indexed []binpack.IndexedResource
		req     flotilla.Resources
		want    string
	}{
		{"gpu first: cpu job avoids gpu node", nil, r3(0, 1, 1), "b"},
		{"ties by index", nil, r3(0, 4, 100), "b"},
		{"gpu job", nil, r3(1, 1, 1), "c"},
		{"skips nodes too small", nil, r3(0, 6, 1), "e"},
		{"memory breaks cpu tie", nil, r3(0, 5, 9), "d"},
		{"resolution: 4 cores rounds d and e together, memory decides",
			[]binpack.IndexedResource{{Name: "cpu", Resolution: 4 * core}, {Name: "memory", Resolution: 1}}, r3(0, 5, 1), "e"},
		{"resolution does not loosen the exact fit",
			[]binpack.IndexedResource{{Name: "cpu", Resolution: 4 * core}, {Name: "memory", Resolution: 1}}, r3(0, 6, 9), "a"},
		{"memory first", []binpack.IndexedResource{{Name: "memory", Resolution: 1}}, r3(0, 1, 1), "e"},
		{"memory only, coarse", []binpack.IndexedResource{{Name: "memory", Resolution: gi}}, r3(0, 3, 20), "a"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			db := mustNew(t, binpack.Options{IndexedResources: c.indexed}, nodes()...)
			require.Equal(t, c.want, selectName(db, query(c.req, 0, 0)))
		})
	}
}

// An indexed resource absent from the schema is a resource of capacity 0 on
// every node: New accepts it (Armada's default config indexes
// nvidia.com/gpu on CPU-only clusters) and smallest-fit orders nodes as if it
// were not listed.
func TestIndexedResourceAbsentFromSchemaIsSkipped(t *testing.T) {
	cpuMem := flotilla.MustResourceSchema("cpu", "memory")
	n := func(name string, cpu, mem int64) *flotilla.Node {
		return &flotilla.Node{Name: name, Total: flotilla.Resources{cpu * core, mem * gi}}
	}
	nodes := []*flotilla.Node{n("a", 8, 64), n("b", 4, 128), n("c", 4, 16), n("d", 16, 8)}
	cases := []struct {
		name    string
		indexed []binpack.IndexedResource
		want    string
	}{
		{"gpu absent, then cpu, memory", []binpack.IndexedResource{{Name: gpuName, Resolution: 1}, {Name: "cpu", Resolution: 1}, {Name: "memory", Resolution: 1}}, "c"},
		{"memory, then an absent resource, then cpu", []binpack.IndexedResource{{Name: "memory", Resolution: 1}, {Name: "example.com/fpga", Resolution: 1}, {Name: "cpu", Resolution: 1}}, "d"},
		{"only absent resources: every node ties, lowest index wins", []binpack.IndexedResource{{Name: gpuName, Resolution: 1}}, "a"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			db, err := binpack.New(binpack.Options{Schema: cpuMem, IndexedResources: c.indexed, Levels: []int32{0}, Queues: 1}, nodes)
			require.NoError(t, err)
			require.Equal(t, c.want, selectName(db, query(flotilla.Resources{core, gi}, 0, 0)))
			require.Equal(t, 0, db.CompareIndexed(flotilla.Resources{0, 0}, flotilla.Resources{0, 0}))
		})
	}
}

func TestSelectors(t *testing.T) {
	a := node3("a", 0, 4, 16)
	a.Labels = map[string]string{"zone": "a", "disk": "ssd"}
	b := node3("b", 0, 8, 16)
	b.Labels = map[string]string{"zone": "b"}
	db := mustNew(t, binpack.Options{}, a, b)
	cases := []struct {
		sel  map[string]string
		want string
	}{
		{nil, "a"},
		{map[string]string{"zone": "b"}, "b"},
		{map[string]string{"zone": "a", "disk": "ssd"}, "a"},
		{map[string]string{"zone": "b", "disk": "ssd"}, ""},
		{map[string]string{"gpu": ""}, ""},
	}
	for _, c := range cases {
		q := query(r3(0, 1, 1), 0, 0)
		q.Constraint = db.Constraints(c.sel, nil)
		require.Equal(t, c.want, selectName(db, q), c.sel)
	}
	q := query(r3(0, 1, 1), 0, 0)
	q.Constraint = db.Constraints(map[string]string{"zone": "c"}, nil)
	r := db.Explain(q)
	require.Equal(t, binpack.NoMatchingNode, r.Kind)
	require.Equal(t, 2, r.Selector)
	require.Equal(t, "0/2 nodes fit: 2 node selector zone=c mismatched", r.String(schema3))
	// Interning: equal content, different maps.
	require.Equal(t, db.Constraints(map[string]string{"zone": "b"}, nil), db.Constraints(map[string]string{"zone": "b"}, nil))
	require.True(t, db.Constraints(map[string]string{"zone": "b"}, nil) != db.Constraints(map[string]string{"zone": "a"}, nil))
}

func TestTaints(t *testing.T) {
	taint := func(effect flotilla.TaintEffect) []flotilla.Taint {
		return []flotilla.Taint{{Key: "dedicated", Value: "ml", Effect: effect}}
	}
	cases := []struct {
		name   string
		taints []flotilla.Taint
		tols   []flotilla.Toleration
		fits   bool
	}{
		{"untainted", nil, nil, true},
		{"NoSchedule blocks", taint(flotilla.TaintNoSchedule), nil, false},
		{"NoExecute blocks", taint(flotilla.TaintNoExecute), nil, false},
		{"PreferNoSchedule ignored", taint(flotilla.TaintPreferNoSchedule), nil, true},
		{"Equal matches", taint(flotilla.TaintNoSchedule), []flotilla.Toleration{{Key: "dedicated", Operator: flotilla.TolerationEqual, Value: "ml", Effect: flotilla.TaintNoSchedule}}, true},
		{"empty operator is Equal", taint(flotilla.TaintNoSchedule), []flotilla.Toleration{{Key: "dedicated", Value: "ml"}}, true},
		{"Equal wrong value", taint(flotilla.TaintNoSchedule), []flotilla.Toleration{{Key: "dedicated", Value: "web"}}, false},
		{"Equal wrong key", taint(flotilla.TaintNoSchedule), []flotilla.Toleration{{Key: "team", Value: "ml"}}, false},
		{"Exists ignores value", taint(flotilla.TaintNoSchedule), []flotilla.Toleration{{Key: "dedicated", Operator: flotilla.TolerationExists}}, true},
		{"Exists with empty key tolerates all", taint(flotilla.TaintNoExecute), []flotilla.Toleration{{Operator: flotilla.TolerationExists}}, true},
		{"effect must match", taint(flotilla.TaintNoSchedule), []flotilla.Toleration{{Key: "dedicated", Value: "ml", Effect: flotilla.TaintNoExecute}}, false},
		{"empty effect matches all", taint(flotilla.TaintNoExecute), []flotilla.Toleration{{Key: "dedicated", Value: "ml"}}, true},
		{"every taint needs a toleration",
			append(taint(flotilla.TaintNoSchedule), flotilla.Taint{Key: "gpu", Effect: flotilla.TaintNoSchedule}),
			[]flotilla.Toleration{{Key: "dedicated", Value: "ml"}}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			n := node3("n", 0, 4, 16)
			n.Taints = c.taints
			db := mustNew(t, binpack.Options{}, n)
			q := query(r3(0, 1, 1), 0, 0)
			q.Constraint = db.Constraints(nil, c.tols)
			_, ok := db.Select(q)
			require.Equal(t, c.fits, ok)
			if !ok {
				r := db.Explain(q)
				require.Equal(t, binpack.NoMatchingNode, r.Kind)
				require.Equal(t, 1, r.Taints)
			}
		})
	}
}

func TestCordon(t *testing.T) {
	c := node3("cordoned", 0, 4, 16)
	c.Unschedulable = true
	db := mustNew(t, binpack.Options{}, c, node3("open", 0, 8, 16))
	q := query(r3(0, 1, 1), 0, 0)
	require.Equal(t, "open", selectName(db, q), "cordoned node skipped though smaller")
	q.Requests = r3(0, 6, 1)
	db.Bind(1, 0, 0, r3(0, 4, 0))
	require.Equal(t, "", selectName(db, q))
	r := db.Explain(q)
	require.Equal(t, binpack.Insufficient, r.Kind)
	require.Equal(t, 1, r.Cordoned)
	q.OnlyNode = 0
	q.Requests = r3(0, 4, 16)
	require.Equal(t, "cordoned", selectName(db, q), "OnlyNode ignores the cordon")
	db.Bind(0, 1, 0, q.Requests) // evicted job back on its node
	require.Equal(t, r3(0, 0, 0), db.Allocatable(0, 0))
	require.Equal(t, []int{1}, db.Users(0))
	require.Equal(t, "", selectName(db, q))
	db.Unbind(0, 1, 0, q.Requests)
	require.Equal(t, r3(0, 4, 16), db.Allocatable(0, 0))
	q.OnlyNode = 1
	q.Requests = r3(0, 8, 16)
	require.Equal(t, "", selectName(db, q), "OnlyNode still checks the fit")
	require.Equal(t, "0/1 nodes fit: 1 short of cpu by at least 4", db.Explain(q).String(schema3))
}

func TestRollback(t *testing.T) {
	db := mustNew(t, binpack.Options{}, node3("a", 1, 32, 256), node3("b", 0, 16, 64), node3("c", 0, 8, 64))
	db.Bind(0, 0, 1, r3(1, 4, 8))
	db.Bind(1, 1, 0, r3(0, 4, 8))
	db.Forget()
	type snap struct {
		alloc [][]flotilla.Resources
		users [][]int
		picks []int
	}
	snapshot := func() snap {
		var s snap
		for n := 0; n < db.NodeCount(); n++ {
			s.alloc = append(s.alloc, []flotilla.Resources{db.Allocatable(n, 0).Clone(), db.Allocatable(n, 1).Clone()})
			s.users = append(s.users, db.Users(n))
		}
		for q := 0; q < 4; q++ {
			for _, cpu := range []int64{1, 8, 16, 30} {
				n, _ := db.Select(query(r3(0, cpu, 1), q%2, q))
				s.picks = append(s.picks, n)
			}
		}
		return s
	}
	before := snapshot()
	m := db.Mark()
	db.Bind(2, 2, 1, r3(0, 8, 64))
	db.Unbind(0, 0, 1, r3(1, 4, 8))
	inner := db.Mark()
	db.Bind(0, 3, 0, r3(1, 28, 200))
	db.Bind(1, 3, 1, r3(0, 12, 56))
	require.Equal(t, 4, db.Pending())
	db.Rollback(inner)
	require.Equal(t, 2, db.Pending())
	db.Rollback(inner) // idempotent
	require.Equal(t, 2, db.Pending())
	db.Rollback(m)
	require.Equal(t, before, snapshot())
	db.Rollback(m)
	db.Rollback(inner) // stale: rolled back past it
	require.Equal(t, before, snapshot())

	// A mark rolled past is stale even when the log grows again.
	for range 3 {
		db.Bind(2, 0, 0, r3(0, 1, 1))
	}
	db.Rollback(inner)
	require.Equal(t, 3, db.Pending())
	// Forget makes changes permanent and marks stale.
	m = db.Mark()
	db.Bind(2, 0, 0, r3(0, 1, 1))
	db.Forget()
	db.Rollback(m)
	require.Equal(t, r3(0, 4, 60), db.Allocatable(2, 0))
	db.Rollback(binpack.Mark{})
	require.Equal(t, 0, db.Pending())

	// Two marks at the same point: rolling back to one keeps the other.
	outer := db.Mark()
	same := db.Mark()
	db.Bind(2, 1, 0, r3(0, 1, 1))
	db.Rollback(same)
	db.Bind(2, 1, 0, r3(0, 2, 2))
	db.Rollback(outer)
	require.Equal(t, r3(0, 4, 60), db.Allocatable(2, 0))
	require.Equal(t, []int{0}, db.Users(2))
}

func TestNewValidation(t *testing.T) {
	cpu := flotilla.MustResourceSchema("cpu", "memory")
	_, err := binpack.New(binpack.Options{
		Schema:           cpu,
		IndexedResources: []binpack.IndexedResource{{Name: "gpu", Resolution: 1}, {Name: "cpu"}, {Name: ""}, {Name: "cpu", Resolution: 1}, {Name: "memory", Resolution: 1}},
		Levels:           []int32{10, 10, 5},
		Queues:           -1,
	}, []*flotilla.Node{
		{Name: "a", Total: flotilla.Resources{1, 2}},
		{Name: "a", Total: flotilla.Resources{1}},
		nil,
		{Name: "", Total: flotilla.Resources{-1, 2}},
	})
	require.True(t, err != nil)
	var fields []string
	for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
		var fe *flotilla.FieldError
		require.True(t, errors.As(e, &fe), e)
		fields = append(fields, fe.Field+"="+fe.Value)
	}
	require.Equal(t, []string{
		"levels[1]=10", "levels[2]=5", "queues=-1", "indexedResources=5",
		"indexedResources[1].resolution=0",
		"indexedResources[2].name=", "indexedResources[2].resolution=0", "indexedResources[3].name=cpu",
		"nodes[1].name=a", "nodes[1].total=[1]", "nodes[2]=", "nodes[3].name=", "nodes[3].total.cpu=-1m",
	}, fields)
	require.ErrorIs(t, err, flotilla.ErrDuplicate)
	require.ErrorIs(t, err, flotilla.ErrNegative)

	_, err = binpack.New(binpack.Options{}, []*flotilla.Node{nil, {Name: "x"}})
	require.ErrorIs(t, err, flotilla.ErrRequired)
	require.True(t, strings.Contains(err.Error(), "schema"), err)
	require.True(t, strings.Contains(err.Error(), "levels"), err)

	_, err = binpack.New(binpack.Options{Schema: cpu, Levels: []int32{1},
		IndexedResources: make([]binpack.IndexedResource, 5)}, nil)
	require.ErrorIs(t, err, flotilla.ErrOutOfRange)

	db, err := binpack.New(binpack.Options{Schema: cpu, Levels: []int32{1}, Queues: 1}, nil)
	require.NoError(t, err)
	require.Equal(t, binpack.NoNodes, db.Explain(query(flotilla.Resources{1, 1}, 0, 0)).Kind)

	// Degenerate but valid: no resources at all; everything fits.
	none := flotilla.MustResourceSchema()
	db, err = binpack.New(binpack.Options{Schema: none, Levels: []int32{0}, Queues: 1},
		[]*flotilla.Node{{Name: "a"}, {Name: "b"}})
	require.NoError(t, err)
	require.Equal(t, "a", selectName(db, query(nil, 0, 0)))
	db.Bind(0, 0, 0, nil)
	require.Equal(t, "a", selectName(db, query(nil, 0, 0)))

	// Other schemas: indexed by default on what exists, else the first ones.
	for _, names := range [][]string{{"memory"}, {"x", "y", "z", "w", "v"}} {
		s := flotilla.MustResourceSchema(names...)
		_, err := binpack.New(binpack.Options{Schema: s, Levels: []int32{0}}, []*flotilla.Node{{Name: "a", Total: s.Zero()}})
		require.NoError(t, err)
	}
}

func TestExplain(t *testing.T) {
	var nodes []*flotilla.Node
	for i := range 8 {
		nodes = append(nodes, node3("node-"+string(rune('0'+i)), 0, 8, 64))
	}
	db := mustNew(t, binpack.Options{}, nodes...)
	for i := range 8 {
		db.Bind(i, 0, 0, r3(0, int64(8-i/2), 32))
	}
	q := query(r3(0, 7, 8), 0, 1)
	r := db.Explain(q)
	require.Equal(t, binpack.Insufficient, r.Kind)
	require.Equal(t, 8, r.Candidates)
	require.Equal(t, "0/8 nodes fit: 8 short of cpu by at least 4", r.String(schema3))
	q.Requests = r3(1, 9, 8)
	r = db.Explain(q)
	require.Equal(t, binpack.TooLarge, r.Kind)
	require.Equal(t, "0/8 nodes fit: 8 short of nvidia.com/gpu by at least 1 even when empty", r.String(schema3))
	q.Requests = r3(0, 1, 1)
	q.Level = 1
	r = db.Explain(q)
	require.Equal(t, binpack.Fits, r.Kind)
	require.Equal(t, "fits on node-0", r.String(schema3))
	q.Level = 2
	require.Equal(t, "invalid query: level 2 out of range", db.Explain(q).String(schema3))
	q.Level, q.Queue = 0, 4
	require.Equal(t, binpack.InvalidQuery, db.Explain(q).Kind)
	_, ok := db.Select(q)
	require.True(t, !ok)
}

func TestAccessors(t *testing.T) {
	db := mustNew(t, binpack.Options{}, node3("a", 0, 1, 1), node3("b", 0, 1, 1))
	i, ok := db.NodeIndex("b")
	require.Equal(t, 1, i)
	require.True(t, ok)
	_, ok = db.NodeIndex("z")
	require.True(t, !ok)
	require.Equal(t, 2, db.NodeCount())
	require.Equal(t, "a", db.Node(0).Name)
	require.Equal(t, twoLevels, db.Levels())
	require.Equal(t, 4, db.Queues())
	db.Bind(0, 2, 0, r3(0, 1, 0))
	db.Bind(0, 2, 0, r3(0, 0, 1))
	require.Equal(t, 2, db.Jobs(0, 2))
}

func TestZeroAllocs(t *testing.T) {
	var nodes []*flotilla.Node
	for i := range 64 {
		n := node3("n"+string(rune('A'+i)), 0, 32, 256)
		n.Labels = map[string]string{"zone": []string{"a", "b"}[i%2]}
		nodes = append(nodes, n)
	}
	db := mustNew(t, binpack.Options{}, nodes...)
	sel := map[string]string{"zone": "b"}
	tols := []flotilla.Toleration{{Key: "x", Operator: flotilla.TolerationExists}}
	db.Constraints(sel, tols) // intern once
	req := r3(0, 1, 1)
	q := query(req, 1, 0)
	allocs := testing.AllocsPerRun(200, func() {
		if db.Constraints(nil, nil) != binpack.NoConstraint {
			t.Fatal("empty constraint")
		}
		q.Constraint = db.Constraints(sel, tols)
		n, ok := db.Select(q)
		if ok {
			db.Bind(n, q.Queue, q.Level, req)
		}
		q.Queue = (q.Queue + 1) % 4
		db.Forget()
	})
	require.Equal(t, 0.0, allocs)
	m := db.Mark()
	allocs = testing.AllocsPerRun(100, func() {
		n, _ := db.Select(q)
		db.Bind(n, 0, 0, req)
		db.Rollback(m)
	})
	require.Equal(t, 0.0, allocs)
}
