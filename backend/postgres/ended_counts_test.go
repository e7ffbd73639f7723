package postgres

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/backend"
	"github.com/flotilla-sched/flotilla/events"
)

// TestMigration0009CountsTheJobsThatEndedBeforeIt: a database whose jobs
// ended before migration 0009 (its table dropped and the migration
// unrecorded, as before it) gets each set's ended counts when it is
// opened again, and the counts go on from there.
func TestMigration0009CountsTheJobsThatEndedBeforeIt(t *testing.T) {
	ctx := context.Background()
	u := freshSchema(t)
	b := open(t, u)
	if err := b.CreateQueue(ctx, flotilla.Queue{Name: "A"}); err != nil {
		t.Fatal(err)
	}
	submitN(t, b, "A", "s", 0, 30)
	submitN(t, b, "A", "t", 30, 5)
	t0 := time.Date(2026, 11, 22, 11, 0, 0, 0, time.UTC)
	end := func(id, set string, typ events.Type) {
		t.Helper()
		if _, err := b.Commit(ctx, &backend.Write{Events: []events.Event{{Queue: "A", JobSet: set, Job: id, Type: typ, Time: t0}}}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 10 {
		end(jobID(i), "s", events.Cancelled)
	}
	end(jobID(30), "t", events.Cancelled)
	if _, err := b.pool.Exec(ctx, "DROP TABLE ended_counts; DELETE FROM schema_migrations WHERE version = 9"); err != nil {
		t.Fatal(err)
	}
	b.Close()
	b = open(t, u)
	end(jobID(10), "s", events.Cancelled)
	for set, want := range map[string]int{"s": 11, "t": 1, "none": 0} {
		got, err := b.EndedCounts(ctx, "A", set)
		if err != nil || got != (backend.EndedCount{Cancelled: want}) {
			t.Errorf("EndedCounts(A, %s) = %+v, %v; want %d cancelled", set, got, err, want)
		}
	}
}

// jobID is submitN's id of job i.
func jobID(i int) string { return fmt.Sprintf("j%05d", i) }
