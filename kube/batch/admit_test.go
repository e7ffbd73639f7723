package batch

import (
	"context"
	"errors"
	"fmt"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/kube/kubeconv"
)

// suspendedJob is a suspended Job of parallelism = completions = n pods
// of 1 cpu each, in queue q.
func suspendedJobObj(name string, n int32, mod func(*batchv1.Job)) *batchv1.Job {
	j := jobOf(name, n, n, true, "1")
	j.UID = types.UID("u-" + name)
	yes := true
	j.Spec.Suspend = &yes
	j.Labels = map[string]string{kubeconv.LabelQueue: "q"}
	if mod != nil {
		mod(j)
	}
	return j
}

func newAdmitFixture(t *testing.T, objs ...runtime.Object) *fixture {
	t.Helper()
	return newFixtureConfig(t, func(_ *fixture, c *Config) { c.AdmitSuspended = true }, objs...)
}

func (f *fixture) jobSuspended(name string) bool {
	f.t.Helper()
	j, err := f.cs.BatchV1().Jobs("default").Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	return j.Spec.Suspend != nil && *j.Spec.Suspend
}

func (f *fixture) addNode(n *corev1.Node) {
	f.t.Helper()
	if _, err := f.cs.CoreV1().Nodes().Create(context.Background(), n, metav1.CreateOptions{}); err != nil {
		f.t.Fatal(err)
	}
	f.until("the informer shows node "+n.Name, func(st *state) bool { return st.nodes[n.Name] != nil })
}

// A suspended Job with a queue label is unsuspended only once its whole
// gang fits: with room for 3 of 4 it stays suspended, a node later it is
// admitted, and the room stays held for its pods (another pod that would
// fit is not bound) until they exist.
func TestSuspendedJobAdmittedWhenItsWholeGangFits(t *testing.T) {
	f := newAdmitFixture(t, testNode("n1", "3"), suspendedJobObj("train", 4, nil))
	for range 2 {
		if rep := f.cycle(); rep.Admitted != 0 || rep.Bound != 0 {
			t.Fatalf("admitted %d, bound %d with room for 3 of 4", rep.Admitted, rep.Bound)
		}
	}
	if !f.jobSuspended("train") {
		t.Fatal("unsuspended with room for 3 of 4")
	}
	f.addNode(testNode("n2", "2"))
	if rep := f.cycle(); rep.Admitted != 1 || rep.AdmitFailed != 0 {
		t.Fatalf("admitted %d (errors %v), want the Job", rep.Admitted, rep.Errors)
	}
	if f.jobSuspended("train") {
		t.Fatal("the Job is still suspended after its admission")
	}
	// Its room is held: 1 cpu is left, the 4 held until its pods exist.
	f.createPod(testPod("other", "2", nil))
	if rep := f.cycle(); rep.Bound != 0 || rep.Admitted != 0 {
		t.Fatalf("bound %d, admitted %d: the admitted Job's room was given away (or it was admitted twice)", rep.Bound, rep.Admitted)
	}
	yes := true
	for i := range 4 {
		f.createPod(testPod(fmt.Sprintf("train-%d", i), "1", func(p *corev1.Pod) {
			p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: "train", UID: "u-train", Controller: &yes}}
		}))
	}
	rep := f.cycle()
	if rep.Bound != 4 {
		t.Fatalf("bound %d (%v), want the Job's 4 pods in the room it held", rep.Bound, f.binds)
	}
	for _, b := range f.binds {
		if b[:5] == "other" {
			t.Fatalf("binds %v: other took the Job's room", f.binds)
		}
	}
}

// The held room is let go after AdmitHold when the pods never come.
func TestAdmittedRoomReleasedAfterTheHold(t *testing.T) {
	f := newAdmitFixture(t, testNode("n1", "4"), suspendedJobObj("train", 4, nil))
	if rep := f.cycle(); rep.Admitted != 1 {
		t.Fatalf("admitted %d", rep.Admitted)
	}
	f.createPod(testPod("other", "1", nil))
	if rep := f.cycle(); rep.Bound != 0 {
		t.Fatalf("bound %d inside the hold", rep.Bound)
	}
	f.clock.Add(int64(AdmitHold.Seconds()))
	if rep := f.cycle(); rep.Bound != 1 {
		t.Fatalf("bound %d after the hold, want other", rep.Bound)
	}
}

// Jobs not on the suspend path are never touched: no queue label, another
// scheduler's pods, not suspended.
func TestOnlySuspendedJobsOfOursWithAQueueLabelAreAdmitted(t *testing.T) {
	f := newAdmitFixture(t, testNode("n1", "64"),
		suspendedJobObj("no-label", 2, func(j *batchv1.Job) { j.Labels = nil }),
		suspendedJobObj("theirs", 2, func(j *batchv1.Job) { j.Spec.Template.Spec.SchedulerName = "default-scheduler" }),
		suspendedJobObj("running", 2, func(j *batchv1.Job) { no := false; j.Spec.Suspend = &no }),
		suspendedJobObj("kueue", 2, func(j *batchv1.Job) { j.Labels = map[string]string{kubeconv.LabelKueueQueue: "lq"} }))
	rep := f.cycle()
	if rep.Admitted != 1 || f.jobSuspended("kueue") {
		t.Fatalf("admitted %d: want the Kueue-labelled Job only", rep.Admitted)
	}
	for _, name := range []string{"no-label", "theirs"} {
		if !f.jobSuspended(name) {
			t.Fatalf("%s unsuspended", name)
		}
	}
	for _, a := range f.cs.Actions() {
		if a.GetVerb() == "patch" && a.GetResource().Resource == "jobs" && a.(k8stesting.PatchAction).GetName() != "kueue" {
			t.Fatalf("patched %s", a.(k8stesting.PatchAction).GetName())
		}
	}
}

// A failed unsuspend queues the Job again; a later cycle admits it.
func TestAdmitFailureIsRetried(t *testing.T) {
	f := newAdmitFixture(t, testNode("n1", "4"), suspendedJobObj("train", 2, nil))
	fail := true
	f.cs.PrependReactor("patch", "jobs", func(k8stesting.Action) (bool, runtime.Object, error) {
		f.mu.Lock()
		defer f.mu.Unlock()
		if fail {
			fail = false
			return true, nil, errors.New("injected: patch refused")
		}
		return false, nil, nil
	})
	if rep := f.cycle(); rep.Admitted != 0 || rep.AdmitFailed != 1 {
		t.Fatalf("admitted %d, failed %d: want the failure", rep.Admitted, rep.AdmitFailed)
	}
	if rep := f.cycle(); rep.Admitted != 1 || f.jobSuspended("train") {
		t.Fatalf("admitted %d: want the retry to admit it", rep.Admitted)
	}
}

// A Job whose template is not a valid job stays suspended, never admitted.
func TestSuspendedJobWithABadTemplateStaysSuspended(t *testing.T) {
	f := newAdmitFixture(t, testNode("n1", "4"), suspendedJobObj("bad", 2, func(j *batchv1.Job) {
		j.Spec.Template.Annotations = map[string]string{kubeconv.AnnotationPriority: "-3"}
	}))
	if rep := f.cycle(); rep.Admitted != 0 || !f.jobSuspended("bad") {
		t.Fatalf("admitted %d", rep.Admitted)
	}
	f.s.mu.Lock()
	defer f.s.mu.Unlock()
	ps := f.s.st.virtual["default/bad"+admitSep+"0"]
	if ps == nil || ps.kind != kindInvalid || !errors.Is(ps.err, flotilla.ErrOutOfRange) {
		t.Fatalf("placeholder %+v: want invalid, naming the priority", ps)
	}
}

const suspendedJobSet = `
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata: {name: js, namespace: default, uid: u-js, labels: {kueue.x-k8s.io/queue-name: research}}
spec:
  suspend: true
  replicatedJobs:
  - name: driver
    template:
      spec:
        parallelism: 1
        completions: 1
        template:
          spec:
            schedulerName: flotilla
            restartPolicy: Never
            containers: [{name: c, image: busybox, resources: {requests: {cpu: "2"}}}]
  - name: w
    replicas: 2
    template:
      spec:
        completionMode: Indexed
        parallelism: 4
        completions: 4
        template:
          spec:
            schedulerName: flotilla
            restartPolicy: Never
            containers: [{name: c, image: busybox, resources: {requests: {cpu: "1"}}}]`

// newJobSetFixture serves JobSets (discovery and the dynamic client) and
// turns the suspend path on.
func newJobSetFixture(t *testing.T, dyn []runtime.Object, objs ...runtime.Object) *ownerFixture {
	t.Helper()
	of := &ownerFixture{dyn: dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), listKinds, dyn...)}
	of.fixture = newFixtureConfig(t, func(f *fixture, c *Config) {
		f.cs.Resources = []*metav1.APIResourceList{{GroupVersion: "jobset.x-k8s.io/v1alpha2", APIResources: []metav1.APIResource{{Name: "jobsets", Namespaced: true, Kind: "JobSet"}}}}
		c.Dynamic, c.AdmitSuspended = of.dyn, true
	}, objs...)
	return of
}

func (of *ownerFixture) jobSetSuspended(name string) bool {
	of.t.Helper()
	u, err := of.dyn.Resource(jobSets).Namespace("default").Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		of.t.Fatal(err)
	}
	v, _, _ := unstructured.NestedBool(u.Object, "spec", "suspend")
	return v
}

// A suspended JobSet is admitted whole: its driver (2 cpu) and 2 × 4
// workers (1 cpu) are one gang of 9 placeholders of 10 cpu; with 9 cpu it
// stays suspended, with 10 it is unsuspended, and its pods (owned by its
// child Jobs) are bound into the room held, each where a placeholder of
// its size was.
func TestSuspendedJobSetAdmittedWholeThenItsPodsBound(t *testing.T) {
	child := func(rj string, i int) *unstructured.Unstructured {
		return uobj(t, fmt.Sprintf(`
apiVersion: batch/v1
kind: Job
metadata:
  name: js-%s-%d
  namespace: default
  uid: u-%s-%d
  ownerReferences: [{apiVersion: jobset.x-k8s.io/v1alpha2, kind: JobSet, name: js, uid: u-js, controller: true}]
spec: {completionMode: Indexed, parallelism: 4, completions: 4}`, rj, i, rj, i))
	}
	f := newJobSetFixture(t, []runtime.Object{uobj(t, suspendedJobSet), child("driver", 0), child("w", 0), child("w", 1)},
		testNode("n1", "5"), testNode("n2", "4"))
	if rep := f.cycle(); rep.Admitted != 0 || !f.jobSetSuspended("js") {
		t.Fatalf("admitted %d with 9 of 10 cpu", rep.Admitted)
	}
	f.addNode(testNode("n3", "1"))
	if rep := f.cycle(); rep.Admitted != 1 || f.jobSetSuspended("js") {
		t.Fatalf("admitted %d (%v): want the JobSet unsuspended", rep.Admitted, rep.Errors)
	}
	yes := true
	owned := func(job string) func(*corev1.Pod) {
		return func(p *corev1.Pod) {
			p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: job, UID: types.UID("u-" + job[3:]), Controller: &yes}}
		}
	}
	f.createPod(testPod("js-driver-0-0", "2", owned("js-driver-0")))
	for r := range 2 {
		for i := range 4 {
			f.createPod(testPod(fmt.Sprintf("js-w-%d-%d", r, i), "1", owned(fmt.Sprintf("js-w-%d", r))))
		}
	}
	rep := f.cycle() // reads the child Jobs' owner, binds into the held room
	if rep.Bound != 9 {
		rep2 := f.cycle()
		t.Fatalf("bound %d then %d (%v), want the 9 pods at once", rep.Bound, rep2.Bound, f.binds)
	}
}

// A JobSet whose spec the suspend path cannot read stays suspended.
func TestSuspendedJobSetWithABadSpecStaysSuspended(t *testing.T) {
	bad := uobj(t, `
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata: {name: js, namespace: default, uid: u-js, labels: {flotilla.dev/queue: q}}
spec:
  suspend: true
  replicatedJobs: [{name: w, replicas: -1, template: {spec: {template: {spec: {schedulerName: flotilla}}}}}]`)
	f := newJobSetFixture(t, []runtime.Object{bad}, testNode("n1", "64"))
	if rep := f.cycle(); rep.Admitted != 0 || !f.jobSetSuspended("js") {
		t.Fatalf("admitted %d", rep.Admitted)
	}
	f.s.mu.Lock()
	defer f.s.mu.Unlock()
	ps := f.s.st.virtual["default/js"+admitSep+"0"]
	if ps == nil || ps.err == nil || !errors.Is(ps.err, flotilla.ErrOutOfRange) {
		t.Fatalf("placeholder %+v: want the replicas' error", ps)
	}
}
