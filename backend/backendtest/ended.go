package backendtest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/backend"
	"github.com/flotilla-sched/flotilla/events"
)

// endedJobs checks the optional backend.EndedJobs (nothing on a backend
// without it): 300 jobs of one set, submitted at a few times (many
// sharing one) in three writes, some in another set or queue, end in a
// shuffled order as succeeded, failed, cancelled or preempted (some
// cancelled in the write that submits them); live ones stay out.
// Following the pages of every terminal state, at limits 1, 7 and 1000,
// lists what a filter and sort of the records lists (submit time, then
// id), each record as Job reads it. A state that is not terminal and a
// limit out of range are field errors naming them; an unknown set is an
// empty page.
func endedJobs(t checker, b backend.Backend) {
	e, ok := b.(backend.EndedJobs)
	if !ok {
		return
	}
	ctx := context.Background()
	mustQueue(t, b, "A", "B")
	r := rand.New(rand.NewPCG(7, 8))
	var jobs []endedJob
	for w := range 3 {
		write := &backend.Write{}
		for i := range 100 {
			j := endedJob{id: fmt.Sprintf("j%d-%03d", w, r.IntN(1000)*1000+i), q: "A", s: "s", k: r.IntN(3)}
			switch i % 10 {
			case 8:
				j.s = "other"
			case 9:
				j.q = "B"
			}
			sp := spec(j.id, j.q, j.s, "")
			sp.Job.SubmitTime = at(j.k)
			write.Jobs = append(write.Jobs, sp)
			write.Events = append(write.Events, ev(j.q, j.s, j.id, events.Submitted, j.k))
			if i%17 == 0 { // cancelled as it is submitted
				write.Events = append(write.Events, ev(j.q, j.s, j.id, events.Cancelled, j.k))
			}
			jobs = append(jobs, j)
		}
		mustCommit(t, b, write)
	}
	r.Shuffle(len(jobs), func(i, k int) { jobs[i], jobs[k] = jobs[k], jobs[i] })
	for i, j := range jobs {
		rec, err := b.Job(ctx, j.id)
		if err != nil {
			t.Fatalf("Job(%s): %v", j.id, err)
		}
		if rec.State.State.Terminal() || i%6 == 5 {
			continue // some stay live
		}
		w := &backend.Write{}
		switch i % 6 {
		case 0:
			w.Events = append(w.Events, ev(j.q, j.s, j.id, events.Cancelled, 10))
		case 1, 2:
			w.Events = append(w.Events, lease(j.q, j.s, j.id, "c1", "n1", 1, 10), ev(j.q, j.s, j.id, events.Running, 10),
				ev(j.q, j.s, j.id, events.Succeeded, 11))
		case 3:
			f := ev(j.q, j.s, j.id, events.Failed, 11)
			f.ExitCode, f.Reason = 2, "exit"
			w.Events = append(w.Events, lease(j.q, j.s, j.id, "c1", "n1", 1, 10), ev(j.q, j.s, j.id, events.Running, 10), f)
		case 4:
			w.Events = append(w.Events, lease(j.q, j.s, j.id, "c1", "n1", 1, 10), ev(j.q, j.s, j.id, events.Preempted, 11))
		}
		mustCommit(t, b, w)
	}
	for _, st := range []events.State{events.SucceededState, events.FailedState, events.CancelledState, events.PreemptedState} {
		var want []string
		for _, j := range jobs {
			if rec, err := b.Job(ctx, j.id); err == nil && j.q == "A" && j.s == "s" && rec.State.State == st {
				want = append(want, j.id)
			}
		}
		slices.SortFunc(want, func(x, y string) int {
			kx, ky := submitK(jobs, x), submitK(jobs, y)
			if kx != ky {
				return kx - ky
			}
			return strings.Compare(x, y)
		})
		if len(want) == 0 {
			t.Fatalf("the suite ended no job of A/s as %s", st)
		}
		for _, limit := range []int{1, 7, backend.MaxEndedPage} {
			q := backend.EndedQuery{Queue: "A", JobSet: "s", State: st, Limit: limit}
			var got []string
			for range 1000 {
				page, err := e.EndedJobs(ctx, q)
				if err != nil {
					t.Fatalf("EndedJobs(%+v): %v", q, err)
				}
				if len(page) > limit {
					t.Fatalf("EndedJobs(%+v) returned %d records", q, len(page))
				}
				for _, rec := range page {
					got = append(got, rec.Spec.Job.ID)
					wantRecords(t, b, []string{rec.Spec.Job.ID}, []backend.Record{rec})
				}
				if len(page) < limit {
					break
				}
				last := page[len(page)-1].Spec.Job
				q.After = &backend.EndedAfter{SubmitTime: last.SubmitTime, ID: last.ID}
			}
			if !slices.Equal(got, want) {
				t.Errorf("EndedJobs of A/s %s, pages of %d: %q, want %q", st, limit, got, want)
			}
		}
	}
	endedCounts(t, b, jobs)
	page, err := e.EndedJobs(ctx, backend.EndedQuery{Queue: "A", JobSet: "none", State: events.CancelledState, Limit: 5})
	if err != nil || len(page) != 0 {
		t.Errorf("EndedJobs of a set with no job: %d records, %v; want none", len(page), err)
	}
	_, err = e.EndedJobs(ctx, backend.EndedQuery{Queue: "A", JobSet: "s", State: events.Queued, Limit: 0})
	wantErr(t, "EndedJobs of queued jobs, limit 0", err, flotilla.ErrOutOfRange)
	for _, f := range []string{"state", "limit"} {
		if err == nil || !strings.Contains(err.Error(), f) {
			t.Errorf("EndedJobs of queued jobs, limit 0: %v, want it to name %s", err, f)
		}
	}
}

// endedCounts checks the optional backend.EndedCounts (nothing on a
// backend without it) on the jobs of the endedJobs rule: each set's
// counts per terminal state are those of its records; an unknown set's
// are 0.
func endedCounts(t checker, b backend.Backend, jobs []endedJob) {
	c, ok := b.(backend.EndedCounts)
	if !ok {
		return
	}
	ctx := context.Background()
	want := map[[2]string]backend.EndedCount{}
	for _, j := range jobs {
		rec, err := b.Job(ctx, j.id)
		if err != nil {
			t.Fatalf("Job(%s): %v", j.id, err)
		}
		n := want[[2]string{j.q, j.s}]
		n.Add(rec.State.State, 1)
		want[[2]string{j.q, j.s}] = n
	}
	want[[2]string{"A", "none"}] = backend.EndedCount{}
	for k, w := range want {
		got, err := c.EndedCounts(ctx, k[0], k[1])
		if err != nil || got != w {
			t.Errorf("EndedCounts(%s, %s) = %+v, %v; want %+v", k[0], k[1], got, err, w)
		}
	}
}

// endedJob is a job of the endedJobs rule: id, queue, set, and k of its
// submit time at(k).
type endedJob struct {
	id, q, s string
	k        int
}

func submitK(jobs []endedJob, id string) int {
	for _, j := range jobs {
		if j.id == id {
			return j.k
		}
	}
	return -1
}

// jobSetNames checks the optional backend.JobSetNames (nothing on a
// backend without it): 40 job sets of queue A, written in a shuffled
// order over several writes, the jobs of some all ended, and 3 of queue
// B. Following the pages of A at limits 1, 7 and 1000 lists every set of
// A once, by name, live or ended, none of B's; a page after a name that
// is no set's starts at the next; an unknown queue has none; a limit out
// of range is a field error naming it.
func jobSetNames(t checker, b backend.Backend) {
	e, ok := b.(backend.JobSetNames)
	if !ok {
		return
	}
	ctx := context.Background()
	mustQueue(t, b, "A", "B")
	r := rand.New(rand.NewPCG(9, 10))
	var want []string
	for i := range 40 {
		want = append(want, fmt.Sprintf("set-%02d", i))
	}
	order := slices.Clone(want)
	r.Shuffle(len(order), func(i, k int) { order[i], order[k] = order[k], order[i] })
	for i, s := range order {
		w := &backend.Write{}
		for k := range 2 {
			id := fmt.Sprintf("A-%s-%d", s, k)
			w.Jobs = append(w.Jobs, spec(id, "A", s, ""))
			w.Events = append(w.Events, ev("A", s, id, events.Submitted, 0))
			if i%3 == 0 {
				w.Events = append(w.Events, ev("A", s, id, events.Cancelled, 1))
			}
		}
		if i < 3 {
			id := "B-" + s
			w.Jobs = append(w.Jobs, spec(id, "B", "b-"+s, ""))
			w.Events = append(w.Events, ev("B", "b-"+s, id, events.Submitted, 0))
		}
		mustCommit(t, b, w)
	}
	for _, limit := range []int{1, 7, backend.MaxEndedPage} {
		var got []string
		after := ""
		for range 100 {
			page, err := e.JobSetNames(ctx, "A", after, limit)
			if err != nil {
				t.Fatalf("JobSetNames(A, %q, %d): %v", after, limit, err)
			}
			if len(page) > limit {
				t.Fatalf("JobSetNames(A, %q, %d) returned %d names", after, limit, len(page))
			}
			got = append(got, page...)
			if len(page) < limit {
				break
			}
			after = page[len(page)-1]
		}
		if !slices.Equal(got, want) {
			t.Errorf("JobSetNames of A, pages of %d: %q, want %q", limit, got, want)
		}
	}
	page, err := e.JobSetNames(ctx, "A", "set-10x", 2)
	if err != nil || !slices.Equal(page, []string{"set-11", "set-12"}) {
		t.Errorf("JobSetNames of A after set-10x: %q, %v; want set-11, set-12", page, err)
	}
	page, err = e.JobSetNames(ctx, "none", "", 5)
	if err != nil || len(page) != 0 {
		t.Errorf("JobSetNames of an unknown queue: %q, %v; want none", page, err)
	}
	_, err = e.JobSetNames(ctx, "A", "", 0)
	wantErr(t, "JobSetNames, limit 0", err, flotilla.ErrOutOfRange)
	if err == nil || !strings.Contains(err.Error(), "limit") {
		t.Errorf("JobSetNames, limit 0: %v, want it to name limit", err)
	}
}
