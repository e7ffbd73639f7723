package events_test

import (
	"fmt"
	"slices"

	"github.com/flotilla-sched/flotilla/events"
)

// A job set's log replayed: the job was leased, its cluster died, and it
// ran to completion on another cluster.
func ExampleReplay() {
	ev := func(seq uint64, t events.Type, cluster string, attempt int, requeued bool) events.Event {
		e := events.Event{Seq: seq, Queue: "A", JobSet: "train", Job: "j1", Type: t, Cluster: cluster, Attempt: attempt, Requeued: requeued}
		if t == events.Leased {
			e.Node = cluster + "-n1"
		}
		return e
	}
	log := []events.Event{
		ev(1, events.Submitted, "", 0, false),
		ev(2, events.Leased, "c1", 1, false),
		ev(3, events.LeaseExpired, "", 0, true),
		ev(4, events.Leased, "c2", 2, false),
		ev(5, events.Running, "", 0, false),
		ev(6, events.Succeeded, "", 0, false),
	}
	set, err := events.Replay("A", "train", slices.Values(log))
	if err != nil {
		fmt.Println(err)
		return
	}
	j, _ := set.Job("j1")
	fmt.Println(j.State, j.Attempts, j.FailedClusters, set.Next())

	// A seventh event that the table does not allow is refused.
	err = set.Apply(ev(7, events.Running, "", 0, false))
	fmt.Println(err)
	// Output:
	// succeeded 2 [c1] 7
	// job "j1": running in state succeeded refused: only a leased job starts running
}
