package scenario

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/fairness"
	"github.com/flotilla-sched/flotilla/internal/strictjson"
	"github.com/flotilla-sched/flotilla/textform"
)

// config turns the config fields into Settings, parsing what the format
// writes as strings (durations, quantities) and applying the format's
// defaults. The values are judged by the scheduler's own Config.Validate
// (see libraryConfig), not here.
func (b *builder) config() {
	c := &b.f.Config
	s := &b.out.Settings
	const p = "config."

	s.Fairness = c.Fairness
	if s.Fairness == "" {
		s.Fairness = FairnessDRF
	}
	if c.ResourceWeights != nil {
		s.ResourceWeights = maps.Clone(c.ResourceWeights)
	}
	for i, ir := range c.IndexedResources {
		res := int64(1)
		if ir.Resolution != "" {
			// In the resource's unit; a resource the schema lacks has
			// capacity 0 and its resolution orders nothing, so it is read in
			// milli-units only to report a malformed quantity.
			parse := flotilla.UnitMilli.Parse
			if r, ok := b.schema.Index(ir.Name); ok {
				parse = func(q string) (int64, error) { return b.schema.ParseQuantity(r, q) }
			}
			v, err := parse(ir.Resolution)
			if err != nil {
				b.add(&flotilla.FieldError{Field: fmt.Sprintf("%sindexedResources[%d].resolution", p, i), Value: ir.Resolution, Err: err})
			} else {
				res = v
			}
		}
		s.IndexedResources = append(s.IndexedResources, ResourceResolution{Name: ir.Name, Resolution: res})
	}
	s.ProtectedFractionOfFairShare = DefaultProtectedFractionOfFairShare
	if c.ProtectedFractionOfFairShare != nil {
		s.ProtectedFractionOfFairShare = *c.ProtectedFractionOfFairShare
	}
	s.EvictionProbability = DefaultEvictionProbability
	if c.EvictionProbability != nil {
		s.EvictionProbability = *c.EvictionProbability
	}
	s.MaxQueueLookback = DefaultMaxQueueLookback
	if c.MaxQueueLookback != nil {
		s.MaxQueueLookback = *c.MaxQueueLookback
	}
	if c.MaximumResourceFractionToSchedule != nil {
		s.MaximumResourceFractionToSchedule = maps.Clone(c.MaximumResourceFractionToSchedule)
	}
	s.MaximumSchedulingRate, s.MaximumSchedulingBurst = c.MaximumSchedulingRate, c.MaximumSchedulingBurst
	s.MaximumPerQueueSchedulingRate, s.MaximumPerQueueSchedulingBurst = c.MaximumPerQueueSchedulingRate, c.MaximumPerQueueSchedulingBurst
	s.EnablePreferLargeJobOrdering = c.EnablePreferLargeJobOrdering
	s.RequeuePreempted = c.RequeuePreempted
	s.DefaultPriorityClass = c.DefaultPriorityClass
	if s.DefaultPriorityClass == "" {
		s.DefaultPriorityClass = flotilla.ArmadaDefault
	}

	s.RoundDuration = time.Second
	if c.RoundDuration != "" {
		d, err := time.ParseDuration(c.RoundDuration)
		switch {
		case err != nil:
			b.add(flotilla.Errorf(p+"roundDuration", c.RoundDuration, flotilla.ErrMalformed, `want a Go duration such as "1s" or "250ms"`))
		case d < 0:
			b.add(flotilla.Errorf(p+"roundDuration", c.RoundDuration, flotilla.ErrNegative, ""))
		case d > 0 && int64(len(b.f.Rounds)) > math.MaxInt64/int64(d):
			b.add(flotilla.Errorf(p+"roundDuration", c.RoundDuration, flotilla.ErrOutOfRange,
				"%d rounds of it overflow the clock", len(b.f.Rounds)))
		default:
			s.RoundDuration = d
		}
	}
	s.Seed = DefaultSeed
	if c.Seed != nil {
		s.Seed = *c.Seed
	}
	s.Strategy = c.Strategy
	if s.Strategy == "" {
		s.Strategy = StrategyProgressiveFilling
	}
	if c.PriorityHalftime != "" {
		d, err := time.ParseDuration(c.PriorityHalftime)
		if err != nil {
			b.add(flotilla.Errorf(p+"priorityHalftime", c.PriorityHalftime, flotilla.ErrMalformed, `want a Go duration such as "10m"`))
		} else {
			s.PriorityHalftime = d
		}
	}
	s.UseProbabilisticSchedulingForAllResources = c.UseProbabilisticSchedulingForAllResources
	s.UsageWeight = c.UsageWeight
	for _, t := range c.Topologies {
		// Judged by the scheduler's Config.Validate (libraryConfig).
		s.Topologies = append(s.Topologies, flotilla.Topology{Name: t.Name, Levels: slices.Clone(t.Levels)})
	}
	if c.UsageHalfLife != "" {
		// A negative half-life is judged by fairness.NewTree (see tree).
		d, err := time.ParseDuration(c.UsageHalfLife)
		if err != nil {
			b.add(flotilla.Errorf(p+"usageHalfLife", c.UsageHalfLife, flotilla.ErrMalformed, `want a Go duration such as "1h"`))
		} else {
			s.UsageHalfLife = d
		}
	}
}

// libraryConfig validates the settings and priority classes with the
// scheduler's Config.Validate, the same check scheduler.New makes, naming
// each problem by its path in the file: priorityClasses[i]... as is,
// everything else under config. Under asset fairness it then builds the
// cost model over the cluster's total, as the scheduler's first cycle will,
// so a cluster asset fairness cannot value is reported now.
func (b *builder) libraryConfig() {
	cfg := b.out.SchedulerConfig()
	err := cfg.Validate()
	b.addMapped(asWritten(err, &b.f.Config), func(field string) string {
		if strings.HasPrefix(field, "priorityClasses") {
			return field
		}
		return "config." + field
	})
	if err != nil || b.out.Settings.Fairness != FairnessAsset {
		return
	}
	total := b.schema.Zero()
	for _, n := range b.out.Nodes {
		if len(n.Total) == len(total) && !total.AddChecked(n.Total) {
			return // reported by cluster
		}
	}
	_, err = fairness.NewAsset(b.schema, total, cfg.ResourceWeights)
	b.addMapped(err, func(field string) string {
		if rest, ok := strings.CutPrefix(field, "weights"); ok {
			return "config.resourceWeights" + rest
		}
		return "config.fairness" // the schema or the total: the cluster asset fairness is asked to value
	})
}

// asWritten gives problems with a value the file writes as a string and the
// library judges parsed the value as the file writes it: an indexed
// resource's resolution ("-1", not "-1000" milli-units) and the lottery's
// half-time ("-10m", not "-10m0s").
func asWritten(err error, c *Config) error {
	ir := c.IndexedResources
	var out []error
	for _, e := range flotilla.Problems(err) {
		var fe *flotilla.FieldError
		if errors.As(e, &fe) {
			var k int
			if _, scan := fmt.Sscanf(fe.Field, "indexedResources[%d].resolution", &k); scan == nil &&
				fe.Field == fmt.Sprintf("indexedResources[%d].resolution", k) && k < len(ir) && ir[k].Resolution != "" {
				e = &flotilla.FieldError{Field: fe.Field, Value: ir[k].Resolution, Err: fe.Err}
			}
			if fe.Field == "priorityHalftime" && c.PriorityHalftime != "" {
				e = &flotilla.FieldError{Field: fe.Field, Value: c.PriorityHalftime, Err: fe.Err}
			}
			if fe.Field == "usageHalfLife" && c.UsageHalfLife != "" {
				e = &flotilla.FieldError{Field: fe.Field, Value: c.UsageHalfLife, Err: fe.Err}
			}
		}
		out = append(out, e)
	}
	return errors.Join(out...)
}

// addMapped adds every problem of err (an errors.Join of
// *flotilla.FieldError, or one), with each field rewritten by rename.
func (b *builder) addMapped(err error, rename func(string) string) {
	b.add(flotilla.RenameFields(err, rename))
}

// addRenamed adds the problems of err with the field prefix from (such as
// `queue "A"`) replaced by to (such as "queues[3]").
func (b *builder) addRenamed(err error, from, to string) {
	b.addMapped(err, func(field string) string {
		if rest, ok := strings.CutPrefix(field, from); ok {
			return to + rest
		}
		return field
	})
}

// priorityClasses converts the file's classes (or takes the defaults); they
// are judged with the rest of the scheduler's config in libraryConfig.
func (b *builder) priorityClasses() {
	b.classes = map[string]bool{}
	if len(b.f.PriorityClasses) == 0 {
		b.out.PriorityClasses = flotilla.DefaultPriorityClasses()
	}
	for _, pc := range b.f.PriorityClasses {
		b.out.PriorityClasses = append(b.out.PriorityClasses, flotilla.PriorityClass{
			Name:                            pc.Name,
			Priority:                        pc.Priority,
			Preemptible:                     pc.Preemptible,
			MaximumResourceFractionPerQueue: maps.Clone(pc.MaximumResourceFractionPerQueue),
		})
	}
	for _, pc := range b.out.PriorityClasses {
		if pc.Name != "" && !b.classes[pc.Name] {
			b.classes[pc.Name] = true
			b.classNames = append(b.classNames, pc.Name)
		}
	}
}

// nodes expands the node templates. Each template is checked as one node by
// flotilla's Node.Validate (name, label keys, taints), its problems named
// nodes[i]...; counts, resource maps and duplicate names after expansion
// are the format's own.
func (b *builder) nodes() {
	if len(b.f.Nodes) == 0 {
		b.add(flotilla.Errorf("nodes", "", flotilla.ErrRequired, "a scenario needs at least one node template"))
		return
	}
	names := map[string]string{} // expanded name → template path
	total := 0
	for i := range b.f.Nodes {
		t := &b.f.Nodes[i]
		f := fmt.Sprintf("nodes[%d]", i)
		n := b.count(f+".count", t.Count, &total, b.maxNodes, "nodes")
		if len(t.Resources) == 0 {
			b.add(flotilla.Errorf(f+".resources", "", flotilla.ErrRequired, "a node needs at least one resource"))
		}
		capacity := b.parseResources(f+".resources", t.Resources)
		taints := textform.Taints(t.Taints)
		proto := &flotilla.Node{Name: t.Name, Cluster: t.Cluster, Labels: t.Labels, Taints: taints, Total: capacity, Unschedulable: t.Unschedulable}
		b.addMapped(proto.Validate(b.schema), func(field string) string {
			rest, ok := strings.CutPrefix(field, fmt.Sprintf("node %q", t.Name))
			if !ok {
				return field
			}
			if r, ok := strings.CutPrefix(rest, ".total"); ok {
				rest = ".resources" + r
			}
			return f + rest
		})
		dups, firstDup := 0, ""
		for k := range n {
			name := expandedName(t.Name, t.Count, k)
			if prev, dup := names[name]; dup {
				if dups == 0 {
					firstDup = fmt.Sprintf("node %q is also made by %s", name, prev)
				}
				dups++
				continue
			}
			names[name] = f
			b.out.Nodes = append(b.out.Nodes, &flotilla.Node{
				Name:          name,
				Cluster:       t.Cluster,
				Labels:        maps.Clone(t.Labels),
				Taints:        slices.Clone(taints),
				Total:         capacity.Clone(),
				Unschedulable: t.Unschedulable,
			})
		}
		if dups > 0 {
			b.add(flotilla.Errorf(f+".name", t.Name, flotilla.ErrDuplicate, "%s%s", firstDup, more(dups)))
		}
	}
}

// cluster checks that the cluster's total fits int64 in each resource's unit.
func (b *builder) cluster() {
	if b.schema == nil {
		return
	}
	total := b.schema.Zero()
	for i, n := range b.out.Nodes {
		if len(n.Total) == len(total) && !total.AddChecked(n.Total) {
			b.add(flotilla.Errorf("nodes", n.Name, flotilla.ErrOutOfRange,
				"the cluster's total overflows at node %d (above 9.2e15 cpu or 9.2e18 bytes of memory)", i))
			return
		}
	}
}

// queues converts the queues, judging each with flotilla's Queue.Validate
// (its problems named queues[i]...); names must be unique and limits must
// name configured classes.
func (b *builder) queues() {
	b.queueNames = map[string]bool{}
	first := map[string]int{}
	for i, q := range b.f.Queues {
		f := fmt.Sprintf("queues[%d]", i)
		if j, dup := first[q.Name]; dup {
			b.add(flotilla.Errorf(f+".name", q.Name, flotilla.ErrDuplicate, "also queues[%d]", j))
		} else if q.Name != "" {
			first[q.Name] = i
			b.queueNames[q.Name] = true
		}
		factor := DefaultPriorityFactor
		if q.PriorityFactor != nil && *q.PriorityFactor != 0 {
			factor = *q.PriorityFactor
		}
		var limits map[string]map[string]float64
		if q.LimitsByPriorityClass != nil {
			limits = make(map[string]map[string]float64, len(q.LimitsByPriorityClass))
		}
		for _, pc := range slices.Sorted(maps.Keys(q.LimitsByPriorityClass)) {
			if pc != "" && !b.classes[pc] {
				b.add(flotilla.Errorf(strictjson.JoinKey(f+".limitsByPriorityClass", pc), pc, flotilla.ErrUnknownName,
					"no such priority class; known: %s", knownList(b.classNames)))
			}
			limits[pc] = maps.Clone(q.LimitsByPriorityClass[pc])
		}
		out := &flotilla.Queue{Name: q.Name, PriorityFactor: factor, LimitsByPriorityClass: limits, Parent: q.Parent}
		b.addRenamed(out.Validate(), fmt.Sprintf("queue %q", q.Name), f)
		out.Guaranteed, out.Limit, out.LendingLimit = b.quotas(f, q.Guaranteed, q.Limit, q.LendingLimit)
		if q.Usage != 0 {
			if b.out.Usage == nil {
				b.out.Usage = map[string]float64{}
			}
			b.out.Usage[q.Name] = q.Usage
		}
		b.out.Queues = append(b.out.Queues, out)
	}
}

// count resolves a template's count: absent is 1, negative is an error, and
// a count that would take the running total past limit is an error; either
// error expands to 0 items.
func (b *builder) count(field string, c *int, total *int, limit int, what string) int {
	if c == nil {
		if *total >= limit {
			b.add(flotilla.Errorf(field, "1", flotilla.ErrOutOfRange, "a scenario may hold at most %d %s", limit, what))
			return 0
		}
		*total++
		return 1
	}
	switch {
	case *c < 0:
		b.add(flotilla.Errorf(field, strconv.Itoa(*c), flotilla.ErrNegative, ""))
		return 0
	case *c > limit-*total:
		b.add(flotilla.Errorf(field, strconv.Itoa(*c), flotilla.ErrOutOfRange, "a scenario may hold at most %d %s", limit, what))
		return 0
	}
	*total += *c
	return *c
}

// expandedName is name when count is absent, else name-k.
func expandedName(name string, count *int, k int) string {
	if count == nil {
		return name
	}
	return name + "-" + strconv.Itoa(k)
}

func knownList(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

func more(n int) string {
	if n <= 1 {
		return ""
	}
	return fmt.Sprintf(" (and %d more)", n-1)
}
