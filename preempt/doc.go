// Package preempt holds the rules of Flotilla's two forms of preemption as
// small pure functions, so that they can be read and tested apart from the
// scheduling cycle that applies them (package scheduler):
//
//   - Evictable: which queues preemption to fair share may take jobs from.
//   - Compare: the order in which urgency preemption considers victims.
//   - Fewest: the fewest victims, taken in that order, that make room.
//   - CompareRescheduling: the order in which evicted jobs are offered back
//     to their nodes; a job that must displace evicted jobs displaces those
//     rescheduled last.
//
// Nothing here touches a node database: the caller supplies what a victim
// is, and how to take it away and give it back.
package preempt
