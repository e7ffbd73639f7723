package server

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/backend"
	"github.com/flotilla-sched/flotilla/events"
	"github.com/flotilla-sched/flotilla/internal/fakeclock"
	"github.com/flotilla-sched/flotilla/priority"
	"github.com/flotilla-sched/flotilla/scheduler"
)

// closedForm is the decayed resource × seconds at `at` of a constant rate
// used from `from` to `to`: rate·h/ln2·(0.5^((at−to)/h) − 0.5^((at−from)/h)).
func closedForm(rate float64, from, to, at time.Time, h time.Duration) float64 {
	hs := h.Seconds()
	return rate * hs / math.Ln2 * (math.Exp2(-at.Sub(to).Seconds()/hs) - math.Exp2(-at.Sub(from).Seconds()/hs))
}

func requireClose(t *testing.T, want, got float64, msg string) {
	t.Helper()
	require.InDelta(t, want, got, 1e-9*math.Max(1, math.Abs(want)), "%s: want %g, got %g", msg, want, got)
}

func TestUsageUnderConstantRateMatchesTheClosedFormHoweverTheIntervalIsCut(t *testing.T) {
	cases := []struct {
		name     string
		halfLife time.Duration
		steps    []time.Duration
	}{
		{"one step of one half-life", time.Hour, []time.Duration{time.Hour}},
		{"sixty one-minute steps", time.Hour, repeat(time.Minute, 60)},
		{"uneven steps over three half-lives", 10 * time.Minute, []time.Duration{time.Second, 7 * time.Minute, 13 * time.Minute, 10*time.Minute - time.Second}},
		{"far past the half-life: near rate·h/ln2", time.Minute, []time.Duration{time.Hour, time.Hour}},
		{"a step back in time accrues nothing", time.Hour, []time.Duration{30 * time.Minute, -10 * time.Minute, 10 * time.Minute}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := newAccrual(3, testNow, true)
			a.charge(flotilla.Resources{2000, 0, 1}, 1, testNow, c.halfLife)
			now, latest := testNow, testNow
			for _, d := range c.steps {
				now = now.Add(d)
				a.advance(now, c.halfLife)
				if now.After(latest) {
					latest = now
				}
			}
			requireClose(t, closedForm(2000, testNow, latest, latest, c.halfLife), a.val[0], "cpu")
			require.Zero(t, a.val[1])
			requireClose(t, closedForm(1, testNow, latest, latest, c.halfLife), a.val[2], "gpu")
			require.Equal(t, a.val, a.pending, "pending accrues like the value until it is flushed")
		})
	}
}

func repeat(d time.Duration, n int) []time.Duration {
	out := make([]time.Duration, n)
	for i := range out {
		out[i] = d
	}
	return out
}

// usageWorld is a world with a one-hour usage half-life, queue A and a
// cluster c1 of two 4-cpu nodes.
func usageWorld(t *testing.T, opts ...func(*Config)) *world {
	w := newWorld(t, append([]func(*Config){func(c *Config) { c.UsageHalfLife = time.Hour }}, opts...)...)
	w.queue("A")
	w.report(Report{Cluster: "c1", Nodes: nodesOf("c1", 2, 4)})
	return w
}

func TestQueueUsageAccruesOnlyWhileAJobHoldsALease(t *testing.T) {
	// Each case leases one 1-cpu job at t0, runs it, and ends its lease
	// 10 minutes later in its own way; the usage an hour after that is
	// the closed form of those 10 minutes, whatever the ending.
	cases := []struct {
		name string
		end  func(w *world, id string, ls []Lease)
	}{
		{"succeeded", func(w *world, _ string, ls []Lease) { w.report(Report{Cluster: "c1", Jobs: held(PhaseSucceeded, ls)}) }},
		{"failed", func(w *world, _ string, ls []Lease) {
			jr := held(PhaseFailed, ls)
			jr[0].ExitCode = 1
			w.report(Report{Cluster: "c1", Jobs: jr})
		}},
		{"cancelled and stopped", func(w *world, id string, ls []Lease) {
			_, err := w.srv.Cancel(w.ctx, id)
			require.NoError(w.t, err)
			w.report(Report{Cluster: "c1", Jobs: held(PhaseStopped, ls)})
		}},
		{"returned, queued again with no room", func(w *world, _ string, ls []Lease) {
			w.report(Report{Cluster: "c1", Nodes: []flotilla.Node{}, Jobs: held(PhaseReturned, ls)})
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := usageWorld(t)
			// Queued for an hour with no room: nothing accrues.
			w.report(Report{Cluster: "c1", Nodes: []flotilla.Node{}})
			ids := w.submit("A", "s1", cpuJobs(1, "1"))
			w.cycle()
			w.clock.Advance(time.Hour)
			w.report(Report{Cluster: "c1"})
			w.cycle()
			require.Equal(t, []float64{0, 0, 0}, w.srv.QueueUsage("A"), "queued jobs use nothing")

			w.report(Report{Cluster: "c1", Nodes: nodesOf("c1", 2, 4)})
			require.Equal(t, 1, w.cycle().Leased)
			t0 := w.clock.Now()
			ls := w.report(Report{Cluster: "c1"}).Leases
			w.clock.Advance(4 * time.Minute)
			w.report(Report{Cluster: "c1", Jobs: held(PhaseRunning, ls)})
			w.clock.Advance(6 * time.Minute)
			t1 := w.clock.Now()
			c.end(w, ids[0], ls)
			require.NotEqual(t, events.LeasedState, w.state(ids[0]))
			require.NotEqual(t, events.RunningState, w.state(ids[0]))
			w.clock.Advance(time.Hour)
			w.cycle()
			at := w.clock.Now()
			u := w.srv.QueueUsage("A")
			requireClose(t, closedForm(1000, t0, t1, at, time.Hour), u[0], "cpu")
			info, err := w.srv.Queue(w.ctx, "A")
			require.NoError(t, err)
			require.Equal(t, u, info.Usage)
		})
	}
}

func TestQueueUsageStopsWhenALeaseExpires(t *testing.T) {
	w := usageWorld(t)
	w.submit("A", "s1", cpuJobs(2, "1"))
	w.cycle()
	t0 := w.clock.Now()
	w.report(Report{Cluster: "c1"})
	// c1 goes silent; the leases expire at the first cycle a lease
	// timeout later.
	w.clock.Advance(DefaultLeaseTimeout)
	require.Equal(t, 2, w.cycle().Expired)
	t1 := w.clock.Now()
	w.clock.Advance(2 * time.Hour)
	w.cycle()
	requireClose(t, closedForm(2000, t0, t1, w.clock.Now(), time.Hour), w.srv.QueueUsage("A")[0], "cpu")
}

// usageCounter counts a backend's PutUsage calls.
type usageCounter struct {
	backend.Backend
	puts int
}

func (b *usageCounter) PutUsage(ctx context.Context, rs []backend.UsageRecord) error {
	b.puts++
	return b.Backend.PutUsage(ctx, rs)
}

func TestUsageIsStoredOncePerCycleAndARestartContinuesTheHistory(t *testing.T) {
	// Two services live the same timeline; one restarts twice, once
	// while jobs hold leases. Their usage agrees at every cycle.
	var counted *usageCounter
	count := func(c *Config) {
		counted = &usageCounter{Backend: c.Backend}
		c.Backend = counted
	}
	a, b := usageWorld(t), usageWorld(t, count)
	both := func(f func(w *world)) { f(a); f(b) }
	both(func(w *world) { w.submit("A", "s1", cpuJobs(3, "1"), cpuJobs(2, "2")) })
	var leases []Lease
	for i := range 12 {
		both(func(w *world) { w.cycle() })
		require.Equal(t, i+1, counted.puts, "one PutUsage per cycle")
		if i == 0 {
			leases = a.report(Report{Cluster: "c1"}).Leases
			require.Len(t, leases, 5)
			b.report(Report{Cluster: "c1"})
		}
		both(func(w *world) {
			w.clock.Advance(7 * time.Minute)
			w.report(Report{Cluster: "c1", Jobs: held(PhaseRunning, leases)})
		})
		if i == 5 {
			both(func(w *world) { w.report(Report{Cluster: "c1", Jobs: held(PhaseSucceeded, leases[:2])}) })
			leases = leases[2:]
		}
		if i == 3 || i == 7 {
			b.restart()
		}
		ua, ub := a.srv.QueueUsage("A"), b.srv.QueueUsage("A")
		require.NotZero(t, ua[0])
		requireClose(t, ua[0], ub[0], fmt.Sprintf("cpu after cycle %d", i))
	}
	rs, err := b.be.ListUsage(b.ctx)
	require.NoError(t, err)
	require.Len(t, rs, 1)
	require.Equal(t, "queue/A", rs[0].Key)
}

// lotteryWorld is a world with the lottery strategy over queues A and B
// and one cluster of four 4-cpu nodes.
func lotteryWorld(t *testing.T) *world {
	w := newWorld(t, func(c *Config) {
		c.Scheduler.Strategy = scheduler.Lottery
		c.Scheduler.PriorityHalftime = 20 * time.Minute
		c.Seed = 7
		c.LeaseTimeout = time.Hour
	})
	w.queue("A")
	w.queue("B")
	w.report(Report{Cluster: "c1", Nodes: nodesOf("c1", 4, 4)})
	return w
}

func TestLotteryQueuePrioritiesSurviveARestart(t *testing.T) {
	// A runs a heavy load first, which raises its queue priority; then
	// both queues compete. A service restarted between the two phases
	// (with the seed of the cycle it resumes at) leases exactly as one
	// that ran through.
	run := func(restartAt int) [][]string {
		w := lotteryWorld(t)
		w.submit("A", "s1", cpuJobs(16, "1"))
		var held0 []Lease
		var out [][]string
		for i := range 10 {
			if i == restartAt {
				w.restart(func(c *Config) { c.Seed += uint64(i) })
				// The executor reports to the new process, which then
				// schedules on its cluster.
				w.report(Report{Cluster: "c1", Jobs: held(PhaseRunning, held0)})
			}
			if i == 3 {
				// A's first wave ends; a backlog for both queues arrives.
				w.report(Report{Cluster: "c1", Jobs: held(PhaseSucceeded, held0)})
				held0 = nil
				w.submit("A", "s2", cpuJobs(40, "1"))
				w.submit("B", "s2", cpuJobs(40, "1"))
			}
			rep := w.cycle()
			var leased []string
			for _, a := range rep.Result.Scheduled {
				leased = append(leased, a.Job.ID)
			}
			out = append(out, leased)
			r := w.report(Report{Cluster: "c1", Jobs: held(PhaseRunning, held0)})
			held0 = append(held0, r.Leases...)
			w.report(Report{Cluster: "c1", Jobs: held(PhaseRunning, held0)})
			w.clock.Advance(5 * time.Minute)
			if i >= 3 && len(held0) > 0 {
				// Jobs end a few at a time, oldest first.
				n := min(3, len(held0))
				w.report(Report{Cluster: "c1", Jobs: held(PhaseSucceeded, held0[:n])})
				held0 = held0[n:]
			}
		}
		return out
	}
	through := run(-1)
	require.Equal(t, through, run(4))
	require.Equal(t, through, run(6))
}

func TestConfigRejectsBadUsageSettings(t *testing.T) {
	schema := worldSchema()
	base := Config{Scheduler: scheduler.DefaultConfig(schema), Backend: nil, Clock: fakeclock.New(time.Time{})}
	cases := []struct {
		name string
		set  func(*Config)
		want []problem
	}{
		{"negative half-life", func(c *Config) { c.UsageHalfLife = -time.Second },
			[]problem{{"usageHalfLife", "-1s", flotilla.ErrNegative}}},
		{"flux without a tree", func(c *Config) { c.Flux = &FluxConfig{} },
			[]problem{{"flux.tree", "<nil>", flotilla.ErrRequired}}},
		{"flux weights and recompute period", func(c *Config) {
			c.Flux = &FluxConfig{Tree: testTree(t), UsageWeights: map[string]float64{"cpu": -1, "tpu": 1}, RecomputeEvery: -2,
				Banks: map[string]string{"A": ""}}
		}, []problem{
			{"flux.usageWeights.cpu", "-1", flotilla.ErrOutOfRange},
			{"flux.usageWeights.tpu", "tpu", flotilla.ErrUnknownResource},
			{"flux.recomputeEvery", "-2", flotilla.ErrNegative},
			{"flux.banks.A", "", flotilla.ErrRequired},
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := base
			cfg.Backend = nil
			c.set(&cfg)
			err := cfg.Validate()
			want := append([]problem{{"backend", "<nil>", flotilla.ErrRequired}}, c.want...)
			requireProblems(t, err, want...)
		})
	}
}

// testTree is a flux tree with banks A and B and users alice and bob in
// both, one share each.
func testTree(t testing.TB) *priority.BankTree {
	tree, err := priority.NewBankTree(time.Hour, testNow)
	require.NoError(t, err)
	for _, b := range []string{"A", "B"} {
		require.NoError(t, tree.AddBank(b, "", 1, 0))
		for _, u := range []string{"alice", "bob"} {
			require.NoError(t, tree.AddAssociation(u, b, 1))
		}
	}
	return tree
}

func TestUsageOfOverlappingLeasesEqualsTheSumOfEachLeasesClosedForm(t *testing.T) {
	// Random leases start and end in time order, with reads (advances) in
	// between; the accrual equals the naive sum over leases of each
	// lease's decayed integral.
	runProperty(t, "accrual = Σ closed forms", 300, func(seed int64) string {
		rng := rand.New(rand.NewPCG(uint64(seed), 9))
		h := time.Duration(1+rng.IntN(120)) * time.Minute
		type ev struct {
			at   time.Time
			req  int64
			sign int64 // 0: a read
		}
		var evs []ev
		type lease struct {
			from, to time.Time
			req      int64
		}
		var leases []lease
		for range rng.IntN(9) {
			from := testNow.Add(time.Duration(rng.IntN(3*3600)) * time.Second)
			to := from.Add(time.Duration(rng.IntN(2*3600)) * time.Second)
			req := int64(rng.IntN(4001))
			leases = append(leases, lease{from, to, req})
			evs = append(evs, ev{from, req, 1}, ev{to, req, -1})
		}
		for range rng.IntN(6) {
			evs = append(evs, ev{at: testNow.Add(time.Duration(rng.IntN(5*3600)) * time.Second)})
		}
		end := testNow.Add(5*time.Hour + time.Duration(rng.IntN(3600))*time.Second)
		want := func(at time.Time) float64 {
			sum := 0.0
			for _, l := range leases {
				sum += closedForm(float64(l.req), l.from, l.to, at, h)
			}
			return sum
		}
		slices.SortStableFunc(evs, func(a, b ev) int { return a.at.Compare(b.at) })
		a := newAccrual(1, testNow, false)
		for _, e := range evs {
			if e.sign == 0 {
				a.advance(e.at, h)
				continue
			}
			a.charge(flotilla.Resources{e.req}, e.sign, e.at, h)
		}
		a.advance(end, h)
		w := want(end)
		if math.Abs(a.val[0]-w) > 1e-9*math.Max(1, w) {
			return fmt.Sprintf("half-life %s, %d leases: accrual %g, closed forms %g", h, len(leases), a.val[0], w)
		}
		if a.rate[0] != 0 {
			return fmt.Sprintf("rate %d after every lease ended", a.rate[0])
		}
		return ""
	})
}

// glitchy applies its next write after arm but reports its outcome
// unknown, as a database whose connection drops during the commit.
type glitchy struct {
	backend.Backend
	armed bool
}

func (b *glitchy) Commit(ctx context.Context, w *backend.Write) ([]events.Event, error) {
	out, err := b.Backend.Commit(ctx, w)
	if err == nil && b.armed {
		b.armed = false
		return nil, fmt.Errorf("connection lost: %w", backend.ErrOutcomeUnknown)
	}
	return out, err
}

func TestUsageHistoryInMemoryOutlivesAReloadAndChargesEachLeaseOnce(t *testing.T) {
	// A write whose outcome is unknown makes the service reload its state
	// from the backend. The usage accrued since the last stored cycle
	// (a lease that ended meanwhile) is kept, and the leases still live
	// are not charged twice.
	var g *glitchy
	a := usageWorld(t)
	b := usageWorld(t, func(c *Config) { g = &glitchy{Backend: c.Backend}; c.Backend = g })
	var ls []Lease
	for _, w := range []*world{a, b} {
		w.submit("A", "s1", cpuJobs(2, "1"))
		w.cycle()
		ls = w.report(Report{Cluster: "c1"}).Leases
		w.clock.Advance(10 * time.Minute)
		w.report(Report{Cluster: "c1", Jobs: held(PhaseRunning, ls)})
		w.clock.Advance(10 * time.Minute)
		w.report(Report{Cluster: "c1", Jobs: held(PhaseSucceeded, ls[:1])})
		w.clock.Advance(10 * time.Minute)
	}
	a.submit("A", "s2", cpuJobs(1, "1"))
	g.armed = true
	_, err := b.srv.Submit(b.ctx, &SubmitRequest{Queue: "A", JobSet: "s2", Jobs: []JobTemplate{cpuJobs(1, "1")}})
	require.ErrorIs(t, err, backend.ErrOutcomeUnknown)
	for _, w := range []*world{a, b} {
		w.clock.Advance(10 * time.Minute)
		w.report(Report{Cluster: "c1", Jobs: held(PhaseRunning, ls[1:])})
		w.cycle()
		w.clock.Advance(20 * time.Minute)
	}
	requireClose(t, a.srv.QueueUsage("A")[0], b.srv.QueueUsage("A")[0], "cpu")
}

// failingUsage refuses every PutUsage.
type failingUsage struct{ backend.Backend }

func (failingUsage) PutUsage(context.Context, []backend.UsageRecord) error {
	return errors.New("usage table unavailable")
}

func TestAUsageStoreThatFailsIsReportedAndTheCycleStillLeases(t *testing.T) {
	w := usageWorld(t, func(c *Config) { c.Backend = failingUsage{c.Backend} })
	w.submit("A", "s1", cpuJobs(2, "1"))
	rep, err := w.srv.Cycle(w.ctx)
	require.NoError(t, err)
	require.Equal(t, 2, rep.Leased)
	require.ErrorContains(t, rep.UsageErr, "usage table unavailable")
}

// badRecords adds records the service cannot use to what ListUsage
// returns.
type badRecords struct{ backend.Backend }

func (b badRecords) ListUsage(ctx context.Context) ([]backend.UsageRecord, error) {
	rs, err := b.Backend.ListUsage(ctx)
	return append(rs,
		backend.UsageRecord{Key: UsageKeyLottery + "A", Value: []float64{math.NaN(), 0, 0}, At: testNow},
		backend.UsageRecord{Key: UsageKeyQueue + "A", Value: []float64{-1, 0, 0}, At: testNow},
		backend.UsageRecord{Key: UsageKeyQueue + "B", Value: []float64{1, 0}, At: testNow},
		backend.UsageRecord{Key: "other/A", Value: []float64{1, 0, 0}, At: testNow},
	), err
}

func TestUsageRecordsTheServiceCannotUseAreIgnoredAtLoad(t *testing.T) {
	w := lotteryWorld(t)
	w.restart(func(c *Config) { c.Backend = badRecords{c.Backend} })
	w.report(Report{Cluster: "c1"})
	w.submit("A", "s1", cpuJobs(2, "1"))
	require.Equal(t, 2, w.cycle().Leased)
	require.Equal(t, []float64{0, 0, 0}, w.srv.QueueUsage("A"))
	require.Equal(t, []float64{0, 0, 0}, w.srv.QueueUsage("B"))
}

func TestQueueAndAssociationUsageEqualTheLeaseIntervalsOfTheEventLogs(t *testing.T) {
	// Random interleavings of submissions, cancellations, cycles, clock
	// advances, executor reports (jobs start, succeed, fail, are given
	// back or stopped) and silences (leases expire): each queue's usage,
	// and each flux association's, is the sum, over the lease intervals
	// its event logs show (leased until the event that ends the lease, or
	// until now), of each interval's decayed integral.
	runProperty(t, "usage = Σ lease intervals of the logs", 100, func(seed int64) string {
		rng := rand.New(rand.NewPCG(uint64(seed), 11))
		w := newWorld(t, func(c *Config) {
			c.UsageHalfLife = 20 * time.Minute
			tree, err := priority.NewBankTree(20*time.Minute, testNow)
			require.NoError(t, err)
			for _, b := range []string{"A", "B"} {
				require.NoError(t, tree.AddBank(b, "", 1, 0))
				for _, u := range []string{"alice", "bob"} {
					require.NoError(t, tree.AddAssociation(u, b, 1))
				}
			}
			c.Flux = &FluxConfig{Tree: tree}
		})
		for _, q := range []string{"A", "B"} {
			w.queue(q)
		}
		w.report(Report{Cluster: "c1", Nodes: nodesOf("c1", 2, 4)})
		cpu, user := map[string]int64{}, map[string]string{}
		var ids []string
		held := map[string]*JobReport{}
		for range 10 + rng.IntN(40) {
			switch op := rng.IntN(10); {
			case op < 2:
				q, n, c := []string{"A", "B"}[rng.IntN(2)], 1+rng.IntN(3), 1+rng.IntN(2)
				u := []string{"alice", "bob"}[rng.IntN(2)]
				got, err := w.srv.Submit(w.ctx, &SubmitRequest{Queue: q, JobSet: "s", Principal: u, Jobs: []JobTemplate{cpuJobs(n, strconv.Itoa(c))}})
				require.NoError(t, err)
				for _, id := range got {
					cpu[id], user[id] = int64(c)*1000, u
					ids = append(ids, id)
				}
			case op < 3 && len(ids) > 0:
				_, err := w.srv.Cancel(w.ctx, ids[rng.IntN(len(ids))])
				require.NoError(t, err)
			case op < 5:
				w.cycle()
			case op < 7:
				w.clock.Advance(time.Duration(1+rng.IntN(600)) * time.Second)
			default:
				var r Report
				r.Cluster = "c1"
				for _, id := range slices.Sorted(maps.Keys(held)) {
					jr := held[id]
					switch rng.IntN(6) {
					case 0:
						jr.Phase = PhaseRunning
					case 1:
						jr.Phase, jr.ExitCode = PhaseSucceeded, 0
					case 2:
						jr.Phase, jr.ExitCode = PhaseFailed, 1
					case 3:
						jr.Phase = PhaseReturned
					}
					r.Jobs = append(r.Jobs, *jr)
				}
				reply := w.report(r)
				for _, jr := range r.Jobs {
					if jr.Phase == PhaseSucceeded || jr.Phase == PhaseFailed || jr.Phase == PhaseReturned || jr.Phase == PhaseStopped {
						delete(held, jr.Job)
					}
				}
				for _, k := range reply.Kill {
					if jr := held[k.Job]; jr != nil {
						jr.Phase = PhaseStopped
					}
				}
				for _, l := range reply.Leases {
					held[l.Job.ID] = &JobReport{Job: l.Job.ID, Attempt: l.Attempt, Phase: PhasePending}
				}
			}
		}
		now := w.clock.Now()
		for _, q := range []string{"A", "B"} {
			evs, err := w.srv.Events(w.ctx, q, "s", 0, 0)
			require.NoError(t, err)
			open := map[string]time.Time{}
			want, byUser := 0.0, map[string]float64{}
			interval := func(id string, from, to time.Time) {
				v := closedForm(float64(cpu[id]), from, to, now, 20*time.Minute)
				want += v
				byUser[user[id]] += v
			}
			for _, e := range evs {
				switch e.Type {
				case events.Leased:
					open[e.Job] = e.Time
				case events.LeaseExpired, events.LeaseReturned, events.Preempted, events.Succeeded, events.Failed, events.Cancelled:
					if from, ok := open[e.Job]; ok {
						interval(e.Job, from, e.Time)
						delete(open, e.Job)
					}
				}
			}
			for id, from := range open {
				interval(id, from, now)
			}
			if got := w.srv.QueueUsage(q)[0]; math.Abs(got-want) > 1e-9*math.Max(1, want) {
				return fmt.Sprintf("queue %s: usage %g, the logs' lease intervals %g (%d events)", q, got, want, len(evs))
			}
			for _, u := range []string{"alice", "bob"} {
				got := 0.0
				if a := w.srv.st.usage.flux.assocs[assocKey{u, q}]; a != nil {
					got = a.valueAt(now, 20*time.Minute)[0]
				}
				if math.Abs(got-byUser[u]) > 1e-9*math.Max(1, byUser[u]) {
					return fmt.Sprintf("association %s@%s: usage %g, the logs' lease intervals %g", u, q, got, byUser[u])
				}
			}
		}
		return ""
	})
}

func TestADrainingServiceStillStoresItsUsageEachCycle(t *testing.T) {
	var counted *usageCounter
	w := usageWorld(t, func(c *Config) {
		counted = &usageCounter{Backend: c.Backend}
		c.Backend = counted
	})
	w.submit("A", "s1", cpuJobs(1, "1"))
	w.cycle()
	w.report(Report{Cluster: "c1"})
	w.srv.Drain()
	w.clock.Advance(10 * time.Minute)
	w.cycle()
	require.Equal(t, 2, counted.puts)
	rs, err := w.be.ListUsage(w.ctx)
	require.NoError(t, err)
	require.Equal(t, w.clock.Now(), rs[0].At)
	requireClose(t, closedForm(1000, testNow, w.clock.Now(), w.clock.Now(), time.Hour), rs[0].Value[0], "cpu")
}
