package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/flotilla-sched/flotilla/explain"
)

// FuzzExplainArgs: whatever the arguments after `flotilla explain -scenario
// FILE`, the command never panics and exits 0 with an explain.Explanation of the
// job asked for, or 2 with a message on stderr and nothing on stdout.
func FuzzExplainArgs(f *testing.F) {
	const file = "../../testdata/scenarios/three-queues-protected-zero.json"
	f.Add("-round 1 -o json b-17")
	f.Add("a-0 -round 3")
	f.Add("-round 99 nope")
	f.Add("-round -1 -o xml a-0")
	f.Add("-round=2 -o=json c-9 extra")
	f.Add("-round 0 --")
	f.Add("-h")
	f.Fuzz(func(t *testing.T, line string) {
		args := append([]string{"explain", "-scenario", file}, strings.Fields(line)...)
		code, out, errOut := runCmd(args...)
		switch code {
		case 0:
			if strings.Contains(line, "-h") && out == "" {
				return // help
			}
			if strings.Contains(line, "json") {
				var ex explain.Explanation
				if err := json.Unmarshal([]byte(out), &ex); err != nil || ex.Job == "" || ex.State == "" {
					t.Fatalf("%q: exit 0 with output %q (%v)", line, out, err)
				}
				return
			}
			if !strings.HasPrefix(out, "job ") {
				t.Fatalf("%q: exit 0 with output %q", line, out)
			}
		case 2:
			if out != "" || errOut == "" {
				t.Fatalf("%q: exit 2 with stdout %q, stderr %q", line, out, errOut)
			}
		default:
			t.Fatalf("%q: exit %d", line, code)
		}
	})
}
