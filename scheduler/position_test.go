package scheduler_test

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/leanovate/gopter/gen"
	"github.com/leanovate/gopter/prop"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/queue"
	"github.com/flotilla-sched/flotilla/scheduler"
)

// PositionOf counts the queue's jobs before the job in scheduling order
// (class priority, then priority, then submit time) and sums what they
// request; a job the queue does not hold has no position.
func TestPositionOfCountsTheJobsAheadInSchedulingOrder(t *testing.T) {
	w := newWorld(t)
	w.addQueue("A", 1)
	w.addQueue("B", 1)
	late := w.submit("A", 1, "1", withPriority(5), preemptible)[0]
	first := w.submit("A", 1, "2", withPriority(1), preemptible)[0]
	second := w.submit("A", 1, "3", withPriority(1), preemptible)[0]
	urgent := w.submit("A", 1, "4", withPriority(9), nonPreemptible)[0]
	other := w.submit("B", 100, "1")[0]
	for _, c := range []struct {
		job   *flotilla.Job
		ahead int
		cpu   string // summed requests ahead; "" for none
	}{
		{urgent, 0, ""},
		{first, 1, "4"},
		{second, 2, "6"},
		{late, 3, "9"},
	} {
		pos, ok, err := scheduler.PositionOf(w.store, "A", c.job.ID, 0)
		require.NoError(t, err)
		require.True(t, ok, c.job.ID)
		assert.Equal(t, c.ahead, pos.Ahead, c.job.ID)
		assert.Equal(t, 4, pos.Queued, c.job.ID)
		if c.cpu == "" {
			assert.Nil(t, pos.AheadRequests, c.job.ID)
		} else {
			assert.Equal(t, w.res(c.cpu), pos.AheadRequests, c.job.ID)
		}
	}
	pos, ok, err := scheduler.PositionOf(w.store, "B", other.ID, 0)
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, 100, pos.Queued)
	for _, c := range []struct{ queue, id string }{{"A", other.ID}, {"A", "nope"}, {"C", first.ID}} {
		_, ok, err := scheduler.PositionOf(w.store, c.queue, c.id, 0)
		require.NoError(t, err)
		assert.False(t, ok, "%s in %s", c.id, c.queue)
	}
	_, ok, err = scheduler.PositionOf(nil, "A", first.ID, 0)
	require.NoError(t, err)
	assert.False(t, ok)
}

// With a limit, PositionOf stops reading after limit jobs ahead and says
// the counts are partial; a job within the limit is placed exactly.
func TestPositionOfStopsAtItsLimitAndSaysSo(t *testing.T) {
	w := newWorld(t)
	w.addQueue("A", 1)
	w.submit("A", 9, "1")
	var order []string
	w.store.Ascend("A", func(e *queue.Entry) bool { order = append(order, e.Job.ID); return true })
	pos, ok, err := scheduler.PositionOf(w.store, "A", order[8], 5)
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, scheduler.QueuePosition{Ahead: 5, Queued: 9, AheadRequests: w.res("5"), Partial: true}, pos)
	pos, ok, err = scheduler.PositionOf(w.store, "A", order[5], 5)
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, scheduler.QueuePosition{Ahead: 5, Queued: 9, AheadRequests: w.res("5")}, pos)
}

// PositionOf agrees with a naive oracle: sort the queue's jobs by
// class priority (higher first), priority (lower first), submit time and
// id, and count and sum the jobs before each one (over 130 jobs, past the
// reader's 64-entry batches).
func TestPropertyPositionOfAgreesWithSortingTheQueue(t *testing.T) {
	p := properties(t)
	p.Property("PositionOf == position in the sorted queue", prop.ForAll(func(seed uint64) string {
		rng := rand.New(rand.NewPCG(seed, 13))
		w := newWorld(t)
		w.addQueue("A", 1)
		w.addQueue("B", 1)
		var jobs []*flotilla.Job
		for range 1 + rng.IntN(130) {
			q := []string{"A", "B"}[rng.IntN(2)]
			class := []func(*flotilla.Job){preemptible, nonPreemptible}[rng.IntN(2)]
			j := w.job(q, fmt.Sprint(1+rng.IntN(4)), class, withPriority(uint32(rng.IntN(3))), func(j *flotilla.Job) {
				j.SubmitTime = t0.Add(time.Duration(rng.IntN(5)) * time.Second)
			})
			require.NoError(t, w.store.Add(j))
			jobs = append(jobs, j)
		}
		classPrio := func(j *flotilla.Job) int32 {
			if j.PriorityClass == flotilla.ArmadaPreemptible {
				return 20000
			}
			return 30000
		}
		for _, q := range []string{"A", "B"} {
			var in []*flotilla.Job
			for _, j := range jobs {
				if j.Queue == q {
					in = append(in, j)
				}
			}
			slices.SortFunc(in, func(a, b *flotilla.Job) int {
				return cmp.Or(-cmp.Compare(classPrio(a), classPrio(b)), cmp.Compare(a.Priority, b.Priority),
					a.SubmitTime.Compare(b.SubmitTime), cmp.Compare(a.ID, b.ID))
			})
			sum := w.res("0")
			for i, j := range in {
				pos, ok, err := scheduler.PositionOf(w.store, q, j.ID, 0)
				if err != nil || !ok {
					return fmt.Sprintf("seed %d: %s not found (%v)", seed, j.ID, err)
				}
				if pos.Ahead != i || pos.Queued != len(in) || (i > 0 && !pos.AheadRequests.Equal(sum)) {
					return fmt.Sprintf("seed %d: %s at %d of %d ahead %v, oracle %d of %d ahead %v", seed, j.ID, pos.Ahead, pos.Queued, pos.AheadRequests, i, len(in), sum)
				}
				sum.Add(j.Requests)
			}
		}
		return ""
	}, gen.UInt64()))
	p.TestingRun(t)
}

// BenchmarkPositionOfLastOf100k: the cost of placing the last job of a
// 100,000-job queue (a status -v on it holds the service's lock this long).
func BenchmarkPositionOfLastOf100k(b *testing.B) {
	w := newWorld(b)
	w.addQueue("A", 1)
	w.submit("A", 100_000, "1")
	var last string
	w.store.Ascend("A", func(e *queue.Entry) bool { last = e.Job.ID; return true })
	b.ResetTimer()
	for b.Loop() {
		if _, ok, _ := scheduler.PositionOf(w.store, "A", last, 0); !ok {
			b.Fatal("not found")
		}
	}
}
