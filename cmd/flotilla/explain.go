package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/httpapi"
	"github.com/flotilla-sched/flotilla/scenario"
	"github.com/flotilla-sched/flotilla/scheduler"
)

// explainHelp is `flotilla explain -h`'s text after the flags: what the
// JSON form holds, field by field (the field names are stable).
const explainHelp = `
flotilla explain -scenario FILE -round N [-o text|json] JOB

Runs the scenario through round N (counted from 0, as "round" in
flotilla schedule's output) and explains what that round decided for JOB.

-o json prints one object:
  job, queue, jobSet, round     the job and the round explained
  state                         scheduled | unschedulable | not-examined |
                                preempted | running | not-submitted |
                                finished | cancelled | gone
  summary                       one sentence
  requests                      the job's requests, as quantities
  gang                          {id, cardinality, nodeUniformityLabel}; absent for a lone job
  priority                      {class, classPriority, preemptible, priority}:
                                a queue runs higher class priority first, then
                                lower priority numbers, then earlier submissions
  place                         queued jobs only, as the round started, in
                                the order the queue offers its jobs (a gang
                                whole, when its last member is read):
                                {position (1 = next), queued, ahead,
                                aheadRequests: what the jobs ahead request,
                                gangIncomplete: its gang is not all queued,
                                so it comes after every job offered}
  queueShare                    the round's numbers for the job's queue:
                                {share, fairShare, adjustedFairShare, demand,
                                running, queued}
  scheduled                     {node, why, nodeFreeBefore, nodeQueuesBefore}
  unscheduled                   {code, message, sameAs, sameAsQueue (when
                                another queue's), nodesSearched,
                                nodeGroups: [{nodes, filter, detail} or
                                {nodes, shortOf, short, whenEmpty}],
                                gangMember: {job, placedBefore, members}}
  preempted                     {node, reason (urgency | fair-share), for,
                                forQueue, forClass, forClassPriority, share,
                                fairShare, protectedFraction, requeued}
  earlier                       {round, event (scheduled | preempted |
                                finished | cancelled), node, reason}: the
                                job's last event before round N, if any

Exit codes: 0 explained, 2 bad input or usage (unknown job, round out of
range, a file that is not a valid scenario).
`

// explainCmd runs `flotilla explain`: it plays a scenario up to round N
// and explains, for one job, what that round decided and why.
func explainCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("explain", flag.ContinueOnError)
	fs.SetOutput(stderr)
	path := fs.String("scenario", "", "scenario file (SCENARIOS.md); required")
	round := fs.Int("round", 0, "the round to explain, from 0; required")
	format := fs.String("o", "text", "output format: text or json")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage of flotilla explain:")
		fs.PrintDefaults()
		fmt.Fprint(stderr, explainHelp)
	}
	pos, err := parse(fs, args)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	roundSet := false
	fs.Visit(func(f *flag.Flag) { roundSet = roundSet || f.Name == "round" })
	switch {
	case *path == "" || !roundSet || len(pos) != 1:
		fmt.Fprint(stderr, "flotilla explain: want -scenario FILE -round N and one job id\n", usage)
		return 2
	case *format != "text" && *format != "json":
		fmt.Fprintf(stderr, "flotilla explain: -o %q: want text or json\n", *format)
		return 2
	}
	data, err := os.ReadFile(*path)
	if err != nil {
		fmt.Fprintf(stderr, "flotilla: %v\n", err)
		return 2
	}
	f, err := scenario.Parse(data)
	if err != nil {
		reportBadInput(stderr, *path, err)
		return 2
	}
	b, err := f.Build()
	if err != nil {
		reportBadInput(stderr, *path, err)
		return 2
	}
	if err := checkExplainArgs(b, *round, pos[0]); err != nil {
		fmt.Fprintf(stderr, "flotilla explain: %s:\n", *path)
		printErrors(stderr, err)
		return 2
	}
	ex, err := explainScenario(ctx, b, *round, pos[0])
	if err != nil {
		reportBadInput(stderr, *path, err)
		return 2
	}
	if *format == "json" {
		err = writeExplainJSON(stdout, ex)
	} else {
		err = writeExplainText(stdout, ex)
	}
	if err != nil {
		fmt.Fprintf(stderr, "flotilla: %v\n", err)
		return 2
	}
	return 0
}

// checkExplainArgs reports, joined, a round outside the scenario's (field
// "round") and a job id no round submits (field "job").
func checkExplainArgs(b *scenario.Built, round int, id string) error {
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

// explainScenario plays b through round and explains job id there; round
// and id must have passed checkExplainArgs. Its errors are the run's (a
// finish or cancel naming a job that is not running or queued).
func explainScenario(ctx context.Context, b *scenario.Built, round int, id string) (*explanation, error) {
	job := findJob(b, id)
	var earlier *earlierEvent
	var ex *explanation
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
				earlier = &earlierEvent{Round: r.Round, Event: "scheduled", Node: p.Node}
			}
		}
		for _, p := range r.Preempted {
			if p.Job == id {
				earlier = &earlierEvent{Round: r.Round, Event: "preempted", Node: p.Node, Reason: p.Reason}
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

// findJob is the built job with id id (it exists: checkExplainArgs).
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
func explainDecision(b *scenario.Built, d *scenario.Decision, job *flotilla.Job, earlier *earlierEvent) (*explanation, error) {
	res := d.Result
	ex := &explanation{
		Job: job.ID, Queue: job.Queue, JobSet: job.JobSet, Round: d.Round,
		Requests: b.Schema.Format(job.Requests),
		Priority: priorityOf(b, job),
		Earlier:  earlier,
	}
	if job.Gang.ID != "" {
		ex.Gang = &gangJSON{ID: job.Gang.ID, Cardinality: job.Gang.Cardinality, NodeUniformityLabel: job.Gang.NodeUniformityLabel}
	}
	for qi, q := range d.Snapshot.Queues {
		if q.Name == job.Queue && qi < len(res.Queues) {
			r := res.Queues[qi]
			ex.QueueShare = &queueShareJSON{Share: r.Share, FairShare: r.FairShare, AdjustedFairShare: r.AdjustedFairShare,
				Demand: r.Demand, Running: r.Running, Queued: r.Queued}
		}
	}
	pos, queued, err := scheduler.PositionOf(d.Store, job.Queue, job.ID, 0)
	if err != nil {
		return nil, err
	}
	if queued {
		ex.Place = &placeJSON{Position: pos.Ahead + 1, Queued: pos.Queued, Ahead: pos.Ahead, AheadRequests: map[string]string{},
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
func explainPreempted(b *scenario.Built, d *scenario.Decision, job *flotilla.Job, ex *explanation) bool {
	for _, p := range d.Result.Preempted {
		if p.Job.ID != job.ID {
			continue
		}
		pj := &preemptedJSON{Node: p.Node, Reason: string(p.Reason), Requeued: b.Settings.RequeuePreempted}
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
func explainScheduled(b *scenario.Built, d *scenario.Decision, job *flotilla.Job, ex *explanation) bool {
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
			why = fmt.Sprintf("placed with all %d members of gang %s in %s (of the domains that hold the gang, the one left with the least free capacity); within it, %s",
				g.Cardinality, g.ID, domain, why)
		}
		ex.State = "scheduled"
		ex.Scheduled = &scheduledJSON{Node: a.Node, Why: why, NodeFreeBefore: free, NodeQueuesBefore: users}
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
func explainWaiting(b *scenario.Built, d *scenario.Decision, job *flotilla.Job, ex *explanation) {
	for _, u := range d.Result.UnscheduledJobs {
		if u.Job == nil || u.Job.ID != job.ID {
			continue
		}
		ex.State = "unschedulable"
		ex.Unscheduled = unscheduledOf(b, u.Reason, job)
		ex.Summary = "not scheduled: " + u.Reason.String()
		return
	}
	ex.State = "not-examined"
	ex.Unscheduled = &unscheduledJSON{Code: "not-examined", Message: "not examined this round"}
	for _, r := range d.Result.NotExamined {
		if r.Queue == job.Queue {
			ex.Unscheduled = &unscheduledJSON{Code: r.Reason.Code.String(), Message: r.Reason.Message}
		}
	}
	ex.Summary = "not examined this round: " + ex.Unscheduled.Code
	if ex.Unscheduled.Message != "" && ex.Unscheduled.Message != ex.Unscheduled.Code {
		ex.Summary += ": " + ex.Unscheduled.Message
	}
}

// unscheduledOf is a Reason in the JSON form (httpapi.UnscheduledOf), a
// failing gang member with its gang's size.
func unscheduledOf(b *scenario.Built, r scheduler.Reason, job *flotilla.Job) *unscheduledJSON {
	u := httpapi.UnscheduledOf(r, b.Schema)
	if u.GangMember != nil {
		u.GangMember.Members = job.Gang.Cardinality
	}
	return u
}

// explainElsewhere fills in the state of a job the round neither decided
// about nor held queued: running, not yet submitted, ended, or gone.
func explainElsewhere(b *scenario.Built, d *scenario.Decision, job *flotilla.Job, ex *explanation) {
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
			ex.Earlier = &earlierEvent{Round: ri, Event: "finished"}
			ex.Summary = fmt.Sprintf("finished at the start of round %d", ri)
			return
		}
		if slices.Contains(b.Rounds[ri].Cancel, job.ID) {
			ex.State = "cancelled"
			ex.Earlier = &earlierEvent{Round: ri, Event: "cancelled"}
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
func priorityOf(b *scenario.Built, job *flotilla.Job) priorityJSON {
	p := priorityJSON{Class: classOf(b, job), Priority: job.Priority}
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
