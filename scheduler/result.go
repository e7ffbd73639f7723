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
	// Unscheduled are the queued jobs the cycle examined and did not place,
	// in groups of the same queue, reason code and scheduling key, in the
	// order each group's first job was met. Counts add up to every such
	// job; a queue whose remaining jobs all have requirements that already
	// failed this cycle is counted without being read (see
	// Config.ReportEveryUnscheduled).
	Unscheduled []UnscheduledGroup
	// UnscheduledJobs lists the same jobs one by one, in the order they
	// were examined; only with Config.ReportEveryUnscheduled, nil otherwise.
	UnscheduledJobs []Unscheduled
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
	// ReasonInvalid: the job the Queued store handed out is not a valid
	// job for this configuration (nil, requests of the wrong length or
	// negative, an unknown class, the wrong queue or class priority); the
	// message names the field and value. It is never placed.
	ReasonInvalid
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
	ReasonInvalid:             "invalid",
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

// Unscheduled is a job the cycle examined and left queued. Job is nil only
// for an entry a Queued handed out without a job (ReasonInvalid).
type Unscheduled struct {
	Job    *flotilla.Job
	Reason Reason
}

// UnscheduledExamples bounds UnscheduledGroup.Examples.
const UnscheduledExamples = 3

// UnscheduledGroup is the jobs of one queue the cycle examined and left
// queued for one reason code, with one scheduling key (queue.SchedulingKey:
// identical requirements).
type UnscheduledGroup struct {
	Queue string
	Key   uint64
	// Reason is the first job's: the code all share, and its message.
	Reason Reason
	// Count is how many jobs the group holds.
	Count int
	// Examples are the first jobs of the group met, at most
	// UnscheduledExamples; fewer than Count when more jobs share the
	// group, and possibly none for jobs counted without being read.
	Examples []*flotilla.Job
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
