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
	// Preempted are running jobs the caller should evict, in job id
	// order (whatever the order of Snapshot.Running).
	Preempted []Preemption
	// OverCommitted names, in snapshot order, the nodes whose running
	// jobs request more than their total (Kubernetes lets a node's
	// allocatable shrink under its pods). The cycle treated each as full:
	// it took nothing new unless preemption brought it back under its
	// total, its evicted jobs could go back to it, and a job that only it
	// could take was explained as finding no room there (see the package
	// documentation).
	OverCommitted []string
	// Unscheduled are the queued jobs the cycle examined and did not place,
	// in groups of the same queue, reason code and scheduling key, in the
	// order each group's first job was met. Counts add up to every such
	// job; a queue whose remaining jobs all have requirements that already
	// failed this cycle is counted without being read (see
	// Config.ReportEveryUnscheduled), and the groups that opens, whose
	// jobs were never met, follow in key order.
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
	// Groups reports every Snapshot.Groups entry, in that order.
	Groups []GroupReport
	// Usage is the queue tree's usage memory to pass to the next cycle
	// (Snapshot.Usage), when Config.UsageHalfLife is set.
	Usage UsageState
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
	// node no longer admitting it. The job named made the decision; it is
	// not always in Scheduled: a job placed this cycle may itself be
	// displaced later in the cycle by one of higher priority.
	For *flotilla.Job
}

// ReasonCode classifies why a job was not scheduled. Not fitting is a
// reason, never an error.
type ReasonCode uint8

const (
	// ReasonNeverFits: the job cannot fit even on an empty cluster: no node
	// matches its node selector, tolerations and the cordons, or none that
	// matches is large enough (for a gang: no domain could hold it; see
	// tryGang). It is unresolvable until the nodes, or the job, change.
	// kube-scheduler's UnschedulableAndUnresolvable.
	ReasonNeverFits ReasonCode = iota + 1
	// ReasonNoRoom: the job would fit a matching node if that node were
	// empty, but no node has room now, counting the capacity the job may
	// take by preemption. It may fit once jobs finish or are preempted.
	// kube-scheduler's Unschedulable.
	ReasonNoRoom
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
	// negative, an unknown class, a gang topology or level Config.Topologies
	// lacks, the wrong queue or class priority, or
	// handed out out of scheduling order or twice); the message names the
	// field and value. It is never placed.
	ReasonInvalid
	// ReasonLimit: placing the job (its gang, whole) would take a node of
	// the queue tree on its queue's path over its Limit in some resource;
	// the message names that node (the queue or one of its groups).
	ReasonLimit
	// ReasonLendingLimit: placing the job would eat into capacity a node of
	// the tree off the queue's path keeps for itself (its guarantee beyond
	// its LendingLimit, not in use); the message names that node.
	ReasonLendingLimit
)

var reasonNames = [...]string{
	ReasonNeverFits:           "never-fits",
	ReasonNoRoom:              "no-room",
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
	ReasonLimit:               "limit",
	ReasonLendingLimit:        "lending limit",
}

func (c ReasonCode) String() string {
	if int(c) < len(reasonNames) && reasonNames[c] != "" {
		return reasonNames[c]
	}
	return fmt.Sprintf("reason(%d)", c)
}

// Reason is a code, a sentence for people and, for ReasonNeverFits and
// ReasonNoRoom, what the node search found, for programs. It is a small
// value; == compares Search by pointer, so compare two Reasons' searches
// by content (reflect.DeepEqual) when they may come from different
// searches. Build it with keyed fields.
type Reason struct {
	Code    ReasonCode
	Message string
	// Search is what the node search found, for ReasonNeverFits and
	// ReasonNoRoom; nil for the other codes (and for a gang the placer
	// refused as bad input, never-fits with the error as Message). Jobs skipped by the
	// scheduling-key cache share one Search; it is never changed after the
	// cycle, and must not be changed by the caller.
	Search *NodeSearch
}

// NodeSearch is what a node search that found no node says, per node.
type NodeSearch struct {
	// SameAs is the ID of the job whose node search this repeats: a job
	// with the same scheduling key failed earlier in the cycle, so no
	// search was made for this one (the scheduling-key cache), and the
	// Reason's Code and findings are that job's. Empty when the search was
	// the job's own. The cache is shared by the queues: SameAsQueue names
	// SameAs's queue when it is another queue than the job's (and the
	// message says so), and is empty otherwise.
	SameAs      string
	SameAsQueue string
	// Member is, for a gang, the ID of the member whose search this is:
	// the first that did not fit in the domain that came closest, after
	// PlacedBefore of its mates were placed there (members go largest
	// request first). Empty for a lone job, and for a gang that found no
	// domain at all.
	Member       string
	PlacedBefore int
	// Level and Domain, for a gang with a required topology, name the
	// level (its label key) and the domain (its path of label values from
	// the outermost level, "b1/r7") the search is about: where the member
	// did not fit, or, when no domain of the level had the gang's summed
	// requests free, the one with the most room. Empty otherwise.
	Level, Domain string
	// Nodes counts the nodes searched (every node, or for a gang the
	// domain's: its cluster, and the value of its uniformity label, where
	// it came closest, for the member that did not fit there). Each is
	// counted once, in Filtered or in Shortfall, so their Nodes add up to
	// Nodes. Zero when the gang found no domain at all.
	Nodes int
	// Filtered counts the nodes the job's constraints exclude: a node
	// selector term, an untolerated taint, a cordon.
	Filtered []NodeFilter
	// Shortfall counts the nodes that pass those filters but lack a
	// resource, grouped by the first resource (in schema order) each lacks,
	// too small even when empty apart from without room now.
	Shortfall []Shortfall
}

func (r Reason) String() string {
	if r.Message == "" {
		return r.Code.String()
	}
	return r.Code.String() + ": " + r.Message
}

// Filter names a check that excludes a node whatever its free capacity.
type Filter string

// The filters, in the order a node is checked against them.
const (
	FilterSelector Filter = "selector" // the node's labels lack a node-selector term
	FilterTaint    Filter = "taint"    // the node has a NoSchedule/NoExecute taint the job does not tolerate
	FilterCordoned Filter = "cordoned" // the node is unschedulable
)

// NodeFilter counts the nodes one filter excluded for one cause.
type NodeFilter struct {
	Filter Filter
	// Detail is the first selector term the node lacks, in key order
	// ("zone=a"), or its first taint the job does not tolerate
	// ("gpu=true:NoSchedule"; "gpu:NoSchedule" without a value); "" for a
	// cordon.
	Detail string
	Nodes  int
}

// Shortfall counts the nodes that lack one resource for the job.
type Shortfall struct {
	// Resource is the resource's name.
	Resource string
	// Amount is the smallest shortfall among the Nodes, in the units of
	// Job.Requests: each of them lacks at least Amount. Room is counted at
	// the level the job searched last: free capacity, plus capacity held
	// by evicted jobs not yet put back when there are any (those put back
	// earlier in the cycle run again), plus, when the job may preempt,
	// capacity held by preemptible jobs of lower priority.
	Amount int64
	Nodes  int
	// WhenEmpty is true when the nodes lack Amount even when empty (too
	// small for the job), false when they would hold it empty but lack
	// room now.
	WhenEmpty bool
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
	// Parent is the queue's group ("" for the root).
	Parent string
	// Usage is the queue's decayed average share at the cycle's time, with
	// usage memory on (Config.UsageHalfLife); 0 otherwise.
	Usage float64
}

// GroupReport is a queue group's standing at the end of the cycle. Its
// Allocated, Running, Queued, Share, Demand and Usage are its children's
// sums; FairShare and AdjustedFairShare are its part of its parent's, as
// for a queue.
type GroupReport struct {
	Name, Parent      string
	Allocated         flotilla.Resources
	Running, Queued   int
	Share             float64
	FairShare         float64
	AdjustedFairShare float64
	Demand            float64
	Usage             float64
}
