package server

import (
	"context"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flotilla-sched/flotilla/backend"
	"github.com/flotilla-sched/flotilla/events"
	"github.com/flotilla-sched/flotilla/scheduler"
)

// writesBackend records, per Commit, the types of the events written.
type writesBackend struct {
	backend.Backend
	writes [][]events.Event
}

func (b *writesBackend) Commit(ctx context.Context, w *backend.Write) ([]events.Event, error) {
	stored, err := b.Backend.Commit(ctx, w)
	if err == nil {
		b.writes = append(b.writes, append([]events.Event(nil), w.Events...))
	}
	return stored, err
}

// count returns how many events of type t write k holds.
func (b *writesBackend) count(k int, t events.Type) int {
	n := 0
	for _, e := range b.writes[k] {
		if e.Type == t {
			n++
		}
	}
	return n
}

func recordingWorld(t *testing.T) (*world, *writesBackend) {
	rec := &writesBackend{}
	w := newWorld(t, func(c *Config) { rec.Backend = c.Backend; c.Backend = rec })
	return w, rec
}

// TestCycleWritesItsDecisionInChunks: 2,500 leases are written in
// chunks of decisionChunk, the last one the rest.
func TestCycleWritesItsDecisionInChunks(t *testing.T) {
	w, rec := recordingWorld(t)
	w.queue("A")
	w.report(Report{Cluster: "c1", Nodes: nodesOf("c1", 100, 32)})
	w.submit("A", "s1", cpuJobs(2500, "1"))
	rec.writes = nil
	require.Equal(t, 2500, w.cycle().Leased)
	require.Len(t, rec.writes, 3, "three chunks")
	require.Equal(t, []int{1000, 1000, 500}, []int{rec.count(0, events.Leased), rec.count(1, events.Leased), rec.count(2, events.Leased)})
}

// TestCycleNeverSplitsAGangAcrossChunks: 996 lone jobs, then a gang of 8
// (the cycle places the gang last): the gang's members straddle the
// 1,000th lease, so the chunk takes the whole gang, 1,004 leases in one
// write.
func TestCycleNeverSplitsAGangAcrossChunks(t *testing.T) {
	w, rec := recordingWorld(t)
	w.queue("A")
	w.report(Report{Cluster: "c1", Nodes: nodesOf("c1", 100, 32)})
	w.submit("A", "s1", cpuJobs(996, "1"))
	gang := w.submit("A", "s1", gangOf("g", 8))
	rec.writes = nil
	rep := w.cycle()
	require.Equal(t, 1004, rep.Leased)
	at := slices.IndexFunc(rep.Result.Scheduled, func(a scheduler.Assignment) bool { return a.Job.Gang.ID == "g" })
	require.Equal(t, 996, at, "the gang is placed after the lone jobs")
	require.Len(t, rec.writes, 1, "one chunk, the gang whole")
	require.Equal(t, 1004, rec.count(0, events.Leased))
	for _, id := range gang {
		require.Equal(t, events.LeasedState, w.state(id))
	}
}

// TestCycleReleasesTheLockBetweenChunks: between the chunks of a cycle's
// decision the service answers (a Status call takes the lock; were the
// cycle holding it, the call would never return), and sees the chunks
// written so far.
func TestCycleReleasesTheLockBetweenChunks(t *testing.T) {
	w := newWorld(t)
	w.queue("A")
	w.report(Report{Cluster: "c1", Nodes: nodesOf("c1", 100, 32)})
	ids := w.submit("A", "s1", cpuJobs(2500, "1"))
	var seen []int
	w.srv.st.betweenChunks = func() {
		st, err := w.srv.Status(w.ctx, ids...)
		require.NoError(t, err)
		leased := 0
		for _, s := range st {
			if s.State == events.LeasedState {
				leased++
			}
		}
		seen = append(seen, leased)
	}
	require.Equal(t, 2500, w.cycle().Leased)
	require.Equal(t, []int{1000, 2000}, seen, "called between the three chunks, each time seeing the chunks written")
}

// TestCycleWritesItsPreemptionsBeforeItsLeases: the kill orders a cycle
// decides are stored before the leases they make room for, so an
// executor never hears of a lease before the kill order it needs.
func TestCycleWritesItsPreemptionsBeforeItsLeases(t *testing.T) {
	w, rec := recordingWorld(t)
	w.queue("A")
	w.queue("B")
	w.report(Report{Cluster: "c1", Nodes: nodesOf("c1", 1, 4)})
	soft := cpuJobs(4, "1")
	soft.PriorityClass = "armada-preemptible"
	w.submit("A", "s1", soft)
	require.Equal(t, 4, w.cycle().Leased)
	urgent := cpuJobs(2, "1")
	urgent.PriorityClass = "armada-default"
	w.submit("B", "s1", urgent)
	rec.writes = nil
	rep := w.cycle()
	require.Equal(t, 2, rep.Preempted)
	require.Equal(t, 2, rep.Leased)
	require.Len(t, rec.writes, 2)
	require.Equal(t, 2, rec.count(0, events.Preempted))
	require.Zero(t, rec.count(0, events.Leased))
	require.Equal(t, 2, rec.count(1, events.Leased))
}
