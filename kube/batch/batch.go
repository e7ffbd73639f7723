package batch

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	batchlisters "k8s.io/client-go/listers/batch/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	schedlisters "k8s.io/client-go/listers/scheduling/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/client-go/tools/record"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/kube/kubeconv"
	"github.com/flotilla-sched/flotilla/queue"
	"github.com/flotilla-sched/flotilla/scheduler"
)

// DefaultSchedulerName is the spec.schedulerName of the pods Flotilla
// schedules unless Config.SchedulerName says otherwise.
const DefaultSchedulerName = "flotilla"

// Condition reasons and event reasons the scheduler writes.
const (
	// ReasonUnschedulable is the PodScheduled=False reason of a pod the
	// last cycle examined and did not place, as kube-scheduler's.
	ReasonUnschedulable = corev1.PodReasonUnschedulable
	// ReasonInvalid is the PodScheduled=False reason of a pod Flotilla
	// cannot read as a job (a bad annotation, an unknown priority class);
	// the message names the field and the value.
	ReasonInvalid = "FlotillaInvalidPod"
	// ReasonWaitingForPreemption is the PodScheduled=False reason of a pod
	// placed on a node whose preempted pods have not terminated yet.
	ReasonWaitingForPreemption = "WaitingForPreemption"
	// ReasonPreemptionBlocked is the PodScheduled=False reason, and the
	// reason of the Warning event, of a pod placed by a cycle on a node
	// where a PodDisruptionBudget has just refused the eviction of a pod it
	// needs gone; the message names the pod and when its eviction may be
	// tried again. It lasts until the pod is scheduled again (the next
	// cycle when no other victim of its is still terminating): a pod kept
	// out by a budget is then ReasonUnschedulable, its message naming the
	// budget (see the package documentation).
	ReasonPreemptionBlocked = "PreemptionBlocked"
	// EventFailedScheduling is the reason of the Warning event written
	// with every other PodScheduled=False condition, as kube-scheduler's.
	EventFailedScheduling = "FailedScheduling"
)

// Config configures a Scheduler. The zero value works: scheduler name
// "flotilla", kubeconv.Schema(), the scheduler's DefaultConfig, a
// one-second period and 32 binds in flight.
type Config struct {
	// SchedulerName selects the pods: spec.schedulerName must equal it.
	SchedulerName string
	// Cluster is the flotilla.Node.Cluster of every node.
	Cluster string
	// Schema lays out resources; nil means kubeconv.Schema().
	Schema *flotilla.ResourceSchema
	// Scheduler is the cycle's configuration; nil means
	// scheduler.DefaultConfig. Its Schema, PriorityClasses and
	// DefaultPriorityClass are replaced by the ones the PriorityClass
	// objects give (see kubeconv.Classes); ReportEveryUnscheduled is
	// always on, so that every examined pod gets its own reason.
	Scheduler *scheduler.Config
	// ClassLimits gives, per priority class name, the class's
	// MaximumResourceFractionPerQueue (the priority and preemptibility
	// always come from the PriorityClass object).
	ClassLimits map[string]map[string]float64
	// Queues are the configured queues; a pod's queue not listed is a
	// queue of priority factor 1 at the root of the queue tree.
	Queues []*flotilla.Queue
	// Groups are the queue tree's groups (flotilla.QueueGroup): a queue's
	// Parent names one. With groups, parents or quotas, a waiting pod's
	// condition also gives its queue's and groups' fair shares, and a pod
	// held back by a limit names the level and the resource.
	Groups []*flotilla.QueueGroup
	// Period is the time between cycles; 0 means one second.
	Period time.Duration
	// BindWorkers bounds the API calls (binds, evictions, status
	// patches) in flight; 0 means 32.
	BindWorkers int
	// Seed seeds the first cycle's eviction draws; each cycle adds one.
	Seed uint64
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Dynamic reads the owners of pods (Jobs, JobSets, PyTorchJobs,
	// MPIJobs, RayClusters, RayJobs) and Kueue's WorkloadPriorityClasses,
	// as unstructured objects, so that a CRD that is not installed costs
	// one NotFound per owner. Nil means no owner is read: pods are grouped
	// by their annotations alone, as bare pods.
	Dynamic dynamic.Interface
	// AdmitSuspended turns on the suspend path (Kueue's way): a batch/v1
	// Job created with spec.suspend true, whose pod template names this
	// scheduler and which carries a queue label (flotilla.dev/queue or
	// kueue.x-k8s.io/queue-name), is queued as placeholders of its pods
	// (one gang of min(parallelism, completions)) and unsuspended once
	// they fit whole; its room is held until its pods exist (at most
	// AdmitHold), which are then scheduled as any pod. It watches Jobs
	// (list/watch and patch on jobs). With Dynamic set, JobSets,
	// PyTorchJobs, MPIJobs and RayJobs take the same path (one gang of
	// their pods; see the package documentation) when the apiserver
	// serves them at Start.
	AdmitSuspended bool
}

// Scheduler schedules the pods of one cluster. Create it with New, start
// its informers with Start, then call Run (or RunWithLeaderElection), or
// Cycle for one cycle at a time.
type Scheduler struct {
	client   kubernetes.Interface
	cfg      Config
	schema   *flotilla.ResourceSchema
	factory  informers.SharedInformerFactory
	pods     corelisters.PodLister
	nodes    corelisters.NodeLister
	classes  schedlisters.PriorityClassLister
	recorder record.EventRecorder
	events   record.EventBroadcaster
	synced   []cache.InformerSynced
	jobs     batchlisters.JobLister
	// custom are the informer caches of the custom kinds the suspend
	// path watches (startCustomKinds).
	custom []customWatch

	mu sync.Mutex
	st state
}

// New validates cfg (every problem at once, as *flotilla.FieldError) and
// returns a Scheduler over client. It starts nothing.
func New(client kubernetes.Interface, cfg Config) (*Scheduler, error) {
	var errs []error
	if client == nil {
		errs = append(errs, flotilla.Errorf("client", "<nil>", flotilla.ErrRequired, ""))
	}
	if cfg.SchedulerName == "" {
		cfg.SchedulerName = DefaultSchedulerName
	}
	if cfg.Schema == nil {
		cfg.Schema = kubeconv.Schema()
	}
	if cfg.Period == 0 {
		cfg.Period = time.Second
	}
	if cfg.Period < 0 {
		errs = append(errs, flotilla.Errorf("period", cfg.Period.String(), flotilla.ErrNegative, ""))
	}
	if cfg.BindWorkers == 0 {
		cfg.BindWorkers = 32
	}
	if cfg.BindWorkers < 0 {
		errs = append(errs, flotilla.Errorf("bindWorkers", fmt.Sprint(cfg.BindWorkers), flotilla.ErrNegative, ""))
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	seen := map[string]bool{}
	for i, q := range cfg.Queues {
		f := fmt.Sprintf("queues[%d]", i)
		if q == nil {
			errs = append(errs, flotilla.Errorf(f, "<nil>", flotilla.ErrRequired, ""))
			continue
		}
		if err := q.Validate(); err != nil {
			errs = append(errs, err)
		}
		if seen[q.Name] {
			errs = append(errs, flotilla.Errorf(f+".name", q.Name, flotilla.ErrDuplicate, ""))
		}
		seen[q.Name] = true
	}
	for i, g := range cfg.Groups {
		if g == nil {
			errs = append(errs, flotilla.Errorf(fmt.Sprintf("groups[%d]", i), "<nil>", flotilla.ErrRequired, ""))
		}
	}
	if len(errs) == 0 && (len(cfg.Groups) > 0 || hasTree(cfg.Queues)) {
		// The tree is judged as every cycle will judge it, at once.
		if err := checkTree(cfg); err != nil {
			errs = append(errs, err)
		}
	}
	sc := scheduler.DefaultConfig(cfg.Schema)
	if cfg.Scheduler != nil {
		sc = *cfg.Scheduler
	}
	sc.Schema = cfg.Schema
	sc.ReportEveryUnscheduled = true
	sc.PriorityClasses = []flotilla.PriorityClass{{Name: kubeconv.DefaultClass, Preemptible: true}}
	sc.DefaultPriorityClass = kubeconv.DefaultClass
	if err := sc.Validate(); err != nil {
		errs = append(errs, err)
	}
	cfg.Scheduler = &sc
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	s := &Scheduler{client: client, cfg: cfg, schema: cfg.Schema}
	s.st.init()
	s.factory = informers.NewSharedInformerFactory(client, 0)
	podInf := s.factory.Core().V1().Pods()
	nodeInf := s.factory.Core().V1().Nodes()
	pcInf := s.factory.Scheduling().V1().PriorityClasses()
	s.pods, s.nodes, s.classes = podInf.Lister(), nodeInf.Lister(), pcInf.Lister()
	s.synced = []cache.InformerSynced{podInf.Informer().HasSynced, nodeInf.Informer().HasSynced, pcInf.Informer().HasSynced}
	_, _ = podInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { s.onPod(o, false) },
		UpdateFunc: func(_, o any) { s.onPod(o, false) },
		DeleteFunc: func(o any) { s.onPod(o, true) },
	})
	_, _ = nodeInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { s.onNode(o, false) },
		UpdateFunc: func(_, o any) { s.onNode(o, false) },
		DeleteFunc: func(o any) { s.onNode(o, true) },
	})
	_, _ = pcInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { s.onClass() },
		UpdateFunc: func(_, _ any) { s.onClass() },
		DeleteFunc: func(any) { s.onClass() },
	})
	if cfg.AdmitSuspended {
		jobInf := s.factory.Batch().V1().Jobs()
		s.jobs = jobInf.Lister()
		s.synced = append(s.synced, jobInf.Informer().HasSynced)
		_, _ = jobInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    func(o any) { s.onJob(o, false) },
			UpdateFunc: func(_, o any) { s.onJob(o, false) },
			DeleteFunc: func(o any) { s.onJob(o, true) },
		})
	}
	s.events = record.NewBroadcaster()
	s.recorder = s.events.NewRecorder(scheme.Scheme, corev1.EventSource{Component: cfg.SchedulerName})
	return s, nil
}

// Start starts the informers and the event sink and waits until the
// informers have synced or ctx ends. Everything stops when ctx ends.
func (s *Scheduler) Start(ctx context.Context) error {
	s.events.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: s.client.CoreV1().Events("")})
	go func() {
		<-ctx.Done()
		s.events.Shutdown()
	}()
	s.factory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), s.synced...) {
		return fmt.Errorf("batch: informers did not sync: %w", context.Cause(ctx))
	}
	s.mu.Lock()
	s.st.classesDirty = true
	s.mu.Unlock()
	return s.startCustomKinds(ctx)
}

// Run cycles every Config.Period until ctx ends, and returns ctx's error.
// A cycle that fails is reported to onError (when not nil) and the next
// one runs as usual.
func (s *Scheduler) Run(ctx context.Context, onError func(error)) error {
	t := time.NewTicker(s.cfg.Period)
	defer t.Stop()
	for {
		if _, err := s.Cycle(ctx); err != nil && onError != nil && ctx.Err() == nil {
			onError(err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}

// LeaderElection configures RunWithLeaderElection: a coordination.k8s.io
// Lease named Name in Namespace, held by Identity.
type LeaderElection struct {
	Namespace, Name, Identity string
	// LeaseDuration, RenewDeadline and RetryPeriod are client-go's; zero
	// means 15 s, 10 s and 2 s.
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
}

// RunWithLeaderElection runs cycles (as Run) only while this replica
// holds the Lease, releasing it when ctx ends, and returns when ctx ends.
// The informers (Start) keep running on every replica, so a new leader
// starts from a warm cache. A replica that loses the Lease stops cycling
// and campaigns again.
func (s *Scheduler) RunWithLeaderElection(ctx context.Context, le LeaderElection, onError func(error)) error {
	var errs []error
	if le.Namespace == "" {
		errs = append(errs, flotilla.Errorf("leaderElection.namespace", "", flotilla.ErrRequired, ""))
	}
	if le.Name == "" {
		errs = append(errs, flotilla.Errorf("leaderElection.name", "", flotilla.ErrRequired, ""))
	}
	if le.Identity == "" {
		errs = append(errs, flotilla.Errorf("leaderElection.identity", "", flotilla.ErrRequired, ""))
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	if le.LeaseDuration == 0 {
		le.LeaseDuration = 15 * time.Second
	}
	if le.RenewDeadline == 0 {
		le.RenewDeadline = 10 * time.Second
	}
	if le.RetryPeriod == 0 {
		le.RetryPeriod = 2 * time.Second
	}
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1ObjectMeta(le.Namespace, le.Name),
		Client:     s.client.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: le.Identity},
	}
	// client-go runs OnStartedLeading in a goroutine and Run does not wait
	// for it, so this replica may win a new term while the last one's
	// cycle still runs (on a cancelled context): a term starts only once
	// the one before has returned.
	var term sync.Mutex
	for ctx.Err() == nil {
		elector, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
			Lock:            lock,
			LeaseDuration:   le.LeaseDuration,
			RenewDeadline:   le.RenewDeadline,
			RetryPeriod:     le.RetryPeriod,
			ReleaseOnCancel: true,
			Name:            le.Name,
			Callbacks: leaderelection.LeaderCallbacks{
				OnStartedLeading: func(ctx context.Context) {
					term.Lock()
					defer term.Unlock()
					_ = s.Run(ctx, onError)
				},
				OnStoppedLeading: func() {},
			},
		})
		if err != nil {
			return err
		}
		elector.Run(ctx)
	}
	return ctx.Err()
}

// onClass marks the priority classes for rebuilding at the next cycle.
func (s *Scheduler) onClass() {
	s.mu.Lock()
	s.st.classesDirty = true
	s.mu.Unlock()
}

// priorityClasses lists the PriorityClass objects.
func (s *Scheduler) priorityClasses() []*schedulingv1.PriorityClass {
	pcs, _ := s.classes.List(labels.Everything())
	return pcs
}

// listPods lists every pod in the informer's cache.
func (s *Scheduler) listPods() []*corev1.Pod {
	pods, _ := s.pods.List(labels.Everything())
	return pods
}

// listJobs lists every Job in the informer's cache (none without
// Config.AdmitSuspended).
func (s *Scheduler) listJobs() []*batchv1.Job {
	if s.jobs == nil {
		return nil
	}
	jobs, _ := s.jobs.List(labels.Everything())
	return jobs
}

// newStore builds an empty store and scheduler for classes.
func (s *Scheduler) newStore(classes []flotilla.PriorityClass, def string) (*queue.Store, *scheduler.Scheduler, error) {
	for i := range classes {
		if lim, ok := s.cfg.ClassLimits[classes[i].Name]; ok {
			classes[i].MaximumResourceFractionPerQueue = lim
		}
	}
	sc := *s.cfg.Scheduler
	sc.PriorityClasses = classes
	sc.DefaultPriorityClass = def
	sched, err := scheduler.New(sc)
	if err != nil {
		return nil, nil, err
	}
	store, err := queue.New(s.schema, classes, def)
	if err != nil {
		return nil, nil, err
	}
	return store, sched, nil
}
