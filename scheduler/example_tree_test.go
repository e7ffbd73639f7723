package scheduler_test

import (
	"context"
	"fmt"
	"time"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/queue"
	"github.com/flotilla-sched/flotilla/scheduler"
)

// A queue tree: the research group is guaranteed 6 of the 16 GPUs and may
// hold at most 10; its queues nlp and vision share what it gets, nlp with
// twice vision's weight. adhoc hangs from the root with no guarantee.
func ExampleScheduler_Schedule_queueTree() {
	schema := flotilla.MustResourceSchema("cpu", "nvidia.com/gpu")
	cfg := scheduler.DefaultConfig(schema)
	sched, err := scheduler.New(cfg)
	if err != nil {
		panic(err)
	}
	gpus := func(n string) flotilla.Resources {
		r, _ := schema.ParsePartial("gpus", map[string]string{"nvidia.com/gpu": n})
		return r
	}
	nodes := []*flotilla.Node{
		{Name: "n1", Total: schema.MustParse(map[string]string{"cpu": "64", "nvidia.com/gpu": "8"})},
		{Name: "n2", Total: schema.MustParse(map[string]string{"cpu": "64", "nvidia.com/gpu": "8"})},
	}
	groups := []*flotilla.QueueGroup{{Name: "research", Guaranteed: gpus("6"), Limit: gpus("10")}}
	queues := []*flotilla.Queue{
		{Name: "nlp", Parent: "research", PriorityFactor: 0.5},
		{Name: "vision", Parent: "research"},
		{Name: "adhoc"},
	}
	store, _ := queue.New(cfg.Schema, cfg.PriorityClasses, cfg.DefaultPriorityClass)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range 12 {
		for _, q := range []string{"nlp", "vision", "adhoc"} {
			_ = store.Add(&flotilla.Job{ID: fmt.Sprintf("%s-%02d", q, i), Queue: q, SubmitTime: now,
				Requests: schema.MustParse(map[string]string{"cpu": "4", "nvidia.com/gpu": "1"})})
		}
	}
	snap := &scheduler.Snapshot{Nodes: nodes, Groups: groups, Queues: queues, Queued: store}
	res, err := sched.Schedule(context.Background(), snap, now)
	if err != nil {
		panic(err)
	}
	for _, g := range res.Groups {
		fmt.Printf("group %s: %d running, share %.3f, adjusted fair share %.3f\n", g.Name, g.Running, g.Share, g.AdjustedFairShare)
	}
	for _, q := range res.Queues {
		fmt.Printf("queue %s: %d running, share %.3f, adjusted fair share %.3f\n", q.Name, q.Running, q.Share, q.AdjustedFairShare)
	}
	for _, u := range res.Unscheduled {
		if u.Reason.Code == scheduler.ReasonLimit {
			fmt.Printf("%s: %d wait (%s)\n", u.Queue, u.Count, u.Reason)
		}
	}
	// Output:
	// group research: 10 running, share 0.625, adjusted fair share 0.625
	// queue nlp: 7 running, share 0.438, adjusted fair share 0.417
	// queue vision: 3 running, share 0.188, adjusted fair share 0.208
	// queue adhoc: 6 running, share 0.375, adjusted fair share 0.375
	// nlp: 5 wait (limit: research)
	// vision: 9 wait (limit: research)
}
