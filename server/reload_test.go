package server

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flotilla-sched/flotilla/backend"
	"github.com/flotilla-sched/flotilla/events"
)

// lateBackend holds back its armed Commit: it answers ErrUnavailable
// (nothing applied), and deliver applies the write afterwards, as a
// COMMIT a network held past the call and then delivered would.
type lateBackend struct {
	backend.Backend
	armed bool
	held  *backend.Write
}

func (l *lateBackend) Commit(ctx context.Context, w *backend.Write) ([]events.Event, error) {
	if !l.armed {
		return l.Backend.Commit(ctx, w)
	}
	l.armed = false
	held := *w
	held.Events = append([]events.Event(nil), w.Events...)
	l.held = &held
	return nil, fmt.Errorf("lateBackend: %w", backend.ErrUnavailable)
}

func (l *lateBackend) deliver(t *testing.T) {
	t.Helper()
	_, err := l.Backend.Commit(context.Background(), l.held)
	require.NoError(t, err)
	l.held = nil
}

// TestACycleWhoseWriteTheBackendRefusesReloadsAndTheNextCycleWorks: a
// report's write is applied after the service was told it was not (the
// job succeeded in the backend, running in memory). The cycle that
// expires the lease writes a transition the backend refuses: it fails,
// and reloads the state, so the next cycle and report work from the
// backend's state instead of failing forever.
func TestACycleWhoseWriteTheBackendRefusesReloadsAndTheNextCycleWorks(t *testing.T) {
	late := &lateBackend{}
	w, id := leasedWorld(t, func(c *Config) { late.Backend = c.Backend; c.Backend = late })
	w.report(Report{Cluster: "c1", Jobs: []JobReport{{Job: id, Attempt: 1, Phase: PhaseRunning}}})
	late.armed = true
	_, err := w.srv.Report(w.ctx, &Report{Cluster: "c1", Jobs: []JobReport{{Job: id, Attempt: 1, Phase: PhaseSucceeded}}})
	require.ErrorIs(t, err, backend.ErrUnavailable)
	late.deliver(t)
	require.Equal(t, events.SucceededState, w.record(id).State.State, "the backend holds the late write")
	j := w.srv.st.jobs.get(id)
	require.True(t, j != nil && j.state == events.RunningState, "the service was told it was not applied: running in memory")

	w.clock.Advance(DefaultLeaseTimeout)
	_, err = w.srv.Cycle(w.ctx)
	require.ErrorIs(t, err, events.ErrRefused, "the cycle expiring a lease the backend holds succeeded")

	require.Nil(t, w.srv.st.jobs.get(id), "reloaded from the backend: the job has ended")
	other := w.submit("A", "s1", one("1"))[0]
	w.report(Report{Cluster: "c1"})
	rep := w.cycle()
	require.Equal(t, 1, rep.Leased)
	require.Zero(t, rep.Expired)
	w.report(Report{Cluster: "c1", Jobs: []JobReport{{Job: other, Attempt: 1, Phase: PhaseRunning}}})
	require.Equal(t, events.RunningState, w.state(other))
}
