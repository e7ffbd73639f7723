package simreport

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/flotilla-sched/flotilla/sim"
)

func TestSummaryPercentileIsNearestRank(t *testing.T) {
	vals := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	for _, tc := range []struct {
		p, want float64
	}{{50, 5}, {95, 10}, {90, 9}, {1, 1}, {100, 10}, {0, 1}} {
		assert.Equal(t, tc.want, percentile(vals, tc.p), "p%g", tc.p)
	}
	assert.True(t, math.IsNaN(percentile(nil, 50)))
}

func TestSummaryMeansOverCyclesAndDelaysOverLeasedJobs(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	w := &sim.Workload{Queues: []sim.QueueSpec{{Name: "A"}, {Name: "B"}}}
	out := &sim.Output{
		Queues: []sim.QueueRow{
			{Cycle: 0, Queue: "A", Share: 1, FairShare: 0.5},
			{Cycle: 0, Queue: "B", Share: 0, FairShare: 0.5},
			{Cycle: 1, Queue: "A", Share: 0.5, FairShare: 0.5},
			{Cycle: 1, Queue: "B", Share: 0.5, FairShare: 0.5},
		},
		Jobs: []sim.JobRow{
			{Queue: "A", Submitted: f(0), Leased: f(4), Preemptions: 1},
			{Queue: "A", Submitted: f(2), Leased: f(3)},
			{Queue: "B", Submitted: f(1)},
		},
	}
	sums := summarise(w, out)
	require.Len(t, sums, 2)
	assert.Equal(t, "A", sums[0].Name)
	assert.InDelta(t, 0.75, sums[0].MeanShare, 1e-12)
	assert.InDelta(t, 0.5, sums[0].MeanFairShare, 1e-12)
	assert.Equal(t, 1.0, sums[0].P50)
	assert.Equal(t, 4.0, sums[0].P95)
	assert.Equal(t, 1, sums[0].Preemptions)
	assert.Equal(t, 2, sums[0].Leased)
	assert.True(t, math.IsNaN(sums[1].P50), "B has no leased job")
	assert.Equal(t, 1, sums[1].Jobs)
}

func TestGroupSummaryMeansOverCyclesInTheWorkloadsOrder(t *testing.T) {
	w := &sim.Workload{Groups: []sim.GroupSpec{{Name: "g"}, {Name: "h", Parent: "g"}}}
	out := &sim.Output{Groups: []sim.GroupRow{
		{Cycle: 0, Group: "h", Parent: "g", Share: 0.2, FairShare: 0.4, AdjustedFairShare: 0.3, Usage: 0},
		{Cycle: 0, Group: "g", Share: 1, FairShare: 1, AdjustedFairShare: 1, Usage: 0.5},
		{Cycle: 1, Group: "h", Parent: "g", Share: 0.6, FairShare: 0.4, AdjustedFairShare: 0.5, Usage: 0.1},
		{Cycle: 1, Group: "g", Share: 0.5, FairShare: 1, AdjustedFairShare: 0.5, Usage: 0.7},
		{Cycle: 1, Group: "stranger", Share: 1},
	}}
	sums := summariseGroups(w, out)
	require.Len(t, sums, 2)
	assert.Equal(t, "g", sums[0].Name)
	assert.Equal(t, "g", sums[1].Parent)
	assert.InDelta(t, 0.75, sums[0].MeanShare, 1e-12)
	assert.InDelta(t, 0.75, sums[0].MeanAdjusted, 1e-12)
	assert.InDelta(t, 0.6, sums[0].MeanUsage, 1e-12)
	assert.InDelta(t, 0.4, sums[1].MeanShare, 1e-12)
	assert.InDelta(t, 0.4, sums[1].MeanFairShare, 1e-12)
	assert.InDelta(t, 0.05, sums[1].MeanUsage, 1e-12)
	assert.Equal(t, []string{"share", "utilisation", "delay", "preemptions", "groups"}, plotNames(out))
	assert.Equal(t, PlotNames(), plotNames(&sim.Output{}), "a flat run has no group plot")
}

func TestGroupPlotHoursAfterThreeHoursAndUsageOnlyWithUsage(t *testing.T) {
	rows := func(end float64, usage float64) *sim.Output {
		out := &sim.Output{End: end}
		for c, at := range []float64{0, end} {
			out.Groups = append(out.Groups, sim.GroupRow{Time: at, Cycle: c, Group: "g", Share: 0.5, FairShare: 1, Usage: usage})
		}
		return out
	}
	groups := []groupSummary{{Name: "g"}}
	svg := func(p *plot.Plot) string {
		wt, err := p.WriterTo(4*vg.Inch, 3*vg.Inch, "svg")
		require.NoError(t, err)
		var b bytes.Buffer
		_, err = wt.WriteTo(&b)
		require.NoError(t, err)
		return b.String()
	}
	p, err := groupPlot(rows(4*3600, 0.3), groups)
	require.NoError(t, err)
	assert.Equal(t, "virtual time (h)", p.X.Label.Text)
	assert.InDelta(t, 4, p.X.Max, 1e-9)
	assert.Contains(t, svg(p), ">g usage<")
	assert.Contains(t, svg(p), ">g fair share<")
	p, err = groupPlot(rows(600, 0), groups)
	require.NoError(t, err)
	assert.Equal(t, "virtual time (s)", p.X.Label.Text)
	assert.NotContains(t, svg(p), ">g usage<", "no usage line without usage memory")
	assert.Contains(t, svg(p), ">g share<")
}

func TestProgressLineStartsAfterTwoSecondsAndIsThrottled(t *testing.T) {
	var buf bytes.Buffer
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	now := t0
	l := NewProgressLine(&buf, func() time.Time { return now })
	p := sim.Progress{Now: time.Minute, End: 4 * time.Minute, Cycles: 6, Jobs: 10, Submitted: 4, Ended: 2}
	for _, step := range []struct {
		at    time.Duration
		lines int
	}{{0, 0}, {time.Second, 0}, {2 * time.Second, 1}, {2*time.Second + 100*time.Millisecond, 1}, {2*time.Second + 300*time.Millisecond, 2}} {
		now = t0.Add(step.at)
		l.Update(p)
		assert.Equal(t, step.lines, strings.Count(buf.String(), "\r"), "at %s", step.at)
	}
	assert.Contains(t, buf.String(), "virtual 1m0s ( 25%), cycle 6, 4/10 jobs submitted, 2 ended")
	l.Finish()
	assert.True(t, strings.HasSuffix(buf.String(), "\n"))

	var quiet bytes.Buffer
	q := NewProgressLine(&quiet, func() time.Time { return t0 })
	q.Update(p)
	q.Finish()
	assert.Empty(t, quiet.String(), "a run under two seconds prints nothing")
}

// With pools, each pool's cycles have their own rows: a queue's means are
// per pool (a share of one pool's clusters is not averaged with
// another's), its share lines per pool with a point at each of the
// pool's cycles, and the groups' too; index.html has a row per queue and
// pool.
func TestWithPoolsSummariesAndShareLinesArePerPool(t *testing.T) {
	w := &sim.Workload{Queues: []sim.QueueSpec{{Name: "A"}, {Name: "B"}}, Groups: []sim.GroupSpec{{Name: "g"}}}
	out := &sim.Output{Pools: true, End: 10, Resources: []string{"cpu"}}
	for c, at := range []float64{0, 10} {
		out.Queues = append(out.Queues,
			sim.QueueRow{Time: at, Cycle: c, Queue: "A", Pool: "a", Share: 1, FairShare: 1, AdjustedFairShare: 1, Allocated: []int64{0}},
			sim.QueueRow{Time: at, Cycle: c, Queue: "A", Pool: "b", Share: 0.2 * float64(c), FairShare: 0.5, AdjustedFairShare: 0.4, Allocated: []int64{0}},
			sim.QueueRow{Time: at, Cycle: c, Queue: "B", Pool: "b", Share: 0.6, FairShare: 0.5, AdjustedFairShare: 0.6, Allocated: []int64{0}})
		out.Groups = append(out.Groups,
			sim.GroupRow{Time: at, Cycle: c, Group: "g", Pool: "a", Share: 1, FairShare: 1},
			sim.GroupRow{Time: at, Cycle: c, Group: "g", Pool: "b", Share: 0.25, FairShare: 1})
	}
	sums := summarise(w, out)
	require.Len(t, sums, 2)
	assert.True(t, math.IsNaN(sums[0].MeanShare), "no mean across pools")
	require.Len(t, sums[0].Pools, 2)
	assert.Equal(t, "a", sums[0].Pools[0].Pool)
	assert.InDelta(t, 1, sums[0].Pools[0].MeanShare, 1e-12)
	assert.Equal(t, "b", sums[0].Pools[1].Pool)
	assert.InDelta(t, 0.1, sums[0].Pools[1].MeanShare, 1e-12)
	assert.InDelta(t, 0.4, sums[0].Pools[1].MeanAdjusted, 1e-12)
	require.Len(t, sums[1].Pools, 1, "B has rows in pool b only")
	assert.InDelta(t, 0.6, sums[1].Pools[0].MeanShare, 1e-12)

	groups := summariseGroups(w, out)
	require.Len(t, groups, 2)
	assert.Equal(t, "g (pool a)", groups[0].label())
	assert.InDelta(t, 1, groups[0].MeanShare, 1e-12)
	assert.InDelta(t, 0.25, groups[1].MeanShare, 1e-12)

	plots, err := makePlots(sim.Config{Workload: w, Clusters: &sim.Clusters{}}, out, sums)
	require.NoError(t, err)
	svg := func(p *plot.Plot) string {
		wt, err := p.WriterTo(4*vg.Inch, 3*vg.Inch, "svg")
		require.NoError(t, err)
		var b bytes.Buffer
		_, err = wt.WriteTo(&b)
		require.NoError(t, err)
		return b.String()
	}
	share := svg(plots["share"])
	for _, name := range []string{"A (pool a) share", "A (pool b) share", "B (pool b) fair share"} {
		assert.Contains(t, share, ">"+name+"<")
	}
	assert.NotContains(t, share, ">B (pool a) share<")
	assert.NotContains(t, share, ">A share<")
	assert.Contains(t, svg(plots[GroupPlot]), ">g (pool b) share<")
	assert.Equal(t, plotterXYs(1, 1), poolSeries(out, "a", func(r *sim.QueueRow) bool { return r.Queue == "A" },
		func(r *sim.QueueRow) float64 { return r.Share }), "pool a's line: A's share there, not summed with pool b's")

	dir := t.TempDir()
	require.NoError(t, Write(dir, sim.Config{Workload: w, Clusters: &sim.Clusters{}}, out))
	index, err := os.ReadFile(filepath.Join(dir, "index.html"))
	require.NoError(t, err)
	assert.Contains(t, string(index), "<tr><td>A</td><td>b</td><td>0.100</td><td>0.500</td><td>0.400</td></tr>")
	assert.Contains(t, string(index), "<tr><td>g</td><td>b</td><td></td><td>0.250</td>")
}

// plotterXYs are points at x = 0, 10, … with the values ys.
func plotterXYs(ys ...float64) plotter.XYs {
	xys := make(plotter.XYs, len(ys))
	for i, y := range ys {
		xys[i] = plotter.XY{X: 10 * float64(i), Y: y}
	}
	return xys
}
