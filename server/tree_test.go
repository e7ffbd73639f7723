package server

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/backend"
	"github.com/flotilla-sched/flotilla/scheduler"
)

// quota is a partial quota vector of the world's schema.
func quota(t testing.TB, m map[string]string) flotilla.Resources {
	t.Helper()
	r, err := worldSchema().ParsePartial("quota", m)
	require.NoError(t, err)
	return r
}

// treeState is every queue and group the service and its backend hold,
// as comparable text.
func treeState(t *testing.T, w *world) string {
	t.Helper()
	var b strings.Builder
	qs, err := w.srv.ListQueues(w.ctx)
	require.NoError(t, err)
	for _, q := range qs {
		fmt.Fprintf(&b, "queue %s parent=%q f=%g g=%v l=%v ll=%v\n", q.Name, q.Parent, q.PriorityFactor, q.Guaranteed, q.Limit, q.LendingLimit)
	}
	gs, err := w.srv.ListGroups(w.ctx)
	require.NoError(t, err)
	for _, g := range gs {
		fmt.Fprintf(&b, "group %s parent=%q f=%g g=%v l=%v ll=%v\n", g.Name, g.Parent, g.PriorityFactor, g.Guaranteed, g.Limit, g.LendingLimit)
	}
	bq, err := w.be.ListQueues(w.ctx)
	require.NoError(t, err)
	bg, err := w.be.ListGroups(w.ctx)
	require.NoError(t, err)
	fmt.Fprintf(&b, "stored: %d queues, %d groups: %+v %+v", len(bq), len(bg), bq, bg)
	return b.String()
}

// treeWorld is a world with the tree research{cpu 16} > (vision{cpu 8},
// sub) and a root queue adhoc.
func treeWorld(t *testing.T) *world {
	w := newWorld(t)
	ctx := w.ctx
	require.NoError(t, w.srv.CreateGroup(ctx, flotilla.QueueGroup{Name: "research", Guaranteed: quota(t, map[string]string{"cpu": "16"})}))
	require.NoError(t, w.srv.CreateGroup(ctx, flotilla.QueueGroup{Name: "sub", Parent: "research"}))
	require.NoError(t, w.srv.CreateQueue(ctx, flotilla.Queue{Name: "vision", Parent: "research", Guaranteed: quota(t, map[string]string{"cpu": "8"})}))
	require.NoError(t, w.srv.CreateQueue(ctx, flotilla.Queue{Name: "adhoc"}))
	return w
}

// Every change that would leave the tree invalid is refused whole, each
// problem naming the node's field and value, and nothing changes in the
// service or its backend.
func TestTreeChangeThatWouldMakeTheTreeInvalidIsRefusedNamingFieldAndValue(t *testing.T) {
	cases := []struct {
		name   string
		change func(t *testing.T, s *Server) error
		want   []problem
	}{
		{"unknown parent", func(t *testing.T, s *Server) error {
			return s.CreateQueue(context.Background(), flotilla.Queue{Name: "nlp", Parent: "nope"})
		}, []problem{{`queue "nlp".parent`, "nope", flotilla.ErrUnknownName}}},
		{"parent that is a queue", func(t *testing.T, s *Server) error {
			return s.CreateGroup(context.Background(), flotilla.QueueGroup{Name: "g", Parent: "adhoc"})
		}, []problem{{`group "g".parent`, "adhoc", flotilla.ErrInconsistent}}},
		{"a cycle of groups", func(t *testing.T, s *Server) error {
			return s.UpdateGroup(context.Background(), flotilla.QueueGroup{Name: "research", Parent: "sub",
				Guaranteed: quota(t, map[string]string{"cpu": "16"})})
		}, []problem{{`group "research".parent`, "sub", flotilla.ErrInconsistent}, {`group "sub".parent`, "research", flotilla.ErrInconsistent}}},
		{"own parent", func(t *testing.T, s *Server) error {
			return s.UpdateGroup(context.Background(), flotilla.QueueGroup{Name: "sub", Parent: "sub"})
		}, []problem{{`group "sub".parent`, "sub", flotilla.ErrInconsistent}}},
		{"limit below the guarantee", func(t *testing.T, s *Server) error {
			return s.UpdateQueue(context.Background(), flotilla.Queue{Name: "vision", Parent: "research",
				Guaranteed: quota(t, map[string]string{"cpu": "8"}), Limit: quota(t, map[string]string{"cpu": "4"})})
		}, []problem{{`queue "vision".limit.cpu`, "4", flotilla.ErrInconsistent}}},
		{"lending limit above the guarantee", func(t *testing.T, s *Server) error {
			return s.UpdateQueue(context.Background(), flotilla.Queue{Name: "adhoc", LendingLimit: quota(t, map[string]string{"nvidia.com/gpu": "2"})})
		}, []problem{{`queue "adhoc".lendingLimit.nvidia.com/gpu`, "2", flotilla.ErrInconsistent}}},
		{"children's guarantees above the group's", func(t *testing.T, s *Server) error {
			return s.CreateQueue(context.Background(), flotilla.Queue{Name: "nlp", Parent: "sub", Guaranteed: quota(t, map[string]string{"cpu": "10"})})
		}, []problem{{`group "research".guaranteed.cpu`, "16", flotilla.ErrInconsistent}}},
		{"group's guarantee lowered below its children's", func(t *testing.T, s *Server) error {
			return s.UpdateGroup(context.Background(), flotilla.QueueGroup{Name: "research", Guaranteed: quota(t, map[string]string{"cpu": "6"})})
		}, []problem{{`group "research".guaranteed.cpu`, "6", flotilla.ErrInconsistent}}},
		{"a negative quota and a bad factor, both", func(t *testing.T, s *Server) error {
			return s.CreateGroup(context.Background(), flotilla.QueueGroup{Name: "g", PriorityFactor: -1,
				Limit: flotilla.Resources{-2, flotilla.Absent, flotilla.Absent}})
		}, []problem{{`group "g".priorityFactor`, "-1", flotilla.ErrOutOfRange}, {`group "g".limit.cpu`, "-2", flotilla.ErrNegative}}},
		{"group named as a queue", func(t *testing.T, s *Server) error {
			return s.CreateGroup(context.Background(), flotilla.QueueGroup{Name: "adhoc"})
		}, []problem{{"group", "adhoc", backend.ErrExists}}},
		{"queue named as a group", func(t *testing.T, s *Server) error {
			return s.CreateQueue(context.Background(), flotilla.Queue{Name: "sub"})
		}, []problem{{"queue", "sub", backend.ErrExists}}},
		{"group with children deleted", func(t *testing.T, s *Server) error {
			return s.DeleteGroup(context.Background(), "research")
		}, []problem{{"group", "research", backend.ErrNotEmpty}}},
		{"unknown group updated", func(t *testing.T, s *Server) error {
			return s.UpdateGroup(context.Background(), flotilla.QueueGroup{Name: "nope"})
		}, []problem{{"group", "nope", backend.ErrNotFound}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := treeWorld(t)
			before := treeState(t, w)
			requireProblems(t, c.change(t, w.srv), c.want...)
			require.Equal(t, before, treeState(t, w), "a refused change changes nothing")
		})
	}
}

// A valid change of the tree is stored and kept: queues move between
// groups, groups between parents, and a group no node names any more is
// deleted.
func TestTreeChangesAreStoredAndAGroupWithoutChildrenIsDeleted(t *testing.T) {
	w := treeWorld(t)
	ctx := w.ctx
	require.NoError(t, w.srv.UpdateQueue(ctx, flotilla.Queue{Name: "adhoc", Parent: "sub", PriorityFactor: 2,
		Limit: quota(t, map[string]string{"cpu": "4"})}))
	require.NoError(t, w.srv.UpdateGroup(ctx, flotilla.QueueGroup{Name: "sub", PriorityFactor: 0.5}))
	g, err := w.srv.Group(ctx, "sub")
	require.NoError(t, err)
	require.Equal(t, "", g.Parent)
	require.Equal(t, 0.5, g.PriorityFactor)
	q, err := w.srv.Queue(ctx, "adhoc")
	require.NoError(t, err)
	require.Equal(t, "sub", q.Parent)
	require.Equal(t, quota(t, map[string]string{"cpu": "4"}), q.Limit)
	stored, err := w.be.Queue(ctx, "adhoc")
	require.NoError(t, err)
	require.Equal(t, "sub", stored.Parent)
	require.ErrorIs(t, w.srv.DeleteGroup(ctx, "sub"), backend.ErrNotEmpty)
	require.NoError(t, w.srv.UpdateQueue(ctx, flotilla.Queue{Name: "adhoc"}))
	require.NoError(t, w.srv.DeleteGroup(ctx, "sub"))
	_, err = w.srv.Group(ctx, "sub")
	require.ErrorIs(t, err, backend.ErrNotFound)
	w.restart()
	gs, err := w.srv.ListGroups(ctx)
	require.NoError(t, err)
	require.Len(t, gs, 1)
	require.Equal(t, "research", gs[0].Name)
}

// spySchedule replaces the world's scheduler: it records each snapshot's
// tree (groups, queues' tree fields, usage) and answers with the result
// next gives for the cycle's number (from 0).
func spySchedule(w *world, next func(n int, snap *scheduler.Snapshot) *scheduler.Result) *[]string {
	var seen []string
	w.srv.st.schedule = func(_ context.Context, snap *scheduler.Snapshot, _ time.Time) (*scheduler.Result, error) {
		var b strings.Builder
		for _, g := range snap.Groups {
			fmt.Fprintf(&b, "group %s<%s f=%g g=%v; ", g.Name, g.Parent, g.PriorityFactor, g.Guaranteed)
		}
		for _, q := range snap.Queues {
			fmt.Fprintf(&b, "queue %s<%s g=%v l=%v; ", q.Name, q.Parent, q.Guaranteed, q.Limit)
		}
		fmt.Fprintf(&b, "usage %v at %s", snap.Usage.Usage, snap.Usage.Time.Format(time.RFC3339))
		seen = append(seen, b.String())
		return next(len(seen)-1, snap), nil
	}
	return &seen
}

// Each cycle's snapshot carries the groups and the queues' tree fields as
// defined when it starts (a change made while jobs run counts from the
// next cycle), and the usage memory the cycle before returned; the
// groups' reports are what Group and ListGroups say.
func TestSnapshotCarriesTheTreeAndTheLastCyclesUsage(t *testing.T) {
	w := treeWorld(t)
	w.report(Report{Cluster: "c1", Nodes: nodesOf("c1", 1, 4)})
	w.submit("vision", "s1", cpuJobs(2, "1"))
	t0 := w.clock.Now()
	seen := spySchedule(w, func(n int, snap *scheduler.Snapshot) *scheduler.Result {
		res := &scheduler.Result{Groups: []scheduler.GroupReport{{Name: "research", Share: 0.5, FairShare: 0.25 * float64(n+1),
			AdjustedFairShare: 0.75, Usage: 0.125}}}
		res.Usage = scheduler.UsageState{Usage: map[string]float64{"vision": 0.1 * float64(n+1), "adhoc": 0}, Time: t0.Add(time.Duration(n) * time.Second)}
		return res
	})
	w.cycle()
	require.NoError(t, w.srv.UpdateQueue(w.ctx, flotilla.Queue{Name: "adhoc", Parent: "sub", Limit: quota(t, map[string]string{"cpu": "2"})}))
	w.clock.Advance(time.Second)
	w.cycle()
	require.Equal(t, []string{
		"group research< f=0 g=[16000 " + absentText + " " + absentText + "]; group sub<research f=0 g=[]; " +
			"queue adhoc< g=[] l=[]; queue vision<research g=[8000 " + absentText + " " + absentText + "] l=[]; usage map[] at 0001-01-01T00:00:00Z",
		"group research< f=0 g=[16000 " + absentText + " " + absentText + "]; group sub<research f=0 g=[]; " +
			"queue adhoc<sub g=[] l=[2000 " + absentText + " " + absentText + "]; queue vision<research g=[8000 " + absentText + " " + absentText + "] l=[]; " +
			"usage map[adhoc:0 vision:0.1] at " + t0.Format(time.RFC3339),
	}, *seen)
	g, err := w.srv.Group(w.ctx, "research")
	require.NoError(t, err)
	require.Equal(t, 0.5, g.Report.FairShare, "the last cycle's report")
	require.Equal(t, 0.125, g.Report.Usage)
	gs, err := w.srv.ListGroups(w.ctx)
	require.NoError(t, err)
	require.Equal(t, 0.75, gs[0].Report.AdjustedFairShare)
	require.Zero(t, gs[1].Report, "a group the result did not report")
}

var absentText = fmt.Sprint(flotilla.Absent)

// The usage memory a cycle returns is the next cycle's input within the
// process, is stored with the usage history (share/<queue>), and a
// restarted service starts from the stored one; a cycle that returns none
// keeps the last, and a deleted queue's memory leaves the snapshot.
func TestTreeUsageIsKeptAcrossCyclesAndRestarts(t *testing.T) {
	w := treeWorld(t)
	w.report(Report{Cluster: "c1", Nodes: nodesOf("c1", 1, 4)})
	t0 := w.clock.Now()
	results := []scheduler.UsageState{
		{Usage: map[string]float64{"vision": 0.25, "adhoc": 0.5}, Time: t0},
		{}, // none: the last is kept
	}
	spy := func(w *world) *[]string {
		return spySchedule(w, func(n int, _ *scheduler.Snapshot) *scheduler.Result {
			if n < len(results) {
				return &scheduler.Result{Usage: results[n]}
			}
			return &scheduler.Result{}
		})
	}
	seen := spy(w)
	w.cycle()
	w.cycle()
	w.cycle()
	usageOf := func(s string) string { return s[strings.Index(s, "usage "):] }
	want := "usage map[adhoc:0.5 vision:0.25] at " + t0.Format(time.RFC3339)
	require.Equal(t, "usage map[] at 0001-01-01T00:00:00Z", usageOf((*seen)[0]))
	require.Equal(t, want, usageOf((*seen)[1]))
	require.Equal(t, want, usageOf((*seen)[2]), "a cycle that returned no usage keeps the last")
	rs, err := w.be.ListUsage(w.ctx)
	require.NoError(t, err)
	var stored []string
	for _, r := range rs {
		if strings.HasPrefix(r.Key, UsageKeyShare) {
			stored = append(stored, fmt.Sprintf("%s=%v@%s", r.Key, r.Value, r.At.Format(time.RFC3339)))
		}
	}
	require.Equal(t, []string{
		"share/adhoc=[0.5 0 0]@" + t0.Format(time.RFC3339),
		"share/vision=[0.25 0 0]@" + t0.Format(time.RFC3339),
	}, stored)

	w.restart()
	require.Equal(t, scheduler.UsageState{Usage: map[string]float64{"vision": 0.25, "adhoc": 0.5}, Time: t0}, w.srv.TreeUsage(""))
	w.report(Report{Cluster: "c1", Nodes: nodesOf("c1", 1, 4)})
	results = nil
	seen = spy(w)
	w.cycle()
	require.Equal(t, want, usageOf((*seen)[0]), "the restarted service starts from the stored usage")
	require.NoError(t, w.srv.DeleteQueue(w.ctx, "adhoc"))
	w.cycle()
	require.Equal(t, "usage map[vision:0.25] at "+t0.Format(time.RFC3339), usageOf((*seen)[1]), "a deleted queue's memory leaves the snapshot")
}

// With the real scheduler: the tree's shares reach the group's status, a
// limit holds, and usage memory decays toward the queues' shares from
// cycle to cycle and survives a restart.
func TestTreeWithTheRealSchedulerReportsSharesLimitsAndUsage(t *testing.T) {
	w := newWorld(t, func(c *Config) { c.Scheduler.UsageHalfLife = 10 * time.Second })
	ctx := w.ctx
	require.NoError(t, w.srv.CreateGroup(ctx, flotilla.QueueGroup{Name: "research", Limit: quota(t, map[string]string{"cpu": "3"})}))
	require.NoError(t, w.srv.CreateQueue(ctx, flotilla.Queue{Name: "nlp", Parent: "research"}))
	require.NoError(t, w.srv.CreateQueue(ctx, flotilla.Queue{Name: "adhoc"}))
	w.report(Report{Cluster: "c1", Nodes: nodesOf("c1", 1, 8)})
	w.submit("nlp", "s", cpuJobs(8, "1"))
	w.submit("adhoc", "s", cpuJobs(2, "1"))
	w.cycle()
	g, err := w.srv.Group(ctx, "research")
	require.NoError(t, err)
	require.Equal(t, 3, g.Report.Running, "research's limit of 3 cpu holds")
	require.InDelta(t, 3.0/8, g.Report.Share, 1e-12)
	require.InDelta(t, 3.0/8, g.Report.AdjustedFairShare, 1e-12, "its demand is capped by its limit")
	require.Equal(t, 0.0, w.srv.TreeUsage("").Usage["nlp"], "the first cycle starts from no usage")
	// One half-life later (the leases still live) the usage is half way
	// to the share held.
	w.clock.Advance(10 * time.Second)
	w.cycle()
	u := w.srv.TreeUsage("")
	require.InDelta(t, 3.0/16, u.Usage["nlp"], 1e-9)
	require.InDelta(t, 2.0/16, u.Usage["adhoc"], 1e-9)
	require.Equal(t, w.clock.Now(), u.Time)
	w.restart()
	require.InDelta(t, 3.0/16, w.srv.TreeUsage("").Usage["nlp"], 1e-9, "kept across a restart")
}
