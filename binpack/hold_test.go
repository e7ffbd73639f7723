package binpack_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/binpack"
)

func TestHoldTakesCapacityButNotTheNode(t *testing.T) {
	schema := flotilla.MustResourceSchema("cpu")
	nodes := []*flotilla.Node{
		{Name: "a", Total: flotilla.Resources{32000}},
		{Name: "b", Total: flotilla.Resources{32000}},
	}
	db, err := binpack.New(binpack.Options{Schema: schema, Levels: []int32{-1, 20000}, Queues: 2}, nodes)
	require.NoError(t, err)
	db.Hold(0, 0, flotilla.Resources{30000})
	assert.Equal(t, flotilla.Resources{2000}, db.Allocatable(0, 0))
	assert.Equal(t, flotilla.Resources{32000}, db.Allocatable(0, 1), "a hold at level 0 leaves higher levels free")
	assert.Empty(t, db.Users(0))
	assert.Equal(t, binpack.TierUnused, db.Tier(0, 1))

	// At level 0 the held node is too full, so a 4-core job goes to b; at
	// level 1 the hold does not count and node a (tier unused, smaller index) wins.
	q := binpack.Query{Requests: flotilla.Resources{4000}, Level: 0, Queue: 1, OnlyNode: -1}
	n, ok := db.Select(&q)
	require.True(t, ok)
	assert.Equal(t, 1, n)
	q.Level = 1
	n, ok = db.Select(&q)
	require.True(t, ok)
	assert.Equal(t, 0, n)

	m := db.Mark()
	db.Release(0, 0, flotilla.Resources{30000})
	assert.Equal(t, flotilla.Resources{32000}, db.Allocatable(0, 0))
	db.Rollback(m)
	assert.Equal(t, flotilla.Resources{2000}, db.Allocatable(0, 0), "rollback restores the hold")
	assert.Empty(t, db.Users(0))
}
