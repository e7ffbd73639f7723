package fairness

import (
	"errors"
	"math"
	"strconv"
	"time"

	"github.com/flotilla-sched/flotilla"
)

// Absent marks one resource of a NodeSpec vector as not given
// (docs/queue-tree.md): in Limit it means unlimited, in Guaranteed 0 for a
// queue and "the children's sum" for a group, in LendingLimit that all of
// the guarantee may be lent. A nil vector is Absent in every resource. Any
// other negative entry is an error.
const Absent = flotilla.Absent

// TreeSpec describes a queue tree (docs/queue-tree.md): groups and leaf
// queues under an implicit root, in the scenario file's order. It is plain
// data; NewTree validates it and builds the dense Tree.
type TreeSpec struct {
	Groups []NodeSpec
	Queues []NodeSpec
	// UsageHalfLife is h of usage memory (§8); 0 means usage is off.
	UsageHalfLife time.Duration
	// UsageWeight is k of usage memory, ≥ 0; only with UsageHalfLife (the
	// caller resolves the default 1 when the file sets a half-life only).
	UsageWeight float64
}

// NodeSpec is one group or leaf queue of a TreeSpec.
type NodeSpec struct {
	Name string
	// Parent names a group; "" is the root.
	Parent string
	// PriorityFactor: the weight is 1/PriorityFactor; 0 means 1, otherwise
	// it is finite and at least flotilla.MinPriorityFactor (as for queues).
	PriorityFactor float64
	// Guaranteed, Limit and LendingLimit are per-resource quantities laid
	// out by the tree's schema; nil or an Absent entry is "not given".
	Guaranteed, Limit, LendingLimit flotilla.Resources
	// Usage seeds the decayed average share u ∈ [0,1] of a queue (§8). A
	// group's usage is its children's sum, so a group's Usage must be 0.
	Usage float64
}

// GroupSpec is the NodeSpec of a queue group.
func GroupSpec(g *flotilla.QueueGroup) NodeSpec {
	return NodeSpec{Name: g.Name, Parent: g.Parent, PriorityFactor: g.PriorityFactor,
		Guaranteed: g.Guaranteed, Limit: g.Limit, LendingLimit: g.LendingLimit}
}

// QueueSpec is the NodeSpec of a queue; its Usage seed is 0, for the
// caller to set.
func QueueSpec(q *flotilla.Queue) NodeSpec {
	return NodeSpec{Name: q.Name, Parent: q.Parent, PriorityFactor: q.PriorityFactor,
		Guaranteed: q.Guaranteed, Limit: q.Limit, LendingLimit: q.LendingLimit}
}

// Tree is a validated queue tree in dense form. Node indices: group i of the
// spec is node i, queue q is node NumGroups()+q; the implicit root is not a
// node (Parent returns -1). A Tree is immutable and safe for concurrent use;
// TreeShares.Compute reads it.
type Tree struct {
	schema      *flotilla.ResourceSchema
	nGroups     int
	names       []string
	parent      []int32   // -1 = root
	weight      []float64 // 1/priorityFactor
	usageSeed   []float64 // per queue
	halfLife    time.Duration
	usageWeight float64
	childStart  []int32 // CSR over nodes and the root (index N): children of v are childList[childStart[v]:childStart[v+1]]
	childList   []int32
	order       []int32 // top-down (breadth-first) order of every node
	maxFanOut   int
	guaranteed  []flotilla.Resources // per node, effective (a group's bubbled where not given), nil when 0
	reserve     []flotilla.Resources // per node, max(0, g − lendingLimit); nil when 0
	limit       []float64            // N×R, +Inf where unlimited
	limited     []bool               // per node: some resource has a limit
	lenders     bool                 // some node has a non-zero reserve
}

// NumGroups is the number of groups; they are nodes 0..NumGroups()-1.
func (t *Tree) NumGroups() int { return t.nGroups }

// NumQueues is the number of leaf queues; queue q is node NumGroups()+q.
func (t *Tree) NumQueues() int { return len(t.names) - t.nGroups }

// NumNodes is NumGroups()+NumQueues().
func (t *Tree) NumNodes() int { return len(t.names) }

// QueueNode is the node index of queue q.
func (t *Tree) QueueNode(q int) int { return t.nGroups + q }

// Name is node v's name.
func (t *Tree) Name(v int) string { return t.names[v] }

// Parent is node v's parent node, -1 for a child of the root.
func (t *Tree) Parent(v int) int { return int(t.parent[v]) }

// Weight is node v's configured weight 1/priorityFactor.
func (t *Tree) Weight(v int) float64 { return t.weight[v] }

// Children returns node v's children in node order (v = -1: the root's);
// the slice is the tree's own, not to be modified.
func (t *Tree) Children(v int) []int32 {
	if v < 0 {
		v = len(t.names)
	}
	return t.childList[t.childStart[v]:t.childStart[v+1]]
}

// Guaranteed is node v's effective guarantee g_eff (§3): its own where given,
// a group's children's sum where not. The vector is the tree's own.
func (t *Tree) Guaranteed(v int) flotilla.Resources {
	if t.guaranteed[v] == nil {
		return t.schema.Zero()
	}
	return t.guaranteed[v]
}

// Limit is node v's limit, one entry per resource of the schema, +Inf where
// unlimited. The slice is the tree's own.
func (t *Tree) Limit(v int) []float64 {
	nR := t.schema.Len()
	return t.limit[v*nR : (v+1)*nR]
}

// TopDown lists every node, each after its parent (breadth-first from the
// root); walk it backwards for children before parents. The slice is the
// tree's own.
func (t *Tree) TopDown() []int32 { return t.order }

// Limited reports whether node v has a limit in some resource.
func (t *Tree) Limited(v int) bool { return t.limited[v] }

// Reserve is node v's lending reserve max(0, g − lendingLimit) per resource
// (docs/queue-tree.md), nil when it keeps nothing back. The vector is the
// tree's own.
func (t *Tree) Reserve(v int) flotilla.Resources { return t.reserve[v] }

// Lenders reports whether some node has a lending reserve.
func (t *Tree) Lenders() bool { return t.lenders }

// UsageSeed is queue q's Usage from the spec.
func (t *Tree) UsageSeed(q int) float64 { return t.usageSeed[q] }

// UsageHalfLife is h (0: usage off).
func (t *Tree) UsageHalfLife() time.Duration { return t.halfLife }

// UsageWeight is k.
func (t *Tree) UsageWeight() float64 { return t.usageWeight }

// NewTree validates spec against schema and builds the Tree. Errors are
// *flotilla.FieldError values, all reported at once (errors.Join), with the
// scenario file's paths (docs/queue-tree.md): groups[i].name and
// queues[i].name (ErrRequired, ErrDuplicate across groups and queues),
// .parent (ErrUnknownName; ErrInconsistent when it names a queue or closes a
// cycle), .priorityFactor (ErrOutOfRange), .guaranteed/.limit/.lendingLimit
// (ErrInconsistent for a vector of the wrong length; .RESOURCE with
// ErrNegative for a negative quantity), .limit.RESOURCE below the effective
// guarantee and .lendingLimit.RESOURCE above it (ErrInconsistent),
// groups[i].guaranteed.RESOURCE below the children's effective guarantees
// (ErrInconsistent), queues[i].usage outside [0,1] and groups[i].usage not 0
// (ErrOutOfRange), config.usageHalfLife negative, config.usageWeight negative
// or not finite (ErrOutOfRange) or set without a half-life
// (ErrInconsistent). A caller validating a part of a larger document renames
// the paths with flotilla.RenameFields. NewTree never panics.
func NewTree(schema *flotilla.ResourceSchema, spec TreeSpec) (*Tree, error) {
	if schema == nil {
		return nil, flotilla.Errorf("schema", "", flotilla.ErrRequired, "")
	}
	b := treeBuilder{schema: schema, spec: spec, nR: schema.Len()}
	b.checkConfig()
	b.resolveNames()
	b.checkNodes()
	b.buildChildren()
	if b.vectors { // the parent links form a forest now: cycles are cut
		b.checkGuarantees()
	}
	if len(b.errs) > 0 {
		return nil, errors.Join(b.errs...)
	}
	return b.tree(), nil
}

type treeBuilder struct {
	schema  *flotilla.ResourceSchema
	spec    TreeSpec
	nR      int
	errs    []error
	names   []string
	parent  []int32
	weight  []float64
	gEff    []flotilla.Resources
	start   []int32
	list    []int32
	order   []int32
	fan     int
	vectors bool // every vector has the schema's length
}

func (b *treeBuilder) add(field, value string, class error, format string, args ...any) {
	b.errs = append(b.errs, flotilla.Errorf(field, value, class, format, args...))
}

func (b *treeBuilder) nodeField(v int) string {
	if g := len(b.spec.Groups); v >= g {
		return "queues[" + strconv.Itoa(v-g) + "]"
	}
	return "groups[" + strconv.Itoa(v) + "]"
}

func (b *treeBuilder) node(v int) *NodeSpec {
	if g := len(b.spec.Groups); v >= g {
		return &b.spec.Queues[v-g]
	}
	return &b.spec.Groups[v]
}

func (b *treeBuilder) checkConfig() {
	h, k := b.spec.UsageHalfLife, b.spec.UsageWeight
	if h < 0 {
		b.add("config.usageHalfLife", h.String(), flotilla.ErrOutOfRange, "must not be negative")
	}
	value := strconv.FormatFloat(k, 'g', -1, 64)
	switch {
	case math.IsNaN(k) || math.IsInf(k, 0) || k < 0:
		b.add("config.usageWeight", value, flotilla.ErrOutOfRange, "must be a finite number ≥ 0")
	case k != 0 && h == 0:
		b.add("config.usageWeight", value, flotilla.ErrInconsistent, "usage weight without usageHalfLife")
	}
}

// resolveNames fills names, parent and weight and checks names, parents and
// priority factors.
func (b *treeBuilder) resolveNames() {
	n := len(b.spec.Groups) + len(b.spec.Queues)
	b.names = make([]string, n)
	b.parent = make([]int32, n)
	b.weight = make([]float64, n)
	index := make(map[string]int, n)
	for v := range n {
		s := b.node(v)
		b.names[v] = s.Name
		switch _, dup := index[s.Name]; {
		case s.Name == "":
			b.add(b.nodeField(v)+".name", "", flotilla.ErrRequired, "")
		case dup:
			b.add(b.nodeField(v)+".name", s.Name, flotilla.ErrDuplicate, "names are unique across groups and queues")
		default:
			index[s.Name] = v
		}
		f := s.PriorityFactor
		switch {
		case f == 0:
			b.weight[v] = 1
		case math.IsNaN(f) || math.IsInf(f, 0) || f < flotilla.MinPriorityFactor:
			b.add(b.nodeField(v)+".priorityFactor", strconv.FormatFloat(f, 'g', -1, 64), flotilla.ErrOutOfRange,
				"must be 0 (meaning 1) or finite and at least %g", flotilla.MinPriorityFactor)
			b.weight[v] = 1
		default:
			b.weight[v] = 1 / f
		}
	}
	for v := range n {
		b.parent[v] = -1
		p := b.node(v).Parent
		if p == "" {
			continue
		}
		switch pv, ok := index[p]; {
		case !ok:
			b.add(b.nodeField(v)+".parent", p, flotilla.ErrUnknownName, "no group has this name")
		case pv >= len(b.spec.Groups):
			b.add(b.nodeField(v)+".parent", p, flotilla.ErrInconsistent, "names a queue; a parent must be a group")
		default:
			b.parent[v] = int32(pv)
		}
	}
	b.checkCycles()
}

// checkCycles reports every group on a parent cycle and cuts the cycle (so
// that the later passes see a forest).
func (b *treeBuilder) checkCycles() {
	g := len(b.spec.Groups)
	state := make([]uint8, g) // 0 unseen, 1 on the current walk, 2 done
	for start := range g {
		v := start
		for v >= 0 && state[v] == 0 {
			state[v] = 1
			v = int(b.parent[v])
		}
		cycle := -1
		if v >= 0 && state[v] == 1 { // the walk closed a cycle at v
			cycle = v
		}
		for u := start; u >= 0 && state[u] == 1; u = int(b.parent[u]) {
			state[u] = 2
		}
		for u := cycle; u >= 0; {
			b.add(b.nodeField(u)+".parent", b.spec.Groups[u].Parent, flotilla.ErrInconsistent,
				"closes a cycle of groups")
			next := int(b.parent[u])
			b.parent[u] = -1
			if next == cycle {
				break
			}
			u = next
		}
	}
}

// checkNodes checks each node's vectors and usage.
func (b *treeBuilder) checkNodes() {
	b.vectors = true
	for v := range b.names {
		s := b.node(v)
		for _, vec := range []struct {
			name string
			r    flotilla.Resources
		}{{"guaranteed", s.Guaranteed}, {"limit", s.Limit}, {"lendingLimit", s.LendingLimit}} {
			if vec.r == nil {
				continue
			}
			if len(vec.r) != b.nR {
				b.add(b.nodeField(v)+"."+vec.name, strconv.Itoa(len(vec.r)), flotilla.ErrInconsistent,
					"has %d entries, the schema %d", len(vec.r), b.nR)
				b.vectors = false
				continue
			}
			for i, x := range vec.r {
				if x < 0 && x != Absent {
					b.add(b.nodeField(v)+"."+vec.name+"."+b.schema.Name(i), strconv.FormatInt(x, 10), flotilla.ErrNegative, "")
				}
			}
		}
		u := s.Usage
		switch {
		case v < len(b.spec.Groups) && u != 0:
			b.add(b.nodeField(v)+".usage", strconv.FormatFloat(u, 'g', -1, 64), flotilla.ErrOutOfRange,
				"a group's usage is its children's sum and cannot be set")
		case !(u >= 0 && u <= 1):
			b.add(b.nodeField(v)+".usage", strconv.FormatFloat(u, 'g', -1, 64), flotilla.ErrOutOfRange, "must be in [0,1]")
		}
	}
}

// buildChildren builds the CSR child lists and the breadth-first order.
func (b *treeBuilder) buildChildren() {
	n := len(b.names)
	b.start = make([]int32, n+2)
	for v := range n {
		b.start[b.slot(v)+1]++
	}
	for v := 1; v < len(b.start); v++ {
		b.start[v] += b.start[v-1]
	}
	b.list = make([]int32, n)
	fill := make([]int32, n+1)
	copy(fill, b.start[:n+1])
	for v := range n {
		p := b.slot(v)
		b.list[fill[p]] = int32(v)
		fill[p]++
	}
	b.order = make([]int32, 0, n)
	b.order = append(b.order, b.list[b.start[n]:b.start[n+1]]...)
	for i := 0; i < len(b.order); i++ {
		v := b.order[i]
		b.order = append(b.order, b.list[b.start[v]:b.start[v+1]]...)
	}
	for v := 0; v <= n; v++ {
		b.fan = max(b.fan, int(b.start[v+1]-b.start[v]))
	}
}

func (b *treeBuilder) slot(v int) int {
	if p := b.parent[v]; p >= 0 {
		return int(p)
	}
	return len(b.names)
}

// quantity formats resource i's value x for an error.
func (b *treeBuilder) quantity(i int, x int64) string {
	if x == Absent {
		return "absent"
	}
	return b.schema.Quantity(i, x)
}

// given reports whether vector r gives resource i (a negative quantity,
// reported by checkNodes, counts as not given).
func given(r flotilla.Resources, i int) bool { return r != nil && r[i] >= 0 }

// checkGuarantees computes effective guarantees bottom-up and checks limits
// and lending limits against them and groups' guarantees against their
// children's.
func (b *treeBuilder) checkGuarantees() {
	n := len(b.names)
	b.gEff = make([]flotilla.Resources, n)
	sum := make([]flotilla.Resources, n) // children's effective guarantees
	slab := make(flotilla.Resources, n*b.nR)
	for k := n - 1; k >= 0; k-- {
		v := int(b.order[k])
		s := b.node(v)
		g := slab[v*b.nR : (v+1)*b.nR : (v+1)*b.nR]
		for i := range g {
			switch {
			case given(s.Guaranteed, i):
				g[i] = s.Guaranteed[i]
				if sum[v] != nil && sum[v][i] > g[i] {
					b.add(b.nodeField(v)+".guaranteed."+b.schema.Name(i), b.quantity(i, g[i]), flotilla.ErrInconsistent,
						"below its children's guarantees, %s", b.quantity(i, sum[v][i]))
				}
			case sum[v] != nil:
				g[i] = sum[v][i]
			}
			if given(s.Limit, i) && s.Limit[i] < g[i] {
				b.add(b.nodeField(v)+".limit."+b.schema.Name(i), b.quantity(i, s.Limit[i]), flotilla.ErrInconsistent,
					"below the guarantee, %s", b.quantity(i, g[i]))
			}
			if given(s.LendingLimit, i) && s.LendingLimit[i] > g[i] {
				b.add(b.nodeField(v)+".lendingLimit."+b.schema.Name(i), b.quantity(i, s.LendingLimit[i]), flotilla.ErrInconsistent,
					"above the guarantee, %s", b.quantity(i, g[i]))
			}
		}
		b.gEff[v] = g
		if p := b.parent[v]; p >= 0 {
			if sum[p] == nil {
				sum[p] = make(flotilla.Resources, b.nR)
			}
			for i, x := range g {
				if x > 0 && sum[p][i] > math.MaxInt64-x {
					b.add(b.nodeField(v)+".guaranteed", b.schema.String(g), flotilla.ErrOutOfRange, "guarantees overflow when summed")
					return
				}
				sum[p][i] += x
			}
		}
	}
}

func (b *treeBuilder) tree() *Tree {
	n, nR := len(b.names), b.nR
	t := &Tree{
		schema:      b.schema,
		nGroups:     len(b.spec.Groups),
		names:       b.names,
		parent:      b.parent,
		weight:      b.weight,
		usageSeed:   make([]float64, len(b.spec.Queues)),
		halfLife:    b.spec.UsageHalfLife,
		usageWeight: b.spec.UsageWeight,
		childStart:  b.start,
		childList:   b.list,
		order:       b.order,
		maxFanOut:   b.fan,
		guaranteed:  make([]flotilla.Resources, n),
		reserve:     make([]flotilla.Resources, n),
		limit:       make([]float64, n*nR),
		limited:     make([]bool, n),
	}
	for q, s := range b.spec.Queues {
		t.usageSeed[q] = s.Usage
	}
	for v := range n {
		s, g := b.node(v), b.gEff[v]
		var r flotilla.Resources
		for i := range nR {
			l := math.Inf(1)
			if given(s.Limit, i) {
				l = float64(s.Limit[i])
				t.limited[v] = true
			}
			t.limit[v*nR+i] = l
			if given(s.LendingLimit, i) && g[i] > s.LendingLimit[i] {
				if r == nil {
					r = make(flotilla.Resources, nR)
				}
				r[i] = g[i] - s.LendingLimit[i]
			}
		}
		if !g.IsZero() {
			t.guaranteed[v] = g
		}
		if r != nil {
			t.reserve[v] = r
			t.lenders = true
		}
	}
	return t
}
