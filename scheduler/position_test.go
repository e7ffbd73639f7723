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
	assert.Equal(t, scheduler.QueuePosition{Ahead: 5, Queued: 9, AheadRequests: w.res("5"), Partial: true, Read: 5}, pos)
	pos, ok, err = scheduler.PositionOf(w.store, "A", order[5], 5)
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, scheduler.QueuePosition{Ahead: 5, Queued: 9, AheadRequests: w.res("5"), Read: 5}, pos)
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

// A gang is offered once its last member is read, as one unit: its
// members' place is the gang's, behind the lone jobs read before that
// member, and a lone job is not behind the members of a gang that
// completes after it.
func TestPositionOfPlacesAGangWhereItsLastMemberCompletesIt(t *testing.T) {
	w := newWorld(t)
	w.addQueue("A", 1)
	m1 := w.submit("A", 1, "1", inGang("g", 2, ""))[0]
	x := w.submit("A", 1, "2")[0]
	y := w.submit("A", 1, "4")[0]
	m2 := w.submit("A", 1, "8", inGang("g", 2, ""))[0]
	z := w.submit("A", 1, "16")[0]
	for _, c := range []struct {
		job   *flotilla.Job
		ahead int
		cpu   string
	}{
		{x, 0, ""},
		{y, 1, "2"},
		{m1, 2, "6"},
		{m2, 2, "6"},
		{z, 4, "15"},
	} {
		pos, ok, err := scheduler.PositionOf(w.store, "A", c.job.ID, 0)
		require.NoError(t, err)
		require.True(t, ok, c.job.ID)
		assert.Equal(t, c.ahead, pos.Ahead, c.job.ID)
		assert.Equal(t, 5, pos.Queued, c.job.ID)
		assert.False(t, pos.Partial, c.job.ID)
		if c.cpu == "" {
			assert.Nil(t, pos.AheadRequests, c.job.ID)
		} else {
			assert.Equal(t, w.res(c.cpu), pos.AheadRequests, c.job.ID)
		}
	}
	// The scheduler agrees: on a roomy cluster it places x, y, the gang, z.
	w.addNodes(1, "64")
	var order []string
	for _, a := range w.schedule().Scheduled {
		order = append(order, a.Job.ID)
	}
	require.Len(t, order, 5)
	assert.Equal(t, []string{x.ID, y.ID}, order[:2])
	assert.ElementsMatch(t, []string{m1.ID, m2.ID}, order[2:4])
	assert.Equal(t, z.ID, order[4])
}

// A member of a gang the queue does not hold whole is never offered: its
// position is behind every job the queue offers, and says GangIncomplete.
func TestPositionOfPutsAnIncompleteGangBehindTheWholeQueue(t *testing.T) {
	w := newWorld(t)
	w.addQueue("A", 1)
	m := w.submit("A", 1, "1", inGang("g", 3, ""))[0]
	w.submit("A", 2, "2")
	w.submit("A", 1, "4", inGang("g", 3, ""))
	pos, ok, err := scheduler.PositionOf(w.store, "A", m.ID, 0)
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, scheduler.QueuePosition{Ahead: 2, Queued: 4, AheadRequests: w.res("4"), GangIncomplete: true, Read: 3}, pos)
}

// PositionOf agrees with the scheduler itself: on a cluster with room for
// every job, a cycle places one queue's units (lone jobs and whole gangs)
// in the order it offers them, so a job's Ahead is the number of jobs
// placed before its unit, over random classes, priorities, submit times
// and gangs whose members are spread through the queue.
func TestPropertyPositionOfAgreesWithTheOrderTheCyclePlacesJobs(t *testing.T) {
	p := properties(t)
	p.Property("PositionOf == jobs placed before the job's unit", prop.ForAll(func(seed uint64) string {
		rng := rand.New(rand.NewPCG(seed, 31))
		w := newWorld(t)
		w.addQueue("A", 1)
		w.addNodes(1, "100000")
		var jobs []*flotilla.Job
		for gi := range 1 + rng.IntN(40) {
			class := []func(*flotilla.Job){preemptible, nonPreemptible}[rng.IntN(2)]
			n, gang := 1, func(*flotilla.Job) {}
			if rng.IntN(3) == 0 {
				n = 2 + rng.IntN(3)
				gang = inGang(fmt.Sprint("g", gi), n, "")
			}
			for range n {
				j := w.job("A", fmt.Sprint(1+rng.IntN(4)), class, gang, withPriority(uint32(rng.IntN(3))), func(j *flotilla.Job) {
					j.SubmitTime = t0.Add(time.Duration(rng.IntN(20)) * time.Second)
				})
				require.NoError(t, w.store.Add(j))
				jobs = append(jobs, j)
			}
		}
		res := w.schedule()
		if len(res.Scheduled) != len(jobs) {
			return fmt.Sprintf("seed %d: %d of %d placed", seed, len(res.Scheduled), len(jobs))
		}
		// A unit starts where its first job is placed; every member of a
		// gang is ahead of the same jobs.
		unitStart := map[string]int{}
		for i, a := range res.Scheduled {
			k := a.Job.ID
			if a.Job.IsGang() {
				k = "gang " + a.Job.Gang.ID
			}
			if _, seen := unitStart[k]; !seen {
				unitStart[k] = i
			}
		}
		for _, j := range jobs {
			k := j.ID
			if j.IsGang() {
				k = "gang " + j.Gang.ID
			}
			pos, ok, err := scheduler.PositionOf(w.store, "A", j.ID, 0)
			if err != nil || !ok {
				return fmt.Sprintf("seed %d: %s not found (%v)", seed, j.ID, err)
			}
			if pos.Ahead != unitStart[k] || pos.Partial {
				return fmt.Sprintf("seed %d: %s has %d ahead (partial %v), the cycle placed %d before it", seed, j.ID, pos.Ahead, pos.Partial, unitStart[k])
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
