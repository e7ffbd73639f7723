package scheduler_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/scheduler"
)

func TestProgressiveFillingEqualQueues(t *testing.T) {
	w := newWorld(t)
	w.addNodes(1, "32")
	for _, q := range []string{"A", "B", "C"} {
		w.addQueue(q, 1)
		w.submit(q, 32, "1")
	}
	res := w.schedule()
	assert.Equal(t, map[string]int{"A": 11, "B": 11, "C": 10}, countByQueue(res.Scheduled))
	for _, q := range res.Queues {
		assert.InDelta(t, 1.0/3, q.FairShare, 1e-12, q.Name)
	}
}

func TestProgressiveFillingWeights(t *testing.T) {
	w := newWorld(t)
	w.addNodes(3, "32")
	w.addQueue("A", 1)
	w.addQueue("B", 2)
	w.addQueue("C", 10)
	for _, q := range []string{"A", "B", "C"} {
		w.submit(q, 100, "1")
	}
	res := w.schedule()
	assert.Equal(t, map[string]int{"A": 60, "B": 30, "C": 6}, countByQueue(res.Scheduled))
}

func TestDemandCappedQueueLeavesRestToOthers(t *testing.T) {
	w := newWorld(t)
	w.addNodes(1, "32")
	w.addQueue("A", 1)
	w.addQueue("B", 1)
	w.submit("A", 4, "1")
	w.submit("B", 100, "1")
	res := w.schedule()
	assert.Equal(t, map[string]int{"A": 4, "B": 28}, countByQueue(res.Scheduled))
	assert.InDelta(t, 4.0/32, res.Queues[0].AdjustedFairShare, 1e-9)
	assert.InDelta(t, 28.0/32, res.Queues[1].AdjustedFairShare, 1e-9)
}

func TestLargeUnschedulableJobDoesNotBlockSmallerOnes(t *testing.T) {
	w := newWorld(t)
	w.addNodes(1, "32")
	w.addQueue("A", 1)
	big := w.submit("A", 1, "64")[0]
	w.submit("A", 3, "1")
	w.cfg.MaxQueueLookback = 10
	res := w.schedule()
	assert.Len(t, res.Scheduled, 3)
	require.Len(t, res.UnscheduledJobs, 1)
	assert.Equal(t, big, res.UnscheduledJobs[0].Job)
	assert.Equal(t, scheduler.ReasonNoFit, res.UnscheduledJobs[0].Reason.Code)
	assert.Contains(t, res.UnscheduledJobs[0].Reason.Message, "cpu")
}

func TestLookbackBoundsExaminedJobs(t *testing.T) {
	w := newWorld(t)
	w.addNodes(1, "32")
	w.addQueue("A", 1)
	w.submit("A", 5, "64")
	w.submit("A", 3, "1")
	w.cfg.MaxQueueLookback = 5
	res := w.schedule()
	assert.Empty(t, res.Scheduled, "the small jobs sit behind five big ones and the lookback is five")
	assert.Len(t, res.UnscheduledJobs, 5)
	require.Len(t, res.NotExamined, 1)
	assert.Equal(t, scheduler.QueueRemainder{Queue: "A", Count: 3, Reason: res.NotExamined[0].Reason}, res.NotExamined[0])
	assert.Equal(t, scheduler.ReasonLookback, res.NotExamined[0].Reason.Code)
}

func TestPerJobPriorityLowerNumberFirst(t *testing.T) {
	w := newWorld(t)
	w.addNodes(1, "1")
	w.addQueue("A", 1)
	w.submit("A", 1, "1", withPriority(10))
	want := w.submit("A", 1, "1", withPriority(1))[0]
	w.submit("A", 1, "1", withPriority(20))
	res := w.schedule()
	require.Len(t, res.Scheduled, 1)
	assert.Equal(t, want.ID, res.Scheduled[0].Job.ID)
}

func TestSchedulingKeyCacheSkipsIdenticalFailures(t *testing.T) {
	w := newWorld(t)
	w.addNodes(1, "8")
	w.addQueue("A", 1)
	w.submit("A", 3, "16")
	res := w.schedule()
	require.Len(t, res.UnscheduledJobs, 3)
	assert.Equal(t, scheduler.ReasonNoFit, res.UnscheduledJobs[0].Reason.Code)
	assert.Equal(t, scheduler.ReasonSameAsFailed, res.UnscheduledJobs[1].Reason.Code)
	assert.Equal(t, scheduler.ReasonSameAsFailed, res.UnscheduledJobs[2].Reason.Code)
}

func TestRoundFractionStopsAfterCrossingJob(t *testing.T) {
	w := newWorld(t)
	w.addNodes(1, "100")
	w.addQueue("A", 1)
	w.submit("A", 50, "1")
	w.cfg.MaximumResourceFractionToSchedule = map[string]float64{"cpu": 0.1}
	res := w.schedule()
	// 10 cores is exactly the limit, not over it; the 11th crosses and is kept.
	assert.Len(t, res.Scheduled, 11)
	require.Len(t, res.NotExamined, 1)
	assert.Equal(t, scheduler.ReasonRoundLimit, res.NotExamined[0].Reason.Code)
	assert.Equal(t, 39, res.NotExamined[0].Count)
}

func TestGlobalRateLimitBurstAndRefill(t *testing.T) {
	w := newWorld(t)
	w.addNodes(1, "100")
	w.addQueue("A", 1)
	w.submit("A", 50, "1")
	w.cfg.MaximumSchedulingRate = 2
	w.cfg.MaximumSchedulingBurst = 5
	s, err := scheduler.New(w.cfg)
	require.NoError(t, err)
	res, err := s.Schedule(context.Background(), w.snapshot(), t0)
	require.NoError(t, err)
	assert.Len(t, res.Scheduled, 5, "a full bucket")
	w.apply(res)
	snap := w.snapshot()
	snap.RateLimits = res.RateLimits
	res, err = s.Schedule(context.Background(), snap, t0.Add(1500*1e6)) // 1.5 s later: 3 tokens
	require.NoError(t, err)
	assert.Len(t, res.Scheduled, 3)
	assert.Equal(t, scheduler.ReasonGlobalRateLimit, res.NotExamined[0].Reason.Code)
}

func TestPerQueueRateLimitStopsOnlyThatQueue(t *testing.T) {
	w := newWorld(t)
	w.addNodes(1, "100")
	w.addQueue("A", 1)
	w.addQueue("B", 1)
	w.submit("A", 20, "1")
	w.submit("B", 20, "1")
	w.cfg.MaximumPerQueueSchedulingRate = 1
	w.cfg.MaximumPerQueueSchedulingBurst = 4
	res := w.schedule()
	assert.Equal(t, map[string]int{"A": 4, "B": 4}, countByQueue(res.Scheduled))
	for _, r := range res.NotExamined {
		assert.Equal(t, scheduler.ReasonQueueRateLimit, r.Reason.Code)
		assert.Equal(t, 16, r.Count)
	}
}

func TestPerQueuePriorityClassLimit(t *testing.T) {
	w := newWorld(t)
	w.cfg.PriorityClasses[1].MaximumResourceFractionPerQueue = map[string]float64{"cpu": 0.25}
	w.addNodes(1, "32")
	w.addQueue("A", 1)
	w.addQueue("B", 1)
	w.queues[1].LimitsByPriorityClass = map[string]map[string]float64{flotilla.ArmadaPreemptible: {"cpu": 0.5}}
	pre := func(j *flotilla.Job) { j.PriorityClass = flotilla.ArmadaPreemptible }
	w.submit("A", 20, "1", pre)
	w.submit("B", 20, "1", pre)
	res := w.schedule()
	assert.Equal(t, map[string]int{"A": 8, "B": 16}, countByQueue(res.Scheduled))
	var limited int
	for _, u := range res.UnscheduledJobs {
		if u.Reason.Code == scheduler.ReasonQueueClassLimit {
			limited++
		}
	}
	assert.Equal(t, 16, limited)
}

func TestHigherPriorityClassGoesFirst(t *testing.T) {
	w := newWorld(t)
	w.addNodes(1, "4")
	w.addQueue("A", 1)
	w.addQueue("B", 1)
	w.submit("A", 4, "1", func(j *flotilla.Job) { j.PriorityClass = flotilla.ArmadaPreemptible })
	w.submit("B", 4, "1")
	res := w.schedule()
	assert.Equal(t, map[string]int{"B": 4}, countByQueue(res.Scheduled))
}

func TestQueueTiersKeepQueuesOnTheirOwnNodes(t *testing.T) {
	w := newWorld(t)
	w.addNodes(2, "32")
	w.addQueue("A", 1)
	w.addQueue("B", 1)
	w.submit("A", 32, "1")
	w.submit("B", 32, "1")
	res := w.schedule()
	nodesOf := map[string]map[string]bool{}
	for _, a := range res.Scheduled {
		if nodesOf[a.Job.Queue] == nil {
			nodesOf[a.Job.Queue] = map[string]bool{}
		}
		nodesOf[a.Job.Queue][a.Node] = true
	}
	assert.Len(t, nodesOf["A"], 1, "A's jobs share one node")
	assert.Len(t, nodesOf["B"], 1, "B's jobs share one node")
}

func TestSnapshotErrorsNameFieldAndValue(t *testing.T) {
	w := newWorld(t)
	w.addNodes(1, "32")
	w.addQueue("A", 1)
	w.running = append(w.running,
		scheduler.Running{Job: w.job("nope", "1"), Node: "node-0"},
		scheduler.Running{Job: w.job("A", "1"), Node: "missing"},
	)
	s, err := scheduler.New(w.cfg)
	require.NoError(t, err)
	_, err = s.Schedule(context.Background(), w.snapshot(), t0)
	require.Error(t, err)
	var fe *flotilla.FieldError
	require.True(t, errors.As(err, &fe))
	assert.ErrorIs(t, err, flotilla.ErrUnknownName)
	assert.Contains(t, err.Error(), `running[0].job.queue "nope"`)
	assert.Contains(t, err.Error(), `running[1].node "missing"`)
}

func TestConfigErrorsAllReported(t *testing.T) {
	schema := flotilla.MustResourceSchema("cpu")
	cfg := scheduler.DefaultConfig(schema)
	cfg.Fairness = "fifo"
	cfg.EvictionProbability = 2
	cfg.MaxQueueLookback = -1
	cfg.DefaultPriorityClass = "gold"
	cfg.MaximumResourceFractionToSchedule = map[string]float64{"gpu": 0.5}
	_, err := scheduler.New(cfg)
	require.Error(t, err)
	for _, want := range []string{`fairness "fifo"`, `evictionProbability "2"`, `maxQueueLookback "-1"`, `defaultPriorityClass "gold"`, `maximumResourceFractionToSchedule "gpu"`} {
		assert.Contains(t, err.Error(), want)
	}
	assert.ErrorIs(t, err, flotilla.ErrOutOfRange)
	assert.ErrorIs(t, err, flotilla.ErrUnknownResource)
}

func TestCancelledContext(t *testing.T) {
	w := newWorld(t)
	w.addNodes(1, "32")
	w.addQueue("A", 1)
	w.submit("A", 5, "1")
	s, err := scheduler.New(w.cfg)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = s.Schedule(ctx, w.snapshot(), t0)
	assert.ErrorIs(t, err, context.Canceled)
}
