package backend

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/flotilla-sched/flotilla"
)

// CheckTreeFields checks what a backend checks of the queue-tree fields of
// one queue or group (docs/queue-tree.md), field being its path ("queue
// \"A\""): each of guaranteed, limit and lendingLimit is nil or has one
// entry per resource of schema, each ≥ 0 or flotilla.Absent; the parent
// is not the node itself. How the vectors compare (limit ≥ guaranteed and
// the like) and whether the parent exists are the tree's rules, checked by
// the service over the whole tree (fairness.NewTree).
func CheckTreeFields(schema *flotilla.ResourceSchema, field, name, parent string, guaranteed, limit, lendingLimit flotilla.Resources) error {
	var errs []error
	if parent != "" && parent == name {
		errs = append(errs, flotilla.Errorf(field+".parent", parent, flotilla.ErrInconsistent, "a node cannot be its own parent"))
	}
	for _, v := range []struct {
		name string
		r    flotilla.Resources
	}{{"guaranteed", guaranteed}, {"limit", limit}, {"lendingLimit", lendingLimit}} {
		if v.r == nil {
			continue
		}
		if len(v.r) != schema.Len() {
			errs = append(errs, flotilla.Errorf(field+"."+v.name, strconv.Itoa(len(v.r)), flotilla.ErrInconsistent,
				"want %d entries, one per resource", schema.Len()))
			continue
		}
		for i, x := range v.r {
			if x < 0 && x != flotilla.Absent {
				errs = append(errs, flotilla.Errorf(field+"."+v.name+"."+schema.Name(i), strconv.FormatInt(x, 10), flotilla.ErrNegative, ""))
			}
		}
	}
	return errors.Join(errs...)
}

// ValidateGroup checks a group for storing: a name, a priority factor as
// for a queue (0 meaning 1, else finite and at least
// flotilla.MinPriorityFactor), and CheckTreeFields. Every problem is a
// *flotilla.FieldError under `group "NAME"`, all joined.
func ValidateGroup(schema *flotilla.ResourceSchema, g *flotilla.QueueGroup) error {
	p := fmt.Sprintf("group %q", g.Name)
	var errs []error
	if g.Name == "" {
		errs = append(errs, flotilla.Errorf(p+".name", "", flotilla.ErrRequired, ""))
	}
	f := g.PriorityFactor
	if math.IsNaN(f) || math.IsInf(f, 0) || f < 0 || (f != 0 && f < flotilla.MinPriorityFactor) {
		errs = append(errs, flotilla.Errorf(p+".priorityFactor", strconv.FormatFloat(f, 'g', -1, 64), flotilla.ErrOutOfRange,
			"want 0 (meaning 1) or finite and at least %g", flotilla.MinPriorityFactor))
	}
	errs = append(errs, CheckTreeFields(schema, p, g.Name, g.Parent, g.Guaranteed, g.Limit, g.LendingLimit))
	return errors.Join(errs...)
}

// CloneQuota returns a copy of a quota vector, nil when r is nil or gives
// no entry (every entry flotilla.Absent): the form backends read back.
func CloneQuota(r flotilla.Resources) flotilla.Resources {
	if !slices.ContainsFunc(r, func(x int64) bool { return x != flotilla.Absent }) {
		return nil
	}
	return slices.Clone(r)
}
