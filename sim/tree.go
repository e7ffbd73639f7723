package sim

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/backend"
	"github.com/flotilla-sched/flotilla/fairness"
	"github.com/flotilla-sched/flotilla/scheduler"
	"github.com/flotilla-sched/flotilla/server"
)

// GroupSpec is an inner node of the queue tree (docs/queue-tree.md): it
// holds no jobs, only the queues and groups that name it as their parent.
type GroupSpec struct {
	// Name is required and unique across groups and queues.
	Name string `json:"name"`
	// Parent names the enclosing group; empty means the root.
	Parent string `json:"parent,omitempty"`
	// Weight is the group's claim among its siblings, positive; absent
	// means 1 (its priority factor is 1/Weight, as for a queue).
	Weight *float64 `json:"weight,omitempty"`
	// Guaranteed, Limit and LendingLimit are the group's quotas, resource
	// name → quantity, each resource one of the cluster file's; a resource
	// left out is not given (guaranteed: the sum of the children's; limit:
	// none; lendingLimit: all of the guarantee may be lent).
	Guaranteed   flotilla.Quantities `json:"guaranteed,omitempty"`
	Limit        flotilla.Quantities `json:"limit,omitempty"`
	LendingLimit flotilla.Quantities `json:"lendingLimit,omitempty"`
}

// treeNode is one group or queue of the workload as the tree sees it.
type treeNode struct {
	field, parent                   string // field: groups[i] or queues[i]
	weight                          *float64
	guaranteed, limit, lendingLimit map[string]string
	usage                           float64 // a queue's seed; 0 for a group
}

// nodes are the workload's groups, then its queues, as tree nodes.
func (w *Workload) nodes() []treeNode {
	out := make([]treeNode, 0, len(w.Groups)+len(w.Queues))
	for i, g := range w.Groups {
		out = append(out, treeNode{fmt.Sprintf("groups[%d]", i), g.Parent, g.Weight, g.Guaranteed, g.Limit, g.LendingLimit, 0})
	}
	for i, q := range w.Queues {
		out = append(out, treeNode{fmt.Sprintf("queues[%d]", i), q.Parent, q.Weight, q.Guaranteed, q.Limit, q.LendingLimit, q.Usage})
	}
	return out
}

// HasTree reports whether the workload leaves the flat model: it has
// groups, a queue with a parent or a quota, or usage memory.
func (w *Workload) HasTree() bool {
	return w.hierarchy() || w.UsageHalfLife != "" || w.UsageWeight != 0
}

// hierarchy reports whether the workload has groups, or a queue with a
// parent or a quota.
func (w *Workload) hierarchy() bool {
	if len(w.Groups) > 0 {
		return true
	}
	for _, q := range w.Queues {
		if q.Parent != "" || len(q.Guaranteed)+len(q.Limit)+len(q.LendingLimit) > 0 {
			return true
		}
	}
	return false
}

// quotaSchema is a schema of every resource a quota names (sorted, empty
// names left out), for judging the tree without the cluster file: a
// quantity parses by its resource's name alone.
func (w *Workload) quotaSchema() *flotilla.ResourceSchema {
	seen := map[string]bool{}
	for _, n := range w.nodes() {
		for _, m := range []map[string]string{n.guaranteed, n.limit, n.lendingLimit} {
			for r := range m {
				if r != "" {
					seen[r] = true
				}
			}
		}
	}
	s, err := flotilla.NewResourceSchema(slices.Sorted(maps.Keys(seen))...)
	if err != nil { // cannot happen: the names are distinct and non-empty
		s, _ = flotilla.NewResourceSchema()
	}
	return s
}

// factor is the priority factor of a weight as written: 0 (meaning 1) when
// absent or not a usable weight (Validate reports that).
func factor(weight *float64) float64 {
	if weight == nil || !(*weight > 0) {
		return 0
	}
	return 1 / *weight
}

// tree judges the workload's queue tree over schema with fairness.NewTree,
// the check the scheduler makes every cycle, and returns the groups and
// each queue's quota vectors (guaranteed, limit, lending limit) as the
// service takes them. Problems are at the file's paths: a quota map's at
// groups[i].guaranteed.RESOURCE and the like, a weight NewTree refuses at
// .weight with the weight as written, the usage settings at usageHalfLife
// and usageWeight. A problem at a path in reported (one Validate found
// already: a duplicate queue name, a weight that is not positive) is not
// repeated.
func (w *Workload) tree(schema *flotilla.ResourceSchema, reported map[string]bool) ([]*flotilla.QueueGroup, [][3]flotilla.Resources, []error) {
	var errs []error
	spec := fairness.TreeSpec{UsageWeight: w.UsageWeight}
	if w.UsageHalfLife != "" {
		h, err := time.ParseDuration(w.UsageHalfLife)
		switch {
		case err != nil || h < 0:
			spec.UsageHalfLife = time.Hour // reported by Validate; judge the weight as if set
		default:
			spec.UsageHalfLife = h
		}
	}
	if spec.UsageHalfLife > 0 && spec.UsageWeight == 0 {
		spec.UsageWeight = 1
	}
	nodes := w.nodes()
	vecs := make([][3]flotilla.Resources, len(nodes))
	for v, n := range nodes {
		for k, q := range []struct {
			name string
			m    map[string]string
		}{{"guaranteed", n.guaranteed}, {"limit", n.limit}, {"lendingLimit", n.lendingLimit}} {
			field := n.field + "." + q.name
			m := q.m
			if _, ok := m[""]; ok {
				errs = append(errs, flotilla.Errorf(field, "", flotilla.ErrRequired, "a resource name is empty"))
				m = maps.Clone(m)
				delete(m, "")
			}
			r, err := schema.ParsePartial(field, m)
			if err != nil {
				errs = append(errs, err)
			}
			vecs[v][k] = r
		}
		ns := fairness.NodeSpec{Parent: n.parent, PriorityFactor: factor(n.weight),
			Guaranteed: vecs[v][0], Limit: vecs[v][1], LendingLimit: vecs[v][2], Usage: n.usage}
		if v < len(w.Groups) {
			ns.Name = w.Groups[v].Name
			spec.Groups = append(spec.Groups, ns)
		} else {
			ns.Name = w.Queues[v-len(w.Groups)].Name
			spec.Queues = append(spec.Queues, ns)
		}
	}
	for _, e := range errs {
		for _, p := range flotilla.Problems(e) {
			var fe *flotilla.FieldError
			if errors.As(p, &fe) {
				reported[fe.Field] = true
			}
		}
	}
	_, err := fairness.NewTree(schema, spec)
	for _, e := range flotilla.Problems(err) {
		var fe *flotilla.FieldError
		if errors.As(e, &fe) {
			e = w.asWritten(fe, nodes)
			if errors.As(e, &fe) && reported[fe.Field] {
				continue
			}
		}
		errs = append(errs, e)
	}
	groups := make([]*flotilla.QueueGroup, len(w.Groups))
	for i, g := range w.Groups {
		groups[i] = &flotilla.QueueGroup{Name: g.Name, Parent: g.Parent, PriorityFactor: factor(g.Weight),
			Guaranteed: vecs[i][0], Limit: vecs[i][1], LendingLimit: vecs[i][2]}
	}
	return groups, vecs[len(w.Groups):], errs
}

// asWritten puts a problem of fairness.NewTree in the workload's terms:
// config.usageHalfLife and config.usageWeight are top-level fields here
// (the half-life as written, "-1h" not "-1h0m0s"), and a priority factor
// is the node's weight.
func (w *Workload) asWritten(fe *flotilla.FieldError, nodes []treeNode) error {
	out := *fe
	switch {
	case fe.Field == "config.usageHalfLife":
		out.Field = "usageHalfLife"
		if w.UsageHalfLife != "" {
			out.Value = w.UsageHalfLife
		}
	case fe.Field == "config.usageWeight":
		out.Field = "usageWeight"
	case strings.HasSuffix(fe.Field, ".priorityFactor"):
		node := strings.TrimSuffix(fe.Field, ".priorityFactor")
		out.Field = node + ".weight"
		for _, n := range nodes {
			if n.field == node && n.weight != nil {
				out.Value = strconv.FormatFloat(*n.weight, 'g', -1, 64)
			}
		}
	}
	return &out
}

// usageConfig sets sc's usage memory from the workload's usageHalfLife and
// usageWeight (Validate has judged them). A value the scheduler's
// configuration already sets differently is a problem: the run would not
// be the one either file describes.
func (w *Workload) usageConfig(sc *scheduler.Config) []error {
	var errs []error
	if w.UsageHalfLife != "" {
		h, err := time.ParseDuration(w.UsageHalfLife)
		switch {
		case err != nil:
		case sc.UsageHalfLife != 0 && sc.UsageHalfLife != h:
			errs = append(errs, flotilla.Errorf("workload.usageHalfLife", w.UsageHalfLife, flotilla.ErrInconsistent,
				"the scheduler's configuration sets usageHalfLife %s", sc.UsageHalfLife))
		default:
			sc.UsageHalfLife = h
		}
	}
	if w.UsageWeight != 0 {
		if sc.UsageWeight != 0 && sc.UsageWeight != w.UsageWeight {
			errs = append(errs, flotilla.Errorf("workload.usageWeight", strconv.FormatFloat(w.UsageWeight, 'g', -1, 64), flotilla.ErrInconsistent,
				"the scheduler's configuration sets usageWeight %g", sc.UsageWeight))
		} else {
			sc.UsageWeight = w.UsageWeight
		}
	}
	if sc.Strategy == scheduler.Lottery && w.hierarchy() {
		errs = append(errs, flotilla.Errorf("workload.groups", strconv.Itoa(len(w.Groups)), flotilla.ErrInconsistent,
			"the lottery strategy takes a flat list of queues: no groups, parents or quotas"))
	}
	return errs
}

// usageSeeds are the queues' usage seeds (queues[].usage) as the usage
// records the service restores at New (server.UsageShareKey): one per
// seeded queue and pool, u in entry 0 of n, at Start, so that each pool's
// first cycle starts from them with no time passed.
func (w *Workload) usageSeeds(n int, pools []string) []backend.UsageRecord {
	var rs []backend.UsageRecord
	for _, q := range w.Queues {
		if q.Usage == 0 {
			continue
		}
		for _, pool := range pools {
			v := make([]float64, n)
			v[0] = q.Usage
			rs = append(rs, backend.UsageRecord{Key: server.UsageShareKey(q.Name, pool), Value: v, At: Start})
		}
	}
	return rs
}

// byDepth orders groups (an acyclic tree, Validate has judged it) so that
// every group comes after its parent, each level in the given order.
func byDepth(groups []*flotilla.QueueGroup) []*flotilla.QueueGroup {
	index := make(map[string]*flotilla.QueueGroup, len(groups))
	for _, g := range groups {
		index[g.Name] = g
	}
	depth := func(g *flotilla.QueueGroup) int {
		d := 0
		for p := index[g.Parent]; p != nil && d <= len(groups); p = index[p.Parent] {
			d++
		}
		return d
	}
	out := slices.Clone(groups)
	slices.SortStableFunc(out, func(a, b *flotilla.QueueGroup) int { return depth(a) - depth(b) })
	return out
}
