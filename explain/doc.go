// Package explain says what one scheduling round decided for one job, and
// why, in a form for people (WriteText) and one for scripts (WriteJSON):
// its place in its queue, its queue's share against its fair and adjusted
// fair share, per group of nodes the filter or the shortfall that kept it
// off them, the gang member that failed, for a preemption why and for
// whom, where it was placed and why there, and its priority.
//
// Scenario plays a scenario file (package scenario) up to a round and
// explains a job there, from the round's own decision (the snapshot and
// store it read, the scheduler.Result it made); it is `flotilla explain`.
// FromStatus puts what the service knows of a job (api.JobStatus with its
// Explain block) in the same form, and WriteStatus prints it as `flotilla
// status -v` does, so that the two commands read alike.
package explain
