package scheduler_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
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

// Job.AvoidClusters: a job is placed in a cluster it avoids only when no
// node of another cluster can take it in that cycle, by any search it may
// make (free capacity, evicted jobs' capacity, urgency preemption when its
// class may preempt).

// clusterNode adds a node of cpu cores in cluster.
func clusterNode(w *world, name, cluster, cpu string, labels map[string]string) {
	w.nodes = append(w.nodes, &flotilla.Node{Name: name, Cluster: cluster, Total: w.res(cpu), Labels: labels})
}

func avoiding(clusters ...string) func(*flotilla.Job) {
	return func(j *flotilla.Job) { j.AvoidClusters = clusters }
}

// placedOn maps each scheduled job's ID to its node.
func placedOn(res *scheduler.Result) map[string]string {
	m := map[string]string{}
	for _, a := range res.Scheduled {
		m[a.Job.ID] = a.Node
	}
	return m
}

func TestJobAvoidingAClusterGoesElsewhereWhenAnotherClusterCanTakeIt(t *testing.T) {
	// c1's node is the tighter fit: smallest-fit alone would take it.
	twoClusters := func(w *world) {
		clusterNode(w, "c1-n", "c1", "4", nil)
		clusterNode(w, "c2-n", "c2", "8", nil)
	}
	// c2 full of A's preemptible jobs, A not evictable to fair share.
	c2Preemptible := func(w *world) {
		twoClusters(w)
		w.cfg.ProtectedFractionOfFairShare = 10
		w.run("A", "4", "c2-n", preemptible)
		w.run("A", "4", "c2-n", preemptible)
	}
	cases := []struct {
		name  string
		setup func(w *world)
		job   []func(*flotilla.Job)
		want  string // node of the job
		// preempted is how many running jobs are preempted for urgency.
		preempted int
	}{
		{"c2 has room", twoClusters, []func(*flotilla.Job){avoiding("c1")}, "c2-n", 0},
		{"c2 is full", func(w *world) {
			twoClusters(w)
			w.run("A", "7", "c2-n", nonPreemptible)
		}, []func(*flotilla.Job){avoiding("c1")}, "c1-n", 0},
		{"c2's nodes do not match the job's selector", func(w *world) {
			clusterNode(w, "c1-n", "c1", "4", map[string]string{"zone": "a"})
			clusterNode(w, "c2-n", "c2", "8", map[string]string{"zone": "b"})
		}, []func(*flotilla.Job){avoiding("c1"), func(j *flotilla.Job) { j.NodeSelector = map[string]string{"zone": "a"} }}, "c1-n", 0},
		{"c2's node is cordoned", func(w *world) {
			twoClusters(w)
			w.nodes[1].Unschedulable = true
		}, []func(*flotilla.Job){avoiding("c1")}, "c1-n", 0},
		{"there is no other cluster", func(w *world) {
			clusterNode(w, "c1-n", "c1", "4", nil)
			clusterNode(w, "c1-m", "c1", "8", nil)
		}, []func(*flotilla.Job){avoiding("c1")}, "c1-n", 0},
		{"every cluster avoided", twoClusters, []func(*flotilla.Job){avoiding("c2", "c1")}, "c1-n", 0},
		{"an avoided cluster that does not exist changes nothing", twoClusters, []func(*flotilla.Job){avoiding("c9")}, "c1-n", 0},
		{"the default cluster is another cluster", func(w *world) {
			clusterNode(w, "c1-n", "c1", "4", nil)
			clusterNode(w, "d-n", "", "8", nil)
		}, []func(*flotilla.Job){avoiding("c1")}, "d-n", 0},
		{"a job that may preempt preempts in c2 rather than take free room in c1", c2Preemptible,
			[]func(*flotilla.Job){avoiding("c1"), nonPreemptible}, "c2-n", 1},
		{"a job that may not preempt takes free room in c1", c2Preemptible,
			[]func(*flotilla.Job){avoiding("c1"), preemptible}, "c1-n", 0},
		{"a job that may preempt takes free room in c1 when c2 holds nothing it may preempt", func(w *world) {
			twoClusters(w)
			w.run("A", "8", "c2-n", nonPreemptible)
		}, []func(*flotilla.Job){avoiding("c1"), nonPreemptible}, "c1-n", 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t)
			w.addQueue("A", 1)
			w.addQueue("B", 1)
			tc.setup(w)
			j := w.submit("B", 1, "2", tc.job...)[0]
			res := w.schedule()
			assert.Equal(t, tc.want, placedOn(res)[j.ID])
			require.Len(t, res.Preempted, tc.preempted)
			for _, p := range res.Preempted {
				assert.Equal(t, scheduler.PreemptedForUrgency, p.Reason)
				assert.Equal(t, j.ID, p.For.ID)
			}
		})
	}
}

// Displacing an evicted job in c2 counts as c2 taking the job: C's job
// avoiding c1 takes the capacity B's evicted job holds in c2 rather than
// c1's free room, and the evicted job is preempted to fair share. (C's
// second job makes C's demand large enough for B to be above its adjusted
// fair share; C's jobs are preemptible, so they cannot preempt B's for
// urgency.)
func TestJobAvoidingAClusterDisplacesEvictedJobsElsewhereBeforeTakingFreeRoomThere(t *testing.T) {
	w := newWorld(t)
	clusterNode(w, "c1-n", "c1", "10", nil)
	clusterNode(w, "c2-n", "c2", "10", nil)
	w.addQueue("B", 1)
	w.addQueue("C", 1)
	w.run("B", "4", "c1-n", nonPreemptible)
	w.run("B", "4", "c2-n", nonPreemptible)
	e := w.run("B", "6", "c2-n", preemptible)
	j := w.submit("C", 1, "4", preemptible, avoiding("c1"))[0]
	w.submit("C", 1, "8", preemptible)
	res := w.schedule()
	assert.Equal(t, "c2-n", placedOn(res)[j.ID])
	assert.Equal(t, map[string]scheduler.PreemptionReason{e.ID: scheduler.PreemptedForFairShare}, preemptedIDs(res))
}

// Jobs that differ only in AvoidClusters must not share what the cycle
// learns about one of them. A avoids c1 and c2, finds c3 full and goes to
// c2, the tightest fit of the rest; had B (avoiding only c2) shared A's
// scheduling key, it would have skipped its search outside c2 as A's
// search outside c1 and c2 had been in vain, and followed A to c2.
func TestJobsAvoidingDifferentClustersDoNotShareTheirSearchOutsideThem(t *testing.T) {
	w := newWorld(t)
	clusterNode(w, "c1-n", "c1", "8", nil)
	clusterNode(w, "c2-n", "c2", "4", nil)
	clusterNode(w, "c3-n", "c3", "2", nil)
	w.addQueue("A", 1)
	w.run("A", "2", "c3-n", nonPreemptible)
	a := w.submit("A", 1, "1", withPriority(0), avoiding("c1", "c2"))[0]
	b := w.submit("A", 1, "1", withPriority(1), avoiding("c2"))[0]
	e1, _ := w.store.Get(a.ID)
	e2, _ := w.store.Get(b.ID)
	assert.NotEqual(t, e1.Key, e2.Key)
	res := w.schedule()
	assert.Equal(t, map[string]string{a.ID: "c2-n", b.ID: "c1-n"}, placedOn(res))
}

// Once c2's one free core is taken, the search outside c1 is in vain, and
// the jobs of the same requirements after it go to c1, their queue's own
// node (which the tiers alone would have chosen for all three).
func TestJobsAvoidingAClusterGoThereOnceTheOthersAreFull(t *testing.T) {
	w := newWorld(t)
	clusterNode(w, "c1-n", "c1", "4", nil)
	clusterNode(w, "c2-n", "c2", "4", nil)
	w.addQueue("A", 1)
	w.addQueue("B", 1)
	w.run("A", "1", "c1-n", nonPreemptible)
	w.run("B", "3", "c2-n", nonPreemptible)
	js := w.submit("A", 3, "1", avoiding("c1"))
	res := w.schedule()
	assert.Equal(t, map[string]string{js[0].ID: "c2-n", js[1].ID: "c1-n", js[2].ID: "c1-n"}, placedOn(res))
}

// The lottery strategy leases a job avoiding c1 in c2 when c2 has room,
// and in c1 when it has none.
func TestLotteryLeasesAJobAvoidingAClusterElsewhereWhenAnotherClusterCanTakeIt(t *testing.T) {
	for _, full := range []bool{false, true} {
		w := newWorld(t)
		w.lottery(time.Hour, false)
		clusterNode(w, "c1-n", "c1", "4", nil)
		clusterNode(w, "c2-n", "c2", "8", nil)
		w.addQueue("A", 1)
		want := "c2-n"
		if full {
			w.run("A", "7", "c2-n", nonPreemptible)
			want = "c1-n"
		}
		js := w.submit("A", 2, "2", avoiding("c1"))
		res := w.cycle(scheduler.QueuePriorityState{}, 1, t0)
		for _, j := range js {
			assert.Equal(t, want, placedOn(res)[j.ID], "c2 full: %v", full)
		}
	}
}

// A gang lands in a cluster none of its members avoids when one can take
// it, and otherwise where it would have gone.
func TestGangLandsInAClusterNoMemberAvoidsWhenOneCanTakeIt(t *testing.T) {
	// member sets AvoidClusters on the i-th member submitted.
	member := func(i int, avoid ...string) func(*flotilla.Job) {
		k := 0
		return func(j *flotilla.Job) {
			if k == i {
				j.AvoidClusters = avoid
			}
			k++
		}
	}
	cases := []struct {
		name     string
		clusters []string // each cluster's two nodes have cpu 4, 6, 8, ...
		setup    func(w *world)
		mod      []func(*flotilla.Job)
		want     string
	}{
		{"one member avoids c1", []string{"c1", "c2"}, nil, []func(*flotilla.Job){member(0, "c1")}, "c2"},
		{"every member avoids c1", []string{"c1", "c2"}, nil, []func(*flotilla.Job){avoiding("c1")}, "c2"},
		{"c2 cannot take it", []string{"c1", "c2"}, func(w *world) {
			w.run("A", "4", "c2-0", nonPreemptible)
			w.run("A", "4", "c2-1", nonPreemptible)
		}, []func(*flotilla.Job){member(0, "c1")}, "c1"},
		{"members avoid c1 and c2", []string{"c1", "c2", "c3"}, nil, []func(*flotilla.Job){member(0, "c1"), member(1, "c2")}, "c3"},
		{"members avoid every cluster", []string{"c1", "c2"}, nil, []func(*flotilla.Job){member(0, "c1"), member(1, "c2")}, "c1"},
		{"a gang that may preempt preempts in c2 rather than take free room in c1", []string{"c1", "c2"}, func(w *world) {
			w.cfg.ProtectedFractionOfFairShare = 10
			w.run("A", "6", "c2-0", preemptible)
			w.run("A", "6", "c2-1", preemptible)
		}, []func(*flotilla.Job){member(0, "c1"), nonPreemptible}, "c2"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t)
			cpu := 4
			for _, c := range tc.clusters {
				for i := range 2 {
					clusterNode(w, fmt.Sprintf("%s-%d", c, i), c, fmt.Sprint(cpu), nil)
				}
				cpu += 2
			}
			w.addQueue("A", 1)
			w.addQueue("B", 1)
			if tc.setup != nil {
				tc.setup(w)
			}
			gang := w.submit("B", 2, "3", append([]func(*flotilla.Job){inGang("g", 2, "")}, tc.mod...)...)
			res := w.schedule()
			on := placedOn(res)
			for _, j := range gang {
				require.Contains(t, on, j.ID)
				assert.Equal(t, tc.want, on[j.ID][:2], "%s on %s", j.ID, on[j.ID])
			}
		})
	}
}

// avoidWorld is a preemption-free generated world (one non-preemptible
// class, no gangs) whose nodes lie in three clusters and whose queued jobs
// avoid random sets of clusters (sometimes one that does not exist).
func avoidWorld(t *testing.T, seed uint64) *genWorld {
	w := makeWorldClasses(t, seed, 0, []string{"", flotilla.ArmadaDefault})
	rng := rand.New(rand.NewPCG(seed, 0xa701d))
	for _, n := range w.snap.Nodes {
		n.Cluster = fmt.Sprintf("c%d", rng.IntN(3))
	}
	store, err := queue.New(w.cfg.Schema, w.cfg.PriorityClasses, w.cfg.DefaultPriorityClass)
	require.NoError(t, err)
	names := []string{"c0", "c1", "c2", "c9"}
	for _, j := range w.queued {
		j.AvoidClusters = nil
		for _, c := range names {
			if rng.IntN(3) == 0 {
				j.AvoidClusters = append(j.AvoidClusters, c)
			}
		}
		require.NoError(t, store.Add(j))
	}
	w.snap.Queued = store
	return w
}

// The rule against a naive oracle: replaying the cycle's placements in
// order over the nodes' free capacity, a job placed in a cluster it avoids
// could not have been placed on any node of another cluster (not cordoned,
// selector and taints admitting it, room for it) at that moment.
func TestPropertyJobInAnAvoidedClusterOnlyWhenNoOtherClusterCouldHoldIt(t *testing.T) {
	p := properties(t)
	p.Property("placed in an avoided cluster only when no other could hold it", prop.ForAll(func(seed uint64) string {
		w := avoidWorld(t, seed)
		res := w.schedule(t)
		free := map[string]flotilla.Resources{}
		for _, n := range w.snap.Nodes {
			free[n.Name] = n.Total.Clone()
		}
		for _, r := range w.snap.Running {
			free[r.Node].Sub(r.Job.Requests)
		}
		byName := map[string]*flotilla.Node{}
		for _, n := range w.snap.Nodes {
			byName[n.Name] = n
		}
		avoided := 0
		for _, a := range res.Scheduled {
			j := a.Job
			if slices.Contains(j.AvoidClusters, byName[a.Node].Cluster) {
				avoided++
				for _, n := range w.snap.Nodes {
					if slices.Contains(j.AvoidClusters, n.Cluster) || n.Unschedulable ||
						!flotilla.SelectorMatches(j.NodeSelector, n.Labels) || !flotilla.TaintsTolerated(n.Taints, j.Tolerations) {
						continue
					}
					if j.Requests.Fits(free[n.Name]) {
						return fmt.Sprintf("seed %d: %s (avoiding %v) placed on %s in %s while %s in %s could hold it",
							seed, j.ID, j.AvoidClusters, a.Node, byName[a.Node].Cluster, n.Name, n.Cluster)
					}
				}
			}
			free[a.Node].Sub(j.Requests)
		}
		return ""
	}, gen.UInt64()))
	p.TestingRun(t)
}

func avoidingNodes(nodes ...string) func(*flotilla.Job) {
	return func(j *flotilla.Job) { j.AvoidNodes = nodes }
}

// Job.AvoidNodes: a job goes to a node it avoids only when no other node
// can take it; a gang avoids every node any member avoids, and goes there
// only when it fits nowhere else.
func TestJobAvoidingANodeGoesElsewhereWhenAnotherNodeCanTakeIt(t *testing.T) {
	cases := []struct {
		name  string
		setup func(w *world)
		want  string
	}{
		{"another node has room", nil, "n2"},
		{"the other node is full", func(w *world) { w.run("A", "8", "n2", nonPreemptible) }, "n1"},
		{"the other node is cordoned", func(w *world) { w.nodes[1].Unschedulable = true }, "n1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t)
			clusterNode(w, "n1", "", "4", nil) // the tighter fit
			clusterNode(w, "n2", "", "8", nil)
			w.addQueue("A", 1)
			w.addQueue("B", 1)
			if tc.setup != nil {
				tc.setup(w)
			}
			j := w.submit("B", 1, "3", avoidingNodes("n1"))[0]
			assert.Equal(t, tc.want, placedOn(w.schedule())[j.ID])
		})
	}
	// Without the preference the tighter fit wins: the case above is not
	// smallest-fit's own choice.
	w := newWorld(t)
	clusterNode(w, "n1", "", "4", nil)
	clusterNode(w, "n2", "", "8", nil)
	w.addQueue("B", 1)
	j := w.submit("B", 1, "3")[0]
	assert.Equal(t, "n1", placedOn(w.schedule())[j.ID])
}

func TestGangKeepsOffANodeAMemberAvoids(t *testing.T) {
	for _, tc := range []struct {
		name  string
		nodes []string // 4-cpu nodes
		want  []string // where the two 3-cpu members may go
	}{
		{"two other nodes", []string{"n1", "n2", "n3"}, []string{"n2", "n3"}},
		{"only one other node: the avoided one is used", []string{"n1", "n2"}, []string{"n1", "n2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t)
			for _, n := range tc.nodes {
				clusterNode(w, n, "", "4", nil)
			}
			w.addQueue("B", 1)
			k := 0
			first := func(j *flotilla.Job) {
				if k == 0 {
					j.AvoidNodes = []string{"n1"}
				}
				k++
			}
			gang := w.submit("B", 2, "3", inGang("g", 2, ""), first)
			on := placedOn(w.schedule())
			var got []string
			for _, j := range gang {
				got = append(got, on[j.ID])
			}
			slices.Sort(got)
			assert.Equal(t, tc.want, got)
		})
	}
}

// Job.NodeAffinity: a required node affinity confines the job to matching
// nodes, and a job no node matches says which filter held it back.
func TestJobWithRequiredNodeAffinityGoesOnlyToMatchingNodes(t *testing.T) {
	w := newWorld(t)
	clusterNode(w, "a100-1", "", "4", map[string]string{"gpu": "a100"})
	clusterNode(w, "h100-1", "", "8", map[string]string{"gpu": "h100"})
	clusterNode(w, "cpu-1", "", "8", nil)
	w.addQueue("B", 1)
	in := func(values ...string) func(*flotilla.Job) {
		return func(j *flotilla.Job) {
			j.NodeAffinity = []flotilla.NodeSelectorTerm{{MatchExpressions: []flotilla.NodeSelectorRequirement{
				{Key: "gpu", Operator: flotilla.NodeSelectorIn, Values: values}}}}
		}
	}
	notGPU := func(j *flotilla.Job) {
		j.NodeAffinity = []flotilla.NodeSelectorTerm{{MatchExpressions: []flotilla.NodeSelectorRequirement{
			{Key: "gpu", Operator: flotilla.NodeSelectorDoesNotExist}}}}
	}
	h := w.submit("B", 1, "3", in("h100"))[0]
	cpu := w.submit("B", 1, "3", notGPU)[0]
	none := w.submit("B", 1, "3", in("mi300"))[0]
	res := w.schedule()
	on := placedOn(res)
	assert.Equal(t, "h100-1", on[h.ID], "smallest fit alone would take a100-1")
	assert.Equal(t, "cpu-1", on[cpu.ID])
	require.NotContains(t, on, none.ID)
	var why scheduler.Reason
	for _, u := range res.UnscheduledJobs {
		if u.Job.ID == none.ID {
			why = u.Reason
		}
	}
	assert.Equal(t, scheduler.ReasonNeverFits, why.Code)
	assert.Contains(t, why.Message, "node affinity", why.String())
}
