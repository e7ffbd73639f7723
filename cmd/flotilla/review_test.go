package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A malformed expect file is reported as "is not a valid scenario", naming
// the expect file: the message should say it is the expect file that is
// bad, not call it a scenario.
func TestReviewBadExpectFileIsNotCalledAScenario(t *testing.T) {
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

// The README: exit code 2 for bad input; `flotilla priority` with the
// README's files must print flux's 160000 example when the tree and
// weights are the seed's.
func TestReviewPriorityFlux160000(t *testing.T) {
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
