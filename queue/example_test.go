package queue_test

import (
	"fmt"
	"slices"
	"time"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/queue"
)

func ExampleStore() {
	store, err := queue.New(flotilla.MustResourceSchema("cpu"), flotilla.DefaultPriorityClasses(), flotilla.ArmadaDefault)
	if err != nil {
		panic(err)
	}
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	cpu := func(q string) flotilla.Resources {
		v, _ := flotilla.ParseQuantity(q)
		return flotilla.Resources{v}
	}
	for _, j := range []*flotilla.Job{
		{ID: "a-1", Queue: "A", JobSet: "train", PriorityClass: flotilla.ArmadaPreemptible, SubmitTime: t0, Requests: cpu("1")},
		{ID: "a-2", Queue: "A", JobSet: "train", Priority: 5, SubmitTime: t0, Requests: cpu("1")},
		{ID: "a-3", Queue: "A", JobSet: "eval", Priority: 1, SubmitTime: t0.Add(time.Second), Requests: cpu("500m")},
		{ID: "a-4", Queue: "A", JobSet: "eval", Priority: 1, SubmitTime: t0, Requests: cpu("1")},
		{ID: "b-1", Queue: "B", JobSet: "x", SubmitTime: t0, Requests: cpu("1")},
	} {
		if err := store.Add(j); err != nil {
			panic(err)
		}
	}
	if err := store.Add(&flotilla.Job{ID: "a-1", Queue: "B"}); err != nil {
		fmt.Println(err)
	}

	// Higher class first; then lower Priority number; then earlier submit.
	c := store.Cursor("A")
	for e, ok := c.Next(); ok; e, ok = c.Next() {
		fmt.Println(e.Job.ID, e.ClassPriority, e.Job.Priority)
	}
	a2, _ := store.Get("a-2")
	a4, _ := store.Get("a-4")
	fmt.Println("a-2 and a-4 need the same:", a2.Key == a4.Key)

	fmt.Println(store.Queues(), store.Len())
	for _, j := range store.RemoveJobSet("A", "train") {
		fmt.Println("cancelled", j.ID)
	}
	fmt.Println(store.QueueLen("A"))
	// Output:
	// id "a-1": is a duplicate: already queued
	// a-4 30000 1
	// a-3 30000 1
	// a-2 30000 5
	// a-1 20000 0
	// a-2 and a-4 need the same: true
	// [A B] 5
	// cancelled a-2
	// cancelled a-1
	// 2
}

func ExampleLessEvicted() {
	store, _ := queue.New(flotilla.MustResourceSchema("cpu"), flotilla.DefaultPriorityClasses(), flotilla.ArmadaDefault)
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	started := map[string]time.Time{"x": t0.Add(2 * time.Hour), "y": t0.Add(time.Hour), "z": t0}
	var evicted []*queue.Entry
	for _, j := range []*flotilla.Job{
		{ID: "x", Queue: "A", SubmitTime: t0},
		{ID: "y", Queue: "A", SubmitTime: t0},
		{ID: "z", Queue: "A", SubmitTime: t0, PriorityClass: flotilla.ArmadaPreemptible},
	} {
		e, err := store.NewEntry(j) // not stored: the scheduler keeps evicted jobs
		if err != nil {
			panic(err)
		}
		evicted = append(evicted, e)
	}
	slices.SortFunc(evicted, func(a, b *queue.Entry) int {
		switch {
		case queue.LessEvicted(a, b, started[a.Job.ID], started[b.Job.ID]):
			return -1
		case queue.LessEvicted(b, a, started[b.Job.ID], started[a.Job.ID]):
			return 1
		}
		return 0
	})
	for _, e := range evicted {
		fmt.Println(e.Job.ID)
	}
	// Output:
	// y
	// x
	// z
}
