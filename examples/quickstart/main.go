// Command quickstart drives Flotilla's scheduler over a fake cluster and
// explains what it sees: three queues with different priority factors share
// eight 32-core nodes with preemptible jobs over three scheduling cycles.
// It prints the cluster, the queues and their weights, who submits what at
// which cycle, and per cycle and queue the jobs running before, finished,
// scheduled and preempted, the jobs running and queued after, and the
// queue's share, fair share and adjusted fair share. When the third queue
// arrives, preemption to fair share makes room for it.
//
//	go run ./examples/quickstart
package main

import (
	"context"
	"fmt"
	"io"
	"log"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/queue"
	"github.com/flotilla-sched/flotilla/scheduler"
)

func main() {
	if err := run(os.Stdout); err != nil {
		log.Fatal(err)
	}
}

// cycles is how many scheduling cycles the quickstart runs, a minute apart.
const cycles = 3

// arrival is a batch of identical jobs one queue submits before a cycle.
type arrival struct {
	cycle    int
	queue    string
	count    int
	cpu, mem string
}

// arrivals is who submits what, and when: research and analytics fill the
// cluster at once, batch arrives once it is busy.
func arrivals() []arrival {
	return []arrival{
		{0, "research", 100, "2", "8Gi"},
		{0, "analytics", 200, "1", "4Gi"},
		{1, "batch", 300, "1", "2Gi"},
	}
}

// finishCycle is the cycle before which every other running research job
// finishes and leaves the cluster.
const finishCycle = 2

// row is one queue's line of a cycle's table. The counts obey
// after = before − finished + scheduled − preempted, and queued is the
// previous cycle's queued + submitted − scheduled + preempted (a preempted
// job waits in its queue again).
type row struct {
	before, finished, submitted, scheduled, preempted, after, queued int
}

// run prints the quickstart to w. The output depends on nothing but the code:
// no clock, no randomness beyond the snapshot's fixed seed.
func run(w io.Writer) error {
	schema := flotilla.MustResourceSchema("cpu", "memory")
	cfg := scheduler.DefaultConfig(schema)
	sched, err := scheduler.New(cfg)
	if err != nil {
		return err
	}

	// The cluster: eight identical nodes.
	const nodeCount = 8
	size := schema.MustParse(map[string]string{"cpu": "32", "memory": "128Gi"})
	var nodes []*flotilla.Node
	total := schema.Zero()
	for i := range nodeCount {
		nodes = append(nodes, &flotilla.Node{Name: fmt.Sprintf("node-%d", i), Total: size.Clone()})
		total.Add(size)
	}
	// Three tenants: research counts double (factor 0.5), batch half (factor 2).
	queues := []*flotilla.Queue{
		{Name: "research", PriorityFactor: 0.5},
		{Name: "analytics", PriorityFactor: 1},
		{Name: "batch", PriorityFactor: 2},
	}
	store, err := queue.New(cfg.Schema, cfg.PriorityClasses, cfg.DefaultPriorityClass)
	if err != nil {
		return err
	}
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

	fmt.Fprintf(w, "Flotilla quickstart: %d queues share a fake cluster for %d scheduling cycles, a minute apart.\n\n", len(queues), cycles)
	fmt.Fprintf(w, "Cluster: %d nodes × %s = %s\n", nodeCount, schema.String(size), schema.String(total))
	fmt.Fprintln(w, "Queues: weight = 1 / priority factor; fair share = weight / Σ weights of the queues with jobs.")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  QUEUE\tPRIORITY FACTOR\tWEIGHT")
	for _, q := range queues {
		fmt.Fprintf(tw, "  %s\t%g\t%g\n", q.Name, q.PriorityFactor, 1/q.PriorityFactor)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w, "Arrivals (every job is preemptible, so it can be preempted to fair share):")
	for _, a := range arrivals() {
		fmt.Fprintf(w, "  cycle %d: %s submits %d jobs of cpu=%s memory=%s\n", a.cycle, a.queue, a.count, a.cpu, a.mem)
	}
	fmt.Fprintf(w, "  before cycle %d: every other running research job finishes\n", finishCycle)
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Per cycle and queue: RUNNING = BEFORE − FINISHED + SCHEDULED − PREEMPTED;")
	fmt.Fprintln(w, "QUEUED = last QUEUED + SUBMITTED − SCHEDULED + PREEMPTED (the preempted wait again).")
	fmt.Fprintln(w, "SHARE is the part of the cluster the queue holds. ADJUSTED is its fair share once")
	fmt.Fprintln(w, "queues that want less than theirs have given the rest away. A queue that starts a")
	fmt.Fprintln(w, "cycle above max(FAIR, ADJUSTED) has jobs preempted back to it (to fair share).")

	nameWidth := 0
	for _, q := range queues {
		nameWidth = max(nameWidth, len(q.Name))
	}
	var running []scheduler.Running
	for cycle := range cycles {
		now := start.Add(time.Duration(cycle) * time.Minute)
		rows := make(map[string]*row, len(queues))
		for _, q := range queues {
			rows[q.Name] = &row{}
		}
		for _, r := range running {
			rows[r.Job.Queue].before++
		}
		if cycle == finishCycle {
			kept, seen := running[:0], 0
			for _, r := range running {
				if r.Job.Queue == "research" {
					seen++
					if seen%2 == 0 {
						rows[r.Job.Queue].finished++
						continue
					}
				}
				kept = append(kept, r)
			}
			running = kept
		}
		for _, a := range arrivals() {
			if a.cycle != cycle {
				continue
			}
			if err := submit(store, schema, a, now); err != nil {
				return err
			}
			rows[a.queue].submitted += a.count
		}

		res, err := sched.Schedule(context.Background(), &scheduler.Snapshot{
			Nodes: nodes, Queues: queues, Running: running, Queued: store,
		}, now)
		if err != nil {
			return err
		}
		// Act on the decision: evict the preempted (they wait in their
		// queue again), start the scheduled.
		gone := map[string]bool{}
		reasons := map[scheduler.PreemptionReason]int{}
		for _, p := range res.Preempted {
			gone[p.Job.ID] = true
			rows[p.Job.Queue].preempted++
			reasons[p.Reason]++
			if err := store.Add(p.Job); err != nil {
				return err
			}
		}
		kept := running[:0]
		for _, r := range running {
			if !gone[r.Job.ID] {
				kept = append(kept, r)
			}
		}
		running = kept
		for _, a := range res.Scheduled {
			store.Remove(a.Job.ID)
			rows[a.Job.Queue].scheduled++
			running = append(running, scheduler.Running{Job: a.Job, Node: a.Node, Start: now})
		}

		fmt.Fprintf(w, "\n== cycle %d: %d scheduled, %d preempted%s\n",
			cycle, len(res.Scheduled), len(res.Preempted), reasonList(reasons))
		// Numbers align right; the queue names, padded here, left. The
		// tabwriter's padding indents the table by two spaces.
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintf(tw, "%-*s\tBEFORE\tFINISHED\tSCHEDULED\tPREEMPTED\tRUNNING\tSUBMITTED\tQUEUED\tSHARE\tFAIR\tADJUSTED\t\n", nameWidth, "QUEUE")
		for _, q := range res.Queues {
			r := rows[q.Name]
			r.after, r.queued = q.Running, q.Queued+r.preempted
			fmt.Fprintf(tw, "%-*s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%.3f\t%.3f\t%.3f\t\n", nameWidth, q.Name,
				r.before, r.finished, r.scheduled, r.preempted, r.after, r.submitted, r.queued,
				q.Share, q.FairShare, q.AdjustedFairShare)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	return nil
}

// submit adds an arrival's jobs to the store.
func submit(store *queue.Store, schema *flotilla.ResourceSchema, a arrival, at time.Time) error {
	for i := range a.count {
		j := &flotilla.Job{
			ID:         fmt.Sprintf("%s-%d-%d", a.queue, a.cycle, i),
			Queue:      a.queue,
			JobSet:     a.queue + "-set",
			SubmitTime: at,
			// Preemptible jobs can be preempted to fair share.
			PriorityClass: flotilla.ArmadaPreemptible,
			Requests:      schema.MustParse(map[string]string{"cpu": a.cpu, "memory": a.mem}),
		}
		if err := store.Add(j); err != nil {
			return err
		}
	}
	return nil
}

// reasonList words the preemption reasons of a cycle, e.g. " (25 to fair
// share)", or "" when nothing was preempted.
func reasonList(reasons map[scheduler.PreemptionReason]int) string {
	var parts []string
	for _, r := range []struct {
		reason scheduler.PreemptionReason
		words  string
	}{{scheduler.PreemptedForFairShare, " to fair share"}, {scheduler.PreemptedForUrgency, " for urgency"}} {
		if n := reasons[r.reason]; n > 0 {
			parts = append(parts, strconv.Itoa(n)+r.words)
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, ", ") + ")"
}
