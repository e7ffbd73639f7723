package kubeconv

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	resourcehelper "k8s.io/component-helpers/resource"

	"github.com/flotilla-sched/flotilla"
)

// Labels and annotations a pod may carry.
const (
	// LabelQueue names the pod's queue (label, or else annotation);
	// without it the queue is the pod's namespace.
	LabelQueue = "flotilla.dev/queue"
	// LabelJobSet names the pod's job set (label, or else annotation).
	LabelJobSet = "flotilla.dev/job-set"
	// AnnotationPriority is the pod's priority within its queue and
	// priority class (flotilla.Job.Priority): a uint32 in decimal, LOWER
	// runs first (Armada's convention); without it, 0.
	AnnotationPriority = "flotilla.dev/priority"
	// AnnotationGangID makes the pod a member of a gang (Armada's).
	AnnotationGangID = "armadaproject.io/gangId"
	// AnnotationGangCardinality is the gang's member count, a positive
	// integer, required with AnnotationGangID.
	AnnotationGangCardinality = "armadaproject.io/gangCardinality"
	// AnnotationGangNodeUniformityLabel requires every member on nodes
	// sharing one value of the label it names.
	AnnotationGangNodeUniformityLabel = "armadaproject.io/gangNodeUniformityLabel"
	// AnnotationTopologyRequired and AnnotationTopologyPreferred name a
	// level (a node label key) of the scheduler's default topology that a
	// gang member's gang requires or prefers (flotilla.GangTopology).
	// Kueue's AnnotationKueueRequiredTopology and
	// AnnotationKueuePreferredTopology are read as the same; given both
	// ways, they must agree.
	AnnotationTopologyRequired  = "flotilla.dev/topology-required"
	AnnotationTopologyPreferred = "flotilla.dev/topology-preferred"
	// AnnotationKueueRequiredTopology and AnnotationKueuePreferredTopology
	// are Kueue's topology-aware scheduling annotations.
	AnnotationKueueRequiredTopology  = "kueue.x-k8s.io/podset-required-topology"
	AnnotationKueuePreferredTopology = "kueue.x-k8s.io/podset-preferred-topology"
)

// DefaultClass is the class of pods that name no priority class when no
// PriorityClass object is the global default: priority 0, preemptible, as
// such pods are under kube-scheduler.
const DefaultClass = "flotilla-default"

// Schema returns the default resource schema: cpu (milli-cpu), memory
// (bytes) and nvidia.com/gpu (whole).
func Schema() *flotilla.ResourceSchema {
	return flotilla.MustResourceSchema("cpu", "memory", "nvidia.com/gpu")
}

// JobID is the ID of a pod's job: "namespace/name".
func JobID(p *corev1.Pod) string { return p.Namespace + "/" + p.Name }

// Resources converts a resource list through schema into a new vector:
// resources the schema lacks are ignored; quantities are rounded up to the
// resource's unit (milli-cpu, whole bytes, whole GPUs).
func Resources(list corev1.ResourceList, schema *flotilla.ResourceSchema) flotilla.Resources {
	out := schema.Zero()
	for name, q := range list {
		i, ok := schema.Index(string(name))
		if !ok {
			continue
		}
		out[i] = quantity(q, schema.Unit(i))
	}
	return out
}

func quantity(q resource.Quantity, u flotilla.Unit) int64 {
	if u == flotilla.UnitMilli {
		return q.MilliValue()
	}
	return q.Value()
}

// PodRequests is the pod's effective request in schema, as kube-scheduler
// computes it (containers, init containers including sidecars, overhead;
// for a container whose status reports resources, the larger of its spec
// and its status, so a pod resized in place holds the larger until the
// kubelet has resized it).
func PodRequests(p *corev1.Pod, schema *flotilla.ResourceSchema) flotilla.Resources {
	return Resources(resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{UseStatusResources: true}), schema)
}

// Node converts a Node: its name, the given cluster, its labels, its
// taints, status.allocatable as the capacity and spec.unschedulable. It
// reports every problem at once (a taint of an unknown effect, a negative
// allocatable) as flotilla.Node.Validate does, naming the node.
func Node(n *corev1.Node, cluster string, schema *flotilla.ResourceSchema) (flotilla.Node, error) {
	if n == nil {
		return flotilla.Node{}, errors.Join(flotilla.Errorf("node", "", flotilla.ErrRequired, "nil node"))
	}
	out := flotilla.Node{
		Name:          n.Name,
		Cluster:       cluster,
		Labels:        n.Labels,
		Total:         Resources(n.Status.Allocatable, schema),
		Unschedulable: n.Spec.Unschedulable,
	}
	if len(n.Spec.Taints) > 0 {
		out.Taints = make([]flotilla.Taint, len(n.Spec.Taints))
		for i, t := range n.Spec.Taints {
			out.Taints[i] = flotilla.Taint{Key: t.Key, Value: t.Value, Effect: flotilla.TaintEffect(t.Effect)}
		}
	}
	if err := out.Validate(schema); err != nil {
		return flotilla.Node{}, err
	}
	return out, nil
}

// PriorityClass converts a PriorityClass object: its name, its value as
// the priority, preemptible unless preemptionPolicy is Never.
func PriorityClass(pc *schedulingv1.PriorityClass) flotilla.PriorityClass {
	never := pc.PreemptionPolicy != nil && *pc.PreemptionPolicy == corev1.PreemptNever
	return flotilla.PriorityClass{Name: pc.Name, Priority: pc.Value, Preemptible: !never}
}

// Classes converts PriorityClass objects into Flotilla classes sorted by
// name, DefaultClass added, and names the default class: the one with
// globalDefault (the first by name if several), or DefaultClass.
func Classes(pcs []*schedulingv1.PriorityClass) (classes []flotilla.PriorityClass, defaultClass string) {
	defaultClass = DefaultClass
	classes = make([]flotilla.PriorityClass, 0, len(pcs)+1)
	hasDefault := false
	for _, pc := range pcs {
		if pc.Name == DefaultClass {
			hasDefault = true
		}
		classes = append(classes, PriorityClass(pc))
	}
	if !hasDefault {
		classes = append(classes, flotilla.PriorityClass{Name: DefaultClass, Priority: 0, Preemptible: true})
	}
	slices.SortFunc(classes, func(a, b flotilla.PriorityClass) int {
		if a.Name < b.Name {
			return -1
		}
		if a.Name > b.Name {
			return 1
		}
		return 0
	})
	best := ""
	for _, pc := range pcs {
		if pc.GlobalDefault && (best == "" || pc.Name < best) {
			best = pc.Name
		}
	}
	if best != "" {
		defaultClass = best
	}
	return classes, defaultClass
}

// lookup returns the label, or else the annotation, named key.
func lookup(p *corev1.Pod, key string) (string, bool) {
	if v, ok := p.Labels[key]; ok {
		return v, true
	}
	v, ok := p.Annotations[key]
	return v, ok
}

func annotationField(key string) string { return "metadata.annotations[" + key + "]" }

// queueOf is the pod's queue and the field it comes from: LabelQueue on
// the pod, LabelKueueQueue on the pod, LabelQueue on the owner,
// LabelKueueQueue on the owner, first found; false when none is set.
func queueOf(p *corev1.Pod, o *Owner) (q, field string, ok bool) {
	if q, ok := lookup(p, LabelQueue); ok {
		return q, annotationField(LabelQueue), true
	}
	if q, ok := p.Labels[LabelKueueQueue]; ok {
		return q, "metadata.labels[" + LabelKueueQueue + "]", true
	}
	if o == nil {
		return "", "", false
	}
	where := o.Kind + " " + o.Namespace + "/" + o.Name + " "
	if q, ok := ownerLookup(o, LabelQueue); ok {
		return q, where + annotationField(LabelQueue), true
	}
	if q, ok := o.Labels[LabelKueueQueue]; ok {
		return q, where + "metadata.labels[" + LabelKueueQueue + "]", true
	}
	return "", "", false
}

// parsePriority reads AnnotationPriority's value: a uint32 in decimal.
func parsePriority(v string) (uint32, error) {
	n, err := strconv.ParseUint(v, 10, 32)
	if err == nil {
		return uint32(n), nil
	}
	field := annotationField(AnnotationPriority)
	_, ierr := strconv.ParseInt(v, 10, 64)
	negative := strings.HasPrefix(v, "-") && (ierr == nil || errors.Is(ierr, strconv.ErrRange))
	if negative || errors.Is(err, strconv.ErrRange) {
		return 0, flotilla.Errorf(field, v, flotilla.ErrOutOfRange, "want an integer from 0 to %d (lower runs first)", uint32(math.MaxUint32))
	}
	return 0, flotilla.Errorf(field, v, flotilla.ErrMalformed, "want an integer from 0 to %d in decimal (lower runs first)", uint32(math.MaxUint32))
}

// Job converts a pod into its job (see the package doc for the mapping).
// The result is validated against schema. Every problem is reported at
// once as *flotilla.FieldError values naming the pod's field or annotation
// and the value found; on any problem the job is the zero Job.
func Job(p *corev1.Pod, schema *flotilla.ResourceSchema) (flotilla.Job, error) {
	return JobOf(p, schema, nil, nil)
}

// ownerLookup returns the owner's label, or else annotation, named key.
func ownerLookup(o *Owner, key string) (string, bool) {
	if o == nil {
		return "", false
	}
	if v, ok := o.Labels[key]; ok {
		return v, true
	}
	v, ok := o.Annotations[key]
	return v, ok
}

// JobOf converts a pod of a workload into its job: as Job, with the
// owner's queue, job set, priority and gang where the pod carries none
// (see the package documentation for the order). owner may be nil (a bare
// pod); kueuePriority is the value of the WorkloadPriorityClass that
// KueuePriorityClass names, nil without one.
func JobOf(p *corev1.Pod, schema *flotilla.ResourceSchema, owner *Owner, kueuePriority *int32) (flotilla.Job, error) {
	if p == nil {
		return flotilla.Job{}, errors.Join(flotilla.Errorf("pod", "", flotilla.ErrRequired, "nil pod"))
	}
	var errs []error
	j := flotilla.Job{
		ID:            JobID(p),
		Queue:         p.Namespace,
		PriorityClass: p.Spec.PriorityClassName,
		SubmitTime:    p.CreationTimestamp.Time,
		Requests:      PodRequests(p, schema),
		NodeSelector:  p.Spec.NodeSelector,
	}
	if q, field, ok := queueOf(p, owner); ok {
		if q == "" {
			errs = append(errs, flotilla.Errorf(field, q, flotilla.ErrRequired, "a queue name must not be empty"))
		}
		j.Queue = q
	}
	if owner != nil {
		j.JobSet = owner.JobSet
	}
	if s, ok := ownerLookup(owner, LabelJobSet); ok {
		j.JobSet = s
	}
	if s, ok := lookup(p, LabelJobSet); ok {
		j.JobSet = s
	}
	if v, ok := p.Annotations[AnnotationPriority]; ok {
		prio, err := parsePriority(v)
		if err != nil {
			errs = append(errs, err)
		}
		j.Priority = prio
	} else if v, ok := ownerLookup(owner, AnnotationPriority); ok {
		prio, err := parsePriority(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s %s/%s: %w", owner.Kind, owner.Namespace, owner.Name, err))
		}
		j.Priority = prio
	} else if kueuePriority != nil {
		j.Priority = KueuePriority(*kueuePriority)
	}
	if _, armada := p.Annotations[AnnotationGangID]; !armada && owner != nil {
		j.Gang = owner.Gang
	}
	if id, ok := p.Annotations[AnnotationGangID]; ok {
		if id == "" {
			errs = append(errs, flotilla.Errorf(annotationField(AnnotationGangID), id, flotilla.ErrRequired, "a gang id must not be empty"))
		}
		j.Gang.ID = p.Namespace + "/" + id
		c, ok := p.Annotations[AnnotationGangCardinality]
		if !ok {
			errs = append(errs, flotilla.Errorf(annotationField(AnnotationGangCardinality), "", flotilla.ErrRequired, "required with %s", AnnotationGangID))
		} else if n, err := strconv.Atoi(c); err != nil {
			errs = append(errs, flotilla.Errorf(annotationField(AnnotationGangCardinality), c, flotilla.ErrMalformed, "want a positive integer"))
		} else if n < 1 {
			errs = append(errs, flotilla.Errorf(annotationField(AnnotationGangCardinality), c, flotilla.ErrOutOfRange, "a gang has at least 1 member"))
		} else {
			j.Gang.Cardinality = n
		}
		j.Gang.NodeUniformityLabel = p.Annotations[AnnotationGangNodeUniformityLabel]
	} else {
		for _, k := range []string{AnnotationGangCardinality, AnnotationGangNodeUniformityLabel} {
			if v, ok := p.Annotations[k]; ok {
				errs = append(errs, flotilla.Errorf(annotationField(k), v, flotilla.ErrInconsistent, "set without %s", AnnotationGangID))
			}
		}
	}
	errs = append(errs, gangTopology(p, &j)...)
	if a := p.Spec.Affinity; a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		terms, err := NodeAffinity(a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution)
		if err != nil {
			errs = append(errs, err)
		}
		j.NodeAffinity = terms
	}
	if _, empty := p.Spec.NodeSelector[""]; empty {
		errs = append(errs, flotilla.Errorf("spec.nodeSelector", "", flotilla.ErrRequired, "label key must not be empty"))
	}
	if len(p.Spec.Tolerations) > 0 {
		j.Tolerations = make([]flotilla.Toleration, len(p.Spec.Tolerations))
		for i, t := range p.Spec.Tolerations {
			f := fmt.Sprintf("spec.tolerations[%d]", i)
			switch t.Operator {
			case "", corev1.TolerationOpEqual:
				if t.Key == "" {
					errs = append(errs, flotilla.Errorf(f+".operator", string(t.Operator), flotilla.ErrInconsistent, "an empty key needs operator Exists"))
				}
			case corev1.TolerationOpExists:
				if t.Value != "" {
					errs = append(errs, flotilla.Errorf(f+".value", t.Value, flotilla.ErrInconsistent, "operator Exists takes no value"))
				}
			default:
				errs = append(errs, flotilla.Errorf(f+".operator", string(t.Operator), flotilla.ErrOutOfRange, "want Equal or Exists"))
			}
			switch t.Effect {
			case "", corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute:
			default:
				errs = append(errs, flotilla.Errorf(f+".effect", string(t.Effect), flotilla.ErrOutOfRange, "want NoSchedule, PreferNoSchedule or NoExecute"))
			}
			j.Tolerations[i] = flotilla.Toleration{Key: t.Key, Operator: flotilla.TolerationOperator(t.Operator), Value: t.Value, Effect: flotilla.TaintEffect(t.Effect)}
		}
	}
	if len(errs) == 0 {
		if err := j.Validate(schema); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return flotilla.Job{}, errors.Join(errs...)
	}
	return j, nil
}

// requiredAffinityField is the pod field of a required node affinity.
const requiredAffinityField = "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"

// NodeAffinity converts a pod's required node affinity: its terms, each
// of node-label expressions with In, NotIn, Exists or DoesNotExist. Gt and
// Lt, and matchFields (a node's name, DaemonSets' way), are refused, naming
// the field, rather than ignored: a pod is never placed on a node it would
// refuse. An empty selector (no terms) matches no node in Kubernetes and is
// refused too. Preferred affinity is not read.
func NodeAffinity(sel *corev1.NodeSelector) ([]flotilla.NodeSelectorTerm, error) {
	var errs []error
	if len(sel.NodeSelectorTerms) == 0 {
		errs = append(errs, flotilla.Errorf(requiredAffinityField+".nodeSelectorTerms", "[]", flotilla.ErrRequired, "no term: no node would match"))
	}
	terms := make([]flotilla.NodeSelectorTerm, len(sel.NodeSelectorTerms))
	for i, t := range sel.NodeSelectorTerms {
		f := fmt.Sprintf("%s.nodeSelectorTerms[%d]", requiredAffinityField, i)
		if len(t.MatchFields) > 0 {
			errs = append(errs, flotilla.Errorf(f+".matchFields", fmt.Sprint(len(t.MatchFields)), flotilla.ErrOutOfRange, "not supported by Flotilla; select nodes by label"))
		}
		for k, e := range t.MatchExpressions {
			switch e.Operator {
			case corev1.NodeSelectorOpIn, corev1.NodeSelectorOpNotIn, corev1.NodeSelectorOpExists, corev1.NodeSelectorOpDoesNotExist:
			default:
				errs = append(errs, flotilla.Errorf(fmt.Sprintf("%s.matchExpressions[%d].operator", f, k), string(e.Operator), flotilla.ErrOutOfRange,
					"want In, NotIn, Exists or DoesNotExist (Gt and Lt are not supported)"))
			}
			terms[i].MatchExpressions = append(terms[i].MatchExpressions, flotilla.NodeSelectorRequirement{
				Key: e.Key, Operator: flotilla.NodeSelectorOperator(e.Operator), Values: e.Values})
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return terms, nil
}

// gangTopology reads a gang member's topology annotations (flotilla's or
// Kueue's aliases) into j.Gang.Topology; a pod outside a gang may not set
// them.
func gangTopology(p *corev1.Pod, j *flotilla.Job) []error {
	var errs []error
	level := func(own, kueue string) string {
		v, ok := p.Annotations[own]
		k, kok := p.Annotations[kueue]
		switch {
		case ok && kok && v != k:
			errs = append(errs, flotilla.Errorf(annotationField(kueue), k, flotilla.ErrInconsistent, "%s says %q", own, v))
		case !ok && kok:
			v, own = k, kueue
		}
		if (ok || kok) && v == "" {
			errs = append(errs, flotilla.Errorf(annotationField(own), "", flotilla.ErrRequired, "a node label key"))
		}
		if (ok || kok) && j.Gang.ID == "" {
			errs = append(errs, flotilla.Errorf(annotationField(own), v, flotilla.ErrInconsistent, "set without %s (a topology places a gang)", AnnotationGangID))
		}
		return v
	}
	req := level(AnnotationTopologyRequired, AnnotationKueueRequiredTopology)
	pref := level(AnnotationTopologyPreferred, AnnotationKueuePreferredTopology)
	if j.Gang.ID != "" {
		j.Gang.Topology = flotilla.GangTopology{Required: req, Preferred: pref}
	}
	return errs
}
