package scheduler_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/queue"
	"github.com/flotilla-sched/flotilla/scheduler"
)

// treeWorld is a cluster of bundle-sized slots (1 GPU, 8 cpu, 64Gi each)
// for queue-tree tests, as QUEUE-TREE.md §11 counts them.
type treeWorld struct {
	t      testing.TB
	cfg    scheduler.Config
	snap   *scheduler.Snapshot
	schema *flotilla.ResourceSchema
	seq    int
	now    time.Time
}

func newTreeWorld(t testing.TB, nodes int) *treeWorld {
	schema := flotilla.MustResourceSchema("cpu", "memory", "nvidia.com/gpu")
	cfg := scheduler.DefaultConfig(schema)
	cfg.ReportEveryUnscheduled = true
	store, err := queue.New(schema, cfg.PriorityClasses, cfg.DefaultPriorityClass)
	require.NoError(t, err)
	w := &treeWorld{t: t, cfg: cfg, schema: schema, snap: &scheduler.Snapshot{Queued: store}, now: t0}
	for i := range nodes {
		w.snap.Nodes = append(w.snap.Nodes, &flotilla.Node{Name: fmt.Sprintf("node-%d", i),
			Total: schema.MustParse(map[string]string{"cpu": "64", "memory": "512Gi", "nvidia.com/gpu": "8"})})
	}
	return w
}

// gpus is n GPUs as a quota vector, the other resources not given.
func (w *treeWorld) gpus(n int) flotilla.Resources {
	r, err := w.schema.ParsePartial("q", map[string]string{"nvidia.com/gpu": fmt.Sprint(n)})
	require.NoError(w.t, err)
	return r
}

// bundles is n bundles as a quota vector, every resource given.
func (w *treeWorld) bundles(n int) flotilla.Resources {
	return w.schema.MustParse(map[string]string{"cpu": fmt.Sprint(8 * n), "memory": fmt.Sprintf("%dGi", 64*n), "nvidia.com/gpu": fmt.Sprint(n)})
}

func (w *treeWorld) group(name, parent string, g, limit flotilla.Resources) *flotilla.QueueGroup {
	grp := &flotilla.QueueGroup{Name: name, Parent: parent, Guaranteed: g, Limit: limit}
	w.snap.Groups = append(w.snap.Groups, grp)
	return grp
}

func (w *treeWorld) queue(name, parent string, factor float64, g, limit flotilla.Resources) *flotilla.Queue {
	q := &flotilla.Queue{Name: name, Parent: parent, PriorityFactor: factor, Guaranteed: g, Limit: limit}
	w.snap.Queues = append(w.snap.Queues, q)
	return q
}

// submit queues n preemptible one-bundle jobs in queue q.
func (w *treeWorld) submit(q string, n int) {
	for range n {
		w.seq++
		j := &flotilla.Job{ID: fmt.Sprintf("%s-%03d", q, w.seq), Queue: q, SubmitTime: w.now,
			PriorityClass: flotilla.ArmadaPreemptible,
			Requests:      w.schema.MustParse(map[string]string{"cpu": "8", "memory": "64Gi", "nvidia.com/gpu": "1"})}
		require.NoError(w.t, w.snap.Queued.(*queue.Store).Add(j))
	}
}

// round runs one cycle and applies it.
func (w *treeWorld) round() *scheduler.Result {
	s, err := scheduler.New(w.cfg)
	require.NoError(w.t, err)
	res, err := s.Schedule(context.Background(), w.snap, w.now)
	require.NoError(w.t, err)
	w.snap.Running = applyResult(w.t, w.snap, res)
	w.snap.Usage = res.Usage
	return res
}

func byName(res *scheduler.Result) map[string][3]float64 {
	m := map[string][3]float64{}
	for _, q := range res.Queues {
		m[q.Name] = [3]float64{q.Share, q.FairShare, q.AdjustedFairShare}
	}
	for _, g := range res.Groups {
		m[g.Name] = [3]float64{g.Share, g.FairShare, g.AdjustedFairShare}
	}
	return m
}

func countPreempted(res *scheduler.Result) map[string]int {
	m := map[string]int{}
	for _, p := range res.Preempted {
		m[p.Job.Queue]++
	}
	return m
}

// worked builds QUEUE-TREE.md §11's tree on 4 nodes of 8 bundles.
func worked(t testing.TB) *treeWorld {
	w := newTreeWorld(t, 4)
	w.group("research", "", w.bundles(16), w.bundles(24))
	w.group("prod", "", w.bundles(8), nil)
	w.queue("vision", "research", 0, w.bundles(8), nil)
	w.queue("nlp", "research", 0.5, w.bundles(4), nil)
	w.queue("serving", "prod", 0, w.bundles(8), w.bundles(12))
	w.queue("adhoc", "", 0, nil, nil)
	return w
}

// The worked example of QUEUE-TREE.md §11, to 3 decimals: round 0 fills
// by guarantees and weights within research's limit; round 1 adhoc
// arrives, nlp gives back 3 (evicted above max(F, A), refilled in the
// tournament's order) and adhoc gets 3; a round with nothing new changes
// nothing.
func TestTreeWorkedExample(t *testing.T) {
	w := worked(t)
	w.submit("vision", 6)
	w.submit("nlp", 20)
	w.submit("serving", 10)
	res := w.round()
	require.Equal(t, map[string]int{"vision": 6, "nlp": 16, "serving": 10}, countByQueue(res.Scheduled))
	require.Empty(t, res.Preempted)
	shares := byName(res)
	for name, want := range map[string][2]float64{
		// fairShare, adjustedFairShare in bundles of 32
		"research": {20, 22}, "prod": {12, 10}, "vision": {10.667, 6}, "nlp": {9.333, 16}, "serving": {12, 10},
	} {
		require.InDelta(t, want[0]/32, shares[name][1], 0.0005, "%s fair share", name)
		require.InDelta(t, want[1]/32, shares[name][2], 0.0005, "%s adjusted fair share", name)
	}

	w.submit("adhoc", 20)
	res = w.round()
	require.Equal(t, map[string]int{"adhoc": 3}, countByQueue(res.Scheduled))
	require.Equal(t, map[string]int{"nlp": 3}, countPreempted(res))
	shares = byName(res)
	for name, want := range map[string][2]float64{
		"vision": {0.319, 0.188}, "nlp": {0.264, 0.406}, "serving": {0.333, 0.313}, "adhoc": {0.083, 0.094},
		"research": {0.583, 0.594}, "prod": {0.333, 0.313},
	} {
		require.InDelta(t, want[0], shares[name][1], 0.0005+1e-6, "%s fair share", name)
		require.InDelta(t, want[1], shares[name][2], 0.0005+1e-6, "%s adjusted fair share", name)
	}
	groups := map[string]scheduler.GroupReport{}
	for _, g := range res.Groups {
		groups[g.Name] = g
	}
	require.Equal(t, 19, groups["research"].Running)
	require.Equal(t, 10, groups["prod"].Running)
	require.Equal(t, 4, groups["research"].Queued) // nlp's 4 never placed; preempted jobs leave the model
	require.InDelta(t, 19.0/32, groups["research"].Share, 1e-12)

	res = w.round()
	require.Empty(t, res.Scheduled)
	require.Empty(t, res.Preempted)
}

func reasonsOf(res *scheduler.Result) map[string]string {
	m := map[string]string{}
	for _, u := range res.UnscheduledJobs {
		m[u.Job.Queue] = u.Reason.String()
	}
	return m
}

// Rule 5: a gang fits only if every node on its queue's path stays within
// its limit; the refusal names the node.
func TestTreeLimitsAreHard(t *testing.T) {
	for _, tc := range []struct {
		name        string
		groupLimit  int
		queueLimit  int
		wantPlaced  int
		wantRefusal string
	}{
		{"queue limit", 0, 5, 5, "limit: nlp"},
		{"group limit", 7, 0, 7, "limit: research"},
		{"tighter of the two", 9, 6, 6, "limit: nlp"},
		{"no limit", 0, 0, 12, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newTreeWorld(t, 4)
			var gl, ql flotilla.Resources
			if tc.groupLimit > 0 {
				gl = w.gpus(tc.groupLimit)
			}
			if tc.queueLimit > 0 {
				ql = w.gpus(tc.queueLimit)
			}
			w.group("research", "", nil, gl)
			w.queue("nlp", "research", 0, nil, ql)
			w.submit("nlp", 12)
			res := w.round()
			require.Equal(t, tc.wantPlaced, len(res.Scheduled))
			if tc.wantRefusal != "" {
				require.Equal(t, tc.wantRefusal, reasonsOf(res)["nlp"])
				for _, u := range res.UnscheduledJobs {
					require.Equal(t, scheduler.ReasonLimit, u.Reason.Code)
				}
			}
		})
	}
}

// Rule 5, lending limits: an idle lender keeps guaranteed − lendingLimit
// free for its own subtree; others may borrow only the rest.
func TestTreeLendingLimitHoldsTheReserve(t *testing.T) {
	w := newTreeWorld(t, 2) // 16 bundles
	lender := w.queue("lender", "", 0, w.gpus(6), nil)
	lender.LendingLimit = w.gpus(2) // keeps 4 back
	w.queue("borrower", "", 0, nil, nil)
	w.submit("borrower", 16)
	res := w.round()
	require.Equal(t, 12, len(res.Scheduled))
	require.Equal(t, "lending limit: lender", reasonsOf(res)["borrower"])
	// The lender's jobs take the kept capacity at once, with no preemption.
	w.submit("lender", 4)
	res = w.round()
	require.Equal(t, map[string]int{"lender": 4}, countByQueue(res.Scheduled))
	require.Empty(t, res.Preempted)
}

// Rule 7: a queue that holds at most its guarantee in every resource never
// loses a job to fair share, however far above its fair share it is.
func TestTreeQueueWithinGuaranteeIsNeverEvicted(t *testing.T) {
	w := newTreeWorld(t, 2) // 16 bundles
	w.queue("a", "", 0, w.gpus(10), nil)
	w.queue("b", "", 0, nil, nil)
	w.submit("a", 10)
	require.Len(t, w.round().Scheduled, 10)
	w.submit("b", 16)
	res := w.round()
	require.Empty(t, res.Preempted)
	require.Equal(t, map[string]int{"b": 6}, countByQueue(res.Scheduled))

	// Without the guarantee, a (10 of 16) is above its fair share of 8 and
	// gives 2 back.
	w = newTreeWorld(t, 2)
	w.queue("a", "", 0, nil, nil)
	w.queue("b", "", 0, nil, nil)
	w.submit("a", 10)
	w.round()
	w.submit("b", 16)
	res = w.round()
	require.Equal(t, map[string]int{"a": 2}, countPreempted(res))
}

// Rule 6, tier 2: a child that stays within its guarantee in every
// resource with its next gang goes before a sibling with a smaller key. b's
// guarantee names GPUs only, so its jobs (which need cpu and memory too)
// are never within it, although its key starts far below a's.
func TestTreeWithinGuaranteeGoesFirst(t *testing.T) {
	w := newTreeWorld(t, 1) // 8 bundles
	w.queue("a", "", 0, w.bundles(2), nil)
	w.queue("b", "", 0, w.gpus(6), nil)
	w.submit("a", 8)
	w.submit("b", 8)
	res := w.round()
	var order []string
	for _, a := range res.Scheduled {
		order = append(order, a.Job.Queue)
	}
	// By key alone: b, b, b, b, a, b, a, b.
	require.Equal(t, []string{"a", "a", "b", "b", "b", "b", "b", "b"}, order)
}

// Usage memory (rule 9): a queue that used less than its fair share lately
// gets a larger weight above its guarantee; the decayed usage is reported
// and carried to the next cycle.
func TestTreeUsageMemoryFavoursTheLightUser(t *testing.T) {
	w := newTreeWorld(t, 1) // 8 bundles
	w.cfg.UsageHalfLife = time.Hour
	w.queue("heavy", "", 0, nil, nil)
	w.queue("light", "", 0, nil, nil)
	w.snap.Usage = scheduler.UsageState{Usage: map[string]float64{"heavy": 1, "light": 0}, Time: t0}
	w.submit("heavy", 8)
	w.submit("light", 8)
	res := w.round()
	counts := countByQueue(res.Scheduled)
	require.Greater(t, counts["light"], counts["heavy"], "the light user goes first")
	require.Equal(t, 8, counts["light"]+counts["heavy"])
	require.Equal(t, 1.0, res.Usage.Usage["heavy"], "no time passed: no decay")
	require.Equal(t, t0, res.Usage.Time)
	// One half-life later each usage is half way to its share at the start
	// of the cycle.
	w.now = t0.Add(time.Hour)
	res = w.round()
	for _, q := range res.Queues {
		share := float64(counts[q.Name]) / 8
		want := map[string]float64{"heavy": 1, "light": 0}[q.Name]/2 + share/2
		require.InDelta(t, want, res.Usage.Usage[q.Name], 1e-12, q.Name)
		require.InDelta(t, want, q.Usage, 1e-12, q.Name)
	}
}

// The tree is validated with every problem at once, naming the field and
// the value, and a bad tree leaves nothing decided.
func TestTreeValidationThroughSchedule(t *testing.T) {
	w := newTreeWorld(t, 1)
	w.group("g", "nowhere", nil, nil)
	w.queue("q", "g", 0, w.gpus(4), w.gpus(2))
	w.snap.Groups = append(w.snap.Groups, nil)
	s, err := scheduler.New(w.cfg)
	require.NoError(t, err)
	res, err := s.Schedule(context.Background(), w.snap, t0)
	require.Nil(t, res)
	var fe *flotilla.FieldError
	require.True(t, errors.As(err, &fe))
	require.ErrorIs(t, err, flotilla.ErrRequired)
	w.snap.Groups = w.snap.Groups[:1]
	_, err = s.Schedule(context.Background(), w.snap, t0)
	require.ErrorIs(t, err, flotilla.ErrUnknownName)
	require.ErrorIs(t, err, flotilla.ErrInconsistent)
	require.ErrorContains(t, err, "groups[0].parent")
	require.ErrorContains(t, err, "queues[0].limit.nvidia.com/gpu")

	w = newTreeWorld(t, 1)
	w.cfg.UsageHalfLife = time.Hour
	w.queue("q", "", 0, nil, nil)
	w.snap.Usage.Usage = map[string]float64{"q": math.NaN()}
	s, err = scheduler.New(w.cfg)
	require.NoError(t, err)
	_, err = s.Schedule(context.Background(), w.snap, t0)
	require.ErrorIs(t, err, flotilla.ErrOutOfRange)
	require.ErrorContains(t, err, "usage.usage.q")
}

func TestConfigUsageValidation(t *testing.T) {
	schema := flotilla.MustResourceSchema("cpu")
	for _, tc := range []struct {
		name   string
		mod    func(*scheduler.Config)
		field  string
		target error
	}{
		{"negative half-life", func(c *scheduler.Config) { c.UsageHalfLife = -time.Second }, "usageHalfLife", flotilla.ErrOutOfRange},
		{"negative weight", func(c *scheduler.Config) { c.UsageHalfLife, c.UsageWeight = time.Hour, -1 }, "usageWeight", flotilla.ErrOutOfRange},
		{"weight without half-life", func(c *scheduler.Config) { c.UsageWeight = 2 }, "usageWeight", flotilla.ErrInconsistent},
		{"infinite weight", func(c *scheduler.Config) { c.UsageHalfLife, c.UsageWeight = time.Hour, math.Inf(1) }, "usageWeight", flotilla.ErrOutOfRange},
		{"lottery", func(c *scheduler.Config) {
			c.Strategy, c.PriorityHalftime, c.UsageHalfLife = scheduler.Lottery, time.Hour, time.Hour
		}, "usageHalfLife", flotilla.ErrInconsistent},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := scheduler.DefaultConfig(schema)
			tc.mod(&cfg)
			err := cfg.Validate()
			require.ErrorIs(t, err, tc.target)
			var fe *flotilla.FieldError
			require.True(t, errors.As(err, &fe))
			require.Equal(t, tc.field, fe.Field)
		})
	}
}
