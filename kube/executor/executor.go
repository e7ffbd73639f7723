package executor

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/api"
	fexec "github.com/flotilla-sched/flotilla/executor"
	"github.com/flotilla-sched/flotilla/kube/internal/noretry"
)

// DefaultRenew is how often Run reports when Config.Renew is 0: well under
// the service's default lease timeout of 30 s.
const DefaultRenew = 5 * time.Second

// DefaultNamespace is where pods are created when Config.Namespace is "".
const DefaultNamespace = "default"

// Config describes one cluster's executor.
type Config struct {
	// Cluster names the cluster at the service; required, and a valid
	// label value (it labels the cluster's pods).
	Cluster string
	// Pool is the cluster's pool at the service (`-pool`), sent with
	// every report; "" is the default pool.
	Pool string
	// Kube creates, reads and deletes pods; required.
	Kube kubernetes.Interface
	// Lister reads the cluster's nodes and pods, with the Step's context;
	// nil reads them from Kube at every Step (APILister). Run is given
	// informers' listers by InformerLister.
	Lister Lister
	// Service is where the executor reports; required.
	Service fexec.Reporter
	// Namespace is where the pods are created; "" means DefaultNamespace.
	Namespace string
	// NodeSelector picks the cluster's nodes among the apiserver's; nil
	// means every node.
	NodeSelector labels.Selector
	// Resources are the resource names reported (the service's schema);
	// nil means cpu, memory and nvidia.com/gpu, serve's default.
	Resources []string
	// Template is the pod template (ParsePodTemplate); nil means
	// DefaultTemplate.
	Template *corev1.Pod
	// Keep is how many pods reported terminal are kept, the most recent,
	// for debugging; older ones are deleted. 0 deletes each once the
	// service has taken its terminal phase.
	Keep int
	// Renew is Run's reporting period; 0 means DefaultRenew.
	Renew time.Duration
	// LeaseTimeout is the service's lease timeout, which bounds how long
	// Run lets a report take (executor.Loop); 0 means
	// api.DefaultLeaseTimeout.
	LeaseTimeout time.Duration
}

// key names one lease of a job.
type key struct {
	job     string
	attempt int
}

func compareKeys(a, b key) int {
	return cmp.Or(strings.Compare(a.job, b.job), cmp.Compare(a.attempt, b.attempt))
}

// task is one lease the executor holds.
type task struct {
	key  key
	pod  string
	node string
	// lease is the lease as given; zero for a task adopted at start.
	lease api.Lease
	// created: the pod was created (or found); a task whose creation
	// failed in a way worth retrying is created again at the next Step.
	created bool
	phase   api.JobPhase
	exit    int
	reason  string
	// failure is the failure reason of a failed or returned pod
	// (FailureReasonOf).
	failure string
	// killed: the service ordered the pod stopped, with grace (negative:
	// the pod's own grace period).
	killed bool
	grace  time.Duration
}

// terminal reports whether the task's phase is an end.
func (t *task) terminal() bool {
	return t.phase != api.PhasePending && t.phase != api.PhaseRunning
}

// Executor runs the leases of one cluster as pods. It is not safe for
// concurrent use: one goroutine calls Step (or Run).
type Executor struct {
	cfg Config
	// held are the leases the executor holds, keys sorted (the order of
	// reports).
	held map[key]*task
	keys []key
	// adopted: the pods of an earlier run were adopted.
	adopted bool
	// lastNodes are the nodes the service last took; nil after a failed
	// report, so that the next one sends them again.
	lastNodes []api.Node
	// done are the names of pods reported terminal and kept, oldest first.
	done     []string
	finished map[api.JobPhase]int
}

// New checks cfg and returns an executor holding nothing yet (its first
// Step adopts the cluster's pods). Every problem is a *flotilla.FieldError
// named by the Config field, all joined.
func New(cfg Config) (*Executor, error) {
	var errs []error
	switch {
	case cfg.Cluster == "":
		errs = append(errs, flotilla.Errorf("cluster", "", flotilla.ErrRequired, ""))
	case len(validation.IsValidLabelValue(cfg.Cluster)) > 0:
		errs = append(errs, flotilla.Errorf("cluster", cfg.Cluster, flotilla.ErrMalformed, "it labels the cluster's pods: %s",
			strings.Join(validation.IsValidLabelValue(cfg.Cluster), "; ")))
	}
	if cfg.Kube == nil {
		errs = append(errs, flotilla.Errorf("kube", "<nil>", flotilla.ErrRequired, "a Kubernetes client"))
	}
	if cfg.Service == nil {
		errs = append(errs, flotilla.Errorf("service", "<nil>", flotilla.ErrRequired, "a service to report to"))
	}
	if cfg.Namespace == "" {
		cfg.Namespace = DefaultNamespace
	}
	if msgs := validation.IsDNS1123Label(cfg.Namespace); len(msgs) > 0 {
		errs = append(errs, flotilla.Errorf("namespace", cfg.Namespace, flotilla.ErrMalformed, "%s", strings.Join(msgs, "; ")))
	}
	if cfg.Keep < 0 {
		errs = append(errs, flotilla.Errorf("keep", strconv.Itoa(cfg.Keep), flotilla.ErrNegative, ""))
	}
	if cfg.Renew < 0 {
		errs = append(errs, flotilla.Errorf("renew", cfg.Renew.String(), flotilla.ErrNegative, ""))
	}
	if cfg.LeaseTimeout < 0 {
		errs = append(errs, flotilla.Errorf("leaseTimeout", cfg.LeaseTimeout.String(), flotilla.ErrNegative, ""))
	}
	if cfg.Template != nil {
		if err := checkTemplate(cfg.Template); err != nil {
			errs = append(errs, flotilla.RenameFields(err, func(f string) string { return "template." + f }))
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	if cfg.Renew == 0 {
		cfg.Renew = DefaultRenew
	}
	if cfg.Resources == nil {
		cfg.Resources = []string{string(corev1.ResourceCPU), string(corev1.ResourceMemory), api.DefaultGPUResource}
	}
	if cfg.NodeSelector == nil {
		cfg.NodeSelector = labels.Everything()
	}
	if cfg.Template == nil {
		cfg.Template = DefaultTemplate()
	}
	if cfg.Lister == nil {
		cfg.Lister = APILister{Kube: cfg.Kube}
	}
	return &Executor{cfg: cfg, held: map[key]*task{}, finished: map[api.JobPhase]int{}}, nil
}

// Held returns the leases the executor holds as "job/attempt", sorted.
func (e *Executor) Held() []string {
	out := make([]string, len(e.keys))
	for i, k := range e.keys {
		out[i] = k.job + "/" + strconv.Itoa(k.attempt)
	}
	return out
}

// Finished counts the leases reported ended in a phase (succeeded,
// failed, returned, stopped) and taken by the service.
func (e *Executor) Finished(p api.JobPhase) int { return e.finished[p] }

func (e *Executor) hold(t *task) {
	if _, ok := e.held[t.key]; !ok {
		i, _ := slices.BinarySearchFunc(e.keys, t.key, compareKeys)
		e.keys = slices.Insert(e.keys, i, t.key)
	}
	e.held[t.key] = t
}

func (e *Executor) forget(k key) {
	if _, ok := e.held[k]; !ok {
		return
	}
	delete(e.held, k)
	if i, ok := slices.BinarySearchFunc(e.keys, k, compareKeys); ok {
		e.keys = slices.Delete(e.keys, i, i+1)
	}
}

// Step makes one report: it reads the nodes and pods, reports the nodes
// (when they changed since the service last took them) and the phase of
// every lease held, then creates the pods of the reply's new leases and
// deletes those of its kill orders. Leases reported ended are forgotten
// once the service took the report, and their pods deleted (Config.Keep).
// A refused report changes nothing held, except leases the service says
// are not the cluster's: their pods are deleted and the report made again
// without them.
func (e *Executor) Step(ctx context.Context) (api.ReportReply, error) {
	pods, err := e.cfg.Lister.Pods(ctx)
	if err != nil {
		return api.ReportReply{}, fmt.Errorf("executor: listing pods: %w", err)
	}
	if !e.adopted {
		e.adopt(pods)
		e.adopted = true
	}
	knodes, err := e.cfg.Lister.Nodes(ctx, e.cfg.NodeSelector)
	if err != nil {
		return api.ReportReply{}, fmt.Errorf("executor: listing nodes: %w", err)
	}
	nodes := e.nodes(knodes, pods)
	e.observe(ctx, pods)
	rep := api.Report{Jobs: make([]api.JobReport, 0, len(e.keys)), Pool: e.cfg.Pool}
	if !reflect.DeepEqual(nodes, e.lastNodes) {
		rep.Nodes = nodes
	}
	var ended []key
	for _, k := range e.keys {
		t := e.held[k]
		jr := api.JobReport{Job: k.job, Attempt: k.attempt, Phase: string(t.phase), Reason: t.reason}
		if t.phase == api.PhaseFailed {
			jr.ExitCode = t.exit
		}
		if t.phase == api.PhaseFailed || t.phase == api.PhaseReturned {
			jr.FailureReason = t.failure
		}
		rep.Jobs = append(rep.Jobs, jr)
		if t.terminal() {
			ended = append(ended, k)
		}
	}
	reply, err := e.cfg.Service.Report(ctx, e.cfg.Cluster, rep)
	if err != nil {
		e.lastNodes = nil
		if e.dropRefused(ctx, err, rep.Jobs) > 0 || rep.Nodes == nil && fexec.RefusedAs(err, api.ErrUnknownCluster) {
			return e.Step(ctx)
		}
		return api.ReportReply{}, err
	}
	e.lastNodes = nodes
	for _, k := range ended {
		t := e.held[k]
		e.finished[t.phase]++
		e.forget(k)
		e.retire(ctx, t.pod)
	}
	names := make(map[string]bool, len(nodes))
	for _, n := range nodes {
		names[n.Name] = true
	}
	for _, l := range reply.Leases {
		k := key{l.Job, l.Attempt}
		if _, ok := e.held[k]; ok {
			continue // a lease already held: the service re-sent it
		}
		t := &task{key: k, pod: PodName(l.Job, l.Attempt), node: l.Node, lease: l, phase: api.PhasePending}
		e.hold(t)
		if !names[l.Node] {
			t.phase, t.reason = api.PhaseReturned, fmt.Sprintf("node %q is not among cluster %s's nodes", l.Node, e.cfg.Cluster)
			continue
		}
		e.create(ctx, t)
	}
	for _, kill := range reply.Kill {
		t, ok := e.held[key{kill.Job, kill.Attempt}]
		if !ok || t.terminal() {
			continue
		}
		grace, err := time.ParseDuration(orZero(kill.GracePeriod))
		if err != nil || grace < 0 {
			grace = -1 // unreadable: the pod's own (the lease's), never at once
		}
		t.killed, t.grace = true, grace
		t.reason = "killed: " + kill.Reason
		e.kill(ctx, t)
	}
	return reply, nil
}

// adopt holds the leases of the pods labelled with the executor's
// cluster: the pods of an earlier run.
func (e *Executor) adopt(pods []*corev1.Pod) {
	for _, p := range pods {
		if p.Namespace != e.cfg.Namespace || p.Labels[LabelCluster] != e.cfg.Cluster {
			continue
		}
		job := p.Annotations[AnnotationJob]
		attempt, err := strconv.Atoi(p.Annotations[AnnotationAttempt])
		if job == "" || err != nil || attempt < 1 {
			continue // not a pod this executor made
		}
		e.hold(&task{key: key{job, attempt}, pod: p.Name, node: p.Spec.NodeName, created: true, phase: api.PhasePending})
	}
}

// observe sets each held lease's phase from its pod. A pod the listing
// lacks is looked up (the listing may lag behind a pod just created); one
// that is gone ends its lease: stopped when it was killed, returned
// otherwise. Ended phases do not change.
func (e *Executor) observe(ctx context.Context, pods []*corev1.Pod) {
	byName := make(map[string]*corev1.Pod, len(e.keys))
	for _, p := range pods {
		if p.Namespace == e.cfg.Namespace && p.Labels[LabelCluster] == e.cfg.Cluster {
			byName[p.Name] = p
		}
	}
	for _, k := range e.keys {
		t := e.held[k]
		if t.terminal() {
			continue
		}
		if !t.created {
			e.create(ctx, t)
			continue
		}
		p := byName[t.pod]
		if p == nil {
			got, err := noretry.GetPod(ctx, e.cfg.Kube, e.cfg.Namespace, t.pod)
			switch {
			case apierrors.IsNotFound(err):
				if t.killed {
					t.phase = api.PhaseStopped
				} else {
					t.phase, t.reason = api.PhaseReturned, "pod "+t.pod+" was deleted before it ended"
				}
				continue
			case err != nil:
				continue // unknown: report the phase last seen
			}
			p = got
		}
		phase, exit, reason := PhaseOf(p)
		if t.killed {
			if phase != api.PhasePending && phase != api.PhaseRunning {
				t.phase = api.PhaseStopped
			} else if p.DeletionTimestamp == nil {
				e.kill(ctx, t) // the delete was lost: again
			}
			continue
		}
		t.phase, t.exit, t.reason, t.failure = phase, exit, reason, FailureReasonOf(p)
	}
}

// create creates a lease's pod. AlreadyExists is success (a retry, or a
// restart); a refusal that a retry cannot fix returns the lease; any other
// error leaves it to be tried again at the next Step.
func (e *Executor) create(ctx context.Context, t *task) {
	pod, err := BuildPod(e.cfg.Template, e.cfg.Cluster, e.cfg.Namespace, t.lease)
	if err != nil {
		t.phase, t.reason = api.PhaseReturned, err.Error()
		return
	}
	err = noretry.CreatePod(ctx, e.cfg.Kube, e.cfg.Namespace, pod)
	switch {
	case err == nil || apierrors.IsAlreadyExists(err):
		t.created = true
	case apierrors.IsInvalid(err) || apierrors.IsForbidden(err) || apierrors.IsBadRequest(err) || apierrors.IsNotFound(err):
		t.phase, t.reason = api.PhaseReturned, "creating pod "+pod.Name+": "+err.Error()
	}
}

// kill deletes a killed lease's pod with the kill order's grace period (the
// pod's own when the order's is unreadable: grace < 0); a pod already gone
// is stopped.
func (e *Executor) kill(ctx context.Context, t *task) {
	var opts metav1.DeleteOptions
	if t.grace >= 0 {
		secs := graceSeconds(t.grace)
		opts.GracePeriodSeconds = &secs
	}
	err := noretry.DeletePod(ctx, e.cfg.Kube, e.cfg.Namespace, t.pod, opts)
	if apierrors.IsNotFound(err) {
		t.phase = api.PhaseStopped
	}
}

// retire deletes a pod whose end the service took, or keeps it among the
// Keep most recent.
func (e *Executor) retire(ctx context.Context, pod string) {
	e.done = append(e.done, pod)
	for len(e.done) > e.cfg.Keep {
		e.deletePod(ctx, e.done[0])
		e.done = e.done[1:]
	}
}

// deletePod deletes a pod at once (a pod that ended needs no grace); a pod
// already gone is fine, and another failure leaves it (it is not held).
func (e *Executor) deletePod(ctx context.Context, name string) {
	zero := int64(0)
	_ = noretry.DeletePod(ctx, e.cfg.Kube, e.cfg.Namespace, name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
}

// dropRefused forgets the leases of a refused report that the service
// says do not exist or are not the cluster's (problems at jobs[i].job or
// jobs[i].attempt), deleting their pods (with their own grace period:
// they may be running), and returns how many it forgot.
func (e *Executor) dropRefused(ctx context.Context, err error, jobs []api.JobReport) int {
	dropped := 0
	for _, i := range fexec.RefusedJobs(err, jobs) {
		k := key{jobs[i].Job, jobs[i].Attempt}
		if t, ok := e.held[k]; ok {
			e.forget(k)
			// It may be running: its own grace period, not a force delete.
			_ = noretry.DeletePod(ctx, e.cfg.Kube, e.cfg.Namespace, t.pod, metav1.DeleteOptions{})
			dropped++
		}
	}
	return dropped
}

func orZero(s string) string {
	if strings.TrimSpace(s) == "" {
		return "0s"
	}
	return s
}

// graceSeconds is a grace period in whole seconds, rounded up (a grace
// period is never cut short).
func graceSeconds(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return int64((d + time.Second - 1) / time.Second)
}

// Run calls Step every Renew period until ctx ends and returns ctx's
// error (executor.Every: a report may run until shortly before the
// oldest lease it renews would expire, and the next starts once it has
// ended). A failed report is retried at the next period; onError (if
// not nil) hears of it. Give it an InformerLister started and synced
// (cmd/flotilla-kube-executor does).
func (e *Executor) Run(ctx context.Context, onError func(error)) error {
	return fexec.Every(ctx, fexec.Loop{Period: e.cfg.Renew, LeaseTimeout: e.cfg.LeaseTimeout}, func(ctx context.Context) error {
		_, err := e.Step(ctx)
		return err
	}, onError)
}
