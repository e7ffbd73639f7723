package backendtest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/flotilla-sched/flotilla/backend"
	"github.com/flotilla-sched/flotilla/events"
)

// concurrentWriters: several goroutines commit at once, each write
// submitting one job into a job set all share and one into its own, and
// cancelling its previous shared job. Every log must come out gap-free
// from 1, each event stored once, at the sequence number Commit returned.
func concurrentWriters(t checker, b backend.Backend) {
	const writers, commits = 4, 40
	mustQueue(t, b, "A")
	var mu sync.Mutex
	returned := map[string]events.Event{} // by queue/set/job/type
	var wg sync.WaitGroup
	for g := range writers {
		wg.Go(func() {
			own := fmt.Sprintf("own-%d", g)
			prev := ""
			for k := range commits {
				shared, mine := fmt.Sprintf("g%d-s%d", g, k), fmt.Sprintf("g%d-o%d", g, k)
				w := &backend.Write{
					Jobs:   []backend.JobSpec{spec(shared, "A", "shared", ""), spec(mine, "A", own, "")},
					Events: []events.Event{ev("A", "shared", shared, events.Submitted, k), ev("A", own, mine, events.Submitted, k)},
				}
				if prev != "" {
					w.Events = append(w.Events, ev("A", "shared", prev, events.Cancelled, k))
				}
				out, err := b.Commit(context.Background(), w)
				if err != nil {
					t.Errorf("writer %d, commit %d: %v", g, k, err)
					return
				}
				mu.Lock()
				for _, e := range out {
					returned[e.JobSet+"/"+e.Job+"/"+e.Type.String()] = e
				}
				mu.Unlock()
				prev = shared
			}
		})
	}
	wg.Wait()
	sets := []string{"shared"}
	for g := range writers {
		sets = append(sets, fmt.Sprintf("own-%d", g))
	}
	stored := 0
	for _, s := range sets {
		es := mustEvents(t, b, "A", s)
		stored += len(es)
		want := commits
		if s == "shared" {
			want = writers * (2*commits - 1)
		}
		if len(es) != want {
			t.Errorf("job set %s has %d events, want %d", s, len(es), want)
		}
		wantSeqs(t, "job set "+s, es, 1)
		seen := map[string]bool{}
		for _, e := range es {
			k := e.JobSet + "/" + e.Job + "/" + e.Type.String()
			if seen[k] {
				t.Errorf("job set %s stores %s twice", s, k)
			}
			seen[k] = true
			if r, ok := returned[k]; !ok || r.Seq != e.Seq {
				t.Errorf("job set %s stores %s at seq %d; Commit returned %+v", s, k, e.Seq, r)
			}
		}
		if _, err := events.Replay("A", s, slices.Values(es)); err != nil {
			t.Errorf("replay of job set %s: %v", s, err)
		}
	}
	if stored != len(returned) {
		t.Errorf("%d events stored, %d returned by Commit", stored, len(returned))
	}
}

// lifeCycles is a history over two queues and three job sets, in five
// writes, with every kind of event: succeeded, requeued after an expired
// lease, cancelled after cancel-requested, preempted and requeued, failed,
// still running, still queued, returned and failed, failed and retried
// under a retry rule avoiding its node, then leased again.
func lifeCycles() []*backend.Write {
	A, B := "A", "B"
	expired := ev(A, "s1", "j2", events.LeaseExpired, 13)
	expired.Requeued, expired.Reason = true, "lease not renewed for 31s"
	preempted := ev(A, "s2", "j4", events.Preempted, 14)
	preempted.Requeued, preempted.Reason = true, "preempted by urgency for job x"
	failed := ev(A, "s2", "j4", events.Failed, 22)
	failed.ExitCode, failed.Reason = 3, "exit code 3"
	returned := ev(B, "s1", "j7", events.LeaseReturned, 15)
	returned.Reason = "could not start"
	retried := ev(A, "s2", "j5", events.RunFailed, 27)
	retried.ExitCode, retried.Rule, retried.AvoidNode, retried.Reason = 137, 2, true, "exit code 137 (oom): rule 2 retries it"
	w1 := submit(A, "s1", "j1", "j2", "j3")
	w2 := submit(A, "s2", "j4", "j5")
	w2.Jobs = append(w2.Jobs, spec("j6", B, "s1", ""), spec("j7", B, "s1", ""))
	w2.Events = append(w2.Events, ev(B, "s1", "j6", events.Submitted, 5), ev(B, "s1", "j7", events.Submitted, 5))
	return []*backend.Write{w1, w2,
		{Events: []events.Event{
			lease(A, "s1", "j1", "c1", "n1", 1, 10), lease(A, "s1", "j2", "c1", "n2", 1, 10),
			lease(A, "s2", "j4", "c2", "n1", 1, 10), lease(A, "s2", "j5", "c2", "n2", 1, 10),
			lease(B, "s1", "j7", "c1", "n3", 1, 10),
		}},
		{Events: []events.Event{
			ev(A, "s1", "j1", events.Running, 11), ev(A, "s1", "j1", events.Succeeded, 12),
			expired, preempted, ev(A, "s2", "j5", events.Running, 11), returned,
		}},
		{Events: []events.Event{
			lease(A, "s1", "j2", "c2", "n1", 2, 20), ev(A, "s1", "j2", events.Running, 21),
			ev(A, "s1", "j2", events.CancelRequested, 22), ev(A, "s1", "j2", events.Cancelled, 23),
			lease(A, "s2", "j4", "c1", "n4", 2, 21), failed,
		}},
		{Events: []events.Event{reprio(A, "s1", "j3", 1, 24), reprio(A, "s1", "j3", 0, 25),
			reprio(B, "s1", "j6", 5, 24), lease(B, "s1", "j6", "c1", "n1", 1, 26),
			retried, lease(A, "s2", "j5", "c1", "n2", 2, 28)}},
	}
}

// reprio is a reprioritized event giving job j priority p.
func reprio(q, s, j string, p uint32, k int) events.Event {
	e := ev(q, s, j, events.Reprioritized, k)
	e.Priority, e.Reason = p, "reprioritized by ops"
	return e
}

// oracle applies writes' events with events.Transition, numbering each
// log itself: the states a backend must store.
func oracle(t checker, writes []*backend.Write) map[string]events.Job {
	want := map[string]events.Job{}
	for _, w := range writes {
		for _, e := range w.Events {
			n, err := events.Transition(want[e.Job], e)
			if err != nil {
				t.Fatalf("the suite's history is refused: %v", err)
			}
			want[e.Job] = n
		}
	}
	return want
}

func replayEqualsStored(t checker, b backend.Backend) {
	ctx := context.Background()
	mustQueue(t, b, "A", "B")
	writes := lifeCycles()
	for _, w := range writes {
		mustCommit(t, b, w)
	}
	want := oracle(t, writes)
	replayed := map[string]events.Job{}
	for _, s := range [][2]string{{"A", "s1"}, {"A", "s2"}, {"B", "s1"}} {
		set, err := events.Replay(s[0], s[1], slices.Values(mustEvents(t, b, s[0], s[1])))
		if err != nil {
			t.Errorf("replay of %s/%s: %v", s[0], s[1], err)
			continue
		}
		for j := range set.Jobs() {
			replayed[j.ID] = j
		}
	}
	for _, id := range slices.Sorted(maps.Keys(want)) {
		r, err := b.Job(ctx, id)
		if err != nil {
			t.Errorf("Job(%s): %v", id, err)
			continue
		}
		if d := sameJob(r.State, want[id]); d != "" {
			t.Errorf("Job(%s).State differs from the history's: %s", id, d)
		}
		if d := sameJob(replayed[id], r.State); d != "" {
			t.Errorf("replay of %s's log differs from Job(%s).State: %s", id, id, d)
		}
	}
	live := liveStates(t, b)
	for _, id := range slices.Sorted(maps.Keys(want)) {
		j, ok := live[id]
		switch {
		case want[id].State.Terminal() && ok:
			t.Errorf("LiveJobs visits %s, which is %s", id, want[id].State)
		case !want[id].State.Terminal() && !ok:
			t.Errorf("LiveJobs misses %s, which is %s", id, want[id].State)
		case ok:
			if d := sameJob(j, replayed[id]); d != "" {
				t.Errorf("LiveJobs' state of %s differs from its replay: %s", id, d)
			}
		}
	}
}

// liveStates collects LiveJobs by job id, reporting a job visited twice.
func liveStates(t checker, b backend.Backend) map[string]events.Job {
	t.Helper()
	live := map[string]events.Job{}
	err := b.LiveJobs(context.Background(), func(r backend.Record) error {
		if _, dup := live[r.State.ID]; dup {
			t.Errorf("LiveJobs visits %s twice", r.State.ID)
		}
		if r.Spec.Job == nil || r.Spec.Job.ID != r.State.ID {
			t.Errorf("LiveJobs gives %s with spec %+v", r.State.ID, r.Spec)
		}
		live[r.State.ID] = r.State
		return nil
	})
	if err != nil {
		t.Fatalf("LiveJobs: %v", err)
	}
	return live
}

func liveJobsOmitsTerminal(t checker, b backend.Backend) {
	mustQueue(t, b, "A")
	ids := make([]string, 600) // more than one chunk of any reasonable reader
	for i := range ids {
		ids[i] = fmt.Sprintf("j%03d", i)
	}
	mustCommit(t, b, submit("A", "s", ids...))
	w := &backend.Write{}
	for i := 0; i < len(ids); i += 3 {
		w.Events = append(w.Events, ev("A", "s", ids[i], events.Cancelled, 1))
	}
	mustCommit(t, b, w)
	live := liveStates(t, b)
	for i, id := range ids {
		_, ok := live[id]
		if ok != (i%3 != 0) {
			t.Errorf("LiveJobs visits %s: %v, want %v", id, ok, i%3 != 0)
		}
	}
	stop := errors.New("stop")
	n := 0
	err := b.LiveJobs(context.Background(), func(backend.Record) error { n++; return stop })
	if !errors.Is(err, stop) || n != 1 {
		t.Errorf("LiveJobs whose callback fails: %v after %d calls, want the callback's error after 1", err, n)
	}
}
