package scenario

import (
	flotilla "github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/textform"
)

// The types in this file mirror the scenario file format of docs/scenarios.md
// field for field: their JSON names are a public interface. Optional fields
// whose default differs from Go's zero value are pointers (nil = absent =
// the documented default); the rest take their zero value as the default.

// Fairness names a cost model: "drf" (dominant-resource fairness, the
// default) or "asset" (weighted sum of resources).
type Fairness string

// The fairness models a scenario may name.
const (
	FairnessDRF   Fairness = "drf"
	FairnessAsset Fairness = "asset"
)

// Strategy names how a round hands out the cluster: "progressive-filling"
// (the default) or "lottery" (Armada's legacy slice-and-lottery leasing by
// half-life queue priority).
type Strategy string

// The strategies a scenario may name.
const (
	StrategyProgressiveFilling Strategy = "progressive-filling"
	StrategyLottery            Strategy = "lottery"
)

// Defaults of the optional fields whose default is not Go's zero value.
const (
	DefaultProtectedFractionOfFairShare = 1.0
	DefaultEvictionProbability          = 1.0
	DefaultMaxQueueLookback             = 100000
	DefaultRoundDuration                = "1s"
	DefaultSeed                         = 1
	DefaultPriorityFactor               = 1.0
)

// Limits on expansion, so that a small file cannot ask for unbounded memory.
// A scenario that needs more belongs in a benchmark, not a scenario file.
const (
	// MaxNodes bounds the nodes of a scenario after count expansion.
	MaxNodes = 100_000
	// MaxJobs bounds the jobs of a scenario, all rounds together, after
	// count expansion.
	MaxJobs = 1_000_000
)

// File is one scenario: a configuration, a fake cluster, queues, and rounds
// of submissions, finishes and cancellations.
type File struct {
	Config Config `json:"config"`
	// PriorityClasses available to jobs; absent or empty means
	// flotilla.DefaultPriorityClasses().
	PriorityClasses []PriorityClass `json:"priorityClasses,omitempty"`
	// Nodes are node templates; at least one is required.
	Nodes []NodeTemplate `json:"nodes"`
	// Groups are the inner nodes of the queue tree (queues and groups name
	// them as parent); absent or empty with no queue naming a parent, and no
	// quota on any queue, is the flat model.
	Groups []GroupSpec `json:"groups,omitempty"`
	Queues []QueueSpec `json:"queues,omitempty"`
	Rounds []Round     `json:"rounds,omitempty"`
}

// Config carries the scheduler settings of a scenario. Every field is
// optional.
type Config struct {
	// Fairness is "drf" (default when empty) or "asset".
	Fairness Fairness `json:"fairness,omitempty"`
	// ResourceWeights are the asset-fairness weights by resource name (≥ 0).
	// They are validated under either model but only used by "asset"; nil
	// means the scheduler's defaults.
	ResourceWeights map[string]float64 `json:"resourceWeights,omitempty"`
	// IndexedResources order the smallest-fit node comparison; nil means the
	// scheduler's default order.
	IndexedResources []IndexedResource `json:"indexedResources,omitempty"`
	// ProtectedFractionOfFairShare: a queue is evictable when share /
	// max(fair share, adjusted fair share) exceeds this. Default 1; any
	// finite value ≥ 0 is accepted (0 = any queue holding anything).
	ProtectedFractionOfFairShare *float64 `json:"protectedFractionOfFairShare,omitempty"`
	// EvictionProbability is the per-node chance, in [0, 1], that
	// preemption to fair share evicts. Default 1.
	EvictionProbability *float64 `json:"evictionProbability,omitempty"`
	// MaxQueueLookback bounds the new jobs examined per queue per round.
	// Default 100000; 0 means no limit.
	MaxQueueLookback *int `json:"maxQueueLookback,omitempty"`
	// MaximumResourceFractionToSchedule caps, per resource, what one round
	// may newly schedule as a fraction in [0, 1] of the cluster; nil means
	// no cap.
	MaximumResourceFractionToSchedule map[string]float64 `json:"maximumResourceFractionToSchedule,omitempty"`
	// Token buckets (jobs per second, bucket size); rate 0 means unlimited,
	// and a positive rate needs a burst ≥ 1.
	MaximumSchedulingRate          float64 `json:"maximumSchedulingRate,omitempty"`
	MaximumSchedulingBurst         int     `json:"maximumSchedulingBurst,omitempty"`
	MaximumPerQueueSchedulingRate  float64 `json:"maximumPerQueueSchedulingRate,omitempty"`
	MaximumPerQueueSchedulingBurst int     `json:"maximumPerQueueSchedulingBurst,omitempty"`
	EnablePreferLargeJobOrdering   bool    `json:"enablePreferLargeJobOrdering,omitempty"`
	// DefaultPriorityClass is the class of jobs that name none; default
	// "armada-default". It must name a configured class.
	DefaultPriorityClass string `json:"defaultPriorityClass,omitempty"`
	// RequeuePreempted puts a preempted job back in its queue.
	RequeuePreempted bool `json:"requeuePreempted,omitempty"`
	// RoundDuration is the clock advance per round, a Go duration such as
	// "1s" or "500ms" (≥ 0). Default "1s".
	RoundDuration string `json:"roundDuration,omitempty"`
	// Seed seeds the scheduler's random source. Default 1.
	Seed *uint64 `json:"seed,omitempty"`
	// Strategy is "progressive-filling" (default when empty) or "lottery".
	// (Flotilla's addition to the format.)
	Strategy Strategy `json:"strategy,omitempty"`
	// PriorityHalftime is the lottery's queue-priority half-time, a Go
	// duration > 0 such as "10m"; required with "lottery", unused otherwise.
	PriorityHalftime string `json:"priorityHalftime,omitempty"`
	// UseProbabilisticSchedulingForAllResources skips the lottery's slice
	// round; only valid with "lottery".
	UseProbabilisticSchedulingForAllResources bool `json:"useProbabilisticSchedulingForAllResources,omitempty"`
	// UsageHalfLife turns on the queue tree's usage memory: a Go duration
	// ≥ 0 such as "1h"; empty or 0 means off.
	UsageHalfLife string `json:"usageHalfLife,omitempty"`
	// UsageWeight is how far usage moves a weight (k ≥ 0); absent or 0
	// means 1. Only with usageHalfLife.
	UsageWeight float64 `json:"usageWeight,omitempty"`
	// Topologies are the node-label hierarchies gangs may ask to be placed
	// in (a gang template's gang.topology). Absent means none.
	Topologies []TopologySpec `json:"topologies,omitempty"`
}

// TopologySpec is a named hierarchy of node labels.
type TopologySpec struct {
	// Name is required and unique; a gang naming no topology gets the one
	// named "default", else the first.
	Name string `json:"name"`
	// Levels are node label keys, outermost first; at least one, none
	// empty or repeated.
	Levels []string `json:"levels"`
}

// IndexedResource is one entry of the smallest-fit order.
type IndexedResource struct {
	Name string `json:"name"`
	// Resolution is a positive quantity; free amounts are compared rounded
	// down to multiples of it, in the resource's unit (a finer quantity rounds
	// up to one unit: a milli-cpu, a byte). Empty means 1 unit (exact).
	Resolution string `json:"resolution,omitempty"`
}

// PriorityClass is a configured priority class.
type PriorityClass struct {
	Name        string `json:"name"`
	Priority    int32  `json:"priority"`
	Preemptible bool   `json:"preemptible"`
	// MaximumResourceFractionPerQueue caps, per resource, the fraction in
	// [0, 1] of the cluster one queue may hold at this class.
	MaximumResourceFractionPerQueue map[string]float64 `json:"maximumResourceFractionPerQueue,omitempty"`
}

// NodeTemplate describes one node, or Count identical nodes named
// <name>-0 … <name>-(Count-1).
type NodeTemplate struct {
	// Name is required.
	Name string `json:"name"`
	// Count, when present, expands the template (0 = no nodes); absent means
	// one node named Name.
	Count *int `json:"count,omitempty"`
	// Cluster groups nodes; a gang lands within one cluster. Empty is the
	// default cluster. (Flotilla's addition to the format.)
	Cluster string `json:"cluster,omitempty"`
	// Resources maps resource name to quantity; required and non-empty.
	Resources     flotilla.Quantities `json:"resources"`
	Labels        map[string]string   `json:"labels,omitempty"`
	Unschedulable bool                `json:"unschedulable,omitempty"`
	Taints        []Taint             `json:"taints,omitempty"`
}

// Taint repels jobs that do not tolerate it. Key and Effect are required.
type Taint = textform.Taint

// Toleration lets a job onto tainted nodes, with Kubernetes rules: Operator
// is "Equal" (default) or "Exists"; an empty Key requires Exists; Exists
// requires an empty Value; an empty Effect matches every effect.
type Toleration = textform.Toleration

// QueueSpec is a queue.
type QueueSpec struct {
	// Name is required and unique.
	Name string `json:"name"`
	// PriorityFactor scales the queue's claim (weight 1/factor); absent or
	// 0 means 1; otherwise it must be at least flotilla.MinPriorityFactor.
	PriorityFactor *float64 `json:"priorityFactor,omitempty"`
	// LimitsByPriorityClass caps, per class and resource, the fraction in
	// [0, 1] of the cluster this queue may hold at that class. A resource
	// no node has is capacity 0: a cap on it is accepted and changes nothing.
	LimitsByPriorityClass map[string]map[string]float64 `json:"limitsByPriorityClass,omitempty"`
	// Parent names the group the queue hangs from; empty means the root.
	Parent string `json:"parent,omitempty"`
	// Guaranteed, Limit and LendingLimit are the queue's quotas, resource
	// name → quantity; a resource left out is not given (no guarantee, no
	// limit, all of the guarantee lendable).
	Guaranteed   flotilla.Quantities `json:"guaranteed,omitempty"`
	Limit        flotilla.Quantities `json:"limit,omitempty"`
	LendingLimit flotilla.Quantities `json:"lendingLimit,omitempty"`
	// Usage seeds the queue's decayed average share, in [0, 1], at round 0;
	// it matters only with config.usageHalfLife.
	Usage float64 `json:"usage,omitempty"`
}

// GroupSpec is an inner node of the queue tree: it holds no jobs, only the
// queues and groups that name it as their parent.
type GroupSpec struct {
	// Name is required and unique across groups and queues.
	Name string `json:"name"`
	// Parent names the enclosing group; empty means the root.
	Parent string `json:"parent,omitempty"`
	// PriorityFactor scales the group's claim among its siblings (weight
	// 1/factor), as for a queue: absent or 0 means 1.
	PriorityFactor *float64 `json:"priorityFactor,omitempty"`
	// Guaranteed, Limit and LendingLimit are the group's quotas, as for a
	// queue; a resource left out of guaranteed is the sum of its children's.
	Guaranteed   flotilla.Quantities `json:"guaranteed,omitempty"`
	Limit        flotilla.Quantities `json:"limit,omitempty"`
	LendingLimit flotilla.Quantities `json:"lendingLimit,omitempty"`
}

// Round is one step of a scenario: submissions, finishes and cancellations
// at its start (their order is the runner's, see the package doc), then one
// scheduling cycle.
type Round struct {
	Submit []JobTemplate `json:"submit,omitempty"`
	// Finish names running jobs that complete at the start of the round.
	Finish []string `json:"finish,omitempty"`
	// Cancel names queued or running jobs cancelled at the start of the round.
	Cancel []string `json:"cancel,omitempty"`
}

// JobTemplate describes one job, or Count identical jobs named
// <id>-0 … <id>-(Count-1).
type JobTemplate struct {
	// ID, Queue and Requests are required.
	ID     string `json:"id"`
	Queue  string `json:"queue"`
	JobSet string `json:"jobSet,omitempty"`
	// Count, when present, expands the template (0 = no jobs); absent means
	// one job named ID.
	Count *int `json:"count,omitempty"`
	// PriorityClass defaults to config.defaultPriorityClass.
	PriorityClass string `json:"priorityClass,omitempty"`
	// Priority orders jobs within a queue and class: LOWER runs first.
	Priority     uint32              `json:"priority,omitempty"`
	Requests     flotilla.Quantities `json:"requests"`
	NodeSelector map[string]string   `json:"nodeSelector,omitempty"`
	Tolerations  []Toleration        `json:"tolerations,omitempty"`
	Gang         *GangSpec           `json:"gang,omitempty"`
	// AvoidClusters (Flotilla's addition to the format) is flotilla.Job's: the
	// jobs go to a listed cluster only when no other can take them.
	AvoidClusters []string `json:"avoidClusters,omitempty"`
}

// GangSpec makes a template's jobs members of a gang. Every member of a gang
// is submitted in the same round, with the same queue, job set, priority
// class, cardinality, node-uniformity label and topology.
type GangSpec struct {
	// ID is required; it may not be reused in a later round.
	ID string `json:"id"`
	// Cardinality is the number of members; 0 or absent means the number of
	// jobs submitted with this gang id in the round. It must equal that
	// number.
	Cardinality         int    `json:"cardinality,omitempty"`
	NodeUniformityLabel string `json:"nodeUniformityLabel,omitempty"`
	// Topology places the gang in one domain of a configured topology's
	// level (config.topologies); not with nodeUniformityLabel.
	Topology *GangTopologySpec `json:"topology,omitempty"`
}

// GangTopologySpec is a gang's topology request (flotilla.GangTopology).
type GangTopologySpec struct {
	// Name names a config.topologies entry; empty means the one named
	// "default", else the first.
	Name string `json:"name,omitempty"`
	// Required and Preferred name levels of the topology by their full
	// label key; at least one is given, and Preferred is Required or
	// below it.
	Required  string `json:"required,omitempty"`
	Preferred string `json:"preferred,omitempty"`
}
