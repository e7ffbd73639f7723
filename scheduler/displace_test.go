package scheduler_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/scheduler"
)

// displacedFor returns the jobs preempted to make room for job id, with
// their reasons.
func displacedFor(res *scheduler.Result, id string) map[string]scheduler.PreemptionReason {
	m := map[string]scheduler.PreemptionReason{}
	for _, p := range res.Preempted {
		if p.For != nil && p.For.ID == id {
			m[p.Job.ID] = p.Reason
		}
	}
	return m
}

// withMidPreemptible adds a preemptible class between the default two.
func withMidPreemptible(w *world) {
	w.cfg.PriorityClasses = append(flotilla.DefaultPriorityClasses(), flotilla.PriorityClass{Name: "mid", Priority: 25000, Preemptible: true})
	w.resetStore()
}

func midPreemptible(j *flotilla.Job) { j.PriorityClass = "mid" }

// Two equal nodes, each holding one evicted job of A: B's urgent job must
// displace one. E1 started first, so A offers it back first; E2 would be
// rescheduled last and is the one displaced, whatever the node order.
func TestDisplacementTakesTheEvictedJobRescheduledLast(t *testing.T) {
	w := newWorld(t)
	w.addNodes(2, "4")
	w.addQueue("A", 1)
	w.addQueue("B", 1)
	w.run("A", "4", "node-0", preemptible, startedAt(-2*time.Hour))
	e2 := w.run("A", "4", "node-1", preemptible, startedAt(-time.Hour))
	b := w.submit("B", 1, "4", nonPreemptible)[0]
	res := w.schedule()
	assert.Equal(t, map[string]scheduler.PreemptionReason{e2.ID: scheduler.PreemptedForFairShare}, preemptedIDs(res))
	assert.Equal(t, map[string]scheduler.PreemptionReason{e2.ID: scheduler.PreemptedForFairShare}, displacedFor(res, b.ID))
	require.Len(t, res.Scheduled, 1)
	assert.Equal(t, "node-1", res.Scheduled[0].Node)
}

// Displacement rules, each a world of three 4-core nodes whose every core
// an evicted job of queue A holds, and one urgent job of queue B.
func TestDisplacementRules(t *testing.T) {
	type running struct {
		name, node string
		mod        func(*flotilla.Job)
		start      time.Duration
	}
	gang := func(j *flotilla.Job) { preemptible(j); inGang("g", 2, "")(j) }
	tolerates := func(j *flotilla.Job) {
		j.Tolerations = []flotilla.Toleration{{Key: "k", Operator: flotilla.TolerationEqual, Value: "v", Effect: flotilla.TaintNoSchedule}}
	}
	tolerating := func(j *flotilla.Job) { preemptible(j); tolerates(j) }
	tainted := func() *flotilla.Node {
		return &flotilla.Node{Taints: []flotilla.Taint{{Key: "k", Value: "v", Effect: flotilla.TaintNoSchedule}}}
	}
	for _, c := range []struct {
		rule    string
		setup   func(w *world)
		nodes   [3]*flotilla.Node
		running []running
		job     func(*flotilla.Job)
		// want are the running jobs displaced; node where B's job lands.
		want []string
		node string
	}{{
		rule: "a gang rescheduled last is displaced whole, freeing every node it held",
		running: []running{
			{"lone", "node-0", preemptible, -3 * time.Hour},
			{"g1", "node-1", gang, -time.Hour},
			{"g2", "node-2", gang, -time.Hour},
		},
		want: []string{"g1", "g2"}, node: "node-1",
	}, {
		rule:  "a higher-class evicted job is spared when a lower one elsewhere suffices",
		setup: withMidPreemptible,
		running: []running{
			{"low", "node-0", preemptible, -3 * time.Hour},
			{"high", "node-1", midPreemptible, -time.Hour},
			{"low2", "node-2", preemptible, -2 * time.Hour},
		},
		want: []string{"low2"}, node: "node-2",
	}, {
		rule:  "a selector passes over jobs on nodes it does not admit",
		nodes: [3]*flotilla.Node{{Labels: map[string]string{"slot": "a"}}, {Labels: map[string]string{"slot": "a"}}, {}},
		running: []running{
			{"first", "node-0", preemptible, -3 * time.Hour},
			{"second", "node-1", preemptible, -2 * time.Hour},
			{"last", "node-2", preemptible, -time.Hour},
		},
		job:  func(j *flotilla.Job) { j.NodeSelector = map[string]string{"slot": "a"} },
		want: []string{"second"}, node: "node-1",
	}, {
		rule:  "a taint the job does not tolerate passes over the jobs on that node",
		nodes: [3]*flotilla.Node{{}, tainted(), {}},
		running: []running{
			{"first", "node-0", preemptible, -3 * time.Hour},
			{"second", "node-2", preemptible, -2 * time.Hour},
			{"last", "node-1", tolerating, -time.Hour},
		},
		want: []string{"second"}, node: "node-2",
	}, {
		rule:  "a cordoned node's jobs are passed over",
		nodes: [3]*flotilla.Node{{}, {Unschedulable: true}, {}},
		running: []running{
			{"first", "node-0", preemptible, -3 * time.Hour},
			{"second", "node-2", preemptible, -2 * time.Hour},
			{"last", "node-1", preemptible, -time.Hour},
		},
		want: []string{"second"}, node: "node-2",
	}, {
		rule:  "a tolerated taint does not stop the walk at the last job",
		nodes: [3]*flotilla.Node{{}, tainted(), {}},
		running: []running{
			{"first", "node-0", preemptible, -3 * time.Hour},
			{"second", "node-2", preemptible, -2 * time.Hour},
			{"last", "node-1", tolerating, -time.Hour},
		},
		job:  tolerates,
		want: []string{"last"}, node: "node-1",
	}} {
		t.Run(c.rule, func(t *testing.T) {
			w := newWorld(t)
			if c.setup != nil {
				c.setup(w)
			}
			for i, n := range c.nodes {
				if n == nil {
					n = &flotilla.Node{}
				}
				n.Name, n.Total = "node-"+string(rune('0'+i)), w.res("4")
				w.nodes = append(w.nodes, n)
			}
			w.addQueue("A", 1)
			w.addQueue("B", 1)
			ids := map[string]string{}
			for _, r := range c.running {
				j := w.run("A", "4", r.node, r.mod, startedAt(r.start))
				ids[j.ID] = r.name
			}
			mods := []func(*flotilla.Job){nonPreemptible}
			if c.job != nil {
				mods = append(mods, c.job)
			}
			b := w.submit("B", 1, "4", mods...)[0]
			res := w.schedule()
			var got []string
			for id, why := range displacedFor(res, b.ID) {
				assert.Equal(t, scheduler.PreemptedForFairShare, why)
				got = append(got, ids[id])
			}
			assert.ElementsMatch(t, c.want, got)
			assert.Len(t, res.Preempted, len(c.want), "only the displaced jobs are preempted")
			require.Len(t, res.Scheduled, 1)
			assert.Equal(t, c.node, res.Scheduled[0].Node)
		})
	}
}

// An urgency victim's Preemption names the job it made room for.
func TestUrgencyPreemptionNamesTheJobItMadeRoomFor(t *testing.T) {
	w := newWorld(t)
	w.cfg.EvictionProbability = 0 // urgency only
	w.addNodes(1, "4")
	w.addQueue("A", 1)
	w.addQueue("B", 1)
	v := w.run("A", "4", "node-0", preemptible)
	b := w.submit("B", 1, "4", nonPreemptible)[0]
	res := w.schedule()
	assert.Equal(t, map[string]scheduler.PreemptionReason{v.ID: scheduler.PreemptedForUrgency}, displacedFor(res, b.ID))
}

// An evicted job that does not go back for a reason of its own (here its
// queue's class limit) names no job.
func TestEvictedJobThatDoesNotGoBackUnforcedNamesNoJob(t *testing.T) {
	w := newWorld(t)
	w.cfg.ProtectedFractionOfFairShare = 0
	w.cfg.PriorityClasses = flotilla.DefaultPriorityClasses()
	w.cfg.PriorityClasses[1].MaximumResourceFractionPerQueue = map[string]float64{"cpu": 0.25}
	w.resetStore()
	w.addNodes(1, "8")
	w.addQueue("A", 1)
	w.run("A", "2", "node-0", preemptible)
	over := w.run("A", "2", "node-0", preemptible, startedAt(time.Hour))
	res := w.schedule()
	require.Len(t, res.Preempted, 1)
	assert.Equal(t, over.ID, res.Preempted[0].Job.ID)
	assert.Nil(t, res.Preempted[0].For)
}
