package scheduler_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/queue"
	"github.com/flotilla-sched/flotilla/scheduler"
)

// listQueued is a hand-written scheduler.Queued over fixed entry lists,
// trusted for nothing: it hands out whatever entries it holds, in the
// order given, with counts and keys recomputed naively.
type listQueued struct {
	classes  []flotilla.PriorityClass
	def      string
	schema   *flotilla.ResourceSchema
	queues   map[string][]*queue.Entry
	readErr  error // returned by every Read
	openErr  error // returned by every Open
	readsAll int   // entries handed out by Read, over all readers
}

func newListQueued(cfg scheduler.Config) *listQueued {
	return &listQueued{classes: cfg.PriorityClasses, def: cfg.DefaultPriorityClass, schema: cfg.Schema, queues: map[string][]*queue.Entry{}}
}

// add appends an entry to a queue as given (nil, or with a nil job).
func (l *listQueued) add(q string, e *queue.Entry) { l.queues[q] = append(l.queues[q], e) }

// addJob appends j with the entry a Store would build for it, without
// validating it.
func (l *listQueued) addJob(j *flotilla.Job) *queue.Entry {
	store, err := queue.New(l.schema, l.classes, l.def)
	if err != nil {
		panic(err)
	}
	e, err := store.NewEntry(j)
	if err != nil {
		panic(err)
	}
	l.add(j.Queue, e)
	return e
}

func (l *listQueued) PriorityClasses() []flotilla.PriorityClass { return l.classes }
func (l *listQueued) DefaultPriorityClass() string              { return l.def }

func (l *listQueued) Queues() []string {
	var names []string
	for q, es := range l.queues {
		if len(es) > 0 {
			names = append(names, q)
		}
	}
	slices.Sort(names)
	return names
}

func (l *listQueued) Stats(q string) queue.Stats {
	st := queue.Stats{Jobs: len(l.queues[q])}
	for _, e := range l.queues[q] {
		if e == nil || e.Job == nil {
			continue
		}
		if e.Job.IsGang() {
			st.GangJobs++
		}
		if e.Job.Validate(l.schema) == nil {
			if st.Demand == nil {
				st.Demand = l.schema.Zero()
			}
			st.Demand.AddSaturating(e.Job.Requests)
		}
	}
	return st
}

func (l *listQueued) SchedulingKeys(q string, fn func(uint64, int) bool) {
	counts := map[uint64]int{}
	for _, e := range l.queues[q] {
		if e != nil && (e.Job == nil || !e.Job.IsGang()) {
			counts[e.Key]++
		}
	}
	// In key order: a store that lies about one key (lyingQueued) must
	// lie about the same one every run, so that a fuzz failure replays.
	for _, k := range slices.Sorted(maps.Keys(counts)) {
		if !fn(k, counts[k]) {
			return
		}
	}
}

func (l *listQueued) Get(id string) (*queue.Entry, bool) {
	for _, es := range l.queues {
		for _, e := range es {
			if e != nil && e.Job != nil && e.Job.ID == id {
				return e, true
			}
		}
	}
	return nil, false
}

func (l *listQueued) Open(q string) (queue.EntryReader, error) {
	if l.openErr != nil {
		return nil, l.openErr
	}
	return &listReader{l: l, entries: l.queues[q]}, nil
}

type listReader struct {
	l       *listQueued
	entries []*queue.Entry
}

func (r *listReader) Read(dst []*queue.Entry) (int, error) {
	if r.l.readErr != nil {
		return 0, r.l.readErr
	}
	n := copy(dst, r.entries)
	r.entries = r.entries[n:]
	r.l.readsAll += n
	return n, nil
}

var _ scheduler.Queued = (*listQueued)(nil)

// groupsOf returns the result's Unscheduled groups of one reason code.
func groupsOf(res *scheduler.Result, code scheduler.ReasonCode) []scheduler.UnscheduledGroup {
	var out []scheduler.UnscheduledGroup
	for _, g := range res.Unscheduled {
		if g.Reason.Code == code {
			out = append(out, g)
		}
	}
	return out
}

// TestInvalidQueuedJobIsReportedAndNeverPlaced: Schedule does not trust
// its Queued. A job the store should not have handed out is reported with
// ReasonInvalid, naming the field and value, and never placed; the cycle
// neither panics (a missing or short Requests used to index out of range)
// nor over-commits (−100 cpu used to be placed, freeing 100 cores).
func TestInvalidQueuedJobIsReportedAndNeverPlaced(t *testing.T) {
	cases := []struct {
		name string
		add  func(w *world, l *listQueued)
		want string // in the reason's message
	}{
		{"nil entry", func(w *world, l *listQueued) { l.add("A", nil) }, "without a job"},
		{"entry without job", func(w *world, l *listQueued) { l.add("A", &queue.Entry{ClassPriority: 30000}) }, "without a job"},
		{"no requests", func(w *world, l *listQueued) {
			l.addJob(w.job("A", "1", func(j *flotilla.Job) { j.ID = "bad"; j.Requests = nil }))
		}, `job "bad".requests`},
		{"short requests", func(w *world, l *listQueued) {
			l.addJob(w.job("A", "1", func(j *flotilla.Job) { j.ID = "bad"; j.Requests = j.Requests[:1] }))
		}, `job "bad".requests "1"`},
		{"long requests", func(w *world, l *listQueued) {
			l.addJob(w.job("A", "1", func(j *flotilla.Job) { j.ID = "bad"; j.Requests = append(j.Requests, 1) }))
		}, `job "bad".requests "4"`},
		{"negative cpu", func(w *world, l *listQueued) {
			l.addJob(w.job("A", "1", func(j *flotilla.Job) { j.ID = "bad"; j.Requests[0] = -100000 }))
		}, `job "bad".requests.cpu "-100"`},
		{"unknown class", func(w *world, l *listQueued) {
			e := l.addJob(w.job("A", "1", func(j *flotilla.Job) { j.ID = "bad" }))
			e.Job.PriorityClass = "gold"
		}, `job "bad".priorityClass "gold"`},
		{"wrong class priority", func(w *world, l *listQueued) {
			e := l.addJob(w.job("A", "1", func(j *flotilla.Job) { j.ID = "bad" }))
			e.ClassPriority = 99999
		}, "priority 99999"},
		{"wrong queue", func(w *world, l *listQueued) {
			e := l.addJob(w.job("B", "1", func(j *flotilla.Job) { j.ID = "bad" }))
			l.queues["B"] = nil
			l.add("A", e)
		}, `job "bad".queue "B"`},
	}
	for _, c := range cases {
		for _, every := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/every=%v", c.name, every), func(t *testing.T) {
				w := newWorld(t)
				w.cfg.ReportEveryUnscheduled = every
				w.addNodes(1, "4")
				w.addQueue("A", 1)
				w.addQueue("B", 1)
				l := newListQueued(w.cfg)
				c.add(w, l)
				for range 4 {
					l.addJob(w.job("A", "1"))
				}
				s, err := scheduler.New(w.cfg)
				require.NoError(t, err)
				snap := w.snapshot()
				snap.Queued = l
				var res *scheduler.Result
				require.NotPanics(t, func() { res, err = s.Schedule(context.Background(), snap, t0) })
				require.NoError(t, err)
				assert.Len(t, res.Scheduled, 4, "the valid jobs fill the node, nothing more")
				for _, a := range res.Scheduled {
					assert.NotEqual(t, "bad", a.Job.ID)
				}
				bad := groupsOf(res, scheduler.ReasonInvalid)
				require.Len(t, bad, 1)
				assert.Equal(t, 1, bad[0].Count)
				assert.Equal(t, "A", bad[0].Queue)
				assert.Contains(t, bad[0].Reason.Message, c.want)
				if every {
					require.Len(t, res.UnscheduledJobs, 1)
					assert.Equal(t, scheduler.ReasonInvalid, res.UnscheduledJobs[0].Reason.Code)
				}
			})
		}
	}
}

// TestInvalidQueuedJobUnderTheLotteryIsReported: the lottery strategy
// reads queues through the same checks.
func TestInvalidQueuedJobUnderTheLotteryIsReported(t *testing.T) {
	w := newWorld(t)
	w.lottery(time.Minute, false)
	w.addNodes(1, "4")
	w.addQueue("A", 1)
	l := newListQueued(w.cfg)
	l.addJob(w.job("A", "1", func(j *flotilla.Job) { j.ID = "bad"; j.Requests[0] = -100000 }))
	l.addJob(w.job("A", "1"))
	s, err := scheduler.New(w.cfg)
	require.NoError(t, err)
	snap := w.snapshot()
	snap.Queued = l
	res, err := s.Schedule(context.Background(), snap, t0)
	require.NoError(t, err)
	require.Len(t, res.Scheduled, 1)
	assert.NotEqual(t, "bad", res.Scheduled[0].Job.ID)
	bad := groupsOf(res, scheduler.ReasonInvalid)
	require.Len(t, bad, 1)
	assert.Contains(t, bad[0].Reason.Message, `requests.cpu "-100"`)
}

// TestStoreReadErrorFailsTheCycle: an error reading the store fails
// Schedule with that error; nothing is decided.
func TestStoreReadErrorFailsTheCycle(t *testing.T) {
	for _, strategy := range []scheduler.Strategy{scheduler.ProgressiveFilling, scheduler.Lottery} {
		for _, open := range []bool{false, true} {
			w := newWorld(t)
			if strategy == scheduler.Lottery {
				w.lottery(time.Minute, false)
			}
			w.addNodes(1, "4")
			w.addQueue("A", 1)
			l := newListQueued(w.cfg)
			l.addJob(w.job("A", "1"))
			broken := errors.New("disk on fire")
			if open {
				l.openErr = broken
			} else {
				l.readErr = broken
			}
			s, err := scheduler.New(w.cfg)
			require.NoError(t, err)
			snap := w.snapshot()
			snap.Queued = l
			res, err := s.Schedule(context.Background(), snap, t0)
			assert.ErrorIs(t, err, broken, "%s open=%v", strategy, open)
			assert.Contains(t, fmt.Sprint(err), "queue A")
			assert.Nil(t, res)
		}
	}
}

// TestQueuedClassesAreCheckedOncePerCycle: the store's classes must be the
// config's with the same priorities; a mismatch is an error naming the
// class, whether or not any job uses it.
func TestQueuedClassesAreCheckedOncePerCycle(t *testing.T) {
	w := newWorld(t)
	w.addNodes(1, "4")
	w.addQueue("A", 1)
	classes := flotilla.DefaultPriorityClasses()
	classes[1].Priority = 12345
	store, err := queue.New(w.schema, classes, flotilla.ArmadaDefault)
	require.NoError(t, err)
	require.NoError(t, store.Add(w.job("A", "1")))
	s, err := scheduler.New(w.cfg)
	require.NoError(t, err)
	snap := w.snapshot()
	snap.Queued = store
	_, err = s.Schedule(context.Background(), snap, t0)
	var fe *flotilla.FieldError
	require.ErrorAs(t, err, &fe)
	assert.Equal(t, "queued.priorityClasses[1].priority", fe.Field)
	assert.Equal(t, "12345", fe.Value)
	assert.ErrorIs(t, err, flotilla.ErrInconsistent)
}

// countingStore is a *queue.Store behind the Queued seam that counts the
// entries the cycle reads.
type countingStore struct {
	*queue.Store
	read int
}

func (c *countingStore) Open(q string) (queue.EntryReader, error) {
	r, err := c.Store.Open(q)
	return &countingReader{r, &c.read}, err
}

type countingReader struct {
	queue.EntryReader
	n *int
}

func (r *countingReader) Read(dst []*queue.Entry) (int, error) {
	n, err := r.EntryReader.Read(dst)
	*r.n += n
	return n, err
}

// TestQueueWhoseRemainingJobsAllFailedIsFinishedWithoutReading: once every
// job left in a queue has a scheduling key that failed this cycle, the
// queue's remainder is counted per key from the store's key counts, with
// the cached reason, without being read. With ReportEveryUnscheduled every
// job is read and listed, and the groups agree.
func TestQueueWhoseRemainingJobsAllFailedIsFinishedWithoutReading(t *testing.T) {
	for _, every := range []bool{false, true} {
		w := newWorld(t)
		w.cfg.ReportEveryUnscheduled = every
		w.addNodes(1, "4")
		w.addQueue("A", 1)
		w.addQueue("B", 1)
		w.submit("A", 5000, "1")
		w.submit("A", 5000, "2")
		w.submit("B", 1, "1")
		cs := &countingStore{Store: w.store}
		s, err := scheduler.New(w.cfg)
		require.NoError(t, err)
		snap := w.snapshot()
		snap.Queued = cs
		res, err := s.Schedule(context.Background(), snap, t0)
		require.NoError(t, err)
		assert.Len(t, res.Scheduled, 4)
		counts := map[scheduler.ReasonCode]int{}
		for _, g := range res.Unscheduled {
			counts[g.Reason.Code] += g.Count
			assert.LessOrEqual(t, len(g.Examples), min(g.Count, scheduler.UnscheduledExamples))
		}
		assert.Equal(t, 10001-4, counts[scheduler.ReasonNoRoom], "every job reported once")
		assert.Empty(t, res.NotExamined)
		if every {
			assert.Equal(t, 10001, cs.read)
			assert.Len(t, res.UnscheduledJobs, 10001-4)
		} else {
			assert.Less(t, cs.read, 400, "the backlog is not read")
			assert.Nil(t, res.UnscheduledJobs)
		}
	}
}

// shiftingKeys is a *queue.Store behind the Queued seam whose jobs not
// yet read change scheduling key (to key^1) between one SchedulingKeys
// call and the next: a store that changes under the cycle.
type shiftingKeys struct {
	countingStore
	calls int
}

func (s *shiftingKeys) SchedulingKeys(q string, fn func(uint64, int) bool) {
	s.calls++
	s.Store.SchedulingKeys(q, func(k uint64, n int) bool {
		if s.calls%2 == 1 || n <= s.read {
			return fn(k, n)
		}
		return fn(k, s.read) && fn(k^1, n-s.read)
	})
}

// TestEarlyFinishCountsOnlyKeysThatFailed: a queue is finished early only
// with keys that failed this cycle, each with its cached reason; a store
// whose key counts change between calls gets its queue read on, never a
// group without a reason code.
func TestEarlyFinishCountsOnlyKeysThatFailed(t *testing.T) {
	w := newWorld(t)
	w.cfg.ReportEveryUnscheduled = false
	w.addNodes(1, "4")
	w.addQueue("A", 1)
	w.submit("A", 300, "8")
	s, err := scheduler.New(w.cfg)
	require.NoError(t, err)
	snap := w.snapshot()
	snap.Queued = &shiftingKeys{countingStore: countingStore{Store: w.store}}
	res, err := s.Schedule(context.Background(), snap, t0)
	require.NoError(t, err)
	total := 0
	for _, g := range res.Unscheduled {
		assert.Equal(t, scheduler.ReasonNeverFits, g.Reason.Code, "group %x", g.Key)
		assert.Equal(t, queue.SchedulingKey(w.store.JobSet("A", "")[0], 30000), g.Key)
		total += g.Count
	}
	assert.Equal(t, 300, total)
}

// overcounting is a *queue.Store behind the Queued seam whose Stats claim
// jobs beyond any count.
type overcounting struct{ *queue.Store }

func (o overcounting) Stats(q string) queue.Stats {
	st := o.Store.Stats(q)
	st.Jobs = math.MaxInt
	return st
}

// TestQueuedCountsPastTheIntRangeNeverPanic: counts a store misstates, even
// summing past the int range over queues, never panic the cycle (the
// eviction pass summed them to size a buffer: a negative size panicked).
func TestQueuedCountsPastTheIntRangeNeverPanic(t *testing.T) {
	w := newWorld(t)
	w.cfg.ReportEveryUnscheduled = false
	w.addNodes(1, "4")
	w.addQueue("A", 1)
	w.addQueue("B", 1)
	for range 4 {
		w.running = append(w.running, scheduler.Running{Job: w.job("A", "1", func(j *flotilla.Job) { j.PriorityClass = flotilla.ArmadaPreemptible }),
			Node: "node-0", Start: t0})
	}
	w.submit("A", 2, "1")
	w.submit("B", 2, "1")
	s, err := scheduler.New(w.cfg)
	require.NoError(t, err)
	snap := w.snapshot()
	snap.Queued = overcounting{w.store}
	require.NotPanics(t, func() { _, err = s.Schedule(context.Background(), snap, t0) })
}

// TestEarlyFinishIsDeterministic: when a queue is finished early does not
// depend on the order a store walks its scheduling keys (Go map order for
// *queue.Store), so the same snapshot gives the same groups, examples
// included, every time.
func TestEarlyFinishIsDeterministic(t *testing.T) {
	w := newWorld(t)
	w.cfg.ReportEveryUnscheduled = false
	w.addNodes(1, "4")
	w.addQueue("A", 1)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 3000 {
		cpu := fmt.Sprint(5 + rng.IntN(300))
		if i < 5 {
			cpu = "1"
		}
		w.submit("A", 1, cpu)
	}
	var first string
	for run := range 20 {
		res := w.schedule()
		got := fmt.Sprint(res.Scheduled, res.NotExamined)
		for _, g := range res.Unscheduled {
			got += fmt.Sprintf("\n%s %x %s %d", g.Queue, g.Key, g.Reason.Code, g.Count)
			for _, j := range g.Examples {
				got += " " + j.ID
			}
		}
		if run == 0 {
			first = got
			continue
		}
		require.Equal(t, first, got, "run %d", run)
	}
}

// ExampleQueued puts a store behind the seam: a *queue.Store wrapped to
// count what the cycle reads. A queue of 10,000 jobs on a 4-core node is
// read only as far as the cycle can use it (a first batch of 64, and one
// more for the group's examples); the rest is counted from the store's
// per-key counts.
func ExampleQueued() {
	schema := flotilla.MustResourceSchema("cpu")
	cfg := scheduler.DefaultConfig(schema)
	sched, _ := scheduler.New(cfg)
	store, _ := queue.New(schema, cfg.PriorityClasses, cfg.DefaultPriorityClass)
	for i := range 10000 {
		_ = store.Add(&flotilla.Job{ID: fmt.Sprintf("j%05d", i), Queue: "A", Requests: flotilla.Resources{1000}, SubmitTime: t0})
	}
	queued := &countingStore{Store: store}
	res, _ := sched.Schedule(context.Background(), &scheduler.Snapshot{
		Nodes:  []*flotilla.Node{{Name: "n1", Total: flotilla.Resources{4000}}},
		Queues: []*flotilla.Queue{{Name: "A"}},
		Queued: queued,
	}, t0)
	fmt.Println(len(res.Scheduled), "scheduled")
	for _, g := range res.Unscheduled {
		fmt.Printf("%s: %d × %s, e.g. %s\n", g.Queue, g.Count, g.Reason.Code, g.Examples[0].ID)
	}
	fmt.Println("read", queued.read, "of", store.Len())
	// Output:
	// 4 scheduled
	// A: 9996 × no-room, e.g. j00004
	// read 128 of 10000
}

// TestTypedNilStoreIsAnEmptyQueued: a nil *queue.Store in Snapshot.Queued
// (a non-nil interface) reads as a store with no jobs, like a nil Queued.
func TestTypedNilStoreIsAnEmptyQueued(t *testing.T) {
	w := newWorld(t)
	w.addNodes(1, "4")
	w.addQueue("A", 1)
	w.run("A", "1", "node-0", func(*flotilla.Job) {})
	s, err := scheduler.New(w.cfg)
	require.NoError(t, err)
	snap := w.snapshot()
	var none *queue.Store
	snap.Queued = none
	res, err := s.Schedule(context.Background(), snap, t0)
	require.NoError(t, err)
	assert.Empty(t, res.Scheduled)
	assert.Empty(t, res.Unscheduled)
	assert.Equal(t, 1, res.Queues[0].Running)
	assert.Equal(t, 0, res.Queues[0].Queued)
}

// TestScheduledIsReservedForWhatCanFit: Result.Scheduled is sized once from
// the backlog's demand against free capacity and the rate limits, not grown
// job by job: a backlog of 1,000 one-core jobs on 17 free cores reserves
// room for about 17 placements, and a rate limit of 5 for about 5.
func TestScheduledIsReservedForWhatCanFit(t *testing.T) {
	for _, burst := range []int{0, 5} {
		w := newWorld(t)
		w.addNodes(1, "17")
		w.addQueue("A", 1)
		w.submit("A", 1000, "1")
		if burst > 0 {
			w.cfg.MaximumSchedulingRate, w.cfg.MaximumSchedulingBurst = 1, burst
		}
		res := w.schedule()
		want := 17
		if burst > 0 {
			want = burst
		}
		require.Len(t, res.Scheduled, want)
		assert.LessOrEqual(t, cap(res.Scheduled), want+1, "burst %d", burst)
	}
}

// A nil Snapshot.Queued ("nil means none") is an empty store in every
// respect: each queue's running allocation still counts toward its demand,
// so Demand and AdjustedFairShare (and so which queues are evictable) are
// the same as with an empty store.
func TestNilQueuedCountsRunningDemandLikeAnEmptyStore(t *testing.T) {
	w := newWorld(t)
	w.addNodes(1, "4")
	w.addQueue("A", 1)
	w.addQueue("B", 1)
	w.run("A", "3", "node-0", nonPreemptible)
	w.run("B", "1", "node-0", nonPreemptible)
	s, err := scheduler.New(w.cfg)
	require.NoError(t, err)
	withStore, err := s.Schedule(context.Background(), w.snapshot(), t0)
	require.NoError(t, err)
	snap := w.snapshot()
	snap.Queued = nil
	withNil, err := s.Schedule(context.Background(), snap, t0)
	require.NoError(t, err)
	for i := range withStore.Queues {
		assert.InDelta(t, withStore.Queues[i].Demand, withNil.Queues[i].Demand, 1e-12, "queue %s demand", withStore.Queues[i].Name)
		assert.InDelta(t, withStore.Queues[i].AdjustedFairShare, withNil.Queues[i].AdjustedFairShare, 1e-12, "queue %s adjusted", withStore.Queues[i].Name)
	}
}

// A queued job whose priority class the Config does not know (the store
// was built with another class list) is never scheduled, as a running job
// with an unknown class is rejected; it is not placed silently as the
// first class.
func TestStoreOrderingByAClassTheConfigLacksIsRefused(t *testing.T) {
	w := newWorld(t)
	w.addNodes(1, "4")
	w.addQueue("A", 1)
	classes := append(flotilla.DefaultPriorityClasses(), flotilla.PriorityClass{Name: "other", Priority: 5, Preemptible: true})
	store, err := queue.New(w.schema, classes, flotilla.ArmadaDefault)
	require.NoError(t, err)
	require.NoError(t, store.Add(w.job("A", "1", func(j *flotilla.Job) { j.PriorityClass = "other" })))
	s, err := scheduler.New(w.cfg)
	require.NoError(t, err)
	snap := w.snapshot()
	snap.Queued = store
	_, err = s.Schedule(context.Background(), snap, t0)
	require.ErrorIs(t, err, flotilla.ErrUnknownName, "a store ordering by a class the config lacks is refused")
	assert.Contains(t, err.Error(), `"other"`)
}

// TestQueuedJobHandedOutTwiceIsPlacedOnce: a store must read a queue in
// scheduling order (queue.Less, a strict order), so an entry that is not
// after the one before it (the same job again, or out of order) is
// reported with ReasonInvalid and never placed: one job is never bound
// twice, whatever the store hands out.
func TestQueuedJobHandedOutTwiceIsPlacedOnce(t *testing.T) {
	for _, strategy := range []scheduler.Strategy{scheduler.ProgressiveFilling, scheduler.Lottery} {
		for _, every := range []bool{false, true} {
			t.Run(fmt.Sprintf("%v/every=%v", strategy, every), func(t *testing.T) {
				w := newWorld(t)
				if strategy == scheduler.Lottery {
					w.lottery(time.Minute, false)
				}
				w.cfg.ReportEveryUnscheduled = every
				w.addNodes(1, "4")
				w.addQueue("A", 1)
				l := newListQueued(w.cfg)
				e := l.addJob(w.job("A", "1"))
				l.add("A", e)
				l.addJob(w.job("A", "1"))
				s, err := scheduler.New(w.cfg)
				require.NoError(t, err)
				snap := w.snapshot()
				snap.Queued = l
				res, err := s.Schedule(context.Background(), snap, t0)
				require.NoError(t, err)
				ids := map[string]int{}
				for _, a := range res.Scheduled {
					ids[a.Job.ID]++
				}
				assert.Equal(t, map[string]int{"A-1": 1, "A-2": 1}, ids)
				bad := groupsOf(res, scheduler.ReasonInvalid)
				require.Len(t, bad, 1)
				assert.Equal(t, 1, bad[0].Count)
				assert.Contains(t, bad[0].Reason.Message, `"A-1"`)
			})
		}
	}
}
