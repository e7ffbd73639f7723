package binpack

import (
	"github.com/google/btree"

	"github.com/flotilla-sched/flotilla"
)

const (
	btreeDegree = 32
	// jumpAfter is how many consecutive candidates failing an indexed
	// resource a scan steps over before it re-seeks past all keys sharing
	// the failing prefix.
	jumpAfter = 4
)

// item is one node in one index at one level. k holds the node's
// allocatable at that level in the indexed resources, each rounded down to
// its resolution; unused entries are zero. owner is zero in the all index.
type item struct {
	k     [MaxIndexedResources]int64
	owner int32
	node  int32
}

func itemLess(a, b item) bool {
	if a.owner != b.owner {
		return a.owner < b.owner
	}
	for i := range a.k {
		if a.k[i] != b.k[i] {
			return a.k[i] < b.k[i]
		}
	}
	return a.node < b.node
}

// floorDiv divides rounding toward negative infinity; b ≥ 1.
func floorDiv(a, b int64) int64 {
	if b == 1 {
		return a
	}
	q := a / b
	if a%b != 0 && a < 0 {
		q--
	}
	return q
}

// key is the index key of node n at level l.
func (db *DB) key(n, l int) [MaxIndexedResources]int64 {
	var k [MaxIndexedResources]int64
	a := db.alloc[(n*db.nlev+l)*db.nres:]
	for i := 0; i < db.nidx; i++ {
		k[i] = floorDiv(a[db.idxRes[i]], db.idxResol[i])
	}
	return k
}

// fits reports whether req fits node n's allocatable at level l exactly.
func (db *DB) fits(n, l int, req flotilla.Resources) bool {
	b := (n*db.nlev + l) * db.nres
	a := db.alloc[b : b+db.nres]
	for r, v := range req {
		if v > a[r] {
			return false
		}
	}
	return true
}

// Query asks for a node for one job.
type Query struct {
	// Requests is what the job needs, in the DB's schema.
	Requests flotilla.Resources
	// Level is the index, into the DB's levels, of the job's priority.
	Level int
	// Queue is the job's queue, 0..Queues-1.
	Queue int
	// Constraint is the job's interned node selector and tolerations.
	Constraint ConstraintID
	// OnlyNode restricts the query to one node, ignoring its cordon (for an
	// evicted job going back to its node); -1 means any node.
	OnlyNode int
}

// valid reports whether the query's fields are in range; field names the
// first bad one.
func (db *DB) valid(q *Query) (ok bool, field string, value int) {
	switch {
	case len(q.Requests) != db.nres:
		return false, "requests", len(q.Requests)
	case q.Level < 0 || q.Level >= db.nlev:
		return false, "level", q.Level
	case q.Queue < 0 || q.Queue >= db.queues:
		return false, "queue", q.Queue
	case q.Constraint < 0 || int(q.Constraint) >= len(db.cons):
		return false, "constraint", int(q.Constraint)
	case q.OnlyNode < -1 || q.OnlyNode >= len(db.nodes):
		return false, "onlyNode", q.OnlyNode
	}
	return true, "", 0
}

type scanMode uint8

const (
	scanTier   scanMode = iota // tier index, stop at the end of one owner
	scanJoined                 // all index, only nodes self shares with others
	scanShared                 // all index, skip nodes self uses
)

// scanState is the state of one index scan, kept in the DB so that the
// iterator is a method value made once and Select allocates nothing.
type scanState struct {
	req    flotilla.Resources
	level  int
	bits   []uint64
	rk     [MaxIndexedResources]int64
	owner  int32
	self   int32
	mode   scanMode
	misses int
	jump   bool
	pivot  item
	found  int
}

// Select returns the node a job should go to: among the nodes that fit it
// (every resource at q.Level, node selector, taints, not cordoned unless
// q.OnlyNode is set), first those whose only user is q.Queue, then unused
// ones, then the rest; within a tier the one with the smallest rounded free
// indexed resources (lexicographically), then the lowest index. A node
// with negative allocatable at q.Level (over-committed: its jobs there
// request more than its total) fits nothing, whatever the request. ok is
// false when no node fits or the query is invalid; Explain says why.
//
// Select allocates nothing. It costs O(log N) plus the candidates stepped
// over that are within the rounded key range but do not fit (exactly, or
// by selector or taints), plus O(log N) for each node changed by Bind,
// Unbind or Rollback since the last Select at this level (see index).
func (db *DB) Select(q *Query) (node int, ok bool) {
	if ok, _, _ := db.valid(q); !ok {
		return -1, false
	}
	c := &db.cons[q.Constraint]
	if q.OnlyNode >= 0 {
		n := q.OnlyNode
		if c.has(n) && db.fits(n, q.Level, q.Requests) {
			return n, true
		}
		return -1, false
	}
	s := &db.scan
	s.req, s.level, s.bits, s.self = q.Requests, q.Level, c.bits, int32(q.Queue)
	for i := 0; i < db.nidx; i++ {
		s.rk[i] = floorDiv(q.Requests[db.idxRes[i]], db.idxResol[i])
	}
	for i := db.nidx; i < MaxIndexedResources; i++ {
		s.rk[i] = 0
	}
	tier := db.tierIx[q.Level]
	tier.flush(db, q.Level)
	if n := db.scanIndex(tier.tree, int32(q.Queue), scanTier); n >= 0 {
		return db.done(n)
	}
	if n := db.scanIndex(tier.tree, ownerUnused, scanTier); n >= 0 {
		return db.done(n)
	}
	all := db.allIx[q.Level]
	all.flush(db, q.Level)
	joined := -1
	if len(db.qnodes[q.Queue]) <= db.joinedWalk {
		joined = db.walkJoined(q.Queue)
	} else {
		joined = db.scanIndex(all.tree, 0, scanJoined)
	}
	if joined >= 0 {
		return db.done(joined)
	}
	return db.done(db.scanIndex(all.tree, 0, scanShared))
}

func (db *DB) done(n int) (int, bool) {
	db.scan.req, db.scan.bits = nil, nil
	return n, n >= 0
}

func (db *DB) scanIndex(t *btree.BTreeG[item], owner int32, mode scanMode) int {
	s := &db.scan
	s.owner, s.mode, s.misses, s.found = owner, mode, 0, -1
	s.pivot = item{k: s.rk, owner: owner, node: -1}
	for {
		s.jump = false
		t.AscendGreaterOrEqual(s.pivot, db.visit)
		if !s.jump {
			return s.found
		}
	}
}

func (db *DB) visitItem(it item) bool {
	s := &db.scan
	if it.owner != s.owner {
		return false
	}
	n := int(it.node)
	switch s.mode {
	case scanJoined:
		if db.owner(n) != ownerShared || db.Jobs(n, int(s.self)) == 0 {
			return true
		}
	case scanShared:
		if db.Jobs(n, int(s.self)) > 0 {
			return true
		}
	}
	for i := 0; i < db.nidx; i++ {
		if it.k[i] < s.rk[i] {
			s.misses++
			if s.misses < jumpAfter {
				return true
			}
			// Every key from here up to (k[:i], rk[i:]) fails dimension i
			// or a later one: seek past them.
			p := it
			copy(p.k[i:], s.rk[i:])
			p.node = -1
			s.pivot, s.jump, s.misses = p, true, 0
			return false
		}
	}
	s.misses = 0
	if s.bits[n>>6]&(1<<(n&63)) == 0 || !db.fits(n, s.level, s.req) {
		return true
	}
	s.found = n
	return false
}

// apply adds sign·req to node n's allocatable at levels 0..level, adds
// (sign < 0) or removes (sign > 0) one job of queue from its users, and
// marks for re-indexing the levels whose key or owner may have changed.
func (db *DB) apply(n, queue, level int, req flotilla.Resources, sign int64) {
	oldOwner := db.owner(n)
	switch {
	case queue < 0: // Hold/Release: capacity without a user
	case sign < 0:
		db.addUser(n, int32(queue))
	default:
		db.removeUser(n, int32(queue))
	}
	L, R := db.nlev, db.nres
	for l := 0; l <= level; l++ {
		a := db.alloc[(n*L+l)*R:][:R]
		for r := range a {
			a[r] += sign * req[r]
		}
	}
	if db.cordoned[n] { // cordoned nodes are not indexed
		return
	}
	top := level
	if db.owner(n) != oldOwner {
		top = L - 1
	}
	for l := 0; l <= top; l++ {
		db.tierIx[l].mark(n)
		db.allIx[l].mark(n)
	}
}

// index is one btree over the nodes at one level, brought up to date
// lazily: Bind and Unbind only mark nodes dirty, and the next scan of the
// index re-indexes them, so a Bind costs no tree operation, several
// changes to a node between scans cost one re-index, and the shared-tier
// index is only maintained when some query gets that far.
//
// The tier index holds nodes with at most one user, keyed by (owner, key,
// node); the all index holds nodes with at least one user, keyed by (key,
// node) with owner 0.
type index struct {
	tree  *btree.BTreeG[item]
	all   bool
	key   [][MaxIndexedResources]int64 // per node: key it is indexed under
	owner []int32                      // per node: owner it is indexed under
	dirty []bool
	list  []int32 // the dirty nodes; capacity N, so never grows
}

func newIndex(n int, all bool, free *btree.FreeListG[item]) *index {
	return &index{
		tree:  btree.NewWithFreeListG(btreeDegree, itemLess, free),
		all:   all,
		key:   make([][MaxIndexedResources]int64, n),
		owner: make([]int32, n),
		dirty: make([]bool, n),
		list:  make([]int32, 0, n),
	}
}

func (x *index) mark(n int) {
	if !x.dirty[n] {
		x.dirty[n] = true
		x.list = append(x.list, int32(n))
	}
}

// flush re-indexes the dirty nodes with their current key at level l and
// owner.
func (x *index) flush(db *DB, l int) {
	for _, n := range x.list {
		x.update(n, db.key(int(n), l), db.owner(int(n)))
		x.dirty[n] = false
	}
	x.list = x.list[:0]
}

func (x *index) update(n int32, k [MaxIndexedResources]int64, o int32) {
	oldK, oldO := x.key[n], x.owner[n]
	if x.all {
		oldIn, newIn, moved := oldO != ownerUnused, o != ownerUnused, oldK != k
		if oldIn && (moved || !newIn) {
			x.tree.Delete(item{k: oldK, node: n})
		}
		if newIn && (moved || !oldIn) {
			x.tree.ReplaceOrInsert(item{k: k, node: n})
		}
	} else if oldK != k || oldO != o {
		if oldO != ownerShared {
			x.tree.Delete(item{k: oldK, owner: oldO, node: n})
		}
		if o != ownerShared {
			x.tree.ReplaceOrInsert(item{k: k, owner: o, node: n})
		}
	}
	x.key[n], x.owner[n] = k, o
}

func (db *DB) addUser(n int, q int32) {
	u := db.users[n]
	for i := range u {
		if u[i].queue == q {
			u[i].jobs++
			return
		}
	}
	db.users[n] = append(u, userCount{queue: q, jobs: 1, pos: int32(len(db.qnodes[q]))})
	db.qnodes[q] = append(db.qnodes[q], int32(n))
}

func (db *DB) removeUser(n int, q int32) {
	u := db.users[n]
	for i := range u {
		if u[i].queue == q {
			u[i].jobs--
			if u[i].jobs <= 0 {
				db.dropQueueNode(q, u[i].pos)
				u[i] = u[len(u)-1]
				db.users[n] = u[:len(u)-1]
			}
			return
		}
	}
}

// dropQueueNode removes the entry at pos from queue q's node list, moving
// the last entry into its place.
func (db *DB) dropQueueNode(q, pos int32) {
	ns := db.qnodes[q]
	last := ns[len(ns)-1]
	ns[pos] = last
	db.qnodes[q] = ns[:len(ns)-1]
	for i, c := range db.users[last] {
		if c.queue == q {
			db.users[last][i].pos = pos
			return
		}
	}
}

// walkJoined answers the joined tier from the list of the nodes queue q
// uses, as scanJoined would from the all index: among those shared with
// other queues, not cordoned, admitted by the scan's constraint and fitting
// exactly, the one with the smallest key, then the lowest index. (A node
// that fits has a key at least the request's in every indexed resource, so
// the scan's key bound filters nothing more.)
func (db *DB) walkJoined(q int) int {
	s := &db.scan
	best, bestKey := -1, [MaxIndexedResources]int64{}
	for _, n32 := range db.qnodes[q] {
		n := int(n32)
		if db.cordoned[n] || db.owner(n) != ownerShared || s.bits[n>>6]&(1<<(n&63)) == 0 || !db.fits(n, s.level, s.req) {
			continue
		}
		k := db.key(n, s.level)
		if best < 0 || keyLess(k, bestKey, n, best) {
			best, bestKey = n, k
		}
	}
	return best
}

func keyLess(a, b [MaxIndexedResources]int64, an, bn int) bool {
	for i := range a {
		if a[i] != b[i] {
			return a[i] < b[i]
		}
	}
	return an < bn
}
