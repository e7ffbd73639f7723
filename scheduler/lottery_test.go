package scheduler_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/leanovate/gopter/gen"
	"github.com/leanovate/gopter/prop"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/priority"
	"github.com/flotilla-sched/flotilla/scheduler"
)

// lottery switches the world to the lottery strategy.
func (w *world) lottery(halftime time.Duration, allLottery bool) {
	w.cfg.Strategy = scheduler.Lottery
	w.cfg.PriorityHalftime = halftime
	w.cfg.UseProbabilisticSchedulingForAllResources = allLottery
}

// cycle runs one Schedule with the given carried state, seed and time.
func (w *world) cycle(state scheduler.QueuePriorityState, seed uint64, now time.Time) *scheduler.Result {
	w.t.Helper()
	s, err := scheduler.New(w.cfg)
	require.NoError(w.t, err)
	snap := w.snapshot()
	snap.QueuePriorities = state
	snap.Seed = seed
	res, err := s.Schedule(context.Background(), snap, now)
	require.NoError(w.t, err)
	return res
}

// assertNoOvercommit checks that running jobs fit their nodes.
func (w *world) assertNoOvercommit() {
	w.t.Helper()
	used := map[string]flotilla.Resources{}
	for _, r := range w.running {
		if used[r.Node] == nil {
			used[r.Node] = w.schema.Zero()
		}
		used[r.Node].Add(r.Job.Requests)
	}
	for _, n := range w.nodes {
		if u := used[n.Name]; u != nil {
			assert.True(w.t, u.Fits(n.Total), "node %s over-committed", n.Name)
		}
	}
}

// TestLotterySplitFollowsEffectivePriorities: on a cluster every queue
// wants all of, the lottery gives queues whose effective priorities are 1:2
// about 2:1 of it. Jobs run for two cycles, so every cycle re-leases half
// the cluster; results are applied and the queue-priority state carried
// between cycles. With a half-time of 1000h priorities stay put; with one of
// a cycle they follow usage, and factors 1:2 settle where usage × factor is
// in inverse proportion to usage: a √2:1 split.
func TestLotterySplitFollowsEffectivePriorities(t *testing.T) {
	const steady = 1000 * time.Hour
	cases := []struct {
		name       string
		factors    [2]float64
		prios      [2]float64
		halftime   time.Duration
		allLottery bool
		wantA      float64
		tolerance  float64
	}{
		{"factors 1:2, slices then lottery", [2]float64{1, 2}, [2]float64{10, 10}, steady, false, 2.0 / 3, 0.02},
		{"factors 1:2, all by lottery", [2]float64{1, 2}, [2]float64{10, 10}, steady, true, 2.0 / 3, 0.03},
		{"priorities 1:2, all by lottery", [2]float64{1, 1}, [2]float64{8, 16}, steady, true, 2.0 / 3, 0.03},
		{"new queues below the floor, factors ignored", [2]float64{1, 2}, [2]float64{0, 0}, steady, false, 0.5, 0.02},
		{"priorities follow usage", [2]float64{1, 2}, [2]float64{0, 0}, time.Minute, false, math.Sqrt2 / (1 + math.Sqrt2), 0.03},
	}
	const cycles = 30
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t)
			w.lottery(tc.halftime, tc.allLottery)
			w.addNodes(4, "8")
			w.addQueue("A", tc.factors[0])
			w.addQueue("B", tc.factors[1])
			state := scheduler.QueuePriorityState{
				Priorities: map[string]float64{"A": tc.prios[0], "B": tc.prios[1]},
				Time:       t0,
			}
			got := map[string]int{}
			for i := range cycles {
				now := t0.Add(time.Duration(i+1) * time.Minute)
				// Every job runs for two cycles.
				w.running = slices.DeleteFunc(w.running, func(r scheduler.Running) bool { return !r.Start.After(now.Add(-2 * time.Minute)) })
				for _, q := range []string{"A", "B"} {
					w.submit(q, 40-w.store.QueueLen(q), "1")
				}
				res := w.cycle(state, uint64(i), now)
				for _, a := range res.Scheduled {
					_, ok := w.store.Remove(a.Job.ID)
					require.True(t, ok)
					w.running = append(w.running, scheduler.Running{Job: a.Job, Node: a.Node, Start: now})
					got[a.Job.Queue]++
				}
				w.assertNoOvercommit()
				require.Len(t, w.running, 32, "the cluster is contended: every core is leased")
				state = res.QueuePriorities
			}
			fracA := float64(got["A"]) / float64(got["A"]+got["B"])
			assert.InDelta(t, tc.wantA, fracA, tc.tolerance, "A got %d, B %d", got["A"], got["B"])
		})
	}
}

// TestLotteryQueuePrioritiesDecay: the state carried across Schedule calls
// moves toward each queue's running usage as priority.Decay says, valued in
// cpu cores by the asset model.
func TestLotteryQueuePrioritiesDecay(t *testing.T) {
	const h = 10 * time.Minute
	schema := flotilla.MustResourceSchema("cpu", "memory", "nvidia.com/gpu")
	res := func(m map[string]string) flotilla.Resources { return schema.MustParse(m) }
	w := newWorld(t)
	w.lottery(h, false)
	// 10 cpu and 5 GPUs: a GPU is worth 2 cpu (seeds/armada-priority.md).
	w.nodes = []*flotilla.Node{{Name: "n", Total: res(map[string]string{"cpu": "10", "memory": "20Gi", "nvidia.com/gpu": "5"})}}
	w.addQueue("A", 1)
	w.addQueue("B", 3)
	w.addQueue("C", 1)
	w.running = []scheduler.Running{
		{Job: &flotilla.Job{ID: "a1", Queue: "A", Requests: res(map[string]string{"cpu": "3", "memory": "2Gi"})}, Node: "n"},
		{Job: &flotilla.Job{ID: "a2", Queue: "A", Requests: res(map[string]string{"cpu": "1"})}, Node: "n"},
		{Job: &flotilla.Job{ID: "b1", Queue: "B", Requests: res(map[string]string{"cpu": "1", "nvidia.com/gpu": "1"})}, Node: "n"},
	}
	usage := map[string]float64{"A": 4, "B": 3, "C": 0}

	cases := []struct {
		name  string
		start map[string]float64
		since time.Duration // state time before now; -1 for a zero time
	}{
		{"one half-time", map[string]float64{"A": 8, "B": 0, "C": 2}, h},
		{"two half-times", map[string]float64{"A": 8, "B": 9, "C": 2}, 2 * h},
		{"a third of one", map[string]float64{"A": 0, "B": 1}, h / 3},
		{"no time passed", map[string]float64{"A": 8, "B": 1}, 0},
		{"never computed: no time passes", map[string]float64{"A": 8}, -1},
		{"now before the state", map[string]float64{"A": 8}, -h},
		{"unknown queues dropped", map[string]float64{"A": 1, "gone": 5}, h},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			now := t0.Add(time.Hour)
			state := scheduler.QueuePriorityState{Priorities: tc.start}
			elapsed := time.Duration(0)
			if tc.since != -1 {
				state.Time = now.Add(-tc.since)
				elapsed = tc.since
			}
			got := w.cycle(state, 1, now).QueuePriorities
			assert.Equal(t, now, got.Time)
			require.Len(t, got.Priorities, 3, "every snapshot queue, no other")
			for _, q := range []string{"A", "B", "C"} {
				want := priority.Decay(tc.start[q], usage[q], elapsed, h)
				assert.InDelta(t, want, got.Priorities[q], 1e-9, q)
			}
		})
	}

	t.Run("carried across calls", func(t *testing.T) {
		state := scheduler.QueuePriorityState{Priorities: map[string]float64{"A": 8, "B": 5}, Time: t0}
		for i := 1; i <= 3; i++ {
			prev := state
			state = w.cycle(state, 1, t0.Add(time.Duration(i)*h)).QueuePriorities
			for _, q := range []string{"A", "B", "C"} {
				assert.InDelta(t, priority.Decay(prev.Priorities[q], usage[q], h, h), state.Priorities[q], 1e-9, "call %d, %s", i, q)
			}
		}
		// After three half-times A has moved 7/8 of the way from 8 to 4.
		assert.InDelta(t, 4.5, state.Priorities["A"], 1e-9)
	})
}

// TestLotteryUsesCarriedPriorities: a queue whose priority says it has used
// a lot gets less of the next lease than one that has used nothing.
func TestLotteryUsesCarriedPriorities(t *testing.T) {
	w := newWorld(t)
	w.lottery(time.Hour, false)
	w.addNodes(1, "30")
	w.addQueue("A", 1)
	w.addQueue("B", 1)
	w.submit("A", 30, "1")
	w.submit("B", 30, "1")
	res := w.cycle(scheduler.QueuePriorityState{Priorities: map[string]float64{"A": 2, "B": 1}, Time: t0}, 1, t0)
	assert.Equal(t, map[string]int{"A": 10, "B": 20}, countByQueue(res.Scheduled))
}

func TestLotteryDeterministicForASeed(t *testing.T) {
	run := func(seed uint64) []string {
		w := newWorld(t)
		w.lottery(time.Hour, true)
		w.addNodes(3, "8")
		for _, q := range []string{"A", "B", "C"} {
			w.addQueue(q, 1)
			w.submit(q, 20, "1")
			w.submit(q, 5, "3")
		}
		state := scheduler.QueuePriorityState{Priorities: map[string]float64{"A": 1, "B": 2, "C": 3}, Time: t0}
		res := w.cycle(state, seed, t0)
		var out []string
		for _, a := range res.Scheduled {
			out = append(out, a.Job.ID+"@"+a.Node)
		}
		for _, u := range res.UnscheduledJobs {
			out = append(out, u.Job.ID+":"+u.Reason.String())
		}
		return out
	}
	first := run(7)
	assert.Equal(t, first, run(7), "same seed, same decision")
	differs := false
	for seed := uint64(8); seed < 16 && !differs; seed++ {
		differs = fmt.Sprint(run(seed)) != fmt.Sprint(first)
	}
	assert.True(t, differs, "the seed drives the lottery")
}

// TestLotteryReasons: what the lottery does not place says why, and the
// limits of Config hold under it as under progressive filling.
func TestLotteryReasons(t *testing.T) {
	w := newWorld(t)
	w.lottery(time.Hour, false)
	w.cfg.MaxQueueLookback = 4
	w.addNodes(2, "4")
	w.nodes = append(w.nodes, &flotilla.Node{Name: "cordoned", Total: w.res("64"), Unschedulable: true})
	w.addQueue("A", 1)
	w.addQueue("B", 1)
	big := w.submit("A", 1, "5", withPriority(0))[0]
	gang := w.submit("A", 1, "1", withPriority(1), func(j *flotilla.Job) { j.Gang = flotilla.Gang{ID: "g", Cardinality: 1} })[0]
	w.submit("A", 6, "1", withPriority(2))
	w.submit("B", 2, "1")
	res := w.cycle(scheduler.QueuePriorityState{}, 1, t0)

	assert.Equal(t, map[string]int{"A": 2, "B": 2}, countByQueue(res.Scheduled), "A examines 4 jobs: big, gang and two it can run")
	for _, a := range res.Scheduled {
		assert.NotEqual(t, "cordoned", a.Node)
	}
	why := map[string]scheduler.ReasonCode{}
	for _, u := range res.UnscheduledJobs {
		why[u.Job.ID] = u.Reason.Code
	}
	assert.Equal(t, map[string]scheduler.ReasonCode{big.ID: scheduler.ReasonNeverFits, gang.ID: scheduler.ReasonGangUnsupported}, why)
	require.Len(t, res.NotExamined, 1)
	assert.Equal(t, scheduler.QueueRemainder{Queue: "A", Count: 4, Reason: res.NotExamined[0].Reason}, res.NotExamined[0])
	assert.Equal(t, scheduler.ReasonLookback, res.NotExamined[0].Reason.Code)
	assert.Empty(t, res.Preempted)

	t.Run("rate limit", func(t *testing.T) {
		w.cfg.MaximumSchedulingRate, w.cfg.MaximumSchedulingBurst = 1, 3
		w.cfg.MaxQueueLookback = 0
		res := w.cycle(scheduler.QueuePriorityState{}, 1, t0)
		assert.Len(t, res.Scheduled, 3)
		remaining := 0
		for _, r := range res.NotExamined {
			assert.Equal(t, scheduler.ReasonGlobalRateLimit, r.Reason.Code)
			remaining += r.Count
		}
		assert.Equal(t, 10-3, remaining+len(res.UnscheduledJobs), "every queued job not placed is accounted for once")
		for _, u := range res.UnscheduledJobs {
			assert.Contains(t, []scheduler.ReasonCode{scheduler.ReasonNoRoom, scheduler.ReasonGangUnsupported}, u.Reason.Code)
		}
		assert.InDelta(t, 0, res.RateLimits.Global.Tokens, 1e-9)
	})
}

// TestLotteryDoesNotPreempt: a full cluster stays as it is, whatever the
// queued jobs' priorities and the queues' shares.
func TestLotteryDoesNotPreempt(t *testing.T) {
	w := newWorld(t)
	w.lottery(time.Hour, false)
	w.addNodes(1, "4")
	w.addQueue("A", 1)
	w.addQueue("B", 1)
	for i := range 4 {
		w.running = append(w.running, scheduler.Running{Job: w.job("A", "1", func(j *flotilla.Job) { j.PriorityClass = flotilla.ArmadaPreemptible }), Node: "node-0", Start: t0.Add(time.Duration(i))})
	}
	w.submit("B", 4, "1")
	res := w.cycle(scheduler.QueuePriorityState{}, 1, t0)
	assert.Empty(t, res.Preempted)
	assert.Empty(t, res.Scheduled)
	assert.Len(t, res.UnscheduledJobs, 4)
	assert.Equal(t, 4, res.Queues[0].Running)
}

func TestLotteryConfigRejected(t *testing.T) {
	cases := []struct {
		name   string
		schema *flotilla.ResourceSchema
		edit   func(*scheduler.Config)
		field  string
		class  error
	}{
		{"unknown strategy", nil, func(c *scheduler.Config) { c.Strategy = "lotto" }, "strategy", flotilla.ErrUnknownName},
		{"negative half-time", nil, func(c *scheduler.Config) { c.Strategy, c.PriorityHalftime = scheduler.Lottery, -time.Minute }, "priorityHalftime", flotilla.ErrNegative},
		{"lottery without half-time", nil, func(c *scheduler.Config) { c.Strategy = scheduler.Lottery }, "priorityHalftime", flotilla.ErrRequired},
		{"all-lottery without the lottery", nil, func(c *scheduler.Config) { c.UseProbabilisticSchedulingForAllResources = true },
			"useProbabilisticSchedulingForAllResources", flotilla.ErrInconsistent},
		{"lottery without cpu", flotilla.MustResourceSchema("memory"), func(c *scheduler.Config) { c.Strategy, c.PriorityHalftime = scheduler.Lottery, time.Minute },
			"strategy", flotilla.ErrUnknownResource},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			schema := tc.schema
			if schema == nil {
				schema = flotilla.MustResourceSchema("cpu")
			}
			cfg := scheduler.DefaultConfig(schema)
			tc.edit(&cfg)
			_, err := scheduler.New(cfg)
			require.Error(t, err)
			fe := findField(err, tc.field)
			require.NotNil(t, fe, "%v", err)
			assert.ErrorIs(t, fe, tc.class)
		})
	}

	t.Run("bad carried priority", func(t *testing.T) {
		w := newWorld(t)
		w.lottery(time.Hour, false)
		w.addNodes(1, "4")
		w.addQueue("A", 1)
		s, err := scheduler.New(w.cfg)
		require.NoError(t, err)
		snap := w.snapshot()
		snap.QueuePriorities.Priorities = map[string]float64{"A": -1}
		_, err = s.Schedule(context.Background(), snap, t0)
		fe := findField(err, "queuePriorities.priorities.A")
		require.NotNil(t, fe, "%v", err)
		assert.ErrorIs(t, fe, flotilla.ErrOutOfRange)
	})

	t.Run("default strategy", func(t *testing.T) {
		s, err := scheduler.New(scheduler.DefaultConfig(flotilla.MustResourceSchema("cpu")))
		require.NoError(t, err)
		assert.Equal(t, scheduler.ProgressiveFilling, s.Config().Strategy)
	})
}

// findField returns the *flotilla.FieldError for field inside err (joined
// errors included), or nil.
func findField(err error, field string) *flotilla.FieldError {
	var fe *flotilla.FieldError
	if errors.As(err, &fe) && fe.Field == field {
		return fe
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range j.Unwrap() {
			if fe := findField(e, field); fe != nil {
				return fe
			}
		}
	}
	return nil
}

// TestPropertyLottery: on random worlds (the progressive-filling
// properties' generator) with random carried priorities, the lottery
// over-commits no node at any priority, honours selectors, taints and
// cordons, preempts nothing, accounts for every queued job exactly once
// (scheduled, unscheduled, or counted as not examined), and repeats itself
// for the same inputs.
func TestPropertyLottery(t *testing.T) {
	p := properties(t)
	p.Property("lottery placements are valid and complete", prop.ForAll(func(seed uint64, lookback int, allLottery bool) string {
		w := makeWorld(t, seed, lookback)
		w.cfg.Strategy, w.cfg.PriorityHalftime = scheduler.Lottery, time.Minute
		w.cfg.UseProbabilisticSchedulingForAllResources = allLottery
		w.snap.Seed = seed
		w.snap.QueuePriorities = scheduler.QueuePriorityState{Priorities: map[string]float64{}, Time: t0.Add(-time.Duration(seed%600) * time.Second)}
		for i, q := range w.snap.Queues {
			w.snap.QueuePriorities.Priorities[q.Name] = float64((seed >> (8 * i)) % 64)
		}
		res := w.schedule(t)
		if msg := overCommitted(w, res); msg != "" {
			return fmt.Sprintf("seed %d: %s", seed, msg)
		}
		if len(res.Preempted) > 0 {
			return fmt.Sprintf("seed %d: the lottery preempted %s", seed, res.Preempted[0].Job.ID)
		}
		nodes := map[string]*flotilla.Node{}
		for _, n := range w.snap.Nodes {
			nodes[n.Name] = n
		}
		seen := map[string]int{}
		for _, a := range res.Scheduled {
			n := nodes[a.Node]
			if n.Unschedulable || !flotilla.SelectorMatches(a.Job.NodeSelector, n.Labels) || !flotilla.TaintsTolerated(n.Taints, a.Job.Tolerations) {
				return fmt.Sprintf("seed %d: %s may not go on %s", seed, a.Job.ID, a.Node)
			}
			seen[a.Job.ID]++
		}
		for _, u := range res.UnscheduledJobs {
			seen[u.Job.ID]++
		}
		notExamined := 0
		for _, r := range res.NotExamined {
			notExamined += r.Count
		}
		for id, n := range seen {
			if n != 1 {
				return fmt.Sprintf("seed %d: %s reported %d times", seed, id, n)
			}
		}
		if len(seen)+notExamined != len(w.queued) {
			return fmt.Sprintf("seed %d: %d queued, %d reported, %d not examined", seed, len(w.queued), len(seen), notExamined)
		}
		again := w.schedule(t)
		if fmt.Sprint(again.Scheduled, again.UnscheduledJobs, again.QueuePriorities) != fmt.Sprint(res.Scheduled, res.UnscheduledJobs, res.QueuePriorities) {
			return fmt.Sprintf("seed %d: a second run decided differently", seed)
		}
		return ""
	}, gen.UInt64(), gen.IntRange(0, 6), gen.Bool()))
	p.TestingRun(t)
}

// BenchmarkLotteryColdCycle is BenchmarkColdCycle under the lottery: 1,000
// × 32-core nodes, 10 queues, 32,000 one-core jobs, an empty cluster.
func BenchmarkLotteryColdCycle(b *testing.B) {
	s, snap := benchWorld(b, 1000, 10, 32000)
	cfg := s.Config()
	cfg.Strategy, cfg.PriorityHalftime = scheduler.Lottery, 20*time.Minute
	s, err := scheduler.New(cfg)
	require.NoError(b, err)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		res, err := s.Schedule(ctx, snap, t0)
		if err != nil || len(res.Scheduled) != 32000 {
			b.Fatalf("err %v, %d scheduled", err, len(res.Scheduled))
		}
	}
}
