package memory

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/backend"
	"github.com/flotilla-sched/flotilla/events"
)

// Jobs stored one after the other with the same grace period, deadline,
// runtime, exit code and principal share one runSpec; a job that differs
// in any of them gets its own, and every job reads back its own spec, by
// Job and by LiveJobs.
func TestJobsStoredInARowShareTheirRunSpecAndEachReadsItsOwn(t *testing.T) {
	ctx := context.Background()
	b := New(flotilla.MustResourceSchema("cpu"))
	require.NoError(t, b.CreateQueue(ctx, flotilla.Queue{Name: "A"}))
	base := backend.JobSpec{Principal: "ann", TerminationGracePeriod: time.Second, ActiveDeadline: time.Hour, Runtime: time.Minute, ExitCode: 1}
	variants := []func(*backend.JobSpec){
		func(*backend.JobSpec) {},
		func(s *backend.JobSpec) { s.Principal = "bob" },
		func(s *backend.JobSpec) { s.TerminationGracePeriod = 2 * time.Second },
		func(s *backend.JobSpec) { s.ActiveDeadline = 2 * time.Hour },
		func(s *backend.JobSpec) { s.Runtime = 2 * time.Minute },
		func(s *backend.JobSpec) { s.ExitCode = 2 },
	}
	// Each variant twice in a row, then the base again: 6 runs of two,
	// and one more.
	var w backend.Write
	var want []backend.JobSpec
	for k, v := range append(variants, variants[0]) {
		for i := range 2 {
			s := base
			v(&s)
			s.Job = &flotilla.Job{ID: fmt.Sprintf("j%d-%d", k, i), Queue: "A", JobSet: "s", Requests: flotilla.Resources{1}}
			w.Jobs = append(w.Jobs, s)
			w.Events = append(w.Events, events.Event{Type: events.Submitted, Queue: "A", JobSet: "s", Job: s.Job.ID, Time: time.Unix(1, 0)})
			want = append(want, s)
		}
	}
	_, err := b.Commit(ctx, &w)
	require.NoError(t, err)
	require.Equal(t, len(variants)+1, b.runs.len(), "one runSpec per run of equal specs")
	for _, s := range want {
		r, err := b.Job(ctx, s.Job.ID)
		require.NoError(t, err)
		require.Equal(t, s, r.Spec, s.Job.ID)
	}
	var live []backend.JobSpec
	require.NoError(t, b.LiveJobs(ctx, func(r backend.Record) error { live = append(live, r.Spec); return nil }))
	require.Equal(t, want, live)
}
