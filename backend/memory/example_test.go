package memory_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/backend"
	"github.com/flotilla-sched/flotilla/backend/memory"
	"github.com/flotilla-sched/flotilla/events"
)

// Submitting two jobs is one Commit of the jobs and their submitted
// events; a lease is another. The job set's log reads back in order, with
// the sequence numbers the backend gave, and a transition the state
// machine refuses stores nothing.
func Example() {
	ctx := context.Background()
	schema := flotilla.MustResourceSchema("cpu", "memory")
	b := memory.New(schema)
	defer b.Close()
	if err := b.CreateQueue(ctx, flotilla.Queue{Name: "A"}); err != nil {
		fmt.Println(err)
		return
	}
	t0 := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	w := &backend.Write{}
	for _, id := range []string{"j1", "j2"} {
		job := &flotilla.Job{ID: id, Queue: "A", JobSet: "s1", SubmitTime: t0, Requests: schema.MustParse(map[string]string{"cpu": "1", "memory": "4Gi"})}
		w.Jobs = append(w.Jobs, backend.JobSpec{Job: job, ClientID: "train-" + id, ActiveDeadline: time.Hour})
		w.Events = append(w.Events, events.Event{Type: events.Submitted, Queue: "A", JobSet: "s1", Job: id, Time: t0})
	}
	if _, err := b.Commit(ctx, w); err != nil {
		fmt.Println(err)
		return
	}
	leased := events.Event{Type: events.Leased, Queue: "A", JobSet: "s1", Job: "j2", Cluster: "c1", Node: "c1-n3", Attempt: 1, Time: t0.Add(time.Second)}
	if _, err := b.Commit(ctx, &backend.Write{Events: []events.Event{leased}}); err != nil {
		fmt.Println(err)
		return
	}
	// j1 is queued: it cannot succeed. Nothing is stored.
	_, err := b.Commit(ctx, &backend.Write{Events: []events.Event{{Type: events.Succeeded, Queue: "A", JobSet: "s1", Job: "j1", Time: t0}}})
	fmt.Println("refused:", errors.Is(err, events.ErrRefused))

	log, _ := b.Events(ctx, "A", "s1", 1, 100)
	for _, e := range log {
		fmt.Printf("%d %s %s", e.Seq, e.Job, e.Type)
		if e.Cluster != "" {
			fmt.Printf(" on %s/%s", e.Cluster, e.Node)
		}
		fmt.Println()
	}
	r, _ := b.Job(ctx, "j2")
	fmt.Println(r.State.State, r.State.Attempts, r.Spec.ClientID)
	// Output:
	// refused: true
	// 1 j1 submitted
	// 2 j2 submitted
	// 3 j2 leased on c1/c1-n3
	// leased 1 train-j2
}
