package batch

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	k8stesting "k8s.io/client-go/testing"
	"sigs.k8s.io/yaml"

	"github.com/flotilla-sched/flotilla/kube/kubeconv"
)

// uobj parses a YAML object as the apiserver would serve it (integers as
// int64, through the JSON round trip unstructured does).
func uobj(t *testing.T, y string) *unstructured.Unstructured {
	t.Helper()
	j, err := yaml.YAMLToJSON([]byte(y))
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(j); err != nil {
		t.Fatal(err)
	}
	return u
}

var listKinds = map[schema.GroupVersionResource]string{
	{Group: "batch", Version: "v1", Resource: "jobs"}:                                  "JobList",
	{Group: "jobset.x-k8s.io", Version: "v1alpha2", Resource: "jobsets"}:               "JobSetList",
	{Group: "kubeflow.org", Version: "v1", Resource: "pytorchjobs"}:                    "PyTorchJobList",
	{Group: "ray.io", Version: "v1", Resource: "rayclusters"}:                          "RayClusterList",
	{Group: "ray.io", Version: "v1", Resource: "rayjobs"}:                              "RayJobList",
	{Group: "kubeflow.org", Version: "v2beta1", Resource: "mpijobs"}:                   "MPIJobList",
	{Group: "kueue.x-k8s.io", Version: "v1beta1", Resource: "workloadpriorityclasses"}: "WorkloadPriorityClassList",
}

// ownerFixture is a fixture whose scheduler reads owners through a fake
// dynamic client holding dyn; gets counts its reads.
type ownerFixture struct {
	*fixture
	dyn  *dynamicfake.FakeDynamicClient
	gets atomic.Int64
}

func newOwnerFixture(t *testing.T, dyn []runtime.Object, objs ...runtime.Object) *ownerFixture {
	t.Helper()
	of := &ownerFixture{dyn: dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), listKinds, dyn...)}
	of.dyn.PrependReactor("get", "*", func(k8stesting.Action) (bool, runtime.Object, error) {
		of.gets.Add(1)
		return false, nil, nil
	})
	of.fixture = newFixtureConfig(t, func(_ *fixture, c *Config) { c.Dynamic = of.dyn }, objs...)
	return of
}

func ownedBy(apiVersion, kind, name, uid string) func(*corev1.Pod) {
	yes := true
	return func(p *corev1.Pod) {
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: apiVersion, Kind: kind, Name: name, UID: types.UID(uid), Controller: &yes}}
	}
}

func both(mods ...func(*corev1.Pod)) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		for _, m := range mods {
			m(p)
		}
	}
}

const indexedJob4 = `
apiVersion: batch/v1
kind: Job
metadata: {name: train, namespace: default, uid: u-train}
spec: {completionMode: Indexed, parallelism: 4, completions: 4}`

func (f *fixture) createPod(p *corev1.Pod) {
	f.t.Helper()
	if _, err := f.cs.CoreV1().Pods(p.Namespace).Create(context.Background(), p, metav1.CreateOptions{}); err != nil {
		f.t.Fatal(err)
	}
	f.until("the informer shows "+p.Name, func(st *state) bool { return st.pods[kubeconv.JobID(p)] != nil })
}

// An Indexed Job with parallelism = completions is one gang: with 3 of
// its 4 pods created, none is bound and each says it waits for the rest;
// the 4th pod's arrival binds all four in one cycle.
func TestIndexedJobIsOneGangThatWaitsForAllItsPods(t *testing.T) {
	owned := ownedBy("batch/v1", "Job", "train", "u-train")
	f := newOwnerFixture(t, []runtime.Object{uobj(t, indexedJob4)}, testNode("n1", "8"),
		testPod("train-0", "1", owned), testPod("train-1", "1", owned), testPod("train-2", "1", owned))
	rep := f.cycle()
	if rep.Bound != 0 {
		t.Fatalf("bound %d of an incomplete gang", rep.Bound)
	}
	ps := f.statusPatches()
	if len(ps) != 3 || !strings.Contains(ps[0], "gang-incomplete") || !strings.Contains(ps[0], "3 of 4") ||
		!strings.Contains(ps[0], "waiting for the rest of its pods to be created (Job default/train: Indexed") {
		t.Fatalf("status patches %v: want 3 saying the gang waits for its pods", ps)
	}
	f.createPod(testPod("train-3", "1", owned))
	rep = f.cycle()
	if rep.Bound != 4 {
		t.Fatalf("bound %d, want the whole gang of 4 (%v)", rep.Bound, rep.Errors)
	}
	for _, a := range rep.Result.Scheduled {
		if a.Job.Gang.ID != "default/Job/train@u-train" || a.Job.Gang.Cardinality != 4 || a.Job.JobSet != "default/Job/train" {
			t.Fatalf("job %+v: want gang default/Job/train@u-train of 4 in set default/Job/train", a.Job)
		}
	}
	if n := f.gets.Load(); n != 1 {
		t.Fatalf("%d reads of the owner, want 1 (cached for its pods)", n)
	}
}

// A JobSet's pods (owned by its child Jobs) are one gang of all its
// replicated jobs, in the queue its Kueue label names: 7 of 8 pods do not
// bind; the 8th binds all.
func TestJobSetPodsAreOneGangInTheKueueQueue(t *testing.T) {
	child := func(i int) *unstructured.Unstructured {
		return uobj(t, fmt.Sprintf(`
apiVersion: batch/v1
kind: Job
metadata:
  name: js-w-%d
  namespace: default
  uid: u-child-%d
  ownerReferences: [{apiVersion: jobset.x-k8s.io/v1alpha2, kind: JobSet, name: js, uid: u-js, controller: true}]
spec: {completionMode: Indexed, parallelism: 4, completions: 4}`, i, i))
	}
	js := uobj(t, `
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata: {name: js, namespace: default, uid: u-js, labels: {kueue.x-k8s.io/queue-name: research}}
spec:
  replicatedJobs:
  - name: w
    replicas: 2
    template: {spec: {completionMode: Indexed, parallelism: 4, completions: 4}}`)
	var pods []runtime.Object
	pods = append(pods, testNode("n1", "8"))
	for i := range 7 {
		pods = append(pods, testPod(fmt.Sprintf("js-w-%d-%d", i/4, i%4), "1", ownedBy("batch/v1", "Job", fmt.Sprintf("js-w-%d", i/4), fmt.Sprintf("u-child-%d", i/4))))
	}
	f := newOwnerFixture(t, []runtime.Object{child(0), child(1), js}, pods...)
	if rep := f.cycle(); rep.Bound != 0 {
		t.Fatalf("bound %d of 7 of a gang of 8", rep.Bound)
	}
	f.createPod(testPod("js-w-1-3", "1", ownedBy("batch/v1", "Job", "js-w-1", "u-child-1")))
	rep := f.cycle()
	if rep.Bound != 8 {
		t.Fatalf("bound %d, want 8 (%v)", rep.Bound, rep.Errors)
	}
	for _, a := range rep.Result.Scheduled {
		if a.Job.Queue != "research" || a.Job.Gang.ID != "default/JobSet/js@u-js" || a.Job.JobSet != "default/JobSet/js" {
			t.Fatalf("job %+v: want queue research, gang of the JobSet", a.Job)
		}
	}
}

// An owner whose CRD is not installed (the dynamic client finds nothing)
// costs one read: its pod is a bare pod, bound alone.
func TestOwnerOfAnUninstalledCRDLeavesABarePod(t *testing.T) {
	f := newOwnerFixture(t, nil, testNode("n1", "4"), testPod("pt-master-0", "1", ownedBy("kubeflow.org/v1", "PyTorchJob", "pt", "u-pt")))
	rep := f.cycle()
	if rep.Bound != 1 || rep.Result.Scheduled[0].Job.Gang.ID != "" {
		t.Fatalf("bound %d: want the pod bound alone", rep.Bound)
	}
	f.cycle()
	if n := f.gets.Load(); n != 1 {
		t.Fatalf("%d reads, want 1", n)
	}
}

// Pods owned by kinds Flotilla does not group by (a ReplicaSet) are never
// read: no API call.
func TestUnknownOwnerKindIsNotRead(t *testing.T) {
	f := newOwnerFixture(t, nil, testNode("n1", "4"), testPod("rs-x", "1", ownedBy("apps/v1", "ReplicaSet", "rs", "u-rs")))
	if rep := f.cycle(); rep.Bound != 1 {
		t.Fatalf("bound %d", rep.Bound)
	}
	if n := f.gets.Load(); n != 0 {
		t.Fatalf("%d reads of a ReplicaSet owner", n)
	}
}

// A malformed owner spec is a condition naming the owner's field on each
// pod, never a panic and never a bind.
func TestMalformedOwnerSpecGetsConditionNamingTheField(t *testing.T) {
	bad := uobj(t, `
apiVersion: batch/v1
kind: Job
metadata: {name: train, namespace: default, uid: u-train}
spec: {completionMode: Indexed, parallelism: -4, completions: 4}`)
	f := newOwnerFixture(t, []runtime.Object{bad}, testNode("n1", "8"), testPod("train-0", "1", ownedBy("batch/v1", "Job", "train", "u-train")))
	rep := f.cycle()
	ps := f.statusPatches()
	if rep.Bound != 0 || len(ps) != 1 || !strings.Contains(ps[0], ReasonInvalid) || !strings.Contains(ps[0], `Job default/train spec.parallelism \"-4\": must not be negative`) {
		t.Fatalf("bound %d, status patches %v: want one naming spec.parallelism", rep.Bound, ps)
	}
}

// A transient read error is shown and read again next cycle.
func TestOwnerReadErrorIsRetriedNextCycle(t *testing.T) {
	owned := ownedBy("batch/v1", "Job", "train", "u-train")
	f := newOwnerFixture(t, []runtime.Object{uobj(t, indexedJob4)}, testNode("n1", "8"))
	var fail atomic.Bool
	fail.Store(true)
	f.dyn.PrependReactor("get", "jobs", func(k8stesting.Action) (bool, runtime.Object, error) {
		if fail.Load() {
			return true, nil, errors.New("injected: apiserver unavailable")
		}
		return false, nil, nil
	})
	for i := range 4 {
		f.createPod(testPod(fmt.Sprintf("train-%d", i), "1", owned))
	}
	if rep := f.cycle(); rep.Bound != 0 {
		t.Fatalf("bound %d without the owner", rep.Bound)
	}
	if ps := f.statusPatches(); len(ps) != 4 || !strings.Contains(ps[0], "injected: apiserver unavailable") {
		t.Fatalf("status patches %v: want the read error shown", ps)
	}
	fail.Store(false)
	if rep := f.cycle(); rep.Bound != 4 {
		t.Fatalf("bound %d after the owner could be read, want 4", rep.Bound)
	}
}

// Armada's gang annotations win over the owner's gang.
func TestArmadaGangAnnotationsWinOverTheOwner(t *testing.T) {
	owned := ownedBy("batch/v1", "Job", "train", "u-train")
	armada := func(p *corev1.Pod) {
		p.Annotations = map[string]string{kubeconv.AnnotationGangID: "g", kubeconv.AnnotationGangCardinality: "2"}
	}
	f := newOwnerFixture(t, []runtime.Object{uobj(t, indexedJob4)}, testNode("n1", "8"),
		testPod("train-0", "1", both(owned, armada)), testPod("train-1", "1", both(owned, armada)))
	rep := f.cycle()
	if rep.Bound != 2 || rep.Result.Scheduled[0].Job.Gang.ID != "default/g" {
		t.Fatalf("bound %d: want Armada's gang of 2", rep.Bound)
	}
}

// Kueue's priority class orders jobs within their queue: higher value
// first; a class that does not exist is a condition naming it.
func TestKueuePriorityClassOrdersWithinTheQueue(t *testing.T) {
	class := func(name string, v int) *unstructured.Unstructured {
		return uobj(t, fmt.Sprintf(`{apiVersion: kueue.x-k8s.io/v1beta1, kind: WorkloadPriorityClass, metadata: {name: %s}, value: %d}`, name, v))
	}
	labelled := func(q, c string) func(*corev1.Pod) {
		return func(p *corev1.Pod) {
			p.Labels = map[string]string{kubeconv.LabelKueueQueue: q, kubeconv.LabelKueuePriorityClass: c}
		}
	}
	f := newOwnerFixture(t, []runtime.Object{class("low", -10), class("high", 1000)}, testNode("n1", "1"),
		testPod("a-low", "1", labelled("q", "low")), testPod("b-high", "1", labelled("q", "high")),
		testPod("c-none", "1", labelled("q", "missing")))
	rep := f.cycle()
	if rep.Bound != 1 || f.binds[0] != "b-high@n1" {
		t.Fatalf("binds %v: want b-high first", f.binds)
	}
	j := rep.Result.Scheduled[0].Job
	if j.Queue != "q" || j.Priority != math.MaxInt32-1000 {
		t.Fatalf("job %+v: want queue q, priority MaxInt32-1000", j)
	}
	var saw bool
	for _, p := range f.statusPatches() {
		if strings.HasPrefix(p, "c-none ") && strings.Contains(p, ReasonInvalid) && strings.Contains(p, `no WorkloadPriorityClass \"missing\"`) {
			saw = true
		}
	}
	if !saw {
		t.Fatalf("status patches %v: want c-none's naming the missing class", f.statusPatches())
	}
}

// Without Config.Dynamic no owner is read: the pods of an Indexed Job are
// independent, as before owners were read.
func TestNoDynamicClientSchedulesPodsAlone(t *testing.T) {
	owned := ownedBy("batch/v1", "Job", "train", "u-train")
	f := newFixture(t, testNode("n1", "8"), testPod("train-0", "1", owned))
	if rep := f.cycle(); rep.Bound != 1 {
		t.Fatalf("bound %d", rep.Bound)
	}
}

const indexedJob2 = `
apiVersion: batch/v1
kind: Job
metadata: {name: pair, namespace: default, uid: u-pair}
spec: {completionMode: Indexed, parallelism: 2, completions: 2}`

// A pod the Job controller creates to replace a failed member of a gang
// that already runs is scheduled alone: waiting for a whole gang would
// wait forever.
func TestReplacementPodOfARunningGangIsScheduledAlone(t *testing.T) {
	owned := ownedBy("batch/v1", "Job", "pair", "u-pair")
	f := newOwnerFixture(t, []runtime.Object{uobj(t, indexedJob2)}, testNode("n1", "8"),
		testPod("pair-0", "1", owned), testPod("pair-1", "1", owned))
	if rep := f.cycle(); rep.Bound != 2 {
		t.Fatalf("bound %d, want the gang of 2", rep.Bound)
	}
	f.until("both running", func(st *state) bool { return st.gangRunning["default/Job/pair@u-pair"] == 2 })
	// pair-1 failed; its replacement arrives.
	failed, err := f.cs.CoreV1().Pods("default").Get(context.Background(), "pair-1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	failed.Status.Phase = corev1.PodFailed
	if _, err := f.cs.CoreV1().Pods("default").UpdateStatus(context.Background(), failed, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.until("one running", func(st *state) bool { return st.gangRunning["default/Job/pair@u-pair"] == 1 })
	f.createPod(testPod("pair-1-again", "1", owned))
	rep := f.cycle()
	if rep.Bound != 1 || rep.Result.Scheduled[0].Job.Gang.ID != "" {
		t.Fatalf("bound %d: want the replacement bound alone", rep.Bound)
	}
}

// A member read while its gang was not running yet (the informer showed
// the pod before its mates' bindings) is scheduled alone by the first
// cycle once the gang runs.
func TestPendingMemberOfAGangThatStartedRejoinsAlone(t *testing.T) {
	owned := ownedBy("batch/v1", "Job", "pair", "u-pair")
	f := newOwnerFixture(t, []runtime.Object{uobj(t, indexedJob2)}, testNode("n1", "8"), testPod("late", "1", owned))
	f.cycle() // reads the owner; "late" waits as 1 of 2
	// Its gang is found running (bound by another replica, say).
	for i := range 2 {
		f.createPod(testPod(fmt.Sprintf("pair-%d", i), "1", both(owned, func(p *corev1.Pod) { p.Spec.NodeName = "n1" })))
	}
	f.until("the gang running", func(st *state) bool { return st.gangRunning["default/Job/pair@u-pair"] == 2 })
	// Read again as a gang member, as the informer may leave it.
	f.s.mu.Lock()
	ps := f.s.st.pods["default/late"]
	f.s.unqueue("default/late")
	j := *ps.job
	j.Gang = ps.owner.Gang
	ps.job = &j
	if err := f.s.st.store.Add(ps.job); err != nil {
		t.Fatal(err)
	}
	f.s.mu.Unlock()
	if rep := f.cycle(); rep.Bound != 1 || f.binds[0] != "late@n1" {
		t.Fatalf("bound %d (%v): want late bound alone", rep.Bound, f.binds)
	}
}

// A gang whose binding fails midway: the members bound are being deleted,
// never counted as its running members, so the others still wait as a
// gang and are not bound alone as replacements.
func TestRolledBackMembersDoNotMakeTheRestLoneJobs(t *testing.T) {
	owned := ownedBy("batch/v1", "Job", "pair", "u-pair")
	f := newOwnerFixture(t, []runtime.Object{uobj(t, indexedJob2)}, testNode("n1", "8"),
		testPod("pair-0", "1", owned), testPod("pair-1", "1", owned))
	// Deletes take their grace period: the pod stays, bound.
	f.cs.PrependReactor("delete", "pods", func(k8stesting.Action) (bool, runtime.Object, error) { return true, nil, nil })
	f.failOn["pair-1"] = true
	rep := f.cycle()
	if rep.Bound != 0 || len(f.binds) != 1 || f.binds[0] != "pair-0@n1" {
		t.Fatalf("bound %d, binds %v: want pair-0 bound then rolled back", rep.Bound, f.binds)
	}
	f.until("pair-0 bound in the informer", func(st *state) bool { return st.pods["default/pair-0"].pod.Spec.NodeName == "n1" })
	delete(f.failOn, "pair-1")
	for range 3 {
		f.cycle()
	}
	if len(f.binds) != 1 {
		t.Fatalf("binds %v: pair-1 was bound alone while its gang mate was being deleted", f.binds)
	}
}

// A gang left partly bound (the last leader bound one member, then lost
// its lease) is finished by the first cycle that sees it: the members
// still pending are bound alone, never left waiting for a whole gang
// that cannot form again.
func TestPartlyBoundGangIsFinishedAtTheFirstCycle(t *testing.T) {
	gang := func(p *corev1.Pod) {
		p.Annotations = map[string]string{kubeconv.AnnotationGangID: "g", kubeconv.AnnotationGangCardinality: "3"}
	}
	f := newFixture(t, testNode("n1", "8"),
		testPod("g-0", "1", both(gang, func(p *corev1.Pod) { p.Spec.NodeName = "n1" })),
		testPod("g-1", "1", gang), testPod("g-2", "1", gang))
	rep := f.cycle()
	if rep.Bound != 2 || len(f.binds) != 2 {
		t.Fatalf("bound %d (%v): want the 2 pending members bound at the first cycle", rep.Bound, f.binds)
	}
}
