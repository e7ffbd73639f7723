package memory_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/backend"
	"github.com/flotilla-sched/flotilla/backend/backendtest"
	"github.com/flotilla-sched/flotilla/backend/memory"
	"github.com/flotilla-sched/flotilla/events"
)

// pairingCase is a write, its submitted events in its jobs' order, and
// the problems Commit names for it as it is and with its events reversed
// (nil: accepted).
type pairingCase struct {
	name              string
	jobs              []backend.JobSpec
	events            []events.Event
	inOrder, reversed []string
}

func pairSpec(id, queue, set, clientID string) backend.JobSpec {
	return backend.JobSpec{Job: &flotilla.Job{ID: id, Queue: queue, JobSet: set, Requests: flotilla.Resources{1, 1}}, ClientID: clientID}
}

func pairEvent(typ events.Type, id, queue, set string) events.Event {
	e := events.Event{Type: typ, Queue: queue, JobSet: set, Job: id, Time: time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)}
	if typ == events.Leased {
		e.Cluster, e.Node, e.Attempt = "c", "n", 1
	}
	return e
}

// pairingBackend has queues A and B, and job "old" stored in A/s with
// client id "c-old".
func pairingBackend(t *testing.T) *memory.Backend {
	ctx := context.Background()
	b := memory.New(backendtest.Schema())
	require.NoError(t, b.CreateQueue(ctx, flotilla.Queue{Name: "A"}))
	require.NoError(t, b.CreateQueue(ctx, flotilla.Queue{Name: "B"}))
	_, err := b.Commit(ctx, &backend.Write{Jobs: []backend.JobSpec{pairSpec("old", "A", "s", "c-old")},
		Events: []events.Event{pairEvent(events.Submitted, "old", "A", "s")}})
	require.NoError(t, err)
	return b
}

// problems lists the problems of err as text; nil for nil.
func problems(err error) []string {
	var out []string
	for _, p := range flotilla.Problems(err) {
		out = append(out, p.Error())
	}
	return out
}

// TestCommitNamesEachPairingProblemWhetherOrNotTheEventsFollowTheJobs:
// Commit takes a shortcut when a write's submitted events come in its
// jobs' order; a write it refuses is named problem by problem, field by
// field, as when the events come in another order (here, reversed), and
// a write it accepts in one order is accepted in the other unless a
// transition depends on the order.
func TestCommitNamesEachPairingProblemWhetherOrNotTheEventsFollowTheJobs(t *testing.T) {
	sub := func(id, queue, set string) events.Event { return pairEvent(events.Submitted, id, queue, set) }
	cases := []pairingCase{{
		name:   "new jobs, each with a client id",
		jobs:   []backend.JobSpec{pairSpec("j1", "A", "s", "c1"), pairSpec("j2", "A", "s", "c2"), pairSpec("j3", "A", "t", "")},
		events: []events.Event{sub("j1", "A", "s"), sub("j2", "A", "s"), sub("j3", "A", "t")},
	}, {
		name:   "a job id twice",
		jobs:   []backend.JobSpec{pairSpec("j1", "A", "s", ""), pairSpec("j1", "A", "s", ""), pairSpec("j2", "A", "s", "")},
		events: []events.Event{sub("j1", "A", "s"), sub("j1", "A", "s"), sub("j2", "A", "s")},
		inOrder: []string{
			`jobs[1].job.id "j1": is a duplicate: twice in one write`,
			`events[1].job "j1": is a duplicate: a second submitted event`,
		},
		reversed: []string{
			`jobs[1].job.id "j1": is a duplicate: twice in one write`,
			`events[2].job "j1": is a duplicate: a second submitted event`,
		},
	}, {
		name:     "a client id twice in a queue",
		jobs:     []backend.JobSpec{pairSpec("j1", "A", "s", "c1"), pairSpec("j2", "A", "s", "c1")},
		events:   []events.Event{sub("j1", "A", "s"), sub("j2", "A", "s")},
		inOrder:  []string{`jobs[1].clientId "c1": is a duplicate: twice in queue "A" in one write`},
		reversed: []string{`jobs[1].clientId "c1": is a duplicate: twice in queue "A" in one write`},
	}, {
		name:   "a client id in two queues",
		jobs:   []backend.JobSpec{pairSpec("j1", "A", "s", "c1"), pairSpec("j2", "B", "s", "c1")},
		events: []events.Event{sub("j1", "A", "s"), sub("j2", "B", "s")},
	}, {
		name:     "a submitted event without its job",
		jobs:     []backend.JobSpec{pairSpec("j1", "A", "s", "")},
		events:   []events.Event{sub("j1", "A", "s"), sub("j2", "A", "s")},
		inOrder:  []string{`events[1].job "j2": disagrees with another field: a submitted event needs its job in the write's jobs`},
		reversed: []string{`events[0].job "j2": disagrees with another field: a submitted event needs its job in the write's jobs`},
	}, {
		name:     "a second submitted event",
		jobs:     []backend.JobSpec{pairSpec("j1", "A", "s", ""), pairSpec("j2", "A", "s", "")},
		events:   []events.Event{sub("j1", "A", "s"), sub("j1", "A", "s"), sub("j2", "A", "s")},
		inOrder:  []string{`events[1].job "j1": is a duplicate: a second submitted event`},
		reversed: []string{`events[2].job "j1": is a duplicate: a second submitted event`},
	}, {
		name:     "a submitted event in another job set than its job",
		jobs:     []backend.JobSpec{pairSpec("j1", "A", "s", ""), pairSpec("j2", "A", "s", "")},
		events:   []events.Event{sub("j1", "A", "s"), sub("j2", "A", "t")},
		inOrder:  []string{`events[1].jobSet "A/t": disagrees with another field: the job is in A/s`},
		reversed: []string{`events[0].jobSet "A/t": disagrees with another field: the job is in A/s`},
	}, {
		name:     "a new job without its submitted event",
		jobs:     []backend.JobSpec{pairSpec("j1", "A", "s", ""), pairSpec("j2", "A", "s", ""), pairSpec("j3", "A", "s", "")},
		events:   []events.Event{sub("j1", "A", "s"), sub("j3", "A", "s")},
		inOrder:  []string{`jobs[1].job.id "j2": disagrees with another field: a new job needs its submitted event in the write`},
		reversed: []string{`jobs[1].job.id "j2": disagrees with another field: a new job needs its submitted event in the write`},
	}, {
		name:   "a job id and a client id stored already",
		jobs:   []backend.JobSpec{pairSpec("old", "A", "s", ""), pairSpec("j1", "A", "s", "c-old")},
		events: []events.Event{sub("old", "A", "s"), sub("j1", "A", "s")},
		inOrder: []string{
			`jobs[0].job.id "old": is a duplicate: the job is stored already`,
			`jobs[1].clientId "c-old": is a duplicate: used in queue "A" by job "old"`,
		},
		reversed: []string{
			`jobs[0].job.id "old": is a duplicate: the job is stored already`,
			`jobs[1].clientId "c-old": is a duplicate: used in queue "A" by job "old"`,
		},
	}, {
		name:     "a job with a client id in a queue never created",
		jobs:     []backend.JobSpec{pairSpec("j1", "Z", "s", "c1"), pairSpec("j2", "A", "s", "c1")},
		events:   []events.Event{sub("j1", "Z", "s"), sub("j2", "A", "s")},
		inOrder:  []string{`events[0].queue "Z": not found`},
		reversed: []string{`events[1].queue "Z": not found`},
	}, {
		name:     "a new job leased in its write",
		jobs:     []backend.JobSpec{pairSpec("j1", "A", "s", "c1"), pairSpec("j2", "A", "s", "c2")},
		events:   []events.Event{sub("j1", "A", "s"), sub("j2", "A", "s"), pairEvent(events.Leased, "j2", "A", "s")},
		reversed: []string{`events[0]: job "j2": leased in state none refused: only a queued job is leased`},
	}, {
		name:   "a stored job's event between new jobs'",
		jobs:   []backend.JobSpec{pairSpec("j1", "A", "s", "c1"), pairSpec("j2", "A", "t", "c2")},
		events: []events.Event{sub("j1", "A", "s"), pairEvent(events.Leased, "old", "A", "s"), sub("j2", "A", "t")},
	}, {
		name: "several problems at once",
		jobs: []backend.JobSpec{pairSpec("j1", "A", "s", "c1"), pairSpec("j1", "A", "s", "c1"), pairSpec("j2", "A", "s", "c2"),
			pairSpec("j3", "A", "s", "")},
		events: []events.Event{sub("j1", "A", "s"), sub("j1", "A", "s"), sub("j2", "A", "t"), sub("j4", "A", "s")},
		inOrder: []string{
			`jobs[1].job.id "j1": is a duplicate: twice in one write`,
			`jobs[1].clientId "c1": is a duplicate: twice in queue "A" in one write`,
			`events[1].job "j1": is a duplicate: a second submitted event`,
			`events[2].jobSet "A/t": disagrees with another field: the job is in A/s`,
			`events[3].job "j4": disagrees with another field: a submitted event needs its job in the write's jobs`,
			`jobs[3].job.id "j3": disagrees with another field: a new job needs its submitted event in the write`,
		},
		reversed: []string{
			`jobs[1].job.id "j1": is a duplicate: twice in one write`,
			`jobs[1].clientId "c1": is a duplicate: twice in queue "A" in one write`,
			`events[0].job "j4": disagrees with another field: a submitted event needs its job in the write's jobs`,
			`events[1].jobSet "A/t": disagrees with another field: the job is in A/s`,
			`events[3].job "j1": is a duplicate: a second submitted event`,
			`jobs[3].job.id "j3": disagrees with another field: a new job needs its submitted event in the write`,
		},
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, reverse := range []bool{false, true} {
				w := &backend.Write{Jobs: slices.Clone(c.jobs), Events: slices.Clone(c.events)}
				want := c.inOrder
				if reverse {
					slices.Reverse(w.Events)
					want = c.reversed
				}
				b := pairingBackend(t)
				states := statesAfter(b, w)
				_, err := b.Commit(context.Background(), w)
				assert.Equal(t, want, problems(err), "events reversed: %v", reverse)
				if err == nil {
					checkStates(t, b, states)
				}
			}
		})
	}
}

// statesAfter is the state of each job w names after w, by
// events.Transition from the state stored (none for a new job); nil when
// a transition is refused.
func statesAfter(b *memory.Backend, w *backend.Write) map[string]events.Job {
	out := map[string]events.Job{}
	for _, e := range w.Events {
		j, ok := out[e.Job]
		if !ok && e.Type != events.Submitted {
			r, err := b.Job(context.Background(), e.Job)
			if err != nil {
				return nil
			}
			j = r.State
		}
		n, err := events.Transition(j, e)
		if err != nil {
			return nil
		}
		out[e.Job] = n
	}
	return out
}

// checkStates checks that each job of want is stored in its state.
func checkStates(t *testing.T, b *memory.Backend, want map[string]events.Job) {
	t.Helper()
	require.NotNil(t, want, "the write was accepted, but a transition of it is refused")
	for id, j := range want {
		r, err := b.Job(context.Background(), id)
		require.NoError(t, err)
		assert.Equal(t, j.State, r.State.State, "job %s", id)
		assert.Equal(t, j.Attempts, r.State.Attempts, "job %s", id)
	}
}
