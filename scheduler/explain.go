package scheduler

import (
	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/binpack"
	"github.com/flotilla-sched/flotilla/gang"
)

// This file turns the node database's explanations into Reasons: the code
// (never fits even on an empty cluster, or no room now), the sentence, and
// the per-filter node counts and shortfalls for programs.

// urgencyNote ends the message of a job explained at its class's level,
// where capacity held by preemptible jobs of lower priority counts as room.
const urgencyNote = " (room counts what lower-priority preemptible jobs hold)"

// noFitReason is the Reason of a lone job that found no node, from the
// node database's explanation r of its last search, made at level.
func (c *cycle) noFitReason(r binpack.Reason, level int) Reason {
	why := fitFindings(r, c.s.cfg.Schema)
	why.Message = r.String(c.s.cfg.Schema)
	if level > lowestClassLevel && r.Kind == binpack.Insufficient {
		why.Message += urgencyNote
	}
	return why
}

// gangNoFitReason is the Reason of a gang that was not placed, from the
// placer's explanation of its last search, made at level.
func (c *cycle) gangNoFitReason(e gang.Explanation, level int) Reason {
	why := fitFindings(e.Reason, c.s.cfg.Schema)
	if e.Cause != gang.MemberDoesNotFit {
		why = Reason{}
	}
	why.Code = ReasonNoRoom
	if e.NeverFits {
		why.Code = ReasonNeverFits
	}
	why.Message = e.String(c.s.cfg.Schema)
	if level > lowestClassLevel && e.Cause == gang.MemberDoesNotFit && !e.NeverFits {
		why.Message += urgencyNote
	}
	return why
}

// fitFindings is the code and the findings (no message) of explanation r.
func fitFindings(r binpack.Reason, schema *flotilla.ResourceSchema) Reason {
	why := Reason{Code: ReasonNoRoom, Nodes: r.Nodes}
	if r.Kind.Unresolvable() {
		why.Code = ReasonNeverFits
	}
	for _, x := range r.Excluded {
		switch x.Filter {
		case binpack.FilterSelector:
			why.Filtered = append(why.Filtered, NodeFilter{Filter: FilterSelector, Detail: x.Detail, Nodes: x.Nodes})
		case binpack.FilterTaint:
			why.Filtered = append(why.Filtered, NodeFilter{Filter: FilterTaint, Detail: x.Detail, Nodes: x.Nodes})
		case binpack.FilterCordoned:
			why.Filtered = append(why.Filtered, NodeFilter{Filter: FilterCordoned, Nodes: x.Nodes})
		case binpack.FilterTooSmall, binpack.FilterNoRoom:
			name := ""
			if x.Resource >= 0 {
				name = schema.Name(x.Resource)
			}
			why.Shortfall = append(why.Shortfall, Shortfall{Resource: name, Amount: x.Short, Nodes: x.Nodes,
				WhenEmpty: x.Filter == binpack.FilterTooSmall})
		}
	}
	return why
}

// sameAs is the Reason of a job skipped by the scheduling-key cache: the
// code and findings of first, the reason of job id that failed with the
// same key, and a message that says so.
func sameAs(first Reason, id string) Reason {
	first.SameAs = id
	first.Message = "same requirements as job " + id + ": " + first.Message
	return first
}
