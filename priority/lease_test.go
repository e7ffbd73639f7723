package priority_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/leanovate/gopter"
	"github.com/leanovate/gopter/gen"
	"github.com/leanovate/gopter/prop"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	flotilla "github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/priority"
)

func cpu(n int64) flotilla.Resources { return flotilla.Resources{n * 1000} }

func unitJobs(n int) []flotilla.Resources {
	out := make([]flotilla.Resources, n)
	for i := range out {
		out[i] = cpu(1)
	}
	return out
}

func seeded(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)) }

func TestSlicesSeedExample(t *testing.T) {
	// seeds/armada-priority.md: A priority 1, B priority 2 → A 2/3, B 1/3.
	s, err := priority.Slices(cpu(3), []float64{1, 2}, 0)
	require.NoError(t, err)
	assert.Equal(t, []flotilla.Resources{cpu(2), cpu(1)}, s)
}

func TestSlicesFloorZeroPriority(t *testing.T) {
	// A queue with no usage yet has priority 0; floored at 0.5 it weighs
	// 1/0.5 = 2 against a priority-1 queue's 1.
	s, err := priority.Slices(cpu(3), []float64{0, 1}, 0)
	require.NoError(t, err)
	assert.Equal(t, []flotilla.Resources{cpu(2), cpu(1)}, s)
	s, err = priority.Slices(cpu(3), []float64{0, 0}, 0)
	require.NoError(t, err)
	assert.Equal(t, flotilla.Resources{1500}, s[0])
	assert.Equal(t, flotilla.Resources{1500}, s[1])
	// A custom floor.
	s, err = priority.Slices(cpu(4), []float64{0, 3}, 1)
	require.NoError(t, err)
	assert.Equal(t, []flotilla.Resources{cpu(3), cpu(1)}, s)
}

// TestSlicesTinyFloorGivesPriorityZeroAlmostEverything: "a floor of exactly
// 0 can only be had with a tiny positive value" (Slices), so a valid floor
// below ~5.6e-309, where 1/floor is +Inf, must still give (almost) all of
// the offer to the priority-0 queue rather than split it evenly (Inf/Inf
// is NaN).
func TestSlicesTinyFloorGivesPriorityZeroAlmostEverything(t *testing.T) {
	s, err := priority.Slices(flotilla.Resources{1000}, []float64{0, 1}, 1e-310)
	if err != nil {
		t.Fatal(err)
	}
	if s[0][0] < 999 {
		t.Errorf("slices %v, want queue 0 (priority 0 under floor 1e-310) to get ~all of 1000", s)
	}
}

func TestSlicesLargestRemainder(t *testing.T) {
	// 1000 milli split three ways: 333.33 each; the leftover unit goes to
	// the first queue.
	s, err := priority.Slices(flotilla.Resources{1000, 7}, []float64{1, 1, 1}, 0)
	require.NoError(t, err)
	assert.Equal(t, []flotilla.Resources{{334, 3}, {333, 2}, {333, 2}}, s)
}

func TestSlicesRejectsBadInput(t *testing.T) {
	_, err := priority.Slices(flotilla.Resources{-1}, []float64{1}, 0)
	assert.ErrorIs(t, err, flotilla.ErrNegative)
	_, err = priority.Slices(cpu(1), []float64{1, math.NaN()}, 0)
	assert.ErrorIs(t, err, flotilla.ErrMalformed)
	_, err = priority.Slices(cpu(1), []float64{-2}, 0)
	assert.ErrorIs(t, err, flotilla.ErrNegative)
	_, err = priority.Slices(cpu(1), []float64{1}, -0.5)
	assert.ErrorIs(t, err, flotilla.ErrNegative)
	var fe *flotilla.FieldError
	require.ErrorAs(t, err, &fe)
	assert.Equal(t, "minPriority", fe.Field)
}

func TestSlicesSumToOffer(t *testing.T) {
	props := gopter.NewProperties(gopterParams())
	props.Property("slices are ≥ 0, sum to the offer and are within one unit of the exact share", prop.ForAll(
		func(offer []int64, prios []float64) bool {
			s, err := priority.Slices(offer, prios, 0)
			if err != nil {
				return false
			}
			inv, sum := make([]float64, len(prios)), 0.0
			for i, p := range prios {
				inv[i] = 1 / math.Max(p, priority.DefaultMinPriority)
				sum += inv[i]
			}
			for r, total := range offer {
				var got int64
				for q := range prios {
					v := s[q][r]
					if v < 0 {
						return false
					}
					exact := float64(total) * inv[q] / sum
					if math.Abs(float64(v)-exact) > 1+1e-6*exact {
						return false
					}
					got += v
				}
				if got != total {
					return false
				}
			}
			return true
		},
		gen.SliceOfN(3, gen.Int64Range(0, 1<<45)),
		gen.SliceOfN(7, gen.Float64Range(0, 100)).SuchThat(func(v []float64) bool { return len(v) > 0 }),
	))
	props.Property("huge totals still sum exactly", prop.ForAll(
		func(total int64, prios []float64) bool {
			s, err := priority.Slices(flotilla.Resources{total}, prios, 0)
			if err != nil {
				return false
			}
			var got int64
			for _, v := range s {
				if v[0] < 0 {
					return false
				}
				got += v[0]
			}
			return got == total
		},
		gen.Int64Range(math.MaxInt64/2, math.MaxInt64),
		gen.SliceOfN(5, gen.Float64Range(0, 1e6)),
	))
	props.TestingRun(t)
}

func TestLeaseSliceRoundFillsInQueueOrder(t *testing.T) {
	queues := []priority.LeaseQueue{
		// Slice 4 cpu: takes 2, skips 3 (does not fit the 2 left), takes 1, takes 1.
		{Name: "a", EffectivePriority: 1, Jobs: []flotilla.Resources{cpu(2), cpu(3), cpu(1), cpu(1)}},
		// Slice 2 cpu: takes 2.
		{Name: "b", EffectivePriority: 2, Jobs: []flotilla.Resources{cpu(2), cpu(5)}},
		{Name: "empty", EffectivePriority: 0.001},
	}
	res, err := priority.Lease(queues, cpu(6), priority.LeaseOptions{}, seeded(1))
	require.NoError(t, err)
	assert.Equal(t, []priority.Leased{
		{Queue: 0, Job: 0, Round: priority.SliceRound},
		{Queue: 0, Job: 2, Round: priority.SliceRound},
		{Queue: 0, Job: 3, Round: priority.SliceRound},
		{Queue: 1, Job: 0, Round: priority.SliceRound},
	}, res.Leased)
	assert.Equal(t, []flotilla.Resources{cpu(4), cpu(2), cpu(0)}, res.Slices, "an empty queue gets no slice")
	assert.Equal(t, cpu(0), res.Remaining)
	assert.Equal(t, priority.StopNothingFits, res.Stop)
}

func TestLeaseLotteryHandsOutTheRest(t *testing.T) {
	// Everything by lottery: slices of 3 cpu between equal queues are 1.5
	// cpu each, and the draw is 50:50. The drawn queue takes its 2-cpu job.
	// The 1 cpu left fits no 2-cpu job but does fit a's 1-cpu job, which a
	// takes when drawn (passing over its 2-cpu job if that is still there).
	queues := []priority.LeaseQueue{
		{Name: "a", EffectivePriority: 1, Jobs: []flotilla.Resources{cpu(2), cpu(1)}},
		{Name: "b", EffectivePriority: 1, Jobs: []flotilla.Resources{cpu(2)}},
	}
	wins := map[int]int{}
	for seed := range uint64(200) {
		res, err := priority.Lease(queues, cpu(3), priority.LeaseOptions{UseProbabilisticSchedulingForAllResources: true}, seeded(seed))
		require.NoError(t, err)
		require.NotEmpty(t, res.Leased)
		first := res.Leased[0]
		assert.Equal(t, priority.Leased{Queue: first.Queue, Job: 0, Round: priority.LotteryRound}, first)
		wins[first.Queue]++
		assert.Equal(t, []priority.Leased{first, {Queue: 0, Job: 1, Round: priority.LotteryRound}}, res.Leased)
		assert.Equal(t, cpu(0), res.Remaining)
		if first.Queue == 0 {
			assert.Equal(t, priority.StopNothingFits, res.Stop, "b's job never fits")
		}
	}
	assert.InDelta(t, 100, wins[0], 30, "equal priorities draw about equally")
}

func TestLeaseSliceRoundPassesOverBigJobs(t *testing.T) {
	// Armada's slice round takes every job that fits the slice, passing over
	// the ones that do not.
	queues := []priority.LeaseQueue{
		{Name: "a", EffectivePriority: 1, Jobs: []flotilla.Resources{cpu(2), cpu(1)}},
		{Name: "b", EffectivePriority: 1, Jobs: []flotilla.Resources{cpu(2), cpu(1)}},
	}
	res, err := priority.Lease(queues, cpu(3), priority.LeaseOptions{}, seeded(7))
	require.NoError(t, err)
	assert.Equal(t, []priority.Leased{{0, 1, priority.SliceRound}, {1, 1, priority.SliceRound}}, res.Leased)
	assert.Equal(t, cpu(1), res.Remaining)
	assert.Equal(t, priority.StopNothingFits, res.Stop)
}

func TestLeaseQueuesEmpty(t *testing.T) {
	queues := []priority.LeaseQueue{{Name: "a", EffectivePriority: 1, Jobs: unitJobs(3)}}
	res, err := priority.Lease(queues, cpu(10), priority.LeaseOptions{}, seeded(1))
	require.NoError(t, err)
	assert.Len(t, res.Leased, 3)
	assert.Equal(t, priority.StopQueuesEmpty, res.Stop)
	assert.Equal(t, cpu(7), res.Remaining)
}

func TestLeaseProbabilisticForAllSkipsSlices(t *testing.T) {
	queues := []priority.LeaseQueue{
		{Name: "a", EffectivePriority: 1, Jobs: unitJobs(10)},
		{Name: "b", EffectivePriority: 2, Jobs: unitJobs(10)},
	}
	res, err := priority.Lease(queues, cpu(6), priority.LeaseOptions{UseProbabilisticSchedulingForAllResources: true}, seeded(3))
	require.NoError(t, err)
	require.Len(t, res.Leased, 6)
	for _, l := range res.Leased {
		assert.Equal(t, priority.LotteryRound, l.Round)
	}
	// Jobs of one queue are taken in queue order.
	next := map[int]int{}
	for _, l := range res.Leased {
		assert.Equal(t, next[l.Queue], l.Job)
		next[l.Queue]++
	}
}

func TestLeaseBudget(t *testing.T) {
	queues := []priority.LeaseQueue{
		{Name: "a", EffectivePriority: 1, Jobs: unitJobs(10)},
		{Name: "b", EffectivePriority: 1, Jobs: unitJobs(10)},
	}
	res, err := priority.Lease(queues, cpu(20), priority.LeaseOptions{MaxAttempts: 5}, seeded(1))
	require.NoError(t, err)
	assert.Equal(t, priority.StopBudget, res.Stop)
	assert.Equal(t, 5, res.Attempts)
	assert.Len(t, res.Leased, 5)
}

func TestLeaseLookback(t *testing.T) {
	// Only the first two jobs are looked at: both too big for the slice and
	// then, in the lottery, for the offer; the small third job is never seen.
	queues := []priority.LeaseQueue{{Name: "a", EffectivePriority: 1, Jobs: []flotilla.Resources{cpu(9), cpu(9), cpu(1)}}}
	res, err := priority.Lease(queues, cpu(4), priority.LeaseOptions{Lookback: 2}, seeded(1))
	require.NoError(t, err)
	assert.Empty(t, res.Leased)
	assert.Equal(t, priority.StopNothingFits, res.Stop)
	res, err = priority.Lease(queues, cpu(4), priority.LeaseOptions{}, seeded(1))
	require.NoError(t, err)
	assert.Equal(t, []priority.Leased{{Queue: 0, Job: 2, Round: priority.SliceRound}}, res.Leased)
}

func TestLeasePlaceCallback(t *testing.T) {
	queues := []priority.LeaseQueue{{Name: "a", EffectivePriority: 1, Jobs: unitJobs(4)}}
	var asked [][2]int
	place := func(q, j int) bool {
		asked = append(asked, [2]int{q, j})
		return j%2 == 1 // only odd jobs find a node
	}
	res, err := priority.Lease(queues, cpu(10), priority.LeaseOptions{Place: place}, seeded(1))
	require.NoError(t, err)
	assert.Equal(t, []priority.Leased{{0, 1, priority.SliceRound}, {0, 3, priority.SliceRound}}, res.Leased)
	assert.Equal(t, [][2]int{{0, 0}, {0, 1}, {0, 2}, {0, 3}}, asked, "a refused job is not asked about again")
	assert.Equal(t, priority.StopNothingFits, res.Stop)
}

func TestLeaseWithAssetModel(t *testing.T) {
	_, m := seedModel(t)
	offer := flotilla.Resources{4000, 8 * gi, 2}
	queues := []priority.LeaseQueue{
		{Name: "a", EffectivePriority: 8, Jobs: []flotilla.Resources{{1000, gi, 1}, {1000, gi, 1}, {1000, gi, 1}}},
		{Name: "b", EffectivePriority: 0, Jobs: []flotilla.Resources{{1000, gi, 0}, {1000, gi, 0}, {1000, gi, 0}}},
	}
	res, err := priority.Lease(queues, offer, priority.LeaseOptions{Usage: &m}, seeded(5))
	require.NoError(t, err)
	total := make(flotilla.Resources, 3)
	for _, l := range res.Leased {
		total.Add(queues[l.Queue].Jobs[l.Job])
	}
	assert.True(t, total.Fits(offer))
	rest := offer.Clone()
	rest.Sub(total)
	assert.Equal(t, rest, res.Remaining)

	_, err = priority.Lease(queues, cpu(4), priority.LeaseOptions{Usage: &m}, seeded(5))
	assert.ErrorIs(t, err, flotilla.ErrInconsistent, "model and offer disagree on length")
}

func TestLeaseRejectsBadInput(t *testing.T) {
	good := []priority.LeaseQueue{{Name: "a", EffectivePriority: 1, Jobs: unitJobs(1)}}
	cases := []struct {
		name   string
		queues []priority.LeaseQueue
		offer  flotilla.Resources
		opts   priority.LeaseOptions
		rng    *rand.Rand
		err    error
		field  string
	}{
		{"nil rng", good, cpu(1), priority.LeaseOptions{}, nil, flotilla.ErrRequired, "rng"},
		{"negative offer", good, flotilla.Resources{-1}, priority.LeaseOptions{}, seeded(1), flotilla.ErrNegative, "offer"},
		{"negative budget", good, cpu(1), priority.LeaseOptions{MaxAttempts: -1}, seeded(1), flotilla.ErrNegative, "maxAttempts"},
		{"negative lookback", good, cpu(1), priority.LeaseOptions{Lookback: -1}, seeded(1), flotilla.ErrNegative, "lookback"},
		{"NaN floor", good, cpu(1), priority.LeaseOptions{MinPriority: math.NaN()}, seeded(1), flotilla.ErrMalformed, "minPriority"},
		{"no name", []priority.LeaseQueue{{EffectivePriority: 1}}, cpu(1), priority.LeaseOptions{}, seeded(1), flotilla.ErrRequired, "queues[0].name"},
		{"duplicate", []priority.LeaseQueue{{Name: "a"}, {Name: "a"}}, cpu(1), priority.LeaseOptions{}, seeded(1), flotilla.ErrDuplicate, "queues[1].name"},
		{"infinite priority", []priority.LeaseQueue{{Name: "a", EffectivePriority: math.Inf(1)}}, cpu(1), priority.LeaseOptions{}, seeded(1), flotilla.ErrMalformed, "queues[0].effectivePriority"},
		{"negative priority", []priority.LeaseQueue{{Name: "a", EffectivePriority: -1}}, cpu(1), priority.LeaseOptions{}, seeded(1), flotilla.ErrNegative, "queues[0].effectivePriority"},
		{"short request", []priority.LeaseQueue{{Name: "a", Jobs: []flotilla.Resources{{1, 2}}}}, cpu(1), priority.LeaseOptions{}, seeded(1), flotilla.ErrInconsistent, "queues[0].jobs[0]"},
		{"negative request", []priority.LeaseQueue{{Name: "a", Jobs: []flotilla.Resources{{-5}}}}, cpu(1), priority.LeaseOptions{}, seeded(1), flotilla.ErrNegative, "queues[0].jobs[0]"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			called := false
			c.opts.Place = func(int, int) bool { called = true; return true }
			_, err := priority.Lease(c.queues, c.offer, c.opts, c.rng)
			var fe *flotilla.FieldError
			require.ErrorAs(t, err, &fe)
			assert.ErrorIs(t, err, c.err)
			assert.Equal(t, c.field, fe.Field)
			assert.False(t, called, "nothing is placed before validation passes")
		})
	}
}

func TestLeaseIsDeterministicAndLeavesInputsAlone(t *testing.T) {
	mk := func() []priority.LeaseQueue {
		return []priority.LeaseQueue{
			{Name: "a", EffectivePriority: 3, Jobs: []flotilla.Resources{cpu(1), cpu(2), cpu(3), cpu(1)}},
			{Name: "b", EffectivePriority: 1, Jobs: []flotilla.Resources{cpu(3), cpu(1), cpu(1)}},
			{Name: "c", EffectivePriority: 0, Jobs: []flotilla.Resources{cpu(2), cpu(2)}},
		}
	}
	queues, offer := mk(), cpu(9)
	r1, err := priority.Lease(queues, offer, priority.LeaseOptions{}, seeded(42))
	require.NoError(t, err)
	r2, err := priority.Lease(queues, offer, priority.LeaseOptions{}, seeded(42))
	require.NoError(t, err)
	assert.Equal(t, r1, r2)
	assert.Equal(t, mk(), queues)
	assert.Equal(t, cpu(9), offer)
}

// TestLotteryConvergesToInversePriority: queues of priority 1, 2 and 4 each
// offer endless 1-cpu jobs; every round the executor offers 1 cpu, too
// little for any slice (4/7, 2/7, 1/7 cpu), so the lottery decides who gets
// it. Over N rounds each queue's share of jobs must be within 0.01 of
// (1/p)/Σ(1/p) = 4/7, 2/7, 1/7. With N = 50000 the standard error of a
// share is at most √(0.25/N) ≈ 0.0022, so the tolerance is about 4.5σ; the
// seed is fixed, so the test is deterministic.
func TestLotteryConvergesToInversePriority(t *testing.T) {
	const n = 50000
	prios := []float64{1, 2, 4}
	queues := make([]priority.LeaseQueue, len(prios))
	for i, p := range prios {
		queues[i] = priority.LeaseQueue{Name: string(rune('a' + i)), EffectivePriority: p, Jobs: unitJobs(1)}
	}
	for _, all := range []bool{false, true} {
		rng := seeded(2024)
		counts := make([]int, len(prios))
		for range n {
			res, err := priority.Lease(queues, cpu(1), priority.LeaseOptions{UseProbabilisticSchedulingForAllResources: all}, rng)
			require.NoError(t, err)
			require.Len(t, res.Leased, 1)
			require.Equal(t, priority.LotteryRound, res.Leased[0].Round)
			counts[res.Leased[0].Queue]++
		}
		want := []float64{4.0 / 7, 2.0 / 7, 1.0 / 7}
		for i := range prios {
			assert.InDelta(t, want[i], float64(counts[i])/n, 0.01, "queue %d (probabilistic for all: %v)", i, all)
		}
	}
}

func TestLeaseProperties(t *testing.T) {
	props := gopter.NewProperties(gopterParams())
	jobs := gen.SliceOfN(6, gen.Int64Range(0, 4000))
	props.Property("never hands out more than offered, each job at most once, in queue order per queue", prop.ForAll(
		func(offer int64, pa, pb float64, ja, jb []int64, all bool, seed uint64) bool {
			mk := func(v []int64) []flotilla.Resources {
				out := make([]flotilla.Resources, len(v))
				for i, x := range v {
					out[i] = flotilla.Resources{x, x / 2}
				}
				return out
			}
			queues := []priority.LeaseQueue{
				{Name: "a", EffectivePriority: pa, Jobs: mk(ja)},
				{Name: "b", EffectivePriority: pb, Jobs: mk(jb)},
			}
			off := flotilla.Resources{offer, offer}
			res, err := priority.Lease(queues, off, priority.LeaseOptions{UseProbabilisticSchedulingForAllResources: all}, seeded(seed))
			if err != nil {
				return false
			}
			used := make(flotilla.Resources, 2)
			seen := map[[2]int]bool{}
			for _, l := range res.Leased {
				k := [2]int{l.Queue, l.Job}
				if seen[k] {
					return false
				}
				seen[k] = true
				used.Add(queues[l.Queue].Jobs[l.Job])
			}
			if !used.Fits(off) {
				return false
			}
			rest := off.Clone()
			rest.Sub(used)
			if !rest.Equal(res.Remaining) {
				return false
			}
			// Whatever was left unleased does not fit what remains, unless the
			// lottery retired it earlier (it only retires jobs that did not
			// fit then, and what is left only shrinks).
			for q := range queues {
				for j, r := range queues[q].Jobs {
					if !seen[[2]int{q, j}] && r.Fits(res.Remaining) {
						return false
					}
				}
			}
			return true
		},
		gen.Int64Range(0, 12000), gen.Float64Range(0, 10), gen.Float64Range(0, 10), jobs, jobs, gen.Bool(), gen.UInt64(),
	))
	props.TestingRun(t)
}

// zeroModel values every vector at 0, as an asset model would value a
// resource it weighs 0.
type zeroModel struct{ n int }

func (zeroModel) Usage(flotilla.Resources) float64 { return 0 }
func (m zeroModel) Len() int                       { return m.n }

// When every unused slice is worth nothing the lottery falls back to odds
// of 1/priority: here 1 : 1/3, so 3/4 and 1/4 (tolerance 0.02 over 20000
// rounds, about 6σ).
func TestLotteryFallsBackToInversePriority(t *testing.T) {
	const n = 20000
	queues := []priority.LeaseQueue{
		{Name: "a", EffectivePriority: 1, Jobs: unitJobs(1)},
		{Name: "b", EffectivePriority: 3, Jobs: unitJobs(1)},
	}
	rng := seeded(99)
	wins := 0
	for range n {
		res, err := priority.Lease(queues, cpu(1), priority.LeaseOptions{Usage: zeroModel{1}, UseProbabilisticSchedulingForAllResources: true}, rng)
		require.NoError(t, err)
		require.Len(t, res.Leased, 1)
		if res.Leased[0].Queue == 0 {
			wins++
		}
	}
	assert.InDelta(t, 0.75, float64(wins)/n, 0.02)
}
