package gang_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/gang"
	"github.com/flotilla-sched/flotilla/queue"
)

func TestAccumulatorCompletesGangs(t *testing.T) {
	s := newStore(t)
	entry := func(id, gangID string, card int, class string, cpu int64) *queue.Entry {
		e, err := s.NewEntry(&flotilla.Job{ID: id, Queue: "A", PriorityClass: class, Requests: cores(cpu),
			Gang: flotilla.Gang{ID: gangID, Cardinality: card}})
		require.NoError(t, err)
		return e
	}
	var acc gang.Accumulator
	type step struct {
		e        *queue.Entry
		gang     string
		complete bool
	}
	for i, st := range []step{
		{entry("a1", "a", 3, "", 1), "a", false},
		{entry("b1", "b", 2, "", 2), "b", false},
		{entry("lone", "", 0, "", 4), "", true},
		{entry("a2", "a", 3, flotilla.ArmadaPreemptible, 1), "a", false},
		{entry("b2", "b", 2, "", 2), "b", true},
		{entry("c1", "c", 1, "", 8), "c", true},
		{entry("a3", "a", 3, "", 1), "a", true},
		{entry("d1", "d", 2, "", 1), "d", false},
	} {
		g, complete, err := acc.Add(st.e)
		require.NoError(t, err, i)
		assert.Equal(t, st.gang, g.ID, i)
		assert.Equal(t, st.complete, complete, i)
		assert.Equal(t, st.e, g.Members[len(g.Members)-1], i)
	}
	a, _, err := acc.Add(entry("a4", "a", 3, "", 1))
	require.Error(t, err, "one member too many")
	assert.Nil(t, a)
	assert.ErrorIs(t, err, flotilla.ErrOutOfRange)
	assert.Contains(t, err.Error(), `gang "a".cardinality "3"`)

	pending := acc.Pending()
	require.Len(t, pending, 1)
	assert.Equal(t, "d", pending[0].ID)
	assert.Equal(t, 5, acc.Len())

	// Re-add to inspect gang a: it is complete with sum and lowest class.
	acc.Reset()
	assert.Zero(t, acc.Len())
	assert.Empty(t, acc.Pending())
	var g *gang.Gang
	for _, e := range []*queue.Entry{entry("x1", "x", 2, "", 3), entry("x2", "x", 2, flotilla.ArmadaPreemptible, 5)} {
		g, _, err = acc.Add(e)
		require.NoError(t, err)
	}
	assert.True(t, g.Complete())
	assert.Equal(t, cores(8), g.Requests)
	assert.Equal(t, int32(20000), g.ClassPriority)
	assert.Equal(t, "A", g.Queue)
	assert.Equal(t, 2, g.Cardinality)
}

func TestAccumulatorRefusesDisagreeingMembers(t *testing.T) {
	s := newStore(t)
	mk := func(j flotilla.Job) *queue.Entry {
		if j.Queue == "" {
			j.Queue = "A"
		}
		if j.Requests == nil {
			j.Requests = cores(1)
		}
		e, err := s.NewEntry(&j)
		require.NoError(t, err)
		return e
	}
	first := mk(flotilla.Job{ID: "m1", Gang: flotilla.Gang{ID: "g", Cardinality: 3, NodeUniformityLabel: "rack"}})
	for name, tc := range map[string]struct {
		e     *queue.Entry
		class error
		field string
		value string
	}{
		"cardinality": {mk(flotilla.Job{ID: "m2", Gang: flotilla.Gang{ID: "g", Cardinality: 4, NodeUniformityLabel: "rack"}}),
			flotilla.ErrInconsistent, `gang "g".cardinality`, "4"},
		"queue": {mk(flotilla.Job{ID: "m3", Queue: "B", Gang: flotilla.Gang{ID: "g", Cardinality: 3, NodeUniformityLabel: "rack"}}),
			flotilla.ErrInconsistent, `gang "g".queue`, "B"},
		"label": {mk(flotilla.Job{ID: "m4", Gang: flotilla.Gang{ID: "g", Cardinality: 3, NodeUniformityLabel: "zone"}}),
			flotilla.ErrInconsistent, `gang "g".nodeUniformityLabel`, "zone"},
		"requests": {mk(flotilla.Job{ID: "m5", Requests: flotilla.Resources{1}, Gang: flotilla.Gang{ID: "g", Cardinality: 3, NodeUniformityLabel: "rack"}}),
			flotilla.ErrInconsistent, `gang "g".requests`, "1"},
		"overflow": {mk(flotilla.Job{ID: "m6", Requests: flotilla.Resources{1 << 62, 1 << 62}, Gang: flotilla.Gang{ID: "g", Cardinality: 3, NodeUniformityLabel: "rack"}}),
			nil, "", ""},
		"zero cardinality": {mk(flotilla.Job{ID: "z", Gang: flotilla.Gang{ID: "z", Cardinality: 0}}),
			flotilla.ErrOutOfRange, `gang "z".cardinality`, "0"},
		"nil entry": {nil, flotilla.ErrRequired, "entry", ""},
		"nil job":   {&queue.Entry{}, flotilla.ErrRequired, "entry.job", ""},
	} {
		t.Run(name, func(t *testing.T) {
			var acc gang.Accumulator
			_, _, err := acc.Add(first)
			require.NoError(t, err)
			if name == "overflow" { // the second such member overflows
				_, _, err = acc.Add(tc.e)
				require.NoError(t, err)
				e2 := mk(flotilla.Job{ID: "m7", Requests: flotilla.Resources{1 << 62, 1 << 62}, Gang: first.Job.Gang})
				g, _, err := acc.Add(e2)
				require.ErrorIs(t, err, flotilla.ErrOutOfRange)
				assert.Nil(t, g)
				assert.Len(t, acc.Pending()[0].Members, 2, "the refused member is not added")
				return
			}
			g, complete, err := acc.Add(tc.e)
			require.ErrorIs(t, err, tc.class)
			assert.Nil(t, g)
			assert.False(t, complete)
			var fe *flotilla.FieldError
			require.ErrorAs(t, err, &fe)
			assert.Equal(t, tc.field, fe.Field)
			assert.Equal(t, tc.value, fe.Value)
			pending := acc.Pending()
			require.Len(t, pending, 1)
			assert.Len(t, pending[0].Members, 1, "the gang is unchanged")
			assert.Equal(t, cores(1), pending[0].Requests)
		})
	}
}

// After one cycle of warm-up, a cycle of Add and Reset allocates nothing.
func TestAccumulatorAllocations(t *testing.T) {
	s := newStore(t)
	var entries []*queue.Entry
	for g := range 10 {
		for m := range 4 {
			entries = append(entries, member(t, s, string(rune('a'+g))+string(rune('0'+m)), string(rune('a'+g)), 4, cores(1)))
		}
		entries = append(entries, member(t, s, "lone"+string(rune('a'+g)), "", 0, cores(2)))
	}
	var acc gang.Accumulator
	cycle := func() {
		for _, e := range entries {
			if _, _, err := acc.Add(e); err != nil {
				t.Fatal(err)
			}
		}
		acc.Reset()
	}
	cycle()
	assert.Zero(t, testing.AllocsPerRun(20, cycle))
}

func TestAccumulatorHas(t *testing.T) {
	var a gang.Accumulator
	e := &queue.Entry{Job: &flotilla.Job{ID: "m0", Queue: "q", Requests: flotilla.Resources{1}, Gang: flotilla.Gang{ID: "g", Cardinality: 2}}}
	if a.Has("g") {
		t.Fatal("empty accumulator has g")
	}
	if _, complete, err := a.Add(e); err != nil || complete {
		t.Fatalf("add: complete=%v err=%v", complete, err)
	}
	if !a.Has("g") || a.Has("h") {
		t.Fatal("Has disagrees with what was added")
	}
	a.Reset()
	if a.Has("g") {
		t.Fatal("Reset keeps g")
	}
}
