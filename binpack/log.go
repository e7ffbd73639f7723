package binpack

import "github.com/flotilla-sched/flotilla"

// record is one Bind or Unbind in the undo log; its requests are in logRes
// at index·R.
type record struct {
	serial uint64
	node   int32
	queue  int32
	level  int32
	unbind bool
}

// Mark is a point in the undo log to roll back to. It stays valid while
// the log still holds every change made before it: rolling back past it or
// Forget makes it stale. The zero Mark is never valid.
type Mark struct {
	pos  int
	prev uint64 // serial of the record before pos, or the log's base
}

// Bind places a job of queue, at level index level, requesting req, on
// node: its allocatable drops by req at every level ≤ level, and queue
// becomes (or stays) one of its users. The change is recorded in the undo
// log.
//
// Bind trusts its caller: node, queue and level must be in range and req of
// the schema's length (it may panic otherwise). It does not check that req
// fits; use Select for that (binding running jobs that over-commit a node
// is allowed and shows as negative allocatable). It costs O(L·R) and no
// tree operation: the indexes of the levels that changed are brought up to
// date by the next Select at that level, O(log N) per node changed since.
// It allocates nothing in steady state.
func (db *DB) Bind(node, queue, level int, req flotilla.Resources) {
	db.push(node, queue, level, req, false)
	db.apply(node, queue, level, req, -1)
}

// Unbind is the exact inverse of a Bind with the same arguments: it
// removes one such job from node. It is recorded in the undo log. Unbinding
// a job that was never bound corrupts the accounting; like Bind it trusts
// its caller.
func (db *DB) Unbind(node, queue, level int, req flotilla.Resources) {
	db.push(node, queue, level, req, true)
	db.apply(node, queue, level, req, +1)
}

func (db *DB) push(node, queue, level int, req flotilla.Resources, unbind bool) {
	db.log = append(db.log, record{serial: db.serial, node: int32(node), queue: int32(queue), level: int32(level), unbind: unbind})
	db.logRes = append(db.logRes, req[:db.nres]...)
	db.serial++
}

// Mark returns the current point of the undo log.
func (db *DB) Mark() Mark { return Mark{pos: len(db.log), prev: db.prevSerial(len(db.log))} }

func (db *DB) prevSerial(pos int) uint64 {
	if pos == 0 {
		return db.base
	}
	return db.log[pos-1].serial
}

// Rollback undoes, newest first, every Bind and Unbind since m was taken,
// leaving allocatable, users, and so every Select answer, exactly as they
// were at m. It is idempotent: rolling back to a mark already rolled back
// to, to a mark with nothing after it, or to a stale mark does nothing.
// Marks taken before m, or at the same point, stay valid.
func (db *DB) Rollback(m Mark) {
	if m.pos >= len(db.log) || db.prevSerial(m.pos) != m.prev {
		return
	}
	R := db.nres
	for i := len(db.log) - 1; i >= m.pos; i-- {
		r := db.log[i]
		req := flotilla.Resources(db.logRes[i*R : (i+1)*R])
		if r.unbind {
			db.apply(int(r.node), int(r.queue), int(r.level), req, -1)
		} else {
			db.apply(int(r.node), int(r.queue), int(r.level), req, +1)
		}
	}
	db.log = db.log[:m.pos]
	db.logRes = db.logRes[:m.pos*R]
}

// Forget empties the undo log, keeping its memory: every change so far
// becomes permanent and every earlier Mark stale. Call it once placements
// are final (after each gang, or each cycle) so the log does not grow.
func (db *DB) Forget() {
	db.base = db.serial
	db.serial++
	db.log = db.log[:0]
	db.logRes = db.logRes[:0]
}

// Pending is the number of changes in the undo log.
func (db *DB) Pending() int { return len(db.log) }
