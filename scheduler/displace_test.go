package scheduler_test

import (
	"cmp"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/leanovate/gopter/gen"
	"github.com/leanovate/gopter/prop"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/queue"
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

// The walk asks the node database whether the job fits anywhere once it
// has taken displaceWalkBudget (32) units; past that it goes on to the
// same answer as a walk without a budget, and a job that fits nowhere
// displaces nothing. Forty one-core nodes, each with one evicted job of A
// started a minute after the one before; only node-0 and node-1 are
// labelled, so a job for them passes 38 units that would be rescheduled
// later first.
func TestDisplacementWalkPastItsBudget(t *testing.T) {
	for _, c := range []struct {
		name, cpu string
		want      []int // nodes whose job is displaced
	}{
		{"fits: the job rescheduled last among those on admitted nodes", "1", []int{1}},
		{"fits nowhere: nothing displaced", "2", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := newWorld(t)
			w.addQueue("A", 1)
			w.addQueue("B", 1)
			var jobs []*flotilla.Job
			for i := range 40 {
				var labels map[string]string
				if i < 2 {
					labels = map[string]string{"slot": "a"}
				}
				labelledNode(w, fmt.Sprintf("node-%d", i), "1", labels)
				jobs = append(jobs, w.run("A", "1", w.nodes[i].Name, preemptible, startedAt(time.Duration(i)*time.Minute)))
			}
			b := w.submit("B", 1, c.cpu, nonPreemptible, func(j *flotilla.Job) { j.NodeSelector = map[string]string{"slot": "a"} })[0]
			res := w.schedule()
			want := map[string]scheduler.PreemptionReason{}
			for _, n := range c.want {
				want[jobs[n].ID] = scheduler.PreemptedForFairShare
			}
			assert.Equal(t, want, displacedFor(res, b.ID))
			assert.Len(t, res.Preempted, len(c.want))
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

// A job placed by urgency displaces, on its node, the evicted jobs there
// rescheduled last until the node's free capacity is not negative; they
// and the urgency victim name it. A (below its fair share) keeps its job
// running until B's urgent job preempts it; C's evicted jobs on node-0 hold
// 4 cores, of which the urgent job needs 2.
func TestUrgencyPlacementDisplacesTheEvictedJobsOnItsNodeRescheduledLast(t *testing.T) {
	w := newWorld(t)
	w.addNodes(2, "8")
	w.addQueue("A", 1)
	w.addQueue("B", 1)
	w.addQueue("C", 1)
	a := w.run("A", "4", "node-0", preemptible)
	w.run("C", "2", "node-0", preemptible, startedAt(-2*time.Hour))
	c2 := w.run("C", "2", "node-0", preemptible, startedAt(-time.Hour))
	w.run("C", "4", "node-1", nonPreemptible)
	b := w.submit("B", 1, "6", nonPreemptible)[0]
	res := w.schedule()
	require.Len(t, res.Scheduled, 1)
	assert.Equal(t, "node-0", res.Scheduled[0].Node)
	assert.Equal(t, map[string]scheduler.PreemptionReason{a.ID: scheduler.PreemptedForUrgency, c2.ID: scheduler.PreemptedForFairShare}, displacedFor(res, b.ID))
	assert.Len(t, res.Preempted, 2)
}

// A gang placed in evicted jobs' capacity displaces, on each node it used,
// the evicted jobs there; each names the member placed on its node.
func TestGangDisplacementNamesTheMemberOnEachNode(t *testing.T) {
	w := newWorld(t)
	w.addNodes(2, "4")
	w.addQueue("A", 1)
	w.addQueue("B", 1)
	e0 := w.run("A", "4", "node-0", preemptible)
	e1 := w.run("A", "4", "node-1", preemptible)
	w.submit("B", 2, "4", nonPreemptible, inGang("g", 2, ""))
	res := w.schedule()
	require.Len(t, res.Scheduled, 2)
	on := map[string]string{}
	for _, a := range res.Scheduled {
		on[a.Node] = a.Job.ID
	}
	got := map[string]string{}
	for _, p := range res.Preempted {
		require.NotNil(t, p.For, p.Job.ID)
		assert.Equal(t, scheduler.PreemptedForFairShare, p.Reason)
		got[p.Job.ID] = p.For.ID
	}
	assert.Equal(t, map[string]string{e0.ID: on["node-0"], e1.ID: on["node-1"]}, got)
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

// TestPropertyDisplacementMatchesNaiveOracle checks displacement against
// its definition, by brute force on small worlds: every preemptible job of
// queues A and B is evicted (protected fraction 0), and one to three urgent
// jobs of queue N, tried first (in ID order), may displace them. Nodes may
// be cordoned or tainted and the urgent jobs may select or tolerate. The
// oracle ranks the evicted units in rescheduling order from the snapshot
// alone (higher class first, then the smaller allocation the queue would
// hold after the unit — equal weights, so equal fair shares —, then the
// queue name, then LessEvicted order; a gang at its member offered first),
// and then, for each urgent job in turn, tries k = 0, 1, … units
// rescheduled last still holding and, for each k, every node in index
// order that admits the job: the first that fits once those units' holds
// there are freed is the node, and the units among them with a member on
// it (with their whole gangs) are the displaced set, less those that go
// back at the end of the cycle (putBackLate) and so are not preempted at
// all. A job that fits in
// free capacity (k = 0) may land on any admitting node with room (the
// tiers choose); the oracle follows it there.
func TestPropertyDisplacementMatchesNaiveOracle(t *testing.T) {
	p := properties(t)
	p.Property("the displaced set is the definition's", prop.ForAll(func(seed uint64) string {
		w, urgent := displacementWorld(t, seed)
		res := w.schedule()
		placed := map[string]string{}
		for _, a := range res.Scheduled {
			placed[a.Job.ID] = a.Node
		}
		preempted := map[string]bool{}
		for _, p := range res.Preempted {
			preempted[p.Job.ID] = true
		}
		o := newDisplacementOracle(w)
		for _, j := range urgent {
			got := map[string]bool{}
			for id, why := range displacedFor(res, j.ID) {
				if why != scheduler.PreemptedForFairShare {
					return fmt.Sprintf("seed %d: %s preempted for %s", seed, id, why)
				}
				got[id] = true
			}
			want, node, msg := o.next(j, placed[j.ID])
			if msg != "" {
				return fmt.Sprintf("seed %d: %s: %s", seed, j.ID, msg)
			}
			// The definition's set, less the units put back at the end of
			// the cycle where room appeared on their nodes after they
			// were displaced (putBackLate): those run on, preempted for
			// nothing.
			for id := range got {
				if !want[id] {
					return fmt.Sprintf("seed %d: %s displaced %v, the definition says %v", seed, j.ID, slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(want)))
				}
			}
			for id := range want {
				if !got[id] && preempted[id] {
					return fmt.Sprintf("seed %d: %s displaced %v, the definition says %v, and %s is preempted for another reason", seed, j.ID, slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(want)), id)
				}
			}
			if node >= 0 && placed[j.ID] != w.nodes[node].Name {
				return fmt.Sprintf("seed %d: %s placed on %q, the definition says %s", seed, j.ID, placed[j.ID], w.nodes[node].Name)
			}
			if (node >= 0) != (placed[j.ID] != "") {
				return fmt.Sprintf("seed %d: %s placed on %q, the oracle's node %d", seed, j.ID, placed[j.ID], node)
			}
		}
		return ""
	}, gen.UInt64()))
	p.TestingRun(t)
}

// displacementWorld is two or three nodes of 4 to 8 cores, some cordoned
// or tainted, filled by queues A and B (lone jobs and two-member gangs,
// mostly preemptible at two classes, started at random hours), and one to
// three urgent jobs of queue N, in the order the fill offers them.
func displacementWorld(t *testing.T, seed uint64) (*world, []*flotilla.Job) {
	rng := rand.New(rand.NewPCG(seed, 7))
	w := newWorld(t)
	withMidPreemptible(w)
	w.cfg.ProtectedFractionOfFairShare = 0
	nodes := 2 + rng.IntN(2)
	free := make([]int, nodes)
	for i := range nodes {
		free[i] = 4 + rng.IntN(5)
		var labels map[string]string
		if rng.IntN(2) == 0 {
			labels = map[string]string{"slot": "a"}
		}
		labelledNode(w, fmt.Sprintf("node-%d", i), fmt.Sprint(free[i]), labels)
		// Cordoned and tainted nodes: their jobs run (and go back), but
		// new work lands there only through a toleration.
		w.nodes[i].Unschedulable = rng.IntN(5) == 0
		if rng.IntN(4) == 0 {
			w.nodes[i].Taints = []flotilla.Taint{{Key: "dedicated", Value: "x", Effect: flotilla.TaintNoSchedule}}
		}
	}
	w.addQueue("A", 1)
	w.addQueue("B", 1)
	w.addQueue("N", 1)
	classes := []func(*flotilla.Job){preemptible, midPreemptible, preemptible, midPreemptible, nonPreemptible}
	start := func() func(*scheduler.Running) { return startedAt(time.Duration(rng.IntN(4)) * time.Hour) }
	for g := 0; rng.IntN(3) > 0 && g < 3; g++ {
		q, cpu := []string{"A", "B"}[rng.IntN(2)], 1+rng.IntN(3)
		n0, n1 := rng.IntN(nodes), rng.IntN(nodes)
		if free[n0] < cpu || free[n1] < cpu || (n0 == n1 && free[n0] < 2*cpu) {
			continue
		}
		free[n0] -= cpu
		free[n1] -= cpu
		class := classes[rng.IntN(2)]
		id := fmt.Sprintf("g%d", g)
		st := start()
		for _, n := range []int{n0, n1} {
			w.run(q, fmt.Sprint(cpu), w.nodes[n].Name, func(j *flotilla.Job) { class(j); inGang(id, 2, "")(j) }, st)
		}
	}
	for n := range nodes {
		for free[n] > 0 && rng.IntN(6) > 0 {
			cpu := min(free[n], 1+rng.IntN(3))
			free[n] -= cpu
			w.run([]string{"A", "B"}[rng.IntN(2)], fmt.Sprint(cpu), w.nodes[n].Name, classes[rng.IntN(len(classes))], start())
		}
	}
	// The urgent job's class: non-preemptible, or preemptible above every
	// other class, so that it is still tried first (no urgency victims
	// either way: every preemptible job is evicted).
	mods := []func(*flotilla.Job){nonPreemptible}
	if rng.IntN(2) == 0 {
		w.cfg.PriorityClasses = append(w.cfg.PriorityClasses, flotilla.PriorityClass{Name: "top", Priority: 35000, Preemptible: true})
		w.resetStore()
		mods[0] = func(j *flotilla.Job) { j.PriorityClass = "top" }
	}
	if rng.IntN(2) == 0 {
		mods = append(mods, func(j *flotilla.Job) {
			j.Tolerations = []flotilla.Toleration{{Key: "dedicated", Operator: flotilla.TolerationExists}}
		})
	}
	if rng.IntN(3) == 0 {
		mods = append(mods, func(j *flotilla.Job) { j.NodeSelector = map[string]string{"slot": "a"} })
	}
	var urgent []*flotilla.Job
	for range 1 + rng.IntN(3) {
		var ms []func(*flotilla.Job)
		for _, m := range mods {
			if rng.IntN(2) == 0 || len(ms) == 0 {
				ms = append(ms, m)
			}
		}
		urgent = append(urgent, w.submit("N", 1, fmt.Sprint(1+rng.IntN(8)), ms...)[0])
	}
	slices.SortFunc(urgent, func(a, b *flotilla.Job) int { return strings.Compare(a.ID, b.ID) })
	return w, urgent
}

// displacementOracle is the definition of displacement, applied to a
// world's urgent jobs one after another: free is each node's free cpu at
// the lowest level with every evicted unit holding its place, units the
// evicted units still holding, rescheduled last first.
type displacementOracle struct {
	w     *world
	node  map[string]int
	free  []int64
	units [][]scheduler.Running
}

func oracleCPU(r flotilla.Resources) int64 { return r[0] }

// newDisplacementOracle ranks the world's evicted units.
func newDisplacementOracle(w *world) *displacementOracle {
	prio := map[string]int32{}
	for _, pc := range w.cfg.PriorityClasses {
		prio[pc.Name] = pc.Priority
	}
	o := &displacementOracle{w: w, node: map[string]int{}, free: make([]int64, len(w.nodes))}
	for i, n := range w.nodes {
		o.node[n.Name] = i
		o.free[i] = oracleCPU(n.Total)
	}
	type ev struct {
		r     scheduler.Running
		entry queue.Entry
	}
	evicted := map[string][]ev{}
	base := map[string]int64{}
	for _, r := range w.running {
		o.free[o.node[r.Node]] -= oracleCPU(r.Job.Requests)
		if r.Job.PriorityClass == flotilla.ArmadaDefault {
			base[r.Job.Queue] += oracleCPU(r.Job.Requests)
			continue
		}
		evicted[r.Job.Queue] = append(evicted[r.Job.Queue], ev{r, queue.Entry{Job: r.Job, ClassPriority: prio[r.Job.PriorityClass]}})
	}
	type unit struct {
		prio    int32
		after   int64
		queue   string
		pos     int
		members []scheduler.Running
	}
	var units []unit
	for q, es := range evicted {
		slices.SortFunc(es, func(a, b ev) int {
			if queue.LessEvicted(&a.entry, &b.entry, a.r.Start, b.r.Start) {
				return -1
			}
			return 1
		})
		back := base[q]
		seen := map[string]bool{}
		for pos, e := range es {
			if id := e.r.Job.Gang.ID; id != "" {
				if seen[id] {
					continue
				}
				seen[id] = true
			}
			u := unit{prio: e.entry.ClassPriority, after: back + oracleCPU(e.r.Job.Requests), queue: q, pos: pos}
			for _, o := range es {
				if o.r.Job == e.r.Job || (e.r.Job.Gang.ID != "" && o.r.Job.Gang.ID == e.r.Job.Gang.ID) {
					u.members = append(u.members, o.r)
					back += oracleCPU(o.r.Job.Requests)
				}
			}
			units = append(units, u)
		}
	}
	// Rescheduled last first.
	slices.SortFunc(units, func(a, b unit) int {
		return cmp.Or(cmp.Compare(a.prio, b.prio), cmp.Compare(b.after, a.after), strings.Compare(b.queue, a.queue), cmp.Compare(b.pos, a.pos))
	})
	for _, u := range units {
		o.units = append(o.units, u.members)
	}
	return o
}

// next returns the jobs the definition displaces for job j, and the node
// index it lands on (-1 for none), and applies that; placed is the node
// the cycle put j on, followed when j fits in free capacity; msg reports a
// free placement the definition does not allow.
func (o *displacementOracle) next(j *flotilla.Job, placed string) (out map[string]bool, node int, msg string) {
	w := o.w
	admits := func(n *flotilla.Node) bool {
		if n.Unschedulable || (len(n.Taints) > 0 && len(j.Tolerations) == 0) {
			return false
		}
		return n.Labels["slot"] == j.NodeSelector["slot"] || j.NodeSelector == nil
	}
	req := oracleCPU(j.Requests)
	for k := 0; k <= len(o.units); k++ {
		for n := range w.nodes {
			if !admits(w.nodes[n]) {
				continue
			}
			room := o.free[n]
			var on []int
			for ui, u := range o.units[:k] {
				hit := false
				for _, m := range u {
					if o.node[m.Node] == n {
						room += oracleCPU(m.Job.Requests)
						hit = true
					}
				}
				if hit {
					on = append(on, ui)
				}
			}
			if room < req {
				continue
			}
			if k == 0 {
				// Free capacity: the tiers choose among the nodes.
				pn, ok := o.node[placed]
				if !ok || !admits(w.nodes[pn]) || o.free[pn] < req {
					return map[string]bool{}, n, fmt.Sprintf("placed on %q, not an admitting node with free room", placed)
				}
				o.free[pn] -= req
				return map[string]bool{}, pn, ""
			}
			out = map[string]bool{}
			for _, ui := range on {
				for _, m := range o.units[ui] {
					out[m.Job.ID] = true
					o.free[o.node[m.Node]] += oracleCPU(m.Job.Requests)
				}
			}
			o.free[n] -= req
			for i := len(on) - 1; i >= 0; i-- {
				o.units = slices.Delete(o.units, on[i], on[i]+1)
			}
			return out, n, ""
		}
	}
	return map[string]bool{}, -1, ""
}

// A gang displaces as a lone job does: the evicted jobs rescheduled last,
// sparing a higher-class evicted job when a lower one elsewhere would do.
// Here a gang of one must displace one of two evicted jobs: the
// armada-preemptible one on node-1 is rescheduled after the mid one on
// node-0, and a lone job with the same requirements displaces it.
func TestGangDisplacesTheEvictedJobsRescheduledLast(t *testing.T) {
	w := newWorld(t)
	withMidPreemptible(w)
	w.addNodes(2, "4")
	w.addQueue("A", 1)
	w.addQueue("B", 1)
	w.run("A", "4", "node-0", midPreemptible, startedAt(-2*time.Hour))
	low := w.run("A", "4", "node-1", preemptible, startedAt(-time.Hour))
	g := w.submit("B", 1, "4", nonPreemptible, inGang("g", 1, ""))[0]
	res := w.schedule()
	assert.Equal(t, map[string]scheduler.PreemptionReason{low.ID: scheduler.PreemptedForFairShare}, displacedFor(res, g.ID))
	require.Len(t, res.Scheduled, 1)
	assert.Equal(t, "node-1", res.Scheduled[0].Node)
}

// A new job that cannot fit in free capacity first searches where evicted
// jobs' holds are free and every running job counts (Armada searches at
// the evicted priority before any urgency search), and only then at its
// class level with urgency preemption. So it takes an evicted job's
// capacity (the evicted job is then preempted to fair share, from a queue
// above its share) rather than urgency-preempt a running job of a queue
// below its fair share. Here B (8 of 14 cores, fair share 1/3) has E
// evicted on n1; C's non-preemptible job fits on n0 by preempting A's only
// job R (A holds 4/14 < 1/3) or on n1 by displacing E. n0 is the tighter
// fit, but E is displaced and A keeps R.
func TestDisplacingAnEvictedJobGoesBeforeUrgencyPreemption(t *testing.T) {
	w := newWorld(t)
	labelledNode(w, "n0", "4", nil)
	labelledNode(w, "n1", "10", nil)
	w.addQueue("A", 1)
	w.addQueue("B", 1)
	w.addQueue("C", 1)
	r := w.run("A", "4", "n0", preemptible)
	w.run("B", "4", "n1", nonPreemptible)
	e := w.run("B", "4", "n1", preemptible)
	w.submit("C", 1, "4", nonPreemptible)
	res := w.schedule()
	require.Len(t, res.Scheduled, 1)
	got := preemptedIDs(res)
	assert.Equal(t, map[string]scheduler.PreemptionReason{e.ID: scheduler.PreemptedForFairShare}, got,
		"A (below its fair share) lost %s while B (above) kept %s", r.ID, e.ID)
}

// A job placed early in the cycle and displaced by a higher-priority job
// is offered again and lands elsewhere; nothing is preempted. Z's evicted
// job heads Z's queue, so A's job goes before Z's urgent one.
func TestDisplacedJobIsOfferedAgainAndLandsElsewhere(t *testing.T) {
	w := newWorld(t)
	w.cfg.ProtectedFractionOfFairShare = 0
	labelledNode(w, "n0", "2", map[string]string{"slot": "a"})
	labelledNode(w, "n1", "2", nil)
	labelledNode(w, "n2", "2", nil)
	w.addQueue("A", 1)
	w.addQueue("Z", 1)
	w.run("Z", "2", "n1", preemptible)
	a := w.submit("A", 1, "1", preemptible)[0]
	z := w.submit("Z", 1, "2", nonPreemptible, func(j *flotilla.Job) { j.NodeSelector = map[string]string{"slot": "a"} })[0]
	res := w.schedule()
	assert.Empty(t, res.Preempted)
	assert.Empty(t, res.UnscheduledJobs)
	nodes := map[string]string{}
	for _, s := range res.Scheduled {
		nodes[s.Job.ID] = s.Node
	}
	assert.Equal(t, map[string]string{a.ID: "n2", z.ID: "n0"}, nodes)
	assert.Equal(t, 1, res.Queues[0].Running)
	assert.Equal(t, 2, res.Queues[1].Running)
}

// A gang that needs several nodes walks the evicted units from the one
// rescheduled last until it fits, and displaces only the walked units on
// the nodes it uses: the two armada-preemptible evicted jobs go, the mid
// one (rescheduled before them) stays, whichever nodes tier and fit alone
// would have picked.
func TestGangOfTwoDisplacesTheTwoEvictedJobsRescheduledLast(t *testing.T) {
	w := newWorld(t)
	withMidPreemptible(w)
	w.addNodes(3, "4")
	w.addQueue("A", 1)
	w.addQueue("B", 1)
	mid := w.run("A", "4", "node-0", midPreemptible, startedAt(-3*time.Hour))
	low1 := w.run("A", "4", "node-1", preemptible, startedAt(-2*time.Hour))
	low2 := w.run("A", "4", "node-2", preemptible, startedAt(-time.Hour))
	gang := w.submit("B", 2, "4", nonPreemptible, inGang("g", 2, ""))
	res := w.schedule()
	require.Len(t, res.Scheduled, 2, "the gang is placed whole")
	got := map[string]string{}
	for _, p := range res.Preempted {
		require.NotNil(t, p.For, p.Job.ID)
		got[p.Job.ID] = p.For.Gang.ID
	}
	assert.Equal(t, map[string]string{low1.ID: "g", low2.ID: "g"}, got, "mid %s is spared", mid.ID)
	for _, a := range res.Scheduled {
		assert.NotEqual(t, "node-0", a.Node, "%s", gang[0].ID)
	}
}

// A job that must displace evicted jobs takes only those not yet put back:
// evicted jobs are offered back first in their queue, each when
// progressive filling reaches its queue, so those of a queue below (or at,
// winning the tie by queue name) its fair share go back before a new job
// of another queue is tried, and are running again when it searches. The
// world of bigjob4: two 32-core nodes full of queue A's 1-core preemptible
// jobs (node-0 the first 32 in A's order, node-1 the next 32), both queues
// of equal weight, and B's two 32-core preemptible jobs. A is evicted
// whole; its jobs go back, earliest start first, until it holds its fair
// share of 32 cores (the 32nd ties with B's job at a fraction of 1 and
// goes first, A < B); then B's job walks the rest. When every A job started
// together, the 32 put back are node-0's and B displaces node-1's 32. When
// node-0's first job and one of node-1's started later (they replaced
// jobs that finished), the 32 put back are 31 on node-0 and one on
// node-1: no node can be emptied, B waits and A's other 32 go back too —
// as in Armada, whose fair-share walk skips rescheduled jobs. The tie, or
// preferring larger jobs, decides it the other way.
func TestDisplacementTakesOnlyEvictedJobsNotYetPutBack(t *testing.T) {
	for _, c := range []struct {
		rule        string
		big         string // the queue that fills the cluster
		late        bool   // node-0's first job and node-1's ninth started later
		preferLarge bool
		node        string // where B's first job lands, "" for nowhere
	}{
		{rule: "started together: the jobs put back are one node's, the other is displaced whole", big: "A", node: "node-1"},
		{rule: "started at different times: the jobs put back span both nodes, the job waits and nothing is preempted", big: "A", late: true},
		{rule: "the tie at the fair share goes to the new job's queue by name: it walks first", big: "Z", late: true, node: "node-1"},
		{rule: "preferring larger jobs while both queues stay within their fair share: it walks first", big: "A", late: true, preferLarge: true, node: "node-1"},
	} {
		t.Run(c.rule, func(t *testing.T) {
			w := newWorld(t)
			w.cfg.EnablePreferLargeJobOrdering = c.preferLarge
			w.addNodes(2, "32")
			w.addQueue(c.big, 1)
			w.addQueue("B", 1)
			onNode1 := map[string]bool{}
			for i := range 64 {
				start := -2 * time.Hour
				if c.late && (i == 0 || i == 40) {
					start = -time.Hour
				}
				j := w.run(c.big, "1", fmt.Sprintf("node-%d", i/32), func(j *flotilla.Job) {
					preemptible(j)
					j.SubmitTime = t0.Add(time.Duration(i)) // A's order is i's
				}, startedAt(start))
				onNode1[j.ID] = i >= 32
			}
			b := w.submit("B", 2, "32", preemptible)
			res := w.schedule()
			if c.node == "" {
				assert.Empty(t, res.Scheduled)
				assert.Empty(t, res.Preempted, "every evicted job goes back")
				return
			}
			require.Len(t, res.Scheduled, 1)
			assert.Equal(t, b[0].ID, res.Scheduled[0].Job.ID)
			assert.Equal(t, c.node, res.Scheduled[0].Node)
			displaced := displacedFor(res, b[0].ID)
			assert.Len(t, displaced, 32)
			assert.Len(t, res.Preempted, 32)
			for id := range displaced {
				assert.True(t, onNode1[id], "%s is not on node-1", id)
			}
		})
	}
}
