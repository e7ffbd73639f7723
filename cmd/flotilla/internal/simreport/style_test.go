package simreport

import (
	"bytes"
	"image/color"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/flotilla-sched/flotilla/sim"
)

// Every queue of a run gets a colour of its own, the first eight from
// Okabe and Ito's colour-blind-safe palette.
func TestEveryQueueHasAColourOfItsOwnTheFirstEightColourBlindSafe(t *testing.T) {
	seen := map[color.RGBA]int{}
	for i := range 40 {
		r, g, b, a := queueColour(i).RGBA()
		c := color.RGBA{uint8(r >> 8), uint8(g >> 8), uint8(b >> 8), uint8(a >> 8)}
		if j, dup := seen[c]; dup {
			t.Fatalf("queues %d and %d share colour %v", j, i, c)
		}
		seen[c] = i
		if i < len(okabeIto) {
			assert.Equal(t, okabeIto[i], c)
		}
	}
}

// A progress line rewritten with carriage returns goes to a terminal only,
// not to a file, a pipe or a buffer.
func TestProgressGoesToATerminalOnly(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "log"))
	require.NoError(t, err)
	defer f.Close()
	r, w, err := os.Pipe()
	require.NoError(t, err)
	defer r.Close()
	defer w.Close()
	assert.False(t, IsTerminal(f), "a file")
	assert.False(t, IsTerminal(w), "a pipe")
	assert.False(t, IsTerminal(&bytes.Buffer{}), "a buffer")
}

// svgOf renders a plot as SVG.
func svgOf(t *testing.T, p *plot.Plot) string {
	t.Helper()
	wt, err := p.WriterTo(6*vg.Inch, 4*vg.Inch, "svg")
	require.NoError(t, err)
	var b bytes.Buffer
	_, err = wt.WriteTo(&b)
	require.NoError(t, err)
	return b.String()
}

// Preemptions are points at the cycles that preempted, one shape and
// colour per queue (a queue never preempted has its legend entry only). A queue whose
// jobs were all leased at once has its zero delays drawn (an outline on
// the axis); a queue that leased nothing has no bars.
func TestPreemptionsArePointsAndZeroDelaysShow(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	w := &sim.Workload{Queues: []sim.QueueSpec{{Name: "A"}, {Name: "B"}, {Name: "C"}}}
	out := &sim.Output{Resources: []string{"cpu"}, End: 20}
	for c, at := range []float64{0, 10, 20} {
		pre := 0
		if c == 1 {
			pre = 3
		}
		out.Queues = append(out.Queues,
			sim.QueueRow{Time: at, Cycle: c, Queue: "A", Preempted: pre, Allocated: []int64{1000}},
			sim.QueueRow{Time: at, Cycle: c, Queue: "B", Allocated: []int64{0}},
			sim.QueueRow{Time: at, Cycle: c, Queue: "C", Allocated: []int64{0}})
	}
	out.Jobs = []sim.JobRow{{Queue: "A", Submitted: f(0), Leased: f(5)}, {Queue: "B", Submitted: f(0), Leased: f(0)}, {Queue: "C", Submitted: f(0)}}
	clusters := &sim.Clusters{Clusters: []sim.Cluster{{Name: "c", Nodes: []sim.NodeTemplate{{Name: "n", Resources: map[string]string{"cpu": "4"}}}}}}
	plots, err := makePlots(sim.Config{Clusters: clusters, Workload: w}, out, summarise(w, out))
	require.NoError(t, err)

	assert.Equal(t, plotter.XYs{{X: 10, Y: 3}}, nonZero(plotter.XYs{{X: 0}, {X: 10, Y: 3}, {X: 20}}))
	pre := svgOf(t, plots["preemptions"])
	assert.Contains(t, pre, ">A<")
	assert.Contains(t, pre, ">B<", "every queue is in the legend, B never preempted too")
	assert.NotContains(t, pre, "stroke:#E69F00;stroke-width:1.5", "no line of A's along the axis")

	delay := svgOf(t, plots["delay"])
	assert.Contains(t, delay, ">B<", "B's delays are all zero, and drawn")
	assert.Contains(t, delay, "stroke:#56B4E9", "B's zero bars are outlined in its colour")
	assert.NotContains(t, delay, ">C<", "C leased nothing")
	assert.False(t, strings.Contains(delay, "stroke:#009E73"), "no outline in C's colour")
}
