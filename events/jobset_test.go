package events

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/leanovate/gopter"
	"github.com/leanovate/gopter/gen"
	"github.com/leanovate/gopter/prop"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var t0 = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)

// step is one generated event: which job, which type, and the fields a
// service might get right or wrong.
type step struct {
	job      int
	typ      Type
	requeued bool
	attempt  int // offset from the live attempt: -1, 0 (omit), +1
	cluster  int
	exitCode int
	// rule and avoid: the retry rule named (0 to 2) and avoidNode.
	rule  int
	avoid bool
}

func (st step) event(s *JobSet) Event {
	id := fmt.Sprintf("j%d", st.job)
	e := Event{Seq: s.Next(), Time: t0.Add(time.Duration(s.Next()) * time.Second), Queue: "A", JobSet: "s",
		Job: id, Type: st.typ, Requeued: st.requeued, ExitCode: st.exitCode}
	if st.typ == Reprioritized {
		e.Priority = uint32(st.cluster) // 0, 1 or 2
	}
	// A field set where it does not apply is refused; set it there
	// seldom (exitCode 1, a quarter of the steps), so that most leases
	// and retries are accepted.
	switch st.typ {
	case RunFailed, Failed, LeaseExpired, LeaseReturned:
		e.Rule, e.AvoidNode = st.rule, st.avoid
	default:
		if st.exitCode == 1 {
			e.Rule, e.AvoidNode = st.rule, st.avoid
		}
	}
	if st.typ != Preempted && st.typ != LeaseExpired && st.typ != LeaseReturned && st.exitCode == 0 {
		e.Requeued = false
	}
	j, _ := s.Job(id)
	cluster := fmt.Sprintf("c%d", st.cluster)
	switch {
	case st.typ == Leased:
		e.Cluster, e.Node, e.Attempt = cluster, cluster+"-n0", j.Attempts+1+st.attempt
	case st.attempt != 0:
		e.Attempt = j.Attempts + st.attempt
		e.Cluster = cluster
	}
	return e
}

func jobsOf(s *JobSet) []Job { return slices.Collect(s.Jobs()) }

// TestPropertyReplayEqualsLiveAndEveryTransitionIsInTheTable applies random
// interleavings of events to a job set, as a service would (some refused),
// and checks: a refusal changes nothing; every accepted event is a row of
// SERVICE.md's table; attempts count the leases; a job in a terminal state
// takes no further event; replaying the accepted log rebuilds the same
// state.
func TestPropertyReplayEqualsLiveAndEveryTransitionIsInTheTable(t *testing.T) {
	params := gopter.DefaultTestParameters()
	params.MinSuccessfulTests = 300
	params.MaxSize = 200
	params.Rng.Seed(9)
	props := gopter.NewProperties(params)
	stepGen := gopter.CombineGens(
		gen.IntRange(0, 3), gen.IntRange(int(Submitted), int(lastType)), gen.Bool(),
		gen.IntRange(-1, 1), gen.IntRange(0, 2), gen.OneConstOf(0, 0, 0, 1),
		gen.OneConstOf(0, 0, 1, 2), gen.Bool(),
	).Map(func(v []any) step {
		return step{v[0].(int), Type(v[1].(int)), v[2].(bool), v[3].(int), v[4].(int), v[5].(int), v[6].(int), v[7].(bool)}
	})
	props.Property("replay = live, transitions in the table", prop.ForAll(func(steps []step) string {
		s := NewJobSet("A", "s")
		var log []Event
		leases := map[string]int{}
		// retries and avoided count, naively, the accepted events that
		// retried a job under each rule, and the nodes avoided.
		retries := map[string]map[int]int{}
		avoided := map[string]map[string]bool{}
		for _, st := range steps {
			e := st.event(s)
			before, existed := s.Job(e.Job)
			snapshot := jobsOf(s)
			next := s.Next()
			if err := s.Apply(e); err != nil {
				if !slices.EqualFunc(snapshot, jobsOf(s), jobEqual) || s.Next() != next {
					return "a refused event changed the job set: " + err.Error()
				}
				continue
			}
			after, _ := s.Job(e.Job)
			from := None
			if existed {
				from = before.State
			}
			want, ok := serviceTable[cell{from, e.Type, e.Requeued, before.CancelRequested}]
			if !ok || want != after.State {
				return fmt.Sprintf("accepted %s from %s (requeued %v): not in the table", e.Type, from, e.Requeued)
			}
			if existed && before.State.Terminal() {
				return "an event after a terminal state was accepted"
			}
			if e.Type == Leased {
				leases[e.Job]++
			}
			if after.Attempts != leases[e.Job] {
				return fmt.Sprintf("job %s: %d attempts after %d leases", e.Job, after.Attempts, leases[e.Job])
			}
			if e.Rule != 0 && after.State == Queued {
				if retries[e.Job] == nil {
					retries[e.Job] = map[int]int{}
				}
				retries[e.Job][e.Rule]++
			}
			if e.AvoidNode {
				if avoided[e.Job] == nil {
					avoided[e.Job] = map[string]bool{}
				}
				avoided[e.Job][before.Cluster+"/"+before.Node] = true
			}
			for r := 1; r <= 2; r++ {
				got := 0
				if r <= len(after.Retries) {
					got = after.Retries[r-1]
				}
				if got != retries[e.Job][r] {
					return fmt.Sprintf("job %s: rule %d retried %d times, counted %d", e.Job, r, got, retries[e.Job][r])
				}
			}
			if len(after.AvoidNodes) != len(avoided[e.Job]) {
				return fmt.Sprintf("job %s: avoids %v, want %v", e.Job, after.AvoidNodes, avoided[e.Job])
			}
			log = append(log, e)
		}
		r, err := Replay("A", "s", slices.Values(log))
		if err != nil {
			return "replay refused its own log: " + err.Error()
		}
		if !slices.EqualFunc(jobsOf(r), jobsOf(s), jobEqual) || r.Next() != s.Next() || r.Live() != s.Live() {
			return "replay differs from the live job set"
		}
		live := 0
		for j := range s.Jobs() {
			if !j.State.Terminal() {
				live++
			}
		}
		if live != s.Live() {
			return fmt.Sprintf("Live() %d, counted %d", s.Live(), live)
		}
		return ""
	}, gen.SliceOf(stepGen)))
	props.TestingRun(t)
}

func jobEqual(a, b Job) bool {
	return a.ID == b.ID && a.Queue == b.Queue && a.JobSet == b.JobSet && a.State == b.State &&
		a.Attempts == b.Attempts && a.CancelRequested == b.CancelRequested && a.Cluster == b.Cluster &&
		a.Node == b.Node && slices.Equal(a.FailedClusters, b.FailedClusters) && a.Submitted.Equal(b.Submitted) &&
		a.Leased.Equal(b.Leased) && a.Finished.Equal(b.Finished) && a.Reason == b.Reason && a.ExitCode == b.ExitCode &&
		a.Reprioritized == b.Reprioritized && a.Priority == b.Priority &&
		slices.Equal(a.Retries, b.Retries) && a.Rule == b.Rule && slices.Equal(a.AvoidNodes, b.AvoidNodes)
}

func TestJobSetRefusesGapsRepeatsAndOtherLogs(t *testing.T) {
	s := NewJobSet("A", "s")
	sub := Event{Seq: 1, Queue: "A", JobSet: "s", Job: "j", Type: Submitted}
	require.NoError(t, s.Apply(sub))
	for name, tc := range map[string]struct {
		e    Event
		want error
	}{
		"repeat":        {sub, ErrSequence},
		"gap":           {Event{Seq: 3, Queue: "A", JobSet: "s", Job: "k", Type: Submitted}, ErrSequence},
		"zero":          {Event{Seq: 0, Queue: "A", JobSet: "s", Job: "k", Type: Submitted}, ErrSequence},
		"other job set": {Event{Seq: 2, Queue: "A", JobSet: "t", Job: "k", Type: Submitted}, ErrWrongLog},
		"other queue":   {Event{Seq: 2, Queue: "B", JobSet: "s", Job: "k", Type: Submitted}, ErrWrongLog},
		"refused":       {Event{Seq: 2, Queue: "A", JobSet: "s", Job: "j", Type: Running}, ErrRefused},
	} {
		err := s.Apply(tc.e)
		assert.ErrorIs(t, err, tc.want, name)
		assert.Equal(t, uint64(2), s.Next(), name)
		assert.Equal(t, 1, s.Len(), name)
	}
}

func TestReplayStopsAtTheFirstRefusedEvent(t *testing.T) {
	log := []Event{
		{Seq: 1, Queue: "A", JobSet: "s", Job: "j", Type: Submitted},
		{Seq: 2, Queue: "A", JobSet: "s", Job: "j", Type: Leased, Cluster: "c1", Node: "n1", Attempt: 1},
		{Seq: 3, Queue: "A", JobSet: "s", Job: "j", Type: Succeeded}, // not running yet
		{Seq: 4, Queue: "A", JobSet: "s", Job: "j", Type: Running},
	}
	s, err := Replay("A", "s", slices.Values(log))
	require.ErrorIs(t, err, ErrRefused)
	j, ok := s.Job("j")
	require.True(t, ok)
	assert.Equal(t, LeasedState, j.State)
	assert.Equal(t, uint64(3), s.Next())
}

// BenchmarkReplay4M replays 4,000,000 events: 1,000,000 jobs, each
// submitted, leased, running and succeeded, generated on the fly so the
// log's own memory is not measured.
func BenchmarkReplay4M(b *testing.B) {
	const jobs = 1_000_000
	ids := make([]string, jobs)
	for i := range ids {
		ids[i] = fmt.Sprintf("01JD%012d", i)
	}
	log := func(yield func(Event) bool) {
		seq := uint64(0)
		emit := func(e Event) bool {
			seq++
			e.Seq, e.Queue, e.JobSet, e.Time = seq, "A", "s", t0
			return yield(e)
		}
		for _, id := range ids {
			if !emit(Event{Job: id, Type: Submitted}) {
				return
			}
		}
		for _, id := range ids {
			if !emit(Event{Job: id, Type: Leased, Cluster: "c1", Node: "c1-n1", Attempt: 1}) ||
				!emit(Event{Job: id, Type: Running}) || !emit(Event{Job: id, Type: Succeeded}) {
				return
			}
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		s, err := Replay("A", "s", log)
		if err != nil || s.Len() != jobs || s.Live() != 0 {
			b.Fatal(err, s.Len(), s.Live())
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/4e6, "ns/event")
}

func TestJobSetHandsOutCopiesTheCallerMayChange(t *testing.T) {
	log := []Event{
		{Seq: 1, Queue: "A", JobSet: "s", Job: "j", Type: Submitted},
		{Seq: 2, Queue: "A", JobSet: "s", Job: "j", Type: Leased, Cluster: "c1", Node: "n1", Attempt: 1},
		{Seq: 3, Queue: "A", JobSet: "s", Job: "j", Type: LeaseExpired, Requeued: true},
	}
	s, err := Replay("A", "s", slices.Values(log))
	require.NoError(t, err)
	j, _ := s.Job("j")
	j.FailedClusters[0] = "changed"
	for j := range s.Jobs() {
		j.FailedClusters[0] = "changed too"
	}
	again, _ := s.Job("j")
	assert.Equal(t, []string{"c1"}, again.FailedClusters)
}
