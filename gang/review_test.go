package gang_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/binpack"
	"github.com/flotilla-sched/flotilla/gang"
)

// PlaceAt Selects members at level search, so the explanation of a member
// that does not fit must be computed at that level too.
func TestReviewPlaceAtExplainsAtSearchLevel(t *testing.T) {
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

// rank sums each domain's free capacity without overflow checks: a cluster
// of 1,000 nodes with 10 PB of ephemeral storage each (1e16 bytes; a DB does
// not bound its cluster's total as the scheduler does) wraps negative, is dropped from the candidates, and the gang goes to a
// looser cluster instead of the tightest one that holds it.
func TestReviewPlaceDomainFreeCapacityOverflow(t *testing.T) {
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
