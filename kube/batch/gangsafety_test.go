package batch

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/flotilla-sched/flotilla/kube/kubeconv"
)

func gangOf3(p *corev1.Pod) {
	p.Annotations = map[string]string{kubeconv.AnnotationGangID: "g", kubeconv.AnnotationGangCardinality: "3"}
}

func onNode(n string) func(*corev1.Pod) { return func(p *corev1.Pod) { p.Spec.NodeName = n } }

func (f *fixture) evicted() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, e := range f.evicts {
		out = append(out, e.Name)
	}
	return out
}

// A gang left partly bound whose remaining members no longer fit (room
// for one of the two) is rolled back: its bound member is evicted, and
// neither pending member is bound alone, then or in the next cycle
// (they wait for the whole gang again).
func TestPartlyBoundGangWhoseRestNoLongerFitsIsRolledBack(t *testing.T) {
	f := newFixture(t, testNode("n1", "2"),
		testPod("g-0", "1", both(gangOf3, onNode("n1"))),
		testPod("g-1", "1", gangOf3), testPod("g-2", "1", gangOf3))
	rep := f.cycle()
	if rep.RolledBack != 1 || rep.Bound != 0 || !slices.Equal(f.evicted(), []string{"g-0"}) {
		t.Fatalf("rolled back %d, bound %d, evicted %v: want g-0 evicted, nothing bound", rep.RolledBack, rep.Bound, f.evicted())
	}
	rep = f.cycle()
	if rep.Bound != 0 || rep.RolledBack != 0 || len(f.evicted()) != 1 {
		t.Fatalf("second cycle bound %d, rolled back %d, evicted %v: want the pending members waiting whole", rep.Bound, rep.RolledBack, f.evicted())
	}
	for _, u := range rep.Result.UnscheduledJobs {
		if u.Job.Gang.ID != "default/g" || u.Job.Gang.Cardinality != 3 {
			t.Fatalf("job %s queued in gang %+v: want the whole gang g of 3 again", u.Job.ID, u.Job.Gang)
		}
	}
}

// The rest of a partly bound gang is placed all or none: with room for
// both, both are bound in one cycle, as one unit.
func TestPartlyBoundGangsRestIsBoundAsOneUnit(t *testing.T) {
	f := newFixture(t, testNode("n1", "3"),
		testPod("g-0", "1", both(gangOf3, onNode("n1"))),
		testPod("g-1", "1", gangOf3), testPod("g-2", "1", gangOf3))
	rep := f.cycle()
	if rep.Bound != 2 || rep.RolledBack != 0 {
		t.Fatalf("bound %d, rolled back %d: want the rest bound", rep.Bound, rep.RolledBack)
	}
	for _, a := range rep.Result.Scheduled {
		if a.Job.Gang.ID != restPrefix+"default/g" || a.Job.Gang.Cardinality != 2 {
			t.Fatalf("job %s placed in gang %+v: want the rest's gang of 2", a.Job.ID, a.Job.Gang)
		}
	}
}

// A partly bound gang with a member on a node whose object is gone is
// rolled back, even though its pending members would fit elsewhere.
func TestPartlyBoundGangOnAGoneNodeIsRolledBack(t *testing.T) {
	f := newFixture(t, testNode("n1", "8"),
		testPod("g-0", "1", both(gangOf3, onNode("gone"))),
		testPod("g-1", "1", gangOf3), testPod("g-2", "1", gangOf3))
	rep := f.cycle()
	if rep.RolledBack != 1 || rep.Bound != 0 || !slices.Equal(f.evicted(), []string{"g-0"}) {
		t.Fatalf("rolled back %d, bound %d, evicted %v: want g-0 evicted, nothing bound", rep.RolledBack, rep.Bound, f.evicted())
	}
}

// A pending member of a partly bound gang deleted before the gang is
// finished: the next cycle rolls the gang back instead of binding the
// one left.
func TestPartlyBoundGangWithADeletedPendingMemberIsRolledBack(t *testing.T) {
	f := newFixture(t, testNode("n1", "8"),
		testPod("g-0", "1", both(gangOf3, onNode("n1"))),
		testPod("g-1", "1", gangOf3), testPod("g-2", "1", gangOf3))
	f.s.mu.Lock()
	if err := f.s.rebuildClasses(); err != nil { // the store, as the first cycle builds it
		t.Fatal(err)
	}
	f.s.mu.Unlock()
	if err := f.cs.CoreV1().Pods("default").Delete(context.Background(), "g-2", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	f.until("g-2 gone", func(st *state) bool { return st.pods["default/g-2"] == nil })
	rep := f.cycle()
	if rep.RolledBack != 1 || rep.Bound != 0 || !slices.Equal(f.evicted(), []string{"g-0"}) {
		t.Fatalf("rolled back %d, bound %d, evicted %v: want g-0 evicted, g-1 not bound", rep.RolledBack, rep.Bound, f.evicted())
	}
}

// A failed eviction leaves the member running: the gang is rolled back
// again by the next cycle.
func TestRollbackWhoseEvictionFailsIsTriedAgain(t *testing.T) {
	f := newFixture(t, testNode("n1", "2"),
		testPod("g-0", "1", both(gangOf3, onNode("n1"))),
		testPod("g-1", "1", gangOf3), testPod("g-2", "1", gangOf3))
	f.refuse["g-0"] = budgetRefusal(0)
	if rep := f.cycle(); rep.RolledBack != 1 || rep.EvictFailed != 1 {
		t.Fatalf("rolled back %d, eviction failures %d: want one refused", rep.RolledBack, rep.EvictFailed)
	}
	delete(f.refuse, "g-0")
	f.clock.Add(int64(DefaultRefusalRetry.Seconds()) + 1)
	if rep := f.cycle(); rep.RolledBack != 1 || rep.Evicted != 1 {
		t.Fatalf("rolled back %d, evicted %d: want the rollback made again", rep.RolledBack, rep.Evicted)
	}
}

// A rollback whose eviction a PodDisruptionBudget refused is not tried
// again before the refusal's retry time (10 s without a Retry-After), as
// a preemption's is not: one eviction call, not one per cycle.
func TestRollbackRefusedByABudgetWaitsForItsRetryTime(t *testing.T) {
	f := newFixture(t, testNode("n1", "2"),
		testPod("g-0", "1", both(gangOf3, onNode("n1"))),
		testPod("g-1", "1", gangOf3), testPod("g-2", "1", gangOf3))
	f.refuse["g-0"] = budgetRefusal(0)
	if rep := f.cycle(); rep.RolledBack != 1 || rep.EvictFailed != 1 {
		t.Fatalf("rolled back %d, eviction failures %d: want one refused", rep.RolledBack, rep.EvictFailed)
	}
	for _, at := range []int64{1000, 1009} {
		f.clock.Store(at)
		if rep := f.cycle(); f.evictCalls() != 1 || rep.RolledBack != 0 || rep.EvictDeferred != 1 {
			t.Fatalf("at %d s (refused at 1000): %d eviction calls, rolled back %d, deferred %d: want the refused member left alone",
				at, f.evictCalls(), rep.RolledBack, rep.EvictDeferred)
		}
	}
	delete(f.refuse, "g-0")
	f.clock.Store(1010)
	if rep := f.cycle(); f.evictCalls() != 2 || rep.RolledBack != 1 || rep.Evicted != 1 {
		t.Fatalf("at the retry time: %d eviction calls, rolled back %d, evicted %d: want the rollback made again",
			f.evictCalls(), rep.RolledBack, rep.Evicted)
	}
}

// The rest of a partly bound gang that waited for preempted pods is
// bound by the cycle that sees them gone, as its own gang: not queued
// for that cycle as members of the whole gang, which lacks its running
// member and is incomplete.
func TestRestOfAGangWaitingForPreemptionIsBoundWhenTheVictimIsGone(t *testing.T) {
	low := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "low"}, Value: 10}
	high := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "high"}, Value: 1000}
	hi := func(p *corev1.Pod) { p.Spec.PriorityClassName = "high" }
	f := newFixture(t, low, high, testNode("n1", "3"),
		testPod("g-0", "1", both(gangOf3, hi, onNode("n1"))),
		testPod("g-1", "1", both(gangOf3, hi)), testPod("g-2", "1", both(gangOf3, hi)),
		testPod("victim", "2", func(p *corev1.Pod) { p.Spec.PriorityClassName = "low"; p.Spec.NodeName = "n1" }))
	if rep := f.cycle(); rep.Waiting != 2 || rep.Evicted != 1 || rep.RolledBack != 0 {
		t.Fatalf("waiting %d, evicted %d, rolled back %d: want the rest waiting for the victim", rep.Waiting, rep.Evicted, rep.RolledBack)
	}
	if err := f.cs.CoreV1().Pods("default").Delete(context.Background(), "victim", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	f.until("victim gone", func(st *state) bool { return st.pods["default/victim"] == nil })
	if rep := f.cycle(); rep.Bound != 2 || rep.RolledBack != 0 {
		t.Fatalf("bound %d, rolled back %d (unscheduled %+v): want the rest bound", rep.Bound, rep.RolledBack, rep.Result.UnscheduledJobs)
	}
}

// The rest of a partly bound gang g is never mixed with a gang whose own
// ID is "g#rest" (the rest's ID was g's + "#rest"): each is placed as its
// own gang of 2.
func TestRestOfAGangNeverJoinsAGangNamedLikeIt(t *testing.T) {
	other := func(p *corev1.Pod) {
		p.Annotations = map[string]string{kubeconv.AnnotationGangID: "g#rest", kubeconv.AnnotationGangCardinality: "2"}
	}
	f := newFixture(t, testNode("n1", "8"),
		testPod("g-0", "1", both(gangOf3, onNode("n1"))),
		testPod("g-1", "1", gangOf3), testPod("g-2", "1", gangOf3),
		testPod("h-0", "1", other), testPod("h-1", "1", other))
	rep := f.cycle()
	if rep.Bound != 4 || rep.RolledBack != 0 {
		t.Fatalf("bound %d, rolled back %d (unscheduled %+v): want g's rest and gang g#rest bound", rep.Bound, rep.RolledBack, rep.Result.UnscheduledJobs)
	}
	gangs := map[string]string{}
	for _, a := range rep.Result.Scheduled {
		gangs[a.Job.ID] = a.Job.Gang.ID
	}
	if gangs["default/g-1"] == gangs["default/h-0"] {
		t.Fatalf("gangs %v: the rest of g joined gang g#rest", gangs)
	}
}

const rayCluster1 = `
apiVersion: ray.io/v1
kind: RayCluster
metadata: {name: rc, namespace: default, uid: u-rc}
spec:
  headGroupSpec: {template: {}}
  workerGroupSpecs: [{groupName: w, minReplicas: 1, replicas: 2, maxReplicas: 4}]`

// A RayCluster's gang is its head and minReplicas workers; a worker
// beyond them (replicas 2 > minReplicas 1) is a lone job of its job set,
// not a member that makes the gang larger than its cardinality.
func TestRayWorkersBeyondMinReplicasAreLoneJobs(t *testing.T) {
	owned := ownedBy("ray.io/v1", "RayCluster", "rc", "u-rc")
	head := func(p *corev1.Pod) { p.Labels = map[string]string{labelRayNodeType: "head"} }
	// The head is the newest: it is a member all the same.
	older := func(s int64) func(*corev1.Pod) {
		return func(p *corev1.Pod) { p.CreationTimestamp = metav1.Unix(s, 0) }
	}
	f := newOwnerFixture(t, []runtime.Object{uobj(t, rayCluster1)}, testNode("n1", "8"),
		testPod("rc-w-a", "1", both(owned, older(10))), testPod("rc-w-b", "1", both(owned, older(20))),
		testPod("rc-head", "1", both(owned, head, older(30))))
	rep := f.cycle()
	if rep.Bound != 3 {
		t.Fatalf("bound %d (unscheduled %+v): want head, worker and the extra worker", rep.Bound, rep.Result.UnscheduledJobs)
	}
	gangs := map[string]string{}
	for _, a := range rep.Result.Scheduled {
		gangs[a.Job.ID] = a.Job.Gang.ID
		if a.Job.JobSet != "default/RayCluster/rc" {
			t.Fatalf("job %s in set %q, want the RayCluster's", a.Job.ID, a.Job.JobSet)
		}
	}
	g := "default/RayCluster/rc@u-rc"
	if gangs["default/rc-head"] != g || gangs["default/rc-w-a"] != g || gangs["default/rc-w-b"] != "" {
		t.Fatalf("gangs %v: want the head and the oldest worker in %s, the other alone", gangs, g)
	}
}

// BenchmarkSettleGangs: the per-cycle regrouping over 10,000 pending pods
// in 1,000 gangs of 10, none running (the state of BenchmarkLiveThousand-
// JobsOfTenPods before its first bind): what settleGangs adds to a cycle.
func BenchmarkSettleGangs(b *testing.B) {
	s, err := New(fake.NewClientset(), Config{})
	if err != nil {
		b.Fatal(err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.rebuildClasses(); err != nil {
		b.Fatal(err)
	}
	for g := range 1000 {
		for i := range 10 {
			s.sync(testPod(fmt.Sprintf("g%d-%d", g, i), "1", func(p *corev1.Pod) {
				p.Annotations = map[string]string{kubeconv.AnnotationGangID: fmt.Sprint("g", g), kubeconv.AnnotationGangCardinality: "10"}
			}))
		}
	}
	if n := s.st.store.Len(); n != 10000 {
		b.Fatalf("%d queued, want 10000", n)
	}
	b.ResetTimer()
	for range b.N {
		if ev, n := s.settleGangs(time.Unix(0, 0)); len(ev) != 0 || n != 0 {
			b.Fatalf("rolled back %d", n)
		}
	}
}

// The rest of a partly bound gang with a node uniformity label goes to
// the domain its running members share (zone a's n3, though zone c has
// more room); when its running members' nodes disagree (zones a and b),
// no domain holds the whole gang, and it is rolled back rather than
// finished in a third.
func TestRestOfAUniformGangStaysInItsRunningMembersDomain(t *testing.T) {
	zoned := func(name, cpu, zone string) *corev1.Node {
		n := testNode(name, cpu)
		n.Labels = map[string]string{"zone": zone}
		return n
	}
	gang := func(p *corev1.Pod) {
		p.Annotations = map[string]string{kubeconv.AnnotationGangID: "g", kubeconv.AnnotationGangCardinality: "4",
			kubeconv.AnnotationGangNodeUniformityLabel: "zone"}
	}
	for _, tc := range []struct {
		name       string
		g1On       string
		rolledBack int
		boundOn    string
	}{
		{"running members agree: the rest in their zone", "n1", 0, "n3"},
		{"running members disagree: rolled back", "n2", 1, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, zoned("n1", "2", "a"), zoned("n2", "1", "b"), zoned("n3", "2", "a"), zoned("n4", "8", "c"),
				testPod("g-0", "1", both(gang, onNode("n1"))), testPod("g-1", "1", both(gang, onNode(tc.g1On))),
				testPod("g-2", "1", gang), testPod("g-3", "1", gang))
			rep := f.cycle()
			if rep.RolledBack != tc.rolledBack {
				t.Fatalf("rolled back %d, want %d (bound %v)", rep.RolledBack, tc.rolledBack, f.binds)
			}
			for _, b := range f.binds {
				if !strings.HasSuffix(b, "@"+tc.boundOn) || tc.boundOn == "" {
					t.Fatalf("bound %v: want the rest on %q only", f.binds, tc.boundOn)
				}
			}
			if tc.boundOn != "" && len(f.binds) != 2 {
				t.Fatalf("bound %v: want the rest of 2 bound", f.binds)
			}
		})
	}
}

// An Indexed Job of 4 whose 3 members succeeded and whose 4th failed:
// the Job controller's replacement for the 4th is part of the gang that
// ran (as Kueue counts an admitted workload's replacement pods), so it is
// scheduled alone, not held waiting for 4 pending pods that will never
// exist. Another Job's succeeded pods do not count for it.
func TestReplacementOfAJobWhoseOtherMembersSucceededIsScheduledAlone(t *testing.T) {
	owned := ownedBy("batch/v1", "Job", "train", "u-train")
	done := func(p *corev1.Pod) { p.Spec.NodeName, p.Status.Phase = "n1", corev1.PodSucceeded }
	f := newOwnerFixture(t, []runtime.Object{uobj(t, indexedJob4)}, testNode("n1", "8"),
		testPod("train-0", "1", both(owned, done)), testPod("train-1", "1", both(owned, done)),
		testPod("train-3", "1", both(owned, done)), testPod("train-2-again", "1", owned))
	rep := f.cycle()
	if rep.Bound != 1 || rep.Result.Scheduled[0].Job.Gang.ID != "" {
		t.Fatalf("bound %d (unscheduled %+v): want the replacement bound alone", rep.Bound, rep.Result.UnscheduledJobs)
	}
	// Another Job's succeeded pods are none of train's: its lone pending
	// pod waits for its gang of 4.
	other := ownedBy("batch/v1", "Job", "other", "u-other")
	g := newOwnerFixture(t, []runtime.Object{uobj(t, indexedJob4)}, testNode("n1", "8"),
		testPod("other-0", "1", both(other, done)), testPod("other-1", "1", both(other, done)),
		testPod("other-2", "1", both(other, done)), testPod("train-0", "1", owned))
	if rep := g.cycle(); rep.Bound != 0 {
		t.Fatalf("bound %d: another Job's succeeded pods counted for train", rep.Bound)
	}
}

// A real Job controller replaces the failed member of an Indexed Job of
// 4 whose other 3 members succeeded: the replacement is bound (alone),
// not held waiting for 4 pending pods.
func TestLiveReplacementOfAJobWhoseOtherMembersSucceededIsBound(t *testing.T) {
	l := newLive(t)
	l.c.Controllers(t, "job")
	l.node("n1", "4")
	s := l.scheduler(Config{Dynamic: l.dynamic()})
	if _, err := l.cs.BatchV1().Jobs("default").Create(l.ctx, jobOf("train", 4, 4, true, "1"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	bound := func() int {
		n := 0
		for _, p := range l.podsOfJob("train") {
			if p.Spec.NodeName != "" && p.Status.Phase == corev1.PodPending {
				n++
			}
		}
		return n
	}
	l.cycleCollect(s, "the gang of 4 bound", func() bool { return bound() == 4 }, nil)
	pods := l.podsOfJob("train")
	for i := range pods {
		p := &pods[i]
		p.Status.Phase = corev1.PodSucceeded
		if i == 0 {
			p.Status.Phase = corev1.PodFailed
		}
		if _, err := l.cs.CoreV1().Pods("default").UpdateStatus(l.ctx, p, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	jobs := l.cycleCollect(s, "the replacement of the failed member bound", func() bool { return bound() == 1 }, nil)
	if len(jobs) != 1 {
		t.Fatalf("scheduled %d jobs, want the replacement alone", len(jobs))
	}
	for _, j := range jobs {
		if j.Gang.ID != "" {
			t.Fatalf("replacement %s in gang %q, want it alone", j.ID, j.Gang.ID)
		}
	}
}
