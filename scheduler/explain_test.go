package scheduler_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/scheduler"
)

// The seed's example: a 32-core node holding 10 cores of armada-default
// and 20 of armada-preemptible. A 23-core armada-default job could use the
// 2 free cores and the 20 it may preempt: short by 1. A preemptible job
// may preempt nothing: short by 21.
func TestShortfallCountsTheCapacityTheJobMayPreempt(t *testing.T) {
	for _, c := range []struct {
		name  string
		class func(*flotilla.Job)
		short string
	}{
		{"armada-default preempts the preemptible jobs", nonPreemptible, "1"},
		{"armada-preemptible preempts nothing", preemptible, "21"},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := newWorld(t)
			w.cfg.EvictionProbability = 0
			w.addNodes(1, "32")
			w.addQueue("A", 1)
			w.addQueue("B", 1)
			w.run("A", "10", "node-0", nonPreemptible)
			w.run("A", "20", "node-0", preemptible)
			w.submit("B", 1, "23", c.class)
			res := w.schedule()
			require.Empty(t, res.Scheduled)
			require.Empty(t, res.Preempted)
			require.Len(t, res.UnscheduledJobs, 1)
			why := res.UnscheduledJobs[0].Reason
			assert.Equal(t, scheduler.ReasonNoRoom, why.Code)
			assert.Equal(t, []scheduler.Shortfall{{Resource: "cpu", Amount: w.res(c.short)[0], Nodes: 1}}, why.Search.Shortfall)
			assert.Contains(t, why.Message, "0/1 nodes fit: 1 short of cpu by at least "+c.short)
		})
	}
}

// The same for a gang: its explanation is its last search's, at the level
// of its lowest class when it may preempt.
func TestGangShortfallCountsTheCapacityItMayPreempt(t *testing.T) {
	for _, c := range []struct {
		name  string
		class func(*flotilla.Job)
		short string
	}{
		{"armada-default preempts the preemptible jobs", nonPreemptible, "1"},
		{"armada-preemptible preempts nothing", preemptible, "21"},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := newWorld(t)
			w.cfg.EvictionProbability = 0
			w.addNodes(1, "32")
			w.addQueue("A", 1)
			w.addQueue("B", 1)
			w.run("A", "10", "node-0", nonPreemptible)
			w.run("A", "20", "node-0", preemptible)
			w.submit("B", 1, "23", c.class, inGang("g", 1, ""))
			res := w.schedule()
			require.Empty(t, res.Scheduled)
			require.Len(t, res.UnscheduledJobs, 1)
			why := res.UnscheduledJobs[0].Reason
			assert.Equal(t, scheduler.ReasonNoRoom, why.Code)
			assert.Contains(t, why.Message, "1 short of cpu by at least "+c.short)
		})
	}
}

// Never fits: even on an empty cluster (too large for every matching node,
// or no node matches); no room: it would fit an empty matching node.
func TestNeverFitsApartFromNoRoom(t *testing.T) {
	gpuTaint := []flotilla.Taint{{Key: "gpu", Value: "true", Effect: flotilla.TaintNoSchedule}}
	for _, c := range []struct {
		name string
		cpu  string
		mod  func(*flotilla.Job)
		code scheduler.ReasonCode
		msg  string
	}{
		{"no room now on a node it fits when empty", "20", nil, scheduler.ReasonNoRoom,
			"0/4 nodes fit: 1 node selector zone=a mismatched, 1 untolerated taint gpu=true:NoSchedule, 1 cordoned, 1 short of cpu by at least 8"},
		{"larger than every matching node", "40", nil, scheduler.ReasonNeverFits,
			"0/4 nodes fit: 1 node selector zone=a mismatched, 1 untolerated taint gpu=true:NoSchedule, 1 cordoned, 1 short of cpu by at least 8 even when empty"},
		{"no node matches the selector", "1", func(j *flotilla.Job) { j.NodeSelector = map[string]string{"zone": "c"} }, scheduler.ReasonNeverFits,
			"0/4 nodes fit: 4 node selector zone=c mismatched"},
		{"a GPU job without the toleration hears about the taint", "1", func(j *flotilla.Job) { j.Requests[2] = 1 }, scheduler.ReasonNeverFits,
			"0/4 nodes fit: 1 node selector zone=a mismatched, 1 untolerated taint gpu=true:NoSchedule, 1 cordoned, 1 short of nvidia.com/gpu by at least 1 even when empty"},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := newWorld(t)
			w.cfg.EvictionProbability = 0
			zoneA := map[string]string{"zone": "a"}
			w.nodes = []*flotilla.Node{
				{Name: "zone-b", Total: w.res("64"), Labels: map[string]string{"zone": "b"}},
				{Name: "gpu", Total: w.schema.MustParse(map[string]string{"cpu": "64", "nvidia.com/gpu": "8"}), Labels: zoneA, Taints: gpuTaint},
				{Name: "cordoned", Total: w.res("64"), Labels: zoneA, Unschedulable: true},
				{Name: "open", Total: w.res("32"), Labels: zoneA},
			}
			w.addQueue("A", 1)
			w.addQueue("B", 1)
			w.run("A", "20", "open", nonPreemptible)
			mods := []func(*flotilla.Job){nonPreemptible, func(j *flotilla.Job) { j.NodeSelector = map[string]string{"zone": "a"} }}
			if c.mod != nil {
				mods = append(mods, c.mod)
			}
			w.submit("B", 2, c.cpu, mods...)
			w.cfg.DefaultPriorityClass = flotilla.ArmadaDefault
			res := w.schedule()
			require.Len(t, res.UnscheduledJobs, 2)
			for _, u := range res.UnscheduledJobs {
				assert.Equal(t, c.code, u.Reason.Code, "the cached second job too")
			}
			why := res.UnscheduledJobs[0].Reason
			assert.Equal(t, c.msg, why.Message)
			total := 0
			for _, f := range why.Search.Filtered {
				total += f.Nodes
			}
			for _, s := range why.Search.Shortfall {
				total += s.Nodes
			}
			assert.Equal(t, 4, why.Search.Nodes)
			assert.Equal(t, why.Search.Nodes, total, "every node counted once")
		})
	}
}

func TestNoFitReasonCarriesTheFindings(t *testing.T) {
	w := newWorld(t)
	zoneA := map[string]string{"zone": "a"}
	w.nodes = []*flotilla.Node{
		{Name: "zone-b", Total: w.res("64"), Labels: map[string]string{"zone": "b"}},
		{Name: "gpu", Total: w.res("64"), Labels: zoneA, Taints: []flotilla.Taint{{Key: "gpu", Effect: flotilla.TaintNoExecute}}},
		{Name: "cordoned", Total: w.res("64"), Labels: zoneA, Unschedulable: true},
		{Name: "small", Total: w.res("4"), Labels: zoneA},
		{Name: "busy", Total: w.res("32"), Labels: zoneA},
	}
	w.addQueue("A", 1)
	w.addQueue("B", 1)
	w.run("A", "30", "busy", nonPreemptible)
	w.submit("B", 1, "8", nonPreemptible, func(j *flotilla.Job) { j.NodeSelector = map[string]string{"zone": "a"} })
	res := w.schedule()
	require.Len(t, res.UnscheduledJobs, 1)
	why := res.UnscheduledJobs[0].Reason
	assert.Equal(t, scheduler.Reason{
		Code: scheduler.ReasonNoRoom,
		Message: "0/5 nodes fit: 1 node selector zone=a mismatched, 1 untolerated taint gpu:NoExecute, 1 cordoned, " +
			"1 short of cpu by at least 4 even when empty, 1 short of cpu by at least 6",
		Search: &scheduler.NodeSearch{
			Nodes: 5,
			Filtered: []scheduler.NodeFilter{
				{Filter: scheduler.FilterSelector, Detail: "zone=a", Nodes: 1},
				{Filter: scheduler.FilterTaint, Detail: "gpu:NoExecute", Nodes: 1},
				{Filter: scheduler.FilterCordoned, Nodes: 1},
			},
			Shortfall: []scheduler.Shortfall{
				{Resource: "cpu", Amount: 4000, Nodes: 1, WhenEmpty: true},
				{Resource: "cpu", Amount: 6000, Nodes: 1},
			},
		},
	}, why)
}

func TestGangNeverFitsWhenNoClusterHoldsItEmpty(t *testing.T) {
	for _, c := range []struct {
		name    string
		members int
		code    scheduler.ReasonCode
	}{
		{"the members together exceed the cluster", 4, scheduler.ReasonNeverFits},
		{"room when empty, none now", 2, scheduler.ReasonNoRoom},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := newWorld(t)
			w.cfg.EvictionProbability = 0
			w.addNodes(2, "32")
			w.addQueue("A", 1)
			w.addQueue("B", 1)
			w.run("A", "20", "node-0", nonPreemptible)
			w.submit("B", c.members, "20", nonPreemptible, inGang("g", c.members, ""))
			res := w.schedule()
			require.Len(t, res.UnscheduledJobs, c.members)
			for _, u := range res.UnscheduledJobs {
				assert.Equal(t, c.code, u.Reason.Code, u.Reason.Message)
			}
		})
	}
}

// A gang's search names the member that did not fit and how many of its
// mates were placed before it (largest request first); a lone job's names
// none.
func TestGangSearchNamesTheMemberThatDoesNotFit(t *testing.T) {
	w := newWorld(t)
	w.cfg.EvictionProbability = 0
	w.addNodes(1, "32")
	w.addQueue("A", 1)
	small := w.submit("A", 1, "10", nonPreemptible, inGang("g", 2, ""))[0]
	w.submit("A", 1, "30", nonPreemptible, inGang("g", 2, ""))
	lone := w.submit("A", 1, "40", nonPreemptible)[0]
	res := w.schedule()
	require.Empty(t, res.Scheduled)
	searches := map[string]*scheduler.NodeSearch{}
	for _, u := range res.UnscheduledJobs {
		searches[u.Job.ID] = u.Reason.Search
	}
	require.Len(t, searches, 3)
	for id, s := range searches {
		require.NotNil(t, s, id)
		if id == lone.ID {
			assert.Empty(t, s.Member, id)
			assert.Zero(t, s.PlacedBefore, id)
			continue
		}
		assert.Equal(t, small.ID, s.Member, id)
		assert.Equal(t, 1, s.PlacedBefore, id)
	}
}

// The scheduling-key cache is shared by the queues: a job skipped because
// a job of another queue with the same requirements failed is told which
// queue that job is in (Search.SameAsQueue, and its message), so a queue's
// users are not pointed at a job id they do not know; a job skipped after
// one of its own queue's gets the plain message.
func TestSameAsNamesTheQueueOfAJobFromAnotherQueue(t *testing.T) {
	w := newWorld(t)
	w.addNodes(1, "1")
	w.addQueue("A", 1)
	w.addQueue("B", 1)
	a := w.submit("A", 2, "2")
	b := w.submit("B", 1, "2")[0]
	res := w.schedule()
	reasons := map[string]scheduler.Reason{}
	for _, u := range res.UnscheduledJobs {
		reasons[u.Job.ID] = u.Reason
	}
	require.Len(t, reasons, 3)
	first := reasons[a[0].ID]
	require.NotNil(t, first.Search)
	assert.Empty(t, first.Search.SameAs)
	own := reasons[a[1].ID]
	assert.Equal(t, a[0].ID, own.Search.SameAs)
	assert.Empty(t, own.Search.SameAsQueue)
	assert.Equal(t, "same requirements as job "+a[0].ID+": "+first.Message, own.Message)
	other := reasons[b.ID]
	assert.Equal(t, a[0].ID, other.Search.SameAs)
	assert.Equal(t, "A", other.Search.SameAsQueue)
	assert.Equal(t, "same requirements as job "+a[0].ID+" of queue A: "+first.Message, other.Message)
	assert.Equal(t, first.Code, other.Code)
}

// A job whose last search counted evicted jobs' capacity (it may displace
// them) says so, and how many evicted jobs went back before it searched:
// those run again and are not room. In the world of bigjob4 (two 32-core
// nodes full of A's 1-core jobs, two of which started later), A puts back
// 32 jobs, 31 on node-0 and one on node-1, before B's 32-core job
// searches: node-1 lacks the one core A's 32nd job holds again, node-0
// the 31 of the others. Without the note "2 short of cpu by at least 1"
// reads as one core per node not counted. A job that searches before any
// goes back gets the first half of the note alone.
func TestShortfallAmongEvictedJobsSaysJobsPutBackAreNotRoom(t *testing.T) {
	for _, c := range []struct {
		name string
		mod  func(*flotilla.Job)
		msg  string
	}{
		{"a job after 32 put back", preemptible, "0/2 nodes fit: 2 short of cpu by at least 1"},
		{"a gang after 32 put back", func(j *flotilla.Job) { preemptible(j); inGang("g", 1, "")(j) }, `gang "g": member 0 (job "B-65") does not fit in the default cluster after 0 of 1 members were placed: 0/2 nodes fit: 2 short of cpu by at least 1`},
	} {
		t.Run(c.name, func(t *testing.T) { putBackBeforeBigJob(t, c.mod, c.msg) })
	}
	t.Run("a job before any is put back", func(t *testing.T) {
		w := newWorld(t)
		w.addNodes(1, "4")
		w.addQueue("A", 1)
		w.addQueue("B", 1)
		w.run("A", "2", "node-0", nonPreemptible)
		w.run("A", "2", "node-0", preemptible)
		w.submit("B", 1, "3", preemptible)
		res := w.schedule()
		require.Empty(t, res.Scheduled)
		require.Empty(t, res.Preempted, "A's evicted job goes back after B's")
		require.Len(t, res.UnscheduledJobs, 1)
		assert.Equal(t, "0/1 nodes fit: 1 short of cpu by at least 1 (room counts what evicted jobs hold)", res.UnscheduledJobs[0].Reason.Message)
	})
}

// putBackBeforeBigJob is the world of bigjob4 with B's 32-core job (or
// gang) made by mod: its reason is msg and the note on the 32 put back.
func putBackBeforeBigJob(t *testing.T, mod func(*flotilla.Job), msg string) {
	w := newWorld(t)
	w.addNodes(2, "32")
	w.addQueue("A", 1)
	w.addQueue("B", 1)
	for i := range 64 {
		start := -2 * time.Hour
		if i == 0 || i == 40 {
			start = -time.Hour
		}
		w.run("A", "1", fmt.Sprintf("node-%d", i/32), func(j *flotilla.Job) {
			preemptible(j)
			j.SubmitTime = t0.Add(time.Duration(i))
		}, startedAt(start))
	}
	b := w.submit("B", 1, "32", mod)[0]
	res := w.schedule()
	require.Empty(t, res.Scheduled)
	require.Len(t, res.UnscheduledJobs, 1)
	why := res.UnscheduledJobs[0].Reason
	assert.Equal(t, b.ID, res.UnscheduledJobs[0].Job.ID)
	assert.Equal(t, scheduler.ReasonNoRoom, why.Code)
	assert.Equal(t, []scheduler.Shortfall{{Resource: "cpu", Amount: w.res("1")[0], Nodes: 2}}, why.Search.Shortfall)
	assert.Equal(t, msg+" (room counts what evicted jobs hold;"+
		" the 32 put back earlier in this cycle, ahead of this job in fair-share order, keep theirs)", why.Message)
}

// A node whose running jobs request more than its total (its allocatable
// shrank under them) is full, not cordoned: a job that only it could take
// waits for room (ReasonNoRoom), short of the whole request there, as on a
// node with nothing free, not "1 cordoned" (ReasonNeverFits). Under both
// strategies, for a lone job and a gang.
func TestOverCommittedNodeIsExplainedAsNoRoomNotCordoned(t *testing.T) {
	for _, c := range []struct {
		strategy scheduler.Strategy
		gang     bool
	}{{scheduler.ProgressiveFilling, false}, {scheduler.ProgressiveFilling, true}, {scheduler.Lottery, false}} {
		t.Run(fmt.Sprintf("%s gang=%v", c.strategy, c.gang), func(t *testing.T) {
			w := newWorld(t)
			w.cfg.Strategy = c.strategy
			if c.strategy == scheduler.Lottery {
				w.cfg.PriorityHalftime = time.Hour
			}
			labelledNode(w, "pool-a", "4", map[string]string{"pool": "a"})
			w.addNodes(1, "8")
			w.addQueue("A", 1)
			w.addQueue("B", 1)
			w.run("A", "3", "pool-a", nonPreemptible)
			w.run("A", "3", "pool-a", nonPreemptible)
			mods := []func(*flotilla.Job){nonPreemptible, func(j *flotilla.Job) { j.NodeSelector = map[string]string{"pool": "a"} }}
			if c.gang {
				mods = append(mods, inGang("g", 1, ""))
			}
			w.submit("B", 1, "1", mods...)
			res := w.schedule()
			require.Equal(t, []string{"pool-a"}, res.OverCommitted)
			require.Empty(t, res.Scheduled)
			require.Len(t, res.UnscheduledJobs, 1)
			why := res.UnscheduledJobs[0].Reason
			assert.Equal(t, scheduler.ReasonNoRoom, why.Code, why.Message)
			assert.Contains(t, why.Message, "0/2 nodes fit: 1 node selector pool=a mismatched, 1 short of cpu by at least 1")
			assert.NotContains(t, why.Message, "cordoned")
			require.NotNil(t, why.Search)
			assert.Equal(t, []scheduler.Shortfall{{Resource: "cpu", Amount: w.res("1")[0], Nodes: 1}}, why.Search.Shortfall)
			for _, f := range why.Search.Filtered {
				assert.NotEqual(t, scheduler.FilterCordoned, f.Filter)
			}
		})
	}
}
