package explain

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/gang"
	"github.com/flotilla-sched/flotilla/httpapi"
	"github.com/flotilla-sched/flotilla/scenario"
	"github.com/flotilla-sched/flotilla/scheduler"
)

// CheckArgs reports, joined, a round outside the scenario's (field
// "round") and a job id no round submits (field "job").
func CheckArgs(b *scenario.Built, round int, id string) error {
	var errs []error
	if n := len(b.Rounds); round < 0 || round >= n {
		detail := "the scenario has no rounds"
		if n > 0 {
			detail = fmt.Sprintf("the scenario has %d rounds: want 0–%d", n, n-1)
			if n == 1 {
				detail = "the scenario has 1 round: want 0"
			}
		}
		errs = append(errs, flotilla.Errorf("round", strconv.Itoa(round), flotilla.ErrOutOfRange, "%s", detail))
	}
	if submittedIn(b, id) < 0 {
		errs = append(errs, flotilla.Errorf("job", id, flotilla.ErrUnknownName, "no round of the scenario submits a job with this id"))
	}
	return errors.Join(errs...)
}

// submittedIn is the round that submits job id, or -1.
func submittedIn(b *scenario.Built, id string) int {
	for ri := range b.Rounds {
		for _, j := range b.Rounds[ri].Submit {
			if j.ID == id {
				return ri
			}
		}
	}
	return -1
}

// errExplained stops the run once the round explained is decided.
var errExplained = errors.New("explained")

// Scenario plays b through round and explains job id there; round
// and id must have passed CheckArgs. Its errors are the run's (a
// finish or cancel naming a job that is not running or queued).
func Scenario(ctx context.Context, b *scenario.Built, round int, id string) (*Explanation, error) {
	job := findJob(b, id)
	var earlier *Earlier
	var ex *Explanation
	err := scenario.RunInspect(ctx, b, func(d *scenario.Decision) error {
		if d.Round < round {
			return nil
		}
		var err error
		ex, err = explainDecision(b, d, job, earlier)
		if err != nil {
			return err
		}
		return errExplained
	}, func(r *scenario.RoundOutput) error {
		for _, p := range r.Scheduled {
			if p.Job == id {
				earlier = &Earlier{Round: r.Round, Event: "scheduled", Node: p.Node}
			}
		}
		for _, p := range r.Preempted {
			if p.Job == id {
				earlier = &Earlier{Round: r.Round, Event: "preempted", Node: p.Node, Reason: p.Reason}
			}
		}
		return nil
	})
	if err != nil && !errors.Is(err, errExplained) {
		return nil, err
	}
	if ex == nil {
		return nil, fmt.Errorf("round %d was not reached", round)
	}
	return ex, nil
}

// findJob is the built job with id id (it exists: CheckArgs).
func findJob(b *scenario.Built, id string) *flotilla.Job {
	for ri := range b.Rounds {
		for _, j := range b.Rounds[ri].Submit {
			if j.ID == id {
				return j
			}
		}
	}
	return nil
}

// explainDecision explains job in round d.Round: the state the round left
// it in and why, from the decision itself (the snapshot and store it read,
// the Result it made); earlier is its last event in a round before.
func explainDecision(b *scenario.Built, d *scenario.Decision, job *flotilla.Job, earlier *Earlier) (*Explanation, error) {
	res := d.Result
	ex := &Explanation{
		Job: job.ID, Queue: job.Queue, JobSet: job.JobSet, Round: d.Round,
		Requests: b.Schema.Format(job.Requests),
		Priority: priorityOf(b, job),
		Earlier:  earlier,
	}
	if job.Gang.ID != "" {
		ex.Gang = &Gang{ID: job.Gang.ID, Cardinality: job.Gang.Cardinality, NodeUniformityLabel: job.Gang.NodeUniformityLabel}
		if gt := job.Gang.Topology; !gt.IsZero() {
			ex.Gang.Topology = &GangTopology{Name: gt.Name, Required: gt.Required, Preferred: gt.Preferred}
			if t := flotilla.FindTopology(b.Settings.Topologies, gt.Name); t != nil {
				ex.Gang.Topology.Name = t.Name
			}
		}
	}
	for qi, q := range d.Snapshot.Queues {
		if q.Name == job.Queue && qi < len(res.Queues) {
			r := res.Queues[qi]
			ex.QueueShare = &QueueShare{Share: r.Share, FairShare: r.FairShare, AdjustedFairShare: r.AdjustedFairShare,
				Demand: r.Demand, Running: r.Running, Queued: r.Queued}
		}
	}
	pos, queued, err := scheduler.PositionOf(d.Store, job.Queue, job.ID, 0)
	if err != nil {
		return nil, err
	}
	if queued {
		ex.Place = &Place{Position: pos.Ahead + 1, Queued: pos.Queued, Ahead: pos.Ahead, AheadRequests: map[string]string{},
			GangIncomplete: pos.GangIncomplete}
		if pos.AheadRequests != nil {
			ex.Place.AheadRequests = b.Schema.Format(pos.AheadRequests)
		}
	}
	if explainPreempted(b, d, job, ex) || explainScheduled(b, d, job, ex) {
		return ex, nil
	}
	if queued {
		explainWaiting(b, d, job, ex)
		return ex, nil
	}
	explainElsewhere(b, d, job, ex)
	return ex, nil
}

// explainPreempted fills in a preemption of job in this round.
func explainPreempted(b *scenario.Built, d *scenario.Decision, job *flotilla.Job, ex *Explanation) bool {
	for _, p := range d.Result.Preempted {
		if p.Job.ID != job.ID {
			continue
		}
		pj := &Preempted{Node: p.Node, Reason: string(p.Reason), Requeued: b.Settings.RequeuePreempted}
		ex.State, ex.Preempted = "preempted", pj
		if p.For != nil {
			pj.For, pj.ForQueue = p.For.ID, p.For.Queue
			pj.ForClass = classOf(b, p.For)
			pj.ForClassPriority = classPriority(b, pj.ForClass)
		}
		switch p.Reason {
		case scheduler.PreemptedForUrgency:
			ex.Summary = fmt.Sprintf("preempted from node %s for urgency: job %s (class %s, priority %d) needed its room, and %s jobs (priority %d) are preemptible by higher-priority ones",
				p.Node, pj.For, pj.ForClass, pj.ForClassPriority, ex.Priority.Class, ex.Priority.ClassPriority)
			if p.For == nil {
				ex.Summary = fmt.Sprintf("preempted from node %s for urgency", p.Node)
			}
		default:
			share, fair := p.Share, p.FairShare
			pf := b.Settings.ProtectedFractionOfFairShare
			pj.Share, pj.FairShare, pj.ProtectedFraction = &share, &fair, &pf
			ex.Summary = fmt.Sprintf("preempted from node %s to fair share: queue %s held share %.3f against fair share %.3f (protected up to %g× its fair share), so its preemptible jobs were evicted",
				p.Node, job.Queue, share, fair, pf)
			if p.For != nil {
				ex.Summary += fmt.Sprintf("; job %s of queue %s took the room", pj.For, pj.ForQueue)
				if tv := newTreeView(b, d); tv != nil {
					if kind, name := guaranteeWentFirst(tv, job.Queue, p.For.Queue); kind != "" {
						pj.WentFirst = kind + " " + name
						ex.Summary += fmt.Sprintf(" (%s %s, within its guarantee, went first)", kind, name)
					}
				}
			} else {
				ex.Summary += "; it was not put back (a gang mate was not, its queue's class limit, or its node no longer admits it)"
			}
		}
		if pj.Requeued {
			ex.Summary += "; it goes back to its queue"
		}
		return true
	}
	return false
}

// explainScheduled fills in a placement of job in this round.
func explainScheduled(b *scenario.Built, d *scenario.Decision, job *flotilla.Job, ex *Explanation) bool {
	for _, a := range d.Result.Scheduled {
		if a.Job.ID != job.ID {
			continue
		}
		free, users := nodeBefore(b, d, a.Node)
		tier := "unused"
		switch {
		case len(users) == 1 && users[0] == job.Queue:
			tier = "used by its queue only"
		case slices.Contains(users, job.Queue):
			tier = "shared by its queue with others"
		case len(users) > 0:
			tier = "used by other queues only"
		}
		why := fmt.Sprintf("the tightest fit: of the nodes that admit it and have room, the least free capacity (indexed resources first), "+
			"its queue's own nodes first, then unused, then shared ones; this one was %s when the round started", tier)
		if g := job.Gang; g.ID != "" {
			domain := "one cluster"
			if g.NodeUniformityLabel != "" {
				domain = "one domain, " + g.NodeUniformityLabel + "=" + nodeLabel(d, a.Node, g.NodeUniformityLabel)
			}
			if !g.Topology.IsZero() {
				domain = topologyDomain(b, d, g)
			}
			why = fmt.Sprintf("placed with all %d members of gang %s in %s (of the domains that hold the gang, the one left with the least free capacity); within it, %s",
				g.Cardinality, g.ID, domain, why)
		}
		ex.State = "scheduled"
		ex.Scheduled = &Scheduled{Node: a.Node, Why: why, NodeFreeBefore: free, NodeQueuesBefore: users}
		ex.Summary = fmt.Sprintf("scheduled on node %s", a.Node)
		return true
	}
	return false
}

// nodeLabel is the value of label key on node name.
func nodeLabel(d *scenario.Decision, name, key string) string {
	for _, n := range d.Snapshot.Nodes {
		if n.Name == name {
			return n.Labels[key]
		}
	}
	return ""
}

// nodeBefore is a node's free capacity when the round started (its total
// less the requests of the jobs running on it) and the queues of those jobs.
func nodeBefore(b *scenario.Built, d *scenario.Decision, name string) (map[string]string, []string) {
	var node *flotilla.Node
	for _, n := range d.Snapshot.Nodes {
		if n.Name == name {
			node = n
		}
	}
	if node == nil {
		return nil, nil
	}
	free := node.Total.Clone()
	users := []string{}
	for _, r := range d.Snapshot.Running {
		if r.Node == name {
			free.Sub(r.Job.Requests)
			if !slices.Contains(users, r.Job.Queue) {
				users = append(users, r.Job.Queue)
			}
		}
	}
	slices.Sort(users)
	return b.Schema.Format(free), users
}

// explainWaiting fills in why a queued job was not placed: the round's
// reason for it, or for its queue when the round did not reach it.
func explainWaiting(b *scenario.Built, d *scenario.Decision, job *flotilla.Job, ex *Explanation) {
	for _, u := range d.Result.UnscheduledJobs {
		if u.Job == nil || u.Job.ID != job.ID {
			continue
		}
		ex.State = "unschedulable"
		ex.Unscheduled = unscheduledOf(b, u.Reason, job)
		ex.Summary = "not scheduled: " + u.Reason.String()
		explainQuota(b, d, job, u.Reason, ex)
		return
	}
	ex.State = "not-examined"
	ex.Unscheduled = &Unscheduled{Code: "not-examined", Message: "not examined this round"}
	for _, r := range d.Result.NotExamined {
		if r.Queue == job.Queue {
			ex.Unscheduled = &Unscheduled{Code: r.Reason.Code.String(), Message: r.Reason.Message}
		}
	}
	ex.Summary = "not examined this round: " + ex.Unscheduled.Code
	if ex.Unscheduled.Message != "" && ex.Unscheduled.Message != ex.Unscheduled.Code {
		ex.Summary += ": " + ex.Unscheduled.Message
	}
}

// unscheduledOf is a Reason in the JSON form (httpapi.UnscheduledOf), a
// failing gang member with its gang's size.
func unscheduledOf(b *scenario.Built, r scheduler.Reason, job *flotilla.Job) *Unscheduled {
	u := httpapi.UnscheduledOf(r, b.Schema)
	if u.GangMember != nil {
		u.GangMember.Members = job.Gang.Cardinality
	}
	return u
}

// explainElsewhere fills in the state of a job the round neither decided
// about nor held queued: running, not yet submitted, ended, or gone.
func explainElsewhere(b *scenario.Built, d *scenario.Decision, job *flotilla.Job, ex *Explanation) {
	for _, r := range d.Snapshot.Running {
		if r.Job.ID == job.ID {
			ex.State = "running"
			ex.Summary = fmt.Sprintf("running on node %s; the round left it there", r.Node)
			return
		}
	}
	if sub := submittedIn(b, job.ID); sub > d.Round {
		ex.State = "not-submitted"
		ex.Summary = fmt.Sprintf("not submitted yet: round %d submits it", sub)
		return
	}
	for ri := d.Round; ri >= 0; ri-- {
		if slices.Contains(b.Rounds[ri].Finish, job.ID) {
			ex.State = "finished"
			ex.Earlier = &Earlier{Round: ri, Event: "finished"}
			ex.Summary = fmt.Sprintf("finished at the start of round %d", ri)
			return
		}
		if slices.Contains(b.Rounds[ri].Cancel, job.ID) {
			ex.State = "cancelled"
			ex.Earlier = &Earlier{Round: ri, Event: "cancelled"}
			ex.Summary = fmt.Sprintf("cancelled at the start of round %d", ri)
			return
		}
	}
	ex.State = "gone"
	ex.Summary = "no longer in the scenario"
	if ex.Earlier != nil && ex.Earlier.Event == "preempted" {
		ex.Summary = fmt.Sprintf("preempted in round %d (%s) and not requeued", ex.Earlier.Round, ex.Earlier.Reason)
	}
}

// priorityOf is the job's place in the order of its queue.
func priorityOf(b *scenario.Built, job *flotilla.Job) Priority {
	p := Priority{Class: classOf(b, job), Priority: job.Priority}
	p.ClassPriority = classPriority(b, p.Class)
	for _, pc := range b.PriorityClasses {
		if pc.Name == p.Class {
			p.Preemptible = pc.Preemptible
		}
	}
	return p
}

func classOf(b *scenario.Built, job *flotilla.Job) string {
	if job.PriorityClass == "" {
		return b.Settings.DefaultPriorityClass
	}
	return job.PriorityClass
}

func classPriority(b *scenario.Built, class string) int32 {
	for _, pc := range b.PriorityClasses {
		if pc.Name == class {
			return pc.Priority
		}
	}
	return 0
}

// topologyDomain names where a gang with a topology landed: the innermost
// level of its topology at which every member's node has the same path of
// label values ("one rack, b1/r7"), or, when the members share no domain
// (a preferred topology no domain held), one cluster.
func topologyDomain(b *scenario.Built, d *scenario.Decision, g flotilla.Gang) string {
	t := flotilla.FindTopology(b.Settings.Topologies, g.Topology.Name)
	if t == nil {
		return "one cluster"
	}
	var nodes []string
	for _, a := range d.Result.Scheduled {
		if a.Job.Gang.ID == g.ID {
			nodes = append(nodes, a.Node)
		}
	}
	path, found := []string(nil), -1
	for k, key := range t.Levels {
		v, shared := "", len(nodes) > 0
		for i, name := range nodes {
			w, ok := nodeLabelOK(d, name, key)
			if !ok || (i > 0 && w != v) {
				shared = false
				break
			}
			v = w
		}
		if !shared {
			break
		}
		path, found = append(path, v), k
	}
	if found < 0 {
		return fmt.Sprintf("one cluster (no domain of topology %s held it whole: placed as without one)", t.Name)
	}
	return fmt.Sprintf("one %s, %s", gang.LevelName(t.Levels[found]), strings.Join(path, "/"))
}

// nodeLabelOK is the value of label key on node name, and whether the node
// carries it.
func nodeLabelOK(d *scenario.Decision, name, key string) (string, bool) {
	for _, n := range d.Snapshot.Nodes {
		if n.Name == name {
			v, ok := n.Labels[key]
			return v, ok
		}
	}
	return "", false
}
