package postgres

import (
	"context"
	"errors"
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
	"github.com/flotilla-sched/flotilla/backend/backendtest"
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
	clientID int // 0: none; else client id c<clientID> (repeats are duplicates)
	last     bool
}

// event is the step's event for the job's state in jobs; the job ids and
// queue are prefixed by q.
func (st step) event(q string, jobs map[string]events.Job, k int) events.Event {
	id := fmt.Sprintf("%s-j%d", q, st.job)
	set := fmt.Sprintf("s%d", st.job%2)
	e := events.Event{Queue: q, JobSet: set, Job: id, Type: st.typ, Requeued: st.requeued, ExitCode: st.cluster,
		Time: time.Date(2026, 11, 22, 10, 0, k, k, time.UTC)}
	j := jobs[id]
	cluster := fmt.Sprintf("c%d", st.cluster)
	switch {
	case st.typ == events.Leased:
		e.Cluster, e.Node, e.Attempt = cluster, cluster+"-n0", j.Attempts+1+st.attempt
	case st.attempt > 0 || (st.attempt < 0 && j.Attempts > 0):
		e.Attempt, e.Cluster = j.Attempts+st.attempt, cluster
	}
	if st.reason {
		e.Reason = fmt.Sprintf("reason %d", k)
	}
	return e
}

// errClass is the sentinel an error is classified by, for comparing two
// backends' refusals.
func errClass(err error) error {
	for _, c := range []error{backend.ErrDuplicate, backend.ErrNotFound, events.ErrRefused, flotilla.ErrInconsistent} {
		if errors.Is(err, c) {
			return c
		}
	}
	return err
}

// TestPropertyCommitAgreesWithTheMemoryBackend commits random writes
// (valid and refused: bad transitions, resubmitted jobs, client ids used
// twice) to this backend and to backend/memory, the reference, and
// checks that they agree on every write's acceptance, refusal class and
// stored events, and in the end on every log, every job's state and the
// live jobs. Every case works in a queue of its own in one database
// schema.
func TestPropertyCommitAgreesWithTheMemoryBackend(t *testing.T) {
	ctx := context.Background()
	pg := open(t, freshSchema(t))
	params := gopter.DefaultTestParameters()
	params.MinSuccessfulTests = 400
	if testing.Short() {
		params.MinSuccessfulTests = 20
	}
	params.MaxSize = 60
	params.Rng.Seed(11)
	props := gopter.NewProperties(params)
	var types []any
	for _, typ := range events.Types() {
		types = append(types, typ)
	}
	typeGen := gen.OneConstOf(append(types, events.Submitted, events.Submitted, events.Leased, events.Leased)...)
	stepGen := gopter.CombineGens(
		gen.IntRange(0, 4), typeGen, gen.Bool(), gen.OneConstOf(0, 0, 0, -1, 1), gen.IntRange(0, 2), gen.Bool(),
		gen.OneConstOf(0, 0, 1, 2), gen.OneConstOf(true, true, false),
	).Map(func(v []any) step {
		return step{v[0].(int), v[1].(events.Type), v[2].(bool), v[3].(int), v[4].(int), v[5].(bool), v[6].(int), v[7].(bool)}
	})
	cases := 0
	props.Property("postgres Commit = memory Commit", prop.ForAll(func(steps []step) string {
		cases++
		q := fmt.Sprintf("q%d", cases)
		ref := memory.New(backendtest.Schema())
		for _, b := range []backend.Backend{ref, pg} {
			if err := b.CreateQueue(ctx, flotilla.Queue{Name: q}); err != nil {
				return err.Error()
			}
		}
		jobs := map[string]events.Job{}
		w := &backend.Write{}
		for k, st := range steps {
			e := st.event(q, jobs, k)
			if e.Type == events.Submitted {
				s := backend.JobSpec{Job: &flotilla.Job{ID: e.Job, Queue: q, JobSet: e.JobSet, Requests: flotilla.Resources{1000, 0}}}
				if st.clientID > 0 {
					s.ClientID = fmt.Sprintf("c%d", st.clientID)
				}
				w.Jobs = append(w.Jobs, s)
			}
			w.Events = append(w.Events, e)
			if !st.last && k < len(steps)-1 {
				continue
			}
			want, werr := ref.Commit(ctx, w)
			got, gerr := pg.Commit(ctx, w)
			if (werr == nil) != (gerr == nil) || errClass(werr) != errClass(gerr) {
				return fmt.Sprintf("write %d: error %v, memory's %v", k, gerr, werr)
			}
			for i := range want {
				if d := sameEventValue(got[i], want[i]); d != "" {
					return fmt.Sprintf("write %d: event %d: %s", k, i, d)
				}
			}
			for id := range jobs {
				delete(jobs, id)
			}
			for _, e := range w.Events {
				if r, err := ref.Job(ctx, e.Job); err == nil {
					jobs[e.Job] = r.State
				}
			}
			w = &backend.Write{}
		}
		return agree(ctx, q, ref, pg)
	}, gen.SliceOf(stepGen)))
	props.TestingRun(t)
}

// sameEventValue reports how two events differ (times as instants), or "".
func sameEventValue(a, b events.Event) string {
	ta, tb := a.Time, b.Time
	a.Time, b.Time = time.Time{}, time.Time{}
	if a != b || !ta.Equal(tb) {
		return fmt.Sprintf("%+v (time %v), want %+v (time %v)", a, ta, b, tb)
	}
	return ""
}

// agree compares queue q's logs, jobs and live jobs in two backends.
func agree(ctx context.Context, q string, ref, pg backend.Backend) string {
	ids := map[string]bool{}
	for _, set := range []string{"s0", "s1"} {
		want, err := ref.Events(ctx, q, set, 1, 0)
		if err != nil {
			return err.Error()
		}
		got, err := pg.Events(ctx, q, set, 1, 0)
		if err != nil {
			return err.Error()
		}
		if len(got) != len(want) {
			return fmt.Sprintf("%s: %d events, memory %d", set, len(got), len(want))
		}
		for i := range got {
			if d := sameEventValue(got[i], want[i]); d != "" {
				return fmt.Sprintf("%s event %d: %s", set, i, d)
			}
			ids[got[i].Job] = true
		}
	}
	for _, id := range slices.Sorted(maps.Keys(ids)) {
		want, err := ref.Job(ctx, id)
		if err != nil {
			return err.Error()
		}
		got, err := pg.Job(ctx, id)
		if err != nil {
			return err.Error()
		}
		if d := sameRecord(got, want); d != "" || got.State.Reason != want.State.Reason ||
			got.State.ExitCode != want.State.ExitCode || !got.State.Finished.Equal(want.State.Finished) {
			return fmt.Sprintf("job %s: %s (%+v, want %+v)", id, d, got.State, want.State)
		}
	}
	live := func(b backend.Backend) ([]string, error) {
		var out []string
		err := b.LiveJobs(ctx, func(r backend.Record) error {
			if r.Spec.Job.Queue == q {
				out = append(out, r.Spec.Job.ID)
			}
			return nil
		})
		slices.Sort(out)
		return out, err
	}
	want, err := live(ref)
	if err != nil {
		return err.Error()
	}
	got, err := live(pg)
	if err != nil {
		return err.Error()
	}
	if !slices.Equal(got, want) {
		return fmt.Sprintf("live jobs %v, memory's %v", got, want)
	}
	return ""
}
