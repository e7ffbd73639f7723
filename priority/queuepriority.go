package priority

import (
	"math"
	"slices"
	"strconv"
	"time"

	flotilla "github.com/flotilla-sched/flotilla"
)

// UsageModel values a resource vector as one number in resource-factor units
// (seeds/armada-priority.md: cpu + gpu/gpuFactor + memory/memoryFactor + …).
// The fairness package's asset model is one: pass &m for
// m, _ := fairness.NewAsset(schema, total, weights); on the seed's cluster of
// 10 cpu, 20Gi and 5 gpu (all weights 1) it values 5 cpu + 2Gi + 1 gpu at 8.
// Len is the vector length the model expects; vectors of another length are
// rejected before Usage is called.
type UsageModel interface {
	Usage(flotilla.Resources) float64
	Len() int
}

// Decay returns a queue priority after elapsed time under constant usage:
//
//	beta·prev + (1 − beta)·usage,  beta = 0.5^(elapsed/halfTime)
//
// It moves prev toward usage, never past it; after one halfTime it has moved
// half way. A zero elapsed leaves prev unchanged; a zero halfTime (no memory)
// jumps straight to usage once any time has passed. Negative durations are
// read as zero. Decay is the consistent reading of the seed's formula; see
// the README, "Errata in the design notes".
func Decay(prev, usage float64, elapsed, halfTime time.Duration) float64 {
	if elapsed <= 0 {
		return prev
	}
	if halfTime <= 0 {
		return usage
	}
	beta := math.Exp2(-float64(elapsed) / float64(halfTime))
	// usage + beta·(prev − usage) keeps |result − usage| ≤ |prev − usage|;
	// the clamp removes the last rounding error that could step outside
	// [min(prev, usage), max(prev, usage)].
	next := usage + beta*(prev-usage)
	lo, hi := min(prev, usage), max(prev, usage)
	return min(max(next, lo), hi)
}

// QueuePriority is one queue's state in a QueuePriorities.
type QueuePriority struct {
	Name string
	// Priority is the decayed usage, in resource-factor units.
	Priority float64
	// Factor is the priority factor: lower gives the queue more.
	Factor float64
	// Effective is Priority × Factor.
	Effective float64
}

type queueState struct {
	priority float64
	factor   float64
}

// QueuePriorities tracks Armada queue priorities over time. Create it with
// NewQueuePriorities; feed it usage with Update or UpdateResources. A queue
// appears the first time it is named (by Update or SetFactor) with priority 0
// and factor 1. Methods cost O(queues). Not safe for concurrent use.
type QueuePriorities struct {
	halfTime time.Duration
	last     time.Time
	queues   map[string]*queueState
}

// NewQueuePriorities starts a tracker whose clock reads start. halfTime is
// Armada's priorityHalftime: zero means priority equals the latest usage;
// negative is an error.
func NewQueuePriorities(halfTime time.Duration, start time.Time) (*QueuePriorities, error) {
	if halfTime < 0 {
		return nil, flotilla.Errorf("priorityHalftime", halfTime.String(), flotilla.ErrNegative, "")
	}
	return &QueuePriorities{halfTime: halfTime, last: start, queues: map[string]*queueState{}}, nil
}

// HalfTime returns the tracker's priorityHalftime.
func (p *QueuePriorities) HalfTime() time.Duration { return p.halfTime }

// Now returns the time of the last update (or the start time).
func (p *QueuePriorities) Now() time.Time { return p.last }

// SetFactor sets a queue's priority factor, which must be finite and > 0.
func (p *QueuePriorities) SetFactor(queue string, factor float64) error {
	if queue == "" {
		return flotilla.Errorf("queue", queue, flotilla.ErrRequired, "")
	}
	if err := checkFactor("queues."+queue+".priorityFactor", factor); err != nil {
		return err
	}
	p.state(queue).factor = factor
	return nil
}

// SetFactors sets the factors of the given queues from their PriorityFactor,
// reading zero as 1 like flotilla.Queue.Weight. All are checked before any
// is set.
func (p *QueuePriorities) SetFactors(queues []flotilla.Queue) error {
	for i, q := range queues {
		if q.Name == "" {
			return flotilla.Errorf("queues["+strconv.Itoa(i)+"].name", "", flotilla.ErrRequired, "")
		}
		if q.PriorityFactor == 0 {
			continue
		}
		if err := checkFactor("queues["+strconv.Itoa(i)+"].priorityFactor", q.PriorityFactor); err != nil {
			return err
		}
	}
	for _, q := range queues {
		f := q.PriorityFactor
		if f == 0 {
			f = 1
		}
		p.state(q.Name).factor = f
	}
	return nil
}

func checkFactor(field string, f float64) error {
	if math.IsNaN(f) || math.IsInf(f, 0) || f < flotilla.MinPriorityFactor {
		return flotilla.Errorf(field, formatFloat(f), flotilla.ErrOutOfRange,
			"must be finite and at least %g, so that 1/factor stays finite", flotilla.MinPriorityFactor)
	}
	return nil
}

func (p *QueuePriorities) state(queue string) *queueState {
	s, ok := p.queues[queue]
	if !ok {
		s = &queueState{factor: 1}
		p.queues[queue] = s
	}
	return s
}

// Update advances the clock to now and moves every queue's priority toward
// its usage over the elapsed time (see Decay). usage maps queue name to
// current usage in resource-factor units; a known queue missing from it is
// using nothing and decays toward 0. A new queue starts at priority 0. now
// must not be before the last update; usage values must be finite and ≥ 0.
func (p *QueuePriorities) Update(now time.Time, usage map[string]float64) error {
	if now.Before(p.last) {
		return flotilla.Errorf("now", now.Format(time.RFC3339Nano), flotilla.ErrOutOfRange,
			"before the last update %s", p.last.Format(time.RFC3339Nano))
	}
	for _, q := range sortedNames(usage) {
		u := usage[q]
		field := "usage." + q
		if q == "" {
			return flotilla.Errorf("usage", q, flotilla.ErrRequired, "queue name")
		}
		if math.IsNaN(u) || math.IsInf(u, 0) {
			return flotilla.Errorf(field, formatFloat(u), flotilla.ErrMalformed, "must be finite")
		}
		if u < 0 {
			return flotilla.Errorf(field, formatFloat(u), flotilla.ErrNegative, "")
		}
	}
	elapsed := now.Sub(p.last)
	for q := range usage {
		p.state(q)
	}
	for q, s := range p.queues {
		s.priority = Decay(s.priority, usage[q], elapsed, p.halfTime)
	}
	p.last = now
	return nil
}

// UpdateResources is Update with usage given as resource vectors, valued by
// model (the fairness package's asset model). Vectors must have model.Len()
// entries and not be negative.
func (p *QueuePriorities) UpdateResources(now time.Time, model UsageModel, usage map[string]flotilla.Resources) error {
	if model == nil {
		return flotilla.Errorf("usageModel", "nil", flotilla.ErrRequired, "")
	}
	scalar := make(map[string]float64, len(usage))
	for _, q := range sortedNames(usage) {
		r := usage[q]
		if len(r) != model.Len() {
			return flotilla.Errorf("usage."+q, fmtResources(r), flotilla.ErrInconsistent,
				"has %d resources, the usage model %d", len(r), model.Len())
		}
		if r.AnyNegative() {
			return flotilla.Errorf("usage."+q, fmtResources(r), flotilla.ErrNegative, "")
		}
		scalar[q] = model.Usage(r)
	}
	return p.Update(now, scalar)
}

// Priority returns a queue's current priority (0 for an unknown queue).
func (p *QueuePriorities) Priority(queue string) float64 {
	if s, ok := p.queues[queue]; ok {
		return s.priority
	}
	return 0
}

// EffectivePriority returns priority × factor (0 for an unknown queue).
func (p *QueuePriorities) EffectivePriority(queue string) float64 {
	if s, ok := p.queues[queue]; ok {
		return s.priority * s.factor
	}
	return 0
}

// Queues returns every known queue's state, sorted by name.
func (p *QueuePriorities) Queues() []QueuePriority {
	out := make([]QueuePriority, 0, len(p.queues))
	for _, name := range sortedNames(p.queues) {
		s := p.queues[name]
		out = append(out, QueuePriority{Name: name, Priority: s.priority, Factor: s.factor, Effective: s.priority * s.factor})
	}
	return out
}

func sortedNames[V any](m map[string]V) []string {
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	slices.Sort(names)
	return names
}

func formatFloat(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

func fmtResources(r flotilla.Resources) string {
	b := make([]byte, 0, 8*len(r))
	b = append(b, '[')
	for i, v := range r {
		if i > 0 {
			b = append(b, ' ')
		}
		b = strconv.AppendInt(b, v, 10)
	}
	return string(append(b, ']'))
}
