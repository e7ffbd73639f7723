package priority

import (
	"math"
	"math/rand/v2"
	"slices"
	"strconv"

	flotilla "github.com/flotilla-sched/flotilla"
)

// DefaultMinPriority is the floor under an effective priority before it is
// inverted to slice an offer. A queue that has used nothing yet has priority
// 0; 1/0 would hand it everything. Armada's first lease server floored
// priorities at 0.5 in the same place (minPriority in its sliceResource,
// armadaproject/armada internal/armada/server, 2019); we keep that value. In
// resource-factor units it is half a cpu's worth of usage.
const DefaultMinPriority = 0.5

// LeaseQueue is one queue taking part in a leasing round.
type LeaseQueue struct {
	// Name identifies the queue in errors; names must be distinct.
	Name string
	// EffectivePriority is priority × factor (QueuePriorities.
	// EffectivePriority): finite and ≥ 0, lower gets more.
	EffectivePriority float64
	// Jobs are the requests of the queue's queued jobs in scheduling order,
	// each as long as the offer and not negative. A queue with no jobs takes
	// no part in slicing.
	Jobs []flotilla.Resources
}

// LeaseOptions tunes Lease. The zero value is Armada's default behaviour with
// no attempt budget.
type LeaseOptions struct {
	// UseProbabilisticSchedulingForAllResources skips the slice round and
	// hands out the whole offer by lottery (Armada's
	// scheduling.useProbabilisticSchedulingForAllResources).
	UseProbabilisticSchedulingForAllResources bool
	// MinPriority floors effective priorities before slicing; 0 means
	// DefaultMinPriority. Must be finite and ≥ 0; a floor of exactly 0 can
	// only be had with a tiny positive value such as 1e-300.
	MinPriority float64
	// MaxAttempts bounds the work of one call: every time a job's request is
	// checked against what is left counts one attempt. It stands in for
	// Armada's scheduling time budget without reading a clock. 0 means no
	// bound (the call still ends: each attempt leases or retires a job, and
	// each fruitless draw retires a queue).
	MaxAttempts int
	// Lookback bounds how many queued jobs of one queue are examined in the
	// slice round, and per lottery draw; 0 means no bound. Armada peeked a
	// batch (queueLeaseBatchSize) from the head of each queue in the same
	// way.
	Lookback int
	// Usage values a resource vector for the lottery odds, normally the
	// fairness asset model (&m); its Len must equal the offer's. Nil weights
	// each resource by 1/offered amount, so a slice worth the whole offer in
	// one resource counts 1.
	Usage UsageModel
	// Place, when set, is asked about each job whose request fits what is
	// left (and, in the slice round, its queue's slice): return true to take
	// the job — the caller has committed it, e.g. reserved room on a node —
	// or false if it cannot be placed. A job refused by Place, like a job
	// that does not fit what is left in the lottery, is not offered again in
	// this call. Nil takes every job that fits the resource vectors.
	Place func(queue, job int) bool
}

// Round says which part of Lease took a job.
type Round uint8

const (
	// SliceRound is the pass that fills each queue's slice in queue order.
	SliceRound Round = iota + 1
	// LotteryRound is the probabilistic hand-out of what remains.
	LotteryRound
)

func (r Round) String() string {
	switch r {
	case SliceRound:
		return "slice"
	case LotteryRound:
		return "lottery"
	}
	return "Round(" + strconv.Itoa(int(r)) + ")"
}

// Leased is one job taken: Job indexes queues[Queue].Jobs.
type Leased struct {
	Queue int
	Job   int
	Round Round
}

// StopReason says why Lease ended.
type StopReason uint8

const (
	// StopNothingFits: queues still hold jobs, but none that was examined
	// fits what is left (or Place refused it).
	StopNothingFits StopReason = iota + 1
	// StopQueuesEmpty: every queued job was leased.
	StopQueuesEmpty
	// StopBudget: MaxAttempts was spent.
	StopBudget
)

func (s StopReason) String() string {
	switch s {
	case StopNothingFits:
		return "nothing fits"
	case StopQueuesEmpty:
		return "queues empty"
	case StopBudget:
		return "attempt budget spent"
	}
	return "StopReason(" + strconv.Itoa(int(s)) + ")"
}

// LeaseResult is what Lease decided.
type LeaseResult struct {
	// Leased lists the jobs taken, in the order they were taken.
	Leased []Leased
	// Slices are each queue's initial slice of the offer (zero for queues
	// with no jobs), indexed like the input.
	Slices []flotilla.Resources
	// Remaining is the part of the offer not handed out.
	Remaining flotilla.Resources
	// Attempts is the number of request checks made.
	Attempts int
	// Draws is the number of lottery draws made.
	Draws int
	Stop  StopReason
}

// Slices divides offer among queues in proportion to 1/max(p, minPriority)
// for each effective priority p (minPriority 0 means DefaultMinPriority).
// Each resource is apportioned exactly in its unit by largest remainder,
// so for every resource the slices sum to the offer; ties in remainders go to
// the earlier queue. An empty list of priorities gives no slices.
func Slices(offer flotilla.Resources, effectivePriorities []float64, minPriority float64) ([]flotilla.Resources, error) {
	if offer.AnyNegative() {
		return nil, flotilla.Errorf("offer", fmtResources(offer), flotilla.ErrNegative, "")
	}
	floor, err := checkMinPriority(minPriority)
	if err != nil {
		return nil, err
	}
	for i, p := range effectivePriorities {
		if badPriority(p) {
			return nil, priorityError("effectivePriorities["+strconv.Itoa(i)+"]", p)
		}
	}
	out := vectors(len(effectivePriorities), len(offer))
	inv := make([]float64, len(effectivePriorities))
	for i, p := range effectivePriorities {
		inv[i] = floor / max(p, floor) // 1/max(p, floor) scaled by floor: in (0, 1], never +Inf
	}
	members := make([]int, len(inv))
	for i := range members {
		members[i] = i
	}
	var sc sliceScratch
	sc.apportion(offer, inv, members, out)
	return out, nil
}

func checkMinPriority(m float64) (float64, error) {
	if math.IsNaN(m) || math.IsInf(m, 0) {
		return 0, flotilla.Errorf("minPriority", formatFloat(m), flotilla.ErrMalformed, "must be finite")
	}
	if m < 0 {
		return 0, flotilla.Errorf("minPriority", formatFloat(m), flotilla.ErrNegative, "")
	}
	if m == 0 {
		return DefaultMinPriority, nil
	}
	return m, nil
}

func badPriority(p float64) bool { return !(p >= 0) || math.IsInf(p, 0) }

func priorityError(field string, p float64) error {
	if p < 0 {
		return flotilla.Errorf(field, formatFloat(p), flotilla.ErrNegative, "")
	}
	return flotilla.Errorf(field, formatFloat(p), flotilla.ErrMalformed, "must be finite")
}

// sliceScratch holds buffers reused across apportionments.
type sliceScratch struct {
	frac  []float64
	order []int
}

// apportion writes into out[q] (for q in members) the share of offer given by
// weights inv[q] / Σ inv[members]; entries of out for other queues are left
// alone. Every resource is split exactly.
func (sc *sliceScratch) apportion(offer flotilla.Resources, inv []float64, members []int, out []flotilla.Resources) {
	if len(members) == 0 {
		return
	}
	sum := 0.0
	for _, q := range members {
		sum += inv[q]
	}
	sc.frac = slices.Grow(sc.frac[:0], len(members))[:len(members)]
	sc.order = slices.Grow(sc.order[:0], len(members))[:len(members)]
	for r, total := range offer {
		var given int64
		for k, q := range members {
			x := float64(total) * (inv[q] / sum)
			base := math.Floor(x)
			v := int64(base)
			if base >= float64(total) || base >= math.MaxInt64 {
				v = total
			}
			v = max(v, 0)
			out[q][r] = v
			sc.frac[k] = x - base
			given += v
		}
		diff := total - given
		if diff == 0 {
			continue
		}
		for k := range sc.order {
			sc.order[k] = k
		}
		// Largest fractional remainder first for handing out, smallest first
		// for taking back; ties by queue position.
		slices.SortStableFunc(sc.order, func(a, b int) int {
			switch {
			case sc.frac[a] > sc.frac[b]:
				return -1
			case sc.frac[a] < sc.frac[b]:
				return 1
			}
			return 0
		})
		n := int64(len(members))
		if diff > 0 {
			each, extra := diff/n, diff%n
			for k, idx := range sc.order {
				q := members[idx]
				out[q][r] += each
				if int64(k) < extra {
					out[q][r]++
				}
			}
			continue
		}
		// Rounding overshot (only possible with totals near 2^53 and
		// beyond): take units back, least deserving first, never below 0.
		for diff < 0 {
			for k := len(sc.order) - 1; k >= 0 && diff < 0; k-- {
				q := members[sc.order[k]]
				take := min(out[q][r], -diff, max(-diff/n, 1))
				out[q][r] -= take
				diff += take
			}
		}
	}
}

// vectors returns n zero vectors of length r sharing one backing array.
func vectors(n, r int) []flotilla.Resources {
	backing := make([]int64, n*r)
	out := make([]flotilla.Resources, n)
	for i := range out {
		out[i] = flotilla.Resources(backing[i*r : (i+1)*r : (i+1)*r])
	}
	return out
}

// Job states inside one Lease call.
const (
	jobQueued uint8 = iota
	jobLeased
	jobRetired // does not fit what is left, or Place refused it
)

type leaseState struct {
	states  []uint8
	cursor  int // first index that may still be queued
	slice   flotilla.Resources
	inLotto bool
}

// Lease hands out an executor's offer to queues the way Armada's legacy lease
// server did (seeds/armada-priority.md, "Slices of resources" and
// "Probabilistic scheduling").
//
// Queues with at least one job share the offer in proportion to
// 1/max(effective priority, MinPriority) (see Slices). Unless
// UseProbabilisticSchedulingForAllResources is set, each queue, in input
// order, then walks its jobs in queue order and takes every job whose request
// fits what is left of its slice (a job that does not fit is passed over, as
// Armada did, and stays available to the lottery). What remains is handed out
// by lottery: a queue is drawn with probability proportional to the value
// (opts.Usage) of its unused slice, and takes the first of its jobs that fits
// what is left of the whole offer; its slice shrinks by the job's request
// (never below zero value). A drawn queue with no job that fits leaves the
// lottery, and — as Armada did — the remainder is sliced afresh among the
// queues still in it. When every unused slice is worth zero, draws are
// proportional to 1/priority instead. The round ends when no queue can take
// anything, every job is leased, or MaxAttempts is spent.
//
// Given the same inputs and an rng in the same state, Lease returns the same
// result; draws walk queues in input order, so pass them in a stable order
// (by name, say). rng must not be nil. Lease changes none of its inputs and
// calls Place only after every input has been validated.
//
// Cost, for Q queues, J jobs and R resources: each job is examined at most
// once in the slice round and once in the lottery, O(J·R); each draw costs
// O(Q·R) and there are at most J + Q draws; each queue that leaves the
// lottery empty-handed costs a re-slice, O(Q·R·log Q). Allocations are
// O(Q·R + J) bytes in a few blocks, plus the result.
func Lease(queues []LeaseQueue, offer flotilla.Resources, opts LeaseOptions, rng *rand.Rand) (LeaseResult, error) {
	floor, err := validateLease(queues, offer, opts, rng)
	if err != nil {
		return LeaseResult{}, err
	}
	usage := offerNormalised(offer)
	if opts.Usage != nil {
		usage = opts.Usage.Usage
	}
	n := len(queues)
	st := make([]leaseState, n)
	inv := make([]float64, n)
	var members []int
	res := LeaseResult{Slices: vectors(n, len(offer)), Remaining: offer.Clone()}
	working := vectors(n, len(offer))
	total := 0
	for q := range queues {
		total += len(queues[q].Jobs)
	}
	states := make([]uint8, total)
	for q := range queues {
		st[q].states, states = states[:len(queues[q].Jobs):len(queues[q].Jobs)], states[len(queues[q].Jobs):]
		st[q].slice = working[q]
		inv[q] = floor / max(queues[q].EffectivePriority, floor) // as in Slices: in (0, 1]
		if len(queues[q].Jobs) > 0 {
			members = append(members, q)
			st[q].inLotto = true
		}
	}
	var sc sliceScratch
	sliceOut := make([]flotilla.Resources, n)
	for q := range st {
		sliceOut[q] = st[q].slice
	}
	sc.apportion(offer, inv, members, sliceOut)
	for q := range st {
		copy(res.Slices[q], st[q].slice)
	}
	budget := func() bool { return opts.MaxAttempts > 0 && res.Attempts >= opts.MaxAttempts }
	place := func(q, j int) bool { return opts.Place == nil || opts.Place(q, j) }

	if !opts.UseProbabilisticSchedulingForAllResources {
		for _, q := range members {
			s := &st[q]
			examined := 0
			for j := s.cursor; j < len(s.states); j++ {
				if s.states[j] != jobQueued {
					continue
				}
				if opts.Lookback > 0 && examined >= opts.Lookback {
					break
				}
				if budget() {
					res.Stop = StopBudget
					return res, nil
				}
				res.Attempts++
				examined++
				req := queues[q].Jobs[j]
				if !req.Fits(s.slice) || !req.Fits(res.Remaining) {
					continue
				}
				if !place(q, j) {
					s.states[j] = jobRetired
					continue
				}
				s.states[j] = jobLeased
				s.slice.Sub(req)
				res.Remaining.Sub(req)
				res.Leased = append(res.Leased, Leased{Queue: q, Job: j, Round: SliceRound})
			}
			s.advance()
			if s.cursor == len(s.states) {
				s.inLotto = false
			}
		}
	}

	weights := make([]float64, n)
	active := make([]int, 0, len(members))
	for _, q := range members {
		if st[q].inLotto {
			active = append(active, q)
		}
	}
	for {
		if len(active) == 0 {
			res.Stop = StopNothingFits
			if allLeased(st) {
				res.Stop = StopQueuesEmpty
			}
			return res, nil
		}
		if budget() {
			res.Stop = StopBudget
			return res, nil
		}
		q := draw(active, st, inv, usage, weights, rng)
		res.Draws++
		s := &st[q]
		leased, examined := false, 0
		for j := s.cursor; j < len(s.states); j++ {
			if s.states[j] != jobQueued {
				continue
			}
			if opts.Lookback > 0 && examined >= opts.Lookback {
				break
			}
			if budget() {
				res.Stop = StopBudget
				return res, nil
			}
			res.Attempts++
			examined++
			req := queues[q].Jobs[j]
			// What is left only shrinks, so a job that does not fit now never
			// will in this call: retire it.
			if !req.Fits(res.Remaining) || !place(q, j) {
				s.states[j] = jobRetired
				continue
			}
			s.states[j] = jobLeased
			subFloor(s.slice, req)
			res.Remaining.Sub(req)
			res.Leased = append(res.Leased, Leased{Queue: q, Job: j, Round: LotteryRound})
			leased = true
			break
		}
		s.advance()
		if leased && s.cursor < len(s.states) {
			continue
		}
		// The queue leaves the lottery: emptied, or nothing of it fits.
		active = slices.DeleteFunc(active, func(a int) bool { return a == q })
		if !leased {
			// As Armada did, slice what is left afresh among the queues
			// still drawing.
			for _, a := range active {
				clear(st[a].slice)
			}
			sc.apportion(res.Remaining, inv, active, sliceOut)
		}
	}
}

// draw picks one of active with probability proportional to the value of its
// unused slice, or to 1/priority when every unused slice is worth nothing.
func draw(active []int, st []leaseState, inv []float64, usage func(flotilla.Resources) float64, w []float64, rng *rand.Rand) int {
	sum := 0.0
	for _, q := range active {
		v := usage(st[q].slice)
		if math.IsNaN(v) || v < 0 {
			v = 0
		}
		w[q] = v
		sum += v
	}
	if !(sum > 0) || math.IsInf(sum, 0) {
		sum = 0
		for _, q := range active {
			w[q] = inv[q]
			sum += inv[q]
		}
	}
	pick := rng.Float64() * sum
	acc := 0.0
	for _, q := range active {
		acc += w[q]
		if pick < acc {
			return q
		}
	}
	// Rounding left pick at the very top: take the last queue with odds.
	for i := len(active) - 1; i >= 0; i-- {
		if w[active[i]] > 0 {
			return active[i]
		}
	}
	return active[len(active)-1]
}

func (s *leaseState) advance() {
	for s.cursor < len(s.states) && s.states[s.cursor] != jobQueued {
		s.cursor++
	}
}

func allLeased(st []leaseState) bool {
	for q := range st {
		for _, v := range st[q].states {
			if v != jobLeased {
				return false
			}
		}
	}
	return true
}

// subFloor sets r -= o, flooring each entry at zero.
func subFloor(r, o flotilla.Resources) {
	for i := range r {
		r[i] = max(r[i]-o[i], 0)
	}
}

// offerNormalised values a vector as Σ r_i / offer_i over offered resources.
func offerNormalised(offer flotilla.Resources) func(flotilla.Resources) float64 {
	scale := make([]float64, len(offer))
	for i, v := range offer {
		if v > 0 {
			scale[i] = 1 / float64(v)
		}
	}
	return func(r flotilla.Resources) float64 {
		s := 0.0
		for i, v := range r {
			s += float64(v) * scale[i]
		}
		return s
	}
}

func validateLease(queues []LeaseQueue, offer flotilla.Resources, opts LeaseOptions, rng *rand.Rand) (float64, error) {
	if rng == nil {
		return 0, flotilla.Errorf("rng", "nil", flotilla.ErrRequired, "the lottery needs a seeded *rand.Rand")
	}
	if offer.AnyNegative() {
		return 0, flotilla.Errorf("offer", fmtResources(offer), flotilla.ErrNegative, "")
	}
	floor, err := checkMinPriority(opts.MinPriority)
	if err != nil {
		return 0, err
	}
	if opts.MaxAttempts < 0 {
		return 0, flotilla.Errorf("maxAttempts", strconv.Itoa(opts.MaxAttempts), flotilla.ErrNegative, "")
	}
	if opts.Lookback < 0 {
		return 0, flotilla.Errorf("lookback", strconv.Itoa(opts.Lookback), flotilla.ErrNegative, "")
	}
	if opts.Usage != nil && opts.Usage.Len() != len(offer) {
		return 0, flotilla.Errorf("usage", strconv.Itoa(opts.Usage.Len()), flotilla.ErrInconsistent,
			"usage model is for %d resources, the offer has %d", opts.Usage.Len(), len(offer))
	}
	seen := make(map[string]int, len(queues))
	for i, q := range queues {
		field := func(sub string) string { return "queues[" + strconv.Itoa(i) + "]" + sub }
		if q.Name == "" {
			return 0, flotilla.Errorf(field(".name"), "", flotilla.ErrRequired, "")
		}
		if first, dup := seen[q.Name]; dup {
			return 0, flotilla.Errorf(field(".name"), q.Name, flotilla.ErrDuplicate, "also queues[%d]", first)
		}
		seen[q.Name] = i
		if badPriority(q.EffectivePriority) {
			return 0, priorityError(field(".effectivePriority"), q.EffectivePriority)
		}
		for j, r := range q.Jobs {
			if len(r) == len(offer) && !r.AnyNegative() {
				continue
			}
			jf := field(".jobs[" + strconv.Itoa(j) + "]")
			if len(r) != len(offer) {
				return 0, flotilla.Errorf(jf, fmtResources(r), flotilla.ErrInconsistent,
					"has %d resources, the offer %d", len(r), len(offer))
			}
			return 0, flotilla.Errorf(jf, fmtResources(r), flotilla.ErrNegative, "")
		}
	}
	return floor, nil
}
