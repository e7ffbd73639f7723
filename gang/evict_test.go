package gang_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/gang"
)

func TestEvictionClosure(t *testing.T) {
	j := func(id, gangID string) *flotilla.Job { return &flotilla.Job{ID: id, Gang: flotilla.Gang{ID: gangID}} }
	running := []*flotilla.Job{j("a1", "a"), j("x", ""), j("b1", "b"), j("a2", "a"), j("y", ""), j("b2", "b"), j("a3", "a"), j("c1", "c")}
	evicted := []bool{false, true, false, true, false, false, false, true}
	added, err := gang.EvictionClosure(running, evicted)
	require.NoError(t, err)
	assert.Equal(t, 2, added)
	assert.Equal(t, []bool{true, true, false, true, false, false, true, true}, evicted,
		"a1 and a3 follow a2; b untouched; lone y untouched")

	none := make([]bool, len(running))
	added, err = gang.EvictionClosure(running, none)
	require.NoError(t, err)
	assert.Zero(t, added)
	assert.Equal(t, make([]bool, len(running)), none)

	flags := []bool{true}
	_, err = gang.EvictionClosure([]*flotilla.Job{j("a1", "a"), nil}, flags)
	assert.ErrorIs(t, err, flotilla.ErrInconsistent)
	assert.ErrorIs(t, err, flotilla.ErrRequired)
	assert.Contains(t, err.Error(), `running[1]`)
	assert.Equal(t, []bool{true}, flags, "unchanged on error")
}
