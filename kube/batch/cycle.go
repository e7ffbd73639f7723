package batch

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/kube/internal/noretry"
	"github.com/flotilla-sched/flotilla/kube/kubeconv"
	"github.com/flotilla-sched/flotilla/scheduler"
)

// Report is what one cycle decided and did.
type Report struct {
	// Result is the scheduler's decision.
	Result *scheduler.Result
	// Bound counts the pods bound; BindFailed those whose binding (or a
	// gang mate's) failed, which are pending again.
	Bound, BindFailed int
	// Evicted counts the pods evicted; EvictFailed the evictions that
	// failed (a PodDisruptionBudget's refusal among them).
	Evicted, EvictFailed int
	// EvictDeferred counts the running pods the cycle passed over as
	// victims (scheduler.Running.Protected) because a PodDisruptionBudget
	// refused their eviction and the time to try it again has not come:
	// they keep running, and the scheduler looks for other victims.
	EvictDeferred int
	// Blocked counts the pods whose PodScheduled=False condition names
	// refused evictions: those placed this cycle whose victims' eviction
	// was just refused (reason ReasonPreemptionBlocked), and the
	// unschedulable pods such victims could have made room for (reason
	// ReasonUnschedulable).
	Blocked int
	// Waiting counts the pods placed on a node whose preempted pods have
	// not terminated yet: they are bound by a later cycle.
	Waiting int
	// Conditions counts the PodScheduled=False conditions written.
	Conditions int
	// Owners, Decided and Acted split the cycle's time, by the configured
	// clock: reading the owners of new pods (API calls), deciding (the
	// snapshot, the scheduler, the plan: no API call), and acting (the
	// cycle's API calls).
	Owners, Decided, Acted time.Duration
	// RolledBack counts the partly bound gangs rolled back: their running
	// members evicted (counted in Evicted), their pending members waiting
	// for the whole gang again (see the package documentation).
	RolledBack int
	// Admitted counts the suspended Jobs unsuspended (AdmitFailed those
	// whose patch failed: they are queued again).
	Admitted, AdmitFailed int
	// EvictionsTook is how long, from the start of the cycle's API calls,
	// the last eviction took to return (evictions are issued first).
	EvictionsTook time.Duration
	// Errors are the API calls that failed, one per pod.
	Errors []error
}

// nomination is a pod placed on a node where it waits for preempted pods
// to terminate, as kube-scheduler's nominatedNodeName.
type nomination struct {
	node    string
	victims map[string]bool
	until   time.Time
}

type bindUnit struct {
	pods  []*corev1.Pod
	nodes []string
}

type evictTask struct {
	pod    *corev1.Pod
	reason scheduler.PreemptionReason
	by     string
	// now is the cycle's time, from which a refusal's retry time counts.
	now time.Time
	// rollback, for a member of a gang rolled back, says why (the
	// event's message); empty for a preempted pod.
	rollback string
}

type condTask struct {
	pod             *corev1.Pod
	reason, message string
	// event is the Warning event's reason; empty means
	// EventFailedScheduling.
	event string
	// node and victims, for a pod waiting for preemption, are where it is
	// placed and the pods it waits for: if a PodDisruptionBudget refuses
	// one's eviction, the condition says so instead.
	node    string
	victims []string
}

type plan struct {
	binds  []bindUnit
	evicts []evictTask
	conds  []condTask
	// admits are the suspended Jobs to unsuspend; notAdmitted the
	// events saying why others stay suspended.
	admits      []suspendable
	notAdmitted []jobEvent
}

// Cycle runs one scheduling cycle: it snapshots the informers' state,
// calls scheduler.Schedule, and acts: evictions, bindings (a gang all or
// none), conditions. It returns when every API call it made has returned.
func (s *Scheduler) Cycle(ctx context.Context) (*Report, error) {
	s.mu.Lock()
	if s.st.classesDirty || s.st.store == nil {
		if err := s.rebuildClasses(); err != nil {
			s.mu.Unlock()
			return nil, err
		}
	}
	s.mu.Unlock()
	start := s.cfg.Now()
	s.resolveOwners(ctx)
	s.mu.Lock()
	now := s.cfg.Now()
	s.releaseNominations(now)
	admitted := s.releaseAdmissions(now)
	s.expireRefusals(now)
	// After the pods queued again above (a partly bound gang's rest
	// whose victims are gone), which are queued with their whole gang.
	rollbacks, rolled := s.settleGangs(now)
	snap, protected := s.snapshot()
	res, err := s.st.sched.Schedule(ctx, snap, now)
	if err != nil {
		s.mu.Unlock()
		return nil, err
	}
	s.st.rateLimits = res.RateLimits
	s.st.usage = res.Usage
	s.st.seed++
	rep := &Report{Result: res, EvictDeferred: protected}
	p := s.plan(res, snap, now, rep)
	rep.RolledBack += rolled
	p.evicts = append(rollbacks, p.evicts...)
	p.binds = append(admitted, p.binds...)
	s.mu.Unlock()
	acting := s.cfg.Now()
	rep.Owners, rep.Decided = now.Sub(start), acting.Sub(now)
	s.execute(ctx, p, rep)
	rep.Acted = s.cfg.Now().Sub(acting)
	return rep, nil
}

// snapshot builds the cycle's snapshot, and counts the running pods it
// protects: those whose eviction a PodDisruptionBudget refused and whose
// retry time has not come (expireRefusals forgot the others) are
// scheduler.Running.Protected, so the cycle looks for other victims.
// Called with mu held.
func (s *Scheduler) snapshot() (*scheduler.Snapshot, int) {
	held := map[string]flotilla.Resources{}
	var running []scheduler.Running
	protected := 0
	queues := map[string]bool{}
	for _, ps := range s.st.pods {
		if _, ok := s.st.nodes[ps.node]; !ok {
			continue
		}
		switch ps.kind {
		case kindRunning:
			_, refused := s.st.refused[ps.pod.UID]
			if refused {
				protected++
			}
			running = append(running, scheduler.Running{Job: ps.job, Node: ps.node, Start: startOf(ps.pod), Protected: refused})
			queues[ps.job.Queue] = true
		case kindHeld:
			if ps.req != nil {
				addTo(held, ps.node, ps.req, s.schema)
			}
		}
	}
	for _, ps := range s.st.virtual {
		// The room of admitted Jobs, until their pods exist.
		if _, ok := s.st.nodes[ps.node]; ok && ps.kind == kindHeld {
			addTo(held, ps.node, ps.req, s.schema)
		}
	}
	slices.SortFunc(running, func(a, b scheduler.Running) int { return cmp.Compare(a.Job.ID, b.Job.ID) })
	names := make([]string, 0, len(s.st.nodes))
	for name := range s.st.nodes {
		names = append(names, name)
	}
	slices.Sort(names)
	nodes := make([]*flotilla.Node, len(names))
	for i, name := range names {
		n := *s.st.nodes[name]
		n.Total = n.Total.Clone()
		if h := held[name]; h != nil {
			n.Total.Sub(h)
		}
		for r := range n.Total {
			// An over-committed node (allocatable shrank, pods bound
			// around the scheduler) goes as it is: the core takes it
			// as full (scheduler.Result.OverCommitted).
			n.Total[r] = max(n.Total[r], 0)
		}
		nodes[i] = &n
	}
	for _, q := range s.st.store.Queues() {
		queues[q] = true
	}
	var qs []*flotilla.Queue
	for _, q := range s.cfg.Queues {
		qs = append(qs, q)
		delete(queues, q.Name)
	}
	extra := make([]string, 0, len(queues))
	for q := range queues {
		extra = append(extra, q)
	}
	slices.Sort(extra)
	for _, q := range extra {
		qs = append(qs, &flotilla.Queue{Name: q, PriorityFactor: 1})
	}
	return &scheduler.Snapshot{
		Nodes: nodes, Groups: s.cfg.Groups, Queues: qs, Running: running, Queued: s.st.store,
		RateLimits: s.st.rateLimits, Usage: s.st.usage, Seed: s.cfg.Seed + s.st.seed,
	}, protected
}

func addTo(m map[string]flotilla.Resources, node string, r flotilla.Resources, schema *flotilla.ResourceSchema) {
	v := m[node]
	if v == nil {
		v = schema.Zero()
		m[node] = v
	}
	v.AddSaturating(r)
}

func startOf(p *corev1.Pod) time.Time {
	if p.Status.StartTime != nil {
		return p.Status.StartTime.Time
	}
	return p.CreationTimestamp.Time
}

// releaseNominations returns to the queue the pods whose victims are gone
// (or that waited past their deadline). Called with mu held.
func (s *Scheduler) releaseNominations(now time.Time) {
	for key, nom := range s.st.nominated {
		for v := range nom.victims {
			if _, ok := s.st.pods[v]; !ok {
				delete(nom.victims, v)
			}
		}
		if len(nom.victims) > 0 && now.Before(nom.until) {
			continue
		}
		delete(s.st.nominated, key)
		if ps := s.st.pods[key]; ps != nil {
			s.sync(ps.pod)
		}
	}
}

// plan turns the result into API calls and updates the state so the next
// cycle does not decide the same again before the informers catch up.
// Called with mu held.
func (s *Scheduler) plan(res *scheduler.Result, snap *scheduler.Snapshot, now time.Time, rep *Report) *plan {
	p := &plan{}
	victimsOn := map[string][]string{}
	var grace int64
	for _, pr := range res.Preempted {
		ps := s.st.pods[pr.Job.ID]
		if ps == nil || ps.kind != kindRunning {
			continue
		}
		s.st.evicting[pr.Job.ID] = true
		ps.kind, ps.req = kindHeld, ps.job.Requests
		victimsOn[ps.node] = append(victimsOn[ps.node], pr.Job.ID)
		if g := ps.pod.Spec.TerminationGracePeriodSeconds; g != nil {
			grace = max(grace, *g)
		}
		by := ""
		if pr.For != nil {
			by = pr.For.ID
		}
		p.evicts = append(p.evicts, evictTask{pod: ps.pod, reason: pr.Reason, by: by, now: now})
	}
	// Group the assignments into units: a gang's members together.
	var units [][]scheduler.Assignment
	gangAt := map[string]int{}
	for _, a := range s.planAdmissions(res, now, p) {
		if id := a.Job.Gang.ID; id != "" {
			if i, ok := gangAt[id]; ok {
				units[i] = append(units[i], a)
				continue
			}
			gangAt[id] = len(units)
		}
		units = append(units, []scheduler.Assignment{a})
	}
	for _, u := range units {
		victims := map[string]bool{}
		for _, a := range u {
			for _, v := range victimsOn[a.Node] {
				victims[v] = true
			}
		}
		if len(victims) > 0 {
			until := now.Add(time.Duration(grace)*time.Second + 30*time.Second)
			for _, a := range u {
				ps := s.st.pods[a.Job.ID]
				if ps == nil || ps.kind != kindQueued {
					continue
				}
				s.st.store.Remove(a.Job.ID)
				s.st.nominated[a.Job.ID] = nomination{node: a.Node, victims: victims, until: until}
				ps.kind, ps.node, ps.req = kindHeld, a.Node, nil
				rep.Waiting++
				p.cond(s, ps.pod, ReasonWaitingForPreemption,
					fmt.Sprintf("placed on node %s; waiting for %d preempted pods to terminate", a.Node, len(victims)))
				if n := len(p.conds); n > 0 && p.conds[n-1].pod == ps.pod {
					p.conds[n-1].node = a.Node
					p.conds[n-1].victims = slices.Sorted(maps.Keys(victims))
				}
			}
			continue
		}
		var b bindUnit
		for _, a := range u {
			ps := s.st.pods[a.Job.ID]
			if ps == nil || ps.kind != kindQueued {
				continue
			}
			s.st.store.Remove(a.Job.ID)
			s.st.bound[a.Job.ID] = a.Node
			ps.kind, ps.node, ps.req = kindHeld, a.Node, a.Job.Requests
			b.pods = append(b.pods, ps.pod)
			b.nodes = append(b.nodes, a.Node)
		}
		if len(b.pods) > 0 {
			p.binds = append(p.binds, b)
		}
	}
	rooms := s.budgetRooms(snap)
	tv := s.newTreeView(res)
	for _, u := range res.UnscheduledJobs {
		if u.Job == nil {
			continue
		}
		if ps := s.st.pods[u.Job.ID]; ps != nil && ps.kind == kindQueued {
			msg := unschedulableMessage(u.Reason)
			if u.Reason.Code == scheduler.ReasonNoRoom {
				if refs := s.refusalsFor(u.Job, rooms); len(refs) > 0 {
					rep.Blocked++
					msg += "; " + keptMessage(refs)
				}
			}
			if u.Reason.Code == scheduler.ReasonGangIncomplete && ps.owner != nil && ps.owner.Gang.ID == u.Job.Gang.ID {
				msg += "; waiting for the rest of its pods to be created (" + ps.owner.GangBy + ")"
			}
			msg = tv.message(msg, u)
			p.cond(s, ps.pod, ReasonUnschedulable, msg)
		}
	}
	for _, ps := range s.st.pods {
		if ps.kind == kindInvalid && ps.err != nil {
			p.cond(s, ps.pod, ReasonInvalid, problems(ps.err))
		}
	}
	s.rollBackUnfinished(res, now, p, rep)
	return p
}

// unschedulableMessage is a pod's PodScheduled=False message: the
// reason, without the name of the identical job whose search the
// scheduling-key cache repeated for it (that job changes from cycle to
// cycle, why the pod does not fit does not), so that the condition and its
// event are written again only when the reason changes.
func unschedulableMessage(r scheduler.Reason) string {
	if s := r.Search; s != nil && s.SameAs != "" {
		of := ""
		if s.SameAsQueue != "" {
			of = " of queue " + s.SameAsQueue
		}
		r.Message = strings.TrimPrefix(r.Message, "same requirements as job "+s.SameAs+of+": ")
	} else if rest, ok := strings.CutPrefix(r.Message, "same requirements as job "); ok {
		// A reason without findings names the job too: cut at the first
		// ": " (a pod's ID holds none).
		if _, msg, ok := strings.Cut(rest, ": "); ok {
			r.Message = msg
		}
	}
	return r.String()
}

// problems renders every problem of err on one line.
func problems(err error) string {
	var parts []string
	for _, e := range flotilla.Problems(err) {
		parts = append(parts, e.Error())
	}
	return strings.Join(parts, "; ")
}

// cond adds a PodScheduled=False condition, with a FailedScheduling
// event, unless the pod already shows it.
func (p *plan) cond(s *Scheduler, pod *corev1.Pod, reason, message string) {
	p.condEvent(s, pod, reason, message, "")
}

// condEvent adds a PodScheduled=False condition, with a Warning event of
// reason event (empty: EventFailedScheduling), unless the pod already
// shows it.
func (p *plan) condEvent(s *Scheduler, pod *corev1.Pod, reason, message, event string) {
	if s.showing(pod, reason, message) {
		return
	}
	p.conds = append(p.conds, condTask{pod: pod, reason: reason, message: message, event: event})
}

// showing reports whether the pod shows (or was last written) the
// condition, and records it as shown. Called with mu held.
func (s *Scheduler) showing(pod *corev1.Pod, reason, message string) bool {
	key := kubeconv.JobID(pod)
	want := shownCondition{reason: reason, message: message}
	if s.st.shown[key] == want {
		return true
	}
	s.st.shown[key] = want
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == reason && c.Message == message {
			return true
		}
	}
	return false
}

// refusedVictims turns the conditions of pods waiting for victims whose
// eviction a PodDisruptionBudget has just refused into
// ReasonPreemptionBlocked ones, naming the victims; a condition the pod
// already shows is dropped. Called after the evictions have returned.
func (s *Scheduler) refusedVictims(conds []condTask, rep *Report) []condTask {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.st.refused) == 0 {
		return conds
	}
	out := conds[:0]
	for _, c := range conds {
		var refs []refusal
		for _, v := range c.victims {
			if ps := s.st.pods[v]; ps != nil {
				if r, ok := s.st.refused[ps.pod.UID]; ok {
					refs = append(refs, r)
				}
			}
		}
		if len(refs) > 0 {
			rep.Blocked++
			c.reason, c.event = ReasonPreemptionBlocked, ReasonPreemptionBlocked
			c.message = blockedMessage(c.node, refs)
			if s.showing(c.pod, c.reason, c.message) {
				continue
			}
		}
		out = append(out, c)
	}
	return out
}

// execute makes the plan's API calls, at most BindWorkers at once:
// evictions first, then bindings; the conditions once the evictions and
// bindings have returned, so that a pod waiting for a victim whose
// eviction was refused says so at once.
func (s *Scheduler) execute(ctx context.Context, p *plan, rep *Report) {
	var mu sync.Mutex
	start := s.cfg.Now() // the configured clock, as every other time here
	var wg sync.WaitGroup
	workers := func(n int) chan<- func() {
		work := make(chan func())
		for range min(s.cfg.BindWorkers, n) {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for f := range work {
					f()
				}
			}()
		}
		return work
	}
	work := workers(len(p.binds) + len(p.evicts) + len(p.admits))
	fail := func(counter *int, err error) {
		mu.Lock()
		*counter++
		rep.Errors = append(rep.Errors, err)
		mu.Unlock()
	}
	for _, e := range p.evicts {
		work <- func() {
			defer func() {
				mu.Lock()
				rep.EvictionsTook = max(rep.EvictionsTook, s.cfg.Now().Sub(start))
				mu.Unlock()
			}()
			if err := s.evict(ctx, e); err != nil {
				fail(&rep.EvictFailed, err)
				return
			}
			mu.Lock()
			rep.Evicted++
			mu.Unlock()
		}
	}
	for _, b := range p.binds {
		work <- func() {
			n, err := s.bindUnit(ctx, b)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				rep.BindFailed += len(b.pods)
				rep.Errors = append(rep.Errors, err)
				return
			}
			rep.Bound += n
		}
	}
	for _, j := range p.admits {
		work <- func() {
			if err := s.admit(ctx, j); err != nil {
				fail(&rep.AdmitFailed, err)
				return
			}
			mu.Lock()
			rep.Admitted++
			mu.Unlock()
		}
	}
	close(work)
	wg.Wait()
	for _, e := range p.notAdmitted {
		s.recorder.Event(e.obj, corev1.EventTypeWarning, EventNotAdmitted, e.message)
	}
	if len(p.evicts) > 0 {
		p.conds = s.refusedVictims(p.conds, rep)
	}
	work = workers(len(p.conds))
	for _, c := range p.conds {
		work <- func() {
			if err := s.patchCondition(ctx, c); err != nil {
				mu.Lock()
				rep.Errors = append(rep.Errors, err)
				mu.Unlock()
				return
			}
			mu.Lock()
			rep.Conditions++
			mu.Unlock()
		}
	}
	close(work)
	wg.Wait()
}

// evict evicts a pod through the Eviction API with its termination grace
// period. On failure the pod is running again for the next cycle.
func (s *Scheduler) evict(ctx context.Context, e evictTask) error {
	ev := &policyv1.Eviction{
		ObjectMeta:    metav1.ObjectMeta{Name: e.pod.Name, Namespace: e.pod.Namespace},
		DeleteOptions: &metav1.DeleteOptions{GracePeriodSeconds: e.pod.Spec.TerminationGracePeriodSeconds},
	}
	err := s.postEviction(ctx, ev)
	key := kubeconv.JobID(e.pod)
	if err != nil {
		s.mu.Lock()
		if r, ok := refusalOf(key, e.pod.Spec.NodeName, err, e.now); ok {
			s.st.refused[e.pod.UID] = r
		}
		delete(s.st.evicting, key)
		for _, nom := range s.st.nominated {
			delete(nom.victims, key)
		}
		if ps := s.st.pods[key]; ps != nil {
			s.sync(ps.pod)
		}
		s.mu.Unlock()
		return fmt.Errorf("evict %s: %w", key, err)
	}
	if e.rollback != "" {
		s.recorder.Event(e.pod, corev1.EventTypeWarning, EventGangRolledBack, rollbackMessage(s.cfg.SchedulerName, e.rollback))
		return nil
	}
	msg := fmt.Sprintf("Preempted by %s (%s)", s.cfg.SchedulerName, e.reason)
	if e.by != "" {
		msg += " for " + e.by
	}
	s.recorder.Event(e.pod, corev1.EventTypeNormal, "Preempted", msg)
	return nil
}

// postEviction posts ev to the Eviction API, without client-go's own
// retries (package noretry): client-go would otherwise sleep through a
// 429's Retry-After (the apiserver asks for 10 s while a budget's status
// is not computed yet) up to 10 times, holding the cycle, where the
// scheduler keeps the refusal and tries again after Retry-After.
func (s *Scheduler) postEviction(ctx context.Context, ev *policyv1.Eviction) error {
	return noretry.Evict(ctx, s.client, ev)
}

// bindUnit binds a unit's pods in order. If one fails, the members bound
// already are deleted (with their grace period) and the others are
// pending again: a gang is bound all or none. Each binding and delete is
// one request, never retried by client-go (package noretry).
func (s *Scheduler) bindUnit(ctx context.Context, b bindUnit) (int, error) {
	var err error
	done := 0
	for i, pod := range b.pods {
		binding := &corev1.Binding{
			ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace, UID: pod.UID},
			Target:     corev1.ObjectReference{Kind: "Node", Name: b.nodes[i]},
		}
		if err = noretry.Bind(ctx, s.client, binding); err != nil {
			err = fmt.Errorf("bind %s to %s: %w", kubeconv.JobID(pod), b.nodes[i], err)
			break
		}
		done++
	}
	if err == nil {
		for i, pod := range b.pods {
			s.recorder.Eventf(pod, corev1.EventTypeNormal, "Scheduled", "Successfully assigned %s to %s", kubeconv.JobID(pod), b.nodes[i])
		}
		return done, nil
	}
	var errs = []error{err}
	// The members bound are being deleted: held, never running members
	// of their gang (whose other pods would then be scheduled alone, as
	// replacements), from before the deletes until the informer shows
	// them gone.
	s.mu.Lock()
	for _, pod := range b.pods[:done] {
		key := kubeconv.JobID(pod)
		s.st.evicting[key] = true
		if ps := s.st.pods[key]; ps != nil {
			s.sync(ps.pod)
		}
	}
	s.mu.Unlock()
	var kept []*corev1.Pod
	for _, pod := range b.pods[:done] {
		opts := metav1.DeleteOptions{GracePeriodSeconds: pod.Spec.TerminationGracePeriodSeconds}
		if derr := noretry.DeletePod(ctx, s.client, pod.Namespace, pod.Name, opts); derr != nil {
			errs = append(errs, fmt.Errorf("delete %s after its gang failed to bind: %w", kubeconv.JobID(pod), derr))
			kept = append(kept, pod)
			continue
		}
		s.recorder.Eventf(pod, corev1.EventTypeWarning, "FailedScheduling", "deleted: a member of its gang failed to bind: %v", err)
	}
	s.mu.Lock()
	for _, pod := range kept {
		// Still bound: a running member again; the gang is partly bound,
		// and the next cycle finishes it or rolls it back (settleGangs).
		key := kubeconv.JobID(pod)
		delete(s.st.evicting, key)
		if ps := s.st.pods[key]; ps != nil {
			s.sync(ps.pod)
		}
	}
	for _, pod := range b.pods[done:] {
		key := kubeconv.JobID(pod)
		delete(s.st.bound, key)
		if ps := s.st.pods[key]; ps != nil {
			s.sync(ps.pod)
		}
	}
	s.mu.Unlock()
	return 0, errors.Join(errs...)
}

// patchCondition writes PodScheduled=False with reason and message (one
// request, never retried by client-go: package noretry), and the matching
// Warning event, as kube-scheduler does. A failed patch is written again
// by a later cycle.
func (s *Scheduler) patchCondition(ctx context.Context, c condTask) error {
	patch := map[string]any{"status": map[string]any{"conditions": []map[string]any{{
		"type": corev1.PodScheduled, "status": corev1.ConditionFalse,
		"reason": c.reason, "message": c.message,
		"lastTransitionTime": metav1.NewTime(s.cfg.Now()).Rfc3339Copy(),
	}}}}
	data, err := json.Marshal(patch)
	if err != nil {
		return err
	}
	if err = noretry.PatchPodStatus(ctx, s.client, c.pod.Namespace, c.pod.Name, types.StrategicMergePatchType, data); err != nil {
		s.mu.Lock()
		delete(s.st.shown, kubeconv.JobID(c.pod))
		s.mu.Unlock()
		return fmt.Errorf("patch condition of %s: %w", kubeconv.JobID(c.pod), err)
	}
	event := c.event
	if event == "" {
		event = EventFailedScheduling
	}
	s.recorder.Event(c.pod, corev1.EventTypeWarning, event, c.message)
	return nil
}
