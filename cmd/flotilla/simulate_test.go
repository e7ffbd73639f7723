package main

import (
	"bytes"
	"encoding/xml"
	"errors"
	"image/png"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flotilla-sched/flotilla/sim"
)

const simData = "testdata/simulate"

// simulateSmall runs the small simulation into a new directory, with
// extra flags, and returns the directory.
func simulateSmall(t *testing.T, extra ...string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "out")
	args := append([]string{"simulate", "-cluster", filepath.Join(simData, "small.clusters.json"),
		"-workload", filepath.Join(simData, "small.workload.json"), "-o", dir}, extra...)
	code, _, stderr := runCmd(args...)
	require.Equal(t, 0, code, stderr)
	return dir
}

// svgTexts parses an SVG document as XML and returns its text elements'
// contents.
func svgTexts(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	d := xml.NewDecoder(f)
	var texts []string
	var inText bool
	sawSVG := false
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err, "%s is not XML", path)
		switch tok := tok.(type) {
		case xml.StartElement:
			sawSVG = sawSVG || tok.Name.Local == "svg"
			inText = tok.Name.Local == "text"
		case xml.CharData:
			if inText {
				texts = append(texts, strings.TrimSpace(string(tok)))
			}
		case xml.EndElement:
			inText = false
		}
	}
	require.True(t, sawSVG, "%s has no svg element", path)
	return texts
}

func TestSimulateWritesTablesPlotsAndIndex(t *testing.T) {
	dir := simulateSmall(t)
	for _, name := range []string{"queues.csv", "jobs.csv", "queues.jsonl", "jobs.jsonl", "index.html"} {
		info, err := os.Stat(filepath.Join(dir, name))
		require.NoError(t, err)
		assert.NotZero(t, info.Size(), name)
	}
	for _, name := range plotNames() {
		f, err := os.Open(filepath.Join(dir, name+".png"))
		require.NoError(t, err)
		img, err := png.Decode(f)
		f.Close()
		require.NoError(t, err, "%s.png", name)
		assert.Positive(t, img.Bounds().Dx(), name)
		svgTexts(t, filepath.Join(dir, name+".svg"))
	}
}

func TestSimulatePlotsHaveOneSeriesPerQueue(t *testing.T) {
	dir := simulateSmall(t)
	count := func(texts []string, s string) int {
		n := 0
		for _, x := range texts {
			if x == s {
				n++
			}
		}
		return n
	}
	share := svgTexts(t, filepath.Join(dir, "share.svg"))
	for _, q := range []string{"A", "B"} {
		assert.Equal(t, 1, count(share, q+" share"), "share.svg legend %q in %q", q+" share", share)
		assert.Equal(t, 1, count(share, q+" fair share"), "share.svg legend %q", q+" fair share")
	}
	for _, name := range []string{"delay", "preemptions"} {
		texts := svgTexts(t, filepath.Join(dir, name+".svg"))
		for _, q := range []string{"A", "B"} {
			assert.Equal(t, 1, count(texts, q), "%s.svg legend %q in %q", name, q, texts)
		}
	}
	util := svgTexts(t, filepath.Join(dir, "utilisation.svg"))
	for _, r := range []string{"cpu", "memory"} {
		assert.Equal(t, 1, count(util, r), "utilisation.svg legend %q in %q", r, util)
	}
}

func TestSimulateIndexNamesEveryQueueAndPlot(t *testing.T) {
	dir := simulateSmall(t)
	html, err := os.ReadFile(filepath.Join(dir, "index.html"))
	require.NoError(t, err)
	for _, q := range []string{"A", "B"} {
		assert.Regexp(t, regexp.MustCompile(`<tr><td>`+q+`</td>(<td>[^<]*</td>){8}</tr>`), string(html))
	}
	for _, name := range plotNames() {
		assert.Contains(t, string(html), `src="`+name+`.svg"`)
	}
}

func TestSimulateIsDeterministicForASeed(t *testing.T) {
	a, b := simulateSmall(t, "-seed", "11"), simulateSmall(t, "-seed", "11")
	other := simulateSmall(t, "-seed", "12")
	for _, name := range []string{"queues.csv", "jobs.csv", "index.html", "share.svg", "delay.png"} {
		x, err := os.ReadFile(filepath.Join(a, name))
		require.NoError(t, err)
		y, err := os.ReadFile(filepath.Join(b, name))
		require.NoError(t, err)
		assert.True(t, bytes.Equal(x, y), "%s differs between two runs of one seed", name)
	}
	// The seed is used: the Poisson arrivals of template b move with it.
	x, err := os.ReadFile(filepath.Join(a, "jobs.csv"))
	require.NoError(t, err)
	y, err := os.ReadFile(filepath.Join(other, "jobs.csv"))
	require.NoError(t, err)
	assert.NotEqual(t, string(x), string(y), "-seed 12 gave seed 11's jobs")
}

func TestSimulateConfigPriorityClassesReachTheSimulation(t *testing.T) {
	// fpga.config.json defines the workload's priority classes (urgent,
	// batch), which the default configuration lacks.
	dir := filepath.Join(t.TempDir(), "out")
	code, _, stderr := runCmd("simulate", "-cluster", filepath.Join(simData, "fpga.clusters.json"),
		"-workload", filepath.Join(simData, "fpga.workload.json"),
		"-config", filepath.Join(simData, "fpga.config.json"), "-o", dir)
	require.Equal(t, 0, code, stderr)
	jobs, err := os.ReadFile(filepath.Join(dir, "jobs.csv"))
	require.NoError(t, err)
	assert.Equal(t, 7, strings.Count(string(jobs), ",succeeded,"), "%s", jobs)
}

func TestSimulateConfigReadsQuantitiesInTheClustersUnits(t *testing.T) {
	// example.com/fpga is a resource of the cluster file only: its
	// indexed resolution "2" is two whole fpgas, not 2000 milli-units as it
	// would be against serve's default resources.
	var stderr bytes.Buffer
	cfg, code := simConfig(filepath.Join(simData, "fpga.clusters.json"), filepath.Join(simData, "fpga.workload.json"),
		filepath.Join(simData, "fpga.config.json"), "", &stderr)
	require.Equal(t, 0, code, stderr.String())
	require.NotNil(t, cfg.Scheduler)
	require.NotEmpty(t, cfg.Scheduler.IndexedResources)
	assert.Equal(t, "example.com/fpga", cfg.Scheduler.IndexedResources[0].Name)
	assert.Equal(t, int64(2), cfg.Scheduler.IndexedResources[0].Resolution)
	assert.True(t, cfg.RequeuePreempted, "config.requeuePreempted")
}

func TestSimulateBadInputExitsTwoNamingFieldAndValue(t *testing.T) {
	tmp := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(tmp, name)
		require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
		return p
	}
	cl := filepath.Join(simData, "small.clusters.json")
	wl := filepath.Join(simData, "small.workload.json")
	badCl := write("bad.clusters.json", `{"clusters":[{"name":"c","nodes":[{"name":"n","count":-2,"resources":{"cpu":"x"}}]}]}`)
	badWl := write("bad.workload.json", `{"queues":[{"name":"A","weight":-1}],"jobTemplates":[{"id":"a","queue":"Z","count":1,"requests":{"cpu":"1"}}]}`)
	resCfg := write("res.config.json", `{"config":{},"resources":["cpu"]}`)
	badCfg := write("bad.config.json", `{"config":{"defaultPriorityClass":"nope"}}`)
	fpgaCfg := filepath.Join(simData, "fpga.config.json")
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"cluster file", []string{"-cluster", badCl, "-workload", wl}, []string{
			`clusters[0].nodes[0].count "-2"`, `clusters[0].nodes[0].resources.cpu "x"`}},
		{"workload file", []string{"-cluster", cl, "-workload", badWl}, []string{
			`queues[0].weight "-1"`, `jobTemplates[0].queue "Z"`}},
		{"seed", []string{"-cluster", cl, "-workload", wl, "-seed", "x"}, []string{`seed "x"`}},
		{"config resources", []string{"-cluster", cl, "-workload", wl, "-config", resCfg}, []string{`resources "cpu"`}},
		{"config", []string{"-cluster", cl, "-workload", wl, "-config", badCfg}, []string{`"nope"`}},
		{"class the config lacks", []string{"-cluster", cl, "-workload", wl, "-config", fpgaCfg}, []string{
			`workload.jobTemplates[1].priorityClass "armada-preemptible"`}},
		{"missing file", []string{"-cluster", filepath.Join(tmp, "absent.json"), "-workload", wl}, []string{"absent.json"}},
		{"missing flag", []string{"-cluster", cl}, []string{"usage: flotilla simulate"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(tmp, "out-"+strings.ReplaceAll(tc.name, " ", "-"))
			args := append([]string{"simulate", "-o", dir}, tc.args...)
			code, _, stderr := runCmd(args...)
			assert.Equal(t, 2, code, stderr)
			for _, w := range tc.want {
				assert.Contains(t, stderr, w)
			}
			_, err := os.Stat(dir)
			assert.True(t, os.IsNotExist(err), "bad input wrote %s", dir)
		})
	}
}

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

func TestProgressLineStartsAfterTwoSecondsAndIsThrottled(t *testing.T) {
	var buf bytes.Buffer
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	now := t0
	l := newProgressLine(&buf, func() time.Time { return now })
	p := sim.Progress{Now: time.Minute, End: 4 * time.Minute, Cycles: 6, Jobs: 10, Submitted: 4, Ended: 2}
	for _, step := range []struct {
		at    time.Duration
		lines int
	}{{0, 0}, {time.Second, 0}, {2 * time.Second, 1}, {2*time.Second + 100*time.Millisecond, 1}, {2*time.Second + 300*time.Millisecond, 2}} {
		now = t0.Add(step.at)
		l.update(p)
		assert.Equal(t, step.lines, strings.Count(buf.String(), "\r"), "at %s", step.at)
	}
	assert.Contains(t, buf.String(), "virtual 1m0s ( 25%), cycle 6, 4/10 jobs submitted, 2 ended")
	l.finish()
	assert.True(t, strings.HasSuffix(buf.String(), "\n"))

	var quiet bytes.Buffer
	q := newProgressLine(&quiet, func() time.Time { return t0 })
	q.update(p)
	q.finish()
	assert.Empty(t, quiet.String(), "a run under two seconds prints nothing")
}
