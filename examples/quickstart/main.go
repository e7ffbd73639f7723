// Command quickstart drives Flotilla's scheduler over a fake cluster: three
// queues with different priority factors share eight 32-core nodes with
// preemptible jobs, and each cycle prints who got what. When the third queue
// arrives, preemption to fair share makes room for it.
//
//	go run ./examples/quickstart
package main

import (
	"context"
	"fmt"
	"log"
	"os"
	"text/tabwriter"
	"time"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/queue"
	"github.com/flotilla-sched/flotilla/scheduler"
)

func main() {
	if err := run(); err != nil {
		log.Fatal(err)
	}
}

func run() error {
	schema := flotilla.MustResourceSchema("cpu", "memory")
	cfg := scheduler.DefaultConfig(schema)
	sched, err := scheduler.New(cfg)
	if err != nil {
		return err
	}

	// The cluster: eight identical nodes.
	var nodes []*flotilla.Node
	for i := range 8 {
		nodes = append(nodes, &flotilla.Node{
			Name:  fmt.Sprintf("node-%d", i),
			Total: schema.MustParse(map[string]string{"cpu": "32", "memory": "128Gi"}),
		})
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
	submit := func(q string, n int, cpu, mem string, at time.Time) error {
		for i := range n {
			j := &flotilla.Job{
				ID:         fmt.Sprintf("%s-%s-%d", q, at.Format("150405"), i),
				Queue:      q,
				JobSet:     q + "-set",
				SubmitTime: at,
				// Preemptible jobs can be preempted to fair share.
				PriorityClass: flotilla.ArmadaPreemptible,
				Requests:      schema.MustParse(map[string]string{"cpu": cpu, "memory": mem}),
			}
			if err := store.Add(j); err != nil {
				return err
			}
		}
		return nil
	}
	if err := submit("research", 100, "2", "8Gi", start); err != nil {
		return err
	}
	if err := submit("analytics", 200, "1", "4Gi", start); err != nil {
		return err
	}

	var running []scheduler.Running
	for cycle := range 3 {
		now := start.Add(time.Duration(cycle) * time.Minute)
		if cycle == 1 {
			// A latecomer: batch arrives once the cluster is busy.
			if err := submit("batch", 300, "1", "2Gi", now); err != nil {
				return err
			}
		}
		if cycle == 2 {
			// Half of research's running jobs finish.
			kept, seen := running[:0], 0
			for _, r := range running {
				if r.Job.Queue == "research" {
					seen++
					if seen%2 == 0 {
						continue
					}
				}
				kept = append(kept, r)
			}
			running = kept
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
		for _, p := range res.Preempted {
			gone[p.Job.ID] = true
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
			running = append(running, scheduler.Running{Job: a.Job, Node: a.Node, Start: now})
		}
		waiting := 0
		for _, g := range res.Unscheduled {
			waiting += g.Count
		}
		fmt.Printf("cycle %d: %d scheduled, %d preempted, %d examined and left waiting\n",
			cycle, len(res.Scheduled), len(res.Preempted), waiting)
		tw := tabwriter.NewWriter(os.Stdout, 2, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "  QUEUE\tRUNNING\tQUEUED\tALLOCATED\tSHARE\tFAIR SHARE")
		for _, q := range res.Queues {
			// Queued is read from the store, after preempted jobs went back.
			fmt.Fprintf(tw, "  %s\t%d\t%d\t%s\t%.3f\t%.3f\n", q.Name, q.Running, store.QueueLen(q.Name), schema.String(q.Allocated), q.Share, q.FairShare)
		}
		tw.Flush()
	}
	return nil
}
