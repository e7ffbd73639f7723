package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const priorityDir = "../../testdata/priority"

// TestPriorityGolden prints the breakdown table of testdata/priority's jobs
// (as JSON lines and as an array, which must agree) and holds it to the
// golden files; -update rewrites them.
func TestPriorityGolden(t *testing.T) {
	p := func(name string) string { return filepath.Join(priorityDir, name) }
	cases := []struct {
		name, jobs, golden string
		extra              []string
	}{
		{"json lines", "jobs.jsonl", "jobs.golden.txt", nil},
		{"array", "jobs.json", "jobs.golden.txt", nil},
		{"new associations", "jobs.json", "jobs-new.golden.txt", []string{"-recompute=false"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"priority", "-bank-tree", p("bank-tree.json"), "-weights", p("weights.json"), "-jobs", p(tc.jobs)}, tc.extra...)
			code, out, errOut := runCmd(args...)
			require.Equal(t, 0, code, errOut)
			require.Empty(t, errOut)
			if *update && tc.name != "array" {
				require.NoError(t, os.WriteFile(p(tc.golden), []byte(out), 0o644))
			}
			want, err := os.ReadFile(p(tc.golden))
			require.NoError(t, err, "run go test ./cmd/flotilla -update to create it")
			assert.Equal(t, string(want), out)
		})
	}
}

// TestPriorityDefaultWeights: without -weights the bank factor weighs 0,
// and a fresh association's job at urgency 16 gets 0.5 × 100000 + queue.
func TestPriorityDefaultWeights(t *testing.T) {
	dir := t.TempDir()
	jobs := filepath.Join(dir, "jobs.jsonl")
	require.NoError(t, os.WriteFile(jobs, []byte(`{"id": "j", "user": "user4", "queue": "bronze"}`+"\n"), 0o644))
	code, out, errOut := runCmd("priority", "-bank-tree", filepath.Join(priorityDir, "bank-tree.json"), "-recompute=false", "-jobs", jobs)
	require.Equal(t, 0, code, errOut)
	assert.Regexp(t, `(?m)^j +user4 +B +100\.0 +0 +bronze +1 +10000 +0\.5 +100000 +16 +1000 +60000 *$`, out)
}

func TestPriorityBadInput(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
		return p
	}
	tree := filepath.Join(priorityDir, "bank-tree.json")
	goodJobs := filepath.Join(priorityDir, "jobs.jsonl")
	cases := []struct {
		name          string
		tree, weights string
		jobs          string
		want          []string
	}{
		{"unknown key", tree, "", `{"id": "a", "user": "user1", "urgncy": 3}`, []string{`jobs[0].urgncy "urgncy"`, `unknown field; did you mean "urgency"?`}},
		{"urgency out of range", tree, "", `{"id": "a", "user": "user1", "urgency": 40}`, []string{`jobs[0].urgency "40"`, "out of range"}},
		{"urgency not an integer", tree, "", `{"id": "a", "user": "user1", "urgency": 1.5}`, []string{`jobs[0].urgency "1.5"`}},
		{"urgency a string", tree, "", `[{"id": "a", "user": "user1", "urgency": "high"}]`, []string{`jobs[0].urgency "high"`}},
		{"user a number", tree, "", `{"id": "a", "user": 7}`, []string{`jobs[0].user "7"`, "want a string"}},
		{"missing user and id", tree, "", "{\"id\": \"a\", \"user\": \"user1\"}\n{}", []string{`jobs[1].user ""`, `jobs[1].id ""`, "line 2"}},
		{"key twice", tree, "", `{"id": "a", "id": "b", "user": "user1"}`, []string{`jobs[0].id "id"`, "twice"}},
		{"duplicate id", tree, "", "{\"id\": \"a\", \"user\": \"user1\"}\n{\"id\": \"a\", \"user\": \"user3\"}", []string{`jobs[1].id "a"`, "also jobs[0]"}},
		{"unknown user", tree, "", `{"id": "a", "user": "nobody"}`, []string{`jobs[0].user "nobody"`}},
		{"unknown association", tree, "", `{"id": "a", "user": "user1", "bank": "C"}`, []string{`jobs[0].bank "C"`}},
		{"syntax error on a line", tree, "", "{\"id\": \"a\", \"user\": \"user1\"}\n{\"id\": \"b\",", []string{`jobs[1]`, "line 2"}},
		{"not objects", tree, "", `[1, 2]`, []string{`jobs[0] "1"`, `jobs[1] "2"`}},
		{"broken array", tree, "", `[{"id": "a"`, []string{`jobs ""`}},
		{"empty", tree, "", "\n\n", []string{`jobs ""`, "no jobs"}},
		{"bad bank tree", "", "", "", []string{`banks[0].parent "Z"`}},
		{"bad weights", tree, `{"bank": -1}`, "", []string{`weights.bank "-1"`}},
		{"unknown weight", tree, `{"bonk": 1}`, "", []string{`"bonk"`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			treePath := tc.tree
			if treePath == "" {
				treePath = write("tree.json", `{"banks": [{"name": "A", "parent": "Z"}], "associations": []}`)
			}
			jobs := goodJobs
			if tc.jobs != "" {
				jobs = write("jobs", tc.jobs)
			}
			args := []string{"priority", "-bank-tree", treePath, "-jobs", jobs}
			if tc.weights != "" {
				args = append(args, "-weights", write("weights.json", tc.weights))
			}
			code, out, errOut := runCmd(args...)
			assert.Equal(t, 2, code)
			assert.Empty(t, out)
			for _, w := range tc.want {
				assert.Contains(t, errOut, w)
			}
		})
	}
}

func TestPriorityUsageErrors(t *testing.T) {
	tree := filepath.Join(priorityDir, "bank-tree.json")
	for _, args := range [][]string{
		{"priority"},
		{"priority", "-bank-tree", tree},
		{"priority", "-jobs", filepath.Join(priorityDir, "jobs.json")},
		{"priority", "-bank-tree", tree, "-jobs", "missing.json"},
		{"priority", "-bank-tree", tree, "-jobs", filepath.Join(priorityDir, "jobs.json"), "extra"},
		{"priority", "-frobnicate"},
	} {
		code, out, errOut := runCmd(args...)
		assert.Equal(t, 2, code, "%v", args)
		assert.Empty(t, out, "%v", args)
		assert.NotEmpty(t, errOut, "%v", args)
	}
	code, out, _ := runCmd("help")
	assert.Equal(t, 0, code)
	assert.Contains(t, out, "flotilla priority -bank-tree FILE")
}

// TestPriorityPrintsFluxBondsExample: with the seed's tree and weights
// (bank A priority 100 weighing 1000, queue bronze priority 1), `flotilla
// priority` exits 0 and prints flux-accounting's 160000 for bonds's job.
func TestPriorityPrintsFluxBondsExample(t *testing.T) {
	dir := t.TempDir()
	write := func(name, s string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	tree := write("t.json", `{"banks": [{"name": "A", "priority": 100}], "associations": [{"user": "bonds", "bank": "A"}], "queues": [{"name": "bronze", "priority": 1}]}`)
	w := write("w.json", `{"bank": 1000}`)
	jobs := write("j.json", `[{"id": "fnYtwBV", "user": "bonds", "bank": "A", "queue": "bronze"}]`)
	code, out, stderr := runCmd("priority", "-bank-tree", tree, "-weights", w, "-jobs", jobs, "-recompute=false")
	if code != 0 || !strings.Contains(out, "160000") {
		t.Errorf("exit %d, out:\n%s\nstderr:\n%s", code, out, stderr)
	}
}
