package scheduler_test

import (
	"context"
	"fmt"
	"time"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/priority"
	"github.com/flotilla-sched/flotilla/queue"
	"github.com/flotilla-sched/flotilla/scheduler"
)

// One cycle over a two-node cluster: two queues share it by fair share, each
// bin-packed onto its own node.
func ExampleScheduler_Schedule() {
	schema := flotilla.MustResourceSchema("cpu", "memory")
	cfg := scheduler.DefaultConfig(schema)
	sched, err := scheduler.New(cfg)
	if err != nil {
		panic(err)
	}
	nodes := []*flotilla.Node{
		{Name: "n1", Total: schema.MustParse(map[string]string{"cpu": "4", "memory": "16Gi"})},
		{Name: "n2", Total: schema.MustParse(map[string]string{"cpu": "4", "memory": "16Gi"})},
	}
	queues := []*flotilla.Queue{{Name: "alice"}, {Name: "bob"}}
	store, _ := queue.New(cfg.Schema, cfg.PriorityClasses, cfg.DefaultPriorityClass)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range 6 {
		for _, q := range []string{"alice", "bob"} {
			_ = store.Add(&flotilla.Job{ID: fmt.Sprintf("%s-%d", q, i), Queue: q, SubmitTime: now,
				Requests: schema.MustParse(map[string]string{"cpu": "1", "memory": "2Gi"})})
		}
	}
	res, err := sched.Schedule(context.Background(), &scheduler.Snapshot{Nodes: nodes, Queues: queues, Queued: store}, now)
	if err != nil {
		panic(err)
	}
	for _, a := range res.Scheduled {
		fmt.Println(a.Job.ID, "→", a.Node)
	}
	for _, q := range res.Queues {
		fmt.Printf("%s: %d running, %d waiting, share %.2f of fair share %.2f\n", q.Name, q.Running, q.Queued, q.Share, q.FairShare)
	}
	for _, g := range res.Unscheduled {
		fmt.Printf("%s: %d wait (%s), e.g. %s\n", g.Queue, g.Count, g.Reason.Code, g.Examples[0].ID)
	}
	// Output:
	// alice-0 → n1
	// bob-0 → n2
	// alice-1 → n1
	// bob-1 → n2
	// alice-2 → n1
	// bob-2 → n2
	// alice-3 → n1
	// bob-3 → n2
	// alice: 4 running, 2 waiting, share 0.50 of fair share 0.50
	// bob: 4 running, 2 waiting, share 0.50 of fair share 0.50
	// alice: 2 wait (no-room), e.g. alice-4
	// bob: 2 wait (no-room), e.g. bob-4
}

// Jobs ordered within a queue by flux-accounting's multi-factor priority:
// priority.JobPriority maps the integer priority (higher is more important)
// onto Job.Priority (lower runs first), below the priority class, which
// still comes first.
func ExampleScheduler_Schedule_fluxPriority() {
	schema := flotilla.MustResourceSchema("cpu")
	cfg := scheduler.DefaultConfig(schema)
	sched, _ := scheduler.New(cfg)
	store, _ := queue.New(cfg.Schema, cfg.PriorityClasses, cfg.DefaultPriorityClass)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	w := priority.DefaultWeights()
	w.Bank = 10
	for _, j := range []struct {
		id   string
		bank float64
	}{{"bank-C", -5}, {"bank-A", 300}, {"bank-B", 100}} {
		calc := priority.Calculate(priority.Factors{FairShare: 0.5, Bank: j.bank, Urgency: priority.DefaultUrgency}, w)
		fmt.Println(j.id, "priority", calc.Priority)
		_ = store.Add(&flotilla.Job{ID: j.id, Queue: "q", SubmitTime: now, Priority: priority.JobPriority(calc.Priority),
			Requests: schema.MustParse(map[string]string{"cpu": "1"})})
	}
	res, _ := sched.Schedule(context.Background(), &scheduler.Snapshot{
		Nodes:  []*flotilla.Node{{Name: "n", Total: schema.MustParse(map[string]string{"cpu": "2"})}},
		Queues: []*flotilla.Queue{{Name: "q"}}, Queued: store,
	}, now)
	for _, a := range res.Scheduled {
		fmt.Println("runs:", a.Job.ID)
	}
	// Output:
	// bank-C priority 49950
	// bank-A priority 53000
	// bank-B priority 51000
	// runs: bank-A
	// runs: bank-B
}
