package backendtest

import (
	"context"
	"fmt"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/backend"
	"github.com/flotilla-sched/flotilla/events"
)

// jobsByID checks the optional backend.JobLookup (nothing on a backend
// without it): every id answered at its place, as Job answers it; a
// missing or empty id as the zero record, whatever recs held; an id given
// twice at both places; recs of another length refused; a batch of
// 10,000 ids; a cancelled context and a closed backend.
func jobsByID(t checker, b backend.Backend) {
	l, ok := b.(backend.JobLookup)
	if !ok {
		return
	}
	ctx := context.Background()
	mustQueue(t, b, "A")
	mustCommit(t, b, submit("A", "s", "j1", "j2", "j3"))
	mustCommit(t, b, &backend.Write{Events: []events.Event{
		ev("A", "s", "j2", events.Cancelled, 1),
		lease("A", "s", "j3", "c1", "n1", 1, 2),
	}})
	ids := []string{"j3", "nope", "j1", "", "j3", "j2"}
	recs := make([]backend.Record, len(ids))
	stale := backend.Record{Spec: spec("stale", "A", "s", ""), State: events.Job{ID: "stale", State: events.RunningState}}
	for i := range recs {
		recs[i] = stale
	}
	if err := l.JobsByID(ctx, ids, recs); err != nil {
		t.Fatalf("JobsByID(%q): %v", ids, err)
	}
	wantRecords(t, b, ids, recs)

	err := l.JobsByID(ctx, ids, recs[:2])
	wantErr(t, "JobsByID with recs of another length", err, flotilla.ErrInconsistent)
	wantFieldError(t, "JobsByID with recs of another length", err)
	if recs[0].Spec.Job == nil || recs[0].Spec.Job.ID != "j3" {
		t.Errorf("JobsByID with recs of another length changed recs[0] to %+v", recs[0].Spec.Job)
	}
	if err := l.JobsByID(ctx, nil, nil); err != nil {
		t.Errorf("JobsByID of no id: %v", err)
	}

	// A large batch: 5,000 stored jobs, last first, each followed by an
	// id that names none.
	stored := make([]string, 5000)
	for i := range stored {
		stored[i] = fmt.Sprintf("big%04d", i)
	}
	mustCommit(t, b, submit("A", "big", stored...))
	ids = ids[:0]
	for i := len(stored) - 1; i >= 0; i-- {
		ids = append(ids, stored[i], stored[i]+"-missing")
	}
	recs = make([]backend.Record, len(ids))
	if err := l.JobsByID(ctx, ids, recs); err != nil {
		t.Fatalf("JobsByID of %d ids: %v", len(ids), err)
	}
	wrong := 0
	for i, id := range ids {
		r := recs[i]
		found := r.Spec.Job != nil && r.Spec.Job.ID == id && r.State.ID == id && r.State.State == events.Queued
		none := r.Spec.Job == nil && r.State.ID == ""
		if (i%2 == 0 && !found) || (i%2 == 1 && !none) {
			if wrong == 0 {
				t.Errorf("JobsByID of %d ids answers %s at %d with %+v, state %+v", len(ids), id, i, r.Spec.Job, r.State)
			}
			wrong++
		}
	}
	if wrong > 1 {
		t.Errorf("JobsByID of %d ids answers %d of them wrongly", len(ids), wrong)
	}

	cctx, cancel := context.WithCancel(ctx)
	cancel()
	wantErr(t, "JobsByID with a cancelled context", l.JobsByID(cctx, ids[:1], recs[:1]), context.Canceled)
	if err := b.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	wantErr(t, "JobsByID after Close", l.JobsByID(ctx, ids[:1], recs[:1]), backend.ErrClosed)
}

// wantRecords reports each of recs that differs from what Job says of
// ids[i]: the zero record for a job that does not exist.
func wantRecords(t checker, b backend.Backend, ids []string, recs []backend.Record) {
	t.Helper()
	for i, id := range ids {
		got := recs[i]
		want, err := b.Job(context.Background(), id)
		if err != nil {
			wantErr(t, fmt.Sprintf("Job(%q)", id), err, backend.ErrNotFound)
			if got.Spec.Job != nil || got.State.ID != "" {
				t.Errorf("JobsByID answers %q (there is none) at %d with %+v, %+v; want the zero record", id, i, got.Spec, got.State)
			}
			continue
		}
		if got.Spec.Job == nil || got.Spec.Job.ID != id || got.Spec.ClientID != want.Spec.ClientID ||
			got.Spec.TerminationGracePeriod != want.Spec.TerminationGracePeriod || got.Spec.Principal != want.Spec.Principal {
			t.Errorf("JobsByID answers %q at %d with spec %+v, want %+v", id, i, got.Spec, want.Spec)
			continue
		}
		if d := sameJob(got.State, want.State); d != "" {
			t.Errorf("JobsByID answers %q at %d with a state that is not Job's: %s", id, i, d)
		}
	}
}
