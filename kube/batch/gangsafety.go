package batch

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/kube/kubeconv"
	"github.com/flotilla-sched/flotilla/scheduler"
)

// EventGangRolledBack is the reason of the Warning event on each running
// member of a gang that a cycle rolls back (see settleGangs).
const EventGangRolledBack = "FlotillaGangRolledBack"

// restPrefix starts the gang ID of the pending members of a gang that
// already has running members (restPrefix + its ID): they are placed
// together, all or none. Every gang ID read from a pod starts with the
// pod's namespace and "/", and a namespace holds no "#": no gang of a
// pod is named so (a suffix was: an annotation's gang "g#rest").
const restPrefix = "rest#"

// labelRayNodeType is KubeRay's pod label; its head pod says "head".
const labelRayNodeType = "ray.io/node-type"

// labelRayGroup is KubeRay's pod label naming its worker group (the
// head's says "headgroup").
const labelRayGroup = "ray.io/group"

// settleGangs regroups the pending members of gangs before the snapshot
// and rolls back the gangs that cannot be finished. Called with mu held.
//
//   - A gang with no running member keeps its gang; a workload's gang
//     with more pending pods than its cardinality (a RayCluster's workers
//     beyond minReplicas) is its first cardinality pods, the Ray head and
//     then the oldest first, and the others are lone jobs of its job set.
//   - A gang with running members (placed by an earlier cycle, of this
//     leader or the last, whose binding was cut short; or a replacement
//     for a failed member), or a Job's gang with succeeded members
//     (doneMembers: its replacements), is partly bound: its pending members, up to
//     the members it lacks, are one gang of their own ("rest#" + ID),
//     placed all or none on the nodes the running members' uniformity
//     label allows; the pods beyond are lone jobs.
//   - A partly bound gang that cannot be finished is rolled back: its
//     running members are evicted (as preempted pods, with their grace
//     period; their controller recreates them) and its pending members
//     wait for the whole gang again. It cannot be finished when a running
//     member's Node object is gone, when a pending member was deleted
//     while the gang was partly bound (state.broken), when its running
//     members' nodes share no value of its node uniformity label
//     (uniformity), or when a cycle leaves its remaining members
//     unscheduled (plan, rollsBack).
//
// It returns the rollbacks' evictions and how many gangs it rolled back.
func (s *Scheduler) settleGangs(now time.Time) ([]evictTask, int) {
	pending := map[string][]*podState{}
	placed := map[string]int{}
	gone := map[string]string{}
	for key, ps := range s.st.pods {
		switch {
		case ps.kind == kindQueued && ps.orig != nil && ps.orig.Gang.ID != "":
			pending[ps.orig.Gang.ID] = append(pending[ps.orig.Gang.ID], ps)
		case ps.kind == kindHeld && ps.orig != nil && ps.orig.Gang.ID != "" && !s.st.evicting[key]:
			// Placed by this leader; the informer does not show it yet.
			if _, ok := s.st.bound[key]; ok {
				placed[ps.orig.Gang.ID]++
			} else if _, ok := s.st.nominated[key]; ok {
				placed[ps.orig.Gang.ID]++
			}
		case ps.kind == kindRunning && ps.counted != "":
			if _, ok := s.st.nodes[ps.node]; !ok && s.nodeGone(ps.node) {
				gone[ps.counted] = fmt.Sprintf("node %s of its member %s is gone", ps.node, key)
			}
		}
	}
	var evicts []evictTask
	rolled := 0
	rollback := func(id, why string) {
		if ev := s.rollback(id, why, now); len(ev) > 0 {
			evicts = append(evicts, ev...)
			rolled++
		}
	}
	for _, id := range slices.Sorted(maps.Keys(gone)) {
		rollback(id, gone[id])
	}
	for _, id := range slices.Sorted(maps.Keys(s.st.broken)) {
		if why := s.st.broken[id]; s.st.gangRunning[id] > 0 && gone[id] == "" {
			rollback(id, why)
		}
		if s.st.gangRunning[id] == 0 {
			// Rolled back (or no longer running); a member a budget
			// protects keeps it broken until its retry time.
			delete(s.st.broken, id)
		}
	}
	var partly []string
	for id := range pending {
		if s.st.gangRunning[id] > 0 {
			partly = append(partly, id)
		}
	}
	slices.Sort(partly)
	domain := map[string]map[string]string{}
	for _, id := range partly {
		sel, why := s.uniformity(id, pending[id][0].orig.Gang.NodeUniformityLabel)
		if why != "" {
			rollback(id, why)
		}
		domain[id] = sel
	}
	for id, members := range pending {
		g := members[0].orig.Gang
		running := s.st.gangRunning[id] + placed[id] + s.doneMembers(id, members[0])
		if running > 0 || len(members) > g.Cardinality {
			// Which pods are members depends on their order.
			slices.SortFunc(members, olderMember)
		}
		if running == 0 {
			keep := len(members)
			if w := members[0].owner; w != nil && w.Gang.ID == id {
				keep = min(keep, g.Cardinality)
			}
			for i, ps := range members {
				if i < keep {
					s.regroup(ps, g, "", nil)
				} else {
					s.regroup(ps, flotilla.Gang{}, "", nil)
				}
			}
			continue
		}
		need := max(g.Cardinality-running, 0)
		rest := flotilla.Gang{}
		if n := min(need, len(members)); n > 1 {
			rest = flotilla.Gang{ID: restPrefix + id, Cardinality: n}
		}
		sel := domain[id]
		for i, ps := range members {
			if i < need {
				s.regroup(ps, rest, id, sel)
			} else {
				s.regroup(ps, flotilla.Gang{}, "", nil)
			}
		}
	}
	return evicts, rolled
}

// olderMember orders a gang's pending pods: a Ray head first, then by
// creation, then by name.
func olderMember(a, b *podState) int {
	ah, bh := a.pod.Labels[labelRayNodeType] == "head", b.pod.Labels[labelRayNodeType] == "head"
	if ah != bh {
		if ah {
			return -1
		}
		return 1
	}
	if c := a.pod.CreationTimestamp.Compare(b.pod.CreationTimestamp.Time); c != 0 {
		return c
	}
	return cmp.Compare(a.pod.Name, b.pod.Name)
}

// nodeGone reports whether the node's object is gone (not merely one
// Flotilla cannot read). Called with mu held.
func (s *Scheduler) nodeGone(name string) bool {
	if s.nodes == nil {
		return false
	}
	_, err := s.nodes.Get(name)
	return apierrors.IsNotFound(err)
}

// uniformity is the node selector that keeps the rest of a gang in the
// domain of its running members: their nodes' value of label. When they
// do not share one (a member's node lacks the label, or two differ: a
// node relabelled since), no domain holds the whole gang, and why says
// so: the gang cannot be finished. Called with mu held.
func (s *Scheduler) uniformity(id, label string) (map[string]string, string) {
	if label == "" {
		return nil, ""
	}
	var members []string
	for key, ps := range s.st.pods {
		if ps.kind == kindRunning && ps.counted == id {
			members = append(members, key)
		}
	}
	slices.Sort(members)
	value, node := "", ""
	for _, key := range members {
		ps := s.st.pods[key]
		n := s.st.nodes[ps.node]
		if n == nil {
			continue
		}
		v, ok := n.Labels[label]
		switch {
		case !ok:
			return nil, fmt.Sprintf("node %s of its member %s has no label %s, its node uniformity label", ps.node, key, label)
		case node != "" && v != value:
			return nil, fmt.Sprintf("its running members are on nodes of different %s values (%s: %q, %s: %q)", label, node, value, ps.node, v)
		}
		value, node = v, ps.node
	}
	if node == "" {
		return nil, ""
	}
	return map[string]string{label: value}, ""
}

// regroup queues ps's job with gang g (and the extra node selector sel),
// rest naming the partly bound gang it finishes ("" for none), unless it
// is queued so already. Called with mu held.
func (s *Scheduler) regroup(ps *podState, g flotilla.Gang, rest string, sel map[string]string) {
	if ps.job.Gang == g && ps.rest == rest && selects(ps.job.NodeSelector, sel) {
		return
	}
	j := *ps.orig
	j.Gang = g
	if len(sel) > 0 {
		j.NodeSelector = maps.Clone(j.NodeSelector)
		if j.NodeSelector == nil {
			j.NodeSelector = map[string]string{}
		}
		maps.Copy(j.NodeSelector, sel)
	}
	s.st.store.Remove(j.ID)
	if err := s.st.store.Add(&j); err != nil {
		ps.kind, ps.job, ps.err = kindInvalid, nil, err
		return
	}
	ps.job, ps.rest = &j, rest
}

func selects(have, want map[string]string) bool {
	for k, v := range want {
		if have[k] != v {
			return false
		}
	}
	return true
}

// rollback evicts the running members of gang id, why naming the reason
// in their events; they are held (never running members) from now until
// the informer shows them gone, so its pending members wait for the whole
// gang again. A member whose eviction a PodDisruptionBudget refused keeps
// running until the refusal's retry time, as a preemption's victim does:
// a later cycle rolls the gang back then. Called with mu held.
func (s *Scheduler) rollback(id, why string, now time.Time) []evictTask {
	var out []evictTask
	for key, ps := range s.st.pods {
		if ps.kind != kindRunning || ps.counted != id {
			continue
		}
		if r, ok := s.st.refused[ps.pod.UID]; ok && now.Before(r.until) {
			continue
		}
		s.st.evicting[key] = true
		s.uncount(ps)
		ps.kind, ps.req = kindHeld, ps.job.Requests
		out = append(out, evictTask{pod: ps.pod, now: now, rollback: "gang " + id + " rolled back: " + why})
	}
	slices.SortFunc(out, func(a, b evictTask) int { return cmp.Compare(a.pod.Name, b.pod.Name) })
	return out
}

// rollsBack reports whether a partly bound gang whose remaining members a
// cycle left unscheduled for this reason is rolled back: every reason
// but the limits of one cycle (rate limits, the round's limit, the
// queue's lookback), which the next cycle lifts.
func rollsBack(c scheduler.ReasonCode) bool {
	switch c {
	case scheduler.ReasonGlobalRateLimit, scheduler.ReasonQueueRateLimit, scheduler.ReasonRoundLimit, scheduler.ReasonLookback:
		return false
	}
	return true
}

// rollBackUnfinished rolls back the partly bound gangs whose remaining
// members the result left unscheduled (rollsBack). Called with mu held,
// from plan.
func (s *Scheduler) rollBackUnfinished(res *scheduler.Result, now time.Time, p *plan, rep *Report) {
	done := map[string]bool{}
	for _, u := range res.UnscheduledJobs {
		if u.Job == nil {
			continue
		}
		ps := s.st.pods[u.Job.ID]
		if ps == nil || ps.kind != kindQueued || ps.rest == "" || done[ps.rest] || !rollsBack(u.Reason.Code) {
			continue
		}
		done[ps.rest] = true
		if s.st.gangRunning[ps.rest] == 0 {
			continue
		}
		why := fmt.Sprintf("its remaining members cannot be placed (%s)", unschedulableMessage(u.Reason))
		if ev := s.rollback(ps.rest, why, now); len(ev) > 0 {
			p.evicts = append(p.evicts, ev...)
			rep.RolledBack++
		}
	}
}

// noteBroken records a pending member of a partly bound gang that is gone
// without being bound (deleted): the gang cannot be finished as it is,
// and the next cycle rolls it back. Called with mu held.
func (s *Scheduler) noteBroken(old *podState, p *corev1.Pod) {
	if old == nil || old.kind != kindQueued || old.orig == nil || old.orig.Gang.ID == "" {
		return
	}
	id := old.orig.Gang.ID
	if s.st.gangRunning[id] == 0 {
		return
	}
	s.st.broken[id] = "its pending member " + kubeconv.JobID(p) + " was deleted"
}

// rollbackMessage is the event of an evicted member of a rolled back
// gang.
func rollbackMessage(schedulerName, why string) string {
	return strings.TrimSpace(fmt.Sprintf("evicted by %s: %s; its controller recreates it, and the gang is placed whole again", schedulerName, why))
}
