package batch

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/scheduler"
)

// DefaultRefusalRetry is how long a victim whose eviction a
// PodDisruptionBudget refused is left alone when the answer suggests no
// delay (the apiserver sends none when the budget allows no disruption).
const DefaultRefusalRetry = 10 * time.Second

// MaxRefusalRetry caps the delay an answer's Retry-After asks for.
const MaxRefusalRetry = 5 * time.Minute

// refusal is an eviction a PodDisruptionBudget refused.
type refusal struct {
	// key is the victim's "namespace/name".
	key string
	// node is where the victim runs.
	node string
	// until is when its eviction may be tried again.
	until time.Time
	// detail is the apiserver's reason (the budget's cause when given).
	detail string
}

// refusalOf reads err as a PodDisruptionBudget's refusal of the eviction
// of the pod key, on node, made at now: HTTP 429 TooManyRequests, which
// the Eviction API answers only when a budget forbids the disruption. The
// retry time is now plus the answer's Retry-After, DefaultRefusalRetry
// without one, at most MaxRefusalRetry.
func refusalOf(key, node string, err error, now time.Time) (refusal, bool) {
	if !apierrors.IsTooManyRequests(err) {
		return refusal{}, false
	}
	delay := DefaultRefusalRetry
	if secs, ok := apierrors.SuggestsClientDelay(err); ok && secs > 0 {
		delay = min(time.Duration(secs)*time.Second, MaxRefusalRetry)
	}
	r := refusal{key: key, node: node, until: now.Add(delay)}
	var st apierrors.APIStatus
	if errors.As(err, &st) {
		s := st.Status()
		r.detail = s.Message
		if s.Details != nil {
			for _, c := range s.Details.Causes {
				if c.Type == policyv1.DisruptionBudgetCause && c.Message != "" {
					r.detail = c.Message
					break
				}
			}
		}
	}
	return r, true
}

// expireRefusals forgets the refusals whose retry time has come and those
// of pods that are gone (or no longer running). Called with mu held.
func (s *Scheduler) expireRefusals(now time.Time) {
	for uid, r := range s.st.refused {
		ps := s.st.pods[r.key]
		if !now.Before(r.until) || ps == nil || ps.pod.UID != uid || ps.kind != kindRunning {
			delete(s.st.refused, uid)
		}
	}
}

// blockedMessage is the PodScheduled=False message of a pod placed on
// node whose victims' eviction a PodDisruptionBudget has just refused:
// each victim, the budget's reason and when its eviction may be tried
// again.
func blockedMessage(node string, refs []refusal) string {
	return fmt.Sprintf("placed on node %s, but %s", node, refusalsMessage(refs, false))
}

// keptMessage is what the PodScheduled=False message of an unschedulable
// pod adds when refused victims could have made room for it (refusalsFor):
// each victim and its node, the budget's reason and when its eviction may
// be tried again.
func keptMessage(refs []refusal) string {
	return "room not counted: " + refusalsMessage(refs, true)
}

// refusalsMessage names refused evictions, sorted by pod, at most three.
func refusalsMessage(refs []refusal, withNode bool) string {
	slices.SortFunc(refs, func(a, b refusal) int { return strings.Compare(a.key, b.key) })
	const most = 3
	var parts []string
	for i, r := range refs {
		if i == most {
			parts = append(parts, fmt.Sprintf("and %d more", len(refs)-most))
			break
		}
		pod := r.key
		if withNode {
			pod += " on node " + r.node
		}
		detail := ""
		if r.detail != "" {
			detail = " (" + strings.TrimSuffix(r.detail, ".") + ")"
		}
		parts = append(parts, fmt.Sprintf("the eviction of %s was refused by a PodDisruptionBudget%s and is not tried again before %s",
			pod, detail, r.until.UTC().Format(time.RFC3339)))
	}
	return strings.Join(parts, "; ")
}

// budgetRoom is a node where victims whose eviction a PodDisruptionBudget
// refused run: its free room, and the running pods of preemptible
// classes on it, which an unschedulable pod might have preempted.
type budgetRoom struct {
	node  *flotilla.Node
	free  flotilla.Resources
	cands []budgetCand
}

// budgetCand is a running pod of a preemptible class.
type budgetCand struct {
	priority int32
	queue    string
	req      flotilla.Resources
	// refused is its refusal; nil when its eviction was not refused.
	refused *refusal
}

// budgetRooms indexes the snapshot's nodes where protected (refused)
// victims run, by name; nil when there are none. Called with mu held.
func (s *Scheduler) budgetRooms(snap *scheduler.Snapshot) []budgetRoom {
	if len(s.st.refused) == 0 {
		return nil
	}
	at := map[string]int{}
	for _, r := range snap.Running {
		if r.Protected {
			at[r.Node] = -1
		}
	}
	var rooms []budgetRoom
	for _, n := range snap.Nodes { // sorted by name
		if _, ok := at[n.Name]; ok {
			at[n.Name] = len(rooms)
			rooms = append(rooms, budgetRoom{node: n, free: n.Total.Clone()})
		}
	}
	for _, r := range snap.Running {
		i, ok := at[r.Node]
		if !ok || i < 0 {
			continue
		}
		rm := &rooms[i]
		rm.free.Sub(r.Job.Requests)
		if pc := s.classOf(r.Job.PriorityClass); pc.Preemptible {
			c := budgetCand{priority: pc.Priority, queue: r.Job.Queue, req: r.Job.Requests}
			if ps := s.st.pods[r.Job.ID]; r.Protected && ps != nil {
				if ref, ok := s.st.refused[ps.pod.UID]; ok {
					c.refused = &ref
				}
			}
			rm.cands = append(rm.cands, c)
		}
	}
	return rooms
}

// refusalsFor returns the refused victims that could have made room for
// an unschedulable job: those on a node that the job's node selector,
// tolerations and the node's cordon admit, where the free room does not
// hold the job, but the free room plus the requests of the running pods
// the job could preempt there (a preemptible class, and a lower priority
// than the job's, for urgency, or another queue, for fair share; the
// refused ones among them) does. It is cheap, not exact: the scheduler
// may have had other reasons to leave those pods running (another queue
// below its fair share, say). Called with mu held.
func (s *Scheduler) refusalsFor(j *flotilla.Job, rooms []budgetRoom) []refusal {
	if len(rooms) == 0 {
		return nil
	}
	prio := s.classOf(j.PriorityClass).Priority
	var out []refusal
	for i := range rooms {
		rm := &rooms[i]
		n := rm.node
		if n.Unschedulable || !flotilla.SelectorMatches(j.NodeSelector, n.Labels) ||
			!flotilla.TaintsTolerated(n.Taints, j.Tolerations) || j.Requests.Fits(rm.free) {
			continue
		}
		room := rm.free.Clone()
		var refs []refusal
		for _, c := range rm.cands {
			if c.priority < prio || c.queue != j.Queue {
				room.AddSaturating(c.req)
				if c.refused != nil {
					refs = append(refs, *c.refused)
				}
			}
		}
		if len(refs) > 0 && j.Requests.Fits(room) {
			out = append(out, refs...)
		}
	}
	return out
}
