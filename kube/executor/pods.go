package executor

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/api"
)

// The labels and annotations of the pods the executor creates. The
// annotations are authoritative (a restarted executor reads them); the
// labels select.
const (
	// LabelCluster holds the Flotilla cluster's name.
	LabelCluster = "flotilla.io/cluster"
	// LabelJob holds the job id when it is a valid label value.
	LabelJob = "flotilla.io/job"
	// LabelAttempt holds the lease's attempt.
	LabelAttempt = "flotilla.io/attempt"
	// LabelManagedBy is app.kubernetes.io/managed-by, ManagedBy.
	LabelManagedBy = "app.kubernetes.io/managed-by"
	// ManagedBy is LabelManagedBy's value.
	ManagedBy = "flotilla-kube-executor"
	// AnnotationJob, AnnotationAttempt, AnnotationQueue, AnnotationJobSet
	// and AnnotationPriorityClass hold the lease's fields.
	AnnotationJob           = "flotilla.io/job"
	AnnotationAttempt       = "flotilla.io/attempt"
	AnnotationQueue         = "flotilla.io/queue"
	AnnotationJobSet        = "flotilla.io/job-set"
	AnnotationPriorityClass = "flotilla.io/priority-class"
)

// The environment variables every container of a lease's pod gets.
const (
	EnvJob            = "FLOTILLA_JOB_ID"
	EnvAttempt        = "FLOTILLA_ATTEMPT"
	EnvQueue          = "FLOTILLA_QUEUE"
	EnvJobSet         = "FLOTILLA_JOB_SET"
	EnvRuntimeSeconds = "FLOTILLA_RUNTIME_SECONDS"
	EnvExitCode       = "FLOTILLA_EXIT_CODE"
)

// DefaultImage is the default template's image.
const DefaultImage = "busybox:1.36"

// PodName is the name of a lease's pod: "flotilla-<id lower-cased>-<attempt>"
// for an id of digits and upper-case letters (the service's ULIDs), and
// "flotilla-<first 32 hex digits of the id's SHA-256>-<attempt>" for any
// other id, so that every id gives a valid, deterministic name.
func PodName(job string, attempt int) string {
	ulidLike := job != "" && len(job) <= 200
	for i := 0; i < len(job) && ulidLike; i++ {
		c := job[i]
		ulidLike = '0' <= c && c <= '9' || 'A' <= c && c <= 'Z'
	}
	id := strings.ToLower(job)
	if !ulidLike {
		sum := sha256.Sum256([]byte(job))
		id = hex.EncodeToString(sum[:16])
	}
	return "flotilla-" + id + "-" + strconv.Itoa(attempt)
}

// DefaultTemplate is the pod template when none is given: one container
// "job" of DefaultImage that sleeps for the job's runtime (whole seconds,
// rounded up) and exits with its exit code, so that the fake executor's
// runtime and exitCode work on a real kubelet.
func DefaultTemplate() *corev1.Pod {
	return &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{
		Name:    "job",
		Image:   DefaultImage,
		Command: []string{"sh", "-c", `sleep "$` + EnvRuntimeSeconds + `"; exit "$` + EnvExitCode + `"`},
	}}}}
}

// ParsePodTemplate reads a pod template, YAML or JSON, strictly (an
// unknown field is an error). It must be a Pod (kind Pod, or no kind)
// with at least one container; its name, namespace and nodeName are
// replaced by each lease's.
func ParsePodTemplate(data []byte) (*corev1.Pod, error) {
	var p corev1.Pod
	if err := yaml.UnmarshalStrict(data, &p); err != nil {
		return nil, flotilla.Errorf("template", "", flotilla.ErrMalformed, "%v", err)
	}
	if err := checkTemplate(&p); err != nil {
		return nil, flotilla.RenameFields(err, func(f string) string { return "template." + f })
	}
	return &p, nil
}

// checkTemplate reports a template's problems, fields named from the Pod.
func checkTemplate(p *corev1.Pod) error {
	var errs []error
	if p.Kind != "" && p.Kind != "Pod" {
		errs = append(errs, flotilla.Errorf("kind", p.Kind, flotilla.ErrInconsistent, "a pod template is a Pod"))
	}
	if len(p.Spec.Containers) == 0 {
		errs = append(errs, flotilla.Errorf("spec.containers", "[]", flotilla.ErrRequired, "the first container gets the lease's requests"))
	}
	return errors.Join(errs...)
}

// BuildPod is the pod of a lease from a template: named PodName, in
// namespace, pinned to the lease's node, never restarted, with the lease's
// grace period (whole seconds, rounded up), its requests on the first
// container (and as limits for resources other than cpu, memory,
// ephemeral-storage and hugepages, which Kubernetes requires to be equal),
// the Flotilla labels, annotations and environment added to the
// template's.
func BuildPod(tmpl *corev1.Pod, cluster, namespace string, l api.Lease) (*corev1.Pod, error) {
	grace, err := time.ParseDuration(orZero(l.TerminationGracePeriod))
	if err != nil {
		return nil, flotilla.Errorf("terminationGracePeriod", l.TerminationGracePeriod, flotilla.ErrMalformed, "%v", err)
	}
	runtime, err := time.ParseDuration(orZero(l.Runtime))
	if err != nil {
		return nil, flotilla.Errorf("runtime", l.Runtime, flotilla.ErrMalformed, "%v", err)
	}
	requests := corev1.ResourceList{}
	var errs []error
	for name, q := range l.Requests {
		v, err := resource.ParseQuantity(q)
		if err != nil {
			errs = append(errs, flotilla.Errorf("requests."+name, q, flotilla.ErrMalformed, "%v", err))
			continue
		}
		requests[corev1.ResourceName(name)] = v
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	p := tmpl.DeepCopy()
	p.TypeMeta = metav1.TypeMeta{}
	p.ObjectMeta = metav1.ObjectMeta{
		Name: PodName(l.Job, l.Attempt), Namespace: namespace,
		Labels: merge(tmpl.Labels, map[string]string{
			LabelCluster: cluster, LabelAttempt: strconv.Itoa(l.Attempt), LabelManagedBy: ManagedBy,
		}),
		Annotations: merge(tmpl.Annotations, map[string]string{
			AnnotationJob: l.Job, AnnotationAttempt: strconv.Itoa(l.Attempt),
			AnnotationQueue: l.Queue, AnnotationJobSet: l.JobSet,
		}),
	}
	if len(validation.IsValidLabelValue(l.Job)) == 0 {
		p.Labels[LabelJob] = l.Job
	}
	if l.PriorityClass != "" {
		p.Annotations[AnnotationPriorityClass] = l.PriorityClass
	}
	p.Status = corev1.PodStatus{}
	p.Spec.NodeName = l.Node
	p.Spec.RestartPolicy = corev1.RestartPolicyNever
	secs := graceSeconds(grace)
	p.Spec.TerminationGracePeriodSeconds = &secs
	c := &p.Spec.Containers[0]
	if c.Resources.Requests == nil && len(requests) > 0 {
		c.Resources.Requests = corev1.ResourceList{}
	}
	for name, v := range requests {
		c.Resources.Requests[name] = v
		if !native(name) {
			if c.Resources.Limits == nil {
				c.Resources.Limits = corev1.ResourceList{}
			}
			c.Resources.Limits[name] = v
		}
	}
	env := []corev1.EnvVar{
		{Name: EnvJob, Value: l.Job}, {Name: EnvAttempt, Value: strconv.Itoa(l.Attempt)},
		{Name: EnvQueue, Value: l.Queue}, {Name: EnvJobSet, Value: l.JobSet},
		{Name: EnvRuntimeSeconds, Value: strconv.FormatInt(int64((runtime+time.Second-1)/time.Second), 10)},
		{Name: EnvExitCode, Value: strconv.Itoa(l.ExitCode)},
	}
	for i := range p.Spec.Containers {
		p.Spec.Containers[i].Env = append(p.Spec.Containers[i].Env, env...)
	}
	return p, nil
}

// native reports whether Kubernetes lets a resource's request differ from
// its limit.
func native(name corev1.ResourceName) bool {
	return name == corev1.ResourceCPU || name == corev1.ResourceMemory || name == corev1.ResourceEphemeralStorage ||
		strings.HasPrefix(string(name), corev1.ResourceHugePagesPrefix)
}

func merge(a, b map[string]string) map[string]string {
	out := make(map[string]string, len(a)+len(b))
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}

// PhaseOf is a pod's phase as the protocol says it, with the exit code of
// a failed pod and a reason: Pending (or no phase yet) is pending,
// Running running, Succeeded succeeded; Failed is failed with the first
// non-zero exit code among its containers (spec order, then init
// containers), or returned when the pod was evicted or disrupted (status
// reason Evicted, or a DisruptionTarget=True condition: its containers
// were killed, whatever their exit codes) or none exited non-zero (the
// kubelet refused the pod: OutOfcpu, NodeAffinity; or cut it at a
// deadline before a container failed). Unknown (the node is unreachable) is
// running: the lease stays renewed while the node may come back.
func PhaseOf(p *corev1.Pod) (phase api.JobPhase, exitCode int, reason string) {
	switch p.Status.Phase {
	case corev1.PodRunning, corev1.PodUnknown:
		return api.PhaseRunning, 0, ""
	case corev1.PodSucceeded:
		return api.PhaseSucceeded, 0, ""
	case corev1.PodFailed:
		if why, ok := disrupted(p); ok {
			return api.PhaseReturned, 0, "pod failed: " + why
		}
		statuses := append(orderedStatuses(p.Spec.Containers, p.Status.ContainerStatuses), p.Status.InitContainerStatuses...)
		for _, s := range statuses {
			if t := s.State.Terminated; t != nil && t.ExitCode != 0 {
				return api.PhaseFailed, int(t.ExitCode), strings.TrimSpace(fmt.Sprintf("container %s: %s %s", s.Name, t.Reason, t.Message))
			}
		}
		why := strings.TrimSpace(p.Status.Reason + " " + p.Status.Message)
		if why == "" {
			why = "no container exited non-zero"
		}
		return api.PhaseReturned, 0, "pod failed: " + why
	}
	return api.PhasePending, 0, ""
}

// FailureReasonOf classifies a failed pod for a queue's retry policy
// (api.ReportedFailureReasons): oom when a container was OOMKilled,
// evicted when its kubelet evicted it (status reason Evicted), deadline
// when it ran past its active deadline (status reason DeadlineExceeded);
// "" otherwise, and for a pod that has not failed.
func FailureReasonOf(p *corev1.Pod) string {
	if p.Status.Phase != corev1.PodFailed {
		return ""
	}
	switch p.Status.Reason {
	case "Evicted":
		return api.FailureEvicted
	case "DeadlineExceeded":
		return api.FailureDeadline
	}
	for _, st := range [][]corev1.ContainerStatus{p.Status.ContainerStatuses, p.Status.InitContainerStatuses} {
		for _, s := range st {
			if t := s.State.Terminated; t != nil && t.Reason == "OOMKilled" {
				return api.FailureOOM
			}
		}
	}
	return ""
}

// disrupted reports whether the pod failed because it was evicted by its
// kubelet (status reason Evicted) or disrupted (a DisruptionTarget=True
// condition: the taint manager, pod GC, a kubelet's shutdown or
// preemption), and why: its containers were killed, so their exit codes
// are the kill's, not the job's.
func disrupted(p *corev1.Pod) (string, bool) {
	if p.Status.Reason == "Evicted" {
		return strings.TrimSpace(p.Status.Reason + " " + p.Status.Message), true
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.DisruptionTarget && c.Status == corev1.ConditionTrue {
			return strings.TrimSpace(c.Reason + " " + c.Message), true
		}
	}
	return "", false
}

// orderedStatuses are a pod's container statuses in the spec's order.
func orderedStatuses(spec []corev1.Container, st []corev1.ContainerStatus) []corev1.ContainerStatus {
	out := make([]corev1.ContainerStatus, 0, len(st))
	for _, c := range spec {
		for _, s := range st {
			if s.Name == c.Name {
				out = append(out, s)
			}
		}
	}
	return out
}
