package batch

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"

	"github.com/flotilla-sched/flotilla"
)

// newCustomFixture serves the custom kinds of the suspend path
// (discovery and the dynamic client) and turns the path on.
func newCustomFixture(t *testing.T, dyn []runtime.Object, objs ...runtime.Object) *ownerFixture {
	t.Helper()
	of := &ownerFixture{dyn: dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), listKinds, dyn...)}
	of.fixture = newFixtureConfig(t, func(f *fixture, c *Config) {
		for _, k := range customKinds {
			gvr := k.resources[0]
			f.cs.Resources = append(f.cs.Resources, &metav1.APIResourceList{GroupVersion: gvr.GroupVersion().String(),
				APIResources: []metav1.APIResource{{Name: gvr.Resource, Namespaced: true, Kind: k.kind}}})
		}
		c.Dynamic, c.AdmitSuspended = of.dyn, true
	}, objs...)
	return of
}

func (of *ownerFixture) suspendedAt(gvr schema.GroupVersionResource, name string, path ...string) bool {
	of.t.Helper()
	u, err := of.dyn.Resource(gvr).Namespace("default").Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		of.t.Fatal(err)
	}
	v, _, _ := unstructured.NestedBool(u.Object, path...)
	return v
}

const podTemplateCPU1 = `{spec: {schedulerName: flotilla, containers: [{name: c, image: busybox, resources: {requests: {cpu: "1"}}}]}}`

const suspendedPyTorchJob = `
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: pt, namespace: default, uid: u-pt, labels: {kueue.x-k8s.io/queue-name: research}}
spec:
  runPolicy: {suspend: true}
  pytorchReplicaSpecs:
    Master: {replicas: 1, template: ` + podTemplateCPU1 + `}
    Worker: {replicas: 3, template: ` + podTemplateCPU1 + `}`

const suspendedRayJob = `
apiVersion: ray.io/v1
kind: RayJob
metadata: {name: rj, namespace: default, uid: u-rj, labels: {flotilla.dev/queue: research}}
spec:
  suspend: true
  rayClusterSpec:
    headGroupSpec: {template: ` + podTemplateCPU1 + `}
    workerGroupSpecs: [{groupName: w, minReplicas: 2, replicas: 5, template: ` + podTemplateCPU1 + `}]`

const suspendedMPIJob = `
apiVersion: kubeflow.org/v2beta1
kind: MPIJob
metadata: {name: mpi, namespace: default, uid: u-mpi, labels: {flotilla.dev/queue: research}}
spec:
  runPolicy: {suspend: true}
  mpiReplicaSpecs:
    Launcher: {template: ` + podTemplateCPU1 + `}
    Worker: {replicas: 3, template: ` + podTemplateCPU1 + `}`

// A suspended PyTorchJob, MPIJob or RayJob with a queue label is admitted
// (unsuspended at the field its operator reads) only once its whole gang
// fits: master + 3 workers, launcher + 3 workers, head + minReplicas 2
// workers (not its 5 replicas). With one cpu short it stays suspended; a
// node later it is admitted.
func TestSuspendedTrainingJobsAdmittedWhenTheirWholeGangFits(t *testing.T) {
	for _, tc := range []struct {
		name, obj string
		gvr       schema.GroupVersionResource
		path      []string
		pods      int
	}{
		{"PyTorchJob", suspendedPyTorchJob, pyTorchJobs, []string{"spec", "runPolicy", "suspend"}, 4},
		{"MPIJob", suspendedMPIJob, mpiJobs, []string{"spec", "runPolicy", "suspend"}, 4},
		{"RayJob", suspendedRayJob, rayJobs, []string{"spec", "suspend"}, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u := uobj(t, tc.obj)
			f := newCustomFixture(t, []runtime.Object{u}, testNode("n1", "1"), testNode("n2", string(rune('0'+tc.pods-2))))
			if rep := f.cycle(); rep.Admitted != 0 || !f.suspendedAt(tc.gvr, u.GetName(), tc.path...) {
				t.Fatalf("admitted %d with room for %d of %d pods", rep.Admitted, tc.pods-1, tc.pods)
			}
			f.addNode(testNode("n3", "1"))
			rep := f.cycle()
			if rep.Admitted != 1 || f.suspendedAt(tc.gvr, u.GetName(), tc.path...) {
				t.Fatalf("admitted %d (%v): want it unsuspended", rep.Admitted, rep.Errors)
			}
			if n := len(rep.Result.Scheduled); n != tc.pods {
				t.Fatalf("%d placeholders placed, want %d", n, tc.pods)
			}
		})
	}
}

// A training job whose spec the suspend path cannot read stays suspended,
// and the reader names the field.
func TestCustomWorkloadReadersNameTheBadField(t *testing.T) {
	for _, tc := range []struct {
		name, obj, field string
		read             func(*unstructured.Unstructured) suspendable
		kind             error // nil: any
	}{
		{"no replica specs", `{apiVersion: kubeflow.org/v1, kind: PyTorchJob, metadata: {name: pt, namespace: d}, spec: {runPolicy: {suspend: true}}}`,
			"PyTorchJob d/pt spec.pytorchReplicaSpecs", fromReplicaSpecs("pytorchReplicaSpecs"), nil},
		{"negative replicas", `{apiVersion: kubeflow.org/v1, kind: PyTorchJob, metadata: {name: pt, namespace: d}, spec: {pytorchReplicaSpecs: {Worker: {replicas: -1, template: {}}}}}`,
			"PyTorchJob d/pt spec.pytorchReplicaSpecs.Worker.replicas", fromReplicaSpecs("pytorchReplicaSpecs"), nil},
		{"no template", `{apiVersion: kubeflow.org/v2beta1, kind: MPIJob, metadata: {name: m, namespace: d}, spec: {mpiReplicaSpecs: {Launcher: {replicas: 1}}}}`,
			"MPIJob d/m spec.mpiReplicaSpecs.Launcher.template", fromReplicaSpecs("mpiReplicaSpecs"), nil},
		{"no head", `{apiVersion: ray.io/v1, kind: RayJob, metadata: {name: r, namespace: d}, spec: {suspend: true}}`,
			"RayJob d/r spec.rayClusterSpec.headGroupSpec", fromRayJob, flotilla.ErrRequired},
		{"head not an object", `{apiVersion: ray.io/v1, kind: RayJob, metadata: {name: r, namespace: d}, spec: {rayClusterSpec: {headGroupSpec: [1]}}}`,
			"RayJob d/r spec.rayClusterSpec.headGroupSpec \"[1]\"", fromRayJob, flotilla.ErrMalformed},
		{"worker groups not a list", `{apiVersion: ray.io/v1, kind: RayJob, metadata: {name: r, namespace: d}, spec: {rayClusterSpec: {headGroupSpec: {template: {}}, workerGroupSpecs: {a: 1}}}}`,
			"RayJob d/r spec.rayClusterSpec.workerGroupSpecs \"map[a:1]\"", fromRayJob, flotilla.ErrMalformed},
		{"replicated jobs not a list", `{apiVersion: jobset.x-k8s.io/v1alpha2, kind: JobSet, metadata: {name: js, namespace: d}, spec: {replicatedJobs: 2}}`,
			"JobSet d/js spec.replicatedJobs \"2\"", fromJobSet, flotilla.ErrMalformed},
		{"replica specs not an object", `{apiVersion: kubeflow.org/v1, kind: PyTorchJob, metadata: {name: pt, namespace: d}, spec: {pytorchReplicaSpecs: 3}}`,
			"PyTorchJob d/pt spec.pytorchReplicaSpecs \"3\"", fromReplicaSpecs("pytorchReplicaSpecs"), flotilla.ErrMalformed},
		{"bad minReplicas", `{apiVersion: ray.io/v1, kind: RayJob, metadata: {name: r, namespace: d}, spec: {rayClusterSpec: {headGroupSpec: {template: {}}, workerGroupSpecs: [{minReplicas: "2", template: {}}]}}}`,
			"RayJob d/r spec.rayClusterSpec.workerGroupSpecs[0].minReplicas", fromRayJob, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := tc.read(uobj(t, tc.obj))
			var fe *flotilla.FieldError
			if !errors.As(w.err, &fe) || !strings.HasPrefix(fe.Error(), tc.field) {
				t.Fatalf("error %v: want one naming %s", w.err, tc.field)
			}
			if tc.kind != nil && !errors.Is(w.err, tc.kind) {
				t.Fatalf("error %v: want %v", w.err, tc.kind)
			}
		})
	}
}

// An admitted RayJob whose cluster runs more workers than minReplicas
// (replicas 5 > minReplicas 2) binds its head and its 2 oldest workers of
// the group into the room held at admission; the other workers are lone
// jobs. Until the head exists the room stays held; an older pod of the
// same queue that needs the whole node never takes it.
func TestAdmittedRayJobBindsHeadAndOldestMinReplicasIntoTheHeldRoom(t *testing.T) {
	rc := uobj(t, `
apiVersion: ray.io/v1
kind: RayCluster
metadata:
  name: rj-raycluster
  namespace: default
  uid: u-rc
  ownerReferences: [{apiVersion: ray.io/v1, kind: RayJob, name: rj, uid: u-rj, controller: true}]
spec:
  headGroupSpec: {template: {}}
  workerGroupSpecs: [{groupName: w, minReplicas: 2, replicas: 5}]`)
	f := newCustomFixture(t, []runtime.Object{uobj(t, suspendedRayJob), rc}, testNode("n1", "3"))
	if rep := f.cycle(); rep.Admitted != 1 {
		t.Fatalf("admitted %d (%v), want the RayJob", rep.Admitted, rep.Errors)
	}
	at := func(s int64, labels map[string]string) func(*corev1.Pod) {
		return func(p *corev1.Pod) { p.CreationTimestamp, p.Labels = metav1.Unix(s, 0), labels }
	}
	owned := ownedBy("ray.io/v1", "RayCluster", "rj-raycluster", "u-rc")
	f.createPod(testPod("other", "3", at(1, map[string]string{"flotilla.dev/queue": "research"})))
	for i := range 5 {
		f.createPod(testPod(fmt.Sprintf("w-%d", i), "1", both(owned, at(int64(20-i), map[string]string{"ray.io/group": "w"}))))
	}
	if rep := f.cycle(); len(f.binds) != 0 {
		t.Fatalf("bound %v (%v) before the head exists: want the room held for it", f.binds, rep.Errors)
	}
	f.createPod(testPod("head", "1", both(owned, at(30, map[string]string{labelRayNodeType: "head", "ray.io/group": "headgroup"}))))
	rep := f.cycle()
	slices.Sort(f.binds)
	if want := []string{"head@n1", "w-3@n1", "w-4@n1"}; !slices.Equal(f.binds, want) {
		t.Fatalf("bound %v (%v), want %v: the head and the 2 oldest workers in the held room", f.binds, rep.Errors, want)
	}
	lone := map[string]bool{}
	for _, u := range rep.Result.UnscheduledJobs {
		if u.Job != nil && u.Job.Gang.ID == "" {
			lone[u.Job.ID] = true
		}
	}
	for _, w := range []string{"w-0", "w-1", "w-2"} {
		if !lone["default/"+w] {
			t.Fatalf("extra worker %s not a lone unscheduled job (unscheduled %+v)", w, rep.Result.UnscheduledJobs)
		}
	}
}

// A suspended RayJob (head + minReplicas 2 of replicas 5) is admitted on a
// node of 3 cpu; the cluster its operator then creates (here the test, as
// no operator runs) has 5 workers: the head and the 2 oldest are bound
// into the held room, and an older pod that needs the whole node is not.
func TestLiveSuspendedRayJobBindsHeadAndMinReplicasIntoItsRoom(t *testing.T) {
	l := newLive(t)
	l.installCRDs("ray.io_rayjobs.yaml", "ray.io_rayclusters.yaml")
	l.node("n1", "3")
	s := l.scheduler(Config{Dynamic: l.dynamic(), AdmitSuspended: true})
	rj := l.create(rayJobs, strings.Replace(suspendedRayJob, "uid: u-rj, ", "", 1))
	l.cycleCollect(s, "the RayJob unsuspended", func() bool {
		u, err := l.dynamic().Resource(rayJobs).Namespace("default").Get(l.ctx, "rj", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		v, _, _ := unstructured.NestedBool(u.Object, "spec", "suspend")
		return !v
	}, nil)
	rc := l.create(schema.GroupVersionResource{Group: "ray.io", Version: "v1", Resource: "rayclusters"}, fmt.Sprintf(`
apiVersion: ray.io/v1
kind: RayCluster
metadata:
  name: rj-raycluster
  namespace: default
  ownerReferences: [{apiVersion: ray.io/v1, kind: RayJob, name: rj, uid: %s, controller: true}]
spec:
  headGroupSpec: {template: {}}
  workerGroupSpecs: [{groupName: w, minReplicas: 2, replicas: 5}]`, rj.GetUID()))
	l.pod(testPod("other", "3", func(p *corev1.Pod) { p.Labels = map[string]string{"flotilla.dev/queue": "research"} }))
	yes := true
	owned := func(labels map[string]string) func(*corev1.Pod) {
		return func(p *corev1.Pod) {
			p.Labels = labels
			p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "ray.io/v1", Kind: "RayCluster", Name: rc.GetName(), UID: rc.GetUID(), Controller: &yes}}
		}
	}
	for i := range 5 {
		l.pod(testPod(fmt.Sprintf("w-%d", i), "1", owned(map[string]string{"ray.io/group": "w"})))
	}
	l.pod(testPod("head", "1", owned(map[string]string{labelRayNodeType: "head", "ray.io/group": "headgroup"})))
	otherUnbound := func() error {
		if n := l.get("other").Spec.NodeName; n != "" {
			return fmt.Errorf("pod other bound to %s, in the RayJob's held room", n)
		}
		return nil
	}
	jobs := l.cycleCollect(s, "the head and 2 workers bound", func() bool {
		for _, name := range []string{"head", "w-0", "w-1"} {
			if l.get(name).Spec.NodeName == "" {
				return false
			}
		}
		return true
	}, otherUnbound)
	if len(jobs) != 0 {
		t.Fatalf("%d pods placed by a cycle: want the 3 bound into the room the admission held", len(jobs))
	}
}
