package sim

import (
	"bufio"
	"encoding/csv"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"
)

// Output is what a run recorded.
type Output struct {
	// Resources name the entries of QueueRow.Allocated, in order.
	Resources []string
	// Queues has one row per cycle and queue, in cycle order, queues in
	// the cycle's snapshot order.
	Queues []QueueRow
	// Groups has one row per cycle and group of the queue tree, in cycle
	// order, groups by name (the scheduler's Result.Groups, as the service
	// orders its snapshot); none for a flat workload.
	Groups []GroupRow
	// Tree is whether the workload has a queue tree or usage memory
	// (Workload.HasTree): the queue files then have parent and usage
	// columns, and groups.csv and groups.jsonl are written.
	Tree bool
	// Pools is whether the clusters are in more than one pool: each pool
	// has its rows each cycle, and the queue and group files a pool
	// column (after queue, group).
	Pools bool
	// Jobs has one row per job, in submission order.
	Jobs []JobRow
	// End is the virtual time (seconds) the run stopped at.
	End float64

	jobOrder []string
}

// QueueRow is one queue after one cycle.
type QueueRow struct {
	// Time is the cycle's virtual time, seconds since the start.
	Time  float64
	Cycle int
	Queue string
	// Pool is the pool whose cycle the row is of, when Output.Pools.
	Pool string
	// Parent is the queue's group ("" for the root).
	Parent string
	// Share, FairShare, AdjustedFairShare and Usage (the decayed average
	// share, 0 without usage memory) are the scheduler's
	// (scheduler.QueueReport).
	Share, FairShare, AdjustedFairShare, Usage float64
	// Running and Queued count the queue's jobs after the cycle;
	// Scheduled and Preempted what the cycle did to them.
	Running, Queued, Scheduled, Preempted int
	// Allocated is what the queue's jobs on nodes request, in the
	// schema's units (milli-cpu, bytes, whole units), laid out as
	// Output.Resources.
	Allocated []int64
}

// GroupRow is one group of the queue tree after one cycle: the
// scheduler's scheduler.GroupReport. Share, Usage, Demand, Running, Queued
// and Allocated are its children's sums; FairShare and AdjustedFairShare
// its part of its parent's.
type GroupRow struct {
	Time                                               float64
	Cycle                                              int
	Group, Pool, Parent                                string
	Share, FairShare, AdjustedFairShare, Usage, Demand float64
	Running, Queued                                    int
	// Allocated is laid out as Output.Resources.
	Allocated []int64
}

// JobRow is one job at the end of the run.
type JobRow struct {
	Job, Queue, JobSet string
	// Submitted, Leased (the latest lease) and Finished (the terminal
	// event) are virtual seconds since the start; nil when it never
	// happened.
	Submitted, Leased, Finished *float64
	// State is the job's state's name (events.State).
	State string
	// Attempts counts its leases; Preemptions its preempted events.
	Attempts, Preemptions int
}

// finish builds the job rows.
func (o *Output) finish(r *run) {
	o.Jobs = make([]JobRow, 0, len(o.jobOrder))
	for _, id := range o.jobOrder {
		j := r.jobs[id]
		s := j.state
		row := JobRow{Job: id, Queue: r.tpls[j.tpl].spec.Queue, JobSet: r.tpls[j.tpl].jobSet,
			State: s.State.String(), Attempts: s.Attempts, Preemptions: j.preemptions}
		row.Submitted, row.Leased, row.Finished = seconds(s.Submitted), seconds(s.Leased), seconds(s.Finished)
		o.Jobs = append(o.Jobs, row)
	}
}

// seconds is t as virtual seconds since Start; nil for the zero time.
func seconds(t time.Time) *float64 {
	if t.IsZero() {
		return nil
	}
	v := t.Sub(Start).Seconds()
	return &v
}

// QueueColumns are the column names of the queue rows: time, cycle,
// queue, share, fairShare, adjustedFairShare, running, queued, scheduled,
// preempted, then allocated.<resource> per resource; with a tree
// (Output.Tree), parent after queue and usage after adjustedFairShare.
func (o *Output) QueueColumns() []string {
	cols := []string{"time", "cycle", "queue", "share", "fairShare", "adjustedFairShare", "running", "queued", "scheduled", "preempted"}
	if o.Tree {
		cols = []string{"time", "cycle", "queue", "parent", "share", "fairShare", "adjustedFairShare", "usage", "running", "queued", "scheduled", "preempted"}
	}
	for _, r := range o.Resources {
		cols = append(cols, "allocated."+r)
	}
	return o.withPool(cols)
}

// withPool inserts the pool column after the third (queue, group) when
// the run has pools.
func (o *Output) withPool(cols []string) []string {
	if !o.Pools {
		return cols
	}
	return slices.Insert(cols, 3, "pool")
}

// textCols marks the string columns of the queue (or group) rows.
func (o *Output) textCols(text []bool) []bool {
	if !o.Pools {
		return text
	}
	return slices.Insert(slices.Clone(text), 3, true)
}

// GroupColumns are the column names of the group rows: time, cycle,
// group, parent, share, fairShare, adjustedFairShare, usage, demand,
// running, queued, then allocated.<resource> per resource.
func (o *Output) GroupColumns() []string {
	cols := []string{"time", "cycle", "group", "parent", "share", "fairShare", "adjustedFairShare", "usage", "demand", "running", "queued"}
	for _, r := range o.Resources {
		cols = append(cols, "allocated."+r)
	}
	return o.withPool(cols)
}

// JobColumns are the column names of the job rows.
var JobColumns = []string{"job", "queue", "jobSet", "submitted", "leased", "finished", "state", "attempts", "preemptions"}

func num(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

func optNum(v *float64) string {
	if v == nil {
		return ""
	}
	return num(*v)
}

// queueFields are a row's values as text, and whether each is a string.
func (o *Output) queueFields(q *QueueRow) []string {
	f := []string{num(q.Time), strconv.Itoa(q.Cycle), q.Queue, num(q.Share), num(q.FairShare), num(q.AdjustedFairShare),
		strconv.Itoa(q.Running), strconv.Itoa(q.Queued), strconv.Itoa(q.Scheduled), strconv.Itoa(q.Preempted)}
	if o.Tree {
		f = []string{num(q.Time), strconv.Itoa(q.Cycle), q.Queue, q.Parent, num(q.Share), num(q.FairShare), num(q.AdjustedFairShare), num(q.Usage),
			strconv.Itoa(q.Running), strconv.Itoa(q.Queued), strconv.Itoa(q.Scheduled), strconv.Itoa(q.Preempted)}
	}
	for _, a := range q.Allocated {
		f = append(f, strconv.FormatInt(a, 10))
	}
	if o.Pools {
		f = slices.Insert(f, 3, q.Pool)
	}
	return f
}

func (o *Output) groupFields(g *GroupRow) []string {
	f := []string{num(g.Time), strconv.Itoa(g.Cycle), g.Group, g.Parent, num(g.Share), num(g.FairShare), num(g.AdjustedFairShare),
		num(g.Usage), num(g.Demand), strconv.Itoa(g.Running), strconv.Itoa(g.Queued)}
	for _, a := range g.Allocated {
		f = append(f, strconv.FormatInt(a, 10))
	}
	if o.Pools {
		f = slices.Insert(f, 3, g.Pool)
	}
	return f
}

func jobFields(j *JobRow) []string {
	return []string{j.Job, j.Queue, j.JobSet, optNum(j.Submitted), optNum(j.Leased), optNum(j.Finished),
		j.State, strconv.Itoa(j.Attempts), strconv.Itoa(j.Preemptions)}
}

// WriteQueuesCSV writes the queue rows as CSV with a header row.
func (o *Output) WriteQueuesCSV(w io.Writer) error {
	c := csv.NewWriter(w)
	if err := c.Write(o.QueueColumns()); err != nil {
		return err
	}
	for i := range o.Queues {
		if err := c.Write(o.queueFields(&o.Queues[i])); err != nil {
			return err
		}
	}
	c.Flush()
	return c.Error()
}

// WriteGroupsCSV writes the group rows as CSV with a header row.
func (o *Output) WriteGroupsCSV(w io.Writer) error {
	c := csv.NewWriter(w)
	if err := c.Write(o.GroupColumns()); err != nil {
		return err
	}
	for i := range o.Groups {
		if err := c.Write(o.groupFields(&o.Groups[i])); err != nil {
			return err
		}
	}
	c.Flush()
	return c.Error()
}

// WriteJobsCSV writes the job rows as CSV with a header row; a time that
// never happened is an empty field.
func (o *Output) WriteJobsCSV(w io.Writer) error {
	c := csv.NewWriter(w)
	if err := c.Write(JobColumns); err != nil {
		return err
	}
	for i := range o.Jobs {
		if err := c.Write(jobFields(&o.Jobs[i])); err != nil {
			return err
		}
	}
	c.Flush()
	return c.Error()
}

// writeJSONL writes one object per row, keys in column order; strings
// (text[k]) are quoted, empty numbers are null.
func writeJSONL(w io.Writer, cols []string, text []bool, rows int, fields func(i int) []string) error {
	b := bufio.NewWriter(w)
	keys := make([][]byte, len(cols))
	for k, c := range cols {
		keys[k], _ = json.Marshal(c)
	}
	var line []byte
	for i := 0; i < rows; i++ {
		line = append(line[:0], '{')
		for k, v := range fields(i) {
			if k > 0 {
				line = append(line, ',')
			}
			line = append(line, keys[k]...)
			line = append(line, ':')
			switch {
			case k < len(text) && text[k]:
				line = strconv.AppendQuote(line, v)
			case v == "":
				line = append(line, "null"...)
			default:
				line = append(line, v...)
			}
		}
		line = append(line, '}', '\n')
		if _, err := b.Write(line); err != nil {
			return err
		}
	}
	return b.Flush()
}

// WriteQueuesJSONL writes the queue rows as JSON lines, one object per
// row with the columns of QueueColumns as keys.
func (o *Output) WriteQueuesJSONL(w io.Writer) error {
	text := []bool{2: true}
	if o.Tree {
		text = []bool{2: true, 3: true}
	}
	return writeJSONL(w, o.QueueColumns(), o.textCols(text), len(o.Queues), func(i int) []string { return o.queueFields(&o.Queues[i]) })
}

// WriteGroupsJSONL writes the group rows as JSON lines with the keys of
// GroupColumns.
func (o *Output) WriteGroupsJSONL(w io.Writer) error {
	text := []bool{2: true, 3: true}
	return writeJSONL(w, o.GroupColumns(), o.textCols(text), len(o.Groups), func(i int) []string { return o.groupFields(&o.Groups[i]) })
}

// WriteJobsJSONL writes the job rows as JSON lines with the keys of
// JobColumns; a time that never happened is null.
func (o *Output) WriteJobsJSONL(w io.Writer) error {
	text := []bool{true, true, true, false, false, false, true}
	return writeJSONL(w, JobColumns, text, len(o.Jobs), func(i int) []string { return jobFields(&o.Jobs[i]) })
}

// WriteDir writes queues.csv, jobs.csv, queues.jsonl and jobs.jsonl into
// dir, which must exist, and with a tree (Output.Tree) groups.csv and
// groups.jsonl.
func (o *Output) WriteDir(dir string) error {
	type file struct {
		name  string
		write func(io.Writer) error
	}
	files := []file{{"queues.csv", o.WriteQueuesCSV}, {"jobs.csv", o.WriteJobsCSV}, {"queues.jsonl", o.WriteQueuesJSONL}, {"jobs.jsonl", o.WriteJobsJSONL}}
	if o.Tree {
		files = append(files, file{"groups.csv", o.WriteGroupsCSV}, file{"groups.jsonl", o.WriteGroupsJSONL})
	}
	for _, f := range files {
		fh, err := os.Create(filepath.Join(dir, f.name))
		if err != nil {
			return err
		}
		err = f.write(fh)
		if cerr := fh.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
	}
	return nil
}
