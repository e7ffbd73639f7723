package queue

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/leanovate/gopter"
	"github.com/leanovate/gopter/gen"
	"github.com/leanovate/gopter/prop"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flotilla-sched/flotilla"
)

var t0 = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

var testSchema = flotilla.MustResourceSchema("cpu", "memory", "nvidia.com/gpu")

func testClasses() []flotilla.PriorityClass {
	return append(flotilla.DefaultPriorityClasses(), flotilla.PriorityClass{Name: "low", Priority: 100, Preemptible: true})
}

func newStore(t testing.TB) *Store {
	t.Helper()
	s, err := New(testSchema, testClasses(), flotilla.ArmadaDefault)
	require.NoError(t, err)
	return s
}

func job(id, queue, set string) *flotilla.Job {
	return &flotilla.Job{ID: id, Queue: queue, JobSet: set, SubmitTime: t0, Requests: flotilla.Resources{1000, 1 << 30, 0}}
}

func ids(jobs []*flotilla.Job) []string {
	out := make([]string, len(jobs))
	for i, j := range jobs {
		out[i] = j.ID
	}
	return out
}

func cursorIDs(s *Store, queue string) []string {
	var out []string
	c := s.Cursor(queue)
	for e, ok := c.Next(); ok; e, ok = c.Next() {
		out = append(out, e.Job.ID)
	}
	return out
}

func TestLess(t *testing.T) {
	e := func(class int32, prio uint32, submit int, id string) *Entry {
		return &Entry{ClassPriority: class, Job: &flotilla.Job{ID: id, Priority: prio, SubmitTime: t0.Add(time.Duration(submit) * time.Second)}}
	}
	cases := []struct {
		name string
		a, b *Entry
		want bool
	}{
		{"higher class first", e(30000, 9, 9, "z"), e(20000, 0, 0, "a"), true},
		{"lower class later", e(20000, 0, 0, "a"), e(30000, 9, 9, "z"), false},
		{"lower priority number first", e(1, 1, 9, "z"), e(1, 10, 0, "a"), true},
		{"higher priority number later", e(1, 10, 0, "a"), e(1, 1, 9, "z"), false},
		{"earlier submit first", e(1, 1, 1, "z"), e(1, 1, 2, "a"), true},
		{"later submit later", e(1, 1, 2, "a"), e(1, 1, 1, "z"), false},
		{"id breaks ties", e(1, 1, 1, "a"), e(1, 1, 1, "b"), true},
		{"id breaks ties reversed", e(1, 1, 1, "b"), e(1, 1, 1, "a"), false},
		{"irreflexive", e(1, 1, 1, "a"), e(1, 1, 1, "a"), false},
	}
	for _, c := range cases {
		assert.Equal(t, c.want, Less(c.a, c.b), c.name)
		m := MarkOf(c.a)
		assert.Equal(t, c.want, m.Before(c.b), "mark: "+c.name)
	}
}

// A Mark orders as the entry it was taken from, whatever the two entries.
func TestMarkBeforeIsLess(t *testing.T) {
	props := gopter.NewProperties(gopter.DefaultTestParametersWithSeed(1))
	entry := func(class int32, prio uint32, submit int64, zone bool, id string) *Entry {
		at := t0.Add(time.Duration(submit) * time.Millisecond)
		if zone { // the same instants in another location: Less compares instants
			at = at.In(time.FixedZone("x", 3600))
		}
		return &Entry{ClassPriority: class, Job: &flotilla.Job{ID: id, Priority: prio, SubmitTime: at}}
	}
	props.Property("MarkOf(a).Before(b) == Less(a, b)", prop.ForAll(
		func(ac, bc int32, ap, bp uint32, as, bs int64, zone bool, aid, bid string) bool {
			a, b := entry(ac, ap, as, zone, aid), entry(bc, bp, bs, false, bid)
			m := MarkOf(a)
			return m.Before(b) == Less(a, b) && m.ID() == aid
		},
		gen.Int32Range(0, 2), gen.Int32Range(0, 2), gen.UInt32Range(0, 2), gen.UInt32Range(0, 2),
		gen.Int64Range(0, 3), gen.Int64Range(0, 3), gen.Bool(), gen.OneConstOf("a", "b"), gen.OneConstOf("a", "b"),
	))
	props.TestingRun(t)
}

func TestLessEvicted(t *testing.T) {
	e := func(class int32, prio uint32, submit int, id string) *Entry {
		return &Entry{ClassPriority: class, Job: &flotilla.Job{ID: id, Priority: prio, SubmitTime: t0.Add(time.Duration(submit) * time.Second)}}
	}
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Hour) }
	cases := []struct {
		name           string
		a, b           *Entry
		aStart, bStart time.Time
		want           bool
	}{
		{"class beats start", e(2, 0, 0, "a"), e(1, 0, 0, "b"), at(9), at(1), true},
		{"priority beats start", e(1, 0, 0, "a"), e(1, 1, 0, "b"), at(9), at(1), true},
		{"earliest start first", e(1, 1, 9, "z"), e(1, 1, 0, "a"), at(1), at(2), true},
		{"later start later", e(1, 1, 0, "a"), e(1, 1, 9, "z"), at(2), at(1), false},
		{"submit breaks start ties", e(1, 1, 1, "z"), e(1, 1, 2, "a"), at(1), at(1), true},
		{"id last", e(1, 1, 1, "a"), e(1, 1, 1, "b"), at(1), at(1), true},
		{"irreflexive", e(1, 1, 1, "a"), e(1, 1, 1, "a"), at(1), at(1), false},
	}
	for _, c := range cases {
		assert.Equal(t, c.want, LessEvicted(c.a, c.b, c.aStart, c.bStart), c.name)
	}
}

func TestNew(t *testing.T) {
	_, err := New(testSchema, testClasses(), "")
	assert.ErrorIs(t, err, flotilla.ErrUnknownName)
	_, err = New(testSchema, testClasses(), "nope")
	var fe *flotilla.FieldError
	require.ErrorAs(t, err, &fe)
	assert.Equal(t, "defaultPriorityClass", fe.Field)
	assert.Equal(t, "nope", fe.Value)
	assert.ErrorIs(t, err, flotilla.ErrUnknownName)

	_, err = New(testSchema, []flotilla.PriorityClass{{Name: "a"}, {Name: "a", Priority: 1}, {Name: ""}}, "a")
	require.ErrorAs(t, err, &fe)
	assert.Equal(t, "priorityClasses[1].name", fe.Field)
	assert.ErrorIs(t, err, flotilla.ErrDuplicate)
	assert.ErrorIs(t, err, flotilla.ErrRequired)
	assert.Contains(t, err.Error(), "priorityClasses[2].name")
}

func TestAddErrors(t *testing.T) {
	s := newStore(t)
	require.NoError(t, s.Add(job("a", "A", "s")))
	cases := []struct {
		name  string
		job   *flotilla.Job
		field string
		value string
		class error
	}{
		{"duplicate id", job("a", "B", "t"), "id", "a", flotilla.ErrDuplicate},
		{"unknown class", &flotilla.Job{ID: "b", Queue: "A", PriorityClass: "gold"}, "priorityClass", "gold", flotilla.ErrUnknownName},
		{"nil job", nil, "job", "", flotilla.ErrRequired},
		{"empty id", &flotilla.Job{Queue: "A"}, "id", "", flotilla.ErrRequired},
		{"empty queue", &flotilla.Job{ID: "c"}, "queue", "", flotilla.ErrRequired},
	}
	for _, c := range cases {
		err := s.Add(c.job)
		assert.ErrorIs(t, err, c.class, c.name)
		var fe *flotilla.FieldError
		if assert.ErrorAs(t, err, &fe, c.name) {
			assert.Equal(t, c.field, fe.Field, c.name)
			assert.Equal(t, c.value, fe.Value, c.name)
		}
	}
	assert.Equal(t, 1, s.Len(), "failed adds leave the store unchanged")
	assert.Equal(t, []string{"A"}, s.Queues())
}

// TestAddValidatesJobsAgainstTheSchema: a job Validate rejects is rejected
// by Add with a FieldError naming the field and value, and the store is
// left unchanged.
func TestAddValidatesJobsAgainstTheSchema(t *testing.T) {
	cases := []struct {
		name, field, value string
		mod                func(*flotilla.Job)
		class              error
	}{
		{"no requests", `job "x".requests`, "", func(j *flotilla.Job) { j.Requests = nil }, flotilla.ErrRequired},
		{"short requests", `job "x".requests`, "1", func(j *flotilla.Job) { j.Requests = j.Requests[:1] }, flotilla.ErrInconsistent},
		{"long requests", `job "x".requests`, "4", func(j *flotilla.Job) { j.Requests = append(j.Requests, 5000) }, flotilla.ErrInconsistent},
		{"negative cpu", `job "x".requests.cpu`, "-100", func(j *flotilla.Job) { j.Requests[0] = -100000 }, flotilla.ErrNegative},
		{"gang without cardinality", `job "x".gang.cardinality`, "0", func(j *flotilla.Job) { j.Gang.ID = "g" }, flotilla.ErrOutOfRange},
		{"bad toleration", `job "x".tolerations[0].operator`, "Sometimes", func(j *flotilla.Job) {
			j.Tolerations = []flotilla.Toleration{{Key: "k", Operator: "Sometimes"}}
		}, flotilla.ErrUnknownName},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := newStore(t)
			require.NoError(t, s.Add(job("a", "A", "s")))
			before := s.Stats("A")
			j := job("x", "A", "s")
			c.mod(j)
			err := s.Add(j)
			require.ErrorIs(t, err, c.class)
			var fe *flotilla.FieldError
			require.ErrorAs(t, err, &fe)
			assert.Equal(t, c.field, fe.Field)
			assert.Equal(t, c.value, fe.Value)
			assert.Equal(t, 1, s.Len(), "store unchanged")
			_, found := s.Get("x")
			assert.False(t, found)
			assert.Equal(t, before, s.Stats("A"))
		})
	}
}

// TestStatsDemandIsExactPastTheInt64Range: the demand Stats reports clamps
// at the int64 range, and comes back exactly when jobs leave.
func TestStatsDemandIsExactPastTheInt64Range(t *testing.T) {
	s := newStore(t)
	big := func(id string) *flotilla.Job {
		j := job(id, "A", "s")
		j.Requests = flotilla.Resources{math.MaxInt64/2 + 1, 1, 0}
		return j
	}
	require.NoError(t, s.Add(big("a")))
	require.NoError(t, s.Add(big("b")))
	require.NoError(t, s.Add(big("c")))
	assert.Equal(t, flotilla.Resources{math.MaxInt64, 3, 0}, s.Stats("A").Demand)
	s.Remove("a")
	assert.Equal(t, flotilla.Resources{math.MaxInt64, 2, 0}, s.Stats("A").Demand)
	s.Remove("b")
	assert.Equal(t, flotilla.Resources{math.MaxInt64/2 + 1, 1, 0}, s.Stats("A").Demand)
	s.RemoveJobSet("A", "s")
	assert.Equal(t, Stats{}, s.Stats("A"))
}

// TestNilStoreReadsAsEmpty: the read methods a scheduler uses answer for a
// nil *Store as for an empty one, so a typed nil in an interface does not
// panic.
func TestNilStoreReadsAsEmpty(t *testing.T) {
	var s *Store
	assert.Equal(t, 0, s.Len())
	assert.Empty(t, s.Queues())
	assert.Equal(t, Stats{}, s.Stats("A"))
	_, ok := s.Get("a")
	assert.False(t, ok)
	r, err := s.Open("A")
	require.NoError(t, err)
	n, err := r.Read(make([]*Entry, 4))
	assert.Equal(t, 0, n)
	assert.NoError(t, err)
	s.SchedulingKeys("A", func(uint64, int) bool { t.Fatal("a key in a nil store"); return false })
}

func TestStoreBasics(t *testing.T) {
	s := newStore(t)
	add := func(id, queue, set, class string, prio uint32, submit int) {
		j := job(id, queue, set)
		j.PriorityClass = class
		j.Priority = prio
		j.SubmitTime = t0.Add(time.Duration(submit) * time.Second)
		require.NoError(t, s.Add(j))
	}
	add("a1", "A", "s1", flotilla.ArmadaPreemptible, 0, 0)
	add("a2", "A", "s1", "", 5, 0) // default class: 30000
	add("a3", "A", "s2", "", 1, 3)
	add("a4", "A", "s2", "", 1, 2)
	add("a5", "A", "s1", "low", 0, 0)
	add("b1", "B", "s1", "", 0, 0)
	add("c1", "C", "s9", "", 0, 0)

	assert.Equal(t, 7, s.Len())
	assert.Equal(t, 5, s.QueueLen("A"))
	assert.Equal(t, 0, s.QueueLen("Z"))
	assert.Equal(t, []string{"A", "B", "C"}, s.Queues())
	assert.Equal(t, []string{"a4", "a3", "a2", "a1", "a5"}, cursorIDs(s, "A"))

	e, ok := s.Get("a2")
	require.True(t, ok)
	assert.Equal(t, int32(30000), e.ClassPriority)
	assert.Equal(t, "a2", e.Job.ID)
	e, _ = s.Get("a5")
	assert.Equal(t, int32(100), e.ClassPriority)
	_, ok = s.Get("zz")
	assert.False(t, ok)

	assert.Equal(t, []string{"a2", "a1", "a5"}, ids(s.JobSet("A", "s1")))
	assert.Equal(t, []string{"a4", "a3"}, ids(s.JobSet("A", "s2")))
	assert.Equal(t, []string{"b1"}, ids(s.JobSet("B", "s1")), "job sets are per queue")
	assert.Nil(t, s.JobSet("A", "s9"))
	assert.Nil(t, s.JobSet("Z", "s1"))
	assert.Nil(t, s.JobSet("A", ""))

	var seen []string
	s.Ascend("A", func(e *Entry) bool {
		seen = append(seen, e.Job.ID)
		return len(seen) < 2
	})
	assert.Equal(t, []string{"a4", "a3"}, seen)
	s.Ascend("Z", func(*Entry) bool { t.Fatal("called for an unknown queue"); return false })

	j, ok := s.Remove("a3")
	require.True(t, ok)
	assert.Equal(t, "a3", j.ID)
	_, ok = s.Remove("a3")
	assert.False(t, ok)
	assert.Equal(t, []string{"a4", "a2", "a1", "a5"}, cursorIDs(s, "A"))
	assert.Equal(t, []string{"a4"}, ids(s.JobSet("A", "s2")))

	assert.Equal(t, []string{"a2", "a1", "a5"}, ids(s.RemoveJobSet("A", "s1")))
	assert.Nil(t, s.RemoveJobSet("A", "s1"))
	assert.Nil(t, s.RemoveJobSet("Z", "s1"))
	assert.Equal(t, []string{"a4"}, cursorIDs(s, "A"))
	assert.Equal(t, []string{"b1"}, ids(s.JobSet("B", "s1")))
	_, ok = s.Get("a1")
	assert.False(t, ok)

	_, _ = s.Remove("b1")
	assert.Equal(t, []string{"A", "C"}, s.Queues(), "empty queues are not listed")
	assert.Equal(t, []string{"c1"}, ids(s.RemoveJobSet("C", "s9")))
	assert.Equal(t, []string{"A"}, s.Queues())
	assert.Equal(t, 1, s.Len())

	// A removed ID can be added again.
	require.NoError(t, s.Add(job("a1", "B", "s1")))
	assert.Equal(t, []string{"A", "B"}, s.Queues())
}

func TestCursor(t *testing.T) {
	s := newStore(t)
	var want []string
	for i := range 3*cursorBatch + 5 {
		id := fmt.Sprintf("j%04d", i)
		want = append(want, id)
		require.NoError(t, s.Add(job(id, "A", "s")))
	}
	require.NoError(t, s.Add(job("other", "B", "s")))
	assert.Equal(t, want, cursorIDs(s, "A"))

	c := s.Cursor("A")
	for range 10 {
		c.Next()
	}
	c.Reset(s, "B")
	e, ok := c.Next()
	require.True(t, ok)
	assert.Equal(t, "other", e.Job.ID)
	_, ok = c.Next()
	assert.False(t, ok)
	_, ok = c.Next()
	assert.False(t, ok, "an exhausted cursor stays exhausted")

	c.Reset(s, "nope")
	_, ok = c.Next()
	assert.False(t, ok)

	var zero Cursor
	_, ok = zero.Next()
	assert.False(t, ok, "the zero cursor yields nothing")
	zero.Reset(s, "B")
	e, ok = zero.Next()
	require.True(t, ok)
	assert.Equal(t, "other", e.Job.ID)

	// A copy panics rather than share the original's buffer.
	c.Reset(s, "A")
	c.Next()
	cp := new(Cursor)
	reflect.ValueOf(cp).Elem().Set(reflect.ValueOf(c).Elem()) // *cp = *c, hidden from go vet's copylocks
	assert.Panics(t, func() { cp.Next() })
	assert.Panics(t, func() { cp.Reset(s, "A") })
	e, ok = c.Next()
	require.True(t, ok)
	assert.Equal(t, want[1], e.Job.ID, "the original is unaffected")

	// Exactly one batch.
	s2 := newStore(t)
	for i := range cursorBatch {
		require.NoError(t, s2.Add(job(fmt.Sprintf("k%03d", i), "A", "s")))
	}
	assert.Len(t, cursorIDs(s2, "A"), cursorBatch)
}

func TestCursorSurvivesRemovalOfResumePoint(t *testing.T) {
	s := newStore(t)
	var want []string
	for i := range 2 * cursorBatch {
		id := fmt.Sprintf("j%04d", i)
		want = append(want, id)
		require.NoError(t, s.Add(job(id, "A", "s")))
	}
	c := s.Cursor("A")
	var got []string
	for range cursorBatch {
		e, _ := c.Next()
		got = append(got, e.Job.ID)
	}
	// Modifying the store invalidates the cursor; it must still not fail.
	_, _ = s.Remove(want[cursorBatch-1])
	for e, ok := c.Next(); ok; e, ok = c.Next() {
		got = append(got, e.Job.ID)
	}
	assert.Equal(t, want, got)
}

func TestCursorNoAllocation(t *testing.T) {
	s := newStore(t)
	for i := range 1000 {
		require.NoError(t, s.Add(job(fmt.Sprintf("j%04d", i), "A", "s")))
	}
	c := s.Cursor("A")
	n := 0
	allocs := testing.AllocsPerRun(20, func() {
		c.Reset(s, "A")
		for _, ok := c.Next(); ok; _, ok = c.Next() {
			n++
		}
	})
	assert.Zero(t, allocs)
	assert.Equal(t, 21*1000, n)
}

func TestSchedulingKey(t *testing.T) {
	base := func() *flotilla.Job {
		return &flotilla.Job{
			ID: "a", Queue: "A", JobSet: "s", Priority: 3, SubmitTime: t0,
			Requests:     flotilla.Resources{1000, 2000, 0},
			NodeSelector: map[string]string{"zone": "a", "rack": "7"},
			Tolerations:  []flotilla.Toleration{{Key: "gpu", Value: "true", Effect: flotilla.TaintNoSchedule}},
			Gang:         flotilla.Gang{ID: "g", Cardinality: 2, NodeUniformityLabel: "zone"},
		}
	}
	key := SchedulingKey(base(), 30000)
	assert.Equal(t, key, SchedulingKey(base(), 30000), "deterministic")

	same := base()
	same.ID, same.Queue, same.JobSet, same.Priority, same.SubmitTime = "b", "B", "t", 9, t0.Add(time.Hour)
	same.Gang.ID, same.Gang.Cardinality = "h", 5
	same.NodeSelector = map[string]string{"rack": "7", "zone": "a"}
	same.Tolerations[0].Operator = flotilla.TolerationEqual
	assert.Equal(t, key, SchedulingKey(same, 30000), "fields that do not decide placement do not change the key")

	changes := map[string]func(j *flotilla.Job) int32{
		"class":           func(j *flotilla.Job) int32 { return 20000 },
		"requests value":  func(j *flotilla.Job) int32 { j.Requests[2] = 1; return 30000 },
		"requests length": func(j *flotilla.Job) int32 { j.Requests = j.Requests[:2]; return 30000 },
		"selector value":  func(j *flotilla.Job) int32 { j.NodeSelector["zone"] = "b"; return 30000 },
		"selector key":    func(j *flotilla.Job) int32 { delete(j.NodeSelector, "rack"); return 30000 },
		"selector swap": func(j *flotilla.Job) int32 {
			j.NodeSelector = map[string]string{"zone": "7", "rack": "a"}
			return 30000
		},
		"selector run-in": func(j *flotilla.Job) int32 {
			j.NodeSelector = map[string]string{"zonea": "", "rack": "7"}
			return 30000
		},
		"toleration effect": func(j *flotilla.Job) int32 { j.Tolerations[0].Effect = ""; return 30000 },
		"toleration op":     func(j *flotilla.Job) int32 { j.Tolerations[0].Operator = flotilla.TolerationExists; return 30000 },
		"toleration added": func(j *flotilla.Job) int32 {
			j.Tolerations = append(j.Tolerations, flotilla.Toleration{})
			return 30000
		},
		"uniformity label":   func(j *flotilla.Job) int32 { j.Gang.NodeUniformityLabel = ""; return 30000 },
		"tolerations absent": func(j *flotilla.Job) int32 { j.Tolerations = nil; return 30000 },
	}
	seen := map[uint64]string{key: "base"}
	for name, change := range changes {
		j := base()
		k := SchedulingKey(j, change(j))
		prev, dup := seen[k]
		assert.False(t, dup, "%s collides with %s", name, prev)
		seen[k] = name
	}

	// Large selectors (past the stack buffer) hash like a sorted walk.
	big1, big2 := map[string]string{}, map[string]string{}
	for i := range 20 {
		big1[fmt.Sprintf("k%02d", i)] = fmt.Sprint(i)
		big2[fmt.Sprintf("k%02d", 19-i)] = fmt.Sprint(19 - i)
	}
	j1, j2 := base(), base()
	j1.NodeSelector, j2.NodeSelector = big1, big2
	assert.Equal(t, SchedulingKey(j1, 1), SchedulingKey(j2, 1))
	keys := make([]string, 0, len(big1))
	for k := range big1 {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	want := hasher(fnvOffset).u64(uint64(len(big1)))
	for _, k := range keys {
		want = want.str(k).str(big1[k])
	}
	assert.Equal(t, want.sum(), hasher(fnvOffset).selector(big1).sum())

	// No allocation, small or large selector.
	var sink uint64
	assert.Zero(t, testing.AllocsPerRun(100, func() { sink += SchedulingKey(base2, 30000) }))
	assert.Zero(t, testing.AllocsPerRun(100, func() { sink += SchedulingKey(j1, 30000) }))
	_ = sink
}

// TestSchedulingKeyTellsAvoidedClustersApart: jobs that avoid different
// clusters may be placed differently, so they do not share a key; the list
// is a set for the key (order does not matter), a repeat still counts, and
// a job that avoids nothing keeps the key it had before AvoidClusters
// existed (nil and empty alike).
func TestSchedulingKeyTellsAvoidedNodesApart(t *testing.T) {
	key := func(clusters, nodes []string) uint64 {
		return SchedulingKey(&flotilla.Job{Requests: flotilla.Resources{1000, 2000, 0}, AvoidClusters: clusters, AvoidNodes: nodes}, 30000)
	}
	none := key(nil, nil)
	assert.Equal(t, none, key(nil, []string{}), "empty is nil")
	assert.Equal(t, key(nil, []string{"n1", "n2"}), key(nil, []string{"n2", "n1"}), "order does not matter")
	assert.NotEqual(t, none, key(nil, []string{"n1"}))
	assert.NotEqual(t, key(nil, []string{"x"}), key([]string{"x"}, nil), "node x is not cluster x")
	assert.NotEqual(t, key(nil, []string{"n1"}), key(nil, []string{"n2"}))
}

func TestSchedulingKeyTellsAvoidedClustersApart(t *testing.T) {
	key := func(avoid ...string) uint64 {
		return SchedulingKey(&flotilla.Job{Requests: flotilla.Resources{1000, 2000, 0}, AvoidClusters: avoid}, 30000)
	}
	none := key()
	assert.Equal(t, none, key([]string{}...), "empty is nil")
	assert.Equal(t, key("c1", "c2", "c3"), key("c3", "c1", "c2"), "order does not matter")
	distinct := map[string][]string{
		"c1": {"c1"}, "c2": {"c2"}, "c1 c2": {"c1", "c2"}, "c1c2": {"c1c2"}, "c1 c1": {"c1", "c1"}, "c1 c1 c2 c2": {"c1", "c1", "c2", "c2"},
	}
	seen := map[uint64]string{none: "none"}
	for name, avoid := range distinct {
		k := key(avoid...)
		prev, dup := seen[k]
		assert.False(t, dup, "%s collides with %s", name, prev)
		seen[k] = name
	}
	j := &flotilla.Job{Requests: flotilla.Resources{1, 2, 3}, AvoidClusters: []string{"cluster-one", "cluster-two"}}
	var sink uint64
	assert.Zero(t, testing.AllocsPerRun(100, func() { sink += SchedulingKey(j, 30000) }))
	_ = sink
}

var base2 = &flotilla.Job{
	Requests:     flotilla.Resources{1, 2, 3},
	NodeSelector: map[string]string{"a": "1", "b": "2", "c": "3", "d": "4", "e": "5", "f": "6", "g": "7", "h": "8"},
	Tolerations:  []flotilla.Toleration{{Key: "gpu", Operator: flotilla.TolerationExists}},
}

// jobSpec is a generated job: small alphabets so that ties are common.
type jobSpec struct {
	queue, set, class int
	prio              uint32
	submit            int
	tag               uint16
}

var (
	specQueues  = []string{"A", "B", "C"}
	specSets    = []string{"s1", "s2", "s3"}
	specClasses = []string{"", flotilla.ArmadaDefault, flotilla.ArmadaPreemptible, "low"}
)

func (sp jobSpec) job(i int) *flotilla.Job {
	return &flotilla.Job{
		ID:            fmt.Sprintf("%05d-%d", sp.tag, i),
		Queue:         specQueues[sp.queue],
		JobSet:        specSets[sp.set],
		PriorityClass: specClasses[sp.class],
		Priority:      sp.prio,
		SubmitTime:    t0.Add(time.Duration(sp.submit) * time.Second),
		Requests:      flotilla.Resources{int64(sp.prio) * 1000, int64(sp.submit), 0},
		Gang:          sp.gang(i),
	}
}

// gang makes one spec in four a gang member (of a gang of one).
func (sp jobSpec) gang(i int) flotilla.Gang {
	if sp.tag%4 != 0 {
		return flotilla.Gang{}
	}
	return flotilla.Gang{ID: fmt.Sprintf("g%05d-%d", sp.tag, i), Cardinality: 1}
}

// statsMatch checks the store's incremental Stats and SchedulingKeys of a
// queue against a naive recount of its jobs.
func statsMatch(s *Store, q string, jobs []*flotilla.Job) bool {
	st := s.Stats(q)
	if st.Jobs != len(jobs) {
		return false
	}
	gangs := 0
	keys := map[uint64]int{}
	demand := testSchema.Zero()
	for _, j := range jobs {
		e, _ := s.Get(j.ID)
		if j.IsGang() {
			gangs++
		} else {
			keys[e.Key]++
		}
		demand.AddSaturating(j.Requests)
	}
	if len(jobs) == 0 {
		demand = nil
	}
	got := map[uint64]int{}
	s.SchedulingKeys(q, func(k uint64, n int) bool { got[k] = n; return true })
	return st.GangJobs == gangs && maps.Equal(keys, got) && st.Demand.Equal(demand)
}

// oracleOrder sorts jobs the naive way: by the tuple (−class priority,
// priority, submit time, id).
func oracleOrder(jobs []*flotilla.Job) []string {
	prio := map[string]int32{"": 30000}
	for _, pc := range testClasses() {
		prio[pc.Name] = pc.Priority
	}
	sorted := slices.Clone(jobs)
	slices.SortFunc(sorted, func(a, b *flotilla.Job) int {
		return cmp.Or(
			cmp.Compare(prio[b.PriorityClass], prio[a.PriorityClass]),
			cmp.Compare(a.Priority, b.Priority),
			a.SubmitTime.Compare(b.SubmitTime),
			cmp.Compare(a.ID, b.ID))
	})
	return ids(sorted)
}

// consistent checks every read path of s against the oracle over live.
func consistent(s *Store, live map[string]*flotilla.Job) bool {
	if s.Len() != len(live) {
		return false
	}
	var wantQueues []string
	c := new(Cursor)
	for _, q := range specQueues {
		var inQueue []*flotilla.Job
		for _, j := range live {
			if j.Queue == q {
				inQueue = append(inQueue, j)
			}
		}
		if len(inQueue) > 0 {
			wantQueues = append(wantQueues, q)
		}
		want := oracleOrder(inQueue)
		var got []string
		c.Reset(s, q)
		for e, ok := c.Next(); ok; e, ok = c.Next() {
			got = append(got, e.Job.ID)
		}
		if !slices.Equal(want, got) || s.QueueLen(q) != len(want) || !statsMatch(s, q, inQueue) {
			return false
		}
		for _, set := range specSets {
			var inSet []string
			for _, id := range want {
				if live[id].JobSet == set {
					inSet = append(inSet, id)
				}
			}
			if !slices.Equal(inSet, ids(s.JobSet(q, set))) {
				return false
			}
		}
	}
	return slices.Equal(wantQueues, s.Queues())
}

func TestStoreProperty(t *testing.T) {
	params := gopter.DefaultTestParameters()
	params.MinSuccessfulTests = 200
	params.MaxSize = 400
	params.Rng.Seed(3)
	props := gopter.NewProperties(params)
	specGen := gopter.CombineGens(
		gen.IntRange(0, len(specQueues)-1), gen.IntRange(0, len(specSets)-1), gen.IntRange(0, len(specClasses)-1),
		gen.UInt32Range(0, 3), gen.IntRange(0, 5), gen.UInt16(),
	).Map(func(v []any) jobSpec {
		return jobSpec{v[0].(int), v[1].(int), v[2].(int), v[3].(uint32), v[4].(int), v[5].(uint16)}
	})
	props.Property("Cursor yields the jobs sorted by Less, and Stats and SchedulingKeys count them, through Add, Remove, RemoveJobSet and adding back", prop.ForAll(
		func(specs []jobSpec, removals []int, readd int, dropSet jobSpec) bool {
			s, err := New(testSchema, testClasses(), flotilla.ArmadaDefault)
			if err != nil {
				return false
			}
			live := map[string]*flotilla.Job{}
			var all []*flotilla.Job
			for i, sp := range specs {
				j := sp.job(i)
				if s.Add(j) != nil {
					return false
				}
				live[j.ID] = j
				all = append(all, j)
			}
			if !consistent(s, live) {
				return false
			}
			var removed []*flotilla.Job
			for _, r := range removals {
				if len(all) == 0 {
					break
				}
				j := all[r%len(all)]
				got, ok := s.Remove(j.ID)
				_, wasLive := live[j.ID]
				if ok != wasLive || (ok && got != j) {
					return false
				}
				if ok {
					delete(live, j.ID)
					removed = append(removed, j)
				}
			}
			if !consistent(s, live) {
				return false
			}
			for i, j := range removed {
				if i%(readd%3+1) == 0 {
					if s.Add(j) != nil {
						return false
					}
					live[j.ID] = j
				}
			}
			if !consistent(s, live) {
				return false
			}
			q, set := specQueues[dropSet.queue], specSets[dropSet.set]
			var want []*flotilla.Job
			for _, j := range live {
				if j.Queue == q && j.JobSet == set {
					want = append(want, j)
				}
			}
			if !slices.Equal(oracleOrder(want), ids(s.RemoveJobSet(q, set))) {
				return false
			}
			for _, j := range want {
				delete(live, j.ID)
			}
			if !consistent(s, live) {
				return false
			}
			// The set's jobs come back: counts, keys and demand with them.
			for _, j := range want {
				if s.Add(j) != nil {
					return false
				}
				live[j.ID] = j
			}
			return consistent(s, live)
		},
		gen.SliceOf(specGen), gen.SliceOf(gen.IntRange(0, 1<<20)), gen.IntRange(0, 2), specGen))
	props.TestingRun(t)
}

func TestSchedulingKeyGolden(t *testing.T) {
	j := &flotilla.Job{
		Requests:     flotilla.Resources{1000, 4 << 30 * 1000, 0}, // raw integers: the pinned key hashes them
		NodeSelector: map[string]string{"zone": "a", "kubernetes.io/arch": "amd64"},
		Tolerations:  []flotilla.Toleration{{Key: "nvidia.com/gpu", Operator: flotilla.TolerationExists, Effect: flotilla.TaintNoSchedule}},
		Gang:         flotilla.Gang{NodeUniformityLabel: "rack"},
	}
	// Pinned: the key must not change with the Go release or the platform.
	assert.Equal(t, "0xc604a512a2291d89", fmt.Sprintf("%#x", SchedulingKey(j, 30000)))
}

func TestStoredOrderMatchesLess(t *testing.T) {
	params := gopter.DefaultTestParameters()
	params.MinSuccessfulTests = 2000
	params.Rng.Seed(4)
	props := gopter.NewProperties(params)
	s := newStore(t)
	entry := func(class int, prio uint32, sec int64, nsec int64, id uint8) *Entry {
		e, err := s.NewEntry(&flotilla.Job{
			ID: fmt.Sprint(id), Queue: "A", PriorityClass: specClasses[class], Priority: prio,
			SubmitTime: time.Unix(sec, nsec).In(time.FixedZone("x", int(sec%7)*3600)),
		})
		require.NoError(t, err)
		return e
	}
	entryGen := gopter.CombineGens(gen.IntRange(0, len(specClasses)-1), gen.UInt32Range(0, 2),
		gen.Int64Range(-2, 2), gen.Int64Range(0, 2), gen.UInt8Range(0, 3)).Map(func(v []any) *Entry {
		return entry(v[0].(int), v[1].(uint32), v[2].(int64), v[3].(int64), v[4].(uint8))
	})
	o := newTestOrder()
	itemOf := func(e *Entry) item {
		h := o.slab.alloc()
		*o.slab.at(h) = stored{Entry: *e, h: h}
		return itemOf(e, h)
	}
	props.Property("the order's comparison of items agrees with Less", prop.ForAll(func(a, b *Entry) bool {
		x, y := itemOf(a), itemOf(b)
		less := before(&x, &y)
		return less == Less(a, b) && (Less(a, b) != Less(b, a) || a.Job.ID == b.Job.ID && !Less(a, b))
	}, entryGen, entryGen))
	props.TestingRun(t)
}

func TestRemoveAfterForbiddenPriorityChange(t *testing.T) {
	s := newStore(t)
	for i := range 200 {
		require.NoError(t, s.Add(job(fmt.Sprintf("j%03d", i), "A", "s")))
	}
	e, _ := s.Get("j100")
	e.Job.Priority = 7 // against the rules: Remove must still find it
	e.Job.SubmitTime = t0.Add(-time.Hour)
	_, ok := s.Remove("j100")
	require.True(t, ok)
	assert.Equal(t, 199, s.QueueLen("A"))
	assert.NotContains(t, cursorIDs(s, "A"), "j100")
	assert.Len(t, s.JobSet("A", "s"), 199)
}

// TestSchedulingKeyDistinguishesCraftedLabelValues: two jobs whose only
// difference is the value of one node-selector label (16 lowercase/digit
// characters, a valid Kubernetes label value) get different scheduling keys,
// even for values crafted against the hash. A weak per-word mixing
// (xor-in / multiply / fold) confined a difference in a word's top byte to
// bytes 3 and 7 of the state, which the next word cancelled.
func TestSchedulingKeyDistinguishesCraftedLabelValues(t *testing.T) {
	const alpha = "abcdefghijklmnopqrstuvwxyz0123456789"
	seen := make(map[uint64]string)
	job := &flotilla.Job{Requests: flotilla.Resources{1000, 4 << 30}}
	b := []byte("rack-aa?bbb?bbb?")
	for _, c := range []byte(alpha) {
		for _, x := range []byte(alpha) {
			for _, y := range []byte(alpha) {
				b[7], b[11], b[15] = c, x, y
				v := string(b)
				job.NodeSelector = map[string]string{"topology/rack": v}
				k := SchedulingKey(job, 30000)
				if other, dup := seen[k]; dup {
					t.Fatalf("selector values %q and %q share scheduling key %#x", other, v, k)
				}
				seen[k] = v
			}
		}
	}
}

// AddAll adds a batch as Add would, or nothing: a bad job anywhere in
// the batch (a duplicate of a stored job or of another in the batch, an
// unknown class, a nil job) leaves the store as it was, and the error
// names the job's index.
func TestAddAllIsAllOrNothing(t *testing.T) {
	s := newStore(t)
	live := map[string]*flotilla.Job{}
	first := []*flotilla.Job{job("a-1", "A", "s1"), job("a-2", "A", "s2"), job("b-1", "B", "s1")}
	require.NoError(t, s.AddAll(first))
	for _, j := range first {
		live[j.ID] = j
	}
	require.True(t, consistent(s, live))
	badClass := job("b-9", "B", "s1")
	badClass.PriorityClass = "nope"
	for name, tc := range map[string]struct {
		batch []*flotilla.Job
		field string
		err   error
	}{
		"stored id":       {[]*flotilla.Job{job("c-1", "C", "s1"), job("a-2", "A", "s1")}, "jobs[1].id", flotilla.ErrDuplicate},
		"id twice":        {[]*flotilla.Job{job("c-1", "C", "s1"), job("c-2", "C", "s1"), job("c-1", "C", "s2")}, "jobs[2].id", flotilla.ErrDuplicate},
		"unknown class":   {[]*flotilla.Job{job("c-1", "A", "s1"), badClass}, "jobs[1].priorityClass", flotilla.ErrUnknownName},
		"nil job at last": {[]*flotilla.Job{job("c-1", "A", "s3"), nil}, "jobs[1] ", flotilla.ErrRequired},
	} {
		t.Run(name, func(t *testing.T) {
			err := s.AddAll(tc.batch)
			require.ErrorIs(t, err, tc.err)
			assert.Contains(t, err.Error(), tc.field)
			assert.True(t, consistent(s, live), "the store changed")
		})
	}
	second := []*flotilla.Job{job("c-1", "C", "s1"), job("a-3", "A", "s1")}
	require.NoError(t, s.AddAll(second))
	for _, j := range second {
		live[j.ID] = j
	}
	assert.True(t, consistent(s, live))
}

// AddAll's error is a *flotilla.FieldError (all of them, for a job with
// several problems) whose Field names the job's index in the batch, as
// the project's other batch validators do ("jobs[1].id"): errors.As and
// flotilla.Problems read it like any validation error.
func TestAddAllErrorsAreFieldErrorsNamingTheJobsIndex(t *testing.T) {
	s := newStore(t)
	require.NoError(t, s.Add(job("a-1", "A", "s1")))
	badRequests := job("b-2", "B", "s1")
	badRequests.Requests = flotilla.Resources{-1, -1, 0}
	for name, tc := range map[string]struct {
		batch  []*flotilla.Job
		fields []string
	}{
		"stored id":     {[]*flotilla.Job{job("b-1", "B", "s1"), job("a-1", "A", "s1")}, []string{"jobs[1].id"}},
		"nil job":       {[]*flotilla.Job{nil}, []string{"jobs[0]"}},
		"bad requests":  {[]*flotilla.Job{job("b-1", "B", "s1"), badRequests}, []string{`jobs[1].job "b-2".requests.cpu`, `jobs[1].job "b-2".requests.memory`}},
		"unknown class": {[]*flotilla.Job{{ID: "b-3", Queue: "B", PriorityClass: "nope", Requests: flotilla.Resources{0, 0, 0}}}, []string{"jobs[0].priorityClass"}},
	} {
		t.Run(name, func(t *testing.T) {
			err := s.AddAll(tc.batch)
			require.Error(t, err)
			var fields []string
			for _, p := range flotilla.Problems(err) {
				var fe *flotilla.FieldError
				require.ErrorAs(t, p, &fe)
				require.Same(t, fe, p, "a problem is a *flotilla.FieldError itself, not wrapped")
				fields = append(fields, fe.Field)
			}
			assert.Equal(t, tc.fields, fields)
			assert.Equal(t, 1, s.Len(), "the store is as it was")
		})
	}
}

// AddAll gives each job of a batch the class priority and scheduling key
// Add gives it, whichever fields it shares with the job before it: the
// batch's memo of the previous job's key (sameRequirements) must never
// hand a job a key its own requirements do not have. Jobs here share a
// template's maps and slices, or copies of them with one field changed.
func TestAddAllGivesEveryJobTheKeyAddGives(t *testing.T) {
	base := flotilla.Job{
		Queue: "A", JobSet: "s", SubmitTime: t0, Requests: flotilla.Resources{1000, 1 << 30, 0},
		NodeSelector:  map[string]string{"zone": "a"},
		Tolerations:   []flotilla.Toleration{{Key: "gpu", Effect: flotilla.TaintNoSchedule}},
		AvoidClusters: []string{"c1", "c2"},
	}
	// variant returns base with one requirement changed (0: none; the
	// maps and slices are then base's own).
	variant := func(v int) flotilla.Job {
		j := base
		switch v {
		case 1:
			j.Requests = flotilla.Resources{2000, 1 << 30, 0}
		case 2:
			j.NodeSelector = map[string]string{"zone": "b"}
		case 3:
			j.NodeSelector = map[string]string{"zone": "a", "disk": "ssd"}
		case 4:
			j.Tolerations = []flotilla.Toleration{{Key: "gpu", Operator: flotilla.TolerationEqual, Value: "x", Effect: flotilla.TaintNoSchedule}}
		case 5:
			j.Tolerations = nil
		case 6:
			j.PriorityClass = "low"
		case 7:
			j.AvoidClusters = []string{"c2", "c1"} // the same set: the same key
		case 8:
			j.AvoidClusters = []string{"c1"}
		case 9:
			j.Gang = flotilla.Gang{ID: "g", Cardinality: 1, NodeUniformityLabel: "rack"}
		case 10:
			j.Queue = "B"
		case 11:
			j.JobSet = "t"
		case 12:
			j.NodeSelector = map[string]string{"zone": "a"} // an equal copy
		}
		return j
	}
	props := gopter.NewProperties(gopter.DefaultTestParametersWithSeed(7))
	props.Property("AddAll's entries are Add's", prop.ForAll(func(vs []int) string {
		batch := make([]*flotilla.Job, len(vs))
		for i, v := range vs {
			j := variant(v)
			j.ID = fmt.Sprintf("j-%03d", i)
			batch[i] = &j
		}
		all, one := newStore(t), newStore(t)
		if err := all.AddAll(batch); err != nil {
			return err.Error()
		}
		for _, j := range batch {
			if err := one.Add(j); err != nil {
				return err.Error()
			}
		}
		for _, j := range batch {
			a, _ := all.Get(j.ID)
			o, _ := one.Get(j.ID)
			prio := testPriority(j.PriorityClass)
			if a.ClassPriority != o.ClassPriority || a.Key != o.Key || a.Key != SchedulingKey(j, prio) || a.ClassPriority != prio {
				return fmt.Sprintf("job %s: AddAll gave (%d, %x), Add (%d, %x), SchedulingKey %x", j.ID, a.ClassPriority, a.Key, o.ClassPriority, o.Key, SchedulingKey(j, prio))
			}
		}
		for _, q := range []string{"A", "B"} {
			if !reflect.DeepEqual(all.Stats(q), one.Stats(q)) || !maps.Equal(keyCounts(all, q), keyCounts(one, q)) ||
				!slices.Equal(cursorIDs(all, q), cursorIDs(one, q)) || !slices.Equal(ids(all.JobSet(q, "t")), ids(one.JobSet(q, "t"))) {
				return "queue " + q + ": the stores differ"
			}
		}
		return ""
	}, gen.SliceOf(gen.IntRange(0, 12))))
	props.TestingRun(t)
}

// testPriority is the priority of one of testClasses (the default class
// for "").
func testPriority(class string) int32 {
	if class == "" {
		class = flotilla.ArmadaDefault
	}
	for _, c := range testClasses() {
		if c.Name == class {
			return c.Priority
		}
	}
	panic("no class " + class)
}

// keyCounts is a queue's SchedulingKeys as a map.
func keyCounts(s *Store, queue string) map[uint64]int {
	out := map[uint64]int{}
	s.SchedulingKeys(queue, func(k uint64, n int) bool { out[k] = n; return true })
	return out
}
