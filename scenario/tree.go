package scenario

import (
	"errors"
	"fmt"
	"maps"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/fairness"
)

// groups converts the queue tree's groups; the tree as a whole (names,
// parents, cycles, quotas against each other, usage) is judged by tree.
func (b *builder) groups() {
	for i, g := range b.f.Groups {
		f := fmt.Sprintf("groups[%d]", i)
		out := &flotilla.QueueGroup{Name: g.Name, Parent: g.Parent, PriorityFactor: DefaultPriorityFactor}
		if g.PriorityFactor != nil && *g.PriorityFactor != 0 {
			out.PriorityFactor = *g.PriorityFactor
		}
		out.Guaranteed, out.Limit, out.LendingLimit = b.quotas(f, g.Guaranteed, g.Limit, g.LendingLimit)
		b.out.Groups = append(b.out.Groups, out)
	}
}

// quotas parses a node's guaranteed, limit and lendingLimit maps (field f
// is the node's path) into quota vectors, flotilla.Absent where a resource
// is left out, nil for an absent or empty map (and for a map with errors,
// which are reported).
func (b *builder) quotas(f string, guaranteed, limit, lending map[string]string) (g, l, ll flotilla.Resources) {
	parse := func(name string, m map[string]string) flotilla.Resources {
		field := f + "." + name
		if _, ok := m[""]; ok {
			b.add(flotilla.Errorf(field, "", flotilla.ErrRequired, "a resource name is empty"))
			m = maps.Clone(m)
			delete(m, "")
		}
		r, err := b.schema.ParsePartial(field, m)
		b.add(err)
		return r
	}
	return parse("guaranteed", guaranteed), parse("limit", limit), parse("lendingLimit", lending)
}

// tree judges the queue tree with fairness.NewTree, the check the
// scheduler makes, whose problems carry the file's paths already
// (groups[i]..., queues[i]..., config.usage...). A problem at a path
// already reported (a queue's duplicate name or bad priority factor, which
// Queue.Validate and the format judge too; a quota map that did not parse)
// is not repeated.
func (b *builder) tree() {
	spec := b.out.TreeSpec()
	for i := range spec.Queues { // by index: Built.Usage is by name, and names may repeat here
		spec.Queues[i].Usage = b.f.Queues[i].Usage
	}
	_, err := fairness.NewTree(b.schema, spec)
	reported := map[string]bool{}
	for _, e := range b.errs {
		var fe *flotilla.FieldError
		if errors.As(e, &fe) {
			reported[fe.Field] = true
		}
	}
	hl := b.f.Config.UsageHalfLife
	for _, e := range flotilla.Problems(err) {
		var fe *flotilla.FieldError
		if errors.As(e, &fe) {
			if reported[fe.Field] {
				continue
			}
			if fe.Field == "config.usageHalfLife" && hl != "" {
				e = &flotilla.FieldError{Field: fe.Field, Value: hl, Err: fe.Err} // as written: "-1h", not "-1h0m0s"
			}
		}
		b.add(e)
	}
}

// TreeSpec is the scenario's queue tree as fairness.NewTree takes it:
// groups and queues in file order with their parents, priority factors,
// quotas and usage seeds, and the usage settings (usageWeight as given: 0
// means 1 when the half-life is set, resolved here).
func (b *Built) TreeSpec() fairness.TreeSpec {
	spec := fairness.TreeSpec{UsageHalfLife: b.Settings.UsageHalfLife, UsageWeight: b.Settings.UsageWeight}
	if spec.UsageHalfLife > 0 && spec.UsageWeight == 0 {
		spec.UsageWeight = 1
	}
	for _, g := range b.Groups {
		spec.Groups = append(spec.Groups, fairness.GroupSpec(g))
	}
	for _, q := range b.Queues {
		n := fairness.QueueSpec(q)
		n.Usage = b.Usage[q.Name]
		spec.Queues = append(spec.Queues, n)
	}
	return spec
}
