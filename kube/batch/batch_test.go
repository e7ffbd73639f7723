package batch

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"

	"github.com/flotilla-sched/flotilla/kube/kubeconv"
)

func testNode(name, cpu string) *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse("16Gi"),
		}},
	}
}

func testPod(name, cpu string, mod func(*corev1.Pod)) *corev1.Pod {
	grace := int64(17)
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name)},
		Spec: corev1.PodSpec{
			SchedulerName:                 DefaultSchedulerName,
			TerminationGracePeriodSeconds: &grace,
			Containers: []corev1.Container{{Name: "c", Image: "busybox", Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}}}},
		},
	}
	if mod != nil {
		mod(p)
	}
	return p
}

// fixture is a fake clientset whose binding subresource sets the pod's
// spec.nodeName (as the apiserver does) unless lag is set, whose eviction
// subresource answers refuse[pod name] (nil: success), and which records
// binds, evictions and status patches. The scheduler's clock is clock
// (Unix seconds, 1000 at first).
type fixture struct {
	t      *testing.T
	cs     *fake.Clientset
	s      *Scheduler
	mu     sync.Mutex
	lag    bool
	failOn map[string]bool
	refuse map[string]error
	binds  []string
	evicts []*policyv1.Eviction
	clock  atomic.Int64
}

func newFixture(t *testing.T, objs ...runtime.Object) *fixture {
	t.Helper()
	return newFixtureConfig(t, nil, objs...)
}

// newFixtureConfig is newFixture with mod applied to the Config before
// the scheduler starts (it may also set up the fixture's clientset).
func newFixtureConfig(t *testing.T, mod func(*fixture, *Config), objs ...runtime.Object) *fixture {
	t.Helper()
	f := &fixture{t: t, cs: fake.NewClientset(objs...), failOn: map[string]bool{}, refuse: map[string]error{}}
	f.clock.Store(1000)
	f.cs.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		ca := a.(k8stesting.CreateAction)
		switch a.GetSubresource() {
		case "binding":
			b := ca.GetObject().(*corev1.Binding)
			f.mu.Lock()
			defer f.mu.Unlock()
			if f.failOn[b.Name] {
				return true, nil, errors.New("injected bind failure")
			}
			f.binds = append(f.binds, b.Name+"@"+b.Target.Name)
			if f.lag {
				return true, nil, nil
			}
			o, err := f.cs.Tracker().Get(corev1.SchemeGroupVersion.WithResource("pods"), a.GetNamespace(), b.Name)
			if err != nil {
				return true, nil, err
			}
			p := o.(*corev1.Pod).DeepCopy()
			p.Spec.NodeName = b.Target.Name
			return true, nil, f.cs.Tracker().Update(corev1.SchemeGroupVersion.WithResource("pods"), p, a.GetNamespace())
		case "eviction":
			ev := ca.GetObject().(*policyv1.Eviction)
			f.mu.Lock()
			defer f.mu.Unlock()
			f.evicts = append(f.evicts, ev)
			return true, nil, f.refuse[ev.Name]
		}
		return false, nil, nil
	})
	cfg := Config{Now: func() time.Time { return time.Unix(f.clock.Load(), 0) }}
	if mod != nil {
		mod(f, &cfg)
	}
	s, err := New(f.cs, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	f.s = s
	return f
}

func (f *fixture) cycle() *Report {
	f.t.Helper()
	rep, err := f.s.Cycle(context.Background())
	if err != nil {
		f.t.Fatal(err)
	}
	return rep
}

// until polls the scheduler's state (under its lock) until cond holds.
func (f *fixture) until(what string, cond func(st *state) bool) {
	f.t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		f.s.mu.Lock()
		defer f.s.mu.Unlock()
		return cond(&f.s.st), nil
	})
	if err != nil {
		f.t.Fatalf("waiting for %s: %v", what, err)
	}
}

func (f *fixture) statusPatches() []string {
	var out []string
	for _, a := range f.cs.Actions() {
		if pa, ok := a.(k8stesting.PatchAction); ok && a.GetSubresource() == "status" {
			out = append(out, pa.GetName()+" "+string(pa.GetPatch()))
		}
	}
	return out
}

func TestPodsOfItsSchedulerNameAreBoundOthersIgnored(t *testing.T) {
	f := newFixture(t, testNode("n1", "4"),
		testPod("ours", "1", nil),
		testPod("theirs", "1", func(p *corev1.Pod) { p.Spec.SchedulerName = "default-scheduler" }))
	rep := f.cycle()
	if rep.Bound != 1 || len(f.binds) != 1 || f.binds[0] != "ours@n1" {
		t.Fatalf("bound %d: %v, want ours@n1", rep.Bound, f.binds)
	}
}

// A pod bound in one cycle is not offered again before the informer shows
// the binding, and its capacity stays taken.
func TestBoundPodNotOfferedAgainBeforeInformerShowsBinding(t *testing.T) {
	f := newFixture(t, testNode("n1", "2"), testPod("a", "2", nil), testPod("b", "2", nil))
	f.lag = true
	if rep := f.cycle(); rep.Bound != 1 {
		t.Fatalf("first cycle bound %d, want 1", rep.Bound)
	}
	rep := f.cycle()
	if rep.Bound != 0 || len(f.binds) != 1 {
		t.Fatalf("second cycle bound %d (%v): a pod bound before the informer showed it was offered again", rep.Bound, f.binds)
	}
}

// A gang is bound all or none: when a member's binding fails, the members
// already bound are deleted and the others are pending again.
func TestGangBindFailureDeletesBoundMembersAndRequeuesTheRest(t *testing.T) {
	gang := func(p *corev1.Pod) {
		p.Annotations = map[string]string{kubeconv.AnnotationGangID: "g", kubeconv.AnnotationGangCardinality: "2"}
	}
	f := newFixture(t, testNode("n1", "4"), testPod("g-0", "1", gang), testPod("g-1", "1", gang))
	f.failOn["g-1"], f.failOn["g-0"] = true, false
	f.lag = true
	rep := f.cycle()
	if rep.Bound != 0 || rep.BindFailed != 2 {
		t.Fatalf("bound %d, failed %d; want 0 and 2 (%v)", rep.Bound, rep.BindFailed, rep.Errors)
	}
	var deleted []string
	for _, a := range f.cs.Actions() {
		if a.GetVerb() == "delete" && a.GetResource().Resource == "pods" {
			deleted = append(deleted, a.(k8stesting.DeleteAction).GetName())
		}
	}
	bound := f.binds[0][:strings.Index(f.binds[0], "@")]
	if len(f.binds) != 1 || len(deleted) != 1 || deleted[0] != bound {
		t.Fatalf("binds %v, deleted %v: want the one bound member deleted", f.binds, deleted)
	}
	f.s.mu.Lock()
	defer f.s.mu.Unlock()
	if f.s.st.store.Len() != 1 || f.s.st.pods["default/g-1"].kind != kindQueued {
		t.Fatalf("the member whose bind failed is not queued again (store has %d)", f.s.st.store.Len())
	}
}

// A pod with a bad annotation gets PodScheduled=False naming the
// annotation and value, once.
func TestBadAnnotationGetsConditionNamingItOnce(t *testing.T) {
	f := newFixture(t, testNode("n1", "4"), testPod("bad", "1", func(p *corev1.Pod) {
		p.Annotations = map[string]string{kubeconv.AnnotationGangID: "g", kubeconv.AnnotationGangCardinality: "many"}
	}))
	f.cycle()
	f.cycle()
	ps := f.statusPatches()
	if len(ps) != 1 || !strings.Contains(ps[0], ReasonInvalid) || !strings.Contains(ps[0], `armadaproject.io/gangCardinality] \"many\"`) {
		t.Fatalf("status patches %v: want one naming the annotation and value", ps)
	}
}

// A pod that can never fit carries the quantified reason, as
// kube-scheduler's Unschedulable condition, and it is not rewritten while
// unchanged.
func TestNeverFitsPodConditionSaysWhyQuantified(t *testing.T) {
	f := newFixture(t, testNode("n1", "4"), testNode("n2", "4"), testPod("huge", "64", nil))
	f.cycle()
	f.cycle()
	ps := f.statusPatches()
	if len(ps) != 1 || !strings.Contains(ps[0], `"reason":"Unschedulable"`) || !strings.Contains(ps[0], "0/2 nodes fit") ||
		!strings.Contains(ps[0], "short of cpu by at least 60") {
		t.Fatalf("status patches %v: want one Unschedulable, quantified", ps)
	}
}

// Pods of identical requirements that do not fit share their reason, and
// the scheduling-key cache names the job whose search they repeat; that
// name changes whenever that job goes, so it is not part of the condition:
// a pod's condition (and its Warning event) is rewritten only when why it
// does not fit changes.
func TestUnschedulableConditionIgnoresWhichIdenticalPodWasSearched(t *testing.T) {
	f := newFixture(t, testNode("n1", "4"), testPod("a", "64", nil), testPod("b", "64", nil), testPod("c", "64", nil))
	if rep := f.cycle(); rep.Conditions != 3 {
		t.Fatalf("first cycle wrote %d conditions, want 3 (%v)", rep.Conditions, rep.Errors)
	}
	searched := ""
	for _, p := range f.statusPatches() {
		if strings.Contains(p, "same requirements") {
			t.Fatalf("condition %s names the job whose search it repeats", p)
		}
		if searched == "" {
			searched = strings.Fields(p)[0]
		}
	}
	if err := f.cs.CoreV1().Pods("default").Delete(context.Background(), searched, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	f.until("the deleted pod gone", func(st *state) bool { return st.pods["default/"+searched] == nil })
	if rep := f.cycle(); rep.Conditions != 0 {
		t.Fatalf("after %s went, %d conditions rewritten, want 0: %v", searched, rep.Conditions, f.statusPatches())
	}
}

// Urgency preemption evicts through the Eviction API with the victim's
// grace period; the preemptor waits for the victim to terminate and is
// bound after.
func TestUrgencyPreemptionEvictsWithGracePeriodThenBinds(t *testing.T) {
	low := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "low"}, Value: 10}
	high := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "high"}, Value: 1000}
	victim := testPod("victim", "2", func(p *corev1.Pod) { p.Spec.PriorityClassName = "low"; p.Spec.NodeName = "n1" })
	f := newFixture(t, low, high, testNode("n1", "2"), victim,
		testPod("urgent", "2", func(p *corev1.Pod) { p.Spec.PriorityClassName = "high" }))
	rep := f.cycle()
	if rep.Evicted != 1 || len(f.evicts) != 1 || f.evicts[0].Name != "victim" ||
		f.evicts[0].DeleteOptions == nil || *f.evicts[0].DeleteOptions.GracePeriodSeconds != 17 {
		t.Fatalf("evicted %d: %+v; want victim with grace 17", rep.Evicted, f.evicts)
	}
	if rep.Bound != 0 || rep.Waiting != 1 {
		t.Fatalf("bound %d waiting %d: the preemptor must wait for the victim", rep.Bound, rep.Waiting)
	}
	if rep := f.cycle(); rep.Evicted != 0 || rep.Bound != 0 {
		t.Fatalf("while the victim terminates: evicted %d bound %d, want nothing", rep.Evicted, rep.Bound)
	}
	if err := f.cs.CoreV1().Pods("default").Delete(context.Background(), "victim", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	f.until("the victim gone", func(st *state) bool { return st.pods["default/victim"] == nil })
	if rep := f.cycle(); rep.Bound != 1 || f.binds[0] != "urgent@n1" {
		t.Fatalf("after the victim terminated: bound %d %v, want urgent@n1", rep.Bound, f.binds)
	}
}

// A node whose allocatable shrank under its pods goes to the core as it
// is, over-committed: an urgent pod lands there only by evicting enough
// pods that it fits the node's allocatable (3 one-core pods on a node now
// of 2: two go, not one, which would leave 3 cores bound on 2).
func TestUrgencyOnANodeThatShrankEvictsUntilThePodFitsItsAllocatable(t *testing.T) {
	low := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "low"}, Value: 10}
	high := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "high"}, Value: 1000}
	objs := []runtime.Object{low, high, testNode("n1", "2"),
		testPod("urgent", "1", func(p *corev1.Pod) { p.Spec.PriorityClassName = "high" })}
	for _, name := range []string{"a", "b", "c"} {
		objs = append(objs, testPod(name, "1", func(p *corev1.Pod) { p.Spec.PriorityClassName = "low"; p.Spec.NodeName = "n1" }))
	}
	f := newFixture(t, objs...)
	rep := f.cycle()
	if got := rep.Result.OverCommitted; len(got) != 1 || got[0] != "n1" {
		t.Fatalf("over-committed %v, want [n1]", got)
	}
	if rep.Evicted != 2 || rep.Waiting != 1 {
		t.Fatalf("evicted %d, waiting %d: want 2 evicted for the urgent pod", rep.Evicted, rep.Waiting)
	}
}

// Pods of other schedulers use their node's capacity; Flotilla never
// preempts them.
func TestOtherSchedulersPodsHoldCapacityAndAreNeverPreempted(t *testing.T) {
	high := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "high"}, Value: 1000}
	f := newFixture(t, high, testNode("n1", "2"),
		testPod("theirs", "2", func(p *corev1.Pod) { p.Spec.SchedulerName = "default-scheduler"; p.Spec.NodeName = "n1" }),
		testPod("urgent", "1", func(p *corev1.Pod) { p.Spec.PriorityClassName = "high" }))
	rep := f.cycle()
	if rep.Bound != 0 || rep.Evicted != 0 {
		t.Fatalf("bound %d evicted %d: want nothing", rep.Bound, rep.Evicted)
	}
}

func TestNewRejectsBadConfigNamingEveryField(t *testing.T) {
	_, err := New(nil, Config{Period: -time.Second, BindWorkers: -1})
	for _, w := range []string{"client", "period", "bindWorkers"} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("error %v lacks %s", err, w)
		}
	}
}

// budgetRefusal is the apiserver's answer to an eviction a
// PodDisruptionBudget forbids, asking for a retry after retryAfter
// seconds (0: none, as when the budget allows no disruption).
func budgetRefusal(retryAfter int) error {
	err := apierrors.NewTooManyRequests("Cannot evict pod as it would violate the pod's disruption budget.", retryAfter)
	err.ErrStatus.Details.Causes = append(err.ErrStatus.Details.Causes, metav1.StatusCause{
		Type: policyv1.DisruptionBudgetCause, Message: "The disruption budget pdb needs 1 healthy pods and has 1 currently"})
	return err
}

// urgencyFixture has a low-priority victim filling n1 and an urgent pod
// that can only run by preempting it.
func urgencyFixture(t *testing.T) *fixture {
	low := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "low"}, Value: 10}
	high := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "high"}, Value: 1000}
	return newFixture(t, low, high, testNode("n1", "2"),
		testPod("victim", "2", func(p *corev1.Pod) { p.Spec.PriorityClassName = "low"; p.Spec.NodeName = "n1" }),
		testPod("urgent", "2", func(p *corev1.Pod) { p.Spec.PriorityClassName = "high" }))
}

func (f *fixture) evictCalls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.evicts)
}

// An eviction a PodDisruptionBudget refused (429) is not tried again
// before the answer's Retry-After (10 s without one, at most 5 minutes),
// and is tried again once that time has come.
func TestRefusedEvictionNotRetriedBeforeRetryAfter(t *testing.T) {
	for _, tc := range []struct {
		name       string
		retryAfter int
		wait       int64
	}{
		{"retry-after honoured", 30, 30},
		{"no retry-after: 10 s", 0, 10},
		{"retry-after capped at 5 minutes", 3600, 300},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := urgencyFixture(t)
			f.refuse["victim"] = budgetRefusal(tc.retryAfter)
			if rep := f.cycle(); f.evictCalls() != 1 || rep.EvictFailed != 1 {
				t.Fatalf("first cycle: %d eviction calls, %d failed; want 1 refused", f.evictCalls(), rep.EvictFailed)
			}
			for _, at := range []int64{1000, 1001, 1000 + tc.wait - 1} {
				f.clock.Store(at)
				rep := f.cycle()
				if n := f.evictCalls(); n != 1 || rep.EvictDeferred != 1 || rep.Bound != 0 {
					t.Fatalf("at %d s (refused at 1000): %d eviction calls (want 1), %d deferred (want 1), %d bound",
						at, n, rep.EvictDeferred, rep.Bound)
				}
			}
			f.clock.Store(1000 + tc.wait)
			if rep := f.cycle(); f.evictCalls() != 2 || rep.EvictDeferred != 0 {
				t.Fatalf("at the retry time: %d eviction calls, %d deferred; want it tried again", f.evictCalls(), rep.EvictDeferred)
			}
		})
	}
}

// A victim whose eviction a budget refused is passed over
// (scheduler.Running.Protected) until its retry time: the next cycle
// evicts another victim that makes room rather than waiting for it.
func TestRefusedVictimIsPassedOverForAnotherVictim(t *testing.T) {
	low := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "low"}, Value: 10}
	high := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "high"}, Value: 1000}
	running := func(started int64) func(*corev1.Pod) {
		return func(p *corev1.Pod) {
			p.Spec.PriorityClassName, p.Spec.NodeName = "low", "n1"
			p.Status.StartTime = &metav1.Time{Time: time.Unix(started, 0)}
		}
	}
	// The latest started goes first: late, then early.
	f := newFixture(t, low, high, testNode("n1", "2"),
		testPod("early", "1", running(100)), testPod("late", "1", running(200)),
		testPod("urgent", "1", func(p *corev1.Pod) { p.Spec.PriorityClassName = "high" }))
	f.refuse["late"] = budgetRefusal(30)
	if rep := f.cycle(); rep.EvictFailed != 1 || f.evictCalls() != 1 || f.evicts[0].Name != "late" {
		t.Fatalf("first cycle: %d eviction calls, %d failed; want late's refused", f.evictCalls(), rep.EvictFailed)
	}
	f.clock.Store(1001)
	rep := f.cycle()
	if f.evictCalls() != 2 || f.evicts[1].Name != "early" || rep.Evicted != 1 || rep.Waiting != 1 || rep.EvictDeferred != 1 {
		var names []string
		for _, e := range f.evicts {
			names = append(names, e.Name)
		}
		t.Fatalf("second cycle: evictions %v, evicted %d, waiting %d, passed over %d; want early evicted for urgent and late passed over",
			names, rep.Evicted, rep.Waiting, rep.EvictDeferred)
	}
}

// urgentPatches are the status patches of the pod "urgent".
func (f *fixture) urgentPatches() []string {
	var out []string
	for _, p := range f.statusPatches() {
		if strings.HasPrefix(p, "urgent ") {
			out = append(out, p)
		}
	}
	return out
}

// A preemptor whose only victim's eviction a budget refused says so at
// once (PreemptionBlocked: its own preemption was refused), then, while
// the victim is passed over, is Unschedulable with the scheduler's reason
// and the victim, the budget's reason and the retry time; each condition
// and its Warning event is written once while unchanged. At the retry
// time the eviction is tried again.
func TestPreemptorWithOnlyARefusedVictimIsUnschedulableNamingTheBudget(t *testing.T) {
	f := urgencyFixture(t)
	rec := record.NewFakeRecorder(100)
	f.s.recorder = rec
	f.refuse["victim"] = budgetRefusal(0)
	for at := int64(1000); at < 1005; at++ {
		f.clock.Store(at)
		f.cycle()
	}
	refused := `the eviction of default/victim was refused by a PodDisruptionBudget ` +
		`(The disruption budget pdb needs 1 healthy pods and has 1 currently) and is not tried again before 1970-01-01T00:16:50Z`
	blocked := "placed on node n1, but " + refused
	unschedulable := "no-room: 0/1 nodes fit: 1 short of cpu by at least 2 (room counts what lower-priority preemptible jobs hold); room not counted: " +
		strings.Replace(refused, "default/victim", "default/victim on node n1", 1)
	patches := f.urgentPatches()
	if len(patches) != 2 || !strings.Contains(patches[0], `"reason":"`+ReasonPreemptionBlocked+`"`) || !strings.Contains(patches[0], blocked) ||
		!strings.Contains(patches[1], `"reason":"`+ReasonUnschedulable+`"`) || !strings.Contains(patches[1], unschedulable) {
		t.Fatalf("urgent's status patches %q:\nwant %s %q\nthen %s %q", patches, ReasonPreemptionBlocked, blocked, ReasonUnschedulable, unschedulable)
	}
	var events []string
	for len(rec.Events) > 0 {
		if e := <-rec.Events; strings.Contains(e, "victim") {
			events = append(events, e)
		}
	}
	if len(events) != 2 || events[0] != "Warning "+ReasonPreemptionBlocked+" "+blocked || events[1] != "Warning "+EventFailedScheduling+" "+unschedulable {
		t.Fatalf("events %q: want one Warning %s, then one Warning %s, with the messages", events, ReasonPreemptionBlocked, EventFailedScheduling)
	}
	f.clock.Store(1010)
	if rep := f.cycle(); f.evictCalls() != 2 || rep.EvictFailed != 1 {
		t.Fatalf("at the retry time: %d eviction calls, %d failed; want the eviction tried again", f.evictCalls(), rep.EvictFailed)
	}
}

// An unschedulable pod's condition names a refused victim only when that
// victim could have made room for it: on a node the pod's selector,
// tolerations and the node's cordon admit, where the free room does not
// hold the pod but the free room and every running pod the pod could
// preempt (a preemptible class, and a lower priority or another queue),
// the refused ones among them, does.
func TestUnschedulablePodNamesRefusedVictimsOnlyWhereTheyCouldMakeRoom(t *testing.T) {
	low := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "low"}, Value: 10}
	high := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "high"}, Value: 1000}
	never := corev1.PreemptNever
	pinned := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "pinned"}, Value: 10, PreemptionPolicy: &never}
	urgent := func(p *corev1.Pod) { p.Spec.PriorityClassName = "high" }
	for _, tc := range []struct {
		name    string
		victim  func(*corev1.Pod)
		node    *corev1.Node
		pending *corev1.Pod
		named   bool
	}{
		{"lower priority, room with the victim", nil, nil, testPod("p", "1", urgent), true},
		{"another queue, same priority", func(p *corev1.Pod) { p.Spec.PriorityClassName = "high" }, nil,
			testPod("p", "1", func(p *corev1.Pod) { urgent(p); p.Labels = map[string]string{kubeconv.LabelQueue: "other"} }), true},
		{"same queue, same priority: not preemptible by it", func(p *corev1.Pod) { p.Spec.PriorityClassName = "high" }, nil,
			testPod("p", "1", urgent), false},
		{"too big even with the victim", nil, nil, testPod("p", "2", urgent), false},
		{"node selector excludes the node", nil, nil,
			testPod("p", "1", func(p *corev1.Pod) { urgent(p); p.Spec.NodeSelector = map[string]string{"zone": "b"} }), false},
		{"untolerated taint", nil, func() *corev1.Node {
			n := testNode("n1", "2")
			n.Spec.Taints = []corev1.Taint{{Key: "gpu", Value: "true", Effect: corev1.TaintEffectNoSchedule}}
			return n
		}(), testPod("p", "1", urgent), false},
		{"tolerated taint", nil, func() *corev1.Node {
			n := testNode("n1", "2")
			n.Spec.Taints = []corev1.Taint{{Key: "gpu", Value: "true", Effect: corev1.TaintEffectNoSchedule}}
			return n
		}(), testPod("p", "1", func(p *corev1.Pod) {
			urgent(p)
			p.Spec.Tolerations = []corev1.Toleration{{Key: "gpu", Operator: corev1.TolerationOpExists}}
		}), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			node := tc.node
			if node == nil {
				node = testNode("n1", "2")
			}
			victim := testPod("victim", "1", func(p *corev1.Pod) {
				p.Spec.PriorityClassName, p.Spec.NodeName = "low", "n1"
				if tc.victim != nil {
					tc.victim(p)
				}
			})
			other := testPod("other", "1", func(p *corev1.Pod) { p.Spec.PriorityClassName = "pinned"; p.Spec.NodeName = "n1" })
			f := newFixture(t, low, high, pinned, node, victim, other, tc.pending)
			f.s.mu.Lock()
			f.s.st.refused[victim.UID] = refusal{key: "default/victim", node: "n1", until: time.Unix(1030, 0), detail: "budget says no"}
			f.s.mu.Unlock()
			rep := f.cycle()
			var msg string
			for _, p := range f.statusPatches() {
				if strings.HasPrefix(p, "p ") {
					msg = p
				}
			}
			if rep.Evicted != 0 || rep.Bound != 0 || !strings.Contains(msg, `"reason":"Unschedulable"`) {
				t.Fatalf("evicted %d, bound %d, condition %q: want p unschedulable, nothing evicted", rep.Evicted, rep.Bound, msg)
			}
			if named := strings.Contains(msg, "default/victim on node n1") && strings.Contains(msg, "budget says no"); named != tc.named {
				t.Fatalf("condition %q names the refused victim: %v, want %v", msg, named, tc.named)
			}
		})
	}
}

// A refusal is forgotten when its victim goes, and when its retry time
// has come: the map holds entries only for pods that exist and wait.
func TestRefusalForgottenWhenVictimGoesOrRetryTimeComes(t *testing.T) {
	refusals := func(f *fixture) int {
		f.s.mu.Lock()
		defer f.s.mu.Unlock()
		return len(f.s.st.refused)
	}
	t.Run("victim deleted", func(t *testing.T) {
		f := urgencyFixture(t)
		f.refuse["victim"] = budgetRefusal(0)
		f.cycle()
		if n := refusals(f); n != 1 {
			t.Fatalf("%d refusals remembered, want 1", n)
		}
		if err := f.cs.CoreV1().Pods("default").Delete(context.Background(), "victim", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		f.until("the refusal forgotten", func(st *state) bool { return len(st.refused) == 0 })
		if rep := f.cycle(); rep.Bound != 1 {
			t.Fatalf("after the victim went: bound %d, want the preemptor bound", rep.Bound)
		}
	})
	t.Run("retry time come", func(t *testing.T) {
		f := urgencyFixture(t)
		f.refuse["victim"] = budgetRefusal(0)
		f.cycle()
		f.mu.Lock()
		delete(f.refuse, "victim")
		f.mu.Unlock()
		f.clock.Store(1010)
		if rep := f.cycle(); rep.Evicted != 1 || refusals(f) != 0 {
			t.Fatalf("at the retry time: evicted %d, %d refusals remembered; want the victim evicted and none", rep.Evicted, refusals(f))
		}
	})
}

// Within a queue and class, the pod of the lower flotilla.dev/priority
// runs first, even when submitted later.
func TestLowerPriorityAnnotationBindsFirst(t *testing.T) {
	prio := func(v string, created int64) func(*corev1.Pod) {
		return func(p *corev1.Pod) {
			p.Annotations = map[string]string{kubeconv.AnnotationPriority: v}
			p.CreationTimestamp = metav1.NewTime(time.Unix(created, 0))
		}
	}
	f := newFixture(t, testNode("n1", "2"), testPod("older", "2", prio("5", 100)), testPod("newer", "2", prio("1", 200)))
	if rep := f.cycle(); rep.Bound != 1 || len(f.binds) != 1 || f.binds[0] != "newer@n1" {
		t.Fatalf("bound %d: %v; want newer@n1 (priority 1 before 5)", rep.Bound, f.binds)
	}
}

// A malformed flotilla.dev/priority makes the pod invalid: it gets the
// condition naming the annotation and value, and is not bound.
func TestMalformedPriorityAnnotationGetsConditionAndIsNotBound(t *testing.T) {
	f := newFixture(t, testNode("n1", "4"), testPod("bad", "1", func(p *corev1.Pod) {
		p.Annotations = map[string]string{kubeconv.AnnotationPriority: "-3"}
	}))
	rep := f.cycle()
	ps := f.statusPatches()
	if rep.Bound != 0 || len(ps) != 1 || !strings.Contains(ps[0], ReasonInvalid) || !strings.Contains(ps[0], `flotilla.dev/priority] \"-3\"`) {
		t.Fatalf("bound %d, status patches %v: want none bound and one condition naming the annotation and value", rep.Bound, ps)
	}
}
