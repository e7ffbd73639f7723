package server

import (
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/backend"
	"github.com/flotilla-sched/flotilla/events"
	"github.com/flotilla-sched/flotilla/scheduler"
)

// snapshotNow takes the snapshot a cycle would take now.
func (w *world) snapshotNow() *scheduler.Snapshot {
	w.srv.mu.Lock()
	defer w.srv.mu.Unlock()
	return w.srv.st.snapshot(backend.DefaultPool, w.srv.Now())
}

// runningIDs lists a snapshot's running jobs as node:job.
func runningIDs(snap *scheduler.Snapshot) []string {
	var out []string
	for _, r := range snap.Running {
		out = append(out, r.Node+":"+r.Job.ID)
	}
	return out
}

// clusterRuns checks that a snapshot lists clusters in name order and
// returns each cluster's running jobs, sorted (within a cluster the order
// is the one the cluster keeps: a cycle's decisions do not depend on it).
func clusterRuns(t *testing.T, snap *scheduler.Snapshot) [][]string {
	t.Helper()
	var out [][]string
	last := ""
	for _, id := range runningIDs(snap) {
		cl, _, _ := strings.Cut(id, "/")
		if cl != last {
			require.Less(t, last, cl, "clusters out of name order")
			out, last = append(out, nil), cl
		}
		out[len(out)-1] = append(out[len(out)-1], id)
	}
	for _, ids := range out {
		slices.Sort(ids)
	}
	return out
}

func TestSnapshotListsRunningJobsByClusterNameWhateverTheOrderOfTheirLeases(t *testing.T) {
	w := newWorld(t)
	w.queue("A")
	// c2 reports first and takes job-1; c1 then takes job-2 and job-3.
	w.report(Report{Cluster: "c2", Nodes: nodesOf("c2", 1, 1)})
	w.submit("A", "s1", cpuJobs(1, "1"))
	require.Equal(t, 1, w.cycle().Leased)
	w.report(Report{Cluster: "c1", Nodes: nodesOf("c1", 1, 4)})
	w.submit("A", "s1", cpuJobs(2, "1"))
	require.Equal(t, 2, w.cycle().Leased)
	// job-2 ends, and job-4 is leased after it: c1 holds job-3 and job-4;
	// job-10 then joins them.
	r1 := w.report(Report{Cluster: "c1"})
	require.Len(t, r1.Leases, 2)
	jobs := held(PhaseRunning, r1.Leases)
	jobs[0].Phase = PhaseSucceeded // job-2
	w.report(Report{Cluster: "c1", Jobs: jobs})
	w.submit("A", "s1", cpuJobs(1, "1"))
	require.Equal(t, 1, w.cycle().Leased)
	require.Equal(t, [][]string{{"c1/c1-n0:job-3", "c1/c1-n0:job-4"}, {"c2/c2-n0:job-1"}}, clusterRuns(t, w.snapshotNow()))
	for range 5 { // ids job-5 … job-9 go unused: the next job is job-10
		w.ids.next()
	}
	w.submit("A", "s1", cpuJobs(1, "1"))
	require.Equal(t, 1, w.cycle().Leased)
	require.Equal(t, [][]string{{"c1/c1-n0:job-10", "c1/c1-n0:job-3", "c1/c1-n0:job-4"}, {"c2/c2-n0:job-1"}}, clusterRuns(t, w.snapshotNow()))
}

// The snapshot hints each running job's node by its index in
// Snapshot.Nodes (Running.NodeIndex, from 1), so that Schedule need not
// look every job's node up by name.
func TestSnapshotRunningJobsHintTheIndexOfTheirNode(t *testing.T) {
	w := newWorld(t)
	w.queue("A")
	w.report(Report{Cluster: "c2", Nodes: nodesOf("c2", 3, 1)})
	w.report(Report{Cluster: "c1", Nodes: nodesOf("c1", 2, 1)})
	w.submit("A", "s1", cpuJobs(5, "1"))
	require.Equal(t, 5, w.cycle().Leased)
	snap := w.snapshotNow()
	require.Len(t, snap.Running, 5)
	for _, r := range snap.Running {
		require.Truef(t, r.NodeIndex > 0 && r.NodeIndex <= len(snap.Nodes), "%s on %s: hint %d of %d nodes", r.Job.ID, r.Node, r.NodeIndex, len(snap.Nodes))
		require.Equal(t, r.Node, snap.Nodes[r.NodeIndex-1].Name, r.Job.ID)
	}
}

func TestLeaseOnANodeItsClusterNoLongerReportsLeavesTheSnapshotUntilTheNodeIsBack(t *testing.T) {
	w := newWorld(t)
	w.queue("A")
	w.report(Report{Cluster: "c1", Nodes: nodesOf("c1", 2, 1)})
	w.submit("A", "s1", cpuJobs(2, "1"))
	require.Equal(t, 2, w.cycle().Leased)
	reply := w.report(Report{Cluster: "c1"})
	require.Len(t, reply.Leases, 2)
	all := runningIDs(w.snapshotNow())
	require.Len(t, all, 2)
	gone := reply.Leases[1].Node // its node leaves the cluster
	var kept []string
	for _, r := range all {
		if !strings.HasPrefix(r, "c1/"+gone+":") {
			kept = append(kept, r)
		}
	}
	require.Len(t, kept, 1)
	nodes := nodesOf("c1", 2, 1)
	nodes = slices.DeleteFunc(nodes, func(n flotilla.Node) bool { return n.Name == gone })
	w.report(Report{Cluster: "c1", Nodes: nodes, Jobs: held(PhaseRunning, reply.Leases)})
	require.Equal(t, kept, runningIDs(w.snapshotNow()))
	w.report(Report{Cluster: "c1", Nodes: nodesOf("c1", 2, 1), Jobs: held(PhaseRunning, reply.Leases)})
	require.Equal(t, all, runningIDs(w.snapshotNow()))
}

// TestClusterLiveListMatchesTheSetOfLiveJobsInIDOrder checks a cluster's
// live list against a map of the jobs leased to it: through any sequence
// of leases, lease ends, leases again of jobs whose lease ended,
// compactions, sorts and new node lists (nodes leaving, coming back,
// reordered), place finds every live job, jobs yields exactly
// the live jobs, after sortLive the list is them in id order, ids holds
// the id of every job of live[:sorted] at its place and stays sorted
// there (holes keep the id that left them), which reports match against,
// and run, marks and used mirror the live jobs.
func TestClusterLiveListMatchesTheSetOfLiveJobsInIDOrder(t *testing.T) {
	runProperty(t, "cluster live list = live jobs, sorted by id after sortLive", 300, func(seed int64) string {
		rng := rand.New(rand.NewPCG(uint64(seed), 7))
		// Two nodes: jobs on "n" request their number in the op
		// sequence, "m" is not reported (node index -1).
		c := &cluster{name: "c", index: map[string]int{"n": 0, "o": 1}, snap: []*flotilla.Node{{Name: "c/n"}, {Name: "c/o"}}}
		byName := map[string]nodeRef{} // the snapshot names setNodes keeps
		oracle := map[string]*job{}
		renewed := map[*job]time.Time{} // each live job's renewal, distinct
		var ended []*job
		next := 0
		for op := range 400 + rng.IntN(400) {
			switch k := rng.IntN(10); {
			case k < 5:
				next++
				id := "j" + strconv.Itoa(rng.IntN(1_000_000)) + "-" + strconv.Itoa(next)
				j := newJob(backend.JobSpec{Job: &flotilla.Job{ID: id, Requests: flotilla.Resources{int64(next)}}})
				renewed[j] = time.Unix(int64(op), 0)
				c.addLive(j, []string{"n", "o", "m"}[rng.IntN(3)], time.Time{}, renewed[j], time.Minute)
				oracle[id] = j
			case k < 8 && len(oracle) > 0:
				ids := slices.Sorted(mapKeys(oracle))
				id := ids[rng.IntN(len(ids))]
				c.removeLive(oracle[id])
				ended = append(ended, oracle[id])
				delete(oracle, id)
			case k == 8 && len(ended) > 0 && rng.IntN(2) == 0:
				// A job whose lease ended is leased here again.
				i := rng.IntN(len(ended))
				j := ended[i]
				ended = slices.Delete(ended, i, i+1)
				renewed[j] = time.Unix(int64(op), 0)
				c.addLive(j, "n", time.Time{}, renewed[j], time.Minute)
				oracle[j.id()] = j
			case k == 8:
				c.compact()
			case k == 9 && rng.IntN(3) == 0:
				// The executor reports another set of nodes: some
				// leave, some come back, in another order.
				names := slices.Clone([]string{"n", "o", "m"})
				rng.Shuffle(len(names), func(a, b int) { names[a], names[b] = names[b], names[a] })
				var nodes []flotilla.Node
				for _, name := range names[:rng.IntN(4)] {
					nodes = append(nodes, flotilla.Node{Name: name})
				}
				c.setNodes(byName, nodes)
			default:
				c.sortLive()
				var got []string
				for _, j := range c.live {
					got = append(got, j.id())
				}
				if want := slices.Sorted(mapKeys(oracle)); !slices.Equal(got, want) {
					return "op " + strconv.Itoa(op) + ": sorted live list " + strings.Join(got, ",") + ", want " + strings.Join(want, ",")
				}
			}
			n := 0
			for j := range c.jobs() {
				n++
				if oracle[j.id()] != j {
					return "op " + strconv.Itoa(op) + ": jobs yields " + j.id() + ", which is not live"
				}
			}
			if n != len(oracle) {
				return "op " + strconv.Itoa(op) + ": jobs yields " + strconv.Itoa(n) + " jobs, want " + strconv.Itoa(len(oracle))
			}
			for id, j := range oracle {
				if p := c.place(j); p < 0 || p >= len(c.live) || c.live[p] != j {
					return "op " + strconv.Itoa(op) + ": " + id + " is not at its place " + strconv.Itoa(p)
				}
			}
			if len(c.ids) != len(c.live) {
				return "op " + strconv.Itoa(op) + ": " + strconv.Itoa(len(c.ids)) + " ids for " + strconv.Itoa(len(c.live)) + " live places"
			}
			// run mirrors live.
			if len(c.run) != len(c.live) {
				return "op " + strconv.Itoa(op) + ": " + strconv.Itoa(len(c.run)) + " run entries for " + strconv.Itoa(len(c.live)) + " live places"
			}
			for p, j := range c.live {
				r := c.run[p]
				switch {
				case j == nil && r != (scheduler.Running{}):
					return "op " + strconv.Itoa(op) + ": run[" + strconv.Itoa(p) + "] set at a hole"
				case j == nil:
				case r.Job != j.sched() || r.NodeIndex != int(j.lease.nodeIdx) || r.NodeIndex >= 0 && r.Node != c.snap[r.NodeIndex].Name:
					return "op " + strconv.Itoa(op) + ": run[" + strconv.Itoa(p) + "] is not " + j.id() + "'s entry"
				}
			}
			// marks mirror live: each lease's at its place, zero at the
			// holes.
			if len(c.marks) != len(c.live) {
				return "op " + strconv.Itoa(op) + ": " + strconv.Itoa(len(c.marks)) + " marks for " + strconv.Itoa(len(c.live)) + " live places"
			}
			for p, j := range c.live {
				if m := c.marks[p]; j == nil && m != (leaseMark{}) || j != nil && !m.renewed.Equal(renewed[j]) {
					return "op " + strconv.Itoa(op) + ": marks[" + strconv.Itoa(p) + "] is not the mark of the job there"
				}
			}
			for p, j := range c.live[:c.sorted] {
				if j != nil && c.ids[p] != j.id() {
					return "op " + strconv.Itoa(op) + ": ids[" + strconv.Itoa(p) + "] is " + strconv.Quote(c.ids[p])
				}
			}
			if !slices.IsSorted(c.ids[:c.sorted]) || slices.ContainsFunc(c.ids[c.sorted:], func(id string) bool { return id != "" }) {
				return "op " + strconv.Itoa(op) + ": ids " + strings.Join(c.ids, ",") + " not sorted up to " + strconv.Itoa(c.sorted) + " and empty after"
			}
		}
		return ""
	})
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

func TestLeaseWithAnEarlierDeadlineThanTheClustersOthersFailsOnTime(t *testing.T) {
	w := newWorld(t)
	w.queue("A")
	w.report(Report{Cluster: "c1", Nodes: nodesOf("c1", 1, 4)})
	long := JobTemplate{Requests: map[string]string{"cpu": "1"}, ActiveDeadline: "1h"}
	w.submit("A", "s1", long)
	w.cycle()
	ls := w.report(Report{Cluster: "c1"}).Leases
	w.clock.Advance(time.Second)
	w.cycle() // nothing due for a while on c1
	short := JobTemplate{Requests: map[string]string{"cpu": "1"}, ActiveDeadline: "5s"}
	ids := w.submit("A", "s1", short)
	require.Equal(t, 1, w.cycle().Leased)
	ls = append(ls, w.report(Report{Cluster: "c1", Jobs: held(PhaseRunning, ls)}).Leases...)
	require.Len(t, ls, 2)
	for range 6 {
		w.clock.Advance(time.Second)
		w.report(Report{Cluster: "c1", Jobs: held(PhaseRunning, ls)})
		w.cycle()
	}
	st, err := w.srv.Status(w.ctx, ids[0])
	require.NoError(t, err)
	require.Equal(t, events.FailedState, st[0].State)
	require.Contains(t, st[0].Reason, "deadline exceeded")
	require.Equal(t, events.RunningState, w.state(ls[0].Job.ID))
}

func TestLeaseNotRenewedExpiresOneLeaseTimeoutAfterItsLastRenewalWhileOthersAreRenewed(t *testing.T) {
	w := newWorld(t)
	w.queue("A")
	w.report(Report{Cluster: "c1", Nodes: nodesOf("c1", 1, 4)})
	w.submit("A", "s1", cpuJobs(2, "1"))
	w.cycle()
	ls := w.report(Report{Cluster: "c1"}).Leases
	require.Len(t, ls, 2)
	expired := 0
	for i := range 40 { // the executor lists only the first lease from now on
		w.clock.Advance(time.Second)
		w.report(Report{Cluster: "c1", Jobs: held(PhaseRunning, ls[:1])})
		rep := w.cycle()
		if rep.Expired > 0 {
			require.Equal(t, 29, i, "expired %s after the last renewal", time.Duration(i+1)*time.Second)
		}
		expired += rep.Expired
	}
	require.Equal(t, 1, expired)
	require.Equal(t, events.RunningState, w.state(ls[0].Job.ID))
}
