package postgres

import (
	"context"
	"testing"
	"time"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/backend"
	"github.com/flotilla-sched/flotilla/server"
)

// The queue tree's usage memory is state: stored in PostgreSQL with the
// usage history (share/<queue>), it is what a service opened again over
// the database starts from, also after a cycle that returned none. Groups
// and the queues' tree fields come back too.
func TestTreeUsageAndTheTreeSurviveARestartOverPostgreSQL(t *testing.T) {
	ctx := context.Background()
	u := freshSchema(t)
	clock := &fixedClock{now: time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)}
	first := open(t, u)
	srv := newServer(t, first, clock, "first")
	if err := srv.CreateGroup(ctx, flotilla.QueueGroup{Name: "research", Guaranteed: flotilla.Resources{16000, flotilla.Absent}}); err != nil {
		t.Fatal(err)
	}
	if err := srv.CreateQueue(ctx, flotilla.Queue{Name: "nlp", Parent: "research", Limit: flotilla.Resources{flotilla.Absent, 1 << 30}}); err != nil {
		t.Fatal(err)
	}
	at := clock.now.Add(-time.Minute)
	// The records a cycle of a service with usage memory on leaves.
	if err := first.PutUsage(ctx, []backend.UsageRecord{{Key: server.UsageKeyShare + "nlp", Value: []float64{0.375, 0}, At: at}}); err != nil {
		t.Fatal(err)
	}
	first.Close()

	second := open(t, u)
	srv = newServer(t, second, clock, "second")
	got := srv.TreeUsage("")
	if got.Usage["nlp"] != 0.375 || len(got.Usage) != 1 || !got.Time.Equal(at) {
		t.Fatalf("TreeUsage after a restart = %+v, want nlp 0.375 at %v", got, at)
	}
	clock.now = clock.now.Add(time.Second)
	if _, err := srv.Cycle(ctx); err != nil { // the scheduler returns no usage: the last is kept
		t.Fatal(err)
	}
	second.Close()

	third := open(t, u)
	srv = newServer(t, third, clock, "third")
	if got := srv.TreeUsage(""); got.Usage["nlp"] != 0.375 || !got.Time.Equal(at) {
		t.Fatalf("TreeUsage after a cycle and a second restart = %+v, want nlp 0.375 at %v", got, at)
	}
	q, err := srv.Queue(ctx, "nlp")
	if err != nil || q.Parent != "research" || q.Limit[1] != 1<<30 || q.Limit[0] != flotilla.Absent {
		t.Fatalf("queue nlp after restarts = %+v, %v", q.Queue, err)
	}
	g, err := srv.Group(ctx, "research")
	if err != nil || g.Guaranteed[0] != 16000 {
		t.Fatalf("group research after restarts = %+v, %v", g.QueueGroup, err)
	}
}
