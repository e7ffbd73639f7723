package binpack

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/google/btree"

	"github.com/flotilla-sched/flotilla"
)

// MaxIndexedResources is the most resources one index key may hold.
const MaxIndexedResources = 4

// defaultIndexedNames are the names indexed when Options.IndexedResources
// is empty, in this order, keeping those the schema has.
var defaultIndexedNames = [...]string{"nvidia.com/gpu", "cpu", "memory"}

// IndexedResource is one component of the smallest-fit key: nodes are
// compared on the free amount of Name rounded down to a multiple of
// Resolution (in the resource's unit of the schema, at least 1: a
// resolution of 1 compares exact amounts).
type IndexedResource struct {
	Name       string
	Resolution int64
}

// Options configure a DB.
type Options struct {
	// Schema lays out every Resources vector. Required.
	Schema *flotilla.ResourceSchema
	// IndexedResources orders the smallest-fit comparison. Empty means
	// "nvidia.com/gpu", "cpu", "memory" (those in the schema, resolution 1);
	// if the schema has none of these, its first MaxIndexedResources
	// resources. At most MaxIndexedResources entries (see
	// ValidateIndexedResources); a name the schema lacks is skipped.
	IndexedResources []IndexedResource
	// Levels are the distinct priority-class priorities, strictly ascending.
	// Jobs are bound and queries made at a level index into this list.
	Levels []int32
	// Queues is the number of queues; queues are the ints 0..Queues-1.
	Queues int
}

// ConstraintID names an interned (node selector, tolerations) pair; see
// DB.Constraints.
type ConstraintID int32

// NoConstraint is the ConstraintID of jobs with no node selector and no
// tolerations. Such jobs still cannot use nodes with NoSchedule or NoExecute
// taints.
const NoConstraint ConstraintID = 0

// Owner values of a node other than a queue number.
const (
	ownerUnused int32 = -1 // no jobs bound
	ownerShared int32 = -2 // jobs of two or more queues bound
)

// Tier is the class of a node as seen by one queue; Select tries the tiers
// in this order.
type Tier uint8

// The tiers.
const (
	TierOwn    Tier = iota // only this queue has jobs on the node
	TierUnused             // no jobs on the node
	TierJoined             // this queue and others have jobs on the node
	TierShared             // only other queues have jobs on the node
)

func (t Tier) String() string {
	switch t {
	case TierOwn:
		return "own"
	case TierUnused:
		return "unused"
	case TierJoined:
		return "joined"
	case TierShared:
		return "shared"
	}
	return fmt.Sprintf("Tier(%d)", uint8(t))
}

type userCount struct {
	queue int32
	jobs  int32
	pos   int32 // of the node in the DB's qnodes[queue]
}

// joinedWalkMax is the longest list of a queue's nodes that Select walks
// for the joined tier; past it, it scans the all index instead.
const joinedWalkMax = 64

// DB is the node database. See the package documentation.
type DB struct {
	schema *flotilla.ResourceSchema
	nodes  []*flotilla.Node
	byName map[string]int
	levels []int32
	queues int
	nres   int
	nlev   int

	// alloc holds allocatable per node, level and resource at
	// ((node*nlev)+level)*nres + resource.
	alloc    []int64
	nidx     int
	idxRes   [MaxIndexedResources]int
	idxResol [MaxIndexedResources]int64
	cordoned []bool
	users    [][]userCount
	// qnodes[q] lists, in no order, the nodes queue q has jobs on: the
	// joined tier of a queue on few nodes is found by walking them.
	qnodes     [][]int32
	joinedWalk int

	// tierIx[l] answers the own and unused tiers at level l, allIx[l] the
	// shared tier; see index.
	tierIx []*index
	allIx  []*index

	cons      []constraint
	consIndex map[string]ConstraintID
	consBuf   []byte
	consKeys  []string

	log    []record
	logRes []int64
	serial uint64 // of the next record
	base   uint64 // serial standing for "before the first record"

	scan  scanState
	visit func(item) bool
}

// New builds a DB over nodes, all initially empty (no jobs bound): bind the
// running jobs next, then Forget. The DB keeps the node pointers and their
// contents must not change while it is in use (Total and Unschedulable are
// copied now; Labels and Taints are read when a constraint is first
// interned and by Explain). Every problem with opts or nodes is reported,
// joined with errors.Join, each a *flotilla.FieldError; New never panics.
// It does not run flotilla's Node.Validate (taint effects, label keys).
//
// New is O(N·L·log N) for N nodes and L levels.
func New(opts Options, nodes []*flotilla.Node) (*DB, error) {
	var errs []error
	if opts.Schema == nil {
		errs = append(errs, flotilla.Errorf("schema", "", flotilla.ErrRequired, ""))
	}
	errs = append(errs, validateLevels(opts.Levels)...)
	if opts.Queues < 0 {
		errs = append(errs, flotilla.Errorf("queues", fmt.Sprint(opts.Queues), flotilla.ErrNegative, ""))
	} else if opts.Queues > math.MaxInt32 {
		errs = append(errs, flotilla.Errorf("queues", fmt.Sprint(opts.Queues), flotilla.ErrOutOfRange, "at most %d", math.MaxInt32))
	}
	if len(nodes) > math.MaxInt32 {
		errs = append(errs, flotilla.Errorf("nodes", fmt.Sprint(len(nodes)), flotilla.ErrOutOfRange, "at most %d nodes", math.MaxInt32))
	}
	db := &DB{
		schema: opts.Schema,
		levels: slices.Clone(opts.Levels),
		queues: opts.Queues,
		nlev:   len(opts.Levels),
		base:   1,
		serial: 2,
	}
	if opts.Schema != nil {
		db.nres = opts.Schema.Len()
		errs = append(errs, db.setIndexed(opts.IndexedResources)...)
	}
	errs = append(errs, db.validateNodes(nodes)...)
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	db.build()
	return db, nil
}

func validateLevels(levels []int32) []error {
	if len(levels) == 0 {
		return []error{flotilla.Errorf("levels", "", flotilla.ErrRequired, "at least one priority level")}
	}
	var errs []error
	for i := 1; i < len(levels); i++ {
		field := fmt.Sprintf("levels[%d]", i)
		v := fmt.Sprint(levels[i])
		switch {
		case levels[i] == levels[i-1]:
			errs = append(errs, flotilla.Errorf(field, v, flotilla.ErrDuplicate, "levels must be strictly ascending"))
		case levels[i] < levels[i-1]:
			errs = append(errs, flotilla.Errorf(field, v, flotilla.ErrOutOfRange, "levels must be strictly ascending; previous is %d", levels[i-1]))
		}
	}
	return errs
}

func (db *DB) setIndexed(ir []IndexedResource) []error {
	s := db.schema
	if len(ir) == 0 {
		for _, name := range defaultIndexedNames {
			if i, ok := s.Index(name); ok {
				db.idxRes[db.nidx], db.idxResol[db.nidx] = i, 1
				db.nidx++
			}
		}
		if db.nidx == 0 {
			db.nidx = min(s.Len(), MaxIndexedResources)
			for i := 0; i < db.nidx; i++ {
				db.idxRes[i], db.idxResol[i] = i, 1
			}
		}
		return nil
	}
	errs := ValidateIndexedResources(ir)
	for _, r := range ir[:min(len(ir), MaxIndexedResources)] {
		// A resource absent from the schema has capacity 0 on every node:
		// it adds nothing to the key, so it is skipped.
		if i, ok := s.Index(r.Name); ok && r.Resolution >= 1 && !slices.Contains(db.idxRes[:db.nidx], i) {
			db.idxRes[db.nidx], db.idxResol[db.nidx] = i, r.Resolution
			db.nidx++
		}
	}
	return errs
}

// ValidateIndexedResources reports every problem with an explicit list of
// indexed resources, each a *flotilla.FieldError with a field such as
// "indexedResources[2].name": more than MaxIndexedResources entries, an
// empty or repeated name, a resolution below 1 milli-unit. A name that is
// not in the schema is not a problem: such a resource has capacity 0 on
// every node, so it orders nothing and New skips it (Armada's default
// configuration indexes nvidia.com/gpu on clusters without GPUs).
func ValidateIndexedResources(ir []IndexedResource) []error {
	var errs []error
	if len(ir) > MaxIndexedResources {
		errs = append(errs, flotilla.Errorf("indexedResources", fmt.Sprint(len(ir)), flotilla.ErrOutOfRange, "at most %d indexed resources", MaxIndexedResources))
	}
	seen := make(map[string]int, len(ir))
	for k, r := range ir {
		field := fmt.Sprintf("indexedResources[%d]", k)
		if r.Name == "" {
			errs = append(errs, flotilla.Errorf(field+".name", r.Name, flotilla.ErrRequired, ""))
		} else if j, dup := seen[r.Name]; dup {
			errs = append(errs, flotilla.Errorf(field+".name", r.Name, flotilla.ErrDuplicate, "also indexedResources[%d]", j))
		} else {
			seen[r.Name] = k
		}
		if r.Resolution < 1 {
			errs = append(errs, flotilla.Errorf(field+".resolution", fmt.Sprint(r.Resolution), flotilla.ErrOutOfRange, "must be at least 1 (in the resource's unit)"))
		}
	}
	return errs
}

func (db *DB) validateNodes(nodes []*flotilla.Node) []error {
	var errs []error
	db.byName = make(map[string]int, len(nodes))
	field := func(i int, sub string) string { return fmt.Sprintf("nodes[%d]%s", i, sub) }
	for i, n := range nodes {
		if n == nil {
			errs = append(errs, flotilla.Errorf(field(i, ""), "", flotilla.ErrRequired, ""))
			continue
		}
		if n.Name == "" {
			errs = append(errs, flotilla.Errorf(field(i, ".name"), "", flotilla.ErrRequired, ""))
		} else if j, dup := db.byName[n.Name]; dup {
			errs = append(errs, flotilla.Errorf(field(i, ".name"), n.Name, flotilla.ErrDuplicate, "same as nodes[%d]", j))
		} else {
			db.byName[n.Name] = i
		}
		if db.schema == nil {
			continue
		}
		if len(n.Total) != db.nres {
			errs = append(errs, flotilla.Errorf(field(i, ".total"), fmt.Sprint([]int64(n.Total)), flotilla.ErrMalformed,
				"has %d resources, schema has %d", len(n.Total), db.nres))
			continue
		}
		for r, v := range n.Total {
			if v < 0 {
				errs = append(errs, flotilla.Errorf(field(i, ".total."+db.schema.Name(r)), db.schema.Quantity(r, v), flotilla.ErrNegative, ""))
			}
		}
	}
	db.nodes = slices.Clone(nodes)
	return errs
}

// build fills the dense arrays and indexes of a validated DB.
func (db *DB) build() {
	n, L, R := len(db.nodes), db.nlev, db.nres
	db.alloc = make([]int64, n*L*R)
	db.cordoned = make([]bool, n)
	db.users = make([][]userCount, n)
	db.qnodes = make([][]int32, db.queues)
	db.joinedWalk = joinedWalkMax
	slab := make([]userCount, 2*n)
	base := make([]uint64, (n+63)/64)
	for i, node := range db.nodes {
		for l := 0; l < L; l++ {
			copy(db.alloc[(i*L+l)*R:], node.Total)
		}
		db.cordoned[i] = node.Unschedulable
		db.users[i] = slab[2*i : 2*i : 2*i+2]
		if flotilla.TaintsTolerated(node.Taints, nil) {
			base[i>>6] |= 1 << (i & 63)
		}
	}
	db.cons = []constraint{{bits: base}}
	db.consIndex = make(map[string]ConstraintID)

	// The tier trees start empty, every uncordoned node dirty and marked
	// as indexed nowhere (owner ownerShared): the first scan of a level
	// inserts each node once, under the key and owner it has then, so the
	// running jobs a scheduler binds before its first query cost no tree
	// operation (rather than an insert here and a move per node later).
	free := btree.NewFreeListG[item](256)
	db.tierIx = make([]*index, L)
	db.allIx = make([]*index, L)
	for l := 0; l < L; l++ {
		tier, all := newIndex(n, false, free), newIndex(n, true, free)
		for i := range db.nodes {
			k := db.key(i, l)
			tier.key[i], tier.owner[i] = k, ownerShared
			all.key[i], all.owner[i] = k, ownerUnused
			if !db.cordoned[i] {
				tier.mark(i)
			}
		}
		db.tierIx[l], db.allIx[l] = tier, all
	}
	db.visit = db.visitItem
}

// NodeCount is the number of nodes.
func (db *DB) NodeCount() int { return len(db.nodes) }

// Node returns node i as passed to New.
func (db *DB) Node(i int) *flotilla.Node { return db.nodes[i] }

// NodeIndex returns the index of the node with the given name.
func (db *DB) NodeIndex(name string) (int, bool) {
	i, ok := db.byName[name]
	return i, ok
}

// Levels returns a copy of the priority levels, ascending.
func (db *DB) Levels() []int32 { return slices.Clone(db.levels) }

// Level returns the index of a priority among the levels.
func (db *DB) Level(priority int32) (int, bool) { return slices.BinarySearch(db.levels, priority) }

// Queues is the number of queues.
func (db *DB) Queues() int { return db.queues }

// Schema is the resource schema.
func (db *DB) Schema() *flotilla.ResourceSchema { return db.schema }

// Allocatable returns what node can still give to a job at level: its total
// minus the requests of jobs bound at that level or above. Entries may be
// negative at a level below that of jobs bound over lower-level ones (those
// lower-level jobs are then urgency-preemption victims), and at every level
// of a node whose jobs request more than its total (an over-committed node,
// full: see the package documentation). The result is a view
// into the DB: do not modify it or keep it past the next Bind, Unbind or
// Rollback.
func (db *DB) Allocatable(node, level int) flotilla.Resources {
	b := (node*db.nlev + level) * db.nres
	return flotilla.Resources(db.alloc[b : b+db.nres : b+db.nres])
}

// Users returns, ascending, the queues with jobs bound to node.
func (db *DB) Users(node int) []int {
	u := db.users[node]
	out := make([]int, len(u))
	for i, c := range u {
		out[i] = int(c.queue)
	}
	slices.Sort(out)
	return out
}

// Jobs returns how many jobs of queue are bound to node.
func (db *DB) Jobs(node, queue int) int {
	for _, c := range db.users[node] {
		if int(c.queue) == queue {
			return int(c.jobs)
		}
	}
	return 0
}

// Tier returns the class of node for queries from queue.
func (db *DB) Tier(node, queue int) Tier {
	switch o := db.owner(node); {
	case o == ownerUnused:
		return TierUnused
	case o == int32(queue):
		return TierOwn
	case db.Jobs(node, queue) > 0:
		return TierJoined
	}
	return TierShared
}

// Cordoned reports whether node is unschedulable.
func (db *DB) Cordoned(node int) bool { return db.cordoned[node] }

func (db *DB) owner(n int) int32 {
	switch u := db.users[n]; len(u) {
	case 0:
		return ownerUnused
	case 1:
		return u[0].queue
	}
	return ownerShared
}
