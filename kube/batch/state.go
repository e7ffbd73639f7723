package batch

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/kube/kubeconv"
	"github.com/flotilla-sched/flotilla/queue"
	"github.com/flotilla-sched/flotilla/scheduler"
)

func metav1ObjectMeta(ns, name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Namespace: ns, Name: name}
}

// kind says what a pod is to the scheduler.
type kind uint8

const (
	// kindQueued: a pending Flotilla pod, in the store.
	kindQueued kind = iota + 1
	// kindInvalid: a pending Flotilla pod that is not a valid job.
	kindInvalid
	// kindRunning: a bound, non-terminal Flotilla pod: a running job.
	kindRunning
	// kindHeld: a pod that holds capacity on a node but that Flotilla
	// never preempts: another scheduler's pod, a pod being deleted or
	// evicted, a pod bound by a cycle before the informer shows it.
	kindHeld
)

// podState is what the scheduler knows of one pod.
type podState struct {
	pod  *corev1.Pod
	kind kind
	job  *flotilla.Job
	node string
	// req is what a held pod holds on node.
	req flotilla.Resources
	// err is why an invalid pod is not a job.
	err error
	// owner is the workload the job was read from, nil for a bare pod.
	owner *kubeconv.Owner
	// admit is the UID of the suspended Job a placeholder stands for
	// (state.virtual), empty for a pod.
	admit types.UID
	// counted is the gang whose running members
	// (state.gangRunning) count this running pod, "" when none.
	counted string
	// orig is a pending pod's job as read (its workload's or annotations'
	// gang); job is the one queued, which settleGangs may regroup. A pod
	// placed by a cycle keeps it until the informer shows it bound.
	orig *flotilla.Job
	// rest is the partly bound gang whose remaining members this pending
	// pod is queued with (settleGangs), "" when none.
	rest string
}

// state is everything the informers keep up to date between cycles.
type state struct {
	pods  map[string]*podState
	nodes map[string]*flotilla.Node
	// bound maps the pods a cycle bound, until the informer shows
	// spec.nodeName, to their node.
	bound map[string]string
	// evicting holds the pods evicted (or being evicted) until the
	// informer shows their deletion.
	evicting map[string]bool
	// nominated holds the pods placed on a node where preempted pods
	// have not terminated yet; they are held out of the store until then.
	nominated map[string]nomination
	// refused holds, per victim pod UID, the eviction a
	// PodDisruptionBudget refused and when it may be tried again; an entry
	// lives only while its pod exists and its retry time has not come.
	refused map[types.UID]refusal
	// shown is the PodScheduled=False (reason, message) last written per
	// pod, so an unchanged condition is not written again.
	shown map[string]shownCondition
	// owners caches the workload read from each pod controller's chain,
	// by the controller's UID, and prios the Kueue WorkloadPriorityClass
	// values by name; unresolved holds the pods waiting for either (see
	// resolveOwners).
	owners     map[types.UID]ownerEntry
	prios      map[string]prioEntry
	unresolved map[string]bool
	// gangRunning counts, per gang ID, its running pods: a pod of a gang
	// that already runs (a Job controller's replacement for a failed
	// member, the rest of a gang left partly bound) is scheduled alone.
	gangRunning map[string]int
	// succeeded maps each Succeeded pod of ours whose controller is a
	// batch Job to the Job's UID, and succeededOf counts them per Job:
	// members of its gang that ran and finished (doneMembers).
	succeeded   map[string]types.UID
	succeededOf map[types.UID]int
	// broken holds, by gang ID, why a partly bound gang cannot be
	// finished (a pending member deleted); the next cycle rolls it back.
	broken map[string]string
	// suspended holds the suspended Jobs of ours (Config.AdmitSuspended)
	// by UID; virtual their placeholder jobs by ID, queued in the store
	// until admitted, then held on their nodes until the Job's pods exist.
	suspended map[types.UID]*suspendedJob
	virtual   map[string]*podState

	classesDirty bool
	// classes are the priority classes by name; defClass names the class
	// of a pod naming none.
	classes    map[string]flotilla.PriorityClass
	defClass   string
	store      *queue.Store
	sched      *scheduler.Scheduler
	rateLimits scheduler.RateLimitState
	// usage is the queue tree's usage memory, carried from cycle to cycle.
	usage scheduler.UsageState
	seed  uint64
}

type shownCondition struct{ reason, message string }

func (st *state) init() {
	st.pods = map[string]*podState{}
	st.nodes = map[string]*flotilla.Node{}
	st.bound = map[string]string{}
	st.evicting = map[string]bool{}
	st.nominated = map[string]nomination{}
	st.refused = map[types.UID]refusal{}
	st.shown = map[string]shownCondition{}
	st.owners = map[types.UID]ownerEntry{}
	st.prios = map[string]prioEntry{}
	st.unresolved = map[string]bool{}
	st.gangRunning = map[string]int{}
	st.broken = map[string]string{}
	st.succeeded = map[string]types.UID{}
	st.succeededOf = map[types.UID]int{}
	st.suspended = map[types.UID]*suspendedJob{}
	st.virtual = map[string]*podState{}
}

func podOf(o any) *corev1.Pod {
	if t, ok := o.(cache.DeletedFinalStateUnknown); ok {
		o = t.Obj
	}
	p, _ := o.(*corev1.Pod)
	return p
}

func (s *Scheduler) onPod(o any, deleted bool) {
	p := podOf(o)
	if p == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if deleted {
		s.forget(kubeconv.JobID(p))
		delete(s.st.refused, p.UID)
		return
	}
	s.sync(p)
}

func (s *Scheduler) onNode(o any, deleted bool) {
	if t, ok := o.(cache.DeletedFinalStateUnknown); ok {
		o = t.Obj
	}
	n, _ := o.(*corev1.Node)
	if n == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if deleted {
		delete(s.st.nodes, n.Name)
		return
	}
	fn, err := kubeconv.Node(n, s.cfg.Cluster, s.schema)
	if err != nil {
		// A node Flotilla cannot read takes no pods.
		delete(s.st.nodes, n.Name)
		return
	}
	s.st.nodes[n.Name] = &fn
}

// forget drops a deleted pod.
func (s *Scheduler) forget(key string) {
	if old := s.st.pods[key]; old != nil {
		s.noteBroken(old, old.pod)
	}
	s.unqueue(key)
	s.uncount(s.st.pods[key])
	s.noteSucceeded(key, nil)
	delete(s.st.pods, key)
	delete(s.st.bound, key)
	delete(s.st.evicting, key)
	delete(s.st.shown, key)
	delete(s.st.nominated, key)
	delete(s.st.unresolved, key)
}

// unqueue removes the pod from the store if it is there.
func (s *Scheduler) unqueue(key string) {
	if old := s.st.pods[key]; old != nil && old.kind == kindQueued && s.st.store != nil {
		s.st.store.Remove(key)
	}
}

func (s *Scheduler) ours(p *corev1.Pod) bool { return p.Spec.SchedulerName == s.cfg.SchedulerName }

func terminal(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
}

// sync classifies p anew and keeps the store up to date. Called with mu
// held, for every informer event and after a failed bind or eviction.
func (s *Scheduler) sync(p *corev1.Pod) {
	key := kubeconv.JobID(p)
	s.unqueue(key)
	old := s.st.pods[key]
	s.uncount(old)
	s.noteSucceeded(key, p)
	st := s.classify(key, p)
	if st == nil {
		if !terminal(p) {
			s.noteBroken(old, p)
		}
		delete(s.st.pods, key)
		return
	}
	st.pod = p
	s.st.pods[key] = st
	if st.kind == kindRunning && st.job.Gang.ID != "" {
		st.counted = st.job.Gang.ID
		s.st.gangRunning[st.counted]++
	}
	if st.kind == kindQueued {
		if err := s.st.store.Add(st.job); err != nil {
			st.kind, st.job, st.err = kindInvalid, nil, err
		}
	}
}

func (s *Scheduler) classify(key string, p *corev1.Pod) *podState {
	if terminal(p) {
		delete(s.st.bound, key)
		return nil
	}
	if p.Spec.NodeName == "" {
		var orig *flotilla.Job
		if old := s.st.pods[key]; old != nil {
			orig = old.orig
		}
		if node, ok := s.st.bound[key]; ok {
			return &podState{kind: kindHeld, node: node, req: kubeconv.PodRequests(p, s.schema), orig: orig}
		}
		if nom, ok := s.st.nominated[key]; ok {
			// The preempted pods hold the room it waits for.
			return &podState{kind: kindHeld, node: nom.node, orig: orig}
		}
		if !s.ours(p) || p.DeletionTimestamp != nil {
			return nil
		}
		if s.st.store == nil {
			// Before the first cycle: the classes are not known yet.
			return &podState{kind: kindInvalid}
		}
		w := s.workloadOf(p)
		if !w.ready {
			// Its owner is read at the next cycle's start.
			s.st.unresolved[key] = true
			return &podState{kind: kindInvalid}
		}
		if w.err != nil {
			return &podState{kind: kindInvalid, err: w.err}
		}
		j, err := kubeconv.JobOf(p, s.schema, w.owner, w.kueue)
		if err != nil {
			return &podState{kind: kindInvalid, err: err}
		}
		// Queued with its gang as read; settleGangs regroups it when
		// its gang already runs (a binding cut short by a lost lease, a
		// replacement for a failed member) or has more pods than members.
		return &podState{kind: kindQueued, job: &j, orig: &j, owner: w.owner}
	}
	delete(s.st.bound, key)
	if s.ours(p) && p.DeletionTimestamp == nil && !s.st.evicting[key] && s.st.store != nil {
		w := s.workloadOf(p)
		if !w.ready {
			// Held (never preempted) until its queue is known.
			s.st.unresolved[key] = true
		} else if j, err := kubeconv.JobOf(p, s.schema, w.owner, w.kueue); w.err == nil && err == nil && s.classKnown(j.PriorityClass) {
			return &podState{kind: kindRunning, job: &j, node: p.Spec.NodeName, owner: w.owner}
		}
	}
	return &podState{kind: kindHeld, node: p.Spec.NodeName, req: kubeconv.PodRequests(p, s.schema)}
}

// noteSucceeded keeps state.succeeded up to date for the pod at key (p
// nil: deleted). Called with mu held.
func (s *Scheduler) noteSucceeded(key string, p *corev1.Pod) {
	var uid types.UID
	if p != nil && p.Status.Phase == corev1.PodSucceeded && s.ours(p) {
		if ref := kubeconv.ControllerRef(p.OwnerReferences); ref != nil && ref.Kind == "Job" && strings.HasPrefix(ref.APIVersion, "batch/") {
			uid = ref.UID
		}
	}
	old, had := s.st.succeeded[key]
	if had && old == uid {
		return
	}
	if had {
		if s.st.succeededOf[old]--; s.st.succeededOf[old] <= 0 {
			delete(s.st.succeededOf, old)
		}
		delete(s.st.succeeded, key)
	}
	if uid != "" {
		s.st.succeeded[key] = uid
		s.st.succeededOf[uid]++
	}
}

// doneMembers counts the members of gang id that ran and succeeded, as
// ps (a pending member) tells: the Succeeded pods of its Job, when id is
// that Job's own gang (an Indexed Job's). A replacement for a failed
// member then joins the gang that ran, as a running one's does (Kueue
// counts an admitted workload's replacement pods as part of it). Other
// workloads' gangs count none (see the README's Known gaps). Called with
// mu held.
func (s *Scheduler) doneMembers(id string, ps *podState) int {
	if len(s.st.succeededOf) == 0 || ps.owner == nil || ps.owner.Kind != "Job" || ps.owner.Gang.ID != id {
		return 0
	}
	if ref := kubeconv.ControllerRef(ps.pod.OwnerReferences); ref != nil && ref.UID == ps.owner.UID {
		return s.st.succeededOf[ref.UID]
	}
	return 0
}

// uncount takes a running pod out of its gang's count.
func (s *Scheduler) uncount(ps *podState) {
	if ps == nil || ps.counted == "" {
		return
	}
	if s.st.gangRunning[ps.counted]--; s.st.gangRunning[ps.counted] <= 0 {
		delete(s.st.gangRunning, ps.counted)
	}
	ps.counted = ""
}

func (s *Scheduler) classKnown(name string) bool {
	_, ok := s.st.classes[name]
	return name == "" || ok
}

// classOf is the priority class of a job's class name ("": the default).
func (s *Scheduler) classOf(name string) flotilla.PriorityClass {
	if name == "" {
		name = s.st.defClass
	}
	return s.st.classes[name]
}

// rebuildClasses reads the PriorityClass objects, builds a new store and
// scheduler over them, and classifies every pod again.
func (s *Scheduler) rebuildClasses() error {
	classes, def := kubeconv.Classes(s.priorityClasses())
	store, sched, err := s.newStore(classes, def)
	if err != nil {
		return err
	}
	s.st.store, s.st.sched = store, sched
	s.st.classes = make(map[string]flotilla.PriorityClass, len(classes))
	for _, c := range classes {
		s.st.classes[c.Name] = c
	}
	s.st.defClass = def
	s.st.classesDirty = false
	for _, ps := range s.st.pods {
		if ps.kind == kindQueued {
			ps.kind = kindInvalid // gone with the old store
		}
	}
	for _, p := range s.listPods() {
		s.sync(p)
	}
	for _, ps := range s.st.virtual {
		if ps.kind == kindQueued {
			ps.kind = kindInvalid // gone with the old store
		}
	}
	for _, j := range s.listJobs() {
		s.syncWorkload(fromJob(j), false)
	}
	for _, w := range s.listCustom() {
		s.syncWorkload(w, false)
	}
	return nil
}
