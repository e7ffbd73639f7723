package scheduler

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/binpack"
)

// FairnessModel chooses how a queue's allocation is turned into a share of
// the cluster.
type FairnessModel string

const (
	// DominantResourceFairness: a queue's share is its largest fraction of any
	// one resource. The default, as Armada itself uses today.
	DominantResourceFairness FairnessModel = "drf"
	// AssetFairness: a weighted sum of resources in CPU-equivalent units, with
	// resource factors total_r / total_cpu (seeds/armada-priority.md).
	AssetFairness FairnessModel = "asset"
)

// Strategy chooses how a cycle hands out the cluster.
type Strategy string

const (
	// ProgressiveFilling is the default (also meant by ""): fair share by
	// progressive filling, with preemption (Armada's scheduler).
	ProgressiveFilling Strategy = "progressive-filling"
	// Lottery is Armada's legacy slice-and-lottery leasing
	// (seeds/armada-priority.md): the cluster's free resources are sliced
	// among queues in proportion to 1/effective queue priority, each queue
	// fills its slice in queue order, and the rest goes by lottery. Queue
	// priorities follow usage with PriorityHalftime, carried between cycles
	// in Snapshot.QueuePriorities / Result.QueuePriorities. It never
	// preempts.
	Lottery Strategy = "lottery"
)

// Config is everything a Scheduler needs besides a snapshot. Start from
// DefaultConfig and change what you need; New validates every field and
// reports all problems at once.
type Config struct {
	// Schema lays out every Resources vector; required.
	Schema *flotilla.ResourceSchema
	// PriorityClasses available to jobs; nil means flotilla.DefaultPriorityClasses().
	PriorityClasses []flotilla.PriorityClass
	// DefaultPriorityClass is the class of jobs that name none.
	DefaultPriorityClass string
	// Fairness is the cost model; empty means DominantResourceFairness.
	Fairness FairnessModel
	// ResourceWeights are the asset-fairness weights by resource name; nil
	// means the seed's defaults (cpu 1, nvidia.com/gpu 1, others 0).
	ResourceWeights map[string]float64
	// IndexedResources order the smallest-fit comparison; nil means gpu, cpu,
	// memory (those present in Schema) at resolution 1 (exact). A
	// Resolution is in the resource's unit of Schema (milli-cpu, bytes).
	IndexedResources []binpack.IndexedResource
	// ProtectedFractionOfFairShare: a queue is evictable to fair share when
	// its share exceeds this × max(fair share, adjusted fair share). 0 makes
	// any queue holding anything evictable.
	ProtectedFractionOfFairShare float64
	// EvictionProbability is the per-node chance that preemption to fair share
	// evicts the node's preemptible jobs, drawn from the snapshot's seed.
	EvictionProbability float64
	// MaxQueueLookback bounds how many new jobs each queue may examine per
	// cycle (skipped ones count, evicted ones do not); 0 means no limit.
	MaxQueueLookback int
	// MaximumResourceFractionToSchedule stops a cycle once what it has newly
	// scheduled exceeds this fraction of the cluster in any named resource
	// (the job that crosses the line is kept). Nil or empty means no limit.
	MaximumResourceFractionToSchedule map[string]float64
	// MaximumSchedulingRate and MaximumSchedulingBurst form a token bucket
	// (jobs per second, bucket size) over all queues; rate 0 means unlimited.
	MaximumSchedulingRate  float64
	MaximumSchedulingBurst int
	// MaximumPerQueueSchedulingRate and Burst are the same per queue.
	MaximumPerQueueSchedulingRate  float64
	MaximumPerQueueSchedulingBurst int
	// EnablePreferLargeJobOrdering: among queues tied on fraction of fair
	// share, try the one whose next job is larger first.
	EnablePreferLargeJobOrdering bool
	// Strategy is ProgressiveFilling (the default when empty) or Lottery.
	Strategy Strategy
	// PriorityHalftime is how fast a queue's priority approaches its usage
	// under the lottery: after one half-time it has moved half way
	// (priority.Decay). Required (> 0) with Lottery; only Lottery uses it.
	PriorityHalftime time.Duration
	// UseProbabilisticSchedulingForAllResources skips the lottery strategy's
	// slice round and hands out the whole cluster by lottery (Armada's
	// scheduling.useProbabilisticSchedulingForAllResources). Only Lottery
	// uses it.
	UseProbabilisticSchedulingForAllResources bool
	// ReportEveryUnscheduled makes Result.UnscheduledJobs list every job
	// examined and not placed, one record each (as a tool that shows
	// per-job reasons needs). It costs a record per job, and the cycle then
	// reads every queue to its end (or to its limits) instead of finishing
	// early a queue whose remaining jobs all failed to fit; placements are
	// the same either way.
	ReportEveryUnscheduled bool
	// UsageHalfLife turns on the queue tree's usage memory (docs/queue-tree.md
	// §8): a queue or group that used less than its fair share lately gets
	// up to (1+UsageWeight)× its weight above its guarantee, one that used
	// more down to 1/(1+UsageWeight)×. 0 is off, the default.
	UsageHalfLife time.Duration
	// UsageWeight is k of usage memory, ≥ 0; 0 means 1 when UsageHalfLife
	// is set. Only usage memory uses it.
	UsageWeight float64
	// Topologies are the node-label hierarchies gangs may ask to be placed
	// in (flotilla.GangTopology): each has a unique name and at least one
	// level, outermost first. A gang naming no topology gets the one named
	// "default", else the first. Nil means none: a job asking for a
	// topology is then invalid (ReasonInvalid), as is one naming a
	// topology or level not configured here.
	Topologies []flotilla.Topology
}

// DefaultConfig returns the documented defaults for a schema: Armada's two
// priority classes with armada-default as the default class, dominant
// resource fairness, protected fraction 1, eviction probability 1, no
// lookback limit, no rate or round limits.
func DefaultConfig(schema *flotilla.ResourceSchema) Config {
	return Config{
		Schema:                       schema,
		PriorityClasses:              flotilla.DefaultPriorityClasses(),
		DefaultPriorityClass:         flotilla.ArmadaDefault,
		Fairness:                     DominantResourceFairness,
		ProtectedFractionOfFairShare: 1,
		EvictionProbability:          1,
	}
}

// Validate reports every problem of c at once, as New would, after filling
// in the same defaults New does (nil PriorityClasses, empty
// DefaultPriorityClass, Fairness and Strategy). The result is nil or an
// errors.Join of *flotilla.FieldError values whose fields are the Config's
// field names in lower camel case, e.g. "indexedResources[1].name",
// "resourceWeights.cpu" or "priorityClasses[0].maximumResourceFractionPerQueue.cpu".
//
// A resource name the schema lacks is not an error in ResourceWeights,
// IndexedResources, MaximumResourceFractionToSchedule or a class's
// MaximumResourceFractionPerQueue (nor in a queue's LimitsByPriorityClass):
// such a resource has capacity 0 on every node, so its weight contributes
// nothing, it orders no nodes, and a cap on it never binds. Armada's default
// configuration names nvidia.com/gpu on CPU-only clusters. Empty names,
// duplicates and bad values are errors.
func (c Config) Validate() error {
	c.defaults()
	if len(c.PriorityClasses) == 0 {
		return errors.Join(flotilla.Errorf("priorityClasses", "[]", flotilla.ErrRequired, "at least one class"))
	}
	return c.validate()
}

// defaults fills in the defaults of the fields whose zero value means one.
func (c *Config) defaults() {
	if c.PriorityClasses == nil {
		c.PriorityClasses = flotilla.DefaultPriorityClasses()
	}
	if c.DefaultPriorityClass == "" {
		c.DefaultPriorityClass = flotilla.ArmadaDefault
	}
	if c.Fairness == "" {
		c.Fairness = DominantResourceFairness
	}
	if c.Strategy == "" {
		c.Strategy = ProgressiveFilling
	}
}

// validate reports every problem in c at once.
func (c *Config) validate() error {
	var errs []error
	add := func(e error) { errs = append(errs, flotilla.Problems(e)...) }
	if c.Schema == nil {
		add(flotilla.Errorf("schema", "<nil>", flotilla.ErrRequired, ""))
		return errors.Join(errs...)
	}
	names := map[string]int{}
	for i := range c.PriorityClasses {
		pc := &c.PriorityClasses[i]
		add(renamePrefix(pc.Validate(), fmt.Sprintf("priorityClass %q", pc.Name), fmt.Sprintf("priorityClasses[%d]", i)))
		if j, dup := names[pc.Name]; dup && pc.Name != "" {
			add(flotilla.Errorf(fmt.Sprintf("priorityClasses[%d].name", i), pc.Name, flotilla.ErrDuplicate, "also priorityClasses[%d]", j))
		} else if !dup {
			names[pc.Name] = i
		}
	}
	if _, ok := names[c.DefaultPriorityClass]; len(c.PriorityClasses) > 0 && (!ok || c.DefaultPriorityClass == "") {
		add(flotilla.Errorf("defaultPriorityClass", c.DefaultPriorityClass, flotilla.ErrUnknownName, "no such priority class"))
	}
	switch c.Fairness {
	case "", DominantResourceFairness, AssetFairness:
	default:
		add(flotilla.Errorf("fairness", string(c.Fairness), flotilla.ErrUnknownName, `want "drf" or "asset"`))
	}
	for _, r := range sortedKeys(c.ResourceWeights) {
		w := c.ResourceWeights[r]
		if r == "" {
			add(flotilla.Errorf("resourceWeights", "", flotilla.ErrRequired, "resource name must not be empty"))
		}
		add(checkFraction("resourceWeights."+r, w, math.Inf(1)))
	}
	for _, e := range binpack.ValidateIndexedResources(c.IndexedResources) {
		add(e)
	}
	add(checkFraction("protectedFractionOfFairShare", c.ProtectedFractionOfFairShare, math.Inf(1)))
	add(checkFraction("evictionProbability", c.EvictionProbability, 1))
	if c.MaxQueueLookback < 0 {
		add(flotilla.Errorf("maxQueueLookback", fmt.Sprint(c.MaxQueueLookback), flotilla.ErrNegative, ""))
	}
	for _, r := range sortedKeys(c.MaximumResourceFractionToSchedule) {
		if r == "" {
			add(flotilla.Errorf("maximumResourceFractionToSchedule", "", flotilla.ErrRequired, "resource name must not be empty"))
		}
		add(checkFraction("maximumResourceFractionToSchedule."+r, c.MaximumResourceFractionToSchedule[r], 1))
	}
	add(checkFraction("maximumSchedulingRate", c.MaximumSchedulingRate, math.Inf(1)))
	add(checkFraction("maximumPerQueueSchedulingRate", c.MaximumPerQueueSchedulingRate, math.Inf(1)))
	if c.MaximumSchedulingBurst < 0 {
		add(flotilla.Errorf("maximumSchedulingBurst", fmt.Sprint(c.MaximumSchedulingBurst), flotilla.ErrNegative, ""))
	}
	if c.MaximumPerQueueSchedulingBurst < 0 {
		add(flotilla.Errorf("maximumPerQueueSchedulingBurst", fmt.Sprint(c.MaximumPerQueueSchedulingBurst), flotilla.ErrNegative, ""))
	}
	if c.MaximumSchedulingRate > 0 && c.MaximumSchedulingBurst == 0 {
		add(flotilla.Errorf("maximumSchedulingBurst", "0", flotilla.ErrInconsistent, "a rate limit needs a burst ≥ 1"))
	}
	if c.MaximumPerQueueSchedulingRate > 0 && c.MaximumPerQueueSchedulingBurst == 0 {
		add(flotilla.Errorf("maximumPerQueueSchedulingBurst", "0", flotilla.ErrInconsistent, "a rate limit needs a burst ≥ 1"))
	}
	add(c.validateStrategy())
	add(flotilla.ValidateTopologies("topologies", c.Topologies))
	return errors.Join(errs...)
}

// validateStrategy checks Strategy and the fields only the lottery reads.
func (c *Config) validateStrategy() error {
	var errs []error
	switch c.Strategy {
	case "", ProgressiveFilling:
		if c.UseProbabilisticSchedulingForAllResources {
			errs = append(errs, flotilla.Errorf("useProbabilisticSchedulingForAllResources", "true", flotilla.ErrInconsistent, "only the lottery strategy uses it"))
		}
	case Lottery:
		if _, ok := c.Schema.Index("cpu"); !ok {
			errs = append(errs, flotilla.Errorf("strategy", string(c.Strategy), flotilla.ErrUnknownResource,
				"the lottery values queue usage in cpu (seeds/armada-priority.md); the schema has no cpu"))
		}
		if c.PriorityHalftime == 0 {
			errs = append(errs, flotilla.Errorf("priorityHalftime", c.PriorityHalftime.String(), flotilla.ErrRequired, "the lottery strategy needs a half-time > 0"))
		}
	default:
		errs = append(errs, flotilla.Errorf("strategy", string(c.Strategy), flotilla.ErrUnknownName, `want %q or %q`, ProgressiveFilling, Lottery))
	}
	// The same problems, classes and words as fairness.NewTree's, which
	// judges a scenario file's config.usage… fields.
	switch k := c.UsageWeight; {
	case !(k >= 0) || math.IsInf(k, 0):
		errs = append(errs, flotilla.Errorf("usageWeight", fmt.Sprint(k), flotilla.ErrOutOfRange, "must be a finite number ≥ 0"))
	case k != 0 && c.UsageHalfLife == 0:
		errs = append(errs, flotilla.Errorf("usageWeight", fmt.Sprint(k), flotilla.ErrInconsistent, "usage weight without usageHalfLife"))
	}
	if c.UsageHalfLife < 0 {
		errs = append(errs, flotilla.Errorf("usageHalfLife", c.UsageHalfLife.String(), flotilla.ErrOutOfRange, "must not be negative"))
	}
	if c.UsageHalfLife != 0 && c.Strategy == Lottery {
		errs = append(errs, flotilla.Errorf("usageHalfLife", c.UsageHalfLife.String(), flotilla.ErrInconsistent, "the lottery strategy has its own queue priorities (priorityHalftime)"))
	}
	if c.PriorityHalftime < 0 {
		errs = append(errs, flotilla.Errorf("priorityHalftime", c.PriorityHalftime.String(), flotilla.ErrNegative, ""))
	}
	return errors.Join(errs...)
}

// checkFraction accepts finite values in [0, hi]; a finite negative value is
// ErrNegative, anything else outside the range ErrOutOfRange.
func checkFraction(field string, v, hi float64) error {
	if v < 0 && !math.IsInf(v, -1) {
		return flotilla.Errorf(field, fmt.Sprint(v), flotilla.ErrNegative, "")
	}
	if math.IsNaN(v) || v < 0 || v > hi || math.IsInf(v, -1) || (math.IsInf(v, 1) && !math.IsInf(hi, 1)) {
		return flotilla.Errorf(field, fmt.Sprint(v), flotilla.ErrOutOfRange, "want a value in [0, %v]", hi)
	}
	if math.IsInf(v, 1) {
		return flotilla.Errorf(field, fmt.Sprint(v), flotilla.ErrOutOfRange, "want a finite value")
	}
	return nil
}

// renamePrefix rewrites the fields of err's *flotilla.FieldErrors that start
// with from to start with to instead, keeping the class (errors.Is) and the
// value; the result is flat: one element per problem.
func renamePrefix(err error, from, to string) error {
	return flotilla.RenameFields(err, func(field string) string {
		if rest, ok := strings.CutPrefix(field, from); ok {
			return to + rest
		}
		return field
	})
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
