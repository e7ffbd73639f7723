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
func noFitReason(schema *flotilla.ResourceSchema, putBack int, r binpack.Reason, level int) Reason {
	why := Reason{Code: ReasonNoRoom, Message: r.String(schema), Search: search(r, schema)}
	if r.Kind.Unresolvable() {
		why.Code = ReasonNeverFits
	}
	if level > lowestClassLevel && r.Kind == binpack.Insufficient {
		why.Message += urgencyNote
	} else if level == lowestClassLevel && r.Kind == binpack.Insufficient {
		why.Message += displaceNote(putBack)
	}
	return why
}

// gangNoFitReason is the Reason of a gang that was not placed, from the
// placer's explanation of its last search, made at level.
func gangNoFitReason(schema *flotilla.ResourceSchema, putBack int, e gang.Explanation, level int) Reason {
	why := Reason{Code: ReasonNoRoom, Message: e.String(schema), Search: &NodeSearch{}}
	if e.Cause == gang.MemberDoesNotFit {
		why.Search = search(e.Reason, schema)
		why.Search.Member, why.Search.PlacedBefore = e.Job, e.PlacedBefore
	}
	why.Search.Level, why.Search.Domain = e.Level, e.Path
	roomy := e.Cause == gang.MemberDoesNotFit || e.Cause == gang.NoDomainHasRoom
	if e.NeverFits {
		why.Code = ReasonNeverFits
	} else if level > lowestClassLevel && roomy {
		why.Message += urgencyNote
	} else if level == lowestClassLevel && roomy {
		why.Message += displaceNote(putBack)
	}
	return why
}

// search is the findings of explanation r.
func search(r binpack.Reason, schema *flotilla.ResourceSchema) *NodeSearch {
	s := &NodeSearch{Nodes: r.Nodes}
	for _, x := range r.Excluded {
		switch x.Filter {
		case binpack.FilterSelector:
			s.Filtered = append(s.Filtered, NodeFilter{Filter: FilterSelector, Detail: x.Detail, Nodes: x.Nodes})
		case binpack.FilterTaint:
			s.Filtered = append(s.Filtered, NodeFilter{Filter: FilterTaint, Detail: x.Detail, Nodes: x.Nodes})
		case binpack.FilterCordoned:
			s.Filtered = append(s.Filtered, NodeFilter{Filter: FilterCordoned, Nodes: x.Nodes})
		case binpack.FilterTooSmall, binpack.FilterNoRoom:
			name := ""
			if x.Resource >= 0 {
				name = schema.Name(x.Resource)
			}
			s.Shortfall = append(s.Shortfall, Shortfall{Resource: name, Amount: x.Short, Nodes: x.Nodes,
				WhenEmpty: x.Filter == binpack.FilterTooSmall})
		}
	}
	return s
}

// failure is a scheduling key's cached failure: the Reason of the jobs the
// cache skips after the first job, of queue queue, failed.
type failure struct {
	queue int
	// req is the job's requests, its scheduling key's (the queue tree
	// judges a key's jobs by them: failedReason).
	req flotilla.Resources
	// same is for the jobs of the first job's queue; other, naming that
	// queue, for the other queues' jobs.
	same, other Reason
}

// failureOf caches the failure why of job j of queue qi.
func failureOf(why Reason, j *flotilla.Job, qi int) failure {
	return failure{queue: qi, req: j.Requests, same: sameAs(why, j.ID, ""), other: sameAs(why, j.ID, j.Queue)}
}

// reason is the cached Reason for a job of queue qi.
func (f *failure) reason(qi int) Reason {
	if qi == f.queue {
		return f.same
	}
	return f.other
}

// sameAs is the Reason of the jobs the scheduling-key cache skips after
// job id (of queue, when not theirs) failed with first: first's code and
// findings, with Search.SameAs set and a message that says so.
func sameAs(first Reason, id, queue string) Reason {
	if first.Search != nil {
		s := *first.Search
		s.SameAs, s.SameAsQueue = id, queue
		first.Search = &s
	}
	of := ""
	if queue != "" {
		of = " of queue " + queue
	}
	first.Message = "same requirements as job " + id + of + ": " + first.Message
	return first
}
