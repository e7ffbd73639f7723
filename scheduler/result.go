package scheduler

import (
	"fmt"

	"github.com/flotilla-sched/flotilla"
)

// Result is one cycle's decision. The caller acts on it: bind Scheduled,
// evict Preempted. Nothing in it aliases the scheduler's internal state.
type Result struct {
	// Scheduled are new placements, in the order they were decided.
	Scheduled []Assignment
	// Preempted are running jobs the caller should evict.
	Preempted []Preemption
	// Unscheduled are queued jobs the cycle examined and did not place.
	Unscheduled []Unscheduled
	// NotExamined counts, per queue, the queued jobs the cycle never reached,
	// with why (lookback exhausted, round limit, rate limit).
	NotExamined []QueueRemainder
	// Queues reports every queue of the snapshot, in snapshot order.
	Queues []QueueReport
	// RateLimits is the token-bucket state to pass to the next cycle.
	RateLimits RateLimitState
	// QueuePriorities is the lottery strategy's queue-priority state to pass
	// to the next cycle: every snapshot queue's priority decayed to now
	// toward the usage of its running jobs. Zero under progressive filling.
	QueuePriorities QueuePriorityState
}

// Assignment places a job on a node.
type Assignment struct {
	Job  *flotilla.Job
	Node string
}

// PreemptionReason says which form of preemption evicted a job.
type PreemptionReason string

const (
	PreemptedForUrgency   PreemptionReason = "urgency"
	PreemptedForFairShare PreemptionReason = "fair-share"
)

// Preemption evicts a running job.
type Preemption struct {
	Job    *flotilla.Job
	Node   string
	Reason PreemptionReason
	// Share and FairShare are the victim queue's, for fair-share preemptions.
	Share, FairShare float64
	// For is the job whose placement needed the room: for an urgency
	// preemption, the higher-priority job (or the evicted job put back)
	// bound to the node; for a fair-share preemption of an evicted job that
	// new work displaced, that new job (or the gang member placed on the
	// node). It is nil for an evicted job that did not go back for any
	// other reason: a gang mate did not, its queue's class limit, or its
	// node no longer admitting it.
	For *flotilla.Job
}

// ReasonCode classifies why a job was not scheduled. Not fitting is a
// reason, never an error.
type ReasonCode uint8

const (
	// ReasonNoFit: no node had room (or matched selectors and taints).
	ReasonNoFit ReasonCode = iota + 1
	// ReasonSameAsFailed: a job with identical requirements already failed to
	// fit this cycle, so no node search was made.
	ReasonSameAsFailed
	// ReasonQueueClassLimit: the queue's limit for the job's priority class.
	ReasonQueueClassLimit
	// ReasonGlobalRateLimit: the global scheduling rate limit ran out.
	ReasonGlobalRateLimit
	// ReasonQueueRateLimit: the queue's scheduling rate limit ran out.
	ReasonQueueRateLimit
	// ReasonRoundLimit: the cycle reached maximumResourceFractionToSchedule.
	ReasonRoundLimit
	// ReasonLookback: the queue's maxQueueLookback was reached first.
	ReasonLookback
	// ReasonGangLargerThanBurst: the gang needs more tokens than a bucket holds.
	ReasonGangLargerThanBurst
	// ReasonDisplaced: placed, then displaced within the same cycle by a job
	// of higher priority (urgency preemption of a job that had not started).
	ReasonDisplaced
	// ReasonGangIncomplete: not all of the gang's members were seen.
	ReasonGangIncomplete
	// ReasonGangInvalid: the member disagrees with its gang's others.
	ReasonGangInvalid
	// ReasonGangUnsupported: the lottery strategy leases single jobs only;
	// gang members wait for progressive filling.
	ReasonGangUnsupported
)

var reasonNames = [...]string{
	ReasonNoFit:               "no-fit",
	ReasonSameAsFailed:        "same-as-failed",
	ReasonQueueClassLimit:     "queue-class-limit",
	ReasonGlobalRateLimit:     "global-rate-limit",
	ReasonQueueRateLimit:      "queue-rate-limit",
	ReasonRoundLimit:          "round-limit",
	ReasonLookback:            "lookback",
	ReasonGangLargerThanBurst: "gang-larger-than-burst",
	ReasonDisplaced:           "displaced",
	ReasonGangIncomplete:      "gang-incomplete",
	ReasonGangInvalid:         "gang-invalid",
	ReasonGangUnsupported:     "gang-unsupported",
}

func (c ReasonCode) String() string {
	if int(c) < len(reasonNames) && reasonNames[c] != "" {
		return reasonNames[c]
	}
	return fmt.Sprintf("reason(%d)", c)
}

// Reason is a code and a sentence for people.
type Reason struct {
	Code    ReasonCode
	Message string
}

func (r Reason) String() string {
	if r.Message == "" {
		return r.Code.String()
	}
	return r.Code.String() + ": " + r.Message
}

// Unscheduled is a job the cycle examined and left queued.
type Unscheduled struct {
	Job    *flotilla.Job
	Reason Reason
}

// QueueRemainder counts a queue's jobs the cycle did not reach.
type QueueRemainder struct {
	Queue  string
	Count  int
	Reason Reason
}

// QueueReport is a queue's standing at the end of the cycle.
type QueueReport struct {
	Name string
	// Allocated is what the queue's running and newly scheduled jobs request.
	Allocated flotilla.Resources
	// Running counts the queue's jobs on nodes after the cycle.
	Running int
	// Queued counts the queue's jobs still waiting after the cycle.
	Queued int
	// Share is Allocated as a fraction of the cluster under the cost model.
	Share float64
	// FairShare is weight / Σ weights of active queues.
	FairShare float64
	// AdjustedFairShare caps fair shares at demand and shares the rest.
	AdjustedFairShare float64
	// Demand is the share the queue would hold with every queued job running.
	Demand float64
}
