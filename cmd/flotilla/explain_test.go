package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flotilla-sched/flotilla/explain"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const sharedScenarios = "../../../shared/scenarios"

// explainCases are the golden explanations: one job of each kind, in the
// repository's scenarios and the shared ones.
var explainCases = []struct {
	name, scenario, round, job string
}{
	{"scheduled", "../../testdata/scenarios/three-queues-one-node.json", "0", "a-0"},
	{"never-fits", "../../testdata/scenarios/large-job-does-not-block.json", "0", "huge"},
	{"no-room-selector", "../../testdata/scenarios/selectors-and-taints.json", "0", "etl-16"},
	{"no-room-same-as", "../../testdata/scenarios/three-queues-protected-zero.json", "1", "b-17"},
	{"no-room-same-as-other-queue", "../../testdata/scenarios/three-queues-one-node.json", "0", "a-11"},
	{"gang-member-fails", "../../testdata/scenarios/gang-33-on-half-full-nodes.json", "1", "g-5"},
	{"gang-scheduled", "../../testdata/scenarios/gang-uniformity-label.json", "1", "g-2"},
	{"preempted-fair-share", "../../testdata/scenarios/seed-preemption-to-fair-share.json", "1", "a-32"},
	{"preempted-urgency", sharedScenarios + "/seed-urgency-allocatable.json", "2", "preemptible-20"},
	{"running", "../../testdata/scenarios/three-queues-protected-zero.json", "3", "a-0"},
	{"gone-after-preemption", "../../testdata/scenarios/three-queues-protected-zero.json", "3", "a-20"},
	{"not-submitted", "../../testdata/scenarios/three-queues-protected-zero.json", "1", "c-0"},
	{"per-job-priority", "../../testdata/scenarios/per-job-priority.json", "0", "p20"},
	{"gang-topology-scheduled", "../../testdata/scenarios/gang-topology-preferred-fallback.json", "1", "block-4"},
	{"gang-topology-no-rack", "../../testdata/scenarios/gang-topology-preferred-fallback.json", "3", "late-0"},
	{"limit-too-few-lower-priority", "../../testdata/scenarios/tree-limit-urgency.json", "1", "too-big"},
	{"preempted-urgency-under-limit", "../../testdata/scenarios/tree-limit-urgency.json", "1", "soft-1"},
}

// TestExplainGolden holds `flotilla explain` to its golden text and JSON
// outputs (testdata/explain/NAME.txt and NAME.json; -update rewrites them).
func TestExplainGolden(t *testing.T) {
	for _, c := range explainCases {
		t.Run(c.name, func(t *testing.T) {
			if _, err := os.Stat(c.scenario); err != nil && strings.HasPrefix(c.scenario, sharedScenarios) {
				t.Skip("../shared is not beside the checkout")
			}
			for _, format := range []string{"text", "json"} {
				code, out, errOut := runCmd("explain", "-scenario", c.scenario, "-round", c.round, "-o", format, c.job)
				require.Equal(t, 0, code, errOut)
				ext := map[string]string{"text": ".txt", "json": ".json"}[format]
				golden := filepath.Join("testdata", "explain", c.name+ext)
				if *update {
					require.NoError(t, os.MkdirAll(filepath.Dir(golden), 0o755))
					require.NoError(t, os.WriteFile(golden, []byte(out), 0o644))
				}
				want, err := os.ReadFile(golden)
				require.NoError(t, err, "run go test ./cmd/flotilla -run TestExplainGolden -update to create it")
				assert.Equal(t, string(want), out, format)
			}
		})
	}
}

// scheduleRounds is `flotilla schedule -o json`'s output, the parts explain
// must agree with.
type scheduleRounds struct {
	Rounds []struct {
		Scheduled []struct{ Job, Node string } `json:"scheduled"`
		Preempted []struct {
			Job, Node, Reason, For string
		} `json:"preempted"`
		Unschedulable []struct{ Job, Reason string } `json:"unschedulable"`
		Queues        []struct {
			Name                                string
			Share, FairShare, AdjustedFairShare float64
		} `json:"queues"`
	} `json:"rounds"`
}

// TestExplainAgreesWithSchedule: for every repository scenario and round,
// the first jobs `flotilla schedule` lists as scheduled, preempted and
// unschedulable are explained in that state, with the same node, reason
// and the job the preemption was for, and their queue's shares.
func TestExplainAgreesWithSchedule(t *testing.T) {
	for _, f := range scenarios(t, "../../testdata/scenarios") {
		t.Run(filepath.Base(f), func(t *testing.T) {
			code, out, errOut := runCmd("schedule", "-o", "json", f)
			require.Equal(t, 0, code, errOut)
			var sched scheduleRounds
			require.NoError(t, json.Unmarshal([]byte(out), &sched))
			explain := func(round int, job string) explain.Explanation {
				code, out, errOut := runCmd("explain", "-scenario", f, "-round", fmt.Sprint(round), "-o", "json", job)
				require.Equal(t, 0, code, errOut)
				var ex explain.Explanation
				require.NoError(t, json.Unmarshal([]byte(out), &ex))
				for _, q := range sched.Rounds[round].Queues {
					if q.Name == ex.Queue {
						assert.Equal(t, []float64{q.Share, q.FairShare, q.AdjustedFairShare},
							[]float64{ex.QueueShare.Share, ex.QueueShare.FairShare, ex.QueueShare.AdjustedFairShare}, "round %d job %s", round, job)
					}
				}
				return ex
			}
			const perList = 2
			for ri, r := range sched.Rounds {
				for _, s := range r.Scheduled[:min(perList, len(r.Scheduled))] {
					ex := explain(ri, s.Job)
					if assert.Equal(t, "scheduled", ex.State, "round %d job %s", ri, s.Job) {
						assert.Equal(t, s.Node, ex.Scheduled.Node)
					}
				}
				for _, p := range r.Preempted[:min(perList, len(r.Preempted))] {
					ex := explain(ri, p.Job)
					if assert.Equal(t, "preempted", ex.State, "round %d job %s", ri, p.Job) {
						assert.Equal(t, []string{p.Node, p.Reason, p.For}, []string{ex.Preempted.Node, ex.Preempted.Reason, ex.Preempted.For})
					}
				}
				for _, u := range r.Unschedulable[:min(perList, len(r.Unschedulable))] {
					ex := explain(ri, u.Job)
					require.NotNil(t, ex.Unscheduled, "round %d job %s", ri, u.Job)
					got := strings.TrimPrefix(ex.Summary, "not scheduled: ")
					if c := ex.Unscheduled.Code; c == "limit" || c == "lending limit" {
						// The summary spells out the queue tree's level and
						// numbers; the reason is the code and the node.
						got = c + ": " + ex.Unscheduled.Message
						assert.Contains(t, ex.Summary, ex.Unscheduled.Message, "round %d job %s", ri, u.Job)
					}
					assert.Equal(t, u.Reason, got, "round %d job %s", ri, u.Job)
				}
			}
		})
	}
}

// writeScenario writes body to a temporary scenario file.
func writeScenario(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "s.json")
	require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
	return p
}

// A job the round did not reach is explained by its queue's reason
// (here the lookback) and its place in the queue.
func TestExplainJobNotReachedGivesItsQueuesReasonAndPlace(t *testing.T) {
	p := writeScenario(t, `{"nodes": [{"name": "n", "resources": {"cpu": "4"}}], "queues": [{"name": "A"}],
		"config": {"maxQueueLookback": 10},
		"rounds": [{"submit": [{"id": "j", "queue": "A", "count": 30, "requests": {"cpu": "1"}}]}]}`)
	code, out, errOut := runCmd("explain", "-scenario", p, "-round", "0", "-o", "json", "j-20")
	require.Equal(t, 0, code, errOut)
	var ex explain.Explanation
	require.NoError(t, json.Unmarshal([]byte(out), &ex))
	assert.Equal(t, "not-examined", ex.State)
	require.NotNil(t, ex.Unscheduled)
	assert.Equal(t, "lookback", ex.Unscheduled.Code)
	require.NotNil(t, ex.Place)
	assert.Equal(t, explain.Place{Position: 21, Queued: 30, Ahead: 20, AheadRequests: map[string]string{"cpu": "20"}}, *ex.Place)
}

// explain runs the scenario only as far as the round it explains: a
// problem found while running a later round does not stop it.
func TestExplainStopsAtItsRound(t *testing.T) {
	p := writeScenario(t, `{"nodes": [{"name": "n", "resources": {"cpu": "1"}}], "queues": [{"name": "A"}],
		"rounds": [{"submit": [{"id": "a", "queue": "A", "requests": {"cpu": "2"}}]}, {"finish": ["a"]}]}`)
	code, out, errOut := runCmd("explain", "-scenario", p, "-round", "0", "a")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "never-fits")
	code, _, errOut = runCmd("explain", "-scenario", p, "-round", "1", "a")
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, `rounds[1].finish[0] "a"`)
}

// Bad arguments exit 2: an unknown job and a round out of range are both
// reported, each naming its field and value; a bad scenario names its
// field; usage errors say what is wanted.
func TestExplainBadInputExitsTwoNamingTheField(t *testing.T) {
	good := "../../testdata/scenarios/three-queues-one-node.json"
	bad := writeScenario(t, `{"nodes": [{"name": "n", "resources": {"cpu": "lots"}}], "queues": [{"name": "A"}], "rounds": []}`)
	for _, c := range []struct {
		name string
		args []string
		want []string
	}{
		{"unknown job and round", []string{"-scenario", good, "-round", "7", "nope"}, []string{`round "7": is out of range`, `job "nope": names nothing known`}},
		{"negative round", []string{"-scenario", good, "-round", "-1", "a-0"}, []string{`round "-1"`}},
		{"bad scenario", []string{"-scenario", bad, "-round", "0", "x"}, []string{`nodes[0].resources.cpu "lots"`}},
		{"missing file", []string{"-scenario", "missing.json", "-round", "0", "x"}, []string{"missing.json"}},
		{"no round", []string{"-scenario", good, "a-0"}, []string{"want -scenario FILE -round N and one job id"}},
		{"no scenario", []string{"-round", "0", "a-0"}, []string{"want -scenario FILE -round N and one job id"}},
		{"no job", []string{"-scenario", good, "-round", "0"}, []string{"one job id"}},
		{"two jobs", []string{"-scenario", good, "-round", "0", "a-0", "a-1"}, []string{"one job id"}},
		{"bad format", []string{"-scenario", good, "-round", "0", "-o", "xml", "a-0"}, []string{`-o "xml": want text or json`}},
		{"bad flag", []string{"-scenario", good, "-round", "zero", "a-0"}, []string{"-round"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, out, errOut := runCmd(append([]string{"explain"}, c.args...)...)
			assert.Equal(t, 2, code)
			assert.Empty(t, out)
			for _, w := range c.want {
				assert.Contains(t, errOut, w)
			}
		})
	}
}

// The job id may come before the flags, and -h documents the JSON fields.
func TestExplainArgumentsInAnyOrderAndHelp(t *testing.T) {
	code, out, errOut := runCmd("explain", "a-0", "-round", "0", "-scenario", "../../testdata/scenarios/three-queues-one-node.json")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "job a-0, round 0: scheduled")
	code, _, errOut = runCmd("explain", "-h")
	assert.Equal(t, 0, code)
	for _, field := range []string{"queueShare", "nodeGroups", "gangMember", "forQueue", "aheadRequests"} {
		assert.Contains(t, errOut, field)
	}
}

// The README's example outputs of explain are the golden ones, so they
// stay what the command prints.
func TestREADMEExplainExamplesAreTheGoldenOutputs(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	require.NoError(t, err)
	for _, c := range []struct{ cmd, golden string }{
		{"$ flotilla explain -scenario testdata/scenarios/selectors-and-taints.json -round 0 etl-16\n", "no-room-selector.txt"},
		{"$ flotilla explain -scenario testdata/scenarios/seed-preemption-to-fair-share.json -round 1 a-32\n", "preempted-fair-share.txt"},
	} {
		out, err := os.ReadFile(filepath.Join("testdata", "explain", c.golden))
		require.NoError(t, err)
		assert.Contains(t, string(readme), c.cmd+string(out), "README's example of %s", c.golden)
	}
}
