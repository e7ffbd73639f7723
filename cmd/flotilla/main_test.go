package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite testdata golden outputs")

func scenarios(t *testing.T, dir string) []string {
	t.Helper()
	all, err := filepath.Glob(filepath.Join(dir, "*.json"))
	require.NoError(t, err)
	var out []string
	for _, f := range all {
		if !strings.HasSuffix(f, ".expect.json") && !strings.HasSuffix(f, ".golden.json") {
			out = append(out, f)
		}
	}
	return out
}

func runCmd(args ...string) (code int, stdout, stderr string) {
	var o, e bytes.Buffer
	code = run(context.Background(), args, &o, &e)
	return code, o.String(), e.String()
}

// TestRepoScenarios holds every scenario in testdata/scenarios to its
// expected counts and its full golden JSON output.
func TestRepoScenarios(t *testing.T) {
	files := scenarios(t, "../../testdata/scenarios")
	require.NotEmpty(t, files)
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			expect := strings.TrimSuffix(f, ".json") + ".expect.json"
			code, out, errOut := runCmd("schedule", "-o", "json", "-expect", expect, f)
			require.Equal(t, 0, code, errOut)
			golden := strings.TrimSuffix(f, ".json") + ".golden.json"
			if *update {
				require.NoError(t, os.WriteFile(golden, []byte(out), 0o644))
			}
			want, err := os.ReadFile(golden)
			require.NoError(t, err, "run go test ./cmd/flotilla -update to create it")
			assert.Equal(t, string(want), out)
		})
	}
}

// TestSharedScenarios holds ../shared/scenarios to their expected counts.
func TestSharedScenarios(t *testing.T) {
	dir := "../../../shared/scenarios"
	if _, err := os.Stat(dir); err != nil {
		t.Skip("../shared is not beside the checkout")
	}
	for _, f := range scenarios(t, dir) {
		t.Run(filepath.Base(f), func(t *testing.T) {
			expect := strings.TrimSuffix(f, ".json") + ".expect.json"
			code, _, errOut := runCmd("schedule", "-o", "json", "-expect", expect, f)
			require.Equal(t, 0, code, errOut)
		})
	}
}

func TestTableOutputIsDefault(t *testing.T) {
	code, out, _ := runCmd("schedule", "../../testdata/scenarios/three-queues-one-node.json")
	require.Equal(t, 0, code)
	assert.Contains(t, out, "round 0: 32 scheduled")
	assert.Contains(t, out, "QUEUE")
}

func TestBadInput(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
		return p
	}
	cases := []struct {
		name, body, want string
	}{
		{"typo", `{"nodes": [{"name": "n", "resources": {"cpu": "1"}}], "queues": [{"name": "A"}],
			"rounds": [{"submit": [{"id": "a", "queue": "A", "cuont": 2, "requests": {"cpu": "1"}}]}]}`,
			`rounds[0].submit[0].cuont`},
		{"quantity", `{"nodes": [{"name": "n", "resources": {"cpu": "lots"}}], "queues": [{"name": "A"}], "rounds": []}`,
			`nodes[0].resources.cpu "lots"`},
		{"queue", `{"nodes": [{"name": "n", "resources": {"cpu": "1"}}], "queues": [{"name": "A"}],
			"rounds": [{"submit": [{"id": "a", "queue": "B", "requests": {"cpu": "1"}}]}]}`,
			`rounds[0].submit[0].queue "B"`},
		{"finish-not-running", `{"nodes": [{"name": "n", "resources": {"cpu": "1"}}], "queues": [{"name": "A"}],
			"rounds": [{"submit": [{"id": "a", "queue": "A", "requests": {"cpu": "2"}}]}, {"finish": ["a"]}]}`,
			`rounds[1].finish[0] "a"`},
		{"not-json", `nodes: []`, `(root)`},
		{"tree", `{"nodes": [{"name": "n", "resources": {"cpu": "4"}}], "groups": [{"name": "g", "limit": {"cpu": "1"}}],
			"queues": [{"name": "A", "parent": "g", "guaranteed": {"cpu": "2"}}], "rounds": []}`,
			`groups[0].limit.cpu "1": disagrees with another field: below the guarantee, 2`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, out, errOut := runCmd("schedule", write(c.name+".json", c.body))
			assert.Equal(t, 2, code)
			if c.name == "finish-not-running" {
				// Found while running: the rounds before it are already out.
				assert.Contains(t, out, "round 0:")
				assert.NotContains(t, out, "round 1:")
			} else {
				assert.Empty(t, out)
			}
			assert.Contains(t, errOut, c.want)
		})
	}
}

func TestUsageErrors(t *testing.T) {
	for _, args := range [][]string{{}, {"frobnicate"}, {"schedule"}, {"schedule", "-o", "xml", "f.json"}, {"schedule", "missing.json"}} {
		code, _, errOut := runCmd(args...)
		assert.Equal(t, 2, code, "%v", args)
		assert.NotEmpty(t, errOut, "%v", args)
	}
}

func TestExpectMismatchExitsOne(t *testing.T) {
	dir := t.TempDir()
	exp := filepath.Join(dir, "x.expect.json")
	require.NoError(t, os.WriteFile(exp, []byte(`{"rounds": [{"scheduled": {"A": 3}}]}`), 0o644))
	code, _, errOut := runCmd("schedule", "-expect", exp, "../../testdata/scenarios/three-queues-one-node.json")
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "rounds[0].scheduled.A: want 3, got 11")
}

func TestSubcommandHelpExitsZero(t *testing.T) {
	code, _, errOut := runCmd("schedule", "-h")
	assert.Equal(t, 0, code)
	assert.Contains(t, errOut, "-expect")
	assert.Contains(t, errOut, "FILE is a scenario file", "the help names its argument")
	code, _, errOut = runCmd("priority", "-h")
	assert.Equal(t, 0, code)
	assert.Contains(t, errOut, "-bank-tree")
}

// TestBadExpectFileIsNotCalledAScenario: a malformed expect file exits 2
// with a message that says it is the expect file that is bad, not "is not a
// valid scenario".
func TestBadExpectFileIsNotCalledAScenario(t *testing.T) {
	dir := t.TempDir()
	exp := filepath.Join(dir, "x.expect.json")
	if err := os.WriteFile(exp, []byte(`{"rounds": [], "bogus": 1}`), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := runCmd("schedule", "-expect", exp, "../../testdata/scenarios/weighted-queues.json")
	if code != 2 {
		t.Fatalf("exit %d, want 2", code)
	}
	if strings.Contains(stderr, "is not a valid scenario") {
		t.Errorf("stderr calls the expect file a scenario:\n%s", stderr)
	}
}

// testdata/scenarios/scenarios-md-example.json is SCENARIOS.md's input
// example, comments stripped, so the documented example runs as a golden
// scenario (its expected counts are reasoned in testdata/scenarios/README.md).
func TestScenariosMDExampleIsTheDocumentedOne(t *testing.T) {
	doc, err := os.ReadFile("../../../shared/SCENARIOS.md")
	if err != nil {
		t.Skip("../shared is not beside the checkout")
	}
	_, after, ok := strings.Cut(string(doc), "## Input")
	require.True(t, ok)
	_, after, ok = strings.Cut(after, "```json\n")
	require.True(t, ok)
	block, _, ok := strings.Cut(after, "```")
	require.True(t, ok)
	comment := regexp.MustCompile(`\s*//.*`)
	var documented, repo any
	require.NoError(t, json.Unmarshal([]byte(comment.ReplaceAllString(block, "")), &documented))
	data, err := os.ReadFile("../../testdata/scenarios/scenarios-md-example.json")
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &repo))
	assert.Equal(t, documented, repo)
}

// liveHeapSampler is an io.Writer that drops what it is given and, at the
// start of every tenth round of table output, collects garbage and records
// the heap still in use: what the run keeps, not what it has dropped.
type liveHeapSampler struct {
	rounds int
	peak   uint64
}

func (m *liveHeapSampler) Write(p []byte) (int, error) {
	if bytes.HasPrefix(p, []byte("round ")) {
		if m.rounds%10 == 9 {
			runtime.GC()
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			m.peak = max(m.peak, ms.HeapInuse)
		}
		m.rounds++
	}
	return len(p), nil
}

// TestScheduleStreamsRoundsInBoundedMemory: a small file that keeps many jobs
// queued over many rounds (every round lists every queued job) runs in the
// memory of one round. Keeping every round, as the command once did, holds
// jobs × rounds unschedulable entries: 50,000 × 150 × 48 bytes, 360 MB.
func TestScheduleStreamsRoundsInBoundedMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("runs 50,000 queued jobs for 150 rounds")
	}
	const jobs, rounds = 50_000, 150
	body := `{"nodes": [{"name": "n", "count": 2, "resources": {"cpu": "4"}}], "queues": [{"name": "A"}],
		"config": {"maxQueueLookback": 10},
		"rounds": [{"submit": [{"id": "j", "queue": "A", "count": ` + fmt.Sprint(jobs) + `, "requests": {"cpu": "1"}}]}` +
		strings.Repeat(`, {}`, rounds-1) + `]}`
	path := filepath.Join(t.TempDir(), "many.json")
	require.NoError(t, os.WriteFile(path, []byte(body), 0o644))
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	var sink liveHeapSampler
	var errOut bytes.Buffer
	require.Equal(t, 0, run(context.Background(), []string{"schedule", path}, &sink, &errOut), errOut.String())
	runtime.ReadMemStats(&after)
	require.Equal(t, rounds, sink.rounds)
	grew := int64(sink.peak) - int64(before.HeapInuse)
	t.Logf("live heap grew by at most %d MB over %d rounds; %d MB allocated per round",
		grew>>20, rounds, (after.TotalAlloc-before.TotalAlloc)/rounds>>20)
	// The scenario's jobs and the queue hold about 1 KB per job; one round's
	// unschedulable list is 48 bytes per job.
	assert.Less(t, grew, int64(jobs)<<10, "the runner keeps rounds it has written")
}

// Flags may follow the scenario file, as explain and the client commands
// allow; a wrong number of arguments is named.
func TestScheduleTakesFlagsAfterTheFileAndNamesExtraArguments(t *testing.T) {
	f := "../../testdata/scenarios/three-queues-one-node.json"
	before, out1, _ := runCmd("schedule", "-o", "json", f)
	after, out2, _ := runCmd("schedule", f, "-o", "json")
	assert.Equal(t, 0, before)
	assert.Equal(t, 0, after)
	assert.Equal(t, out1, out2)
	code, _, errOut := runCmd("schedule", f, "other.json")
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, `want one scenario FILE, got 2 arguments: ["`)
	code, _, errOut = runCmd("schedule", "-o", "json")
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "want a scenario FILE")
}

// -expect says when the scenario matches, not only when it differs; a
// scenario with no rounds says so.
func TestScheduleSaysWhenTheExpectationsHoldAndWhenThereAreNoRounds(t *testing.T) {
	f := "../../testdata/scenarios/tree-limit.json"
	code, _, errOut := runCmd("schedule", "-expect", "../../testdata/scenarios/tree-limit.expect.json", f)
	assert.Equal(t, 0, code, errOut)
	assert.Contains(t, errOut, "matches ../../testdata/scenarios/tree-limit.expect.json (2 rounds)")
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.json")
	require.NoError(t, os.WriteFile(empty, []byte(`{"nodes": [{"name": "n", "resources": {"cpu": "1"}}], "queues": [{"name": "A"}], "rounds": []}`), 0o644))
	code, _, errOut = runCmd("schedule", empty)
	assert.Equal(t, 0, code, errOut)
	assert.Contains(t, errOut, "has no rounds")
}

// The commands with subcommands answer -h with their usage and exit 0.
func TestCommandsWithSubcommandsAnswerHelp(t *testing.T) {
	for _, tc := range []struct{ cmd, want string }{
		{"queue", "cordon NAME"}, {"group", "-lending-limit"}, {"cluster", "uncordon NAME"},
	} {
		code, _, errOut := runCmd(tc.cmd, "-h")
		assert.Equal(t, 0, code, tc.cmd)
		assert.Contains(t, errOut, "usage: flotilla "+tc.cmd, tc.cmd)
		assert.Contains(t, errOut, tc.want, tc.cmd)
	}
}

// A command that reads a file names the page of the repository that
// describes its format in its -h text, and so does its error when the file
// is not valid.
func TestHelpTextsNameTheirFormatsPage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"submit", "-h"}, []string{"usage: flotilla submit FILE", "docs/submit-file.md"}},
		{[]string{"executor", "-h"}, []string{"docs/nodes-file.md"}},
		{[]string{"serve", "-h"}, []string{"docs/serve-config.md", "docs/auth-file.md"}},
		{[]string{"queue", "create", "-h"}, []string{"docs/operator-commands.md"}},
		{[]string{"schedule", "-h"}, []string{"docs/scenarios.md"}},
		{[]string{"simulate", "-h"}, []string{"sim/doc.go", "docs/scenarios.md"}},
		{[]string{"help"}, []string{"docs/http-api.md", "docs/kubernetes.md"}},
		{[]string{"version", "-h"}, []string{"usage: flotilla version", "docs/operator-commands.md"}},
	} {
		code, out, errOut := runCmd(tc.args...)
		assert.Equal(t, 0, code, "%v: %s", tc.args, errOut)
		for _, w := range tc.want {
			assert.Contains(t, out+errOut, w, "%v", tc.args)
		}
	}
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.json")
	require.NoError(t, os.WriteFile(bad, []byte(`{"nope": 1}`), 0o644))
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"executor", "-cluster", "c", "-nodes", bad}, "is not a valid nodes file (docs/nodes-file.md)"},
		{[]string{"serve", "-config", bad}, "is not a valid configuration (docs/serve-config.md)"},
		{[]string{"serve", "-auth", bad}, "is not a valid auth file (docs/auth-file.md)"},
		{[]string{"schedule", bad}, "is not a valid scenario (docs/scenarios.md)"},
	} {
		code, _, errOut := runCmd(tc.args...)
		assert.Equal(t, 2, code, "%v: %s", tc.args, errOut)
		assert.Contains(t, errOut, tc.want, "%v", tc.args)
	}
}
