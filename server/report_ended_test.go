package server

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/backend"
	"github.com/flotilla-sched/flotilla/backend/memory"
)

// readSpy is a memory backend that counts the reads of one job (Job) and
// of many (JobsByID), and runs during, once, in the first read that names
// a job of watch, before it reads (after it, with afterRead).
type readSpy struct {
	*memory.Backend
	jobReads, batchReads atomic.Int64
	watch                map[string]bool
	during               func(ctx context.Context)
	afterRead            bool
	ran                  atomic.Bool
}

func (b *readSpy) hook(ctx context.Context, ids ...string) {
	if b.during == nil {
		return
	}
	for _, id := range ids {
		if b.watch[id] && !b.ran.Swap(true) {
			b.during(ctx)
			return
		}
	}
}

func (b *readSpy) Job(ctx context.Context, id string) (backend.Record, error) {
	b.jobReads.Add(1)
	if !b.afterRead {
		b.hook(ctx, id)
	}
	r, err := b.Backend.Job(ctx, id)
	if b.afterRead {
		b.hook(ctx, id)
	}
	return r, err
}

func (b *readSpy) JobsByID(ctx context.Context, ids []string, recs []backend.Record) error {
	b.batchReads.Add(1)
	if !b.afterRead {
		b.hook(ctx, ids...)
	}
	err := b.Backend.JobsByID(ctx, ids, recs)
	if b.afterRead {
		b.hook(ctx, ids...)
	}
	return err
}

// noJobLookup hides a backend's backend.JobLookup.
type noJobLookup struct{ backend.Backend }

// endedWorld is a world over a readSpy (behind noJobLookup when lookup
// is false) with queue A and cluster c1, where the n jobs of ended ran
// and succeeded (with a grace period of 45s) and the jobs of live, as
// many, are leased to c1 and running.
func endedWorld(t *testing.T, n int, lookup bool) (w *world, spy *readSpy, ended, live []JobReport) {
	t.Helper()
	w = newWorld(t, func(c *Config) {
		spy = &readSpy{Backend: c.Backend.(*memory.Backend)}
		c.Backend = spy
		if !lookup {
			c.Backend = noJobLookup{spy}
		}
	})
	w.queue("A")
	w.report(Report{Cluster: "c1", Nodes: nodesOf("c1", n/4+1, 8)})
	if n == 0 {
		return w, spy, nil, nil
	}
	tpl := cpuJobs(2*n, "1")
	tpl.TerminationGracePeriod = "45s"
	w.submit("A", "s1", tpl)
	require.Equal(t, 2*n, w.cycle().Leased)
	running := held(PhaseRunning, w.report(Report{Cluster: "c1"}).Leases)
	w.report(Report{Cluster: "c1", Jobs: running})
	ended, live = running[:n], running[n:]
	done := append([]JobReport(nil), live...)
	for _, jr := range ended {
		jr.Phase = PhaseSucceeded
		done = append(done, jr)
	}
	w.report(Report{Cluster: "c1", Jobs: done})
	spy.watch = map[string]bool{}
	for _, jr := range ended {
		spy.watch[jr.Job] = true
	}
	spy.jobReads.Store(0)
	spy.batchReads.Store(0)
	return w, spy, ended, live
}

func TestReportReadsTheEndedJobsItListsInOneBackendCall(t *testing.T) {
	for _, tc := range []struct {
		ended  int
		lookup bool
		// the reads the report makes: of many jobs, of one job
		batch, one int64
	}{
		{ended: 0, lookup: true},
		{ended: 1, lookup: true, batch: 1},
		{ended: 40, lookup: true, batch: 1},
		// A backend without JobLookup: one read per ended job, still
		// before the lock is taken.
		{ended: 3, lookup: false, one: 3},
	} {
		t.Run(strconv.Itoa(tc.ended)+" ended, lookup "+strconv.FormatBool(tc.lookup), func(t *testing.T) {
			w, spy, ended, live := endedWorld(t, tc.ended, tc.lookup)
			// An executor back from a failover: it lists its ended jobs as
			// still running, and its live ones.
			reply := w.report(Report{Cluster: "c1", Jobs: append(append([]JobReport(nil), ended...), live...)})
			require.Equal(t, tc.batch, spy.batchReads.Load(), "reads of many jobs")
			require.Equal(t, tc.one, spy.jobReads.Load(), "reads of one job")
			require.Len(t, reply.Kill, len(ended))
			for i, k := range reply.Kill {
				require.Equal(t, Kill{Job: ended[i].Job, Attempt: 1, GracePeriod: 45 * time.Second,
					Reason: "lease 1 is no longer live"}, k)
			}
			require.Empty(t, reply.Leases)
		})
	}
}

func TestReportOfEndedJobsKeepsItsErrorsAndChangesNothingWithOneRead(t *testing.T) {
	w, spy, ended, live := endedWorld(t, 3, true)
	before := w.stored([2]string{"A", "s1"})
	r := Report{Cluster: "c1", Jobs: []JobReport{
		{Job: ended[0].Job, Attempt: 1, Phase: PhaseRunning}, // stale: a kill order, were the report good
		{Job: ended[1].Job, Attempt: 2, Phase: PhaseRunning}, // never leased twice
		{Job: "nope", Attempt: 1, Phase: PhaseRunning},
		{Job: live[0].Job, Attempt: 1, Phase: PhaseSucceeded}, // not applied: the report is refused
		{Job: ended[2].Job, Attempt: 1, Phase: "exploded"},
	}}
	reply, err := w.srv.Report(w.ctx, &r)
	require.Nil(t, reply)
	requireProblems(t, err,
		problem{"jobs[1].attempt", "2", ErrNotHeld},
		problem{"jobs[2].job", "nope", backend.ErrNotFound},
		problem{"jobs[4].phase", "exploded", flotilla.ErrUnknownName},
	)
	w.requireUnchanged(before)
	require.Equal(t, int64(1), spy.batchReads.Load())
	require.Zero(t, spy.jobReads.Load())
}

// TestReportReadsEndedJobsWithoutHoldingTheServiceLock: while a report's
// read of its ended jobs waits, a submit (which takes the service's
// lock) completes.
func TestReportReadsEndedJobsWithoutHoldingTheServiceLock(t *testing.T) {
	for _, lookup := range []bool{true, false} {
		t.Run("lookup "+strconv.FormatBool(lookup), func(t *testing.T) {
			w, spy, ended, _ := endedWorld(t, 5, lookup)
			ctx, cancel := context.WithTimeout(w.ctx, 20*time.Second)
			defer cancel()
			submitted := make(chan error, 1)
			spy.during = func(context.Context) {
				go func() {
					_, err := w.srv.Submit(ctx, &SubmitRequest{Queue: "A", JobSet: "s2", Jobs: []JobTemplate{one("1")}})
					submitted <- err
				}()
				select {
				case err := <-submitted:
					submitted <- err
				case <-ctx.Done():
					t.Error("a submit waited for a report's read of its ended jobs: the report holds the lock while it reads")
				}
			}
			reply, err := w.srv.Report(ctx, &Report{Cluster: "c1", Jobs: ended})
			require.NoError(t, err)
			require.NoError(t, <-submitted)
			require.True(t, spy.ran.Load(), "the report read its ended jobs")
			require.Len(t, reply.Kill, len(ended))
		})
	}
}

// TestJobThatEndsWhileAReportReadsIsReadAloneAndKilledWithItsGracePeriod:
// a job live when a report began, which ends while the report reads the
// ended jobs outside the lock, is read on its own once the report holds
// the lock, and gets its kill order.
func TestJobThatEndsWhileAReportReadsIsReadAloneAndKilledWithItsGracePeriod(t *testing.T) {
	w, spy, ended, live := endedWorld(t, 2, true)
	ctx, cancel := context.WithTimeout(w.ctx, 20*time.Second)
	defer cancel()
	done := make(chan error, 1)
	spy.during = func(context.Context) {
		// The executor's previous report, late: live[0] succeeded.
		go func() {
			_, err := w.srv.Report(ctx, &Report{Cluster: "c1", Jobs: []JobReport{
				{Job: live[0].Job, Attempt: 1, Phase: PhaseSucceeded}}})
			done <- err
		}()
		select {
		case err := <-done:
			done <- err
		case <-ctx.Done():
			t.Error("a report waited for another's read of its ended jobs")
		}
	}
	reply, err := w.srv.Report(ctx, &Report{Cluster: "c1", Jobs: append(append([]JobReport(nil), ended...), live...)})
	require.NoError(t, err)
	require.NoError(t, <-done)
	require.Equal(t, int64(1), spy.batchReads.Load(), "the ended jobs, read together")
	require.Equal(t, int64(1), spy.jobReads.Load(), "the job that ended meanwhile, read alone")
	var killed []string
	for _, k := range reply.Kill {
		require.Equal(t, 45*time.Second, k.GracePeriod, k.Job)
		killed = append(killed, k.Job)
	}
	require.ElementsMatch(t, []string{ended[0].Job, ended[1].Job, live[0].Job}, killed)
}

// TestJobSubmittedAndCancelledWhileAReportReadsIsNotReportedMissing: an
// id that named no job when the report read it, but names one that was
// submitted and ended before the report holds the lock again, is read
// again: the report names the attempt it never had, not a missing job.
func TestJobSubmittedAndCancelledWhileAReportReadsIsNotReportedMissing(t *testing.T) {
	w, spy, _, _ := endedWorld(t, 2, true)
	next := "job-5" // the id the next submit gets
	spy.watch, spy.afterRead = map[string]bool{next: true}, true
	ctx, cancel := context.WithTimeout(w.ctx, 20*time.Second)
	defer cancel()
	done := make(chan error, 1)
	spy.during = func(context.Context) {
		go func() {
			ids, err := w.srv.Submit(ctx, &SubmitRequest{Queue: "A", JobSet: "s2", Jobs: []JobTemplate{one("1")}})
			if err == nil && ids[0] != next {
				err = fmt.Errorf("submitted %s, want %s", ids[0], next)
			}
			if err == nil {
				_, err = w.srv.Cancel(ctx, next)
			}
			done <- err
		}()
		select {
		case err := <-done:
			done <- err
		case <-ctx.Done():
			t.Error("a submit waited for a report's read")
		}
	}
	_, err := w.srv.Report(ctx, &Report{Cluster: "c1", Jobs: []JobReport{{Job: next, Attempt: 1, Phase: PhaseRunning}}})
	require.NoError(t, <-done)
	requireProblems(t, err, problem{"jobs[0].attempt", "1", ErrNotHeld})
	require.Equal(t, int64(1), spy.batchReads.Load())
	require.Equal(t, int64(1), spy.jobReads.Load(), "the id read again, alone")
}
