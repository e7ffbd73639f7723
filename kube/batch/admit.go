package batch

import (
	"context"
	"fmt"
	"strconv"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
	job      *batchv1.Job
	keys     []string
	admitted bool
	until    time.Time
	// released: its room was let go (releaseAdmissions); the entry stays
	// until the informer shows the Job unsuspended.
	released bool
	// shown is the last EventNotAdmitted message written.
	shown string
}

// admissible reports whether a Job takes the suspend path: suspended,
// its pods ours, a queue label (flotilla.dev/queue or Kueue's) on it, not
// being deleted.
func (s *Scheduler) admissible(j *batchv1.Job) bool {
	if j.DeletionTimestamp != nil || j.Spec.Suspend == nil || !*j.Spec.Suspend || j.Spec.Template.Spec.SchedulerName != s.cfg.SchedulerName {
		return false
	}
	_, flo := j.Labels[kubeconv.LabelQueue]
	_, kueue := j.Labels[kubeconv.LabelKueueQueue]
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
	s.syncJob(j, deleted)
}

// syncJob keeps a Job's placeholders up to date. Called with mu held.
func (s *Scheduler) syncJob(j *batchv1.Job, deleted bool) {
	sj := s.st.suspended[j.UID]
	if sj != nil && sj.admitted && !deleted {
		if sj.released && (j.Spec.Suspend == nil || !*j.Spec.Suspend) {
			// Seen unsuspended: a later suspension is a new admission.
			delete(s.st.suspended, j.UID)
			return
		}
		// Its pods are coming (releaseAdmissions lets go), or the
		// informer still shows it suspended: never admitted twice.
		sj.job = j
		return
	}
	if sj != nil {
		s.dropPlaceholders(sj)
		delete(s.st.suspended, j.UID)
	}
	n := int64(podsAtOnce(j))
	if deleted || !s.admissible(j) || s.st.store == nil || n <= 0 {
		return
	}
	sj = &suspendedJob{job: j}
	s.st.suspended[j.UID] = sj
	owner := &kubeconv.Owner{
		Kind: "Job", Namespace: j.Namespace, Name: j.Name, UID: j.UID,
		Labels: j.Labels, Annotations: j.Annotations, JobSet: j.Namespace + "/Job/" + j.Name,
	}
	if n > 1 {
		// Admitted whole (Kueue's way), whatever its pods are then.
		owner.Gang = flotilla.Gang{ID: owner.JobSet + "@" + string(j.UID) + "#admit", Cardinality: int(n)}
	}
	for i := range n {
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{
				Name: j.Name + admitSep + strconv.FormatInt(i, 10), Namespace: j.Namespace,
				Labels: j.Spec.Template.Labels, Annotations: j.Spec.Template.Annotations,
				CreationTimestamp: j.CreationTimestamp,
			},
			Spec: j.Spec.Template.Spec,
		}
		key := kubeconv.JobID(p)
		sj.keys = append(sj.keys, key)
		ps := &podState{pod: p, owner: owner, admit: j.UID}
		s.st.virtual[key] = ps
		var kueue *int32
		if class := kubeconv.KueuePriorityClass(p, owner); class != "" && s.cfg.Dynamic != nil {
			e, ok := s.st.prios[class]
			if !ok {
				ps.kind = kindInvalid // read at the next cycle's start
				continue
			}
			if e.err != nil {
				ps.kind, ps.err = kindInvalid, e.err
				continue
			}
			kueue = &e.value
		}
		job, err := kubeconv.JobOf(p, s.schema, owner, kueue)
		if err != nil {
			ps.kind, ps.err = kindInvalid, err
			continue
		}
		job.Gang = flotilla.Gang{ID: owner.Gang.ID, Cardinality: owner.Gang.Cardinality, NodeUniformityLabel: job.Gang.NodeUniformityLabel}
		if err := s.st.store.Add(&job); err != nil {
			ps.kind, ps.err = kindInvalid, err
			continue
		}
		ps.kind, ps.job = kindQueued, &job
	}
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
		if ref := kubeconv.ControllerRef(ps.pod.OwnerReferences); ref != nil && ps.kind == kindQueued {
			if sj := s.st.suspended[ref.UID]; sj != nil && sj.admitted && !sj.released {
				pods[ref.UID] = append(pods[ref.UID], ps)
			}
		}
	}
	var binds []bindUnit
	for uid, sj := range s.st.suspended {
		if !sj.admitted || sj.released {
			continue
		}
		mine := pods[uid]
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

// bindIntoHeld pairs the Job's pods with its placeholders' nodes and
// marks them bound there, if every pod's request fits what its
// placeholder holds. Called with mu held.
func (s *Scheduler) bindIntoHeld(sj *suspendedJob, pods []*podState) (bindUnit, bool) {
	var b bindUnit
	for i, ps := range pods {
		held := s.st.virtual[sj.keys[i]]
		if held == nil || held.kind != kindHeld {
			return bindUnit{}, false
		}
		for r, v := range ps.job.Requests {
			if v > held.req[r] {
				return bindUnit{}, false
			}
		}
		b.pods = append(b.pods, ps.pod)
		b.nodes = append(b.nodes, held.node)
	}
	for i, ps := range pods {
		key := kubeconv.JobID(ps.pod)
		s.st.store.Remove(key)
		s.st.bound[key] = b.nodes[i]
		ps.kind, ps.node, ps.req = kindHeld, b.nodes[i], ps.job.Requests
	}
	return b, true
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
			p.admits = append(p.admits, sj.job)
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
	p.notAdmitted = append(p.notAdmitted, jobEvent{job: sj.job, message: msg})
}

type jobEvent struct {
	job     *batchv1.Job
	message string
}

// admit unsuspends a Job (one request). On failure its placeholders are
// queued again, for a later cycle.
func (s *Scheduler) admit(ctx context.Context, j *batchv1.Job) error {
	err := noretry.PatchJob(ctx, s.client, j.Namespace, j.Name, types.MergePatchType, []byte(`{"spec":{"suspend":false}}`))
	if err != nil {
		s.mu.Lock()
		if sj := s.st.suspended[j.UID]; sj != nil {
			sj.admitted = false
			s.syncJob(sj.job, false)
		}
		s.mu.Unlock()
		return fmt.Errorf("unsuspend Job %s/%s: %w", j.Namespace, j.Name, err)
	}
	s.recorder.Eventf(j, corev1.EventTypeNormal, EventAdmitted, "admitted by %s: its %d pods fit", s.cfg.SchedulerName, podsAtOnce(j))
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
