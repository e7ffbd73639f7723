package backend_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/backend"
	"github.com/flotilla-sched/flotilla/backend/memory"
	"github.com/flotilla-sched/flotilla/events"
)

// plain hides every optional interface of the backend it holds: only
// Backend's methods are promoted.
type plain struct{ backend.Backend }

// lookupWorld is a memory backend holding jobs j0…j19 of queue A, the
// even ones with client ids c0, c2, …
func lookupWorld(t *testing.T) *memory.Backend {
	t.Helper()
	ctx := context.Background()
	b := memory.New(flotilla.MustResourceSchema("cpu"))
	require.NoError(t, b.CreateQueue(ctx, flotilla.Queue{Name: "A"}))
	w := &backend.Write{}
	for i := range 20 {
		id := fmt.Sprintf("j%d", i)
		cid := ""
		if i%2 == 0 {
			cid = fmt.Sprintf("c%d", i)
		}
		w.Jobs = append(w.Jobs, backend.JobSpec{ClientID: cid, Job: &flotilla.Job{ID: id, Queue: "A", JobSet: "s",
			PriorityClass: flotilla.ArmadaDefault, Requests: flotilla.Resources{1000}, SubmitTime: time.Unix(1, 0)}})
		w.Events = append(w.Events, events.Event{Queue: "A", JobSet: "s", Job: id, Type: events.Submitted, Time: time.Unix(1, 0)})
	}
	_, err := b.Commit(ctx, w)
	require.NoError(t, err)
	return b
}

// names draws n names from j0…j29 / c0…c29 (a third stored nowhere) and
// "", duplicates likely.
func names(rng *rand.Rand, prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		if k := rng.IntN(31); k < 30 {
			out[i] = fmt.Sprintf("%s%d", prefix, k)
		}
	}
	return out
}

// The fallback answers JobsByID exactly as the backend's own JobLookup:
// each id at its place, the zero record for one that names no job.
func TestJobsByIDFallbackAnswersAsTheBackendsJobLookup(t *testing.T) {
	b := lookupWorld(t)
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		ids := names(rng, "j", rng.IntN(12))
		want, got := make([]backend.Record, len(ids)), make([]backend.Record, len(ids))
		for i := range got {
			got[i].State.ID = "stale" // overwritten, found or not
		}
		require.NoError(t, backend.JobsByID(ctx, b, ids, want))
		require.NoError(t, backend.JobsByID(ctx, plain{b}, ids, got))
		for i := range ids {
			require.Equal(t, want[i].State, got[i].State, "ids %q at %d", ids, i)
			require.Equal(t, want[i].Spec.Job == nil, got[i].Spec.Job == nil, "ids %q at %d", ids, i)
			if got[i].Spec.Job != nil {
				require.Equal(t, ids[i], got[i].Spec.Job.ID)
			}
		}
	}
}

// The fallback answers JobsByClientID exactly as the backend's own
// ClientIDLookup: "" for a client id used by no job of the queue.
func TestJobsByClientIDFallbackAnswersAsTheBackendsClientIDLookup(t *testing.T) {
	b := lookupWorld(t)
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(3, 4))
	for range 200 {
		cids := names(rng, "c", rng.IntN(12))
		want, got := make([]string, len(cids)), make([]string, len(cids))
		for i := range got {
			got[i] = "stale"
		}
		require.NoError(t, backend.JobsByClientID(ctx, b, "A", cids, want))
		require.NoError(t, backend.JobsByClientID(ctx, plain{b}, "A", cids, got))
		require.Equal(t, want, got, "client ids %q", cids)
	}
	got := []string{"stale"}
	require.NoError(t, backend.JobsByClientID(ctx, plain{b}, "nope", []string{"c0"}, got))
	require.Equal(t, []string{""}, got, "a queue that does not exist holds no client id")
}

// Output slices of another length are refused as the interfaces refuse
// them, leaving them unchanged; an error of the slow path is returned.
func TestLookupFallbacksRefuseOutputsOfAnotherLengthAndReturnTheBackendsErrors(t *testing.T) {
	b := lookupWorld(t)
	ctx := context.Background()
	recs := []backend.Record{{State: events.Job{ID: "kept"}}}
	err := backend.JobsByID(ctx, plain{b}, []string{"j1", "j2"}, recs)
	require.ErrorIs(t, err, flotilla.ErrInconsistent)
	require.Equal(t, "kept", recs[0].State.ID)
	ids := []string{"kept"}
	err = backend.JobsByClientID(ctx, plain{b}, "A", []string{"c0", "c2"}, ids)
	require.ErrorIs(t, err, flotilla.ErrInconsistent)
	require.Equal(t, []string{"kept"}, ids)

	require.NoError(t, b.Close())
	require.ErrorIs(t, backend.JobsByID(ctx, plain{b}, []string{"j1"}, make([]backend.Record, 1)), backend.ErrClosed)
	require.ErrorIs(t, backend.JobsByClientID(ctx, plain{b}, "A", []string{"c0"}, make([]string, 1)), backend.ErrClosed)
}

// WithFence gives the backend's fenced view when it has one (its writes
// refused below a higher fence), else the backend itself and false.
func TestWithFenceIsTheFencedViewOrTheBackendItself(t *testing.T) {
	b := lookupWorld(t)
	ctx := context.Background()
	_, err := b.Commit(ctx, &backend.Write{Fence: 5})
	require.NoError(t, err)
	v, fenced := backend.WithFence(b, 4)
	require.True(t, fenced)
	require.ErrorIs(t, v.CreateQueue(ctx, flotilla.Queue{Name: "B"}), backend.ErrFenced)

	p := plain{b}
	v, fenced = backend.WithFence(p, 4)
	require.False(t, fenced)
	require.Equal(t, backend.Backend(p), v)
	require.NoError(t, v.CreateQueue(ctx, flotilla.Queue{Name: "B"}), "an unfenced backend's writes are not fenced")
}
