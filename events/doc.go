// Package events is the vocabulary of the queueing service's job history:
// the event types of a job's life cycle, the job state machine as a pure
// function, and replay, which rebuilds every job of a job set from its log.
//
// # The life cycle
//
// A job is in exactly one State. Every change of state is one Event in its
// job set's log, and Transition is the whole state machine:
//
//	from             event                       to
//	(none)           submitted                   queued
//	queued           leased                      leased
//	leased           running                     running
//	running          succeeded                   succeeded
//	leased, running  failed                      failed
//	leased, running  lease-expired, -returned    queued (Requeued) or failed
//	leased, running  preempted                   preempted, or queued (Requeued)
//	queued           cancelled                   cancelled
//	leased, running  cancel-requested            unchanged, cancel pending
//	leased, running  cancelled (cancel pending)  cancelled
//	queued           reprioritized (priority)    queued, with the new priority
//	leased, running  run-failed (rule)           queued
//
// succeeded, failed, cancelled and preempted are terminal. Anything else is
// refused with a *TransitionError (errors.Is(err, ErrRefused)) and changes
// nothing. A lease-expired or lease-returned event counts as a failed
// attempt on its cluster (Job.FailedClusters); whether the job is queued
// again or fails (attempts exhausted) is the service's decision, carried in
// the event's Requeued field, so that replay needs no configuration.
//
// # Retry policies
//
// A queue's RetryPolicy (docs/operator-commands.md's form; ParseRetryPolicy, Check)
// decides a failed run: RetryPolicy.Decide matches its exit code and
// FailureReason against the rules, first match first, within the rule's
// retry limit and the policy's maxAttempts. A retried run is a run-failed
// event naming the rule (Event.Rule) and whether the job avoids the node
// from then on (Event.AvoidNode); Transition counts the retries per rule
// (Job.Retries) and collects the nodes (Job.AvoidNodes), so that replay
// rebuilds them without the policy, which may have changed since.
//
// # Logs and replay
//
// Each job set has one log. Its events carry sequence numbers 1, 2, 3, …
// with no gaps, never reused. A JobSet applies events in that order and
// refuses a gap, a repeat or an event of another job set; Replay builds a
// JobSet from a whole log. Live processing and replay are the same code, so
// a service that applies each event as it stores it holds, at every moment,
// exactly the state a replay of its logs would rebuild.
//
// The package does no I/O, reads no clock (event times come from the
// caller) and starts no goroutines. A JobSet is not safe for concurrent
// use; Transition is a pure function.
package events
