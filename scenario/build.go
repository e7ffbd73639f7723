package scenario

import (
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/internal/strictjson"
	"github.com/flotilla-sched/flotilla/scheduler"
)

// Built is a scenario expanded into Flotilla's vocabulary, every default
// applied. Build returns a fresh value each call; the caller may change it.
type Built struct {
	// Schema holds every resource named by some node template: the names in
	// byte order, except that "cpu", when present, comes first. Templates
	// with count 0 contribute their names too.
	Schema *flotilla.ResourceSchema
	// Settings are the config fields with defaults applied.
	Settings Settings
	// PriorityClasses are the file's, or flotilla.DefaultPriorityClasses().
	PriorityClasses []flotilla.PriorityClass
	// Nodes in file order, templates expanded by index.
	Nodes []*flotilla.Node
	// Queues in file order, with their parent and quotas (quota vectors
	// laid out by Schema, flotilla.Absent where a resource is not given).
	Queues []*flotilla.Queue
	// Groups of the queue tree in file order, nil when the file has none.
	Groups []*flotilla.QueueGroup
	// Usage seeds each queue's decayed average share at round 0
	// (queues[].usage), by queue name; nil when no queue gives one.
	Usage map[string]float64
	// Start is the time of round 0: always the Unix epoch, UTC.
	Start time.Time
	// Rounds, one per file round.
	Rounds []BuiltRound
}

// BuiltRound is one round expanded.
type BuiltRound struct {
	// Time is Start + index × Settings.RoundDuration; every job submitted in
	// the round has it as SubmitTime.
	Time time.Time
	// Submit holds the round's jobs in submit order: templates in file
	// order, a template's jobs by index. PriorityClass is always filled in
	// (the default class when the template names none) and gang members carry
	// their gang's resolved cardinality. Jobs of one template share their
	// NodeSelector map and Tolerations slice, which must be treated as
	// read-only; Requests is each job's own.
	Submit []*flotilla.Job
	// Finish and Cancel are the ids named by the round, in file order.
	Finish []string
	Cancel []string
}

// Settings are a scenario's config fields as plain typed values, defaults
// applied. Nil maps and slices mean "the scheduler's default" (ResourceWeights,
// IndexedResources) or "no limit" (MaximumResourceFractionToSchedule).
type Settings struct {
	Fairness                          Fairness
	ResourceWeights                   map[string]float64
	IndexedResources                  []ResourceResolution
	ProtectedFractionOfFairShare      float64
	EvictionProbability               float64
	MaxQueueLookback                  int
	MaximumResourceFractionToSchedule map[string]float64
	MaximumSchedulingRate             float64
	MaximumSchedulingBurst            int
	MaximumPerQueueSchedulingRate     float64
	MaximumPerQueueSchedulingBurst    int
	EnablePreferLargeJobOrdering      bool
	DefaultPriorityClass              string
	RequeuePreempted                  bool
	RoundDuration                     time.Duration
	Seed                              uint64
	// Strategy is never empty: StrategyProgressiveFilling by default.
	Strategy                                  Strategy
	PriorityHalftime                          time.Duration
	UseProbabilisticSchedulingForAllResources bool
	// UsageHalfLife is 0 when usage memory is off. UsageWeight is as the
	// file gives it: 0 means 1 (the scheduler's reading) when the
	// half-life is set.
	UsageHalfLife time.Duration
	UsageWeight   float64
	// Topologies are config.topologies; nil when none.
	Topologies []flotilla.Topology
}

// UsageOn reports whether the scenario turns usage memory on.
func (s *Settings) UsageOn() bool { return s.UsageHalfLife > 0 }

// ResourceResolution is an indexed resource with its resolution in the
// resource's unit of the schema (≥ 1): milli-cpu, bytes of memory.
type ResourceResolution struct {
	Name       string
	Resolution int64
}

// Parse decodes a scenario file strictly (see the package doc) and
// validates it, reporting every problem at once: the error is an
// errors.Join of *flotilla.FieldError values whose Field is the JSON path of
// the offending value.
//
// A value of the wrong JSON type (such as "seed": -1, or a number where a
// string belongs) does not hide the other problems: it is reported at its
// path, the rest of the file is decoded without it and validated, and
// every problem is returned together. A problem at the path of a value
// already reported as mistyped (which reads as absent) is not repeated.
func Parse(data []byte) (*File, error) {
	f := new(File)
	decodeErr := strictjson.Decode(data, f)
	if strictjson.Fatal(decodeErr) {
		return nil, decodeErr
	}
	if err := strictjson.Merge(decodeErr, f.Validate()); err != nil {
		return nil, err
	}
	return f, nil
}

// Validate reports every problem of f at once, as an errors.Join of
// *flotilla.FieldError values. It checks everything Build checks; a file
// that validates builds without error.
func (f *File) Validate() error {
	_, err := f.Build()
	return err
}

// RootField is the Field of errors about a document as a whole (syntax
// errors, empty input, trailing data).
const RootField = strictjson.RootField

// Build validates f and expands it into the vocabulary. On any problem it
// returns nil and every problem, as Validate does.
func (f *File) Build() (*Built, error) { return f.build(MaxNodes, MaxJobs) }

// build is Build with the size limits as arguments, so tests can use small ones.
func (f *File) build(maxNodes, maxJobs int) (*Built, error) {
	if f == nil {
		return nil, flotilla.Errorf(RootField, "<nil>", flotilla.ErrRequired, "")
	}
	b := &builder{f: f, out: &Built{Start: time.Unix(0, 0).UTC()}, maxNodes: maxNodes, maxJobs: maxJobs}
	b.buildSchema()
	b.config()
	b.priorityClasses()
	b.nodes()
	b.cluster()
	b.libraryConfig()
	b.queues()
	b.groups()
	b.tree()
	b.rounds()
	if len(b.errs) > 0 {
		return nil, errors.Join(b.errs...)
	}
	return b.out, nil
}

// builder accumulates problems while it expands a File.
type builder struct {
	f      *File
	out    *Built
	errs   []error
	schema *flotilla.ResourceSchema
	// classes and queueNames index what jobs and limits may name.
	classes    map[string]bool
	classNames []string
	queueNames map[string]bool
	// maxNodes and maxJobs bound expansion (MaxNodes and MaxJobs).
	maxNodes, maxJobs int
}

// add records err, flattening errors.Join results so that every problem is
// one element of the final join.
func (b *builder) add(err error) {
	b.errs = append(b.errs, flotilla.Problems(err)...)
}

func (b *builder) buildSchema() {
	set := map[string]bool{}
	for _, n := range b.f.Nodes {
		for r := range n.Resources {
			if r != "" {
				set[r] = true
			}
		}
	}
	names := slices.Sorted(maps.Keys(set))
	if i := slices.Index(names, "cpu"); i > 0 {
		names = slices.Insert(slices.Delete(names, i, i+1), 0, "cpu")
	}
	// Names are distinct and non-empty, so this cannot fail.
	s, err := flotilla.NewResourceSchema(names...)
	b.add(err)
	if s == nil {
		s, _ = flotilla.NewResourceSchema()
	}
	b.schema = s
	b.out.Schema = s
}

// parseResources parses a name→quantity map, reporting empty names itself so
// that they are not also reported as unknown resources.
func (b *builder) parseResources(field string, m map[string]string) flotilla.Resources {
	if _, ok := m[""]; ok {
		b.add(flotilla.Errorf(field, "", flotilla.ErrRequired, "a resource name is empty"))
		m = maps.Clone(m)
		delete(m, "")
	}
	r, err := b.schema.Parse(field, m)
	if err != nil {
		b.add(err)
		return b.schema.Zero()
	}
	return r
}

// ConfigFile is a file of docs/scenarios.md's config and priorityClasses
// blocks alone, with the resources a service schedules: `flotilla serve
// -config` and `flotilla simulate -config`. BuildConfig judges it exactly
// as a scenario's blocks are judged, by the same Build.
type ConfigFile struct {
	Config          Config          `json:"config"`
	PriorityClasses []PriorityClass `json:"priorityClasses,omitempty"`
	// Resources names the service's resources; absent means the caller's
	// default (serve's: cpu, memory and nvidia.com/gpu).
	Resources []string `json:"resources,omitempty"`
	// requeueSet: the file names config.requeuePreempted.
	requeueSet bool
}

// ParseConfigFile decodes a config file strictly (as Parse decodes a
// scenario); it is judged by BuildConfig.
func ParseConfigFile(data []byte) (*ConfigFile, error) {
	var c ConfigFile
	if err := strictjson.Decode(data, &c); err != nil {
		return nil, err
	}
	var keys struct {
		Config map[string]json.RawMessage `json:"config"`
	}
	if json.Unmarshal(data, &keys) == nil {
		_, c.requeueSet = keys.Config["requeuePreempted"]
	}
	return &c, nil
}

// SetsRequeuePreempted reports whether the file gives
// config.requeuePreempted (true or false), as opposed to leaving the
// default to the caller.
func (c *ConfigFile) SetsRequeuePreempted() bool { return c.requeueSet }

// BuildConfig validates c's config and priority classes over its
// resources (or over resources when c names none) as a scenario's are
// validated, every problem at once (a resource's named resources[...]),
// and returns the scheduler's configuration and the settings.
func (c *ConfigFile) BuildConfig(resources []string) (scheduler.Config, Settings, error) {
	if len(c.Resources) > 0 {
		resources = c.Resources
	}
	// A node template of count 0 gives the schema its resources and no
	// nodes: Build judges the blocks as for a scenario.
	res := make(map[string]string, len(resources))
	for _, r := range resources {
		res[r] = "0"
	}
	zero := 0
	f := &File{Config: c.Config, PriorityClasses: c.PriorityClasses,
		Nodes: []NodeTemplate{{Name: "resources", Count: &zero, Resources: res}}}
	built, err := f.Build()
	if err != nil {
		return scheduler.Config{}, Settings{}, flotilla.RenameFields(err, func(f string) string {
			if rest, ok := strings.CutPrefix(f, "nodes[0].resources"); ok {
				return "resources" + rest
			}
			return f
		})
	}
	return built.SchedulerConfig(), built.Settings, nil
}
