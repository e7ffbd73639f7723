package explain

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/flotilla-sched/flotilla/api"

	"github.com/flotilla-sched/flotilla/internal/safetext"
)

// JSONFields lists the fields of an Explanation's JSON form (WriteJSON),
// one a line, for a command's help; the field names are stable.
const JSONFields = `  job, queue, jobSet, round     the job and the round explained
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
  quota                         the queue tree's node that held it back
                                (reason limit or lending limit): {kind,
                                node, nodeKind (queue | group), resource,
                                limit, guaranteed, lendingLimit, keeps,
                                held (after the round), asks (its gang's,
                                whole)}
  preempted                     {node, reason (urgency | fair-share), for,
                                forQueue, forClass, forClassPriority, share,
                                fairShare, protectedFraction, requeued,
                                wentFirst: the side of the tree, within its
                                guarantee, whose job took the room}
  earlier                       {round, event (scheduled | preempted |
                                finished | cancelled), node, reason}: the
                                job's last event before round N, if any
`

// Explanation is what `flotilla explain` prints about one job in one
// round; its JSON form is the -o json output (JSONFields lists the
// fields, which are stable).
type Explanation struct {
	Job      string            `json:"job"`
	Queue    string            `json:"queue"`
	JobSet   string            `json:"jobSet"`
	Round    int               `json:"round"`
	State    string            `json:"state"`
	Summary  string            `json:"summary"`
	Requests map[string]string `json:"requests"`
	Gang     *Gang             `json:"gang,omitempty"`
	Priority Priority          `json:"priority"`
	Place    *Place            `json:"place,omitempty"`
	// QueueShare is the round's: every queue has one, idle ones too.
	QueueShare  *QueueShare  `json:"queueShare,omitempty"`
	Scheduled   *Scheduled   `json:"scheduled,omitempty"`
	Unscheduled *Unscheduled `json:"unscheduled,omitempty"`
	// Quota is the queue tree's node that held the job back, when its
	// reason is a limit or a lending limit.
	Quota     *Quota     `json:"quota,omitempty"`
	Preempted *Preempted `json:"preempted,omitempty"`
	Earlier   *Earlier   `json:"earlier,omitempty"`
	// header is the text form's first line: "job ID, round N: STATE" when
	// empty.
	header string
}

// Gang is the job's gang, when it is a member of one.
type Gang struct {
	ID                  string `json:"id"`
	Cardinality         int    `json:"cardinality"`
	NodeUniformityLabel string `json:"nodeUniformityLabel,omitempty"`
	// Topology is the gang's topology request, when it makes one.
	Topology *GangTopology `json:"topology,omitempty"`
}

// GangTopology is a gang's topology request (flotilla.GangTopology): the
// topology's name as resolved ("default", else the first configured) and
// the level keys it requires or prefers.
type GangTopology struct {
	Name      string `json:"name"`
	Required  string `json:"required,omitempty"`
	Preferred string `json:"preferred,omitempty"`
}

// Priority is the job's priority class and its priority within it.
type Priority struct {
	Class         string `json:"class"`
	ClassPriority int32  `json:"classPriority"`
	Preemptible   bool   `json:"preemptible"`
	Priority      uint32 `json:"priority"`
}

// Place and QueueShare are the service's wire forms (api), so that
// explain -o json and status -v -o json agree: the job's place in its
// queue's order, and its queue's standing in the round.
type (
	Place      = api.QueuePlace
	QueueShare = api.QueueShare
)

// Scheduled says where the job was placed, and what the node held before.
type Scheduled struct {
	Node             string            `json:"node"`
	Why              string            `json:"why"`
	NodeFreeBefore   map[string]string `json:"nodeFreeBefore"`
	NodeQueuesBefore []string          `json:"nodeQueuesBefore"`
}

// Unscheduled, NodeGroup and GangMember are the service's wire
// forms (api), so that explain -o json and status -v -o json agree.
type (
	Unscheduled = api.Unscheduled
	NodeGroup   = api.NodeGroup
	GangMember  = api.GangMember
)

// Preempted says why the job was preempted, and for whom.
type Preempted struct {
	Node             string   `json:"node"`
	Reason           string   `json:"reason"`
	For              string   `json:"for,omitempty"`
	ForQueue         string   `json:"forQueue,omitempty"`
	ForClass         string   `json:"forClass,omitempty"`
	ForClassPriority int32    `json:"forClassPriority,omitempty"`
	Share            *float64 `json:"share,omitempty"`
	FairShare        *float64 `json:"fairShare,omitempty"`
	// ProtectedFraction is the scenario's protectedFractionOfFairShare.
	ProtectedFraction *float64 `json:"protectedFraction,omitempty"`
	Requeued          bool     `json:"requeued"`
	// WentFirst names the queue or group ("group prod") below the two
	// queues' lowest common ancestor on the side of the job that took the
	// room, when it held no more than its guarantee after the round: the
	// tree offers such a side's jobs first.
	WentFirst string `json:"wentFirst,omitempty"`
}

// Earlier is the job's last event in a round before the one explained.
type Earlier struct {
	Round  int    `json:"round"`
	Event  string `json:"event"`
	Node   string `json:"node,omitempty"`
	Reason string `json:"reason,omitempty"`
}

// WriteJSON prints the explanation as one indented JSON object (the
// fields JSONFields lists).
func (ex *Explanation) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(ex)
}

// WriteText prints the explanation for people: a label column and
// a value column, names with control characters Go-quoted.
func (ex *Explanation) WriteText(w io.Writer) error {
	n := safetext.Name
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	row := func(label, format string, a ...any) { fmt.Fprintf(tw, "%s\t%s\n", label, fmt.Sprintf(format, a...)) }
	if ex.header != "" {
		fmt.Fprintln(tw, ex.header)
	} else {
		fmt.Fprintf(tw, "job %s, round %d: %s\n", n(ex.Job), ex.Round, ex.State)
	}
	if ex.Summary != "" {
		row("  summary", "%s", ex.Summary)
	}
	row("  queue", "%s, job set %s", n(ex.Queue), quoteEmpty(ex.JobSet))
	if ex.Requests != nil {
		row("  requests", "%s", quantities(ex.Requests))
	}
	if g := ex.Gang; g != nil {
		label := ""
		if g.NodeUniformityLabel != "" {
			label = ", on one value of node label " + n(g.NodeUniformityLabel)
		}
		if t := g.Topology; t != nil {
			if t.Required != "" {
				label += fmt.Sprintf(", in one %s of topology %s", n(t.Required), n(t.Name))
			}
			if t.Preferred != "" {
				label += fmt.Sprintf(", preferably in one %s of topology %s", n(t.Preferred), n(t.Name))
			}
		}
		row("  gang", "%s, %d members%s", n(g.ID), g.Cardinality, label)
	}
	p := ex.Priority
	preemptible := ", not preemptible"
	switch {
	case ex.header != "": // the service's status: preemptibility not known here
		preemptible = ""
	case p.Preemptible:
		preemptible = ", preemptible"
	}
	row("  priority", "class %s (priority %d%s), job priority %d (lower runs first within a class)",
		n(p.Class), p.ClassPriority, preemptible, p.Priority)
	if pl := ex.Place; pl != nil {
		ahead := "none ahead"
		switch {
		case pl.Partial:
			ahead = fmt.Sprintf("more than %d ahead (counting stopped there), those requesting %s", pl.Ahead, quantities(pl.AheadRequests))
		case pl.Ahead > 0:
			ahead = fmt.Sprintf("%d ahead, requesting %s in total", pl.Ahead, quantities(pl.AheadRequests))
		}
		when := "when the round started"
		if ex.header != "" {
			when = "now"
		}
		at := strconv.Itoa(pl.Position)
		switch {
		case pl.Partial:
			at = "past " + strconv.Itoa(pl.Ahead)
		case pl.GangIncomplete:
			at = "last"
			ahead += "; its gang is not all queued, and a queue offers a gang only whole"
		}
		row("  place", "%s of %d queued in %s %s; %s", at, pl.Queued, n(ex.Queue), when, ahead)
	}
	if q := ex.QueueShare; q != nil {
		after := "the round"
		if ex.header != "" {
			after = "the last cycle"
		}
		if q.Pool != "" {
			after += " of pool " + q.Pool
		}
		row("  queue share", "%.3f after %s (%s its adjusted fair share) against fair share %.3f, adjusted fair share %.3f, demand %.3f; %d running, %d queued",
			q.Share, after, compareShare(q.Share, q.AdjustedFairShare), q.FairShare, q.AdjustedFairShare, q.Demand, q.Running, q.Queued)
	}
	if s := ex.Scheduled; s != nil {
		row("  node", "%s", n(s.Node))
		row("  why there", "%s", s.Why)
		users := "no queue"
		if len(s.NodeQueuesBefore) > 0 {
			users = strings.Join(mapSlice(s.NodeQueuesBefore, n), ", ")
		}
		row("  node before", "free %s; used by %s", quantities(s.NodeFreeBefore), users)
	}
	if u := ex.Unscheduled; u != nil {
		writeUnscheduledText(tw, row, u)
	}
	if q := ex.Quota; q != nil {
		writeQuotaText(row, q)
	}
	if pr := ex.Preempted; pr != nil {
		row("  preempted", "from node %s, reason %s", n(pr.Node), pr.Reason)
		if pr.For != "" {
			row("  for", "job %s of queue %s (class %s, priority %d)", n(pr.For), n(pr.ForQueue), n(pr.ForClass), pr.ForClassPriority)
		}
		if pr.Share != nil {
			row("  victim queue", "share %.3f against fair share %.3f, protected up to %g× it", *pr.Share, *pr.FairShare, *pr.ProtectedFraction)
		}
		if pr.WentFirst != "" {
			row("  went first", "%s, within its guarantee", n(pr.WentFirst))
		}
	}
	if e := ex.Earlier; e != nil {
		what := fmt.Sprintf("round %d: %s", e.Round, e.Event)
		if e.Node != "" {
			what += " on node " + n(e.Node)
		}
		if e.Reason != "" {
			what += " (" + e.Reason + ")"
		}
		row("  earlier", "%s", what)
	}
	return tw.Flush()
}

// writeUnscheduledText prints why a job was not placed, one node group a
// line.
func writeUnscheduledText(tw io.Writer, row func(label, format string, a ...any), u *Unscheduled) {
	n := safetext.Name
	row("  reason", "%s", u.Code)
	if u.SameAs != "" {
		of := ""
		if u.SameAsQueue != "" {
			of = " of queue " + n(u.SameAsQueue)
		}
		row("  same as", "job %s%s (same requirements: its search stands for this one)", n(u.SameAs), of)
	}
	if g := u.GangMember; g != nil {
		of := ""
		if g.Members > 0 {
			of = fmt.Sprintf(" of %d", g.Members)
		}
		row("  gang member", "%s does not fit where the gang came closest, after %d%s members were placed", n(g.Job), g.PlacedBefore, of)
	}
	if u.NodeGroups == nil {
		if u.Message != "" {
			row("  why", "%s", u.Message)
		}
		return
	}
	fit := u.NodesSearched
	for _, g := range u.NodeGroups {
		fit -= g.Nodes
	}
	row("  nodes", "%d searched, %d fit", u.NodesSearched, max(fit, 0))
	for _, g := range u.NodeGroups {
		nodes := fmt.Sprintf("    %d nodes", g.Nodes)
		if g.Nodes == 1 {
			nodes = "    1 node"
		}
		switch {
		case g.Filter == "selector":
			row(nodes, "excluded: node selector %s not matched", n(g.Detail))
		case g.Filter == "taint":
			row(nodes, "excluded: taint %s not tolerated", n(g.Detail))
		case g.Filter == "cordoned":
			row(nodes, "excluded: cordoned")
		case g.Filter != "":
			row(nodes, "excluded: %s %s", g.Filter, n(g.Detail))
		case g.WhenEmpty != nil && *g.WhenEmpty:
			row(nodes, "too small: short of %s by at least %s even when empty", n(g.ShortOf), g.Short)
		default:
			row(nodes, "no room now: short of %s by at least %s", n(g.ShortOf), g.Short)
		}
	}
}

// writeQuotaText prints the tree node that held the job back.
func writeQuotaText(row func(label, format string, a ...any), q *Quota) {
	n := safetext.Name
	node := q.NodeKind + " " + n(q.Node)
	if q.Kind == "limit" {
		row("  limit", "%s: limit %s %s, holds %s after the round, the job asks %s", node, q.Limit, n(q.Resource), q.Held, q.Asks)
		return
	}
	row("  lending limit", "%s: guaranteed %s %s, lends at most %s, keeps %s for itself, holds %s after the round; the job asks %s",
		node, q.Guaranteed, n(q.Resource), q.LendingLimit, q.Keeps, q.Held, q.Asks)
}

// quantities prints a resource map as "cpu 1, memory 4Gi", in name order
// with cpu first.
func quantities(m map[string]string) string {
	if len(m) == 0 {
		return "nothing"
	}
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	slices.SortFunc(names, func(a, b string) int {
		switch {
		case a == b:
			return 0
		case a == "cpu":
			return -1
		case b == "cpu":
			return 1
		}
		return strings.Compare(a, b)
	})
	parts := make([]string, len(names))
	for i, k := range names {
		parts[i] = safetext.Name(k) + " " + m[k]
	}
	return strings.Join(parts, ", ")
}

// compareShare says where share stands against target, to the third
// decimal the table prints.
func compareShare(share, target float64) string {
	switch d := share - target; {
	case d < -0.0005:
		return "below"
	case d > 0.0005:
		return "above"
	}
	return "at"
}

func quoteEmpty(s string) string {
	if s == "" {
		return `""`
	}
	return safetext.Name(s)
}

func mapSlice(in []string, f func(string) string) []string {
	out := make([]string, len(in))
	for i, s := range in {
		out[i] = f(s)
	}
	return out
}
