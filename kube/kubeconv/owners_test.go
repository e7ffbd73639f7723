package kubeconv

import (
	"errors"
	"math"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/flotilla-sched/flotilla"
)

// obj parses a YAML object (apiVersion, kind, metadata, spec).
func obj(t *testing.T, y string) *unstructured.Unstructured {
	t.Helper()
	m := map[string]any{}
	if err := yaml.Unmarshal([]byte(y), &m); err != nil {
		t.Fatal(err)
	}
	return &unstructured.Unstructured{Object: m}
}

const (
	indexedJob = `
apiVersion: batch/v1
kind: Job
metadata: {name: train, namespace: ml, uid: u-job}
spec: {completionMode: Indexed, parallelism: 4, completions: 4}`
	jobSetChild = `
apiVersion: batch/v1
kind: Job
metadata: {name: js-workers-0, namespace: ml, uid: u-child, labels: {jobset.sigs.k8s.io/replicatedjob-name: workers}}
spec: {completionMode: Indexed, parallelism: 4, completions: 4}`
	jobSet = `
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata: {name: js, namespace: ml, uid: u-js, labels: {kueue.x-k8s.io/queue-name: research}}
spec:
  replicatedJobs:
  - name: driver
    template: {spec: {parallelism: 1, completions: 1}}
  - name: workers
    replicas: 2
    template: {spec: {parallelism: 4, completions: 4}}`
)

// OwnerOf reads each kind's gang from its spec: the table is the owner
// chain (the pod's controller first) → job set, gang id and cardinality.
func TestOwnerOfGroupsByTheWorkloadKind(t *testing.T) {
	p := pod(func(p *corev1.Pod) { p.Namespace = "ml" })
	for _, tc := range []struct {
		name        string
		chain       []string
		jobSet      string
		gangID      string
		cardinality int
	}{
		{"indexed job, parallelism = completions: one gang", []string{indexedJob}, "ml/Job/train", "ml/Job/train@u-job", 4},
		{"non-indexed job: independent jobs of one set", []string{`
apiVersion: batch/v1
kind: Job
metadata: {name: sweep, namespace: ml, uid: u}
spec: {parallelism: 4, completions: 4}`}, "ml/Job/sweep", "", 0},
		{"indexed job, parallelism < completions: independent", []string{`
apiVersion: batch/v1
kind: Job
metadata: {name: sweep, namespace: ml, uid: u}
spec: {completionMode: Indexed, parallelism: 2, completions: 8}`}, "ml/Job/sweep", "", 0},
		{"indexed job without parallelism: 1 = completions 1 is a gang of one", []string{`
apiVersion: batch/v1
kind: Job
metadata: {name: one, namespace: ml, uid: u}
spec: {completionMode: Indexed, completions: 1}`}, "ml/Job/one", "ml/Job/one@u", 1},
		{"jobset: all replicated jobs, replicas × parallelism", []string{jobSetChild, jobSet}, "ml/JobSet/js", "ml/JobSet/js@u-js", 1 + 2*4},
		{"jobset: parallelism above completions runs completions", []string{jobSetChild, `
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata: {name: js, namespace: ml, uid: u-js}
spec:
  replicatedJobs:
  - name: workers
    replicas: 3
    template: {spec: {parallelism: 8, completions: 2}}`}, "ml/JobSet/js", "ml/JobSet/js@u-js", 6},
		{"jobset InOrder: one gang per replicated job", []string{jobSetChild, `
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata: {name: js, namespace: ml, uid: u-js}
spec:
  startupPolicy: {startupPolicyOrder: InOrder}
  replicatedJobs:
  - name: driver
    template: {spec: {parallelism: 1, completions: 1}}
  - name: workers
    replicas: 2
    template: {spec: {parallelism: 4, completions: 4}}`}, "ml/JobSet/js", "ml/JobSet/js/workers@u-js", 8},
		{"pytorchjob: master + workers", []string{`
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: pt, namespace: ml, uid: u-pt}
spec:
  pytorchReplicaSpecs:
    Master: {replicas: 1}
    Worker: {replicas: 3}`}, "ml/PyTorchJob/pt", "ml/PyTorchJob/pt@u-pt", 4},
		{"pytorchjob: replicas default to 1", []string{`
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: pt, namespace: ml, uid: u-pt}
spec:
  pytorchReplicaSpecs:
    Master: {}
    Worker: {replicas: 2}`}, "ml/PyTorchJob/pt", "ml/PyTorchJob/pt@u-pt", 3},
		{"mpijob: launcher + workers", []string{`
apiVersion: kubeflow.org/v2beta1
kind: MPIJob
metadata: {name: mpi, namespace: ml, uid: u-mpi}
spec:
  mpiReplicaSpecs:
    Launcher: {replicas: 1}
    Worker: {replicas: 8}`}, "ml/MPIJob/mpi", "ml/MPIJob/mpi@u-mpi", 9},
		{"raycluster: head + min workers", []string{`
apiVersion: ray.io/v1
kind: RayCluster
metadata: {name: rc, namespace: ml, uid: u-rc}
spec:
  headGroupSpec: {rayStartParams: {}}
  workerGroupSpecs:
  - {groupName: cpu, minReplicas: 2, maxReplicas: 10, replicas: 5}
  - {groupName: gpu, minReplicas: 1}`}, "ml/RayCluster/rc", "ml/RayCluster/rc@u-rc", 4},
		{"rayjob over its raycluster: the cluster's gang, the rayjob's set", []string{`
apiVersion: ray.io/v1
kind: RayCluster
metadata: {name: rj-raycluster, namespace: ml, uid: u-rc}
spec:
  headGroupSpec: {}
  workerGroupSpecs: [{groupName: w, minReplicas: 2}]`, `
apiVersion: ray.io/v1
kind: RayJob
metadata: {name: rj, namespace: ml, uid: u-rj}
spec: {}`}, "ml/RayJob/rj", "ml/RayCluster/rj-raycluster@u-rc", 3},
		{"rayjob's submitter job: independent, the rayjob's set", []string{`
apiVersion: batch/v1
kind: Job
metadata: {name: rj-submit, namespace: ml, uid: u-sub}
spec: {parallelism: 1, completions: 1}`, `
apiVersion: ray.io/v1
kind: RayJob
metadata: {name: rj, namespace: ml, uid: u-rj}
spec: {}`}, "ml/RayJob/rj", "", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var chain []*unstructured.Unstructured
			for _, y := range tc.chain {
				chain = append(chain, obj(t, y))
			}
			pp := p.DeepCopy()
			pp.Labels = chain[0].GetLabels()
			o, err := OwnerOf(pp, chain)
			if err != nil {
				t.Fatal(err)
			}
			if o.JobSet != tc.jobSet || o.Gang.ID != tc.gangID || o.Gang.Cardinality != tc.cardinality {
				t.Fatalf("got set %q gang %q of %d, want %q %q of %d", o.JobSet, o.Gang.ID, o.Gang.Cardinality, tc.jobSet, tc.gangID, tc.cardinality)
			}
			if tc.gangID != "" && o.GangBy == "" {
				t.Fatal("a gang names where its cardinality comes from")
			}
		})
	}
}

func TestOwnerOfNoChainIsNoWorkload(t *testing.T) {
	o, err := OwnerOf(pod(nil), nil)
	if o != nil || err != nil {
		t.Fatalf("got %+v, %v", o, err)
	}
}

// A spec the rules cannot read is an error naming the object and field,
// never a panic and never a guessed gang.
func TestOwnerOfMalformedSpecNamesTheField(t *testing.T) {
	for _, tc := range []struct {
		name, y, field string
		kind           error
	}{
		{"job without spec", `{apiVersion: batch/v1, kind: Job, metadata: {name: j, namespace: ml}}`, "Job ml/j spec", flotilla.ErrRequired},
		{"job spec not an object", `{apiVersion: batch/v1, kind: Job, metadata: {name: j, namespace: ml}, spec: [1]}`, "Job ml/j spec", flotilla.ErrMalformed},
		{"negative parallelism", `{apiVersion: batch/v1, kind: Job, metadata: {name: j, namespace: ml}, spec: {completionMode: Indexed, parallelism: -4, completions: 4}}`,
			"Job ml/j spec.parallelism", flotilla.ErrNegative},
		{"completions a string", `{apiVersion: batch/v1, kind: Job, metadata: {name: j, namespace: ml}, spec: {completionMode: Indexed, completions: "four"}}`,
			"Job ml/j spec.completions", flotilla.ErrMalformed},
		{"fractional replicas", `{apiVersion: kubeflow.org/v1, kind: PyTorchJob, metadata: {name: pt, namespace: ml}, spec: {pytorchReplicaSpecs: {Worker: {replicas: 1.5}}}}`,
			"PyTorchJob ml/pt spec.pytorchReplicaSpecs.Worker.replicas", flotilla.ErrMalformed},
		{"pytorchjob without replica specs", `{apiVersion: kubeflow.org/v1, kind: PyTorchJob, metadata: {name: pt, namespace: ml}, spec: {}}`,
			"PyTorchJob ml/pt spec.pytorchReplicaSpecs", flotilla.ErrRequired},
		{"mpijob worker not an object", `{apiVersion: kubeflow.org/v2beta1, kind: MPIJob, metadata: {name: m, namespace: ml}, spec: {mpiReplicaSpecs: {Worker: 3}}}`,
			"MPIJob ml/m spec.mpiReplicaSpecs.Worker", flotilla.ErrMalformed},
		{"jobset without replicated jobs", `{apiVersion: jobset.x-k8s.io/v1alpha2, kind: JobSet, metadata: {name: js, namespace: ml}, spec: {}}`,
			"JobSet ml/js spec.replicatedJobs", flotilla.ErrRequired},
		{"jobset negative replicas", `{apiVersion: jobset.x-k8s.io/v1alpha2, kind: JobSet, metadata: {name: js, namespace: ml}, spec: {replicatedJobs: [{name: w, replicas: -2, template: {spec: {parallelism: 1}}}]}}`,
			"JobSet ml/js spec.replicatedJobs[0].replicas", flotilla.ErrNegative},
		{"jobset replicated job without template", `{apiVersion: jobset.x-k8s.io/v1alpha2, kind: JobSet, metadata: {name: js, namespace: ml}, spec: {replicatedJobs: [{name: w}]}}`,
			"JobSet ml/js spec.replicatedJobs[0].template.spec", flotilla.ErrRequired},
		{"jobset huge", `{apiVersion: jobset.x-k8s.io/v1alpha2, kind: JobSet, metadata: {name: js, namespace: ml}, spec: {replicatedJobs: [{name: w, replicas: 1000000, template: {spec: {parallelism: 1000000}}}]}}`,
			"JobSet ml/js Σ spec.replicatedJobs[*] replicas × pods per Job", flotilla.ErrOutOfRange},
		{"pytorchjob huge in sum", `{apiVersion: kubeflow.org/v1, kind: PyTorchJob, metadata: {name: pt, namespace: ml}, spec: {pytorchReplicaSpecs: {Master: {replicas: 1}, Worker: {replicas: 1048576}}}}`,
			"PyTorchJob ml/pt Σ spec.pytorchReplicaSpecs[*].replicas", flotilla.ErrOutOfRange},
		{"raycluster huge hosts", `{apiVersion: ray.io/v1, kind: RayCluster, metadata: {name: rc, namespace: ml}, spec: {headGroupSpec: {}, workerGroupSpecs: [{minReplicas: 1024, numOfHosts: 1024}]}}`,
			"RayCluster ml/rc 1 head + Σ spec.workerGroupSpecs[*].minReplicas", flotilla.ErrOutOfRange},
		{"jobset InOrder, pod of no replicated job", `{apiVersion: jobset.x-k8s.io/v1alpha2, kind: JobSet, metadata: {name: js, namespace: ml}, spec: {startupPolicy: {startupPolicyOrder: InOrder}, replicatedJobs: [{name: w, template: {spec: {}}}]}}`,
			"JobSet ml/js spec.startupPolicy.startupPolicyOrder", flotilla.ErrInconsistent},
		{"raycluster without head", `{apiVersion: ray.io/v1, kind: RayCluster, metadata: {name: rc, namespace: ml}, spec: {workerGroupSpecs: []}}`,
			"RayCluster ml/rc spec.headGroupSpec", flotilla.ErrRequired},
		{"raycluster negative min", `{apiVersion: ray.io/v1, kind: RayCluster, metadata: {name: rc, namespace: ml}, spec: {headGroupSpec: {}, workerGroupSpecs: [{minReplicas: -1}]}}`,
			"RayCluster ml/rc spec.workerGroupSpecs[0].minReplicas", flotilla.ErrNegative},
		{"raycluster worker groups not a list", `{apiVersion: ray.io/v1, kind: RayCluster, metadata: {name: rc, namespace: ml}, spec: {headGroupSpec: {}, workerGroupSpecs: {a: 1}}}`,
			"RayCluster ml/rc spec.workerGroupSpecs", flotilla.ErrMalformed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, err := OwnerOf(pod(nil), []*unstructured.Unstructured{obj(t, tc.y)})
			if err == nil {
				t.Fatalf("no error, owner %+v", o)
			}
			var fe *flotilla.FieldError
			if !errors.As(err, &fe) || fe.Field != tc.field || !errors.Is(err, tc.kind) {
				t.Fatalf("got %v, want field %q (%v)", err, tc.field, tc.kind)
			}
		})
	}
}

func TestOwnerOfNilOwnerIsAnError(t *testing.T) {
	if _, err := OwnerOf(pod(nil), []*unstructured.Unstructured{nil}); !errors.Is(err, flotilla.ErrRequired) {
		t.Fatalf("got %v", err)
	}
}

func TestOwnerResourceKnowsTheWorkloadKindsOnly(t *testing.T) {
	for _, tc := range []struct {
		apiVersion, kind string
		want             schema.GroupVersionResource
		ok               bool
	}{
		{"batch/v1", "Job", schema.GroupVersionResource{Group: "batch", Version: "v1", Resource: "jobs"}, true},
		{"jobset.x-k8s.io/v1alpha2", "JobSet", schema.GroupVersionResource{Group: "jobset.x-k8s.io", Version: "v1alpha2", Resource: "jobsets"}, true},
		{"kubeflow.org/v1", "PyTorchJob", schema.GroupVersionResource{Group: "kubeflow.org", Version: "v1", Resource: "pytorchjobs"}, true},
		{"kubeflow.org/v2beta1", "MPIJob", schema.GroupVersionResource{Group: "kubeflow.org", Version: "v2beta1", Resource: "mpijobs"}, true},
		{"ray.io/v1", "RayCluster", schema.GroupVersionResource{Group: "ray.io", Version: "v1", Resource: "rayclusters"}, true},
		{"ray.io/v1", "RayJob", schema.GroupVersionResource{Group: "ray.io", Version: "v1", Resource: "rayjobs"}, true},
		{"apps/v1", "ReplicaSet", schema.GroupVersionResource{}, false},
		{"batch/v1", "CronJob", schema.GroupVersionResource{}, false},
		{"a/b/c", "Job", schema.GroupVersionResource{}, false},
	} {
		got, ok := OwnerResource(metav1.OwnerReference{APIVersion: tc.apiVersion, Kind: tc.kind})
		if got != tc.want || ok != tc.ok {
			t.Errorf("%s %s: got %v %v, want %v %v", tc.apiVersion, tc.kind, got, ok, tc.want, tc.ok)
		}
	}
}

// The pod's own labels win over its workload's, flotilla's over Kueue's,
// and Armada's gang annotations over the workload's gang.
func TestJobOfPrecedence(t *testing.T) {
	owner := &Owner{
		Kind: "JobSet", Namespace: "team-a", Name: "js", JobSet: "team-a/JobSet/js",
		Labels: map[string]string{LabelKueueQueue: "kueue-q"},
		Gang:   flotilla.Gang{ID: "team-a/JobSet/js@u", Cardinality: 9},
	}
	v := int32(1000)
	for _, tc := range []struct {
		name     string
		mod      func(*corev1.Pod)
		owner    func(*Owner)
		kueue    *int32
		queue    string
		set      string
		priority uint32
		gang     flotilla.Gang
	}{
		{"owner's kueue queue, owner's set and gang", nil, nil, nil, "kueue-q", "team-a/JobSet/js", 0, owner.Gang},
		{"owner's flotilla queue wins over its kueue one", nil, func(o *Owner) { o.Labels = map[string]string{LabelQueue: "f", LabelKueueQueue: "k"} }, nil, "f", "team-a/JobSet/js", 0, owner.Gang},
		{"pod's kueue label wins over the owner's", func(p *corev1.Pod) { p.Labels = map[string]string{LabelKueueQueue: "pod-k"} }, nil, nil, "pod-k", "team-a/JobSet/js", 0, owner.Gang},
		{"pod's flotilla queue wins over all", func(p *corev1.Pod) { p.Labels = map[string]string{LabelKueueQueue: "pod-k", LabelQueue: "pod-f"} }, nil, nil, "pod-f", "team-a/JobSet/js", 0, owner.Gang},
		{"no labels anywhere: the namespace", nil, func(o *Owner) { o.Labels = nil }, nil, "team-a", "team-a/JobSet/js", 0, owner.Gang},
		{"pod's job-set label wins", func(p *corev1.Pod) { p.Labels = map[string]string{LabelJobSet: "mine"} }, nil, nil, "kueue-q", "mine", 0, owner.Gang},
		{"owner's job-set annotation wins over the derived set", nil, func(o *Owner) { o.Annotations = map[string]string{LabelJobSet: "theirs"} }, nil, "kueue-q", "theirs", 0, owner.Gang},
		{"kueue priority class value", nil, nil, &v, "kueue-q", "team-a/JobSet/js", math.MaxInt32 - 1000, owner.Gang},
		{"owner's flotilla priority wins over kueue's", nil, func(o *Owner) { o.Annotations = map[string]string{AnnotationPriority: "7"} }, &v, "kueue-q", "team-a/JobSet/js", 7, owner.Gang},
		{"pod's flotilla priority wins over the owner's", func(p *corev1.Pod) { p.Annotations = map[string]string{AnnotationPriority: "3"} },
			func(o *Owner) { o.Annotations = map[string]string{AnnotationPriority: "7"} }, &v, "kueue-q", "team-a/JobSet/js", 3, owner.Gang},
		{"armada's gang annotations win", func(p *corev1.Pod) {
			p.Annotations = map[string]string{AnnotationGangID: "g", AnnotationGangCardinality: "2"}
		}, nil, nil, "kueue-q", "team-a/JobSet/js", 0, flotilla.Gang{ID: "team-a/g", Cardinality: 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := *owner
			if tc.owner != nil {
				tc.owner(&o)
			}
			j, err := JobOf(pod(tc.mod), Schema(), &o, tc.kueue)
			if err != nil {
				t.Fatal(err)
			}
			if j.Queue != tc.queue || j.JobSet != tc.set || j.Priority != tc.priority || j.Gang != tc.gang {
				t.Fatalf("got queue %q set %q priority %d gang %+v; want %q %q %d %+v", j.Queue, j.JobSet, j.Priority, j.Gang, tc.queue, tc.set, tc.priority, tc.gang)
			}
		})
	}
}

func TestJobOfBadOwnerLabelsNameTheOwner(t *testing.T) {
	o := &Owner{Kind: "Job", Namespace: "team-a", Name: "j", Labels: map[string]string{LabelKueueQueue: ""}, Annotations: map[string]string{AnnotationPriority: "-1"}}
	_, err := JobOf(pod(nil), Schema(), o, nil)
	if err == nil || !strings.Contains(err.Error(), "Job team-a/j metadata.annotations[kueue.x-k8s.io/queue-name]") && !strings.Contains(err.Error(), "Job team-a/j metadata.labels[kueue.x-k8s.io/queue-name]") {
		t.Fatalf("got %v", err)
	}
	if !errors.Is(err, flotilla.ErrOutOfRange) || !strings.Contains(err.Error(), "Job team-a/j") {
		t.Fatalf("the priority's error names the owner: %v", err)
	}
}

// The mapping reverses the order (higher Kueue value runs first = lower
// Flotilla priority) over the whole int32 range.
func TestKueuePriorityReversesOrderOverInt32(t *testing.T) {
	for _, tc := range []struct {
		v    int32
		want uint32
	}{{math.MaxInt32, 0}, {0, math.MaxInt32}, {math.MinInt32, math.MaxUint32}, {1000, math.MaxInt32 - 1000}} {
		if got := KueuePriority(tc.v); got != tc.want {
			t.Errorf("KueuePriority(%d) = %d, want %d", tc.v, got, tc.want)
		}
	}
	for _, pair := range [][2]int32{{-5, 5}, {math.MinInt32, math.MinInt32 + 1}, {math.MaxInt32 - 1, math.MaxInt32}} {
		if KueuePriority(pair[0]) <= KueuePriority(pair[1]) {
			t.Errorf("%d below %d must map above it", pair[0], pair[1])
		}
	}
}

func TestWorkloadPriorityValue(t *testing.T) {
	for _, tc := range []struct {
		y    string
		want int32
		err  error
	}{
		{`{apiVersion: kueue.x-k8s.io/v1beta1, kind: WorkloadPriorityClass, metadata: {name: high}, value: 10000}`, 10000, nil},
		{`{apiVersion: kueue.x-k8s.io/v1beta1, kind: WorkloadPriorityClass, metadata: {name: low}, value: -5}`, -5, nil},
		{`{apiVersion: kueue.x-k8s.io/v1beta1, kind: WorkloadPriorityClass, metadata: {name: none}}`, 0, flotilla.ErrRequired},
		{`{apiVersion: kueue.x-k8s.io/v1beta1, kind: WorkloadPriorityClass, metadata: {name: s}, value: "high"}`, 0, flotilla.ErrMalformed},
		{`{apiVersion: kueue.x-k8s.io/v1beta1, kind: WorkloadPriorityClass, metadata: {name: big}, value: 3000000000}`, 0, flotilla.ErrOutOfRange},
	} {
		got, err := WorkloadPriorityValue(obj(t, tc.y))
		if got != tc.want || !errors.Is(err, tc.err) || (tc.err == nil) != (err == nil) {
			t.Errorf("%s: got %d, %v; want %d, %v", tc.y, got, err, tc.want, tc.err)
		}
	}
}
