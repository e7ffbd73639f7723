package memory_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/leanovate/gopter"
	"github.com/leanovate/gopter/gen"
	"github.com/leanovate/gopter/prop"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/backend"
	"github.com/flotilla-sched/flotilla/backend/memory"
	"github.com/flotilla-sched/flotilla/events"
)

// step is one generated event; a write ends after a step with last set.
type step struct {
	job      int
	typ      events.Type
	requeued bool
	attempt  int // offset from the live attempt: -1, 0 (omit), +1
	cluster  int
	reason   bool
	exitCode int
	last     bool
}

// naive is the oracle: every job's state by events.Transition and every
// job set's log, a write applied to copies and kept only if all of it
// passes.
type naive struct {
	jobs map[string]events.Job
	logs map[string][]events.Event
}

func (st step) event(jobs map[string]events.Job, k int) events.Event {
	id := fmt.Sprintf("j%d", st.job)
	set := fmt.Sprintf("s%d", st.job%2)
	e := events.Event{Queue: "A", JobSet: set, Job: id, Type: st.typ, Requeued: st.requeued, ExitCode: st.exitCode,
		Time: time.Date(2026, 11, 22, 10, 0, k, k, time.UTC)}
	j := jobs[id]
	cluster := fmt.Sprintf("c%d", st.cluster)
	switch {
	case st.typ == events.Leased:
		e.Cluster, e.Node, e.Attempt = cluster, cluster+"-n0", j.Attempts+1+st.attempt
	case st.attempt != 0:
		e.Attempt, e.Cluster = j.Attempts+st.attempt, cluster
	}
	if st.reason {
		e.Reason = fmt.Sprintf("reason %d", k)
	}
	return e
}

// TestPropertyCommitAgreesWithANaiveOracle commits random writes of one to
// a few events (some refused: bad transitions, resubmissions) and checks
// against the oracle after each: the same writes are accepted, with the
// same sequence numbers; the logs read back equal the oracle's; every
// job's stored state is the oracle's; LiveJobs visits exactly the jobs not
// in a terminal state.
func TestPropertyCommitAgreesWithANaiveOracle(t *testing.T) {
	params := gopter.DefaultTestParameters()
	params.MinSuccessfulTests = 1000
	params.MaxSize = 120
	params.Rng.Seed(11)
	props := gopter.NewProperties(params)
	// Every type, submitted and leased twice as often, so that histories
	// reach leases, expiries and requeues.
	var types []any
	for _, typ := range events.Types() {
		types = append(types, typ)
	}
	typeGen := gen.OneConstOf(append(types, events.Submitted, events.Leased)...)
	stepGen := gopter.CombineGens(
		gen.IntRange(0, 3), typeGen, gen.Bool(),
		gen.OneConstOf(0, 0, 0, -1, 1), gen.IntRange(0, 2), gen.Bool(), gen.OneConstOf(0, 0, 0, 1), gen.OneConstOf(true, true, false),
	).Map(func(v []any) step {
		return step{v[0].(int), v[1].(events.Type), v[2].(bool), v[3].(int), v[4].(int), v[5].(bool), v[6].(int), v[7].(bool)}
	})
	props.Property("memory Commit = naive oracle", prop.ForAll(func(steps []step) string {
		ctx := context.Background()
		schema := flotilla.MustResourceSchema("cpu")
		b := memory.New(schema)
		if err := b.CreateQueue(ctx, flotilla.Queue{Name: "A"}); err != nil {
			return err.Error()
		}
		o := naive{jobs: map[string]events.Job{}, logs: map[string][]events.Event{}}
		w := &backend.Write{}
		jobs, logs := maps.Clone(o.jobs), map[string][]events.Event{}
		ok := true
		for k, st := range steps {
			e := st.event(jobs, k)
			if e.Type == events.Submitted {
				w.Jobs = append(w.Jobs, backend.JobSpec{Job: &flotilla.Job{ID: e.Job, Queue: "A", JobSet: e.JobSet, Requests: flotilla.Resources{1}}})
			}
			w.Events = append(w.Events, e)
			if n, err := events.Transition(jobs[e.Job], e); err != nil || e.Attempt < 0 {
				ok = false // a negative attempt is bad input to a backend
			} else {
				jobs[e.Job] = n
				e.Seq = uint64(len(o.logs[e.JobSet]) + len(logs[e.JobSet]) + 1)
				logs[e.JobSet] = append(logs[e.JobSet], e)
			}
			if !st.last && k < len(steps)-1 {
				continue
			}
			out, err := b.Commit(ctx, w)
			if (err == nil) != ok {
				return fmt.Sprintf("write %d: Commit error %v, oracle accepts: %v", k, err, ok)
			}
			if ok {
				o.jobs = jobs
				var want []events.Event
				for _, e := range w.Events {
					want = append(want, logs[e.JobSet][0])
					logs[e.JobSet] = logs[e.JobSet][1:]
				}
				for i := range out {
					if out[i].Seq != want[i].Seq || !out[i].Time.Equal(want[i].Time) {
						return fmt.Sprintf("write %d: event %d stored as %+v, want %+v", k, i, out[i], want[i])
					}
				}
				for _, e := range want {
					o.logs[e.JobSet] = append(o.logs[e.JobSet], e)
				}
			}
			w, jobs, logs, ok = &backend.Write{}, maps.Clone(o.jobs), map[string][]events.Event{}, true
		}
		return o.check(b)
	}, gen.SliceOf(stepGen)))
	props.TestingRun(t)
}

// check compares the backend with the oracle.
func (o naive) check(b *memory.Backend) string {
	ctx := context.Background()
	for _, set := range []string{"s0", "s1"} {
		got, err := b.Events(ctx, "A", set, 1, 0)
		if err != nil {
			return err.Error()
		}
		want := o.logs[set]
		if len(got) != len(want) {
			return fmt.Sprintf("%s: %d events stored, oracle %d", set, len(got), len(want))
		}
		for i := range got {
			g, w := got[i], want[i]
			if !g.Time.Equal(w.Time) {
				return fmt.Sprintf("%s event %d: time %v, want %v", set, i, g.Time, w.Time)
			}
			g.Time, w.Time = time.Time{}, time.Time{}
			if g != w {
				return fmt.Sprintf("%s event %d: %+v, want %+v", set, i, g, w)
			}
		}
	}
	for _, id := range slices.Sorted(maps.Keys(o.jobs)) {
		r, err := b.Job(ctx, id)
		if err != nil {
			return err.Error()
		}
		if d := diffJob(r.State, o.jobs[id]); d != "" {
			return "job " + id + ": " + d
		}
	}
	live := map[string]bool{}
	if err := b.LiveJobs(ctx, func(r backend.Record) error { live[r.State.ID] = true; return nil }); err != nil {
		return err.Error()
	}
	for id, j := range o.jobs {
		if live[id] == j.State.Terminal() {
			return fmt.Sprintf("LiveJobs visits %s: %v, but it is %s", id, live[id], j.State)
		}
	}
	return ""
}

func diffJob(a, b events.Job) string {
	if a.ID == b.ID && a.Queue == b.Queue && a.JobSet == b.JobSet && a.State == b.State &&
		a.Attempts == b.Attempts && a.CancelRequested == b.CancelRequested && a.Cluster == b.Cluster &&
		a.Node == b.Node && slices.Equal(a.FailedClusters, b.FailedClusters) && a.Submitted.Equal(b.Submitted) &&
		a.Leased.Equal(b.Leased) && a.Finished.Equal(b.Finished) && a.Reason == b.Reason && a.ExitCode == b.ExitCode {
		return ""
	}
	return fmt.Sprintf("%+v, want %+v", a, b)
}
