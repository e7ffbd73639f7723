package scheduler

import (
	"time"

	"github.com/flotilla-sched/flotilla"
)

// Snapshot is the state one cycle decides over. The scheduler reads it and
// never modifies it: the caller owns every pointer in it, before and after.
type Snapshot struct {
	// Nodes is the cluster (one or more clusters, by Node.Cluster).
	Nodes []*flotilla.Node
	// Queues are the tenants; every job's queue must be among them.
	Queues []*flotilla.Queue
	// Running are jobs holding capacity on nodes now.
	Running []Running
	// Queued holds the jobs waiting, in per-queue order: a *queue.Store or
	// another implementation of the seam (see Queued). Nil means none. Its
	// priority classes must be the Config's, and it must not change during
	// the Schedule call.
	Queued Queued
	// RateLimits is the token-bucket state left by the previous cycle
	// (Result.RateLimits); the zero value means every bucket is full.
	RateLimits RateLimitState
	// QueuePriorities is the lottery strategy's queue-priority state left
	// by the previous cycle (Result.QueuePriorities); the zero value means
	// every queue's priority is 0. Progressive filling ignores it.
	QueuePriorities QueuePriorityState
	// Groups are the inner nodes of the queue tree (flotilla.QueueGroup);
	// a queue's Parent names one of them or is "" (the root). None, with
	// no queue setting Parent or a quota vector, is the flat model.
	Groups []*flotilla.QueueGroup
	// Usage is the queue tree's usage memory left by the previous cycle
	// (Result.Usage); it matters only with Config.UsageHalfLife.
	Usage UsageState
	// Seed feeds the cycle's random choices (eviction draws), so the same
	// snapshot, now and seed give the same decision.
	Seed uint64
}

// QueuePriorityState carries Armada's half-life queue priorities from one
// lottery cycle to the next (seeds/armada-priority.md, "Queue priority").
type QueuePriorityState struct {
	// Priorities maps a queue's name to its priority: its resource usage,
	// in resource-factor units (cpu cores, fairness.NewAsset's Usage),
	// decayed with the configured half-time. A queue not listed has
	// priority 0. Values must be finite and ≥ 0.
	Priorities map[string]float64
	// Time is when Priorities were computed; zero means never, and then no
	// time counts as having passed.
	Time time.Time
}

// UsageState carries each queue's decayed average share u from one cycle to
// the next (docs/queue-tree.md). At the start of a cycle every u decays from
// Time to the cycle's time toward the queue's share then, with half-life
// Config.UsageHalfLife: u ← β·u + (1−β)·share, β = 2^(−Δt/h). The decayed
// values set this cycle's usage multipliers and are Result.Usage. A cycle
// before Time (a clock stepped back) decays nothing and keeps Time.
type UsageState struct {
	// Usage maps a queue's name to u ∈ [0,1]. A queue not listed has 0.
	Usage map[string]float64
	// Time is when Usage was computed; zero means never, and then no time
	// counts as having passed.
	Time time.Time
}

// Running is a job bound to a node.
type Running struct {
	Job  *flotilla.Job
	Node string
	// NodeIndex, when > 0, says the node is Snapshot.Nodes[NodeIndex-1]:
	// a hint that spares a lookup by name. It is checked (that node's name
	// must be Node); a hint out of range or naming another node is ignored
	// and the node is found by name. 0 means no hint.
	NodeIndex int
	// Start is when the job started; it orders evicted jobs (earliest first).
	Start time.Time
	// Protected asks that the job not be preempted this cycle, by
	// urgency or to fair share, whatever its class: it holds its capacity
	// as a non-preemptible job does (and so does its gang). A caller sets
	// it for a job it cannot evict for now, such as a Kubernetes pod whose
	// eviction a PodDisruptionBudget refused until a Retry-After, so that
	// the cycle looks for other victims.
	Protected bool
}

// RateLimitState carries token buckets from one cycle to the next.
type RateLimitState struct {
	Global   Bucket
	PerQueue map[string]Bucket
}

// Bucket is one token bucket: Tokens as of Last. A zero Last means full.
type Bucket struct {
	Tokens float64
	Last   time.Time
}

// refill returns the tokens available at now for a bucket of this rate/burst.
func (b Bucket) refill(now time.Time, rate float64, burst int) float64 {
	if b.Last.IsZero() {
		return float64(burst)
	}
	dt := now.Sub(b.Last).Seconds()
	if dt < 0 {
		dt = 0
	}
	return min(float64(burst), b.Tokens+rate*dt)
}
