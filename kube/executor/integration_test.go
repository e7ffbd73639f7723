package executor_test

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/api"
	"github.com/flotilla-sched/flotilla/backend/memory"
	"github.com/flotilla-sched/flotilla/client"
	"github.com/flotilla-sched/flotilla/events"
	"github.com/flotilla-sched/flotilla/httpapi"
	"github.com/flotilla-sched/flotilla/kube/executor"
	"github.com/flotilla-sched/flotilla/kube/internal/kubetest"
	"github.com/flotilla-sched/flotilla/scheduler"
	"github.com/flotilla-sched/flotilla/server"
)

// real is one subtest's share of the real apiserver: its namespace, and
// nodes labelled with its Flotilla cluster's name.
type real struct {
	t    *testing.T
	kube kubernetes.Interface
	ns   string
}

func newReal(t *testing.T, kube kubernetes.Interface, ns string) *real {
	t.Helper()
	_, err := kube.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	require.NoError(t, err)
	return &real{t: t, kube: kube, ns: ns}
}

// addNode creates a Node of cluster with allocatable cpu and memory and a
// Ready condition, and without the not-ready taint that admission gives a
// new node (the node lifecycle controller's part: none runs).
func (r *real) addNode(cluster, name, cpu string, extra map[string]string) {
	r.t.Helper()
	lbls := map[string]string{"flotilla.io/cluster": cluster}
	for k, v := range extra {
		lbls[k] = v
	}
	n, err := r.kube.CoreV1().Nodes().Create(context.Background(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: lbls}}, metav1.CreateOptions{})
	require.NoError(r.t, err)
	n.Spec.Taints = nil
	n, err = r.kube.CoreV1().Nodes().Update(context.Background(), n, metav1.UpdateOptions{})
	require.NoError(r.t, err)
	n.Status = corev1.NodeStatus{
		Capacity:    corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse("16Gi"), corev1.ResourcePods: resource.MustParse("110")},
		Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse("16Gi"), corev1.ResourcePods: resource.MustParse("110")},
		Conditions:  []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
	}
	_, err = r.kube.CoreV1().Nodes().UpdateStatus(context.Background(), n, metav1.UpdateOptions{})
	require.NoError(r.t, err)
}

// executor is cluster's executor over the real apiserver (reading it
// directly at each Step), reporting to svc over HTTP.
func (r *real) executor(cluster string, svc *client.Client) *executor.Executor {
	r.t.Helper()
	ex, err := executor.New(executor.Config{Cluster: cluster, Kube: r.kube, Service: svc, Namespace: r.ns,
		NodeSelector: labels.SelectorFromSet(labels.Set{"flotilla.io/cluster": cluster})})
	require.NoError(r.t, err)
	return ex
}

func (r *real) pod(name string) *corev1.Pod {
	r.t.Helper()
	p, err := r.kube.CoreV1().Pods(r.ns).Get(context.Background(), name, metav1.GetOptions{})
	require.NoError(r.t, err)
	return p
}

// setPhase is the missing kubelet: it writes a pod's phase, and its
// container's exit code when it ended.
func (r *real) setPhase(name string, phase corev1.PodPhase, exit int32) {
	r.t.Helper()
	p := r.pod(name)
	p.Status.Phase = phase
	c := p.Spec.Containers[0]
	switch phase {
	case corev1.PodRunning:
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: c.Name, Image: c.Image, Ready: true,
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.Now()}}}}
	case corev1.PodSucceeded, corev1.PodFailed:
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: c.Name, Image: c.Image,
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: exit, Reason: "Completed"}}}}
	}
	_, err := r.kube.CoreV1().Pods(r.ns).UpdateStatus(context.Background(), p, metav1.UpdateOptions{})
	require.NoError(r.t, err)
}

// httpService is an in-process service with a fake clock behind a real
// HTTP listener, and a client of it.
func httpService(t *testing.T) (*service, *client.Client) {
	t.Helper()
	s := newService(t)
	ts := httptest.NewServer(httpapi.New(s.srv, httpapi.Options{}))
	t.Cleanup(ts.Close)
	c, err := client.New(ts.URL, "", nil)
	require.NoError(t, err)
	return s, c
}

// TestExecutorOnARealApiserver runs the executor against a real etcd and
// kube-apiserver (one for all subtests; each has its own namespace, and
// nodes labelled with its own cluster names), leasing from a service over
// HTTP. No kubelet runs: the tests write pod phases.
func TestExecutorOnARealApiserver(t *testing.T) {
	kube := kubetest.New(t).Clientset(t)
	ctx := context.Background()

	t.Run("jobs become pods on their leased nodes and end as their pods do", func(t *testing.T) {
		r := newReal(t, kube, "run")
		r.addNode("run", "run-a", "4", map[string]string{"zone": "a"})
		r.addNode("run", "run-b", "4", map[string]string{"zone": "b"})
		s, svc := httpService(t)
		ex := r.executor("run", svc)
		step(t, ex)
		ids := s.submit(`{"requests": {"cpu": "3"}, "nodeSelector": {"zone": "b"}, "terminationGracePeriod": "7s"},
			{"requests": {"cpu": "3"}, "exitCode": 2}, {"requests": {"cpu": "1"}}`)
		s.cycle()
		step(t, ex)
		for _, id := range ids {
			st, err := s.srv.Status(ctx, id)
			require.NoError(t, err)
			require.Equal(t, events.LeasedState, st[0].State)
			p := r.pod(executor.PodName(id, 1))
			require.Equal(t, st[0].Node, p.Spec.NodeName, "the pod is pinned to the leased node")
			r.setPhase(p.Name, corev1.PodRunning, 0)
		}
		require.Equal(t, "run-b", r.pod(executor.PodName(ids[0], 1)).Spec.NodeName)
		require.Equal(t, int64(7), *r.pod(executor.PodName(ids[0], 1)).Spec.TerminationGracePeriodSeconds)
		step(t, ex)
		for _, id := range ids {
			require.Equal(t, events.RunningState, s.state(id))
		}
		r.setPhase(executor.PodName(ids[0], 1), corev1.PodSucceeded, 0)
		r.setPhase(executor.PodName(ids[1], 1), corev1.PodFailed, 2)
		step(t, ex)
		require.Equal(t, events.SucceededState, s.state(ids[0]))
		require.Equal(t, events.FailedState, s.state(ids[1]))
		require.Equal(t, events.RunningState, s.state(ids[2]))
		pods, err := kube.CoreV1().Pods(r.ns).List(ctx, metav1.ListOptions{})
		require.NoError(t, err)
		require.Len(t, pods.Items, 1, "the ended pods were deleted once reported")
	})

	t.Run("a cancel deletes the pod with its grace period", func(t *testing.T) {
		r := newReal(t, kube, "cancel")
		r.addNode("cancel", "cancel-a", "4", nil)
		s, svc := httpService(t)
		ex := r.executor("cancel", svc)
		step(t, ex)
		id := s.submit(`{"requests": {"cpu": "1"}, "terminationGracePeriod": "25s"}`)[0]
		s.cycle()
		step(t, ex)
		name := executor.PodName(id, 1)
		r.setPhase(name, corev1.PodRunning, 0)
		step(t, ex)
		_, err := s.srv.Cancel(ctx, id)
		require.NoError(t, err)
		step(t, ex)
		// The apiserver deletes a bound running pod gracefully: it waits
		// for the kubelet, with the grace period the executor asked.
		p := r.pod(name)
		require.NotNil(t, p.DeletionTimestamp)
		require.Equal(t, int64(25), *p.DeletionGracePeriodSeconds)
		step(t, ex)
		require.Equal(t, events.RunningState, s.state(id), "not cancelled while the pod is terminating")
		// The kubelet's part: the containers stopped, the pod goes.
		zero := int64(0)
		require.NoError(t, kube.CoreV1().Pods(r.ns).Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: &zero}))
		step(t, ex)
		require.Equal(t, events.CancelledState, s.state(id))
	})

	t.Run("two clusters split one apiserver by a node label and lease from one service", func(t *testing.T) {
		r := newReal(t, kube, "two")
		r.addNode("east", "east-1", "2", nil)
		r.addNode("west", "west-1", "2", nil)
		s, svc := httpService(t)
		exs := []*executor.Executor{r.executor("east", svc), r.executor("west", svc)}
		for _, ex := range exs {
			step(t, ex)
		}
		ids := s.submit(`{"count": 4, "requests": {"cpu": "1"}}`)
		s.cycle()
		for _, ex := range exs {
			step(t, ex)
		}
		on := map[string]int{}
		for _, id := range ids {
			st, err := s.srv.Status(ctx, id)
			require.NoError(t, err)
			p := r.pod(executor.PodName(id, 1))
			require.Equal(t, st[0].Cluster, p.Labels[executor.LabelCluster])
			require.Equal(t, st[0].Cluster+"-1", p.Spec.NodeName)
			on[p.Spec.NodeName]++
			r.setPhase(p.Name, corev1.PodSucceeded, 0)
		}
		require.Equal(t, map[string]int{"east-1": 2, "west-1": 2}, on)
		for _, ex := range exs {
			step(t, ex)
		}
		for _, id := range ids {
			require.Equal(t, events.SucceededState, s.state(id))
		}
	})

	t.Run("a restarted executor keeps its pods", func(t *testing.T) {
		r := newReal(t, kube, "restart")
		r.addNode("restart", "restart-1", "4", nil)
		s, svc := httpService(t)
		ex := r.executor("restart", svc)
		step(t, ex)
		id := s.submit(`{"requests": {"cpu": "1"}}`)[0]
		s.cycle()
		step(t, ex)
		r.setPhase(executor.PodName(id, 1), corev1.PodRunning, 0)
		ex = r.executor("restart", svc) // the restart: a new executor, holding nothing
		for range 10 {                  // 50 s: past the 30 s lease timeout
			step(t, ex)
			s.clk.Advance(5 * time.Second)
			s.cycle()
		}
		require.Equal(t, []string{id + "/1"}, ex.Held())
		require.Equal(t, events.RunningState, s.state(id))
		r.setPhase(executor.PodName(id, 1), corev1.PodSucceeded, 0)
		step(t, ex)
		require.Equal(t, events.SucceededState, s.state(id))
	})

	t.Run("informers and the real clock: a job runs to success", func(t *testing.T) {
		r := newReal(t, kube, "live")
		r.addNode("live", "live-1", "4", nil)
		schema := flotilla.MustResourceSchema("cpu", "memory", api.DefaultGPUResource)
		srv, err := server.New(ctx, server.Config{Scheduler: scheduler.DefaultConfig(schema), Backend: memory.New(schema),
			Clock: server.SystemClock{}, NewID: server.NewULIDs(server.SystemClock{}, nil)})
		require.NoError(t, err)
		require.NoError(t, srv.CreateQueue(ctx, flotilla.Queue{Name: "A"}))
		ts := httptest.NewServer(httpapi.New(srv, httpapi.Options{}))
		defer ts.Close()
		svc, err := client.New(ts.URL, "", nil)
		require.NoError(t, err)
		runCtx, cancel := context.WithCancel(ctx)
		defer cancel()
		factory := informers.NewSharedInformerFactory(kube, 0)
		ex, err := executor.New(executor.Config{Cluster: "live", Kube: kube, Service: svc, Namespace: r.ns, Renew: 100 * time.Millisecond,
			NodeSelector: labels.SelectorFromSet(labels.Set{"flotilla.io/cluster": "live"}), Lister: executor.NewInformerLister(factory)})
		require.NoError(t, err)
		factory.Start(runCtx.Done())
		defer factory.Shutdown()
		factory.WaitForCacheSync(runCtx.Done())
		done := make(chan struct{})
		go func() { _ = srv.Run(runCtx, 100*time.Millisecond); done <- struct{}{} }()
		go func() { _ = ex.Run(runCtx, nil); done <- struct{}{} }()
		defer func() { cancel(); <-done; <-done }()
		ids, err := srv.SubmitJSON(ctx, []byte(`{"queue": "A", "jobSet": "s", "jobs": [{"requests": {"cpu": "1"}}]}`))
		require.NoError(t, err)
		name := executor.PodName(ids[0], 1)
		state := func() events.State {
			st, err := srv.Status(ctx, ids[0])
			require.NoError(t, err)
			return st[0].State
		}
		require.Eventually(t, func() bool {
			_, err := kube.CoreV1().Pods(r.ns).Get(ctx, name, metav1.GetOptions{})
			return err == nil
		}, 30*time.Second, 50*time.Millisecond, "the pod is created")
		r.setPhase(name, corev1.PodRunning, 0)
		require.Eventually(t, func() bool { return state() == events.RunningState }, 30*time.Second, 50*time.Millisecond)
		r.setPhase(name, corev1.PodSucceeded, 0)
		require.Eventually(t, func() bool { return state() == events.SucceededState }, 30*time.Second, 50*time.Millisecond)
	})
}
