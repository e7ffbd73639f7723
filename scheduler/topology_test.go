package scheduler_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/scheduler"
)

const (
	tBlock = "topology.flotilla.dev/block"
	tRack  = "topology.flotilla.dev/rack"
)

// rackWorld has blocks b1 (racks r1, r2) and b2 (rack r1), two nodes of
// cpu cores per rack, and the two-level topology "default".
func rackWorld(t *testing.T, cpu string) *world {
	w := newWorld(t)
	w.cfg.Topologies = []flotilla.Topology{{Name: "default", Levels: []string{tBlock, tRack}}}
	for _, br := range [][2]string{{"b1", "r1"}, {"b1", "r2"}, {"b2", "r1"}} {
		for i := range 2 {
			labelledNode(w, fmt.Sprintf("%s-%s-%d", br[0], br[1], i), cpu, map[string]string{tBlock: br[0], tRack: br[1]})
		}
	}
	w.addQueue("A", 1)
	w.addQueue("B", 1)
	return w
}

func inTopology(id string, card int, gt flotilla.GangTopology) func(*flotilla.Job) {
	return func(j *flotilla.Job) { j.Gang = flotilla.Gang{ID: id, Cardinality: card, Topology: gt} }
}

func TestConfigTopologiesAreValidated(t *testing.T) {
	cfg := scheduler.DefaultConfig(flotilla.MustResourceSchema("cpu"))
	cfg.Topologies = []flotilla.Topology{{Name: "default", Levels: []string{tBlock, ""}}, {Name: "default", Levels: []string{tRack}}}
	_, err := scheduler.New(cfg)
	var fe *flotilla.FieldError
	require.True(t, errors.As(err, &fe))
	assert.Equal(t, "topologies[0].levels[1]", fe.Field)
	assert.ErrorIs(t, err, flotilla.ErrRequired)
	assert.ErrorIs(t, err, flotilla.ErrDuplicate, "topologies[1].name")
}

func TestGangWithRequiredRackLandsInOneRack(t *testing.T) {
	w := rackWorld(t, "8")
	w.run("B", "2", "b1-r2-0", nonPreemptible)
	// 4 × 3 cores: every rack has 16 free but b1/r2 (14), the tightest; 3
	// fit twice on each of its nodes (8 and 6 free).
	w.submit("A", 4, "3", inTopology("g", 4, flotilla.GangTopology{Required: tRack}))
	res := w.schedule()
	require.Len(t, res.Scheduled, 4)
	for _, a := range res.Scheduled {
		assert.Contains(t, []string{"b1-r2-0", "b1-r2-1"}, a.Node)
	}
}

func TestGangWithRequiredRackThatNoRackHoldsSaysWhichRackCameClosest(t *testing.T) {
	w := rackWorld(t, "8")
	w.run("B", "1", "b1-r1-0", nonPreemptible)
	w.submit("A", 5, "4", inTopology("g", 5, flotilla.GangTopology{Required: tRack}))
	res := w.schedule()
	assert.Empty(t, res.Scheduled)
	require.Len(t, res.UnscheduledJobs, 5)
	why := res.UnscheduledJobs[0].Reason
	assert.Equal(t, scheduler.ReasonNeverFits, why.Code, "no rack has 20 cores even empty")
	assert.Equal(t, `gang "g": no rack has 20 free cpu: best rack b1/r2 has 16 (4 short)`, why.Message)
	require.NotNil(t, why.Search)
	assert.Equal(t, tRack, why.Search.Level)
	assert.Equal(t, "b1/r2", why.Search.Domain)
}

func TestGangWithPreferredRackFallsBackToABlockThenToAnywhere(t *testing.T) {
	w := rackWorld(t, "8")
	w.submit("A", 3, "8", inTopology("g", 3, flotilla.GangTopology{Preferred: tRack}))
	res := w.schedule()
	require.Len(t, res.Scheduled, 3)
	for _, a := range res.Scheduled {
		assert.Contains(t, a.Node, "b1-", "no rack holds 24 cores; block b1 (32) does")
	}
	w = rackWorld(t, "8")
	w.submit("A", 5, "8", inTopology("g", 5, flotilla.GangTopology{Preferred: tRack}))
	res = w.schedule()
	assert.Len(t, res.Scheduled, 5, "no block holds 40 cores: placed as without a topology")
}

func TestGangTopologyCountsRoomItMayTakeByUrgency(t *testing.T) {
	w := rackWorld(t, "8")
	w.cfg.EvictionProbability = 0
	for _, n := range []string{"b1-r1-0", "b1-r1-1", "b1-r2-0", "b1-r2-1", "b2-r1-0", "b2-r1-1"} {
		w.run("B", "6", n, preemptible)
	}
	// Free: 2 cores per node. A non-preemptible 2 × 6 gang needs a rack
	// whose preemptible jobs it may take.
	w.submit("A", 2, "6", nonPreemptible, inTopology("g", 2, flotilla.GangTopology{Required: tRack}))
	res := w.schedule()
	require.Len(t, res.Scheduled, 2)
	assert.Equal(t, res.Scheduled[0].Node[:5], res.Scheduled[1].Node[:5], "one rack")
	assert.Len(t, res.Preempted, 2)
}

func TestGangNamingAnUnknownTopologyIsInvalid(t *testing.T) {
	for _, gt := range []flotilla.GangTopology{{Name: "nvlink", Required: tRack}, {Required: "zone"}} {
		w := rackWorld(t, "8")
		w.submit("A", 2, "1", inTopology("g", 2, gt))
		res := w.schedule()
		assert.Empty(t, res.Scheduled)
		require.NotEmpty(t, res.UnscheduledJobs)
		why := res.UnscheduledJobs[0].Reason
		assert.Equal(t, scheduler.ReasonInvalid, why.Code)
		assert.Contains(t, why.Message, `.gang.topology.`)
	}
	w := rackWorld(t, "8")
	w.cfg.Topologies = nil
	w.submit("A", 2, "1", inTopology("g", 2, flotilla.GangTopology{Required: tRack}))
	res := w.schedule()
	require.NotEmpty(t, res.UnscheduledJobs)
	assert.Equal(t, scheduler.ReasonInvalid, res.UnscheduledJobs[0].Reason.Code, "no topologies configured")
}

// A running gang with a topology that fair share evicts goes back to its
// own nodes (topology never moves a running gang): A holds 40 of 48 cores,
// B asks for 24 and gets two jobs; A's jobs are evicted and rescheduled, its gang first, on
// the nodes it ran on, though they are in two racks (it was placed before
// its topology was required, say), and B takes A's loose jobs' nodes.
func TestEvictedTopologyGangGoesBackToItsNodes(t *testing.T) {
	w := rackWorld(t, "8")
	gang := func(j *flotilla.Job) {
		preemptible(j)
		j.Gang = flotilla.Gang{ID: "g", Cardinality: 2, Topology: flotilla.GangTopology{Required: tRack}}
	}
	g1 := w.run("A", "4", "b1-r1-0", gang)
	g2 := w.run("A", "4", "b2-r1-0", gang)
	for _, n := range []string{"b1-r1-1", "b1-r2-0", "b1-r2-1", "b2-r1-1"} {
		w.run("A", "8", n, preemptible)
	}
	w.submit("B", 3, "8", preemptible)
	res := w.schedule()
	assert.Equal(t, map[string]int{"B": 2}, countByQueue(res.Scheduled), "B's 16 of 24 asked; A keeps 32 of 40")
	require.Len(t, res.Preempted, 2)
	for _, p := range res.Preempted {
		assert.NotEqual(t, g1.ID, p.Job.ID)
		assert.NotEqual(t, g2.ID, p.Job.ID)
	}
}
