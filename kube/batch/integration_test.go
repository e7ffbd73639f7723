package batch

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/kube/internal/kubetest"
	"github.com/flotilla-sched/flotilla/kube/kubeconv"
)

// live is a scheduler on a real apiserver.
type live struct {
	t   testing.TB
	cs  kubernetes.Interface
	c   *kubetest.Cluster
	ctx context.Context
}

func newLive(t testing.TB) *live {
	t.Helper()
	c := kubetest.New(t)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	return &live{t: t, cs: c.Clientset(t), c: c, ctx: ctx}
}

func (l *live) scheduler(cfg Config) *Scheduler {
	l.t.Helper()
	s, err := New(l.cs, cfg)
	if err != nil {
		l.t.Fatal(err)
	}
	if err := s.Start(l.ctx); err != nil {
		l.t.Fatal(err)
	}
	return s
}

func (l *live) node(name, cpu string) {
	l.t.Helper()
	if err := createNode(l.ctx, l.cs, name, cpu); err != nil {
		l.t.Fatal(err)
	}
}

// createNode creates a ready node: the apiserver's TaintNodesByCondition
// admission taints a new node not-ready, which no kubelet clears here, so
// the taint is removed, and allocatable set.
func createNode(ctx context.Context, cs kubernetes.Interface, name, cpu string) error {
	n, err := cs.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	n.Spec.Taints = nil
	if n, err = cs.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{}); err != nil {
		return err
	}
	n.Status.Allocatable = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse("256Gi")}
	n.Status.Capacity = n.Status.Allocatable
	_, err = cs.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{})
	return err
}

func (l *live) class(name string, value int32) {
	l.t.Helper()
	pc := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Value: value}
	if _, err := l.cs.SchedulingV1().PriorityClasses().Create(l.ctx, pc, metav1.CreateOptions{}); err != nil {
		l.t.Fatal(err)
	}
}

func (l *live) pod(p *corev1.Pod) {
	l.t.Helper()
	p = p.DeepCopy()
	p.UID = ""
	if _, err := l.cs.CoreV1().Pods(p.Namespace).Create(l.ctx, p, metav1.CreateOptions{}); err != nil {
		l.t.Fatal(err)
	}
}

func (l *live) get(name string) *corev1.Pod {
	l.t.Helper()
	p, err := l.cs.CoreV1().Pods("default").Get(l.ctx, name, metav1.GetOptions{})
	if err != nil {
		l.t.Fatal(err)
	}
	return p
}

// cycleUntil runs cycles of s until cond holds, for at most 30 s.
func (l *live) cycleUntil(s *Scheduler, what string, cond func() bool) {
	l.t.Helper()
	var last *Report
	err := wait.PollUntilContextTimeout(l.ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		rep, err := s.Cycle(ctx)
		if err != nil {
			return false, err
		}
		last = rep
		return cond(), nil
	})
	if err != nil {
		s.mu.Lock()
		l.t.Logf("state: %d pods, %d nodes, store %d", len(s.st.pods), len(s.st.nodes), s.st.store.Len())
		for k, ps := range s.st.pods {
			l.t.Logf("pod %s: kind %d node %q err %v", k, ps.kind, ps.node, ps.err)
		}
		s.mu.Unlock()
		if last != nil {
			l.t.Logf("last cycle: bound %d failed %d evicted %d waiting %d errors %v unscheduled %+v",
				last.Bound, last.BindFailed, last.Evicted, last.Waiting, last.Errors, last.Result.UnscheduledJobs)
		}
		l.t.Fatalf("waiting for %s: %v", what, err)
	}
}

func scheduledCondition(p *corev1.Pod) (corev1.PodCondition, bool) {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled {
			return c, true
		}
	}
	return corev1.PodCondition{}, false
}

func TestLiveBindsPendingPods(t *testing.T) {
	l := newLive(t)
	l.node("n1", "4")
	for i := range 3 {
		l.pod(testPod(fmt.Sprintf("p%d", i), "1", nil))
	}
	s := l.scheduler(Config{})
	l.cycleUntil(s, "every pod bound", func() bool {
		for i := range 3 {
			if l.get(fmt.Sprintf("p%d", i)).Spec.NodeName != "n1" {
				return false
			}
		}
		return true
	})
}

// A pod's required node affinity is honoured by a real apiserver's pods
// and nodes: it goes to the node whose labels match, not to the tighter
// fit.
func TestLiveRequiredNodeAffinityHonoured(t *testing.T) {
	l := newLive(t)
	l.node("small", "2")
	l.node("big", "8")
	n, err := l.cs.CoreV1().Nodes().Get(l.ctx, "big", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n.Labels = map[string]string{"gpu": "h100"}
	if _, err := l.cs.CoreV1().Nodes().Update(l.ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	l.pod(testPod("train", "1", func(p *corev1.Pod) {
		p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
				{Key: "gpu", Operator: corev1.NodeSelectorOpIn, Values: []string{"h100"}}}}}}}}
	}))
	s := l.scheduler(Config{})
	l.cycleUntil(s, "train bound to big", func() bool { return l.get("train").Spec.NodeName == "big" })
}

// A gang that cannot fit whole is not bound at all; once a node joins,
// every member is.
func TestLiveGangBoundAllOrNone(t *testing.T) {
	l := newLive(t)
	l.node("n1", "2")
	gang := func(p *corev1.Pod) {
		p.Annotations = map[string]string{kubeconv.AnnotationGangID: "g", kubeconv.AnnotationGangCardinality: "3"}
	}
	for i := range 3 {
		l.pod(testPod(fmt.Sprintf("g%d", i), "1", gang))
	}
	s := l.scheduler(Config{})
	l.cycleUntil(s, "the gang's members unschedulable", func() bool {
		c, ok := scheduledCondition(l.get("g0"))
		return ok && c.Reason == ReasonUnschedulable
	})
	for i := range 3 {
		if n := l.get(fmt.Sprintf("g%d", i)).Spec.NodeName; n != "" {
			t.Fatalf("g%d bound to %s while the gang cannot fit whole", i, n)
		}
	}
	l.node("n2", "2")
	l.cycleUntil(s, "every member bound", func() bool {
		for i := range 3 {
			if l.get(fmt.Sprintf("g%d", i)).Spec.NodeName == "" {
				return false
			}
		}
		return true
	})
}

// A pod that can never fit says why, quantified, in its condition.
func TestLiveNeverFitsConditionSaysWhy(t *testing.T) {
	l := newLive(t)
	l.node("n1", "4")
	l.node("n2", "4")
	l.pod(testPod("huge", "64", nil))
	s := l.scheduler(Config{})
	l.cycleUntil(s, "the condition", func() bool {
		c, ok := scheduledCondition(l.get("huge"))
		return ok && c.Status == corev1.ConditionFalse && c.Reason == ReasonUnschedulable &&
			strings.Contains(c.Message, "0/2 nodes fit") && strings.Contains(c.Message, "short of cpu by at least 60")
	})
}

// Urgency preemption evicts the victim (with no kubelet, the apiserver
// marks a bound pod with a grace period as deleting: its
// deletionTimestamp is set); once it is gone, the preemptor is bound.
func TestLiveUrgencyPreemptionEvictsThenBinds(t *testing.T) {
	l := newLive(t)
	l.class("low", 10)
	l.class("high", 1000)
	l.node("n1", "2")
	l.pod(testPod("victim", "2", func(p *corev1.Pod) { p.Spec.PriorityClassName = "low" }))
	s := l.scheduler(Config{})
	l.cycleUntil(s, "the victim bound", func() bool { return l.get("victim").Spec.NodeName == "n1" })
	l.pod(testPod("urgent", "2", func(p *corev1.Pod) { p.Spec.PriorityClassName = "high" }))
	l.cycleUntil(s, "the victim evicted", func() bool { return l.get("victim").DeletionTimestamp != nil })
	if n := l.get("urgent").Spec.NodeName; n != "" {
		t.Fatalf("the preemptor was bound to %s before its victim terminated", n)
	}
	zero := int64(0)
	if err := l.cs.CoreV1().Pods("default").Delete(l.ctx, "victim", metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatal(err)
	}
	l.cycleUntil(s, "the preemptor bound", func() bool { return l.get("urgent").Spec.NodeName == "n1" })
}

// Preemption to fair share: queue a holds the cluster with preemptible
// pods; queue b's pods arrive; a's pods over its fair share are evicted.
func TestLiveFairSharePreemptionEvicts(t *testing.T) {
	l := newLive(t)
	l.node("n1", "4")
	inQueue := func(q string) func(*corev1.Pod) {
		return func(p *corev1.Pod) { p.Labels = map[string]string{kubeconv.LabelQueue: q} }
	}
	for i := range 4 {
		l.pod(testPod(fmt.Sprintf("a%d", i), "1", inQueue("a")))
	}
	s := l.scheduler(Config{Queues: []*flotilla.Queue{{Name: "a"}, {Name: "b"}}})
	l.cycleUntil(s, "a's pods bound", func() bool {
		for i := range 4 {
			if l.get(fmt.Sprintf("a%d", i)).Spec.NodeName == "" {
				return false
			}
		}
		return true
	})
	for i := range 2 {
		l.pod(testPod(fmt.Sprintf("b%d", i), "1", inQueue("b")))
	}
	l.cycleUntil(s, "two of a's pods evicted", func() bool {
		n := 0
		for i := range 4 {
			if l.get(fmt.Sprintf("a%d", i)).DeletionTimestamp != nil {
				n++
			}
		}
		return n == 2
	})
}

// Two replicas: only the leader binds; when its context ends (it
// releases the Lease), the other takes over and binds.
func TestLiveLeaderFailover(t *testing.T) {
	l := newLive(t)
	l.node("n1", "8")
	le := func(id string) LeaderElection {
		return LeaderElection{Namespace: "default", Name: "flotilla", Identity: id,
			LeaseDuration: 2 * time.Second, RenewDeadline: time.Second, RetryPeriod: 200 * time.Millisecond}
	}
	stop := map[string]context.CancelFunc{}
	var wg sync.WaitGroup
	for _, id := range []string{"a", "b"} {
		ctx, cancel := context.WithCancel(l.ctx)
		stop[id] = cancel
		s := l.scheduler(Config{Period: 100 * time.Millisecond})
		wg.Add(1)
		go func() { defer wg.Done(); _ = s.RunWithLeaderElection(ctx, le(id), nil) }()
	}
	t.Cleanup(func() {
		for _, cancel := range stop {
			cancel()
		}
		wg.Wait()
	})
	holder := func() string {
		lease, err := l.cs.CoordinationV1().Leases("default").Get(l.ctx, "flotilla", metav1.GetOptions{})
		if err != nil || lease.Spec.HolderIdentity == nil {
			return ""
		}
		return *lease.Spec.HolderIdentity
	}
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		if err := wait.PollUntilContextTimeout(l.ctx, 50*time.Millisecond, 30*time.Second, true,
			func(context.Context) (bool, error) { return cond(), nil }); err != nil {
			t.Fatalf("waiting for %s: %v", what, err)
		}
	}
	waitFor("a leader", func() bool { return holder() != "" })
	first := holder()
	l.pod(testPod("p1", "1", nil))
	waitFor("p1 bound", func() bool { return l.get("p1").Spec.NodeName == "n1" })
	other := map[string]string{"a": "b", "b": "a"}[first]
	stop[first]()
	waitFor(other+" leading", func() bool { return holder() == other })
	l.pod(testPod("p2", "1", nil))
	waitFor("p2 bound by the new leader", func() bool { return l.get("p2").Spec.NodeName == "n1" })
}

// A real PodDisruptionBudget (minAvailable equal to its one pod) refuses
// the victim's eviction: first while its status is not computed yet (no
// controller-manager runs: the apiserver answers 429 with Retry-After 10 s,
// which the scheduler keeps instead of letting client-go sleep through
// it), then as the disruption controller would have it (0 disruptions
// allowed: 429 without Retry-After, so 10 s). The eviction is not posted
// again before the retry time; the preemptor, which has no other victim,
// is Unschedulable and names the victim, the budget's reason and the
// retry time; once the budget allows a disruption, the victim is evicted
// and the preemptor bound. Then, with the budget spent, a preemptor whose
// first victim the budget guards evicts another victim the next cycle.
func TestLiveBudgetRefusedEvictionWaitsRetryAfterThenEvicts(t *testing.T) {
	l := newLive(t)
	l.class("low", 10)
	l.class("high", 1000)
	l.node("n1", "2")
	var clock, posts atomic.Int64
	clock.Store(1000)
	cfg := rest.CopyConfig(l.c.Config)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/eviction") {
				posts.Add(1)
			}
			return rt.RoundTrip(r)
		})
	})
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(cs, Config{Now: func() time.Time { return time.Unix(clock.Load(), 0) }})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(l.ctx); err != nil {
		t.Fatal(err)
	}
	l.pod(testPod("victim", "2", func(p *corev1.Pod) {
		p.Spec.PriorityClassName = "low"
		p.Labels = map[string]string{"app": "v"}
	}))
	l.cycleUntil(s, "the victim bound", func() bool { return l.get("victim").Spec.NodeName == "n1" })
	// The Eviction API ignores budgets for pods that are not running.
	v := l.get("victim")
	v.Status.Phase = corev1.PodRunning
	v.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	if _, err := l.cs.CoreV1().Pods("default").UpdateStatus(l.ctx, v, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	one := intstr.FromInt32(1)
	pdb, err := l.cs.PolicyV1().PodDisruptionBudgets("default").Create(l.ctx, &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "pdb"},
		Spec:       policyv1.PodDisruptionBudgetSpec{MinAvailable: &one, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "v"}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	l.pod(testPod("urgent", "2", func(p *corev1.Pod) { p.Spec.PriorityClassName = "high" }))
	blocked := func(detail, at string) func() bool {
		return func() bool {
			c, ok := scheduledCondition(l.get("urgent"))
			return ok && c.Reason == ReasonUnschedulable && strings.HasPrefix(c.Message, "no-room: ") &&
				strings.Contains(c.Message, "the eviction of default/victim on node n1 was refused by a PodDisruptionBudget") &&
				strings.Contains(c.Message, detail) && strings.Contains(c.Message, "not tried again before "+at)
		}
	}
	l.cycleUntil(s, "the preemptor blocked by the budget being processed", blocked("The disruption budget pdb is still being processed", "1970-01-01T00:16:50Z"))
	if n := posts.Load(); n != 1 {
		t.Fatalf("%d evictions posted, want 1 (not retried by client-go)", n)
	}
	for range 3 {
		if _, err := s.Cycle(l.ctx); err != nil {
			t.Fatal(err)
		}
	}
	if n := posts.Load(); n != 1 {
		t.Fatalf("%d evictions posted before the retry time, want 1", n)
	}
	setStatus := func(allowed int32) {
		t.Helper()
		pdb, err = l.cs.PolicyV1().PodDisruptionBudgets("default").Get(l.ctx, "pdb", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		pdb.Status = policyv1.PodDisruptionBudgetStatus{ObservedGeneration: pdb.Generation, DisruptionsAllowed: allowed,
			CurrentHealthy: 1, DesiredHealthy: 1 - allowed, ExpectedPods: 1}
		if _, err := l.cs.PolicyV1().PodDisruptionBudgets("default").UpdateStatus(l.ctx, pdb, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	setStatus(0)
	clock.Store(1010)
	l.cycleUntil(s, "the preemptor blocked by the budget", blocked("The disruption budget pdb needs 1 healthy pods and has 1 currently", "1970-01-01T00:17:00Z"))
	if n := posts.Load(); n != 2 {
		t.Fatalf("%d evictions posted, want 2", n)
	}
	setStatus(1)
	clock.Store(1020)
	l.cycleUntil(s, "the victim evicted", func() bool { return l.get("victim").DeletionTimestamp != nil })
	zero := int64(0)
	if err := l.cs.CoreV1().Pods("default").Delete(l.ctx, "victim", metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatal(err)
	}
	l.cycleUntil(s, "the preemptor bound", func() bool { return l.get("urgent").Spec.NodeName == "n1" })

	// The eviction spent the budget (the apiserver decremented its
	// disruptionsAllowed to 0). On n2, guarded (under the budget, started
	// last, so the first victim) and spare; urgent2 needs one of them gone.
	l.node("n2", "2")
	l.pod(testPod("guarded", "1", func(p *corev1.Pod) {
		p.Spec.PriorityClassName = "low"
		p.Labels = map[string]string{"app": "v"}
	}))
	l.pod(testPod("spare", "1", func(p *corev1.Pod) { p.Spec.PriorityClassName = "low" }))
	l.cycleUntil(s, "guarded and spare bound", func() bool {
		return l.get("guarded").Spec.NodeName == "n2" && l.get("spare").Spec.NodeName == "n2"
	})
	for name, started := range map[string]int64{"spare": 100, "guarded": 200} {
		p := l.get(name)
		p.Status.Phase = corev1.PodRunning
		p.Status.StartTime = &metav1.Time{Time: time.Unix(started, 0)}
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
		if _, err := l.cs.CoreV1().Pods("default").UpdateStatus(l.ctx, p, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := wait.PollUntilContextTimeout(l.ctx, 10*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		s.mu.Lock()
		defer s.mu.Unlock()
		g, sp := s.st.pods["default/guarded"], s.st.pods["default/spare"]
		return g != nil && sp != nil && g.pod.Status.StartTime != nil && sp.pod.Status.StartTime != nil, nil
	}); err != nil {
		t.Fatalf("waiting for the informer to show the start times: %v", err)
	}
	before := posts.Load()
	l.pod(testPod("urgent2", "1", func(p *corev1.Pod) { p.Spec.PriorityClassName = "high" }))
	l.cycleUntil(s, "spare evicted", func() bool { return l.get("spare").DeletionTimestamp != nil })
	if g := l.get("guarded"); g.DeletionTimestamp != nil || posts.Load()-before != 2 {
		t.Fatalf("guarded deleting: %v; %d evictions posted, want 2 (guarded refused, then spare)", g.DeletionTimestamp != nil, posts.Load()-before)
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
