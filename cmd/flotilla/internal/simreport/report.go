package simreport

import (
	"html/template"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/sim"
)

// PlotNames are the plots simulate writes, each as NAME.png and NAME.svg.
func PlotNames() []string { return []string{"share", "utilisation", "delay", "preemptions"} }

// GroupPlot is the plot simulate writes besides PlotNames for a run with
// queue groups (sim.Output.Groups), as GroupPlot.png and .svg: each
// group's share against its fair share over time, and its usage.
const GroupPlot = "groups"

// plotNames are the plots of out: PlotNames, and GroupPlot when out has
// group rows.
func plotNames(out *sim.Output) []string {
	names := PlotNames()
	if len(out.Groups) > 0 {
		names = append(names, GroupPlot)
	}
	return names
}

// groupSummary is one group's row of index.html's group table: means over
// the cycles of the run; with pools (sim.Output.Pools) one row per group
// and pool, means over that pool's cycles.
type groupSummary struct {
	Name, Pool, Parent                                string
	MeanShare, MeanFairShare, MeanAdjusted, MeanUsage float64
}

// label names the summary's group, with its pool when it has one.
func (g *groupSummary) label() string { return withPool(g.Name, g.Pool) }

// withPool is name, followed by its pool when pool is not "".
func withPool(name, pool string) string {
	if pool == "" {
		return name
	}
	return name + " (pool " + pool + ")"
}

// outPools are the pools of out's rows, sorted; [""] without pools.
func outPools(out *sim.Output) []string {
	if !out.Pools {
		return []string{""}
	}
	var pools []string
	for _, r := range out.Queues {
		if !slices.Contains(pools, r.Pool) {
			pools = append(pools, r.Pool)
		}
	}
	for _, r := range out.Groups {
		if !slices.Contains(pools, r.Pool) {
			pools = append(pools, r.Pool)
		}
	}
	slices.Sort(pools)
	return pools
}

// summariseGroups computes the per-group means, groups in the workload's
// order (each group's pools in name order), a pool's rows only where the
// group has some.
func summariseGroups(w *sim.Workload, out *sim.Output) []groupSummary {
	type key struct{ group, pool string }
	idx := map[key]int{}
	var sums []groupSummary
	for _, g := range w.Groups {
		for _, p := range outPools(out) {
			idx[key{g.Name, p}] = len(sums)
			sums = append(sums, groupSummary{Name: g.Name, Pool: p, Parent: g.Parent})
		}
	}
	rows := make([]int, len(sums))
	for _, r := range out.Groups {
		i, ok := idx[key{r.Group, r.Pool}]
		if !ok {
			continue
		}
		rows[i]++
		s := &sums[i]
		s.MeanShare += r.Share
		s.MeanFairShare += r.FairShare
		s.MeanAdjusted += r.AdjustedFairShare
		s.MeanUsage += r.Usage
	}
	kept := sums[:0]
	for i := range sums {
		n := float64(rows[i])
		if n == 0 && out.Pools {
			continue // the group has no row in this pool
		}
		s := sums[i]
		if n > 0 {
			s.MeanShare, s.MeanFairShare, s.MeanAdjusted, s.MeanUsage = s.MeanShare/n, s.MeanFairShare/n, s.MeanAdjusted/n, s.MeanUsage/n
		}
		kept = append(kept, s)
	}
	return kept
}

// groupSeries is one group's value at every cycle of out in pool, with
// each cycle's time as X.
func groupSeries(out *sim.Output, group, pool string, value func(*sim.GroupRow) float64) plotter.XYs {
	var xys plotter.XYs
	for i := range out.Groups {
		if r := &out.Groups[i]; r.Group == group && r.Pool == pool {
			xys = append(xys, plotter.XY{X: r.Time, Y: value(r)})
		}
	}
	return xys
}

// groupPlot draws each group's share (solid), fair share (dashed) and,
// with usage memory, usage (dotted) over time; hours on the X axis when
// the run lasts over three hours.
func groupPlot(out *sim.Output, groups []groupSummary) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text, p.Y.Label.Text = "Share against fair share per group", "share of the cluster"
	p.Legend.Top = true
	p.Add(plotter.NewGrid())
	scale, unit := 1.0, "virtual time (s)"
	if out.End > 3*3600 {
		scale, unit = 3600, "virtual time (h)"
	}
	p.X.Label.Text = unit
	usage := false
	for _, r := range out.Groups {
		usage = usage || r.Usage > 0
	}
	for i, g := range groups {
		lines := []struct {
			name  string
			value func(*sim.GroupRow) float64
		}{{" share", func(r *sim.GroupRow) float64 { return r.Share }}, {" fair share", func(r *sim.GroupRow) float64 { return r.FairShare }}}
		if usage {
			lines = append(lines, struct {
				name  string
				value func(*sim.GroupRow) float64
			}{" usage", func(r *sim.GroupRow) float64 { return r.Usage }})
		}
		for k, l := range lines {
			xys := groupSeries(out, g.Name, g.Pool, l.value)
			for j := range xys {
				xys[j].X /= scale
			}
			if err := addLine(p, xys, g.label()+l.name, i, k); err != nil {
				return nil, err
			}
		}
	}
	p.Y.Min, p.Y.Max = 0, max(p.Y.Max*1.25, 1)
	return p, nil
}

// delayPercentiles are the queueing-delay percentiles the delay plot shows.
func delayPercentiles() []float64 { return []float64{50, 90, 95, 99} }

// queueSummary is one queue's row of index.html's table.
type queueSummary struct {
	Name string
	// MeanShare, MeanFairShare and MeanAdjusted are means over the
	// cycles; NaN with pools, where Pools has them per pool.
	MeanShare, MeanFairShare, MeanAdjusted float64
	P50, P95                               float64 // NaN when no job of the queue was leased
	Preemptions                            int
	Jobs, Leased                           int
	// Pools are the queue's means in each pool where it has rows, in pool
	// name order, when the run has pools (sim.Output.Pools).
	Pools  []poolShares
	delays []float64 // sorted
}

// poolShares are a queue's means over one pool's cycles.
type poolShares struct {
	Pool                                   string
	MeanShare, MeanFairShare, MeanAdjusted float64
	rows                                   int
}

// summarise computes the per-queue summary: means over the cycles of the
// run (with pools, per pool: a share of one pool's clusters is not
// averaged with another's), queueing delay (latest lease minus
// submission) percentiles over the queue's leased jobs, and the
// preempted events of its jobs. Queues are in the workload's order.
func summarise(w *sim.Workload, out *sim.Output) []queueSummary {
	sums := make([]queueSummary, len(w.Queues))
	idx := make(map[string]int, len(w.Queues))
	for i, q := range w.Queues {
		sums[i].Name = q.Name
		idx[q.Name] = i
	}
	rows := make([]int, len(sums))
	for _, r := range out.Queues {
		i, ok := idx[r.Queue]
		if !ok {
			continue
		}
		rows[i]++
		sums[i].MeanShare += r.Share
		sums[i].MeanFairShare += r.FairShare
		sums[i].MeanAdjusted += r.AdjustedFairShare
		if out.Pools {
			ps := &sums[i].Pools
			k := slices.IndexFunc(*ps, func(p poolShares) bool { return p.Pool == r.Pool })
			if k < 0 {
				k = len(*ps)
				*ps = append(*ps, poolShares{Pool: r.Pool})
			}
			p := &(*ps)[k]
			p.rows++
			p.MeanShare += r.Share
			p.MeanFairShare += r.FairShare
			p.MeanAdjusted += r.AdjustedFairShare
		}
	}
	for i := range sums {
		for k := range sums[i].Pools {
			p := &sums[i].Pools[k]
			n := float64(p.rows)
			p.MeanShare, p.MeanFairShare, p.MeanAdjusted = p.MeanShare/n, p.MeanFairShare/n, p.MeanAdjusted/n
		}
		slices.SortFunc(sums[i].Pools, func(a, b poolShares) int { return strings.Compare(a.Pool, b.Pool) })
		if out.Pools {
			rows[i] = 0
			sums[i].MeanShare, sums[i].MeanFairShare, sums[i].MeanAdjusted = math.NaN(), math.NaN(), math.NaN()
		}
	}
	for _, j := range out.Jobs {
		i, ok := idx[j.Queue]
		if !ok {
			continue
		}
		s := &sums[i]
		s.Jobs++
		s.Preemptions += j.Preemptions
		if j.Submitted != nil && j.Leased != nil {
			s.Leased++
			s.delays = append(s.delays, *j.Leased-*j.Submitted)
		}
	}
	for i := range sums {
		s := &sums[i]
		if rows[i] > 0 {
			n := float64(rows[i])
			s.MeanShare, s.MeanFairShare, s.MeanAdjusted = s.MeanShare/n, s.MeanFairShare/n, s.MeanAdjusted/n
		}
		slices.Sort(s.delays)
		s.P50, s.P95 = percentile(s.delays, 50), percentile(s.delays, 95)
	}
	return sums
}

// percentile is the nearest-rank p-th percentile of sorted values; NaN
// when there are none.
func percentile(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return math.NaN()
	}
	k := int(math.Ceil(p / 100 * float64(len(sorted))))
	return sorted[min(max(k, 1), len(sorted))-1]
}

// capacity is the clusters' total of each of resources, in the schema's
// units (as sim.Output.Allocated).
func capacity(c *sim.Clusters, resources []string) ([]float64, error) {
	schema, err := flotilla.NewResourceSchema(resources...)
	if err != nil {
		return nil, err
	}
	total := make([]float64, len(resources))
	for _, cl := range c.Clusters {
		for _, n := range cl.Nodes {
			v, err := schema.Parse("resources", n.Resources)
			if err != nil {
				return nil, err
			}
			count := 1
			if n.Count != nil {
				count = *n.Count
			}
			for i := range total {
				total[i] += float64(v[i]) * float64(count)
			}
		}
	}
	return total, nil
}

// cycleSeries is one value per cycle of out, summed over the rows of a
// cycle by value, with each cycle's time as X.
func cycleSeries(out *sim.Output, keep func(*sim.QueueRow) bool, value func(*sim.QueueRow) float64) plotter.XYs {
	return rowSeries(out, func(*sim.QueueRow) bool { return true }, keep, value)
}

// poolSeries is cycleSeries over the cycles that have rows of pool (every
// cycle for "", the pool of a run without pools): a pool's line has a
// point at each of its own cycles only.
func poolSeries(out *sim.Output, pool string, keep func(*sim.QueueRow) bool, value func(*sim.QueueRow) float64) plotter.XYs {
	return rowSeries(out, func(r *sim.QueueRow) bool { return r.Pool == pool }, keep, value)
}

// rowSeries is a point per cycle with rows that in admits, at the
// cycle's time, summing value over its rows that keep admits too.
func rowSeries(out *sim.Output, in, keep func(*sim.QueueRow) bool, value func(*sim.QueueRow) float64) plotter.XYs {
	var xys plotter.XYs
	last := -1
	for i := range out.Queues {
		r := &out.Queues[i]
		if !in(r) {
			continue
		}
		if r.Cycle != last {
			xys = append(xys, plotter.XY{X: r.Time})
			last = r.Cycle
		}
		if keep(r) {
			xys[len(xys)-1].Y += value(r)
		}
	}
	return xys
}

// addLine adds a line of colour and dash style i to p, named in the legend.
func addLine(p *plot.Plot, xys plotter.XYs, name string, colour, dashes int) error {
	l, err := plotter.NewLine(xys)
	if err != nil {
		return err
	}
	l.Color = queueColour(colour)
	l.Dashes = plotutil.Dashes(dashes + 2*(colour/len(okabeIto)))
	l.Width = vg.Points(1.5)
	p.Add(l)
	p.Legend.Add(name, l)
	return nil
}

// makePlots builds the four plots of a run.
func makePlots(cfg sim.Config, out *sim.Output, sums []queueSummary) (map[string]*plot.Plot, error) {
	plots := map[string]*plot.Plot{}
	newPlot := func(name, title, x, y string) *plot.Plot {
		p := plot.New()
		p.Title.Text, p.X.Label.Text, p.Y.Label.Text = title, x, y
		p.Legend.Top = true
		p.Add(plotter.NewGrid())
		plots[name] = p
		return p
	}
	const seconds = "virtual time (s)"

	share := newPlot("share", "Share against fair share per queue", seconds, "share of the cluster")
	if out.Pools {
		share.Title.Text, share.Y.Label.Text = "Share against fair share per queue and pool", "share of the pool's clusters"
	}
	line := 0
	for _, s := range sums {
		pools := []string{""}
		if out.Pools {
			pools = pools[:0]
			for _, p := range s.Pools {
				pools = append(pools, p.Pool)
			}
		}
		for _, pool := range pools {
			mine := func(r *sim.QueueRow) bool { return r.Queue == s.Name && r.Pool == pool }
			name := withPool(s.Name, pool)
			if err := addLine(share, poolSeries(out, pool, mine, func(r *sim.QueueRow) float64 { return r.Share }), name+" share", line, 0); err != nil {
				return nil, err
			}
			if err := addLine(share, poolSeries(out, pool, mine, func(r *sim.QueueRow) float64 { return r.FairShare }), name+" fair share", line, 1); err != nil {
				return nil, err
			}
			line++
		}
	}

	util := newPlot("utilisation", "Cluster utilisation", seconds, "allocated / capacity")
	total, err := capacity(cfg.Clusters, out.Resources)
	if err != nil {
		return nil, err
	}
	all := func(*sim.QueueRow) bool { return true }
	for k, name := range out.Resources {
		if total[k] == 0 {
			continue
		}
		xys := cycleSeries(out, all, func(r *sim.QueueRow) float64 { return float64(r.Allocated[k]) })
		for i := range xys {
			xys[i].Y /= total[k]
		}
		if err := addLine(util, xys, name, k, 0); err != nil {
			return nil, err
		}
	}

	delay := newPlot("delay", "Queueing-delay percentiles per queue", "percentile", "delay (s)")
	pcts := delayPercentiles()
	names := make([]string, len(pcts))
	for i, p := range pcts {
		names[i] = "p" + strconv.FormatFloat(p, 'g', -1, 64)
	}
	delay.NominalX(names...)
	width := vg.Points(float64(60) / float64(max(len(sums), 1)))
	for i, s := range sums {
		if len(s.delays) == 0 {
			continue // no job leased: no delay to draw (a zero bar would say 0)
		}
		vals := make(plotter.Values, len(pcts))
		for k, p := range pcts {
			vals[k] = percentile(s.delays, p)
		}
		bars, err := plotter.NewBarChart(vals, width)
		if err != nil {
			return nil, err
		}
		bars.Color = queueColour(i)
		// Outlined in its own colour, a zero delay shows as a line on the
		// axis where an unoutlined bar of height 0 would not show at all.
		bars.LineStyle.Width = vg.Points(1.5)
		bars.LineStyle.Color = queueColour(i)
		bars.Offset = width * vg.Length(float64(i)-float64(len(sums)-1)/2)
		delay.Add(bars)
		delay.Legend.Add(s.Name, bars)
	}
	// Room for the outer bars and, above the highest, for the legend.
	delay.X.Min, delay.X.Max = -0.5, float64(len(pcts))-0.5
	delay.Y.Min, delay.Y.Max = 0, max(delay.Y.Max*1.25, 1)

	pre := newPlot("preemptions", "Preemptions per cycle", seconds, "jobs preempted")
	for i, s := range sums {
		mine := func(r *sim.QueueRow) bool { return r.Queue == s.Name }
		// A point per cycle that preempted jobs of the queue: preemptions
		// are events, and a line through the zeros between them hides them.
		pts := nonZero(cycleSeries(out, mine, func(r *sim.QueueRow) float64 { return float64(r.Preempted) }))
		sc, err := plotter.NewScatter(pts)
		if err != nil {
			return nil, err
		}
		sc.GlyphStyle.Color = queueColour(i)
		sc.GlyphStyle.Shape = plotutil.Shape(i + 5) // the filled shapes first
		sc.GlyphStyle.Radius = vg.Points(4)
		if len(pts) > 0 {
			pre.Add(sc) // a queue never preempted: in the legend only
		}
		pre.Legend.Add(s.Name, sc)
	}
	// The whole run, as the other plots: points alone would narrow the
	// axis to the cycles that preempted.
	pre.X.Min, pre.X.Max = min(pre.X.Min, 0), max(pre.X.Max, out.End)
	// Room above the highest line for the legend.
	for _, p := range []*plot.Plot{share, util, pre} {
		p.Y.Min, p.Y.Max = 0, max(p.Y.Max*1.2, 1)
	}
	if len(out.Groups) > 0 {
		p, err := groupPlot(out, summariseGroups(cfg.Workload, out))
		if err != nil {
			return nil, err
		}
		plots[GroupPlot] = p
	}
	return plots, nil
}

// Write writes the plots (PNG and SVG) and index.html into dir.
func Write(dir string, cfg sim.Config, out *sim.Output) error {
	sums := summarise(cfg.Workload, out)
	plots, err := makePlots(cfg, out, sums)
	if err != nil {
		return err
	}
	for _, name := range plotNames(out) {
		for _, ext := range []string{".png", ".svg"} {
			if err := plots[name].Save(8*vg.Inch, 4.5*vg.Inch, filepath.Join(dir, name+ext)); err != nil {
				return err
			}
		}
	}
	f, err := os.Create(filepath.Join(dir, "index.html"))
	if err != nil {
		return err
	}
	var groups []groupSummary
	if len(out.Groups) > 0 {
		groups = summariseGroups(cfg.Workload, out)
	}
	err = indexHTML.Execute(f, struct {
		End    float64
		Jobs   int
		Plots  []string
		Queues []queueSummary
		Groups []groupSummary
		Tree   bool
		Pools  bool
	}{out.End, len(out.Jobs), plotNames(out), sums, groups, out.Tree, out.Pools})
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// fmtNum formats a summary number; NaN (nothing to measure) is a dash.
func fmtNum(v float64) string {
	if math.IsNaN(v) {
		return "–"
	}
	return strconv.FormatFloat(v, 'f', 3, 64)
}

var indexHTML = template.Must(template.New("index").Funcs(template.FuncMap{"num": fmtNum}).Parse(`<!DOCTYPE html>
<html lang="en">
<head><meta charset="utf-8"><title>flotilla simulate</title>
<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:.3em .6em;text-align:right}td:first-child,th:first-child{text-align:left}img{max-width:100%}</style>
</head>
<body>
<h1>flotilla simulate</h1>
<p>{{.Jobs}} jobs over {{num .End}} s of virtual time. Tables: <a href="queues.csv">queues.csv</a>, <a href="jobs.csv">jobs.csv</a>, <a href="queues.jsonl">queues.jsonl</a>, <a href="jobs.jsonl">jobs.jsonl</a>{{if .Tree}}, <a href="groups.csv">groups.csv</a>, <a href="groups.jsonl">groups.jsonl</a>{{end}}.</p>
{{if .Pools}}<table>
<tr><th>queue</th><th>p50 queueing delay (s)</th><th>p95 queueing delay (s)</th><th>preemptions</th><th>jobs</th><th>leased</th></tr>
{{range .Queues}}<tr><td>{{.Name}}</td><td>{{num .P50}}</td><td>{{num .P95}}</td><td>{{.Preemptions}}</td><td>{{.Jobs}}</td><td>{{.Leased}}</td></tr>
{{end}}</table>
<p>Each pool has its own cycles and shares (of its own clusters); the means are over each pool's cycles.</p>
<table>
<tr><th>queue</th><th>pool</th><th>mean share</th><th>mean fair share</th><th>mean adjusted fair share</th></tr>
{{range .Queues}}{{$q := .Name}}{{range .Pools}}<tr><td>{{$q}}</td><td>{{.Pool}}</td><td>{{num .MeanShare}}</td><td>{{num .MeanFairShare}}</td><td>{{num .MeanAdjusted}}</td></tr>
{{end}}{{end}}</table>
{{else}}<table>
<tr><th>queue</th><th>mean share</th><th>mean fair share</th><th>mean adjusted fair share</th><th>p50 queueing delay (s)</th><th>p95 queueing delay (s)</th><th>preemptions</th><th>jobs</th><th>leased</th></tr>
{{range .Queues}}<tr><td>{{.Name}}</td><td>{{num .MeanShare}}</td><td>{{num .MeanFairShare}}</td><td>{{num .MeanAdjusted}}</td><td>{{num .P50}}</td><td>{{num .P95}}</td><td>{{.Preemptions}}</td><td>{{.Jobs}}</td><td>{{.Leased}}</td></tr>
{{end}}</table>
{{end}}{{if .Groups}}<table>
<tr><th>group</th>{{if .Pools}}<th>pool</th>{{end}}<th>parent</th><th>mean share</th><th>mean fair share</th><th>mean adjusted fair share</th><th>mean usage</th></tr>
{{range .Groups}}<tr><td>{{.Name}}</td>{{if $.Pools}}<td>{{.Pool}}</td>{{end}}<td>{{.Parent}}</td><td>{{num .MeanShare}}</td><td>{{num .MeanFairShare}}</td><td>{{num .MeanAdjusted}}</td><td>{{num .MeanUsage}}</td></tr>
{{end}}</table>
{{end}}{{range .Plots}}<h2>{{.}}</h2>
<p><img src="{{.}}.svg" alt="{{.}}"> <a href="{{.}}.png">PNG</a></p>
{{end}}</body>
</html>
`))
