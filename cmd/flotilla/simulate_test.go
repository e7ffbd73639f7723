package main

import (
	"bytes"
	"encoding/xml"
	"errors"
	"image/png"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/flotilla-sched/flotilla/cmd/flotilla/internal/simreport"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
	for _, name := range simreport.PlotNames() {
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
	for _, name := range simreport.PlotNames() {
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

// TestSimulateTreeWritesGroupTablesPlotAndIndex: a workload with a queue
// tree and usage memory gets groups.csv and groups.jsonl, queue tables
// with parent and usage, the groups plot with a share, fair share and
// usage line per group, and a row per group in index.html.
func TestSimulateTreeWritesGroupTablesPlotAndIndex(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	code, _, stderr := runCmd("simulate", "-cluster", filepath.Join(simData, "small.clusters.json"),
		"-workload", filepath.Join(simData, "tree.workload.json"), "-o", dir)
	require.Equal(t, 0, code, stderr)
	groups, err := os.ReadFile(filepath.Join(dir, "groups.csv"))
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(string(groups)), "\n")
	require.Equal(t, "time,cycle,group,parent,share,fairShare,adjustedFairShare,usage,demand,running,queued,allocated.cpu,allocated.memory", lines[0])
	require.Equal(t, []string{"0,0,ops,org,", "0,0,org,,", "0,0,research,org,"}, []string{lines[1][:12], lines[2][:9], lines[3][:17]}, "groups by name")
	queues, err := os.ReadFile(filepath.Join(dir, "queues.csv"))
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(string(queues), "time,cycle,queue,parent,share,fairShare,adjustedFairShare,usage,"), "%.120s", queues)
	_, err = os.Stat(filepath.Join(dir, "groups.jsonl"))
	require.NoError(t, err)

	f, err := os.Open(filepath.Join(dir, simreport.GroupPlot+".png"))
	require.NoError(t, err)
	_, err = png.Decode(f)
	f.Close()
	require.NoError(t, err)
	texts := svgTexts(t, filepath.Join(dir, simreport.GroupPlot+".svg"))
	for _, g := range []string{"org", "research", "ops"} {
		for _, line := range []string{" share", " fair share", " usage"} {
			n := 0
			for _, x := range texts {
				if x == g+line {
					n++
				}
			}
			assert.Equal(t, 1, n, "groups.svg legend %q in %q", g+line, texts)
		}
	}
	html, err := os.ReadFile(filepath.Join(dir, "index.html"))
	require.NoError(t, err)
	assert.Contains(t, string(html), `src="groups.svg"`)
	assert.Contains(t, string(html), `href="groups.csv"`)
	for _, g := range []string{"org", "research", "ops"} {
		assert.Regexp(t, regexp.MustCompile(`<tr><td>`+g+`</td>(<td>[^<]*</td>){5}</tr>`), string(html))
	}
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
	treeWl := filepath.Join(simData, "tree.workload.json")
	badTree := write("badtree.workload.json", `{"groups":[{"name":"g","parent":"nowhere","guaranteed":{"cpu":"4"},"limit":{"cpu":"2"}}],
		"queues":[{"name":"A","parent":"g","weight":1e300}],"jobTemplates":[{"id":"a","queue":"A","count":1,"requests":{"cpu":"1"}}]}`)
	usageCfg := write("usage.config.json", `{"config":{"usageHalfLife":"1h"}}`)
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
		{"queue tree", []string{"-cluster", cl, "-workload", badTree}, []string{
			`groups[0].parent "nowhere"`, `groups[0].limit.cpu "2"`, `queues[0].weight "1e+300"`}},
		{"usage half-life set twice", []string{"-cluster", cl, "-workload", treeWl, "-config", usageCfg}, []string{
			`workload.usageHalfLife "2m"`}},
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

// A sim workload's pools and gang topologies, with the config file's
// topologies: every job runs and index.html has each queue's shares per
// pool (train in both pools, serve where it ran).
func TestSimulatePoolsAndGangTopologyReachTheSimulationAndTheIndexSeparatesPools(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	code, _, stderr := runCmd("simulate", "-cluster", filepath.Join(simData, "pools.clusters.json"),
		"-workload", filepath.Join(simData, "pools.workload.json"),
		"-config", filepath.Join(simData, "pools.config.json"), "-o", dir)
	require.Equal(t, 0, code, stderr)
	jobs, err := os.ReadFile(filepath.Join(dir, "jobs.csv"))
	require.NoError(t, err)
	assert.Equal(t, 18, strings.Count(string(jobs), ",succeeded,"), "%s", jobs)
	index, err := os.ReadFile(filepath.Join(dir, "index.html"))
	require.NoError(t, err)
	for _, row := range []string{"<tr><td>train</td><td>a100</td>", "<tr><td>train</td><td>h100</td>"} {
		assert.Contains(t, string(index), row)
	}
	assert.Contains(t, strings.Join(svgTexts(t, filepath.Join(dir, "share.svg")), "\n"), "train (pool h100) share")

	// Without the config's topologies the gangs' topology names none.
	code, _, stderr = runCmd("simulate", "-cluster", filepath.Join(simData, "pools.clusters.json"),
		"-workload", filepath.Join(simData, "pools.workload.json"), "-o", filepath.Join(t.TempDir(), "out"))
	require.Equal(t, 2, code, stderr)
	assert.Contains(t, stderr, "jobTemplates[0].gang.topology")
}
