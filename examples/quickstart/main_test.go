package main

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// cycleTable is one cycle of the quickstart's output, parsed back.
type cycleTable struct {
	scheduled, preempted int    // from the cycle's heading
	heading              string // the heading line
	rows                 map[string]parsedRow
	order                []string
}

type parsedRow struct {
	before, finished, scheduled, preempted, running, submitted, queued int
	share, fair, adjusted                                              float64
}

var cycleHeading = regexp.MustCompile(`^== cycle (\d+): (\d+) scheduled, (\d+) preempted`)

// parseCycles reads every cycle table of the output, failing the test on
// any line it cannot read.
func parseCycles(t *testing.T, out string) []cycleTable {
	t.Helper()
	var tables []cycleTable
	lines := strings.Split(out, "\n")
	for i := 0; i < len(lines); i++ {
		m := cycleHeading.FindStringSubmatch(lines[i])
		if m == nil {
			continue
		}
		if n, _ := strconv.Atoi(m[1]); n != len(tables) {
			t.Fatalf("cycle %d printed as cycle %s", len(tables), m[1])
		}
		c := cycleTable{heading: lines[i], rows: map[string]parsedRow{}}
		c.scheduled, _ = strconv.Atoi(m[2])
		c.preempted, _ = strconv.Atoi(m[3])
		if i+1 >= len(lines) || !strings.HasPrefix(strings.TrimSpace(lines[i+1]), "QUEUE") {
			t.Fatalf("cycle %d: no table header after %q", len(tables), lines[i])
		}
		for i += 2; i < len(lines) && strings.TrimSpace(lines[i]) != ""; i++ {
			f := strings.Fields(lines[i])
			if len(f) != 11 {
				t.Fatalf("cycle %d: row %q has %d columns, want 11", len(tables), lines[i], len(f))
			}
			var n [7]int
			for k := range n {
				v, err := strconv.Atoi(f[1+k])
				if err != nil {
					t.Fatalf("cycle %d: row %q: column %d: %v", len(tables), lines[i], 2+k, err)
				}
				n[k] = v
			}
			var x [3]float64
			for k := range x {
				v, err := strconv.ParseFloat(f[8+k], 64)
				if err != nil {
					t.Fatalf("cycle %d: row %q: column %d: %v", len(tables), lines[i], 9+k, err)
				}
				x[k] = v
			}
			c.rows[f[0]] = parsedRow{n[0], n[1], n[2], n[3], n[4], n[5], n[6], x[0], x[1], x[2]}
			c.order = append(c.order, f[0])
		}
		tables = append(tables, c)
	}
	return tables
}

func runQuickstart(t *testing.T) string {
	t.Helper()
	var b strings.Builder
	if err := run(&b); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestQuickstartCountsAddUpEveryCycle: per cycle and queue, RUNNING =
// BEFORE − FINISHED + SCHEDULED − PREEMPTED, BEFORE is the last cycle's
// RUNNING, QUEUED = last QUEUED + SUBMITTED − SCHEDULED + PREEMPTED, and the
// rows add up to the heading's totals. The submissions are those the
// arrivals list announces, and the output is short and the same every run.
func TestQuickstartCountsAddUpEveryCycle(t *testing.T) {
	out := runQuickstart(t)
	if again := runQuickstart(t); again != out {
		t.Fatalf("two runs print different output:\n%s\n---\n%s", out, again)
	}
	if n := strings.Count(out, "\n"); n > 60 {
		t.Errorf("output is %d lines, want at most 60", n)
	}
	tables := parseCycles(t, out)
	if len(tables) != cycles {
		t.Fatalf("%d cycle tables, want %d:\n%s", len(tables), cycles, out)
	}
	for _, a := range arrivals() {
		announced := "cycle " + strconv.Itoa(a.cycle) + ": " + a.queue + " submits " + strconv.Itoa(a.count) + " jobs"
		if !strings.Contains(out, announced) {
			t.Errorf("arrival %q not announced", announced)
		}
	}
	prev := map[string]parsedRow{}
	for ci, c := range tables {
		if len(c.order) != 3 {
			t.Errorf("cycle %d: %d queues, want 3", ci, len(c.order))
		}
		wantSubmitted := map[string]int{}
		for _, a := range arrivals() {
			if a.cycle == ci {
				wantSubmitted[a.queue] += a.count
			}
		}
		var scheduled, preempted, finished int
		for _, q := range c.order {
			r, p := c.rows[q], prev[q]
			if r.before != p.running {
				t.Errorf("cycle %d %s: BEFORE %d, but %d were running after the last cycle", ci, q, r.before, p.running)
			}
			if want := r.before - r.finished + r.scheduled - r.preempted; r.running != want {
				t.Errorf("cycle %d %s: RUNNING %d, want BEFORE − FINISHED + SCHEDULED − PREEMPTED = %d", ci, q, r.running, want)
			}
			if want := p.queued + r.submitted - r.scheduled + r.preempted; r.queued != want {
				t.Errorf("cycle %d %s: QUEUED %d, want last QUEUED + SUBMITTED − SCHEDULED + PREEMPTED = %d", ci, q, r.queued, want)
			}
			if r.submitted != wantSubmitted[q] {
				t.Errorf("cycle %d %s: SUBMITTED %d, arrivals say %d", ci, q, r.submitted, wantSubmitted[q])
			}
			if r.running < 0 || r.queued < 0 || r.finished > r.before {
				t.Errorf("cycle %d %s: impossible counts %+v", ci, q, r)
			}
			scheduled += r.scheduled
			preempted += r.preempted
			finished += r.finished
		}
		if scheduled != c.scheduled || preempted != c.preempted {
			t.Errorf("cycle %d: rows add up to %d scheduled and %d preempted, heading %q", ci, scheduled, preempted, c.heading)
		}
		if (ci == finishCycle) != (finished > 0) {
			t.Errorf("cycle %d: %d finished; jobs finish before cycle %d only", ci, finished, finishCycle)
		}
		prev = c.rows
	}
}

// TestQuickstartPreemptsToFairShareWhenTheThirdQueueArrives: nothing is
// preempted while two queues share the cluster; when batch arrives (cycle
// 1), research and analytics lose jobs to fair share, batch gets the room,
// and every queue ends the cycle within 0.01 of its new fair share.
func TestQuickstartPreemptsToFairShareWhenTheThirdQueueArrives(t *testing.T) {
	tables := parseCycles(t, runQuickstart(t))
	if len(tables) < 2 {
		t.Fatalf("%d cycles, want at least 2", len(tables))
	}
	if tables[0].preempted != 0 {
		t.Errorf("cycle 0: %d preempted, want 0 before batch arrives", tables[0].preempted)
	}
	c := tables[1]
	if c.rows["batch"].submitted == 0 {
		t.Fatalf("batch submits nothing in cycle 1: %+v", c.rows["batch"])
	}
	if c.preempted == 0 || !strings.Contains(c.heading, "("+strconv.Itoa(c.preempted)+" to fair share)") {
		t.Errorf("cycle 1 heading %q: want every preemption to be to fair share", c.heading)
	}
	for _, q := range []string{"research", "analytics"} {
		if c.rows[q].preempted == 0 {
			t.Errorf("cycle 1: nothing of %s preempted", q)
		}
	}
	if c.rows["batch"].preempted != 0 || c.rows["batch"].scheduled == 0 {
		t.Errorf("cycle 1: batch %+v, want jobs scheduled and none preempted", c.rows["batch"])
	}
	for _, q := range c.order {
		r := c.rows[q]
		if d := r.share - r.fair; d > 0.01 || d < -0.01 {
			t.Errorf("cycle 1 %s: share %.3f, fair share %.3f; want them within 0.01", q, r.share, r.fair)
		}
	}
}
