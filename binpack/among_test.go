package binpack_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/binpack"
)

// SelectAmong answers as Select does with the constraint restricted to the
// same nodes (here: a zone, the nodes labelled zone=a), on generated
// clusters, bindings and queries; and ExplainAmong agrees with ExplainIn.
func TestPropertySelectAmongMatchesRestrictedSelect(t *testing.T) {
	runProperty(t, "SelectAmong(nodes of zone a) == Select(Restrict(zone a))", func(seed int64) string {
		w, err := newWorld(seed)
		if err != nil {
			return err.Error()
		}
		zoneA := binpack.Restriction{Label: "zone", Value: "a"}
		var among []int32
		for i, n := range w.nodes {
			if n.Labels["zone"] == "a" {
				among = append(among, int32(i))
			}
		}
		for step := range 60 {
			if len(w.jobs) > 0 && w.rng.IntN(5) == 0 {
				w.unbindRandom()
				continue
			}
			q, _ := w.randomQuery()
			q.OnlyNode = -1
			rq := *q
			rq.Constraint = w.db.Restrict(q.Constraint, zoneA)
			want, wantOK := w.db.Select(&rq)
			got, ok := w.db.SelectAmong(q, among)
			if got != want || ok != wantOK {
				return fmt.Sprintf("seed %d step %d: SelectAmong = %d, %v; restricted Select %d, %v", seed, step, got, ok, want, wantOK)
			}
			if !ok {
				a, b := w.db.ExplainAmong(q, among), w.db.ExplainIn(q, zoneA)
				if a.Kind != b.Kind || a.Nodes != b.Nodes || a.Node != b.Node || a.Candidates != b.Candidates {
					return fmt.Sprintf("seed %d step %d: ExplainAmong %+v, ExplainIn %+v", seed, step, a, b)
				}
				// Bind anywhere else, so zone a's nodes see other users.
				if n, ok := w.db.Select(q); ok {
					w.bind(n, q)
				}
				continue
			}
			w.bind(got, q)
		}
		return ""
	})
}

func TestSelectAmongKeepsToItsNodesAndTiers(t *testing.T) {
	db := mustNew(t, binpack.Options{}, node3("big", 8, 64, 512), node3("mid", 8, 32, 256), node3("small", 8, 16, 128), node3("tiny", 1, 1, 1))
	q := query(r3(1, 1, 1), 0, 0)
	n, ok := db.SelectAmong(q, []int32{0, 1})
	assert.True(t, ok)
	assert.Equal(t, "mid", db.Node(n).Name, "smallest fit among big and mid, though small is smaller")
	db.Bind(0, 0, 0, r3(1, 1, 1))
	n, _ = db.SelectAmong(q, []int32{0, 1})
	assert.Equal(t, "big", db.Node(n).Name, "the queue's own node first")
	_, ok = db.SelectAmong(query(r3(2, 1, 1), 0, 0), []int32{3})
	assert.False(t, ok, "tiny has one GPU")
	_, ok = db.SelectAmong(q, nil)
	assert.False(t, ok, "no nodes")
	why := db.ExplainAmong(query(r3(2, 1, 1), 0, 0), []int32{3})
	assert.Equal(t, binpack.TooLarge, why.Kind)
	assert.Equal(t, 1, why.Nodes, "only tiny counted")
	assert.Equal(t, binpack.NoNodes, db.ExplainAmong(q, nil).Kind)
	_, ok = db.SelectAmong(&binpack.Query{Requests: flotilla.Resources{1}, OnlyNode: -1}, []int32{0})
	assert.False(t, ok, "invalid query")
}

func BenchmarkSelectAmongRack(b *testing.B) {
	nodes := make([]*flotilla.Node, 10000)
	for i := range nodes {
		nodes[i] = node3(fmt.Sprint("n", i), 8, 64, 512)
	}
	db := mustNew(b, binpack.Options{}, nodes...)
	rack := []int32{5000, 5001, 5002, 5003, 5004, 5005, 5006, 5007, 5008, 5009}
	q := query(r3(1, 1, 1), 0, 0)
	b.ReportAllocs()
	for b.Loop() {
		db.SelectAmong(q, rack)
	}
}
