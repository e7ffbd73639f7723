package binpack

import "github.com/flotilla-sched/flotilla"

// Hold takes req from node at every level ≤ level without making any queue
// a user of the node: the capacity is spoken for, but the node's tier is
// unchanged. Preemption uses it for evicted jobs, which keep their place on
// their node against jobs searching at lower levels while, for tiers, they
// hold nothing. It is recorded in the undo log; Release is its inverse.
func (db *DB) Hold(node, level int, req flotilla.Resources) {
	db.push(node, -1, level, req, false)
	db.apply(node, -1, level, req, -1)
}

// Release gives back capacity taken by a Hold with the same arguments.
func (db *DB) Release(node, level int, req flotilla.Resources) {
	db.push(node, -1, level, req, true)
	db.apply(node, -1, level, req, +1)
}
