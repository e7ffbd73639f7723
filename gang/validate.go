package gang

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/flotilla-sched/flotilla"
)

// ValidateSubmission checks the gangs of one submit request, the rules of
// Armada's scheduler ("Gang scheduling"): all members of a gang
// arrive in the same request, so the request can be checked whole. The
// request's jobs are grouped by Job.Gang.ID (jobs with none are not gang
// members and are skipped; a request may hold several gangs and lone jobs).
// For each gang, against its first member in request order:
//
//   - Cardinality is at least 1 (ErrOutOfRange) and every member carries
//     the same (ErrInconsistent);
//   - the request holds exactly Cardinality members (ErrInconsistent);
//   - every member is in the same queue (ErrInconsistent);
//   - every member carries the same NodeUniformityLabel and Topology
//     (ErrInconsistent);
//   - the ID is not used by earlier jobs, as used reports (ErrDuplicate;
//     a nil used means no ID is taken yet). used is called once per gang.
//
// Members may differ in priority class and priority. A nil job is reported
// as jobs[i] (ErrRequired). Every problem is reported, joined with
// errors.Join: nil jobs first, then gang by gang in the order of their
// first members. Each is a *flotilla.FieldError whose Field names the gang,
// as in
//
//	gang "g-1".cardinality "4": disagrees with another field: the request holds 3 members
//
// ValidateSubmission does not run Job.Validate (requests, tolerations, a
// cardinality set outside a gang): the caller does, per job.
func ValidateSubmission(jobs []*flotilla.Job, used func(gangID string) bool) error {
	var errs []error
	type group struct{ members []int }
	groups := make(map[string]*group)
	var order []string
	for i, j := range jobs {
		if j == nil {
			errs = append(errs, flotilla.Errorf(fmt.Sprintf("jobs[%d]", i), "", flotilla.ErrRequired, "nil job"))
			continue
		}
		id := j.Gang.ID
		if id == "" {
			continue
		}
		g, ok := groups[id]
		if !ok {
			g = &group{}
			groups[id] = g
			order = append(order, id)
		}
		g.members = append(g.members, i)
	}
	for _, id := range order {
		members := groups[id].members
		first := jobs[members[0]]
		card := first.Gang.Cardinality
		if card < 1 {
			errs = append(errs, flotilla.Errorf(field(id, "cardinality"), strconv.Itoa(card), flotilla.ErrOutOfRange,
				"job %q: a gang has at least 1 member", first.ID))
		}
		for _, i := range members[1:] {
			j := jobs[i]
			if c := j.Gang.Cardinality; c != card {
				errs = append(errs, flotilla.Errorf(field(id, "cardinality"), strconv.Itoa(c), flotilla.ErrInconsistent,
					"job %q says %d, job %q says %d", j.ID, c, first.ID, card))
			}
			if j.Queue != first.Queue {
				errs = append(errs, flotilla.Errorf(field(id, "queue"), j.Queue, flotilla.ErrInconsistent,
					"job %q is in queue %q, job %q in %q", j.ID, j.Queue, first.ID, first.Queue))
			}
			if l := j.Gang.NodeUniformityLabel; l != first.Gang.NodeUniformityLabel {
				errs = append(errs, flotilla.Errorf(field(id, "nodeUniformityLabel"), l, flotilla.ErrInconsistent,
					"job %q says %q, job %q says %q", j.ID, l, first.ID, first.Gang.NodeUniformityLabel))
			}
			if tp := j.Gang.Topology; tp != first.Gang.Topology {
				errs = append(errs, flotilla.Errorf(field(id, "topology"), topologyString(tp), flotilla.ErrInconsistent,
					"job %q says %s, job %q says %s", j.ID, topologyString(tp), first.ID, topologyString(first.Gang.Topology)))
			}
		}
		if card >= 1 && card != len(members) {
			errs = append(errs, flotilla.Errorf(field(id, "cardinality"), strconv.Itoa(card), flotilla.ErrInconsistent,
				"the request holds %d members", len(members)))
		}
		if used != nil && used(id) {
			errs = append(errs, flotilla.Errorf(field(id, "id"), id, flotilla.ErrDuplicate,
				"already used by earlier jobs; gang ids must never be reused"))
		}
	}
	return errors.Join(errs...)
}
