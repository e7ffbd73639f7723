package kubeconv

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/flotilla-sched/flotilla"
)

// Kueue's labels, honoured as aliases (see the package documentation).
const (
	// LabelKueueQueue is Kueue's queue label: its value (a LocalQueue's
	// name) is the job's queue when LabelQueue is not set.
	LabelKueueQueue = "kueue.x-k8s.io/queue-name"
	// LabelKueuePriorityClass names a Kueue WorkloadPriorityClass whose
	// value sets the job's priority when AnnotationPriority is not set.
	LabelKueuePriorityClass = "kueue.x-k8s.io/priority-class"
	// LabelJobSetReplicatedJob is the label JobSet puts on its child Jobs
	// and their pods: the name of the replicated job.
	LabelJobSetReplicatedJob = "jobset.sigs.k8s.io/replicatedjob-name"
)

// WorkloadPriorityClasses is the resource of Kueue's WorkloadPriorityClass
// objects (cluster-scoped; the priority is their "value").
var WorkloadPriorityClasses = schema.GroupVersionResource{Group: "kueue.x-k8s.io", Version: "v1beta1", Resource: "workloadpriorityclasses"}

// Workload kinds an owner chain is read through, by API group and kind.
var ownerResources = map[schema.GroupKind]string{
	{Group: "batch", Kind: "Job"}:               "jobs",
	{Group: "jobset.x-k8s.io", Kind: "JobSet"}:  "jobsets",
	{Group: "kubeflow.org", Kind: "PyTorchJob"}: "pytorchjobs",
	{Group: "kubeflow.org", Kind: "MPIJob"}:     "mpijobs",
	{Group: "ray.io", Kind: "RayCluster"}:       "rayclusters",
	{Group: "ray.io", Kind: "RayJob"}:           "rayjobs",
}

// OwnerResource is the resource to read for an owner reference, and false
// when its kind is not a workload Flotilla groups by (a ReplicaSet, a
// StatefulSet, a CronJob: the chain stops below it). The version is the
// reference's own.
func OwnerResource(ref metav1.OwnerReference) (schema.GroupVersionResource, bool) {
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return schema.GroupVersionResource{}, false
	}
	res, ok := ownerResources[schema.GroupKind{Group: gv.Group, Kind: ref.Kind}]
	if !ok {
		return schema.GroupVersionResource{}, false
	}
	return gv.WithResource(res), true
}

// maxGang bounds a workload's gang, and every count read from a spec.
const maxGang = 1 << 20

// MaxOwnerDepth is the longest owner chain read above a pod (a pod, its
// Job, the Job's JobSet or RayJob: 2; one more for slack).
const MaxOwnerDepth = 3

// Owner is what a pod's workload says of it: read from its owner chain
// (the pod's controller, that one's controller, and so on while each is a
// workload kind OwnerResource knows).
type Owner struct {
	// Kind, Namespace, Name and UID are the top owner's: the workload.
	Kind, Namespace, Name string
	UID                   types.UID
	// Labels and Annotations are the top owner's, where the queue and
	// priority labels are looked up when the pod has none.
	Labels, Annotations map[string]string
	// JobSet is the job set of the workload's pods: "namespace/Kind/name".
	JobSet string
	// Gang is the gang the workload makes of its pods (the zero Gang when
	// its pods are independent jobs): the ID carries the owner's UID, so
	// it is never reused by a workload of the same name.
	Gang flotilla.Gang
	// GangBy names the object and fields the cardinality comes from, for
	// messages ("Job default/train: spec.completions").
	GangBy string
}

// ControllerRef is the pod's (or object's) controller reference, or nil.
func ControllerRef(refs []metav1.OwnerReference) *metav1.OwnerReference {
	for i := range refs {
		if refs[i].Controller != nil && *refs[i].Controller {
			return &refs[i]
		}
	}
	return nil
}

// OwnerOf reads the workload from the pod's owner chain, chain[0] the
// pod's controller and each next one the controller of the one before.
// An empty chain is no workload (nil, nil). A spec the rules below cannot
// read (a missing or negative count, a field of the wrong type) is an
// error naming the object and the field, as *flotilla.FieldError; it
// never panics.
//
// Gangs: an Indexed Job whose parallelism equals its completions is one
// gang of that many; another Job's pods are independent. A JobSet is one
// gang of the sum over its replicated jobs of replicas × the pods each
// Job runs at once (min(parallelism, completions)); with
// spec.startupPolicy.startupPolicyOrder InOrder, one such gang per
// replicated job. A PyTorchJob or MPIJob is one gang of the sum of its
// replica specs' replicas (master or launcher, and workers). A RayCluster
// is one gang of its head and each worker group's minReplicas.
func OwnerOf(pod *corev1.Pod, chain []*unstructured.Unstructured) (*Owner, error) {
	if len(chain) == 0 {
		return nil, nil
	}
	for i, o := range chain {
		if o == nil {
			return nil, errors.Join(flotilla.Errorf(fmt.Sprintf("ownerChain[%d]", i), "", flotilla.ErrRequired, "nil owner"))
		}
	}
	top := chain[len(chain)-1]
	out := &Owner{
		Kind: top.GetKind(), Namespace: top.GetNamespace(), Name: top.GetName(), UID: top.GetUID(),
		Labels: top.GetLabels(), Annotations: top.GetAnnotations(),
	}
	out.JobSet = out.Namespace + "/" + out.Kind + "/" + out.Name
	// The gang comes from the highest owner that defines one: a JobSet
	// over its Jobs, a RayCluster under its RayJob.
	var g *unstructured.Unstructured
	for _, o := range chain {
		switch groupKind(o) {
		case "jobset.x-k8s.io/JobSet", "kubeflow.org/PyTorchJob", "kubeflow.org/MPIJob", "ray.io/RayCluster":
			g = o
		case "batch/Job":
			if g == nil {
				g = o
			}
		}
	}
	if g == nil {
		return out, nil
	}
	r := specReader{obj: g}
	var n int
	var by, suffix string
	switch groupKind(g) {
	case "batch/Job":
		n, by = jobGang(&r)
	case "jobset.x-k8s.io/JobSet":
		n, by, suffix = jobSetGang(&r, pod, chain)
	case "kubeflow.org/PyTorchJob":
		n, by = replicaSpecsGang(&r, "pytorchReplicaSpecs")
	case "kubeflow.org/MPIJob":
		n, by = replicaSpecsGang(&r, "mpiReplicaSpecs")
	case "ray.io/RayCluster":
		n, by = rayGang(&r)
	}
	if n > maxGang {
		r.fail(by, strconv.Itoa(n), flotilla.ErrOutOfRange, "a gang of at most %d pods", maxGang)
	}
	if len(r.errs) > 0 {
		return nil, errors.Join(r.errs...)
	}
	if n > 0 {
		out.Gang = flotilla.Gang{ID: g.GetNamespace() + "/" + g.GetKind() + "/" + g.GetName() + suffix + "@" + string(g.GetUID()), Cardinality: n}
		out.GangBy = r.where() + ": " + by
	}
	return out, nil
}

func groupKind(o *unstructured.Unstructured) string {
	gv, _ := schema.ParseGroupVersion(o.GetAPIVersion())
	return gv.Group + "/" + o.GetKind()
}

// specReader reads counts from an unstructured object, collecting every
// problem as a *flotilla.FieldError naming the object and the field.
type specReader struct {
	obj  *unstructured.Unstructured
	errs []error
}

func (r *specReader) where() string {
	return r.obj.GetKind() + " " + r.obj.GetNamespace() + "/" + r.obj.GetName()
}

func (r *specReader) fail(field, value string, kind error, format string, args ...any) {
	r.errs = append(r.errs, flotilla.Errorf(r.where()+" "+field, value, kind, format, args...))
}

// count reads a non-negative integer at path in m (field names it in
// messages); absent gives def, and so does anything wrong, after
// recording the problem.
func (r *specReader) count(m map[string]any, field string, def int64, path ...string) int64 {
	v, ok, err := unstructured.NestedFieldNoCopy(m, path...)
	if err != nil {
		r.fail(field, "", flotilla.ErrMalformed, "%v", err)
		return def
	}
	if !ok || v == nil {
		return def
	}
	var n int64
	switch x := v.(type) {
	case int64:
		n = x
	case int32:
		n = int64(x)
	case int:
		n = int64(x)
	case float64:
		if x != math.Trunc(x) || math.Abs(x) > 1<<31 {
			r.fail(field, fmt.Sprint(x), flotilla.ErrMalformed, "want a whole number")
			return def
		}
		n = int64(x)
	default:
		r.fail(field, fmt.Sprint(v), flotilla.ErrMalformed, "want an integer, found %T", v)
		return def
	}
	if n < 0 {
		r.fail(field, strconv.FormatInt(n, 10), flotilla.ErrNegative, "")
		return def
	}
	if n > maxGang {
		r.fail(field, strconv.FormatInt(n, 10), flotilla.ErrOutOfRange, "want at most %d", maxGang)
		return def
	}
	return n
}

func (r *specReader) str(m map[string]any, field string, path ...string) string {
	v, ok, err := unstructured.NestedFieldNoCopy(m, path...)
	if err != nil || !ok || v == nil {
		return ""
	}
	s, isStr := v.(string)
	if !isStr {
		r.fail(field, fmt.Sprint(v), flotilla.ErrMalformed, "want a string, found %T", v)
	}
	return s
}

func (r *specReader) object(m map[string]any, field string, path ...string) map[string]any {
	v, ok, err := unstructured.NestedFieldNoCopy(m, path...)
	if err != nil {
		r.fail(field, "", flotilla.ErrMalformed, "%v", err)
		return nil
	}
	if !ok || v == nil {
		return nil
	}
	o, isMap := v.(map[string]any)
	if !isMap {
		r.fail(field, fmt.Sprint(v), flotilla.ErrMalformed, "want an object, found %T", v)
	}
	return o
}

func (r *specReader) list(m map[string]any, field string, path ...string) []any {
	v, ok, err := unstructured.NestedFieldNoCopy(m, path...)
	if err != nil {
		r.fail(field, "", flotilla.ErrMalformed, "%v", err)
		return nil
	}
	if !ok || v == nil {
		return nil
	}
	l, isList := v.([]any)
	if !isList {
		r.fail(field, fmt.Sprint(v), flotilla.ErrMalformed, "want a list, found %T", v)
	}
	return l
}

// podsAtOnce is how many pods a Job spec (at prefix, for messages) runs at
// once: min(parallelism (default 1), completions when set).
func (r *specReader) podsAtOnce(spec map[string]any, prefix string) int64 {
	par := r.count(spec, prefix+".parallelism", 1, "parallelism")
	if _, ok := spec["completions"]; ok && spec["completions"] != nil {
		par = min(par, r.count(spec, prefix+".completions", par, "completions"))
	}
	return par
}

// jobGang: an Indexed Job with parallelism == completions is a gang.
func jobGang(r *specReader) (int, string) {
	spec := r.object(r.obj.Object, "spec", "spec")
	if spec == nil {
		r.fail("spec", "", flotilla.ErrRequired, "a Job has a spec")
		return 0, ""
	}
	mode := r.str(spec, "spec.completionMode", "completionMode")
	par := r.count(spec, "spec.parallelism", 1, "parallelism")
	comp, hasComp := spec["completions"]
	var c int64
	if hasComp && comp != nil {
		c = r.count(spec, "spec.completions", 0, "completions")
	}
	if mode != "Indexed" || !hasComp || comp == nil || c != par || c == 0 {
		return 0, ""
	}
	return int(c), "Indexed, spec.parallelism = spec.completions"
}

// jobSetGang: all replicated jobs together, or the pod's replicated job
// alone under startupPolicyOrder InOrder (suffix "/<name>" then).
func jobSetGang(r *specReader, pod *corev1.Pod, chain []*unstructured.Unstructured) (int, string, string) {
	spec := r.object(r.obj.Object, "spec", "spec")
	rjs := r.list(spec, "spec.replicatedJobs", "replicatedJobs")
	if spec == nil || len(rjs) == 0 {
		if len(r.errs) == 0 {
			r.fail("spec.replicatedJobs", "", flotilla.ErrRequired, "a JobSet has at least one replicated job")
		}
		return 0, "", ""
	}
	inOrder := r.str(spec, "spec.startupPolicy.startupPolicyOrder", "startupPolicy", "startupPolicyOrder") == "InOrder"
	mine := ""
	if inOrder {
		mine = pod.Labels[LabelJobSetReplicatedJob]
		if mine == "" && len(chain) > 1 {
			mine = chain[0].GetLabels()[LabelJobSetReplicatedJob]
		}
		if mine == "" {
			r.fail("spec.startupPolicy.startupPolicyOrder", "InOrder", flotilla.ErrInconsistent,
				"pod %s/%s has no %s label to say which replicated job it belongs to", pod.Namespace, pod.Name, LabelJobSetReplicatedJob)
			return 0, "", ""
		}
	}
	var total int64
	found := false
	for i, x := range rjs {
		f := fmt.Sprintf("spec.replicatedJobs[%d]", i)
		rj, ok := x.(map[string]any)
		if !ok {
			r.fail(f, fmt.Sprint(x), flotilla.ErrMalformed, "want an object, found %T", x)
			continue
		}
		name := r.str(rj, f+".name", "name")
		if inOrder && name != mine {
			continue
		}
		found = true
		replicas := r.count(rj, f+".replicas", 1, "replicas")
		jspec := r.object(rj, f+".template.spec", "template", "spec")
		if jspec == nil {
			r.fail(f+".template.spec", "", flotilla.ErrRequired, "a replicated job has a Job template")
			continue
		}
		total += replicas * r.podsAtOnce(jspec, f+".template.spec")
	}
	if inOrder && !found {
		r.fail("spec.replicatedJobs", mine, flotilla.ErrInconsistent, "no replicated job of that name (the pod's %s label)", LabelJobSetReplicatedJob)
		return 0, "", ""
	}
	if total > maxGang {
		return int(min(total, maxGang+1)), "Σ spec.replicatedJobs[*] replicas × pods per Job", ""
	}
	if inOrder {
		return int(total), "replicated job " + mine + " (startupPolicyOrder InOrder): replicas × pods per Job", "/" + mine
	}
	return int(total), "Σ spec.replicatedJobs[*] replicas × pods per Job", ""
}

// replicaSpecsGang: the sum of the replica specs' replicas (default 1).
func replicaSpecsGang(r *specReader, field string) (int, string) {
	specs := r.object(r.obj.Object, "spec."+field, "spec", field)
	if len(specs) == 0 {
		if len(r.errs) == 0 {
			r.fail("spec."+field, "", flotilla.ErrRequired, "at least one replica spec")
		}
		return 0, ""
	}
	var total int64
	for _, name := range slices.Sorted(maps.Keys(specs)) {
		x := specs[name]
		f := "spec." + field + "." + name
		rs, ok := x.(map[string]any)
		if !ok {
			r.fail(f, fmt.Sprint(x), flotilla.ErrMalformed, "want an object, found %T", x)
			continue
		}
		total += r.count(rs, f+".replicas", 1, "replicas")
	}
	return int(total), "Σ spec." + field + "[*].replicas"
}

// rayGang: the head and every worker group's minReplicas.
func rayGang(r *specReader) (int, string) {
	spec := r.object(r.obj.Object, "spec", "spec")
	if spec == nil || r.object(spec, "spec.headGroupSpec", "headGroupSpec") == nil {
		if len(r.errs) == 0 {
			r.fail("spec.headGroupSpec", "", flotilla.ErrRequired, "a RayCluster has a head group")
		}
		return 0, ""
	}
	total := int64(1)
	for i, x := range r.list(spec, "spec.workerGroupSpecs", "workerGroupSpecs") {
		f := fmt.Sprintf("spec.workerGroupSpecs[%d]", i)
		wg, ok := x.(map[string]any)
		if !ok {
			r.fail(f, fmt.Sprint(x), flotilla.ErrMalformed, "want an object, found %T", x)
			continue
		}
		total += r.count(wg, f+".minReplicas", 0, "minReplicas") * max(1, r.count(wg, f+".numOfHosts", 1, "numOfHosts"))
	}
	return int(total), "1 head + Σ spec.workerGroupSpecs[*].minReplicas"
}

// KueuePriorityClass is the WorkloadPriorityClass the pod's (or else its
// workload's) LabelKueuePriorityClass names, "" without one.
func KueuePriorityClass(p *corev1.Pod, o *Owner) string {
	if v := p.Labels[LabelKueuePriorityClass]; v != "" {
		return v
	}
	if o != nil {
		return o.Labels[LabelKueuePriorityClass]
	}
	return ""
}

// KueuePriority maps a WorkloadPriorityClass value (higher runs first) to
// flotilla.Job.Priority (lower runs first): math.MaxInt32 - value, so the
// whole int32 range maps onto the uint32 range in reverse order.
func KueuePriority(value int32) uint32 {
	return uint32(int64(math.MaxInt32) - int64(value))
}

// WorkloadPriorityValue reads a WorkloadPriorityClass object's value.
func WorkloadPriorityValue(o *unstructured.Unstructured) (int32, error) {
	v, ok, err := unstructured.NestedFieldNoCopy(o.Object, "value")
	field := "WorkloadPriorityClass " + o.GetName() + " value"
	if err != nil || !ok {
		return 0, flotilla.Errorf(field, "", flotilla.ErrRequired, "a WorkloadPriorityClass has a value")
	}
	var n int64
	switch x := v.(type) {
	case int64:
		n = x
	case float64:
		n = int64(x)
		if float64(n) != x {
			return 0, flotilla.Errorf(field, fmt.Sprint(x), flotilla.ErrMalformed, "want an int32")
		}
	default:
		return 0, flotilla.Errorf(field, fmt.Sprint(v), flotilla.ErrMalformed, "want an int32, found %T", v)
	}
	if n < math.MinInt32 || n > math.MaxInt32 {
		return 0, flotilla.Errorf(field, strconv.FormatInt(n, 10), flotilla.ErrOutOfRange, "want an int32")
	}
	return int32(n), nil
}
