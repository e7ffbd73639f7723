package gang_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/binpack"
	"github.com/flotilla-sched/flotilla/gang"
	"github.com/flotilla-sched/flotilla/queue"
)

const (
	core = int64(1000)
	gi   = int64(1) << 30
)

type queueEntry = queue.Entry

// schemaCM is (cpu, memory); cores(n) is n cores and 4 GiB per core.
var schemaCM = flotilla.MustResourceSchema("cpu", "memory")

func cores(n int64) flotilla.Resources { return flotilla.Resources{n * core, n * 4 * gi} }

// Levels 0 and 1 are Armada's armada-preemptible and armada-default.
var twoLevels = []int32{20000, 30000}

const (
	preemptible = 0
	top         = 1
)

func node(name, cluster string, n int64, labels ...string) *flotilla.Node {
	nd := &flotilla.Node{Name: name, Cluster: cluster, Total: cores(n)}
	if len(labels) > 0 {
		nd.Labels = map[string]string{}
		for i := 0; i+1 < len(labels); i += 2 {
			nd.Labels[labels[i]] = labels[i+1]
		}
	}
	return nd
}

func newDB(t testing.TB, queues int, nodes ...*flotilla.Node) *binpack.DB {
	t.Helper()
	db, err := binpack.New(binpack.Options{Schema: schemaCM, Levels: twoLevels, Queues: queues}, nodes)
	require.NoError(t, err)
	return db
}

func newStore(t testing.TB) *queue.Store {
	t.Helper()
	s, err := queue.New(schemaCM, flotilla.DefaultPriorityClasses(), flotilla.ArmadaDefault)
	require.NoError(t, err)
	return s
}

// member builds the entry of one gang member.
func member(t testing.TB, s *queue.Store, id, gangID string, card int, req flotilla.Resources) *queue.Entry {
	t.Helper()
	e, err := s.NewEntry(&flotilla.Job{ID: id, Queue: "A", Requests: req, Gang: flotilla.Gang{ID: gangID, Cardinality: card}})
	require.NoError(t, err)
	return e
}

// uniformGang builds a complete gang of n members with equal requests,
// accumulated through an Accumulator.
func uniformGang(t testing.TB, acc *gang.Accumulator, id string, n int, req flotilla.Resources, label string) *gang.Gang {
	t.Helper()
	s := newStore(t)
	var g *gang.Gang
	for i := range n {
		e, err := s.NewEntry(&flotilla.Job{ID: fmt.Sprintf("%s-%d", id, i), Queue: "A", Requests: req,
			Gang: flotilla.Gang{ID: id, Cardinality: n, NodeUniformityLabel: label}})
		require.NoError(t, err)
		var complete bool
		g, complete, err = acc.Add(e)
		require.NoError(t, err)
		require.Equal(t, i == n-1, complete)
	}
	return g
}

func levelsOf(n, level int) []int {
	l := make([]int, n)
	for i := range l {
		l[i] = level
	}
	return l
}

// dbState is everything observable about a DB that a failed gang must not
// change.
type dbState struct {
	alloc   []flotilla.Resources
	users   [][]int
	jobs    []int
	pending int
	picks   []int
}

func stateOf(db *binpack.DB) dbState {
	var s dbState
	nlev := len(db.Levels())
	for n := range db.NodeCount() {
		for l := range nlev {
			s.alloc = append(s.alloc, db.Allocatable(n, l).Clone())
		}
		s.users = append(s.users, db.Users(n))
		for q := range db.Queues() {
			s.jobs = append(s.jobs, db.Jobs(n, q))
		}
	}
	s.pending = db.Pending()
	for q := range db.Queues() {
		for l := range nlev {
			for _, size := range []int64{0, 1, 4, 16} {
				n, _ := db.Select(&binpack.Query{Requests: cores(size), Level: l, Queue: q, OnlyNode: -1})
				s.picks = append(s.picks, n)
			}
		}
	}
	return s
}

func (s dbState) diff(o dbState) string {
	for i := range s.alloc {
		if !s.alloc[i].Equal(o.alloc[i]) {
			return fmt.Sprintf("allocatable[%d]: %v, then %v", i, s.alloc[i], o.alloc[i])
		}
	}
	for i := range s.users {
		if !slices.Equal(s.users[i], o.users[i]) {
			return fmt.Sprintf("users of node %d: %v, then %v", i, s.users[i], o.users[i])
		}
	}
	if !slices.Equal(s.jobs, o.jobs) {
		return fmt.Sprintf("job counts: %v, then %v", s.jobs, o.jobs)
	}
	if s.pending != o.pending {
		return fmt.Sprintf("undo log: %d, then %d", s.pending, o.pending)
	}
	if !slices.Equal(s.picks, o.picks) {
		return fmt.Sprintf("Select answers: %v, then %v", s.picks, o.picks)
	}
	return ""
}
