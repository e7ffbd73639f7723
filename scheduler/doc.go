// Package scheduler composes queue, fairness and binpack into one scheduling
// cycle: given a snapshot of nodes, queues, running and queued jobs, and the
// time, it decides which queued jobs to place on which nodes, and why the
// others wait.
//
// A cycle is progressive filling (seeds/armada-scheduler.md, "Job scheduling
// order"): among the queues' next jobs, the one from the queue whose fraction
// of its fair share would be smallest after the job is tried first (a higher
// priority class always goes first; ties by queue name). Each queue is
// bin-packed on its own: the queue's own nodes, then unused nodes, then shared
// nodes, and within each the smallest node that fits.
//
// Schedule is pure: it reads no clock (now is an argument), draws randomness
// only from the snapshot's seed, starts no goroutines and does no I/O. The
// caller acts on the Result (bind, evict) and owns the next snapshot.
//
// Limits a cycle honours, all from Config: maxQueueLookback per queue,
// maximumResourceFractionToSchedule per cycle (checked before each job, so a
// cycle may overshoot by one job), global and per-queue token buckets read at
// now (state carried in Snapshot.RateLimits / Result.RateLimits), and
// per-queue, per-priority-class resource caps. A job whose requirements equal
// one that already failed this cycle is skipped without a node search.
package scheduler
