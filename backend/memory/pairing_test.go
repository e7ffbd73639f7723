package memory

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/backend"
	"github.com/flotilla-sched/flotilla/events"
)

// randomPairingWrite is a write of up to four new jobs (ids, client ids,
// queues and job sets drawn from a few, so that they collide) whose
// events are mostly their submitted events in job order, sometimes one
// missing, doubled, moved to another job set, naming another job, or
// shuffled, with events of other jobs among them.
func randomPairingWrite(r *rand.Rand) *backend.Write {
	w := &backend.Write{}
	pick := func(xs ...string) string { return xs[r.IntN(len(xs))] }
	for range r.IntN(5) {
		j := &flotilla.Job{ID: pick("j0", "j1", "j2", "j3", "j4", "j5"), Queue: pick("A", "A", "A", "B", "Z"),
			JobSet: pick("s", "s", "t"), Requests: flotilla.Resources{1}}
		w.Jobs = append(w.Jobs, backend.JobSpec{Job: j, ClientID: pick("", "c0", "c1", "c2", "c3")})
		w.Events = append(w.Events, events.Event{Type: events.Submitted, Queue: j.Queue, JobSet: j.JobSet, Job: j.ID})
	}
	if len(w.Events) > 0 && r.IntN(2) == 0 {
		k := r.IntN(len(w.Events))
		switch r.IntN(4) {
		case 0:
			w.Events = slices.Delete(w.Events, k, k+1)
		case 1:
			w.Events = slices.Insert(w.Events, r.IntN(len(w.Events)+1), w.Events[k])
		case 2:
			w.Events[k].JobSet = "u"
		case 3:
			w.Events[k].Job = pick("j0", "j1", "j9")
		}
	}
	for range r.IntN(3) {
		w.Events = slices.Insert(w.Events, r.IntN(len(w.Events)+1),
			events.Event{Type: events.Cancelled, Queue: "A", JobSet: "s", Job: pick("j0", "j1", "old")})
	}
	if r.IntN(4) == 0 {
		r.Shuffle(len(w.Events), func(i, k int) { w.Events[i], w.Events[k] = w.Events[k], w.Events[i] })
	}
	return w
}

// submittedInJobOrder reports whether the k-th submitted event of w names
// w.Jobs[k], in its queue and job set, for every k and no more.
func submittedInJobOrder(w *backend.Write) bool {
	k := 0
	for _, e := range w.Events {
		if e.Type != events.Submitted {
			continue
		}
		if k == len(w.Jobs) {
			return false
		}
		if j := w.Jobs[k].Job; e.Job != j.ID || e.Queue != j.Queue || e.JobSet != j.JobSet {
			return false
		}
		k++
	}
	return k == len(w.Jobs)
}

// clientIDInTwoQueues reports whether w uses a client id in two queues.
func clientIDInTwoQueues(w *backend.Write) bool {
	queueOf := map[string]string{}
	for _, s := range w.Jobs {
		if s.ClientID == "" {
			continue
		}
		if q, ok := queueOf[s.ClientID]; ok && q != s.Job.Queue {
			return true
		}
		queueOf[s.ClientID] = s.Job.Queue
	}
	return false
}

// TestPairByPositionAcceptsWhatCheckPairsAcceptsInJobOrderAndNothingElse
// checks Commit's shortcut against its full check over random writes: the
// shortcut accepts only writes the full check accepts, and then finds
// each event's new job as the full check does; and it does accept every
// such write whose submitted events follow its jobs and that uses no
// client id in two queues (where it may suspect a duplicate).
func TestPairByPositionAcceptsWhatCheckPairsAcceptsInJobOrderAndNothingElse(t *testing.T) {
	b := New(flotilla.MustResourceSchema("cpu"))
	for _, q := range []string{"A", "B"} {
		require.NoError(t, b.CreateQueue(context.Background(), flotilla.Queue{Name: q}))
	}
	r := rand.New(rand.NewPCG(4, 2))
	fastOnes := 0
	for n := range 5000 {
		w := randomPairingWrite(r)
		b.hashNew(w)
		fast := make([]int32, len(w.Events))
		slow := make([]int32, len(w.Events))
		accepted := b.pairByPosition(w, fast)
		errs := b.checkPairs(w, nil, slow)
		desc := fmt.Sprintf("write %d: jobs %v, events %v", n, jobIDs(w), w.Events)
		if accepted {
			fastOnes++
			require.Empty(t, errs, desc)
			require.Equal(t, slow, fast, desc)
		}
		if len(errs) == 0 && submittedInJobOrder(w) && !clientIDInTwoQueues(w) {
			require.True(t, accepted, desc)
		}
	}
	require.Greater(t, fastOnes, 1000, "writes the shortcut accepted")
}

func jobIDs(w *backend.Write) []string {
	var ids []string
	for _, s := range w.Jobs {
		ids = append(ids, s.Job.Queue+"/"+s.Job.JobSet+"/"+s.Job.ID+"/"+s.ClientID)
	}
	return ids
}
