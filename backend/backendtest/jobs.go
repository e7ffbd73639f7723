package backendtest

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/backend"
	"github.com/flotilla-sched/flotilla/events"
)

func commitStores(t checker, b backend.Backend) {
	ctx := context.Background()
	mustQueue(t, b, "A")
	w := submit("A", "s", "j1", "j2")
	w.Jobs[1].ClientID = "c-2"
	in := slices.Clone(w.Events) // Commit may return w.Events, updated
	out := mustCommit(t, b, w)
	for i, e := range out {
		want := in[i]
		want.Seq = uint64(i + 1)
		if d := sameEvent(e, want); d != "" {
			t.Errorf("Commit returned event %d: %s", i, d)
		}
	}
	r, err := b.Job(ctx, "j2")
	if err != nil {
		t.Fatalf("Job(j2): %v", err)
	}
	want := spec("j2", "A", "s", "c-2")
	got := r.Spec
	if got.Job == nil || got.Job.ID != "j2" || got.Job.Queue != "A" || got.Job.JobSet != "s" ||
		got.Job.PriorityClass != want.Job.PriorityClass || got.Job.Priority != want.Job.Priority ||
		!got.Job.SubmitTime.Equal(want.Job.SubmitTime) || !got.Job.Requests.Equal(want.Job.Requests) ||
		got.Job.NodeSelector["zone"] != "a" {
		t.Errorf("Job(j2).Spec.Job = %+v, want %+v", got.Job, want.Job)
	}
	if got.ClientID != "c-2" || got.Principal != want.Principal || got.TerminationGracePeriod != want.TerminationGracePeriod ||
		got.ActiveDeadline != want.ActiveDeadline || got.Runtime != want.Runtime || got.ExitCode != want.ExitCode {
		t.Errorf("Job(j2).Spec = %+v, want %+v", got, want)
	}
	wantState := events.Job{ID: "j2", Queue: "A", JobSet: "s", State: events.Queued, Submitted: at(1)}
	if d := sameJob(r.State, wantState); d != "" {
		t.Errorf("Job(j2).State: %s", d)
	}
	_, err = b.Job(ctx, "nope")
	wantErr(t, "Job(nope)", err, backend.ErrNotFound)
}

// refusedBatch is 50 new jobs in two job sets, a valid lease of a stored
// job, and last a bad event, whatever makes the write refused.
func refusedBatch(last events.Event) (*backend.Write, []string) {
	w := &backend.Write{}
	var ids []string
	for i := range 50 {
		id, s := fmt.Sprintf("n%02d", i), []string{"s1", "s2"}[i%2]
		ids = append(ids, id)
		w.Jobs = append(w.Jobs, spec(id, "A", s, "c-"+id))
		w.Events = append(w.Events, ev("A", s, id, events.Submitted, i))
	}
	w.Events = append(w.Events, lease("A", "old", "old", "c1", "n1", 1, 60), last)
	return w, ids
}

// wantUntouched checks that a refused batch from refusedBatch left the
// backend as setupOld made it.
func wantUntouched(t checker, b backend.Backend, ids []string) {
	t.Helper()
	ctx := context.Background()
	wantAbsent(t, b, ids...)
	for _, id := range ids[:3] {
		if _, err := b.JobByClientID(ctx, "A", "c-"+id); !errors.Is(err, backend.ErrNotFound) {
			t.Errorf("JobByClientID(c-%s) after a refused write: %v, want ErrNotFound", id, err)
		}
	}
	for _, s := range []string{"s1", "s2"} {
		if es := mustEvents(t, b, "A", s); len(es) != 0 {
			t.Errorf("job set %s after a refused write has %d events, want 0", s, len(es))
		}
	}
	if es := mustEvents(t, b, "A", "old"); len(es) != 1 {
		t.Errorf("job set old after a refused write has %d events, want 1", len(es))
	}
	if r, err := b.Job(ctx, "old"); err != nil || r.State.State != events.Queued {
		t.Errorf("Job(old) after a refused write = %v, %v; want queued", r.State.State, err)
	}
}

func setupOld(t checker, b backend.Backend) {
	mustQueue(t, b, "A")
	w := submit("A", "old", "old")
	w.Jobs[0].ClientID = "c-old"
	mustCommit(t, b, w)
}

func commitAtomicRefused(t checker, b backend.Backend) {
	setupOld(t, b)
	w, ids := refusedBatch(ev("A", "s2", "n49", events.Running, 61))
	_, err := b.Commit(context.Background(), w)
	wantErr(t, "Commit of a batch whose last event is refused", err, events.ErrRefused)
	wantUntouched(t, b, ids)
	// The batch without its bad event goes through, from sequence 1.
	w.Events = w.Events[:len(w.Events)-1]
	out := mustCommit(t, b, w)
	if out[0].Seq != 1 || out[1].Seq != 1 || out[len(out)-1].Seq != 2 {
		t.Errorf("after a refused write, the batch's sequence numbers start at %d, %d, lease %d; want 1, 1, 2",
			out[0].Seq, out[1].Seq, out[len(out)-1].Seq)
	}
}

func commitAtomicDuplicate(t checker, b backend.Backend) {
	ctx := context.Background()
	setupOld(t, b)
	// A job id already stored, last of the batch.
	w, ids := refusedBatch(ev("A", "s1", "old", events.Submitted, 61))
	w.Events = slices.Delete(w.Events, 50, 51) // no lease of old: it is resubmitted
	w.Jobs = append(w.Jobs, spec("old", "A", "s1", ""))
	_, err := b.Commit(ctx, w)
	wantErr(t, "Commit of a batch whose last job id is stored", err, backend.ErrDuplicate)
	wantUntouched(t, b, ids)
	// A client id already used in the queue.
	w, ids = refusedBatch(ev("A", "s1", "x", events.Submitted, 61))
	w.Jobs = append(w.Jobs, spec("x", "A", "s1", "c-old"))
	_, err = b.Commit(ctx, w)
	wantErr(t, "Commit of a batch whose last client id is used", err, backend.ErrDuplicate)
	wantUntouched(t, b, append(ids, "x"))
	// A job id twice in one write.
	w, ids = refusedBatch(ev("A", "s1", "n00", events.Submitted, 61))
	w.Jobs = append(w.Jobs, spec("n00", "A", "s1", ""))
	_, err = b.Commit(ctx, w)
	wantErr(t, "Commit of a batch with a job id twice", err, backend.ErrDuplicate)
	wantUntouched(t, b, ids)
}

func commitUnpaired(t checker, b backend.Backend) {
	ctx := context.Background()
	mustQueue(t, b, "A")
	w := submit("A", "s", "j1", "j2")
	w.Events = w.Events[:1] // j2 has no submitted event
	_, err := b.Commit(ctx, w)
	wantFieldError(t, "Commit of a job without its submitted event", err)
	wantAbsent(t, b, "j1", "j2")
	w = submit("A", "s", "j1", "j2")
	w.Jobs = w.Jobs[:1] // j2's submitted event has no job
	_, err = b.Commit(ctx, w)
	wantFieldError(t, "Commit of a submitted event without its job", err)
	wantAbsent(t, b, "j1", "j2")
	w = submit("A", "s", "j1")
	w.Jobs[0].Job.Requests = flotilla.Resources{1}
	_, err = b.Commit(ctx, w)
	wantFieldError(t, "Commit of a job whose requests are not in the schema", err)
	_, err = b.Commit(ctx, &backend.Write{Events: []events.Event{ev("A", "s", "ghost", events.Cancelled, 1)}})
	wantErr(t, "Commit of an event of a job never submitted", err, backend.ErrNotFound)
	if es := mustEvents(t, b, "A", "s"); len(es) != 0 {
		t.Errorf("job set s after refused writes has %d events, want 0", len(es))
	}
}

func commitUnknownQueue(t checker, b backend.Backend) {
	mustQueue(t, b, "A")
	_, err := b.Commit(context.Background(), submit("nope", "s", "j1"))
	wantErr(t, "Commit to queue nope", err, backend.ErrNotFound)
	wantAbsent(t, b, "j1")
}

func sequenceGapFree(t checker, b backend.Backend) {
	mustQueue(t, b, "A", "B")
	// One write over three job sets, interleaved.
	w := &backend.Write{}
	sets := []struct{ q, s string }{{"A", "s1"}, {"A", "s2"}, {"B", "s1"}}
	for i := range 30 {
		q, s := sets[i%3].q, sets[i%3].s
		id := fmt.Sprintf("j%02d", i)
		w.Jobs = append(w.Jobs, spec(id, q, s, ""))
		w.Events = append(w.Events, ev(q, s, id, events.Submitted, i))
	}
	out := mustCommit(t, b, w)
	for i, e := range out {
		if want := uint64(i/3 + 1); e.Seq != want {
			t.Errorf("Commit gave event %d (%s/%s) seq %d, want %d", i, e.Queue, e.JobSet, e.Seq, want)
		}
	}
	// Later writes continue each log.
	for k := range 5 {
		w := &backend.Write{}
		for i := k; i < 30; i += 5 {
			q, s := sets[i%3].q, sets[i%3].s
			w.Events = append(w.Events, ev(q, s, fmt.Sprintf("j%02d", i), events.Cancelled, 40+k))
		}
		mustCommit(t, b, w)
	}
	for _, s := range sets {
		es := mustEvents(t, b, s.q, s.s)
		if len(es) != 20 {
			t.Errorf("%s/%s has %d events, want 20", s.q, s.s, len(es))
		}
		wantSeqs(t, s.q+"/"+s.s, es, 1)
		seen := map[string]int{}
		for _, e := range es {
			seen[e.Job+"/"+e.Type.String()]++
		}
		for k, n := range seen {
			if n != 1 {
				t.Errorf("%s/%s: %s stored %d times", s.q, s.s, k, n)
			}
		}
	}
}

func eventsPaging(t checker, b backend.Backend) {
	ctx := context.Background()
	mustQueue(t, b, "A")
	ids := make([]string, 10)
	for i := range ids {
		ids[i] = fmt.Sprintf("j%d", i)
	}
	all := mustCommit(t, b, submit("A", "s", ids...))
	for _, c := range []struct {
		from       uint64
		limit      int
		first, len int
	}{
		{1, 3, 1, 3}, {4, 3, 4, 3}, {10, 5, 10, 1}, {11, 5, 0, 0}, {100, 0, 0, 0},
		{0, 0, 1, 10}, {1, 0, 1, 10}, {1, -1, 1, 10}, {3, 100, 3, 8},
	} {
		got, err := b.Events(ctx, "A", "s", c.from, c.limit)
		what := fmt.Sprintf("Events(from %d, limit %d)", c.from, c.limit)
		if err != nil {
			t.Errorf("%s: %v", what, err)
			continue
		}
		if len(got) != c.len {
			t.Errorf("%s: %d events, want %d", what, len(got), c.len)
			continue
		}
		for i, e := range got {
			if d := sameEvent(e, all[c.first-1+i]); d != "" {
				t.Errorf("%s: event %d: %s", what, i, d)
			}
		}
	}
	if got, err := b.Events(ctx, "A", "never", 1, 0); err != nil || len(got) != 0 {
		t.Errorf("Events of a job set with no events = %v, %v; want none and no error", got, err)
	}
	_, err := b.Events(ctx, "nope", "s", 1, 0)
	wantErr(t, "Events of queue nope", err, backend.ErrNotFound)
}

func clientIDUnique(t checker, b backend.Backend) {
	ctx := context.Background()
	mustQueue(t, b, "A", "B")
	w := submit("A", "s", "a1")
	w.Jobs[0].ClientID = "train-7"
	mustCommit(t, b, w)
	w = submit("B", "s", "b1")
	w.Jobs[0].ClientID = "train-7" // another queue: allowed
	mustCommit(t, b, w)
	for q, want := range map[string]string{"A": "a1", "B": "b1"} {
		if id, err := b.JobByClientID(ctx, q, "train-7"); err != nil || id != want {
			t.Errorf("JobByClientID(%s, train-7) = %q, %v; want %q", q, id, err, want)
		}
	}
	w = submit("A", "s2", "a2")
	w.Jobs[0].ClientID = "train-7"
	_, err := b.Commit(ctx, w)
	wantErr(t, "a client id used again in its queue", err, backend.ErrDuplicate)
	wantFieldError(t, "a client id used again in its queue", err)
	wantAbsent(t, b, "a2")
	_, err = b.JobByClientID(ctx, "A", "train-8")
	wantErr(t, "JobByClientID of an unused client id", err, backend.ErrNotFound)
	// Jobs without a client id never collide.
	mustCommit(t, b, submit("A", "s", "a3", "a4"))
	if l, ok := b.(backend.ClientIDLookup); ok {
		ids := []string{"stale", "stale", "stale", "stale"}
		if err := l.JobsByClientID(ctx, "A", []string{"train-8", "train-7", "", "train-7"}, ids); err != nil {
			t.Errorf("JobsByClientID: %v", err)
		} else if want := []string{"", "a1", "", "a1"}; !slices.Equal(ids, want) {
			t.Errorf("JobsByClientID(A, [train-8 train-7 \"\" train-7]) = %q, want %q", ids, want)
		}
		err := l.JobsByClientID(ctx, "A", []string{"train-7"}, ids)
		wantErr(t, "JobsByClientID with ids of another length", err, flotilla.ErrInconsistent)
		wantFieldError(t, "JobsByClientID with ids of another length", err)
	}
}

func fencing(t checker, b backend.Backend) {
	ctx := context.Background()
	mustQueue(t, b, "A")
	commit := func(fence uint64, id string) error {
		w := submit("A", "s", id)
		w.Fence = fence
		_, err := b.Commit(ctx, w)
		return err
	}
	if err := commit(0, "u1"); err != nil {
		t.Fatalf("an unfenced write before any fenced one: %v", err)
	}
	if err := commit(5, "f5"); err != nil {
		t.Fatalf("fence 5: %v", err)
	}
	wantErr(t, "fence 3 after fence 5", commit(3, "f3"), backend.ErrFenced)
	wantErr(t, "fence 0 after fence 5", commit(0, "u2"), backend.ErrFenced)
	if err := commit(5, "f5b"); err != nil {
		t.Errorf("fence 5 again: %v", err)
	}
	// An empty write raises the fence.
	if _, err := b.Commit(ctx, &backend.Write{Fence: 7}); err != nil {
		t.Errorf("an empty write with fence 7: %v", err)
	}
	wantErr(t, "fence 6 after fence 7", commit(6, "f6"), backend.ErrFenced)
	wantAbsent(t, b, "f3", "u2", "f6")
	if err := commit(8, "f8"); err != nil {
		t.Errorf("fence 8: %v", err)
	}
	es := mustEvents(t, b, "A", "s")
	wantSeqs(t, "job set s after refused fenced writes", es, 1)
	if len(es) != 4 {
		t.Errorf("job set s has %d events, want 4 (u1, f5, f5b, f8)", len(es))
	}
}

func refusedTransition(t checker, b backend.Backend) {
	ctx := context.Background()
	mustQueue(t, b, "A")
	mustCommit(t, b, submit("A", "s", "j1"))
	for _, e := range []events.Event{
		ev("A", "s", "j1", events.Running, 1),         // queued does not start running
		ev("A", "s", "j1", events.Submitted, 1),       // exists already (and no job in the write)
		lease("A", "s", "j1", "c1", "n1", 2, 1),       // attempt 2, want 1
		ev("A", "s", "j1", events.CancelRequested, 1), // queued is cancelled, not asked
	} {
		_, err := b.Commit(ctx, &backend.Write{Events: []events.Event{e}})
		if err == nil {
			t.Errorf("Commit of %s on a queued job: no error", e.Type)
		}
	}
	_, err := b.Commit(ctx, &backend.Write{Events: []events.Event{ev("A", "s", "j1", events.Running, 1)}})
	wantErr(t, "running on a queued job", err, events.ErrRefused)
	r, err := b.Job(ctx, "j1")
	if err != nil || r.State.State != events.Queued || r.State.Attempts != 0 {
		t.Errorf("Job(j1) after refused events = %+v, %v; want queued, no attempt", r.State, err)
	}
	out := mustCommit(t, b, &backend.Write{Events: []events.Event{lease("A", "s", "j1", "c1", "n1", 1, 2)}})
	if out[0].Seq != 2 {
		t.Errorf("the first accepted event after refusals has seq %d, want 2", out[0].Seq)
	}
}

func cancelledContext(t checker, b backend.Backend) {
	mustQueue(t, b, "A")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := b.Commit(ctx, submit("A", "s", "j1"))
	wantErr(t, "Commit with a cancelled context", err, context.Canceled)
	wantAbsent(t, b, "j1")
	wantErr(t, "CreateQueue with a cancelled context", b.CreateQueue(ctx, flotilla.Queue{Name: "B"}), context.Canceled)
	wantNames(t, "ListQueues after a cancelled CreateQueue", queueNames(t, b), "A")
	_, err = b.Events(ctx, "A", "s", 1, 0)
	wantErr(t, "Events with a cancelled context", err, context.Canceled)
	err = b.LiveJobs(ctx, func(backend.Record) error { return nil })
	wantErr(t, "LiveJobs with a cancelled context", err, context.Canceled)
}
