package ha

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/backend"
	"github.com/flotilla-sched/flotilla/backend/memory"
	"github.com/flotilla-sched/flotilla/scheduler"
	"github.com/flotilla-sched/flotilla/server"
)

func newTestServer(ctx context.Context, be backend.Backend, fence uint64) (*server.Server, error) {
	return server.New(ctx, server.Config{Scheduler: scheduler.DefaultConfig(flotilla.MustResourceSchema("cpu")),
		Backend: be, Clock: server.SystemClock{}, Fence: fence})
}

// New names every missing or bad field of its Config at once.
func TestNewNamesEveryBadFieldOfTheConfig(t *testing.T) {
	b := memory.New(flotilla.MustResourceSchema("cpu"))
	_, err := New(Config{Leases: b, Advertise: "ftp://x", TTL: -1})
	fields := map[string]bool{}
	for _, e := range flotilla.Problems(err) {
		var fe *flotilla.FieldError
		require.True(t, errors.As(e, &fe), "%v", e)
		fields[fe.Field] = true
	}
	require.Equal(t, map[string]bool{"Backend": true, "NewServer": true, "Cycle": true, "TTL": true, "Holder": true, "Advertise": true}, fields)
	_, err = New(Config{Backend: b, NewServer: newTestServer, Cycle: time.Second})
	require.NoError(t, err, "without leases neither holder nor address is needed")
}

// Without leases the node is the only process: it leads from Start on,
// with fence 0, its handler is the API, and draining makes it unready.
func TestNodeWithoutLeasesLeadsAloneUntilItDrains(t *testing.T) {
	b := memory.New(flotilla.MustResourceSchema("cpu"))
	n, err := New(Config{Backend: b, NewServer: newTestServer, Cycle: time.Hour})
	require.NoError(t, err)
	require.NoError(t, n.Start(context.Background()))
	require.True(t, n.Leading())
	require.NotNil(t, n.Current())
	require.NotNil(t, n.API())
	require.NoError(t, n.Ready())
	w := httptest.NewRecorder()
	n.Handler().ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/v1/queues", nil))
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	n.Run(ctx) // returns at once, drained
	require.ErrorContains(t, n.Ready(), "draining")
}

// A node that follows is unready until it knows a leader other than
// itself, and its API answers 503 meanwhile.
func TestFollowingNodeIsUnreadyWithoutAKnownLeader(t *testing.T) {
	b, clock := leaseWorld()
	ctx := context.Background()
	other := newElector(b, "other", "http://other", 3*time.Second, clock.Now)
	other.round(ctx) // leads
	n, err := New(Config{Backend: b, Leases: &flaky{Leases: b, down: true}, NewServer: newTestServer, Cycle: time.Hour,
		Holder: "me", Advertise: "http://me", TTL: 3 * time.Second})
	require.NoError(t, err)
	n.el.now = clock.Now
	n.el.round(ctx)
	require.False(t, n.Leading())
	require.ErrorIs(t, n.Ready(), backend.ErrUnavailable, "the lease cannot be read: no leader known")
	w := httptest.NewRecorder()
	n.Handler().ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/v1/queues", nil))
	require.Equal(t, http.StatusServiceUnavailable, w.Code)

	n.el.leases = b
	n.el.round(ctx)
	require.NoError(t, n.Ready(), "the leader is known: requests are forwarded to it")
}
