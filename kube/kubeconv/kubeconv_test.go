package kubeconv

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flotilla-sched/flotilla"
)

func req(cpu, mem string) corev1.ResourceRequirements {
	l := corev1.ResourceList{}
	if cpu != "" {
		l[corev1.ResourceCPU] = resource.MustParse(cpu)
	}
	if mem != "" {
		l[corev1.ResourceMemory] = resource.MustParse(mem)
	}
	return corev1.ResourceRequirements{Requests: l}
}

func pod(mod func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "team-a", CreationTimestamp: metav1.NewTime(time.Unix(100, 0))},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: req("1", "1Gi")}}},
	}
	if mod != nil {
		mod(p)
	}
	return p
}

// The effective request is kube-scheduler's: the larger of the containers'
// sum and each init container, sidecars (restartable init containers)
// added to both, plus the overhead.
func TestPodRequestsAreKubeSchedulersEffectiveRequest(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	schema := Schema()
	for _, tc := range []struct {
		name string
		mod  func(*corev1.Pod)
		cpu  int64
		mem  int64
	}{
		{"containers summed", func(p *corev1.Pod) {
			p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: "d", Resources: req("500m", "1Gi")})
		}, 1500, 2 << 30},
		{"a larger init container wins", func(p *corev1.Pod) {
			p.Spec.InitContainers = []corev1.Container{{Name: "i", Resources: req("3", "")}}
		}, 3000, 1 << 30},
		{"a sidecar adds to the containers", func(p *corev1.Pod) {
			p.Spec.InitContainers = []corev1.Container{{Name: "s", RestartPolicy: &always, Resources: req("250m", "")}}
		}, 1250, 1 << 30},
		{"overhead added", func(p *corev1.Pod) {
			p.Spec.Overhead = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}
		}, 1100, 1 << 30},
		{"a bound pod resized down holds what its status says until the kubelet resizes it", func(p *corev1.Pod) {
			p.Spec.NodeName = "n1"
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "c",
				AllocatedResources: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")},
				Resources:          &corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")}}}}
		}, 4000, 1 << 30},
		{"gpu whole, unknown resources ignored", func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources.Requests["nvidia.com/gpu"] = resource.MustParse("2")
			p.Spec.Containers[0].Resources.Requests["example.com/foo"] = resource.MustParse("7")
		}, 1000, 1 << 30},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j, err := Job(pod(tc.mod), schema)
			if err != nil {
				t.Fatal(err)
			}
			if j.Requests[0] != tc.cpu || j.Requests[1] != tc.mem {
				t.Fatalf("requests = %v, want cpu %d memory %d", j.Requests, tc.cpu, tc.mem)
			}
		})
	}
}

func TestJobQueueJobSetAndGangFromLabelsAndAnnotations(t *testing.T) {
	schema := Schema()
	j, err := Job(pod(nil), schema)
	if err != nil {
		t.Fatal(err)
	}
	if j.ID != "team-a/p" || j.Queue != "team-a" || j.JobSet != "" || j.IsGang() || !j.SubmitTime.Equal(time.Unix(100, 0)) {
		t.Fatalf("default job = %+v", j)
	}
	j, err = Job(pod(func(p *corev1.Pod) {
		p.Labels = map[string]string{LabelQueue: "q-label"}
		p.Annotations = map[string]string{LabelQueue: "q-annotation", LabelJobSet: "set-1",
			AnnotationGangID: "g", AnnotationGangCardinality: "3", AnnotationGangNodeUniformityLabel: "zone"}
		p.Spec.PriorityClassName = "high"
		p.Spec.NodeSelector = map[string]string{"zone": "a"}
		p.Spec.Tolerations = []corev1.Toleration{{Key: "gpu", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}
	}), schema)
	if err != nil {
		t.Fatal(err)
	}
	want := flotilla.Gang{ID: "team-a/g", Cardinality: 3, NodeUniformityLabel: "zone"}
	if j.Queue != "q-label" || j.JobSet != "set-1" || j.Gang != want || j.PriorityClass != "high" ||
		j.NodeSelector["zone"] != "a" || len(j.Tolerations) != 1 || j.Tolerations[0] != (flotilla.Toleration{Key: "gpu", Operator: flotilla.TolerationExists, Effect: flotilla.TaintNoSchedule}) {
		t.Fatalf("job = %+v", j)
	}
}

// Every bad annotation or field is reported at once, naming the annotation
// and the value found.
func TestJobBadAnnotationsNameTheAnnotationAndValue(t *testing.T) {
	schema := Schema()
	for _, tc := range []struct {
		name  string
		mod   func(*corev1.Pod)
		wants []string
	}{
		{"cardinality not a number", func(p *corev1.Pod) {
			p.Annotations = map[string]string{AnnotationGangID: "g", AnnotationGangCardinality: "three"}
		}, []string{`metadata.annotations[armadaproject.io/gangCardinality] "three"`}},
		{"cardinality zero", func(p *corev1.Pod) {
			p.Annotations = map[string]string{AnnotationGangID: "g", AnnotationGangCardinality: "0"}
		}, []string{`metadata.annotations[armadaproject.io/gangCardinality] "0"`}},
		{"cardinality missing", func(p *corev1.Pod) {
			p.Annotations = map[string]string{AnnotationGangID: "g"}
		}, []string{`metadata.annotations[armadaproject.io/gangCardinality] ""`}},
		{"gang fields without an id, and an empty queue", func(p *corev1.Pod) {
			p.Annotations = map[string]string{AnnotationGangCardinality: "2", AnnotationGangNodeUniformityLabel: "zone", LabelQueue: ""}
		}, []string{`gangCardinality] "2"`, `gangNodeUniformityLabel] "zone"`, `metadata.annotations[flotilla.dev/queue] ""`}},
		{"bad tolerations", func(p *corev1.Pod) {
			p.Spec.Tolerations = []corev1.Toleration{{Operator: corev1.TolerationOpEqual}, {Key: "k", Operator: "Lt"}}
		}, []string{`spec.tolerations[0].operator "Equal"`, `spec.tolerations[1].operator "Lt"`}},
		{"required node affinity without terms", func(p *corev1.Pod) {
			p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{}}}
		}, []string{"spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms"}},
		{"required node affinity with Gt and matchFields", func(p *corev1.Pod) {
			p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
				NodeSelectorTerms: []corev1.NodeSelectorTerm{{
					MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "cores", Operator: corev1.NodeSelectorOpGt, Values: []string{"8"}}},
					MatchFields:      []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{"n1"}}},
				}}}}}
		}, []string{`nodeSelectorTerms[0].matchExpressions[0].operator "Gt"`, `nodeSelectorTerms[0].matchFields "1"`}},
		{"required node affinity that the core refuses", func(p *corev1.Pod) {
			p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
				NodeSelectorTerms: []corev1.NodeSelectorTerm{{
					MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "gpu", Operator: corev1.NodeSelectorOpIn}},
				}}}}}
		}, []string{`nodeAffinity[0].matchExpressions[0].values`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Job(pod(tc.mod), schema)
			if err == nil {
				t.Fatal("no error")
			}
			probs := flotilla.Problems(err)
			if len(probs) != len(tc.wants) {
				t.Fatalf("%d problems, want %d: %v", len(probs), len(tc.wants), err)
			}
			for _, w := range tc.wants {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			for _, e := range probs {
				var fe *flotilla.FieldError
				if !errors.As(e, &fe) {
					t.Errorf("%v is not a *flotilla.FieldError", e)
				}
			}
		})
	}
}

func TestNodeCarriesAllocatableLabelsTaintsAndCordon(t *testing.T) {
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{"zone": "a"}},
		Spec:       corev1.NodeSpec{Unschedulable: true, Taints: []corev1.Taint{{Key: "gpu", Value: "true", Effect: corev1.TaintEffectNoSchedule}}},
		Status: corev1.NodeStatus{
			Capacity:    corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8")},
			Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("7500m"), corev1.ResourceMemory: resource.MustParse("4Gi"), "nvidia.com/gpu": resource.MustParse("2")},
		},
	}
	got, err := Node(n, "c1", Schema())
	if err != nil {
		t.Fatal(err)
	}
	if got.Name != "n1" || got.Cluster != "c1" || got.Labels["zone"] != "a" || !got.Unschedulable ||
		!got.Total.Equal(flotilla.Resources{7500, 4 << 30, 2}) || len(got.Taints) != 1 ||
		got.Taints[0] != (flotilla.Taint{Key: "gpu", Value: "true", Effect: flotilla.TaintNoSchedule}) {
		t.Fatalf("node = %+v", got)
	}
	n.Spec.Taints = []corev1.Taint{{Key: "x", Effect: "Sometimes"}}
	if _, err := Node(n, "", Schema()); !errors.Is(err, flotilla.ErrUnknownName) || !strings.Contains(err.Error(), `"Sometimes"`) {
		t.Fatalf("bad taint: err = %v", err)
	}
}

// A PriorityClass is preemptible unless its preemptionPolicy is Never; the
// global default is the default class, else DefaultClass.
func TestPriorityClassPreemptibleUnlessPreemptionPolicyNever(t *testing.T) {
	never, lower := corev1.PreemptNever, corev1.PreemptLowerPriority
	pcs := []*schedulingv1.PriorityClass{
		{ObjectMeta: metav1.ObjectMeta{Name: "urgent"}, Value: 1000, PreemptionPolicy: &lower},
		{ObjectMeta: metav1.ObjectMeta{Name: "batch"}, Value: 10, PreemptionPolicy: &never},
		{ObjectMeta: metav1.ObjectMeta{Name: "plain"}, Value: -5},
	}
	classes, def := Classes(pcs)
	want := []flotilla.PriorityClass{
		{Name: "batch", Priority: 10},
		{Name: DefaultClass, Priority: 0, Preemptible: true},
		{Name: "plain", Priority: -5, Preemptible: true},
		{Name: "urgent", Priority: 1000, Preemptible: true},
	}
	if def != DefaultClass || len(classes) != len(want) {
		t.Fatalf("classes %+v default %q", classes, def)
	}
	for i := range want {
		if classes[i].Name != want[i].Name || classes[i].Priority != want[i].Priority || classes[i].Preemptible != want[i].Preemptible {
			t.Errorf("class %d = %+v, want %+v", i, classes[i], want[i])
		}
	}
	pcs[2].GlobalDefault = true
	if _, def := Classes(pcs); def != "plain" {
		t.Fatalf("default = %q, want the globalDefault class plain", def)
	}
}

// A pod's priority within its queue is the flotilla.dev/priority
// annotation, a uint32 in decimal (0 without it); anything else is a
// *flotilla.FieldError naming the annotation and the value.
func TestJobPriorityFromAnnotationAUint32(t *testing.T) {
	for _, tc := range []struct {
		name  string
		value *string
		want  uint32
		err   error
	}{
		{"absent", nil, 0, nil},
		{"zero", ptr("0"), 0, nil},
		{"valid", ptr("7"), 7, nil},
		{"largest", ptr("4294967295"), math.MaxUint32, nil},
		{"negative", ptr("-1"), 0, flotilla.ErrOutOfRange},
		{"very negative", ptr("-99999999999999999999"), 0, flotilla.ErrOutOfRange},
		{"too large", ptr("4294967296"), 0, flotilla.ErrOutOfRange},
		{"non-numeric", ptr("high"), 0, flotilla.ErrMalformed},
		{"empty", ptr(""), 0, flotilla.ErrMalformed},
		{"fraction", ptr("1.5"), 0, flotilla.ErrMalformed},
		{"spaces", ptr(" 1"), 0, flotilla.ErrMalformed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j, err := Job(pod(func(p *corev1.Pod) {
				if tc.value != nil {
					p.Annotations = map[string]string{AnnotationPriority: *tc.value}
				}
			}), Schema())
			if tc.err == nil {
				if err != nil || j.Priority != tc.want {
					t.Fatalf("priority %d, err %v; want %d", j.Priority, err, tc.want)
				}
				return
			}
			var fe *flotilla.FieldError
			if !errors.Is(err, tc.err) || !errors.As(err, &fe) || fe.Field != "metadata.annotations[flotilla.dev/priority]" || fe.Value != *tc.value {
				t.Fatalf("err %v (%#v): want a *flotilla.FieldError %v naming the annotation and %q", err, fe, tc.err, *tc.value)
			}
		})
	}
}

func ptr(s string) *string { return &s }

func TestRequiredNodeAffinityBecomesTheJobsAffinity(t *testing.T) {
	p := pod(func(p *corev1.Pod) {
		p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{
				{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "gpu", Operator: corev1.NodeSelectorOpIn, Values: []string{"a100", "h100"}}}},
				{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "spare", Operator: corev1.NodeSelectorOpExists}}},
			}}}}
	})
	j, err := Job(p, Schema())
	if err != nil {
		t.Fatal(err)
	}
	if len(j.NodeAffinity) != 2 || !flotilla.AffinityMatches(j.NodeAffinity, map[string]string{"gpu": "h100"}) ||
		!flotilla.AffinityMatches(j.NodeAffinity, map[string]string{"spare": ""}) || flotilla.AffinityMatches(j.NodeAffinity, map[string]string{"gpu": "t4"}) {
		t.Fatalf("affinity %+v", j.NodeAffinity)
	}
}
