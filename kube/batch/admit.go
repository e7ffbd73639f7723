package batch

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/kube/internal/noretry"
	"github.com/flotilla-sched/flotilla/kube/kubeconv"
	"github.com/flotilla-sched/flotilla/scheduler"
)

// AdmitHold is how long the room a suspended Job was admitted into stays
// reserved for its pods: until they all exist, or this long after the
// cycle that admitted it.
const AdmitHold = time.Minute

// Event reasons of the suspend path, written on the Job.
const (
	// EventAdmitted: the Job was unsuspended, its whole gang fitting.
	EventAdmitted = "FlotillaAdmitted"
	// EventNotAdmitted: why the Job stays suspended (the scheduler's
	// reason, or the problem with its template), written when it changes.
	EventNotAdmitted = "FlotillaNotAdmitted"
)

// admitSep joins a suspended Job's name and a member's index in the IDs
// of its placeholder jobs; no pod name holds it.
const admitSep = "#admit-"

// suspendedJob is a suspended Job of ours waiting for admission (its
// placeholders queued), or admitted and holding its room until its pods
// exist.
type suspendedJob struct {
	w        suspendable
	keys     []string
	admitted bool
	until    time.Time
	// released: its room was let go (releaseAdmissions); the entry stays
	// until the informer shows the Job unsuspended.
	released bool
	// shown is the last EventNotAdmitted message written.
	shown string
}

// suspendable is what the suspend path reads of a workload: a Job or a
// JobSet.
type suspendable struct {
	kind, namespace, name string
	uid                   types.UID
	labels, annotations   map[string]string
	created               metav1.Time
	suspended, deleting   bool
	// groups are its pods by template: n pods of each.
	groups []podGroup
	// err is why its spec could not be read (a JobSet's).
	err error
	// obj is the object, for events.
	obj runtime.Object
	// gvr and unsuspend, for a custom kind, are its resource and the
	// merge patch that admits it (customKinds).
	gvr       schema.GroupVersionResource
	unsuspend []byte
}

type podGroup struct {
	template corev1.PodTemplateSpec
	n        int64
	// rayHead and rayGroup, for a RayJob's groups, say which of its
	// cluster's pods the group's placeholders are for: the head, or the
	// workers whose ray.io/group label is rayGroup (rayMembers).
	rayHead  bool
	rayGroup string
}

// pods is how many pods the workload runs at once.
func (w *suspendable) pods() int64 {
	var n int64
	for _, g := range w.groups {
		n += g.n
	}
	return n
}

func fromJob(j *batchv1.Job) suspendable {
	return suspendable{
		kind: "Job", namespace: j.Namespace, name: j.Name, uid: j.UID,
		labels: j.Labels, annotations: j.Annotations, created: j.CreationTimestamp,
		suspended: j.Spec.Suspend != nil && *j.Spec.Suspend, deleting: j.DeletionTimestamp != nil,
		groups: []podGroup{{template: j.Spec.Template, n: int64(podsAtOnce(j))}}, obj: j,
	}
}

// admissible reports whether a workload takes the suspend path:
// suspended, every pod of it ours, a queue label (flotilla.dev/queue or
// Kueue's) on it, not being deleted.
func (s *Scheduler) admissible(w *suspendable) bool {
	if w.deleting || !w.suspended || len(w.groups) == 0 && w.err == nil {
		return false
	}
	for _, g := range w.groups {
		if g.template.Spec.SchedulerName != s.cfg.SchedulerName {
			return false
		}
	}
	_, flo := w.labels[kubeconv.LabelQueue]
	_, kueue := w.labels[kubeconv.LabelKueueQueue]
	return flo || kueue
}

func (s *Scheduler) onJob(o any, deleted bool) {
	if t, ok := o.(cache.DeletedFinalStateUnknown); ok {
		o = t.Obj
	}
	j, _ := o.(*batchv1.Job)
	if j == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.syncWorkload(fromJob(j), deleted)
}

// syncWorkload keeps a suspended workload's placeholders up to date.
// Called with mu held.
func (s *Scheduler) syncWorkload(w suspendable, deleted bool) {
	sj := s.st.suspended[w.uid]
	if sj != nil && sj.admitted && !deleted {
		if sj.released && !w.suspended {
			// Seen unsuspended: a later suspension is a new admission.
			delete(s.st.suspended, w.uid)
			return
		}
		// Its pods are coming (releaseAdmissions lets go), or the
		// informer still shows it suspended: never admitted twice.
		sj.w = w
		return
	}
	if sj != nil {
		s.dropPlaceholders(sj)
		delete(s.st.suspended, w.uid)
	}
	n := w.pods()
	if n > maxPlaceholders && w.err == nil {
		w.err = errors.Join(flotilla.Errorf(w.kind+" "+w.namespace+"/"+w.name+" spec.parallelism", strconv.FormatInt(n, 10), flotilla.ErrOutOfRange,
			"the suspend path admits at most %d pods at once", maxPlaceholders))
	}
	if deleted || !s.admissible(&w) || s.st.store == nil || (n <= 0 && w.err == nil) {
		return
	}
	sj = &suspendedJob{w: w}
	s.st.suspended[w.uid] = sj
	owner := &kubeconv.Owner{
		Kind: w.kind, Namespace: w.namespace, Name: w.name, UID: w.uid,
		Labels: w.labels, Annotations: w.annotations, JobSet: w.namespace + "/" + w.kind + "/" + w.name,
	}
	if n > 1 {
		// Admitted whole (Kueue's way), whatever its pods are then.
		owner.Gang = flotilla.Gang{ID: owner.JobSet + "@" + string(w.uid) + "#admit", Cardinality: int(n)}
	}
	if w.err != nil {
		// One placeholder carries the problem, for the event.
		key := w.namespace + "/" + w.name + admitSep + "0"
		sj.keys = append(sj.keys, key)
		s.st.virtual[key] = &podState{pod: &corev1.Pod{}, owner: owner, admit: w.uid, kind: kindInvalid, err: w.err}
		return
	}
	i := 0
	for _, g := range w.groups {
		for range g.n {
			s.addPlaceholder(sj, owner, g.template, i)
			i++
		}
	}
}

// addPlaceholder queues the i-th placeholder of a suspended workload.
// Called with mu held.
func (s *Scheduler) addPlaceholder(sj *suspendedJob, owner *kubeconv.Owner, t corev1.PodTemplateSpec, i int) {
	w := &sj.w
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: w.name + admitSep + strconv.Itoa(i), Namespace: w.namespace,
			Labels: t.Labels, Annotations: t.Annotations, CreationTimestamp: w.created,
		},
		Spec: t.Spec,
	}
	key := kubeconv.JobID(p)
	sj.keys = append(sj.keys, key)
	ps := &podState{pod: p, owner: owner, admit: w.uid}
	s.st.virtual[key] = ps
	var kueue *int32
	if class := kubeconv.KueuePriorityClass(p, owner); class != "" && s.cfg.Dynamic != nil {
		e, ok := s.st.prios[class]
		if !ok {
			ps.kind = kindInvalid // read at the next cycle's start
			return
		}
		if e.err != nil {
			ps.kind, ps.err = kindInvalid, e.err
			return
		}
		kueue = &e.value
	}
	job, err := kubeconv.JobOf(p, s.schema, owner, kueue)
	if err != nil {
		ps.kind, ps.err = kindInvalid, err
		return
	}
	job.Gang = flotilla.Gang{ID: owner.Gang.ID, Cardinality: owner.Gang.Cardinality, NodeUniformityLabel: job.Gang.NodeUniformityLabel,
		Topology: job.Gang.Topology}
	if err := s.st.store.Add(&job); err != nil {
		ps.kind, ps.err = kindInvalid, err
		return
	}
	ps.kind, ps.job = kindQueued, &job
}

// dropPlaceholders removes a Job's placeholders. Called with mu held.
func (s *Scheduler) dropPlaceholders(sj *suspendedJob) {
	for _, key := range sj.keys {
		if ps := s.st.virtual[key]; ps != nil && ps.kind == kindQueued {
			s.st.store.Remove(key)
		}
		delete(s.st.virtual, key)
	}
	sj.keys = nil
}

// releaseAdmissions binds the pods of admitted Jobs into the room their
// placeholders hold, once all of them exist and are pending (pod i on
// placeholder i's node, when its request fits what the placeholder holds
// there: the Job controller copies the template, so it does), and lets go
// of the room of Jobs whose pods did not all come within AdmitHold (or do
// not fit it): those pods are then queued as any. It returns the bindings
// to make. Called with mu held.
func (s *Scheduler) releaseAdmissions(now time.Time) []bindUnit {
	var admitted int
	for _, sj := range s.st.suspended {
		if sj.admitted && !sj.released {
			admitted++
		}
	}
	if admitted == 0 {
		return nil
	}
	pods := map[types.UID][]*podState{}
	for _, ps := range s.st.pods {
		if ps.kind != kindQueued {
			continue
		}
		// A JobSet's pods are its child Jobs': their read owner names it.
		var uid types.UID
		if ps.owner != nil {
			uid = ps.owner.UID
		} else if ref := kubeconv.ControllerRef(ps.pod.OwnerReferences); ref != nil {
			uid = ref.UID
		}
		sj := s.st.suspended[uid]
		if uid == "" || sj == nil || !sj.admitted || sj.released {
			continue
		}
		if sj.w.kind == "RayJob" && ps.orig.Gang.ID == "" {
			// Its submitter pod: not a member, queued as any.
			continue
		}
		pods[uid] = append(pods[uid], ps)
	}
	var binds []bindUnit
	for uid, sj := range s.st.suspended {
		if !sj.admitted || sj.released {
			continue
		}
		mine := pods[uid]
		if sj.w.kind == "RayJob" {
			mine = rayMembers(&sj.w, mine)
		}
		if len(mine) < len(sj.keys) && now.Before(sj.until) {
			continue
		}
		if len(mine) == len(sj.keys) {
			if b, ok := s.bindIntoHeld(sj, mine); ok {
				binds = append(binds, b)
			}
		}
		s.dropPlaceholders(sj)
		sj.released = true
	}
	return binds
}

// rayMembers picks, of an admitted RayJob's pending cluster pods, those
// bound into its held room: the head, and per worker group its oldest
// pods up to the group's placeholders (by KubeRay's ray.io/group label;
// pods whose label names no group fill what the groups lack, oldest
// first). Workers beyond (replicas > minReplicas) are left out: once the
// members are bound, settleGangs queues them as lone jobs. Without the
// head, or with a group short, it returns fewer pods than the gang, and
// the room stays held for them until AdmitHold ends.
func rayMembers(w *suspendable, pods []*podState) []*podState {
	slices.SortFunc(pods, olderMember) // the head first
	left := map[string]int64{}
	var want int64
	for _, g := range w.groups {
		want += g.n
		if !g.rayHead {
			left[g.rayGroup] += g.n
		}
	}
	out := make([]*podState, 0, want)
	var spare []*podState
	head := false
	for _, ps := range pods {
		group, labelled := ps.pod.Labels[labelRayGroup]
		_, known := left[group]
		switch {
		case ps.pod.Labels[labelRayNodeType] == "head":
			if !head {
				head = true
				out = append(out, ps)
			}
		case labelled && known:
			if left[group] > 0 {
				left[group]--
				out = append(out, ps)
			}
		default:
			spare = append(spare, ps)
		}
	}
	if !head {
		return nil
	}
	for _, ps := range spare {
		if int64(len(out)) == want {
			break
		}
		out = append(out, ps)
	}
	return out
}

// bindIntoHeld pairs the Job's pods with its placeholders' nodes and
// marks them bound there, if every pod's request fits what its
// placeholder holds. Called with mu held.
func (s *Scheduler) bindIntoHeld(sj *suspendedJob, pods []*podState) (bindUnit, bool) {
	var b bindUnit
	used := make([]bool, len(sj.keys))
	for _, ps := range pods {
		// The first placeholder not taken whose room holds the pod (a
		// JobSet's templates differ).
		found := false
		for i, key := range sj.keys {
			held := s.st.virtual[key]
			if used[i] || held == nil || held.kind != kindHeld || !fitsIn(ps.job.Requests, held.req) {
				continue
			}
			used[i], found = true, true
			b.pods = append(b.pods, ps.pod)
			b.nodes = append(b.nodes, held.node)
			break
		}
		if !found {
			return bindUnit{}, false
		}
	}
	for i, ps := range pods {
		key := kubeconv.JobID(ps.pod)
		s.st.store.Remove(key)
		s.st.bound[key] = b.nodes[i]
		ps.kind, ps.node, ps.req = kindHeld, b.nodes[i], ps.job.Requests
	}
	return b, true
}

func fitsIn(r, room flotilla.Resources) bool {
	for i, v := range r {
		if v > room[i] {
			return false
		}
	}
	return true
}

// planAdmissions takes the placeholders out of the result: the Jobs whose
// placeholders were placed are admitted (to unsuspend, their room held),
// the others get an EventNotAdmitted when its message changed. It returns
// the assignments of pods. Called with mu held.
func (s *Scheduler) planAdmissions(res *scheduler.Result, now time.Time, p *plan) []scheduler.Assignment {
	if len(s.st.virtual) == 0 {
		return res.Scheduled
	}
	pods := make([]scheduler.Assignment, 0, len(res.Scheduled))
	for _, a := range res.Scheduled {
		ps := s.st.virtual[a.Job.ID]
		if ps == nil {
			pods = append(pods, a)
			continue
		}
		sj := s.st.suspended[ps.admit]
		if ps.kind != kindQueued || sj == nil {
			continue
		}
		s.st.store.Remove(a.Job.ID)
		ps.kind, ps.node, ps.req = kindHeld, a.Node, a.Job.Requests
		if !sj.admitted {
			sj.admitted, sj.until = true, now.Add(AdmitHold)
			p.admits = append(p.admits, sj.w)
		}
	}
	for _, u := range res.UnscheduledJobs {
		if u.Job == nil {
			continue
		}
		if ps := s.st.virtual[u.Job.ID]; ps != nil && ps.kind == kindQueued {
			s.notAdmitted(ps, unschedulableMessage(u.Reason), p)
		}
	}
	for _, ps := range s.st.virtual {
		if ps.kind == kindInvalid && ps.err != nil {
			s.notAdmitted(ps, problems(ps.err), p)
		}
	}
	return pods
}

// notAdmitted adds an EventNotAdmitted on the placeholder's Job unless it
// was the last one written.
func (s *Scheduler) notAdmitted(ps *podState, msg string, p *plan) {
	sj := s.st.suspended[ps.admit]
	if sj == nil || sj.shown == msg {
		return
	}
	sj.shown = msg
	p.notAdmitted = append(p.notAdmitted, jobEvent{obj: sj.w.obj, message: msg})
}

type jobEvent struct {
	obj     runtime.Object
	message string
}

// admit unsuspends a workload (a merge patch). On failure its
// placeholders are queued again, for a later cycle.
func (s *Scheduler) admit(ctx context.Context, w suspendable) error {
	var err error
	if w.kind == "Job" {
		err = noretry.PatchJob(ctx, s.client, w.namespace, w.name, types.MergePatchType, []byte(`{"spec":{"suspend":false}}`))
	} else {
		// The dynamic client has no way to turn client-go's retries
		// off: a 429 with Retry-After may be slept through here.
		_, err = s.cfg.Dynamic.Resource(w.gvr).Namespace(w.namespace).Patch(ctx, w.name, types.MergePatchType, w.unsuspend, metav1.PatchOptions{})
	}
	if err != nil {
		s.mu.Lock()
		if sj := s.st.suspended[w.uid]; sj != nil {
			sj.admitted = false
			s.syncWorkload(sj.w, false)
		}
		s.mu.Unlock()
		return fmt.Errorf("unsuspend %s %s/%s: %w", w.kind, w.namespace, w.name, err)
	}
	s.recorder.Eventf(w.obj, corev1.EventTypeNormal, EventAdmitted, "admitted by %s: its %d pods fit", s.cfg.SchedulerName, w.pods())
	return nil
}

func podsAtOnce(j *batchv1.Job) int32 {
	n := int32(1)
	if j.Spec.Parallelism != nil {
		n = *j.Spec.Parallelism
	}
	if j.Spec.Completions != nil {
		n = min(n, *j.Spec.Completions)
	}
	return n
}
