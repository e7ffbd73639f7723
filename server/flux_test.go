package server

import (
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/events"
	"github.com/flotilla-sched/flotilla/priority"
)

// fluxWorld is a world with Config.Flux over testTree, queue A (bank A),
// a one-hour lease timeout and cluster c1 of one node with cpus cores.
func fluxWorld(t testing.TB, cpus int64, opts ...func(*Config)) *world {
	w := newWorld(t, append([]func(*Config){func(c *Config) {
		c.Flux = &FluxConfig{Tree: testTree(t)}
		c.LeaseTimeout = time.Hour
	}}, opts...)...)
	w.queue("A")
	w.report(Report{Cluster: "c1", Nodes: nodesOf("c1", 1, cpus)})
	return w
}

// submitAs submits n one-cpu jobs to queue A as principal.
func (w *world) submitAs(principal string, n int) []string {
	w.t.Helper()
	ids, err := w.srv.Submit(w.ctx, &SubmitRequest{Queue: "A", JobSet: "s-" + principal, Principal: principal,
		Jobs: []JobTemplate{cpuJobs(n, "1")}})
	require.NoError(w.t, err)
	return ids
}

// runFor keeps c1's leases running for d, reporting and cycling every 10
// minutes, and returns the leases it holds.
func (w *world) runFor(d time.Duration, ls []Lease) []Lease {
	w.t.Helper()
	for range d / (10 * time.Minute) {
		w.clock.Advance(10 * time.Minute)
		ls = append(ls, w.report(Report{Cluster: "c1", Jobs: held(PhaseRunning, ls)}).Leases...)
		w.cycle()
	}
	return ls
}

func (w *world) jobPriority(id string) uint32 {
	w.t.Helper()
	w.srv.mu.Lock()
	defer w.srv.mu.Unlock()
	j := w.srv.st.jobs.get(id)
	require.NotNil(w.t, j, id)
	return j.sched().Priority
}

func leasedIDs(ls []Lease) []string {
	out := make([]string, len(ls))
	for i, l := range ls {
		out[i] = l.Job.ID
	}
	return out
}

func TestFluxHeavyUsersNewJobsGetALowerPriorityAndRunLater(t *testing.T) {
	w := fluxWorld(t, 2)
	w.submitAs("alice", 2)
	w.cycle()
	ls := w.runFor(time.Hour, w.report(Report{Cluster: "c1"}).Leases)
	w.report(Report{Cluster: "c1", Jobs: held(PhaseSucceeded, ls)})
	// alice used 2 cpu for an hour, bob nothing. alice submits first.
	alice := w.submitAs("alice", 2)
	bob := w.submitAs("bob", 2)
	require.Greater(t, w.jobPriority(alice[0]), w.jobPriority(bob[0]), "a heavy user's job has the larger (later) Job.Priority")
	w.cycle()
	require.ElementsMatch(t, bob, leasedIDs(w.report(Report{Cluster: "c1"}).Leases), "the light user's jobs run first")
	require.Equal(t, events.Queued, w.state(alice[0]))
}

func TestFluxReprioritisesQueuedJobsWhenFairShareChanges(t *testing.T) {
	// alice and bob queue jobs with equal priorities; alice then runs for
	// an hour while hers and bob's wait. When room frees up, bob's jobs,
	// submitted later, run before alice's.
	w := fluxWorld(t, 2)
	running := w.submitAs("alice", 2)
	alice := w.submitAs("alice", 2)
	bob := w.submitAs("bob", 2)
	require.Equal(t, w.jobPriority(alice[0]), w.jobPriority(bob[0]))
	w.cycle()
	ls := w.report(Report{Cluster: "c1"}).Leases
	require.ElementsMatch(t, running, leasedIDs(ls))
	ls = w.runFor(time.Hour, ls)
	require.Greater(t, w.jobPriority(alice[0]), w.jobPriority(bob[0]))
	w.report(Report{Cluster: "c1", Jobs: held(PhaseSucceeded, ls)})
	w.cycle()
	require.ElementsMatch(t, bob, leasedIDs(w.report(Report{Cluster: "c1"}).Leases))
}

func TestFluxRequeuedJobKeepsItsCurrentPriority(t *testing.T) {
	// A job re-prioritised while queued, then leased and given back, is
	// queued again with its current priority, not the one it was
	// submitted with.
	w := fluxWorld(t, 1)
	running := w.submitAs("alice", 1)
	later := w.submitAs("alice", 1)
	submitted := w.jobPriority(later[0])
	w.cycle()
	ls := w.runFor(time.Hour, w.report(Report{Cluster: "c1"}).Leases)
	require.Equal(t, running, leasedIDs(ls))
	current := w.jobPriority(later[0])
	require.NotEqual(t, submitted, current)
	w.report(Report{Cluster: "c1", Jobs: held(PhaseSucceeded, ls)})
	w.cycle()
	ls = w.report(Report{Cluster: "c1"}).Leases
	require.Equal(t, later, leasedIDs(ls))
	w.report(Report{Cluster: "c1", Jobs: held(PhaseReturned, ls)})
	require.Equal(t, events.Queued, w.state(later[0]))
	require.Equal(t, current, w.jobPriority(later[0]))
}

func TestFluxSubmitNeedsTheJobsAssociation(t *testing.T) {
	cases := []struct {
		name, queue, principal string
		want                   problem
	}{
		{"a user with no association in the queue's bank", "A", "carol", problem{"principal", "carol", flotilla.ErrUnknownName}},
		{"no principal, and the default user has no association", "A", "", problem{"principal", DefaultFluxUser, flotilla.ErrUnknownName}},
		{"a queue with no bank", "C", "alice", problem{"queue", "C", flotilla.ErrUnknownName}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := fluxWorld(t, 2)
			w.queue("C")
			_, err := w.srv.Submit(w.ctx, &SubmitRequest{Queue: c.queue, JobSet: "s", Principal: c.principal,
				Jobs: []JobTemplate{cpuJobs(3, "1")}})
			requireProblems(t, err, c.want)
			evs, err := w.srv.Events(w.ctx, c.queue, "s", 0, 0)
			require.NoError(t, err)
			require.Empty(t, evs, "a refused submission stores nothing")
		})
	}
}

func TestFluxQueueMapsToTheConfiguredBankAndTheDefaultUser(t *testing.T) {
	w := fluxWorld(t, 2, func(c *Config) {
		c.Flux.Banks = map[string]string{"C": "B"}
		c.Flux.DefaultUser = "bob"
	})
	w.queue("C")
	_, err := w.srv.Submit(w.ctx, &SubmitRequest{Queue: "C", JobSet: "s", Jobs: []JobTemplate{cpuJobs(1, "1")}})
	require.NoError(t, err)
	w.cycle()
	ls := w.report(Report{Cluster: "c1"}).Leases
	w.runFor(time.Hour, ls)
	require.NoError(t, w.srv.WithBankTree(func(tree *priority.BankTree) error {
		a, _ := tree.Association("bob", "B")
		require.Positive(t, a.Usage, "charged to bob@B")
		for _, k := range [][2]string{{"bob", "A"}, {"alice", "B"}} {
			a, _ := tree.Association(k[0], k[1])
			require.Zero(t, a.Usage, "%s@%s", k[0], k[1])
		}
		return nil
	}))
}

func TestFluxAssociationUsageIsChargedInCoreSecondsAndSurvivesARestart(t *testing.T) {
	a, b := fluxWorld(t, 2), fluxWorld(t, 2)
	var la []Lease
	for _, w := range []*world{a, b} {
		w.submitAs("alice", 2)
		w.cycle()
		la = w.runFor(30*time.Minute, w.report(Report{Cluster: "c1"}).Leases)
	}
	b.restart(func(c *Config) { c.Flux = &FluxConfig{Tree: testTree(t)} })
	usage := func(w *world) float64 {
		var u float64
		require.NoError(t, w.srv.WithBankTree(func(tree *priority.BankTree) error {
			as, _ := tree.Association("alice", "A")
			u = as.Usage
			return nil
		}))
		return u
	}
	// 2 cores for 30 minutes, half-life one hour.
	requireClose(t, closedForm(2, testNow, a.clock.Now(), a.clock.Now(), time.Hour), usage(a), "alice@A before the restart")
	for _, w := range []*world{a, b} {
		w.runFor(30*time.Minute, la)
	}
	requireClose(t, usage(a), usage(b), "alice@A after the restart")
	requireClose(t, closedForm(2, testNow, a.clock.Now(), a.clock.Now(), time.Hour), usage(b), "alice@A")
}

// BenchmarkFluxReprioritize100kQueuedJobs measures the end-of-cycle flux
// work (charge usage, Recompute, re-prioritise) over 100,000 queued jobs
// of 100 users in one queue: "unchanged" when no fair-share moves (the
// O(groups) path), "reordered" when one user's usage jumps each time, so
// that the ranks of most users shift and most jobs are re-queued.
func BenchmarkFluxReprioritize100kQueuedJobs(b *testing.B) {
	const users, perUser = 100, 1000
	user := func(i int) string { return "user" + strconv.Itoa(i) }
	tree, err := priority.NewBankTree(time.Hour, testNow)
	require.NoError(b, err)
	require.NoError(b, tree.AddBank("A", "", 1, 0))
	for i := range users {
		require.NoError(b, tree.AddAssociation(user(i), "A", 1))
	}
	w := newWorld(b, func(c *Config) { c.Flux = &FluxConfig{Tree: tree} })
	w.queue("A")
	for i := range users {
		_, err := w.srv.Submit(w.ctx, &SubmitRequest{Queue: "A", JobSet: "s", Principal: user(i),
			Jobs: []JobTemplate{cpuJobs(perUser, "1")}})
		require.NoError(b, err)
	}
	s := w.srv
	for _, mode := range []string{"unchanged", "reordered"} {
		b.Run(mode, func(b *testing.B) {
			requeued, k := 0, 0
			for b.Loop() {
				s.mu.Lock()
				if mode == "reordered" {
					k++
					require.NoError(b, tree.AddUsage(user(k%users), "A", float64(k)*1e6, tree.Now()))
				}
				s.st.usage.flux.cycle(s.st.clock.Now(), &s.st.jobs, &s.st.queued)
				requeued += s.st.usage.flux.lastRequeued
				s.mu.Unlock()
			}
			b.ReportMetric(float64(requeued)/float64(b.N), "requeued/op")
		})
	}
}

func TestFluxAGroupsQueuedJobsShareOnePriorityAfterTheTreeChanges(t *testing.T) {
	// The tree changes (a queue priority value); a job submitted since
	// gets the new priority at once, and the next cycle gives it to the
	// jobs of its group that were queued before.
	w := fluxWorld(t, 1)
	w.report(Report{Cluster: "c1", Nodes: []flotilla.Node{}})
	before := w.submitAs("alice", 1)
	require.NoError(t, w.srv.WithBankTree(func(tree *priority.BankTree) error { return tree.SetQueuePriority("A", 3) }))
	after := w.submitAs("alice", 1)
	require.Equal(t, w.jobPriority(before[0])-30000, w.jobPriority(after[0]), "queue priority 3 × weight 10000, lower runs first")
	w.cycle()
	require.Equal(t, w.jobPriority(after[0]), w.jobPriority(before[0]))
}

func TestSubmitJSONAsStoresThePrincipalAndChargesItsAssociation(t *testing.T) {
	w := fluxWorld(t, 2)
	file := []byte(`{"queue": "A", "jobSet": "s", "jobs": [{"count": 2, "requests": {"cpu": "1"}}]}`)
	ids, err := w.srv.SubmitJSONAs(w.ctx, "bob", file)
	require.NoError(t, err)
	r, err := w.be.Job(w.ctx, ids[0])
	require.NoError(t, err)
	require.Equal(t, "bob", r.Spec.Principal)
	_, err = w.srv.SubmitJSONAs(w.ctx, "carol", file)
	requireProblems(t, err, problem{"principal", "carol", flotilla.ErrUnknownName})
	// The file itself cannot name a principal.
	_, err = w.srv.SubmitJSON(w.ctx, []byte(`{"queue": "A", "jobSet": "s", "principal": "bob", "jobs": [{"requests": {"cpu": "1"}}]}`))
	requireProblems(t, err, problem{"principal", "principal", flotilla.ErrUnknownName})
}
