package executor_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	k8stesting "k8s.io/client-go/testing"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/api"
	"github.com/flotilla-sched/flotilla/backend/memory"
	"github.com/flotilla-sched/flotilla/events"
	fexec "github.com/flotilla-sched/flotilla/executor"
	"github.com/flotilla-sched/flotilla/httpapi"
	"github.com/flotilla-sched/flotilla/internal/fakeclock"
	"github.com/flotilla-sched/flotilla/kube/executor"
	"github.com/flotilla-sched/flotilla/scheduler"
	"github.com/flotilla-sched/flotilla/server"
)

// service is an in-process Flotilla service over the memory backend with
// a fake clock, and queue A.
type service struct {
	t   testing.TB
	ctx context.Context
	clk *fakeclock.Clock
	srv *server.Server
}

func newService(t testing.TB) *service {
	t.Helper()
	ctx := context.Background()
	schema := flotilla.MustResourceSchema("cpu", "memory", api.DefaultGPUResource)
	clk := fakeclock.New(time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC))
	srv, err := server.New(ctx, server.Config{Scheduler: scheduler.DefaultConfig(schema), Backend: memory.New(schema), Clock: clk,
		NewID: server.NewULIDs(clk, nil), LeaseTimeout: 30 * time.Second})
	require.NoError(t, err)
	require.NoError(t, srv.CreateQueue(ctx, flotilla.Queue{Name: "A"}))
	return &service{t: t, ctx: ctx, clk: clk, srv: srv}
}

// submit submits one job per template (JSON job templates) to queue A,
// job set s, and returns their ids.
func (s *service) submit(jobs string) []string {
	s.t.Helper()
	ids, err := s.srv.SubmitJSON(s.ctx, []byte(`{"queue": "A", "jobSet": "s", "jobs": [`+jobs+`]}`))
	require.NoError(s.t, err)
	return ids
}

func (s *service) cycle() {
	s.t.Helper()
	_, err := s.srv.Cycle(s.ctx)
	require.NoError(s.t, err)
}

func (s *service) state(id string) events.State {
	s.t.Helper()
	st, err := s.srv.Status(s.ctx, id)
	require.NoError(s.t, err)
	return st[0].State
}

// node is a Node object with allocatable cpu and memory.
func node(name, cpu, memory string, lbls map[string]string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: lbls},
		Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(memory)}}}
}

// newExecutor is cluster's executor over kube, reporting to s in process.
func newExecutor(t testing.TB, s *service, cluster string, kube kubernetes.Interface, opts ...func(*executor.Config)) *executor.Executor {
	t.Helper()
	cfg := executor.Config{Cluster: cluster, Kube: kube, Service: &httpapi.Local{Server: s.srv}}
	for _, o := range opts {
		o(&cfg)
	}
	ex, err := executor.New(cfg)
	require.NoError(t, err)
	return ex
}

func step(t testing.TB, ex *executor.Executor) {
	t.Helper()
	_, err := ex.Step(context.Background())
	require.NoError(t, err)
}

func getPod(t testing.TB, kube kubernetes.Interface, name string) *corev1.Pod {
	t.Helper()
	p, err := kube.CoreV1().Pods("default").Get(context.Background(), name, metav1.GetOptions{})
	require.NoError(t, err)
	return p
}

// setPhase stands in for the kubelet: it sets a pod's phase, and for
// an ended pod its container's exit code.
func setPhase(t testing.TB, kube kubernetes.Interface, name string, phase corev1.PodPhase, exit int32) {
	t.Helper()
	p := getPod(t, kube, name)
	p.Status.Phase = phase
	if phase == corev1.PodSucceeded || phase == corev1.PodFailed {
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: p.Spec.Containers[0].Name,
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: exit, Reason: "Completed"}}}}
	}
	_, err := kube.CoreV1().Pods("default").UpdateStatus(context.Background(), p, metav1.UpdateOptions{})
	require.NoError(t, err)
}

// leased runs a job through a first report, a cycle and a second report,
// returning its id and pod name.
func leased(t testing.TB, s *service, ex *executor.Executor, job string) (string, string) {
	t.Helper()
	step(t, ex)
	ids := s.submit(job)
	s.cycle()
	step(t, ex)
	return ids[0], executor.PodName(ids[0], 1)
}

func TestALeaseBecomesAPodPinnedToItsNodeWithItsRequestsGraceAndLabels(t *testing.T) {
	s := newService(t)
	kube := fake.NewClientset(node("n1", "4", "16Gi", nil))
	ex := newExecutor(t, s, "c1", kube)
	id, name := leased(t, s, ex, `{"requests": {"cpu": "1500m", "memory": "2Gi", "nvidia.com/gpu": "0"}, "terminationGracePeriod": "45s", "runtime": "1m30s", "exitCode": 3}`)
	p := getPod(t, kube, name)
	require.Equal(t, "n1", p.Spec.NodeName)
	require.Equal(t, corev1.RestartPolicyNever, p.Spec.RestartPolicy)
	require.Equal(t, int64(45), *p.Spec.TerminationGracePeriodSeconds)
	c := p.Spec.Containers[0]
	require.Equal(t, "1500m", c.Resources.Requests.Cpu().String())
	require.Equal(t, "2Gi", c.Resources.Requests.Memory().String())
	require.Equal(t, map[string]string{executor.LabelCluster: "c1", executor.LabelJob: id, executor.LabelAttempt: "1",
		executor.LabelManagedBy: executor.ManagedBy}, p.Labels)
	require.Equal(t, id, p.Annotations[executor.AnnotationJob])
	require.Equal(t, "A", p.Annotations[executor.AnnotationQueue])
	require.Equal(t, "s", p.Annotations[executor.AnnotationJobSet])
	env := map[string]string{}
	for _, e := range c.Env {
		env[e.Name] = e.Value
	}
	require.Equal(t, "90", env[executor.EnvRuntimeSeconds])
	require.Equal(t, "3", env[executor.EnvExitCode])
	require.Equal(t, events.LeasedState, s.state(id))
	// The service sending the lease again creates nothing new.
	step(t, ex)
	pods, err := kube.CoreV1().Pods("default").List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	require.Len(t, pods.Items, 1)
}

func TestPodPhasesAreReportedSoTheServiceSeesTheJobRunAndSucceed(t *testing.T) {
	s := newService(t)
	kube := fake.NewClientset(node("n1", "4", "16Gi", nil))
	ex := newExecutor(t, s, "c1", kube)
	id, name := leased(t, s, ex, `{"requests": {"cpu": "1"}}`)
	step(t, ex) // pending: still leased
	require.Equal(t, events.LeasedState, s.state(id))
	setPhase(t, kube, name, corev1.PodRunning, 0)
	step(t, ex)
	require.Equal(t, events.RunningState, s.state(id))
	setPhase(t, kube, name, corev1.PodSucceeded, 0)
	step(t, ex)
	require.Equal(t, events.SucceededState, s.state(id))
	require.Equal(t, 1, ex.Finished(api.PhaseSucceeded))
	require.Empty(t, ex.Held())
}

func TestAFailedPodFailsTheJobWithItsContainersExitCode(t *testing.T) {
	s := newService(t)
	kube := fake.NewClientset(node("n1", "4", "16Gi", nil))
	ex := newExecutor(t, s, "c1", kube)
	id, name := leased(t, s, ex, `{"requests": {"cpu": "1"}}`)
	setPhase(t, kube, name, corev1.PodFailed, 7)
	step(t, ex)
	st, err := s.srv.Status(s.ctx, id)
	require.NoError(t, err)
	require.Equal(t, events.FailedState, st[0].State)
	require.Contains(t, st[0].Reason, "exit code 7")
}

// deletes returns the grace periods of the recorded pod deletions, by pod.
func deletes(kube *fake.Clientset) map[string]int64 {
	out := map[string]int64{}
	for _, a := range kube.Actions() {
		if d, ok := a.(k8stesting.DeleteActionImpl); ok && d.GetResource().Resource == "pods" && d.DeleteOptions.GracePeriodSeconds != nil {
			out[d.GetName()] = *d.DeleteOptions.GracePeriodSeconds
		}
	}
	return out
}

func TestACancelledJobsPodIsDeletedWithItsGracePeriodAndReportedStopped(t *testing.T) {
	s := newService(t)
	kube := fake.NewClientset(node("n1", "4", "16Gi", nil))
	ex := newExecutor(t, s, "c1", kube)
	id, name := leased(t, s, ex, `{"requests": {"cpu": "1"}, "terminationGracePeriod": "20s"}`)
	setPhase(t, kube, name, corev1.PodRunning, 0)
	step(t, ex)
	_, err := s.srv.Cancel(s.ctx, id)
	require.NoError(t, err)
	step(t, ex) // the reply orders the kill
	require.Equal(t, map[string]int64{name: 20}, deletes(kube))
	require.Equal(t, events.RunningState, s.state(id), "cancelled only once the executor says the pod is gone")
	step(t, ex) // the pod is gone: stopped
	require.Equal(t, events.CancelledState, s.state(id))
	require.Equal(t, 1, ex.Finished(api.PhaseStopped))
}

func TestAPodDeletedOutsideFlotillaReturnsTheLease(t *testing.T) {
	s := newService(t)
	kube := fake.NewClientset(node("n1", "4", "16Gi", nil))
	ex := newExecutor(t, s, "c1", kube)
	id, name := leased(t, s, ex, `{"requests": {"cpu": "1"}}`)
	require.NoError(t, kube.CoreV1().Pods("default").Delete(context.Background(), name, metav1.DeleteOptions{}))
	step(t, ex)
	st, err := s.srv.Status(s.ctx, id)
	require.NoError(t, err)
	require.Equal(t, events.Queued, st[0].State, "a returned lease requeues the job")
	require.Equal(t, 1, ex.Finished(api.PhaseReturned))
}

func TestALeaseOnANodeTheClusterLacksIsReturned(t *testing.T) {
	s := newService(t)
	kube := fake.NewClientset(node("n1", "4", "16Gi", nil))
	ex := newExecutor(t, s, "c1", kube)
	step(t, ex)
	ids := s.submit(`{"requests": {"cpu": "1"}}`)
	s.cycle()
	// The node leaves the cluster between the report and the lease.
	require.NoError(t, kube.CoreV1().Nodes().Delete(context.Background(), "n1", metav1.DeleteOptions{}))
	step(t, ex)
	step(t, ex)
	require.Equal(t, events.Queued, s.state(ids[0]))
	pods, err := kube.CoreV1().Pods("default").List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	require.Empty(t, pods.Items)
}

func TestPodsReportedEndedAreDeletedKeepingTheLastN(t *testing.T) {
	for _, keep := range []int{0, 1} {
		t.Run(fmt.Sprintf("keep=%d", keep), func(t *testing.T) {
			s := newService(t)
			kube := fake.NewClientset(node("n1", "4", "16Gi", nil))
			ex := newExecutor(t, s, "c1", kube, func(c *executor.Config) { c.Keep = keep })
			step(t, ex)
			ids := s.submit(`{"count": 2, "requests": {"cpu": "1"}}`)
			s.cycle()
			step(t, ex)
			for _, id := range ids {
				setPhase(t, kube, executor.PodName(id, 1), corev1.PodSucceeded, 0)
			}
			step(t, ex) // reported; the service took it: retired
			pods, err := kube.CoreV1().Pods("default").List(context.Background(), metav1.ListOptions{})
			require.NoError(t, err)
			require.Len(t, pods.Items, keep)
			require.Equal(t, 2, ex.Finished(api.PhaseSucceeded))
		})
	}
}

func TestARestartedExecutorAdoptsItsPodsAndReportsThem(t *testing.T) {
	s := newService(t)
	kube := fake.NewClientset(node("n1", "4", "16Gi", nil),
		// Another executor's pod and a pod of no executor are not adopted.
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "other", Namespace: "default", Labels: map[string]string{executor.LabelCluster: "c2"},
			Annotations: map[string]string{executor.AnnotationJob: "X", executor.AnnotationAttempt: "1"}}},
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"}})
	ex := newExecutor(t, s, "c1", kube)
	id, name := leased(t, s, ex, `{"requests": {"cpu": "1"}}`)
	setPhase(t, kube, name, corev1.PodRunning, 0)
	// The executor restarts: a new one, holding nothing, over the same cluster.
	ex = newExecutor(t, s, "c1", kube)
	step(t, ex)
	require.Equal(t, []string{id + "/1"}, ex.Held())
	require.Equal(t, events.RunningState, s.state(id))
	// Its leases are renewed: past the lease timeout the job still runs.
	for range 8 {
		s.clk.Advance(5 * time.Second)
		step(t, ex)
		s.cycle()
	}
	require.Equal(t, events.RunningState, s.state(id))
	setPhase(t, kube, name, corev1.PodSucceeded, 0)
	step(t, ex)
	require.Equal(t, events.SucceededState, s.state(id))
}

func TestNodeResourcesAreAllocatableMinusTheRequestsOfPodsFlotillaDoesNotHold(t *testing.T) {
	pod := func(name, nodeName string, phase corev1.PodPhase, cpu string, lbls map[string]string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: lbls},
			Spec: corev1.PodSpec{NodeName: nodeName, Containers: []corev1.Container{{Name: "c",
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}}}},
				InitContainers: []corev1.Container{{Name: "init",
					Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")}}}}},
			Status: corev1.PodStatus{Phase: phase}}
	}
	s := newService(t)
	kube := fake.NewClientset(node("n1", "4", "16Gi", map[string]string{"zone": "a"}), node("n2", "2", "8Gi", nil),
		pod("web", "n1", corev1.PodRunning, "500m", nil),    // subtracted: cpu, and memory through its init container
		pod("done", "n1", corev1.PodSucceeded, "1", nil),    // ended: not subtracted
		pod("hog", "n2", corev1.PodPending, "3", nil),       // more than the node: zero, omitted
		pod("elsewhere", "n9", corev1.PodRunning, "1", nil), // not a node of the cluster
		pod("unbound", "", corev1.PodPending, "1", nil),
		// The cluster's label without the lease's annotations: not a lease
		// the executor holds, so subtracted.
		pod("stray", "n1", corev1.PodRunning, "1", map[string]string{executor.LabelCluster: "c1"})) // not bound
	ex := newExecutor(t, s, "c1", kube)
	step(t, ex)
	id, name := leased(t, s, ex, `{"requests": {"cpu": "1"}, "nodeSelector": {"zone": "a"}}`)
	setPhase(t, kube, name, corev1.PodRunning, 0) // held: the service counts it itself
	require.NoError(t, kube.CoreV1().Nodes().Delete(context.Background(), "n2", metav1.DeleteOptions{}))
	_, err := kube.CoreV1().Nodes().Create(context.Background(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n2"},
		Spec:   corev1.NodeSpec{Unschedulable: true, Taints: []corev1.Taint{{Key: "gpu", Value: "yes", Effect: corev1.TaintEffectNoSchedule}}},
		Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8")}}}, metav1.CreateOptions{})
	require.NoError(t, err)

	// A recording reporter shows what the executor sends.
	rec := &recorder{next: &httpapi.Local{Server: s.srv}}
	ex = newExecutor(t, s, "c1", kube, func(c *executor.Config) { c.Service = rec })
	step(t, ex)
	require.Equal(t, events.RunningState, s.state(id))
	nodes := rec.last.Nodes
	require.Len(t, nodes, 2)
	require.Equal(t, "n1", nodes[0].Name)
	require.Equal(t, map[string]string{"cpu": "2500m", "memory": "14Gi"}, nodes[0].Resources)
	require.Equal(t, map[string]string{"zone": "a"}, nodes[0].Labels)
	require.False(t, nodes[0].Unschedulable)
	require.Equal(t, "n2", nodes[1].Name)
	require.Equal(t, map[string]string{"cpu": "5"}, nodes[1].Resources)
	require.True(t, nodes[1].Unschedulable)
	require.Equal(t, "gpu", nodes[1].Taints[0].Key)
	require.Equal(t, "NoSchedule", nodes[1].Taints[0].Effect)
	// Unchanged nodes are not sent again.
	step(t, ex)
	require.Nil(t, rec.last.Nodes)
}

// The service counts a lease at the job's requests; what the pod requests
// beyond them (the template's other containers, sidecars, overhead) is
// taken from its node's resources, so the node is not overcommitted.
func TestNodeResourcesLoseWhatALeasesPodRequestsBeyondTheLease(t *testing.T) {
	s := newService(t)
	kube := fake.NewClientset(node("n1", "4", "16Gi", nil))
	tmpl := executor.DefaultTemplate()
	tmpl.Spec.Containers = append(tmpl.Spec.Containers, corev1.Container{Name: "logs", Image: "busybox",
		Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m")}}})
	rec := &recorder{next: &httpapi.Local{Server: s.srv}}
	ex := newExecutor(t, s, "c1", kube, func(c *executor.Config) { c.Service, c.Template = rec, tmpl })
	_, name := leased(t, s, ex, `{"requests": {"cpu": "1", "memory": "1Gi"}}`)
	getPod(t, kube, name)
	step(t, ex)
	require.NotNil(t, rec.last.Nodes, "the node's resources did not change when the lease's pod came")
	require.Equal(t, map[string]string{"cpu": "3500m", "memory": "16Gi"}, rec.last.Nodes[0].Resources)
}

// A pod whose in-place resize down the kubelet has not made yet still
// holds its old request, as kube-scheduler counts it (its status).
func TestNodeResourcesCountAPodResizedDownAtItsStatusRequest(t *testing.T) {
	n := node("n1", "4", "16Gi", nil)
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{Name: "c",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{{Name: "c",
			AllocatedResources: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("3")},
			Resources:          &corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("3")}}}}}}
	got := executor.NodeOf(n, []*corev1.Pod{p}, []string{"cpu"})
	require.Equal(t, map[string]string{"cpu": "1"}, got.Resources)
}

func TestANodeSelectorSplitsOneApiserverBetweenClusters(t *testing.T) {
	s := newService(t)
	kube := fake.NewClientset(node("a1", "4", "16Gi", map[string]string{"flotilla.io/cluster": "a"}),
		node("b1", "4", "16Gi", map[string]string{"flotilla.io/cluster": "b"}))
	var exs []*executor.Executor
	for _, c := range []string{"a", "b"} {
		sel := labels.SelectorFromSet(labels.Set{"flotilla.io/cluster": c})
		exs = append(exs, newExecutor(t, s, c, kube, func(cfg *executor.Config) { cfg.NodeSelector = sel }))
	}
	for _, ex := range exs {
		step(t, ex)
	}
	ids := s.submit(`{"count": 2, "requests": {"cpu": "3"}}`)
	s.cycle()
	for _, ex := range exs {
		step(t, ex)
	}
	nodes := map[string]string{}
	for _, id := range ids {
		p := getPod(t, kube, executor.PodName(id, 1))
		nodes[p.Spec.NodeName] = p.Labels[executor.LabelCluster]
	}
	require.Equal(t, map[string]string{"a1": "a", "b1": "b"}, nodes)
	require.Len(t, exs[0].Held(), 1)
	require.Len(t, exs[1].Held(), 1)
}

// recorder passes reports on and keeps the last.
type recorder struct {
	next fexec.Reporter
	last api.Report
}

func (r *recorder) Report(ctx context.Context, cluster string, rep api.Report) (api.ReportReply, error) {
	r.last = rep
	return r.next.Report(ctx, cluster, rep)
}

func TestNewRefusesABadConfigNamingEveryField(t *testing.T) {
	_, err := executor.New(executor.Config{Cluster: "bad/name", Namespace: "Not_A_Namespace", Keep: -1, Renew: -time.Second, LeaseTimeout: -time.Second,
		Template: &corev1.Pod{}})
	require.Error(t, err)
	var fields []string
	for _, p := range flotilla.Problems(err) {
		var fe *flotilla.FieldError
		require.ErrorAs(t, p, &fe)
		fields = append(fields, fe.Field)
	}
	require.ElementsMatch(t, []string{"cluster", "kube", "service", "namespace", "keep", "renew", "leaseTimeout", "template.spec.containers"}, fields)
}

// switching reports to whichever service it points at.
type switching struct{ to fexec.Reporter }

func (s *switching) Report(ctx context.Context, cluster string, rep api.Report) (api.ReportReply, error) {
	return s.to.Report(ctx, cluster, rep)
}

func TestLeasesAServiceDoesNotKnowAreDroppedAndTheirPodsDeleted(t *testing.T) {
	s := newService(t)
	kube := fake.NewClientset(node("n1", "4", "16Gi", nil))
	sw := &switching{to: &httpapi.Local{Server: s.srv}}
	ex := newExecutor(t, s, "c1", kube, func(c *executor.Config) { c.Service = sw })
	_, name := leased(t, s, ex, `{"requests": {"cpu": "1"}}`)
	setPhase(t, kube, name, corev1.PodRunning, 0)
	step(t, ex)
	// The service restarts without a database: it knows neither the
	// cluster nor the job.
	fresh := newService(t)
	sw.to = &httpapi.Local{Server: fresh.srv}
	step(t, ex)
	require.Empty(t, ex.Held())
	_, err := kube.CoreV1().Pods("default").Get(context.Background(), name, metav1.GetOptions{})
	require.True(t, apierrors.IsNotFound(err), "the pod of a lease nobody knows is deleted: %v", err)
	// The nodes reached the new service: it leases there.
	id := fresh.submit(`{"requests": {"cpu": "1"}}`)[0]
	fresh.cycle()
	step(t, ex)
	getPod(t, kube, executor.PodName(id, 1))
}

// A running pod whose lease the service does not know is deleted with its
// own grace period: grace 0 would remove the object at once while its
// containers still run on the node (a force delete).
func TestADroppedLeasesRunningPodIsDeletedWithItsGracePeriod(t *testing.T) {
	s := newService(t)
	kube := fake.NewClientset(node("n1", "4", "16Gi", nil))
	sw := &switching{to: &httpapi.Local{Server: s.srv}}
	ex := newExecutor(t, s, "c1", kube, func(c *executor.Config) { c.Service = sw })
	_, name := leased(t, s, ex, `{"requests": {"cpu": "1"}}`)
	setPhase(t, kube, name, corev1.PodRunning, 0)
	step(t, ex)
	sw.to = &httpapi.Local{Server: newService(t).srv}
	step(t, ex)
	var deletes []metav1.DeleteOptions
	for _, a := range kube.Actions() {
		if d, ok := a.(k8stesting.DeleteActionImpl); ok && d.GetResource().Resource == "pods" && d.GetName() == name {
			deletes = append(deletes, d.DeleteOptions)
		}
	}
	require.Len(t, deletes, 1)
	if g := deletes[0].GracePeriodSeconds; g != nil {
		t.Fatalf("deleted with grace %ds, want the pod's own", *g)
	}
}

// killing is a reporter that adds a kill order to the service's reply.
type killing struct {
	to   fexec.Reporter
	kill api.Kill
}

func (k *killing) Report(ctx context.Context, cluster string, rep api.Report) (api.ReportReply, error) {
	reply, err := k.to.Report(ctx, cluster, rep)
	if err == nil && k.kill.Job != "" {
		reply.Kill = append(reply.Kill, k.kill)
		k.kill = api.Kill{}
	}
	return reply, err
}

// A kill order whose grace period the executor cannot read deletes the pod
// with the pod's own grace period (the lease's), never at once.
func TestAKillWithAMalformedGracePeriodKeepsThePodsOwn(t *testing.T) {
	s := newService(t)
	kube := fake.NewClientset(node("n1", "4", "16Gi", nil))
	k := &killing{to: &httpapi.Local{Server: s.srv}}
	ex := newExecutor(t, s, "c1", kube, func(c *executor.Config) { c.Service = k })
	id, name := leased(t, s, ex, `{"requests": {"cpu": "1"}, "terminationGracePeriod": "20s"}`)
	setPhase(t, kube, name, corev1.PodRunning, 0)
	k.kill = api.Kill{Job: id, Attempt: 1, Reason: "test", GracePeriod: "soon"}
	step(t, ex)
	var opts []metav1.DeleteOptions
	for _, a := range kube.Actions() {
		if d, ok := a.(k8stesting.DeleteActionImpl); ok && d.GetResource().Resource == "pods" && d.GetName() == name {
			opts = append(opts, d.DeleteOptions)
		}
	}
	require.Len(t, opts, 1)
	if g := opts[0].GracePeriodSeconds; g != nil {
		t.Fatalf("deleted with grace %ds, want the pod's own", *g)
	}
}

// miniAPI is an apiserver that holds pods in memory and one node, n1 (4
// cpu), answers the requests throttle selects 429 with Retry-After: 30 (an
// overloaded apiserver), and counts the requests of each step by method
// and path. A request made twice within one step (client-go's retry)
// cancels the step's context, so that code that retries fails the test at
// once instead of sleeping.
type miniAPI struct {
	t        *testing.T
	kube     kubernetes.Interface
	mu       sync.Mutex
	pods     map[string]*corev1.Pod
	throttle func(req string) bool
	got      map[string]int
	cancel   context.CancelFunc
}

func newMiniAPI(t *testing.T, throttle func(req string) bool) *miniAPI {
	t.Helper()
	m := &miniAPI{t: t, pods: map[string]*corev1.Pod{}, throttle: throttle, got: map[string]int{}}
	write := func(w http.ResponseWriter, code int, obj any) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		_ = json.NewEncoder(w).Encode(obj)
	}
	status := func(err *apierrors.StatusError) metav1.Status {
		st := err.Status()
		st.APIVersion, st.Kind = "v1", "Status"
		return st
	}
	const podsPath = "/api/v1/namespaces/default/pods"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		req := r.Method + " " + r.URL.Path
		m.mu.Lock()
		defer m.mu.Unlock()
		m.got[req]++
		if m.got[req] > 1 && r.Method != http.MethodGet && m.cancel != nil {
			m.cancel()
		}
		if m.throttle(req) {
			w.Header().Set("Retry-After", "30")
			write(w, http.StatusTooManyRequests, status(apierrors.NewTooManyRequests("slow down", 30)))
			return
		}
		name := strings.TrimPrefix(r.URL.Path, podsPath+"/")
		switch {
		case req == "GET /api/v1/nodes":
			n := node("n1", "4", "16Gi", nil)
			write(w, http.StatusOK, corev1.NodeList{TypeMeta: metav1.TypeMeta{Kind: "NodeList", APIVersion: "v1"}, Items: []corev1.Node{*n}})
		case req == "GET /api/v1/pods":
			list := corev1.PodList{TypeMeta: metav1.TypeMeta{Kind: "PodList", APIVersion: "v1"}}
			for _, p := range m.pods {
				list.Items = append(list.Items, *p)
			}
			write(w, http.StatusOK, list)
		case req == "POST "+podsPath:
			// JSON, or protobuf from the typed client.
			body, err := io.ReadAll(r.Body)
			obj, _, derr := scheme.Codecs.UniversalDeserializer().Decode(body, nil, nil)
			p, ok := obj.(*corev1.Pod)
			if err != nil || derr != nil || !ok {
				write(w, http.StatusBadRequest, status(apierrors.NewBadRequest(fmt.Sprint(err, derr))))
				return
			}
			p.TypeMeta = metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"}
			m.pods[p.Name] = p
			write(w, http.StatusCreated, p)
		case m.pods[name] == nil:
			write(w, http.StatusNotFound, status(apierrors.NewNotFound(corev1.Resource("pods"), name)))
		case r.Method == http.MethodGet:
			write(w, http.StatusOK, m.pods[name])
		case r.Method == http.MethodDelete:
			delete(m.pods, name)
			write(w, http.StatusOK, metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusSuccess})
		default:
			write(w, http.StatusMethodNotAllowed, status(apierrors.NewMethodNotSupported(corev1.Resource("pods"), r.Method)))
		}
	}))
	t.Cleanup(srv.Close)
	kube, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL, QPS: -1})
	require.NoError(t, err)
	m.kube = kube
	return m
}

// step makes one Step and returns the requests it made.
func (m *miniAPI) step(ex *executor.Executor) map[string]int {
	m.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	m.mu.Lock()
	m.got, m.cancel = map[string]int{}, cancel
	m.mu.Unlock()
	_, err := ex.Step(ctx)
	require.NoError(m.t, err)
	m.mu.Lock()
	defer m.mu.Unlock()
	got := m.got
	m.got, m.cancel = map[string]int{}, nil
	return got
}

func (m *miniAPI) setPhase(name string, phase corev1.PodPhase) {
	m.mu.Lock()
	defer m.mu.Unlock()
	require.NotNil(m.t, m.pods[name], "pod %s in %v", name, m.pods)
	m.pods[name].Status.Phase = phase
}

// Every write of a step (a lease's pod created, a killed or retired pod
// deleted) is one request: an answer asking to retry after 30 s fails the
// call at once, and the next step tries again.
func TestEveryWriteOfAStepIsOneRequestWhateverItsRetryAfter(t *testing.T) {
	const pods = "/api/v1/namespaces/default/pods"
	for _, tc := range []struct {
		name     string
		throttle string
		// then runs the steps after the lease's; it returns the requests
		// of the step that must write.
		then func(t *testing.T, m *miniAPI, s *service, ex *executor.Executor, id, pod string) map[string]int
		want string
	}{
		{"a lease's pod created", "POST " + pods, func(t *testing.T, m *miniAPI, s *service, ex *executor.Executor, id, pod string) map[string]int {
			require.Equal(t, []string{id + "/1"}, ex.Held(), "the lease is held, its pod to be created again")
			return m.step(ex)
		}, "POST " + pods},
		{"a killed pod deleted", "DELETE " + pods + "/", func(t *testing.T, m *miniAPI, s *service, ex *executor.Executor, id, pod string) map[string]int {
			m.setPhase(pod, corev1.PodRunning)
			m.step(ex)
			_, err := s.srv.Cancel(s.ctx, id)
			require.NoError(t, err)
			got := m.step(ex)
			require.Equal(t, events.RunningState, s.state(id), "its pod was not deleted")
			return got
		}, "DELETE " + pods + "/"},
		{"a retired pod deleted", "DELETE " + pods + "/", func(t *testing.T, m *miniAPI, s *service, ex *executor.Executor, id, pod string) map[string]int {
			m.setPhase(pod, corev1.PodSucceeded)
			got := m.step(ex)
			require.Equal(t, events.SucceededState, s.state(id))
			return got
		}, "DELETE " + pods + "/"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := newMiniAPI(t, func(req string) bool { return strings.HasPrefix(req, tc.throttle) })
			s := newService(t)
			ex := newExecutor(t, s, "c1", m.kube)
			m.step(ex)
			id := s.submit(`{"requests": {"cpu": "1"}}`)[0]
			s.cycle()
			pod := executor.PodName(id, 1)
			got := m.step(ex)
			require.Equal(t, 1, got["POST "+pods], "requests %v", got)
			got = tc.then(t, m, s, ex, id, pod)
			want := tc.want
			if strings.HasSuffix(want, "/") {
				want += pod
			}
			require.Equal(t, 1, got[want], "requests %v: want %s once", got, want)
		})
	}
}
