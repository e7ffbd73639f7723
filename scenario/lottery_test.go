package scenario

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flotilla-sched/flotilla/scheduler"
)

// lotteryFile: round 0 starts four of A's jobs on a 12-core node; round 1,
// one half-time later, they still run and A and B each want the rest.
func lotteryFile() *File {
	return &File{
		Config: Config{Strategy: StrategyLottery, PriorityHalftime: "10m", RoundDuration: "10m"},
		Nodes:  []NodeTemplate{{Name: "node", Resources: map[string]string{"cpu": "12"}}},
		Queues: []QueueSpec{{Name: "A"}, {Name: "B"}},
		Rounds: []Round{
			{Submit: []JobTemplate{{ID: "a", Queue: "A", Count: ptr(4), Requests: map[string]string{"cpu": "1"}}}},
			{Submit: []JobTemplate{
				{ID: "a2", Queue: "A", Count: ptr(8), Requests: map[string]string{"cpu": "1"}},
				{ID: "b", Queue: "B", Count: ptr(8), Requests: map[string]string{"cpu": "1"}},
			}},
		},
	}
}

func TestLotterySchedulerConfig(t *testing.T) {
	f := lotteryFile()
	f.Config.UseProbabilisticSchedulingForAllResources = true
	cfg := build(t, f).SchedulerConfig()
	assert.Equal(t, scheduler.Lottery, cfg.Strategy)
	assert.Equal(t, "10m0s", cfg.PriorityHalftime.String())
	assert.True(t, cfg.UseProbabilisticSchedulingForAllResources)
	assert.Equal(t, scheduler.ProgressiveFilling, build(t, baseFile()).SchedulerConfig().Strategy)
}

// TestRunCarriesQueuePriorities: A ran 4 cores for one half-time, so its
// priority is 2 in round 1 while B's is 0 (floored at 0.5): B's slice of
// the 8 free cores is four times A's. Were the state not carried, both
// would start at 0 and split them evenly.
func TestRunCarriesQueuePriorities(t *testing.T) {
	out, err := Run(context.Background(), build(t, lotteryFile()))
	require.NoError(t, err)
	require.Len(t, out.Rounds, 2)
	assert.Len(t, out.Rounds[0].Scheduled, 4)
	got := map[string]int{}
	for _, p := range out.Rounds[1].Scheduled {
		got[p.Queue]++
	}
	assert.Equal(t, 8, got["A"]+got["B"])
	assert.GreaterOrEqual(t, got["B"], 6, "B gets about 4/5 of the free cores: %v", got)
}
