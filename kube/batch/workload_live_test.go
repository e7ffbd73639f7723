package batch

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/kube/kubeconv"
)

// dynamic returns a dynamic client on the live cluster.
func (l *live) dynamic() dynamic.Interface {
	l.t.Helper()
	d, err := dynamic.NewForConfig(l.c.Config)
	if err != nil {
		l.t.Fatal(err)
	}
	return d
}

// installCRDs creates the CRDs of kube/testdata/crds named by file and
// waits until each is established.
func (l *live) installCRDs(files ...string) {
	l.t.Helper()
	d := l.dynamic()
	crds := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join("..", "testdata", "crds", f))
		if err != nil {
			l.t.Fatal(err)
		}
		u := l.yamlObject(string(b))
		if _, err := d.Resource(crds).Create(l.ctx, u, metav1.CreateOptions{}); err != nil {
			l.t.Fatalf("%s: %v", f, err)
		}
		err = wait.PollUntilContextTimeout(l.ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			got, err := d.Resource(crds).Get(ctx, u.GetName(), metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			conds, _, _ := unstructured.NestedSlice(got.Object, "status", "conditions")
			for _, c := range conds {
				m, _ := c.(map[string]any)
				if m["type"] == "Established" && m["status"] == "True" {
					return true, nil
				}
			}
			return false, nil
		})
		if err != nil {
			l.t.Fatalf("CRD %s not established: %v", u.GetName(), err)
		}
	}
}

func (l *live) yamlObject(y string) *unstructured.Unstructured {
	l.t.Helper()
	j, err := yaml.YAMLToJSON([]byte(y))
	if err != nil {
		l.t.Fatal(err)
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(j); err != nil {
		l.t.Fatal(err)
	}
	return u
}

// create creates a custom object from YAML (its resource named by gvr).
func (l *live) create(gvr schema.GroupVersionResource, y string) *unstructured.Unstructured {
	l.t.Helper()
	u := l.yamlObject(y)
	ri := l.dynamic().Resource(gvr)
	var got *unstructured.Unstructured
	var err error
	if u.GetNamespace() != "" {
		got, err = ri.Namespace(u.GetNamespace()).Create(l.ctx, u, metav1.CreateOptions{})
	} else {
		got, err = ri.Create(l.ctx, u, metav1.CreateOptions{})
	}
	if err != nil {
		l.t.Fatal(err)
	}
	return got
}

// jobOf is a Job whose pods Flotilla schedules: one busybox container
// requesting cpu.
func jobOf(name string, parallelism, completions int32, indexed bool, cpu string) *batchv1.Job {
	j := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: batchv1.JobSpec{
			Parallelism: &parallelism, Completions: &completions,
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				SchedulerName: DefaultSchedulerName,
				RestartPolicy: corev1.RestartPolicyNever,
				Containers: []corev1.Container{{Name: "c", Image: "busybox", Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}}}},
			}},
		},
	}
	if indexed {
		mode := batchv1.IndexedCompletion
		j.Spec.CompletionMode = &mode
	}
	return j
}

// podsOfJob lists the pods the Job controller created for the Job.
func (l *live) podsOfJob(name string) []corev1.Pod {
	l.t.Helper()
	pods, err := l.cs.CoreV1().Pods("default").List(l.ctx, metav1.ListOptions{LabelSelector: batchv1.JobNameLabel + "=" + name})
	if err != nil {
		l.t.Fatal(err)
	}
	return pods.Items
}

// cycleCollect runs cycles until cond holds (at most 60 s), keeping every
// job the cycles scheduled by ID; check runs after every cycle and fails
// the test at once when it returns an error.
func (l *live) cycleCollect(s *Scheduler, what string, cond func() bool, check func() error) map[string]*flotilla.Job {
	l.t.Helper()
	jobs := map[string]*flotilla.Job{}
	err := wait.PollUntilContextTimeout(l.ctx, 50*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		rep, err := s.Cycle(ctx)
		if err != nil {
			return false, err
		}
		for _, a := range rep.Result.Scheduled {
			jobs[a.Job.ID] = a.Job
		}
		if check != nil {
			if err := check(); err != nil {
				return false, err
			}
		}
		return cond(), nil
	})
	if err != nil {
		pods, _ := l.cs.CoreV1().Pods("default").List(l.ctx, metav1.ListOptions{})
		for _, p := range pods.Items {
			c, _ := scheduledCondition(&p)
			l.t.Logf("pod %s node %q condition %s: %s", p.Name, p.Spec.NodeName, c.Reason, c.Message)
		}
		l.t.Fatalf("waiting for %s: %v\ncontroller-manager log:\n%s", what, err, l.c.Log("controller-manager.log"))
	}
	return jobs
}

// A real Job controller creates the 4 pods of an Indexed Job with
// parallelism = completions; they are one gang: with room for 3 none is
// bound (each says why), and once a node adds the 4th's room all 4 are
// bound, in one cycle.
func TestLiveIndexedJobBoundAllOrNone(t *testing.T) {
	l := newLive(t)
	l.c.Controllers(t, "job")
	l.node("n1", "3")
	s := l.scheduler(Config{Dynamic: l.dynamic()})
	if _, err := l.cs.BatchV1().Jobs("default").Create(l.ctx, jobOf("train", 4, 4, true, "1"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	noneBound := func() error {
		for _, p := range l.podsOfJob("train") {
			if p.Spec.NodeName != "" {
				return fmt.Errorf("pod %s bound to %s with room for 3 of 4", p.Name, p.Spec.NodeName)
			}
		}
		return nil
	}
	l.cycleCollect(s, "4 pods, each unschedulable for the gang", func() bool {
		pods := l.podsOfJob("train")
		if len(pods) != 4 {
			return false
		}
		for _, p := range pods {
			c, ok := scheduledCondition(&p)
			if !ok || c.Reason != ReasonUnschedulable || !strings.Contains(c.Message, `gang "default/Job/train@`) {
				return false
			}
		}
		return true
	}, noneBound)
	l.node("n2", "1")
	jobs := l.cycleCollect(s, "the gang bound whole", func() bool {
		n := 0
		for _, p := range l.podsOfJob("train") {
			if p.Spec.NodeName != "" {
				n++
			}
		}
		return n == 4
	}, nil)
	if len(jobs) != 4 {
		t.Fatalf("scheduled %d jobs, want the 4 members", len(jobs))
	}
	for _, j := range jobs {
		if j.Gang.Cardinality != 4 || !strings.HasPrefix(j.Gang.ID, "default/Job/train@") || j.JobSet != "default/Job/train" {
			t.Fatalf("job %+v: want a member of the Job's gang of 4", j)
		}
	}
}

// A Job labelled for Kueue (queue-name, priority-class) has its pods
// queued in that queue at the WorkloadPriorityClass's priority, without
// any Flotilla label.
func TestLiveKueueLabelledJobInItsQueue(t *testing.T) {
	l := newLive(t)
	l.c.Controllers(t, "job")
	l.installCRDs("kueue.x-k8s.io_workloadpriorityclasses.yaml")
	l.create(kubeconv.WorkloadPriorityClasses, `{apiVersion: kueue.x-k8s.io/v1beta1, kind: WorkloadPriorityClass, metadata: {name: high}, value: 1000}`)
	l.node("n1", "4")
	s := l.scheduler(Config{Dynamic: l.dynamic(), Queues: []*flotilla.Queue{{Name: "research", PriorityFactor: 1}}})
	j := jobOf("sweep", 2, 2, false, "1")
	j.Labels = map[string]string{kubeconv.LabelKueueQueue: "research", kubeconv.LabelKueuePriorityClass: "high"}
	if _, err := l.cs.BatchV1().Jobs("default").Create(l.ctx, j, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	jobs := l.cycleCollect(s, "both pods bound", func() bool {
		n := 0
		for _, p := range l.podsOfJob("sweep") {
			if p.Spec.NodeName != "" {
				n++
			}
		}
		return n == 2
	}, nil)
	if len(jobs) != 2 {
		t.Fatalf("scheduled %d jobs, want 2", len(jobs))
	}
	for _, j := range jobs {
		if j.Queue != "research" || j.Priority != math.MaxInt32-1000 || j.JobSet != "default/Job/sweep" || j.Gang.ID != "" {
			t.Fatalf("job %+v: want queue research, priority MaxInt32-1000, set default/Job/sweep, no gang", j)
		}
	}
}

// A JobSet of 2 replicated Jobs × 4 pods is one gang of 8: with room for
// 7 it waits whole, then is bound whole. The JobSet CRD is installed; its
// controller does not run, so the test creates its child Jobs (suspended,
// so no Job controller would act) and their pods, as the controllers would.
func TestLiveJobSetWaitsWholeThenBindsWhole(t *testing.T) {
	l := newLive(t)
	l.installCRDs("jobset.x-k8s.io_jobsets.yaml")
	l.node("n1", "4")
	l.node("n2", "3")
	js := l.create(schema.GroupVersionResource{Group: "jobset.x-k8s.io", Version: "v1alpha2", Resource: "jobsets"}, `
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata: {name: js, namespace: default}
spec:
  replicatedJobs:
  - name: w
    replicas: 2
    template: {spec: {completionMode: Indexed, parallelism: 4, completions: 4}}`)
	yes := true
	var names []string
	for r := range 2 {
		child := jobOf(fmt.Sprintf("js-w-%d", r), 4, 4, true, "1")
		child.Spec.Suspend = &yes
		child.Labels = map[string]string{kubeconv.LabelJobSetReplicatedJob: "w"}
		child.OwnerReferences = []metav1.OwnerReference{{APIVersion: "jobset.x-k8s.io/v1alpha2", Kind: "JobSet", Name: "js", UID: js.GetUID(), Controller: &yes}}
		got, err := l.cs.BatchV1().Jobs("default").Create(l.ctx, child, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for i := range 4 {
			p := testPod(fmt.Sprintf("js-w-%d-%d", r, i), "1", func(p *corev1.Pod) {
				p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: got.Name, UID: got.UID, Controller: &yes}}
			})
			l.pod(p)
			names = append(names, p.Name)
		}
	}
	s := l.scheduler(Config{Dynamic: l.dynamic()})
	bound := func() int {
		n := 0
		for _, name := range names {
			if l.get(name).Spec.NodeName != "" {
				n++
			}
		}
		return n
	}
	l.cycleCollect(s, "the 8 pods unschedulable as one gang", func() bool {
		for _, name := range names {
			c, ok := scheduledCondition(l.get(name))
			if !ok || c.Reason != ReasonUnschedulable || !strings.Contains(c.Message, `gang "default/JobSet/js@`) {
				return false
			}
		}
		return true
	}, func() error {
		if n := bound(); n != 0 {
			return fmt.Errorf("%d pods of the gang bound with room for 7 of 8", n)
		}
		return nil
	})
	l.node("n3", "1")
	jobs := l.cycleCollect(s, "the JobSet bound whole", func() bool { return bound() == 8 }, nil)
	for _, j := range jobs {
		if j.Gang.Cardinality != 8 || j.JobSet != "default/JobSet/js" {
			t.Fatalf("job %+v: want a member of the JobSet's gang of 8", j)
		}
	}
}

// A scheduler that lost its lease midway through binding a gang leaves it
// partly bound (here: one of three members bound through the Binding API,
// as the last leader did before it died); the next leader's first cycle
// binds the rest.
func TestLivePartlyBoundGangFinishedByTheNextLeadersFirstCycle(t *testing.T) {
	l := newLive(t)
	l.node("n1", "4")
	gang := func(p *corev1.Pod) {
		p.Annotations = map[string]string{kubeconv.AnnotationGangID: "g", kubeconv.AnnotationGangCardinality: "3"}
	}
	for i := range 3 {
		l.pod(testPod(fmt.Sprintf("g%d", i), "1", gang))
	}
	b := &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: "g0", Namespace: "default"}, Target: corev1.ObjectReference{Kind: "Node", Name: "n1"}}
	if err := l.cs.CoreV1().Pods("default").Bind(l.ctx, b, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	s := l.scheduler(Config{})
	rep, err := s.Cycle(l.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Bound != 2 {
		t.Fatalf("first cycle bound %d (errors %v, unscheduled %+v): want the 2 pending members", rep.Bound, rep.Errors, rep.Result.UnscheduledJobs)
	}
	for i := range 3 {
		if n := l.get(fmt.Sprintf("g%d", i)).Spec.NodeName; n != "n1" {
			t.Fatalf("g%d on %q, want n1", i, n)
		}
	}
}

// A suspended Indexed Job of 4 with a queue label (Kueue's way): with
// room for 3 it stays suspended, so the Job controller creates no pod;
// once a node adds the room it is unsuspended, the real Job controller
// creates its 4 pods, and they are bound into the room its admission held.
func TestLiveSuspendedJobAdmittedWholeThenItsPodsBound(t *testing.T) {
	l := newLive(t)
	l.c.Controllers(t, "job")
	l.node("n1", "3")
	s := l.scheduler(Config{Dynamic: l.dynamic(), AdmitSuspended: true})
	j := jobOf("train", 4, 4, true, "1")
	yes := true
	j.Spec.Suspend = &yes
	j.Labels = map[string]string{kubeconv.LabelKueueQueue: "research"}
	if _, err := l.cs.BatchV1().Jobs("default").Create(l.ctx, j, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for range 10 {
		rep, err := s.Cycle(l.ctx)
		if err != nil {
			t.Fatal(err)
		}
		if rep.Admitted != 0 {
			t.Fatal("admitted with room for 3 of 4")
		}
		time.Sleep(50 * time.Millisecond) // the Job controller's chance to (wrongly) act
	}
	got, err := l.cs.BatchV1().Jobs("default").Get(l.ctx, "train", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Spec.Suspend == nil || !*got.Spec.Suspend || len(l.podsOfJob("train")) != 0 {
		t.Fatalf("suspend %v, %d pods: want suspended and no pods", got.Spec.Suspend, len(l.podsOfJob("train")))
	}
	l.node("n2", "1")
	l.cycleCollect(s, "the Job admitted and its 4 pods bound", func() bool {
		pods := l.podsOfJob("train")
		n := 0
		for _, p := range pods {
			if p.Spec.NodeName != "" {
				n++
			}
		}
		return len(pods) == 4 && n == 4
	}, nil)
}

// A suspended JobSet of 2 × 4 pods with a Kueue queue label stays
// suspended while 7 fit, is unsuspended once 8 do, and the pods its
// controller would create (here the test, with its child Jobs) are bound.
func TestLiveSuspendedJobSetAdmittedWhole(t *testing.T) {
	l := newLive(t)
	l.installCRDs("jobset.x-k8s.io_jobsets.yaml")
	l.node("n1", "4")
	l.node("n2", "3")
	s := l.scheduler(Config{Dynamic: l.dynamic(), AdmitSuspended: true})
	js := l.create(jobSets, `
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata: {name: js, namespace: default, labels: {kueue.x-k8s.io/queue-name: research}}
spec:
  suspend: true
  replicatedJobs:
  - name: w
    replicas: 2
    template:
      spec:
        completionMode: Indexed
        parallelism: 4
        completions: 4
        template:
          spec:
            schedulerName: flotilla
            restartPolicy: Never
            containers: [{name: c, image: busybox, resources: {requests: {cpu: "1"}}}]`)
	suspended := func() bool {
		u, err := l.dynamic().Resource(jobSets).Namespace("default").Get(l.ctx, "js", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		v, _, _ := unstructured.NestedBool(u.Object, "spec", "suspend")
		return v
	}
	for range 5 {
		if rep, err := s.Cycle(l.ctx); err != nil || rep.Admitted != 0 {
			t.Fatalf("cycle: %v, admitted %v with room for 7 of 8", err, rep)
		}
	}
	if !suspended() {
		t.Fatal("unsuspended with room for 7 of 8")
	}
	l.node("n3", "1")
	l.cycleCollect(s, "the JobSet unsuspended", func() bool { return !suspended() }, nil)
	yes := true
	var names []string
	for r := range 2 {
		child := jobOf(fmt.Sprintf("js-w-%d", r), 4, 4, true, "1")
		child.Spec.Suspend = &yes // no Job controller runs; suspended all the same
		child.OwnerReferences = []metav1.OwnerReference{{APIVersion: "jobset.x-k8s.io/v1alpha2", Kind: "JobSet", Name: "js", UID: js.GetUID(), Controller: &yes}}
		got, err := l.cs.BatchV1().Jobs("default").Create(l.ctx, child, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for i := range 4 {
			p := testPod(fmt.Sprintf("js-w-%d-%d", r, i), "1", func(p *corev1.Pod) {
				p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: got.Name, UID: got.UID, Controller: &yes}}
			})
			l.pod(p)
			names = append(names, p.Name)
		}
	}
	l.cycleCollect(s, "the JobSet's 8 pods bound", func() bool {
		for _, name := range names {
			if l.get(name).Spec.NodeName == "" {
				return false
			}
		}
		return true
	}, nil)
}

// Fair share, expressed as Jobs: queue a's Job holds all 8 cpu; queue b's
// Job (labelled for Kueue) arrives and gets its half through evictions of
// a's pods (deleted here as a kubelet would once evicted); the real Job
// controller replaces a's evicted pods, which wait at a's share. In the
// end each queue runs 4 pods.
func TestLiveFairShareRebalanceBetweenJobs(t *testing.T) {
	l := newLive(t)
	l.c.Controllers(t, "job")
	l.node("n1", "4")
	l.node("n2", "4")
	s := l.scheduler(Config{Dynamic: l.dynamic(), Queues: []*flotilla.Queue{{Name: "a"}, {Name: "b"}}})
	a := jobOf("a", 8, 8, false, "1")
	a.Labels = map[string]string{kubeconv.LabelQueue: "a"}
	if _, err := l.cs.BatchV1().Jobs("default").Create(l.ctx, a, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	running := func(job string) int {
		n := 0
		for _, p := range l.podsOfJob(job) {
			if p.Spec.NodeName != "" && p.DeletionTimestamp == nil {
				n++
			}
		}
		return n
	}
	l.cycleCollect(s, "a's 8 pods bound", func() bool { return running("a") == 8 }, nil)
	b := jobOf("b", 4, 4, false, "1")
	b.Labels = map[string]string{kubeconv.LabelKueueQueue: "b"}
	if _, err := l.cs.BatchV1().Jobs("default").Create(l.ctx, b, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	zero := int64(0)
	kubelet := func() error {
		// Evicted pods terminate: deleted at once, as a kubelet would.
		for _, p := range l.podsOfJob("a") {
			if p.DeletionTimestamp != nil {
				err := l.cs.CoreV1().Pods("default").Delete(l.ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
				if err != nil && !apierrors.IsNotFound(err) {
					return err
				}
			}
		}
		return nil
	}
	jobs := l.cycleCollect(s, "4 pods of each queue running", func() bool { return running("a") == 4 && running("b") == 4 }, kubelet)
	for id, j := range jobs {
		if strings.HasPrefix(id, "default/b-") && (j.Queue != "b" || j.JobSet != "default/Job/b") {
			t.Fatalf("job %+v: want queue b, set default/Job/b", j)
		}
	}
	// Stable: a's replacements wait at its share.
	for range 5 {
		if _, err := s.Cycle(l.ctx); err != nil {
			t.Fatal(err)
		}
		if err := kubelet(); err != nil {
			t.Fatal(err)
		}
	}
	if ra, rb := running("a"), running("b"); ra != 4 || rb != 4 {
		t.Fatalf("running a %d, b %d after more cycles: want 4 and 4", ra, rb)
	}
}

// A Job's gang left partly bound by a leader that died (index 0 bound
// through the Binding API) whose other two members no longer fit (a pod
// of another scheduler took the room) is rolled back by the next
// leader's first cycle: the bound member is evicted, the others are not
// bound. The Job controller recreates the evicted member, and once there
// is room the gang is bound whole.
func TestLivePartlyBoundGangThatCannotBeFinishedIsRolledBack(t *testing.T) {
	l := newLive(t)
	l.c.Controllers(t, "job")
	l.node("n1", "3")
	if _, err := l.cs.BatchV1().Jobs("default").Create(l.ctx, jobOf("trio", 3, 3, true, "1"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var first corev1.Pod
	err := wait.PollUntilContextTimeout(l.ctx, 50*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		pods := l.podsOfJob("trio")
		for _, p := range pods {
			if p.Annotations[batchv1.JobCompletionIndexAnnotation] == "0" {
				first = p
			}
		}
		return len(pods) == 3, nil
	})
	if err != nil {
		t.Fatalf("the Job controller's 3 pods: %v", err)
	}
	b := &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: first.Name, Namespace: "default"}, Target: corev1.ObjectReference{Kind: "Node", Name: "n1"}}
	if err := l.cs.CoreV1().Pods("default").Bind(l.ctx, b, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	l.pod(testPod("hog", "1", func(p *corev1.Pod) { p.Spec.SchedulerName, p.Spec.NodeName = "other", "n1" }))
	s := l.scheduler(Config{Dynamic: l.dynamic()})
	rep, err := s.Cycle(l.ctx) // reads the Job, then rolls its gang back
	if err != nil {
		t.Fatal(err)
	}
	if rep.RolledBack != 1 || rep.Evicted != 1 || rep.Bound != 0 {
		t.Fatalf("rolled back %d, evicted %d, bound %d (errors %v): want the gang rolled back, nothing bound", rep.RolledBack, rep.Evicted, rep.Bound, rep.Errors)
	}
	if got := l.get(first.Name); got.DeletionTimestamp == nil {
		t.Fatalf("bound member %s not evicted", first.Name)
	}
	for _, p := range l.podsOfJob("trio") {
		if p.Name != first.Name && p.Spec.NodeName != "" {
			t.Fatalf("pending member %s bound to %s: want none bound", p.Name, p.Spec.NodeName)
		}
	}
	// The kubelet would finish the eviction; the other pod finishes.
	zero := int64(0)
	for _, name := range []string{first.Name, "hog"} {
		if err := l.cs.CoreV1().Pods("default").Delete(l.ctx, name, metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil && !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
	}
	l.cycleCollect(s, "the gang bound whole with a new index 0", func() bool {
		n := 0
		for _, p := range l.podsOfJob("trio") {
			if p.Spec.NodeName != "" && p.DeletionTimestamp == nil && p.UID != first.UID {
				n++
			}
		}
		return n == 3
	}, nil)
}

// A suspended PyTorchJob (master + 3 workers) with a queue label stays
// suspended while 3 of its 4 pods fit, is unsuspended at
// spec.runPolicy.suspend once a node adds the room, and the pods its
// operator then creates (here the test, as no operator runs) are bound
// into the room its admission held, as one gang.
func TestLiveSuspendedPyTorchJobAdmittedWhole(t *testing.T) {
	l := newLive(t)
	l.installCRDs("kubeflow.org_pytorchjobs.yaml")
	l.node("n1", "3")
	s := l.scheduler(Config{Dynamic: l.dynamic(), AdmitSuspended: true})
	pt := l.create(pyTorchJobs, `
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: pt, namespace: default, labels: {kueue.x-k8s.io/queue-name: research}}
spec:
  runPolicy: {suspend: true}
  pytorchReplicaSpecs:
    Master: {replicas: 1, template: `+podTemplateCPU1+`}
    Worker: {replicas: 3, template: `+podTemplateCPU1+`}`)
	suspended := func() bool {
		u, err := l.dynamic().Resource(pyTorchJobs).Namespace("default").Get(l.ctx, "pt", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		v, _, _ := unstructured.NestedBool(u.Object, "spec", "runPolicy", "suspend")
		return v
	}
	for range 5 {
		if rep, err := s.Cycle(l.ctx); err != nil || rep.Admitted != 0 {
			t.Fatalf("cycle: %v, admitted %v with room for 3 of 4", err, rep)
		}
	}
	if !suspended() {
		t.Fatal("unsuspended with room for 3 of 4")
	}
	l.node("n2", "1")
	l.cycleCollect(s, "the PyTorchJob unsuspended", func() bool { return !suspended() }, nil)
	yes := true
	var names []string
	for _, name := range []string{"pt-master-0", "pt-worker-0", "pt-worker-1", "pt-worker-2"} {
		l.pod(testPod(name, "1", func(p *corev1.Pod) {
			p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "kubeflow.org/v1", Kind: "PyTorchJob", Name: "pt", UID: pt.GetUID(), Controller: &yes}}
		}))
		names = append(names, name)
	}
	jobs := l.cycleCollect(s, "the PyTorchJob's 4 pods bound", func() bool {
		for _, name := range names {
			if l.get(name).Spec.NodeName == "" {
				return false
			}
		}
		return true
	}, nil)
	if len(jobs) != 0 {
		t.Fatalf("%d pods placed by a cycle: want all 4 bound into the room the admission held", len(jobs))
	}
	on := map[string]int{}
	for _, name := range names {
		on[l.get(name).Spec.NodeName]++
	}
	if on["n1"] != 3 || on["n2"] != 1 {
		t.Fatalf("pods per node %v: want the 3 + 1 the placeholders held", on)
	}
}
