package scenario

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/internal/strictjson"
)

func (b *builder) config() {
	c := &b.f.Config
	s := &b.out.Settings
	const p = "config."

	s.Fairness = c.Fairness
	switch c.Fairness {
	case "":
		s.Fairness = FairnessDRF
	case FairnessDRF, FairnessAsset:
	default:
		b.add(badEnum(p+"fairness", string(c.Fairness), string(FairnessDRF), string(FairnessAsset)))
	}

	if c.ResourceWeights != nil {
		s.ResourceWeights = maps.Clone(c.ResourceWeights)
	}
	for _, r := range slices.Sorted(maps.Keys(c.ResourceWeights)) {
		b.checkResourceNames(p+"resourceWeights", []string{r})
		b.add(checkRange(p+"resourceWeights."+r, c.ResourceWeights[r], 0, math.Inf(1)))
	}

	seen := map[string]int{}
	for i, ir := range c.IndexedResources {
		f := fmt.Sprintf("%sindexedResources[%d]", p, i)
		switch j, dup := seen[ir.Name]; {
		case ir.Name == "":
			b.add(flotilla.Errorf(f+".name", "", flotilla.ErrRequired, ""))
		case dup:
			b.add(flotilla.Errorf(f+".name", ir.Name, flotilla.ErrDuplicate, "also %sindexedResources[%d]", p, j))
		default:
			seen[ir.Name] = i
			if _, ok := b.schema.Index(ir.Name); !ok {
				b.add(flotilla.Errorf(f+".name", ir.Name, flotilla.ErrUnknownResource, "known: %s", knownList(b.schema.Names())))
			}
		}
		res := int64(1)
		if ir.Resolution != "" {
			// In the resource's unit; an unknown resource (reported above)
			// is read in milli-units only to report a malformed quantity.
			parse := flotilla.UnitMilli.Parse
			if r, ok := b.schema.Index(ir.Name); ok {
				parse = func(q string) (int64, error) { return b.schema.ParseQuantity(r, q) }
			}
			v, err := parse(ir.Resolution)
			switch {
			case err != nil:
				b.add(&flotilla.FieldError{Field: f + ".resolution", Value: ir.Resolution, Err: err})
			case v <= 0:
				b.add(flotilla.Errorf(f+".resolution", ir.Resolution, flotilla.ErrOutOfRange, "want a positive quantity"))
			default:
				res = v
			}
		}
		s.IndexedResources = append(s.IndexedResources, ResourceResolution{Name: ir.Name, Resolution: res})
	}

	s.ProtectedFractionOfFairShare = DefaultProtectedFractionOfFairShare
	if c.ProtectedFractionOfFairShare != nil {
		s.ProtectedFractionOfFairShare = *c.ProtectedFractionOfFairShare
		b.add(checkRange(p+"protectedFractionOfFairShare", s.ProtectedFractionOfFairShare, 0, math.Inf(1)))
	}
	s.EvictionProbability = DefaultEvictionProbability
	if c.EvictionProbability != nil {
		s.EvictionProbability = *c.EvictionProbability
		b.add(checkRange(p+"evictionProbability", s.EvictionProbability, 0, 1))
	}
	s.MaxQueueLookback = DefaultMaxQueueLookback
	if c.MaxQueueLookback != nil {
		s.MaxQueueLookback = *c.MaxQueueLookback
		b.add(checkNonNegative(p+"maxQueueLookback", s.MaxQueueLookback))
	}

	if c.MaximumResourceFractionToSchedule != nil {
		s.MaximumResourceFractionToSchedule = maps.Clone(c.MaximumResourceFractionToSchedule)
	}
	b.fractions(p+"maximumResourceFractionToSchedule", c.MaximumResourceFractionToSchedule)

	s.MaximumSchedulingRate, s.MaximumSchedulingBurst = c.MaximumSchedulingRate, c.MaximumSchedulingBurst
	s.MaximumPerQueueSchedulingRate, s.MaximumPerQueueSchedulingBurst = c.MaximumPerQueueSchedulingRate, c.MaximumPerQueueSchedulingBurst
	b.rateLimit(p+"maximumSchedulingRate", p+"maximumSchedulingBurst", c.MaximumSchedulingRate, c.MaximumSchedulingBurst)
	b.rateLimit(p+"maximumPerQueueSchedulingRate", p+"maximumPerQueueSchedulingBurst", c.MaximumPerQueueSchedulingRate, c.MaximumPerQueueSchedulingBurst)

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
	b.strategy()
}

// strategy checks the strategy and the fields only the lottery uses.
func (b *builder) strategy() {
	c := &b.f.Config
	s := &b.out.Settings
	const p = "config."
	s.Strategy = c.Strategy
	switch c.Strategy {
	case "":
		s.Strategy = StrategyProgressiveFilling
	case StrategyProgressiveFilling, StrategyLottery:
	default:
		b.add(badEnum(p+"strategy", string(c.Strategy), string(StrategyProgressiveFilling), string(StrategyLottery)))
	}
	lottery := s.Strategy == StrategyLottery
	if c.PriorityHalftime != "" {
		d, err := time.ParseDuration(c.PriorityHalftime)
		switch {
		case err != nil:
			b.add(flotilla.Errorf(p+"priorityHalftime", c.PriorityHalftime, flotilla.ErrMalformed, `want a Go duration such as "10m"`))
		case d < 0:
			b.add(flotilla.Errorf(p+"priorityHalftime", c.PriorityHalftime, flotilla.ErrNegative, ""))
		case d == 0:
			b.add(flotilla.Errorf(p+"priorityHalftime", c.PriorityHalftime, flotilla.ErrOutOfRange, "want a duration > 0"))
		default:
			s.PriorityHalftime = d
		}
	} else if lottery {
		b.add(flotilla.Errorf(p+"priorityHalftime", "", flotilla.ErrRequired, `the lottery strategy needs a half-time such as "10m"`))
	}
	s.UseProbabilisticSchedulingForAllResources = c.UseProbabilisticSchedulingForAllResources
	if c.UseProbabilisticSchedulingForAllResources && s.Strategy == StrategyProgressiveFilling {
		b.add(flotilla.Errorf(p+"useProbabilisticSchedulingForAllResources", "true", flotilla.ErrInconsistent, `only "strategy": "lottery" uses it`))
	}
	if lottery {
		if _, ok := b.schema.Index("cpu"); !ok {
			b.add(flotilla.Errorf(p+"strategy", string(c.Strategy), flotilla.ErrUnknownResource,
				"the lottery values queue usage in cpu; no node has cpu"))
		}
	}
}

func (b *builder) rateLimit(rateField, burstField string, rate float64, burst int) {
	b.add(checkRange(rateField, rate, 0, math.Inf(1)))
	b.add(checkNonNegative(burstField, burst))
	if rate > 0 && burst == 0 {
		b.add(flotilla.Errorf(burstField, "0", flotilla.ErrInconsistent, "a rate limit needs a burst ≥ 1"))
	}
}

// fractions checks a resource→fraction map: known resources, values in [0, 1].
func (b *builder) fractions(field string, m map[string]float64) {
	for _, r := range slices.Sorted(maps.Keys(m)) {
		b.checkResourceNames(field, []string{r})
		b.add(checkRange(strictjson.JoinKey(field, r), m[r], 0, 1))
	}
}

func (b *builder) priorityClasses() {
	b.classes = map[string]bool{}
	if len(b.f.PriorityClasses) == 0 {
		b.out.PriorityClasses = flotilla.DefaultPriorityClasses()
		for _, pc := range b.out.PriorityClasses {
			b.classes[pc.Name] = true
			b.classNames = append(b.classNames, pc.Name)
		}
		return
	}
	first := map[string]int{}
	for i, pc := range b.f.PriorityClasses {
		f := fmt.Sprintf("priorityClasses[%d]", i)
		if pc.Priority == math.MinInt32 {
			b.add(flotilla.Errorf(f+".priority", fmt.Sprint(pc.Priority), flotilla.ErrOutOfRange, "reserved for evicted jobs"))
		}
		if j, dup := first[pc.Name]; dup {
			b.add(flotilla.Errorf(f+".name", pc.Name, flotilla.ErrDuplicate, "also priorityClasses[%d]", j))
		} else if pc.Name == "" {
			b.add(flotilla.Errorf(f+".name", "", flotilla.ErrRequired, ""))
		} else {
			first[pc.Name] = i
			b.classes[pc.Name] = true
			b.classNames = append(b.classNames, pc.Name)
		}
		b.fractions(f+".maximumResourceFractionPerQueue", pc.MaximumResourceFractionPerQueue)
		b.out.PriorityClasses = append(b.out.PriorityClasses, flotilla.PriorityClass{
			Name:                            pc.Name,
			Priority:                        pc.Priority,
			Preemptible:                     pc.Preemptible,
			MaximumResourceFractionPerQueue: maps.Clone(pc.MaximumResourceFractionPerQueue),
		})
	}
}

func (b *builder) defaultClass() {
	name := b.out.Settings.DefaultPriorityClass
	if !b.classes[name] {
		b.add(flotilla.Errorf("config.defaultPriorityClass", name, flotilla.ErrUnknownName,
			"no such priority class; known: %s", knownList(b.classNames)))
	}
}

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
		if t.Name == "" {
			b.add(flotilla.Errorf(f+".name", "", flotilla.ErrRequired, ""))
		}
		n := b.count(f+".count", t.Count, &total, b.maxNodes, "nodes")
		if len(t.Resources) == 0 {
			b.add(flotilla.Errorf(f+".resources", "", flotilla.ErrRequired, "a node needs at least one resource"))
		}
		capacity := b.parseResources(f+".resources", t.Resources)
		if _, ok := t.Labels[""]; ok {
			b.add(flotilla.Errorf(f+".labels", "", flotilla.ErrRequired, "a label key is empty"))
		}
		taints := make([]flotilla.Taint, len(t.Taints))
		for j, tt := range t.Taints {
			tf := fmt.Sprintf("%s.taints[%d]", f, j)
			if tt.Key == "" {
				b.add(flotilla.Errorf(tf+".key", "", flotilla.ErrRequired, ""))
			}
			if tt.Effect == "" {
				b.add(flotilla.Errorf(tf+".effect", "", flotilla.ErrRequired, "want %s", knownList(taintEffects())))
			} else {
				b.add(checkEnum(tf+".effect", tt.Effect, taintEffects()...))
			}
			taints[j] = flotilla.Taint{Key: tt.Key, Value: tt.Value, Effect: flotilla.TaintEffect(tt.Effect)}
		}
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

// cluster checks what the scheduler needs of the cluster as a whole: its
// total fits int64 in each resource's unit, and asset fairness can value it (cpu
// present and non-zero, some resource with a positive weight).
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
	if b.out.Settings.Fairness != FairnessAsset {
		return
	}
	const f = "config.fairness"
	cpu, ok := b.schema.Index("cpu")
	if !ok || total[cpu] == 0 {
		b.add(flotilla.Errorf(f, string(FairnessAsset), flotilla.ErrInconsistent, "asset fairness values resources in cpu; the nodes have no cpu"))
		return
	}
	if w := b.out.Settings.ResourceWeights; w != nil {
		positive := false
		for name, x := range w {
			if _, ok := b.schema.Index(name); ok && x > 0 {
				positive = true
			}
		}
		if !positive {
			b.add(flotilla.Errorf("config.resourceWeights", fmt.Sprint(w), flotilla.ErrOutOfRange, "asset fairness needs some resource with a positive weight"))
		}
	}
}

func (b *builder) queues() {
	b.queueNames = map[string]bool{}
	first := map[string]int{}
	for i, q := range b.f.Queues {
		f := fmt.Sprintf("queues[%d]", i)
		if j, dup := first[q.Name]; dup {
			b.add(flotilla.Errorf(f+".name", q.Name, flotilla.ErrDuplicate, "also queues[%d]", j))
		} else if q.Name == "" {
			b.add(flotilla.Errorf(f+".name", "", flotilla.ErrRequired, ""))
		} else {
			first[q.Name] = i
			b.queueNames[q.Name] = true
		}
		factor := DefaultPriorityFactor
		if q.PriorityFactor != nil {
			factor = *q.PriorityFactor
			if !(factor > 0) || math.IsInf(factor, 0) {
				b.add(flotilla.Errorf(f+".priorityFactor", formatFloat(factor), flotilla.ErrOutOfRange, "want a finite value > 0"))
			}
		}
		var limits map[string]map[string]float64
		if q.LimitsByPriorityClass != nil {
			limits = make(map[string]map[string]float64, len(q.LimitsByPriorityClass))
		}
		for _, pc := range slices.Sorted(maps.Keys(q.LimitsByPriorityClass)) {
			lf := strictjson.JoinKey(f+".limitsByPriorityClass", pc)
			if !b.classes[pc] {
				b.add(flotilla.Errorf(lf, pc, flotilla.ErrUnknownName, "no such priority class; known: %s", knownList(b.classNames)))
			}
			b.fractions(lf, q.LimitsByPriorityClass[pc])
			limits[pc] = maps.Clone(q.LimitsByPriorityClass[pc])
		}
		b.out.Queues = append(b.out.Queues, &flotilla.Queue{Name: q.Name, PriorityFactor: factor, LimitsByPriorityClass: limits})
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

func taintEffects() []string {
	return []string{string(flotilla.TaintNoSchedule), string(flotilla.TaintPreferNoSchedule), string(flotilla.TaintNoExecute)}
}

func tolerationOperators() []string {
	return []string{string(flotilla.TolerationEqual), string(flotilla.TolerationExists)}
}

func checkEnum(field, v string, allowed ...string) error {
	if slices.Contains(allowed, v) {
		return nil
	}
	return badEnum(field, v, allowed...)
}

func badEnum(field, v string, allowed ...string) error {
	if s := strictjson.Suggest(v, allowed); s != "" {
		return flotilla.Errorf(field, v, flotilla.ErrUnknownName, "did you mean %q? want %s", s, knownList(allowed))
	}
	return flotilla.Errorf(field, v, flotilla.ErrUnknownName, "want %s", knownList(allowed))
}

// checkRange accepts finite values in [lo, hi] (hi may be +Inf).
func checkRange(field string, v, lo, hi float64) error {
	switch {
	case math.IsNaN(v) || math.IsInf(v, 0):
		return flotilla.Errorf(field, formatFloat(v), flotilla.ErrOutOfRange, "want a finite number")
	case v < 0 && lo == 0:
		return flotilla.Errorf(field, formatFloat(v), flotilla.ErrNegative, "")
	case v < lo || v > hi:
		return flotilla.Errorf(field, formatFloat(v), flotilla.ErrOutOfRange, "want a value in [%s, %s]", formatFloat(lo), formatFloat(hi))
	}
	return nil
}

func checkNonNegative(field string, v int) error {
	if v < 0 {
		return flotilla.Errorf(field, strconv.Itoa(v), flotilla.ErrNegative, "")
	}
	return nil
}

func formatFloat(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

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
