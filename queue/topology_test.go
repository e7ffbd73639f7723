package queue

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/flotilla-sched/flotilla"
)

// A gang's topology is part of its members' scheduling key (a rack-bound
// member's failure says nothing of an unbound one), and a job without one
// keeps its key.
func TestSchedulingKeyTellsGangTopologiesApart(t *testing.T) {
	key := func(gt flotilla.GangTopology) uint64 {
		return SchedulingKey(&flotilla.Job{Requests: flotilla.Resources{1000, 2000, 0},
			Gang: flotilla.Gang{ID: "g", Cardinality: 2, Topology: gt}}, 30000)
	}
	seen := map[uint64]string{}
	for name, gt := range map[string]flotilla.GangTopology{
		"none":           {},
		"required rack":  {Required: "rack"},
		"preferred rack": {Preferred: "rack"},
		"required host":  {Required: "host"},
		"named":          {Name: "nvlink", Required: "rack"},
		"both":           {Required: "rack", Preferred: "host"},
	} {
		k := key(gt)
		prev, dup := seen[k]
		assert.False(t, dup, "%s collides with %s", name, prev)
		seen[k] = name
	}
	a := &flotilla.Job{Requests: flotilla.Resources{1}, Gang: flotilla.Gang{Topology: flotilla.GangTopology{Required: "rack"}}}
	b := &flotilla.Job{Requests: flotilla.Resources{1}}
	assert.False(t, sameRequirements(a, b))
}
