package ha

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/backend"
	"github.com/flotilla-sched/flotilla/backend/memory"
	"github.com/flotilla-sched/flotilla/events"
)

// fakeClock is a clock a test moves forward, shared by the backend's
// lease and the electors.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// leaseWorld is a memory backend whose lease runs on a fake clock.
func leaseWorld() (*memory.Backend, *fakeClock) {
	b := memory.New(flotilla.MustResourceSchema("cpu"))
	c := &fakeClock{now: time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)}
	b.SetLeaseClock(c.Now)
	return b, c
}

// flaky is a lease whose Lead fails while down is set.
type flaky struct {
	backend.Leases
	mu   sync.Mutex
	down bool
}

func (f *flaky) Lead(ctx context.Context, holder, address string, ttl time.Duration) (backend.Lease, error) {
	f.mu.Lock()
	down := f.down
	f.mu.Unlock()
	if down {
		return backend.Lease{}, backend.ErrUnavailable
	}
	return f.Leases.Lead(ctx, holder, address, ttl)
}

func (f *flaky) setDown(d bool) { f.mu.Lock(); f.down = d; f.mu.Unlock() }

// lostAnswer is a lease whose Lead is applied but answers an error while
// lose is set: a renewal that reached the database after its caller gave
// up on it (a timeout, a broken connection).
type lostAnswer struct {
	backend.Leases
	lose bool
}

func (l *lostAnswer) Lead(ctx context.Context, holder, address string, ttl time.Duration) (backend.Lease, error) {
	lease, err := l.Leases.Lead(ctx, holder, address, ttl)
	if err == nil && l.lose {
		return backend.Lease{}, backend.ErrOutcomeUnknown
	}
	return lease, err
}

func termSignalled(e *elector) bool {
	select {
	case <-e.newTerm:
		return true
	default:
		return false
	}
}

func TestElectorFollowsTheLeaderAndTakesOverWithAHigherTokenWhenItsLeaseEnds(t *testing.T) {
	b, clock := leaseWorld()
	ctx := context.Background()
	a := newElector(b, "http://a", "http://a", 3*time.Second, clock.Now)
	f := newElector(b, "http://f", "http://f", 3*time.Second, clock.Now)
	a.round(ctx)
	require.True(t, termSignalled(a), "a free lease starts a term")
	ta := a.term()
	require.NotNil(t, ta)

	wait := f.round(ctx)
	require.Nil(t, f.term(), "one leader at a time")
	require.False(t, termSignalled(f))
	leader, _ := f.leaderAddr()
	require.Equal(t, "http://a", leader, "the follower forwards to the leader's address")
	require.LessOrEqual(t, wait, time.Second, "a follower tries again within ttl/3")

	// a stops renewing (it died); the lease ends; f takes over.
	clock.advance(3 * time.Second)
	wait = f.round(ctx)
	require.True(t, termSignalled(f))
	tf := f.term()
	require.NotNil(t, tf)
	require.Greater(t, tf.token, ta.token, "the token grows on takeover")
	require.Equal(t, time.Second, wait, "a leader renews every ttl/3")

	// a comes back: its term ends, and it forwards to f.
	a.round(ctx)
	require.Nil(t, a.term())
	require.Error(t, ta.ctx.Err(), "the deposed leader's term is cancelled")
	leader, _ = a.leaderAddr()
	require.Equal(t, "http://f", leader)
}

func TestElectorEndsItsTermTTLAfterTheLastRenewalWasSentWhenRenewalsFail(t *testing.T) {
	b, clock := leaseWorld()
	lease := &flaky{Leases: b}
	ctx := context.Background()
	e := newElector(lease, "http://a", "http://a", 3*time.Second, clock.Now)
	e.round(ctx)
	tm := e.term()
	require.NotNil(t, tm)
	lease.setDown(true)
	clock.advance(2 * time.Second)
	e.round(ctx)
	require.Same(t, tm, e.term(), "a failed renewal within the ttl keeps the term")
	require.NoError(t, tm.ctx.Err())
	clock.advance(time.Second)
	e.round(ctx)
	require.Nil(t, e.term(), "no renewal for a whole ttl: the term ends")
	require.Error(t, tm.ctx.Err())
	_, err := e.leaderAddr()
	require.ErrorIs(t, err, backend.ErrUnavailable)

	// The database is back: the same process leads again, under a new
	// token.
	lease.setDown(false)
	e.round(ctx)
	require.NotNil(t, e.term())
	require.Greater(t, e.term().token, tm.token)
}

// TestElectorNeverStartsATermUnderTheTokenOfATermItEnded: a term the
// process ended by its own clock (no answered renewal for a ttl) may
// still be the database's live lease (a renewal was applied but its
// answer lost). Leading again under that token would let the ended term's
// writes still in flight (fence equal, not below) land after the new
// term's reload, unseen by its server; the process resigns and leads
// again under a new token.
func TestElectorNeverStartsATermUnderTheTokenOfATermItEnded(t *testing.T) {
	b, clock := leaseWorld()
	lease := &lostAnswer{Leases: b}
	ctx := context.Background()
	e := newElector(lease, "http://a", "http://a", 3*time.Second, clock.Now)
	e.round(ctx)
	require.True(t, termSignalled(e))
	first := e.term()
	require.NotNil(t, first)

	clock.advance(2 * time.Second)
	lease.lose = true
	e.round(ctx) // applied (the lease now lasts until 5 s), answer lost
	lease.lose = false
	clock.advance(1500 * time.Millisecond)
	for range 3 {
		e.round(ctx)
		if tm := e.term(); tm != nil {
			require.Greater(t, tm.token, first.token, "a new term, a new token")
		}
	}
	require.Error(t, first.ctx.Err(), "the term not renewed for a ttl has ended")
	require.NotNil(t, e.term(), "the process leads again")
	require.True(t, termSignalled(e))
}

// TestElectorStoppedWhileLeadingResignsSoAnotherLeadsAtOnce: a leader
// shutting down (SIGTERM) ends its term and gives the lease up, so its
// successor does not wait for the ttl.
func TestElectorStoppedWhileLeadingResignsSoAnotherLeadsAtOnce(t *testing.T) {
	b, clock := leaseWorld()
	a := newElector(b, "a", "http://a", 3*time.Second, clock.Now)
	f := newElector(b, "f", "http://f", 3*time.Second, clock.Now)
	a.round(context.Background())
	ta := a.term()
	require.NotNil(t, ta)
	stopped, stop := context.WithCancel(context.Background())
	stop()
	a.run(stopped) // returns at once: stopped
	require.Nil(t, a.term())
	require.Error(t, ta.ctx.Err(), "the term ends with the process")
	f.round(context.Background()) // no time has passed
	require.NotNil(t, f.term(), "the lease was given up")
	require.Greater(t, f.term().token, ta.token)
}

// TestTermBackendRefusesEveryWriteOnceTheTermHasEnded: a leader whose
// lease may have passed to another process writes nothing more, fenced
// or not (jobs, queues, executors, usage); reads go on.
func TestTermBackendRefusesEveryWriteOnceTheTermHasEnded(t *testing.T) {
	b, clock := leaseWorld()
	ctx := context.Background()
	e := newElector(b, "http://a", "http://a", 3*time.Second, clock.Now)
	e.round(ctx)
	tm := e.term()
	tb := leaderBackend(b, tm, clock.Now)
	_, isLookup := tb.(backend.ClientIDLookup)
	require.True(t, isLookup, "the memory backend's client-id lookup is kept")
	require.NoError(t, tb.CreateQueue(ctx, flotilla.Queue{Name: "A"}))
	_, err := tb.Commit(ctx, &backend.Write{Fence: tm.token})
	require.NoError(t, err)

	clock.advance(3 * time.Second) // not renewed: ended, whatever the backend says
	writes := map[string]error{
		"Commit":      func() error { _, err := tb.Commit(ctx, &backend.Write{Fence: tm.token}); return err }(),
		"CreateQueue": tb.CreateQueue(ctx, flotilla.Queue{Name: "B"}),
		"UpdateQueue": tb.UpdateQueue(ctx, flotilla.Queue{Name: "A", PriorityFactor: 2}),
		"DeleteQueue": tb.DeleteQueue(ctx, "A"),
		"PutExecutor": tb.PutExecutor(ctx, backend.Executor{Cluster: "c1", Reported: clock.Now()}),
		"PutUsage":    tb.PutUsage(ctx, []backend.UsageRecord{{Key: "q/A", Value: []float64{1}, At: clock.Now()}}),
	}
	for name, err := range writes {
		require.ErrorIs(t, err, backend.ErrFenced, "%s after the term ended", name)
	}
	qs, err := tb.ListQueues(ctx)
	require.NoError(t, err)
	require.Len(t, qs, 1, "reads go on; nothing was written")
}

// TestLeaderBackendIsFencedByTheDatabaseOnceATermHasMovedOnThoughItsClockSaysAlive:
// a leader paused past its lease and resumed may still count its term
// alive by its own clock when a write leaves; once a successor has written
// with a higher token, the backend refuses its queue, executor and usage
// writes too (not only its job commits), and changes nothing.
func TestLeaderBackendIsFencedByTheDatabaseOnceATermHasMovedOnThoughItsClockSaysAlive(t *testing.T) {
	b, clock := leaseWorld()
	ctx := context.Background()
	e := newElector(b, "http://a", "http://a", 3*time.Second, clock.Now)
	e.round(ctx)
	tm := e.term()
	require.NotNil(t, tm)
	tb := leaderBackend(b, tm, clock.Now)
	_, isLookup := tb.(backend.JobLookup)
	require.True(t, isLookup, "the memory backend's job lookup is kept")
	require.NoError(t, tb.CreateQueue(ctx, flotilla.Queue{Name: "A"}), "the term's own writes apply")
	require.NoError(t, tb.PutUsage(ctx, []backend.UsageRecord{{Key: "q/A", Value: []float64{1}, At: clock.Now()}}))

	// A successor's first write, with a higher token: the database has
	// moved on, while this process's clock has not.
	_, err := b.Commit(ctx, &backend.Write{Fence: tm.token + 1})
	require.NoError(t, err)
	require.True(t, tm.alive(clock.Now()), "the term is alive by its own clock")
	writes := map[string]error{
		"CreateQueue": tb.CreateQueue(ctx, flotilla.Queue{Name: "B"}),
		"UpdateQueue": tb.UpdateQueue(ctx, flotilla.Queue{Name: "A", PriorityFactor: 2}),
		"DeleteQueue": tb.DeleteQueue(ctx, "A"),
		"PutExecutor": tb.PutExecutor(ctx, backend.Executor{Cluster: "c1", Reported: clock.Now()}),
		"PutUsage":    tb.PutUsage(ctx, []backend.UsageRecord{{Key: "q/A", Value: []float64{9}, At: clock.Now()}}),
		"Commit":      func() error { _, err := tb.Commit(ctx, &backend.Write{Fence: tm.token}); return err }(),
	}
	for name, err := range writes {
		require.ErrorIs(t, err, backend.ErrFenced, "%s of a term the database has moved past", name)
	}
	qs, err := b.ListQueues(ctx)
	require.NoError(t, err)
	require.Equal(t, []flotilla.Queue{{Name: "A"}}, qs, "no queue written")
	es, err := b.ListExecutors(ctx)
	require.NoError(t, err)
	require.Empty(t, es, "no executor written")
	us, err := b.ListUsage(ctx)
	require.NoError(t, err)
	require.Len(t, us, 1)
	require.Equal(t, []float64{1}, us[0].Value, "no usage written")
}

// countingByID is the memory backend's JobLookup, counting its calls.
type countingByID struct {
	backend.Backend
	l     backend.JobLookup
	calls *int
}

func (c countingByID) JobsByID(ctx context.Context, ids []string, recs []backend.Record) error {
	*c.calls++
	return c.l.JobsByID(ctx, ids, recs)
}

// countingByClientID is the memory backend's ClientIDLookup, counting its
// calls.
type countingByClientID struct {
	backend.Backend
	l     backend.ClientIDLookup
	calls *int
}

func (c countingByClientID) JobsByClientID(ctx context.Context, queue string, clientIDs, ids []string) error {
	*c.calls++
	return c.l.JobsByClientID(ctx, queue, clientIDs, ids)
}

// TestLeaderBackendOffersBothLookupsAnsweringAsTheBackend: a leader's
// server reads through the batched lookups whatever the backend has (the
// memory backend has both, PostgreSQL's only JobLookup): the backend's own
// in one call when it has it, else one call per job, with the same
// answers; and it writes nothing once its term has ended.
func TestLeaderBackendOffersBothLookupsAnsweringAsTheBackend(t *testing.T) {
	type plain struct{ backend.Backend }
	for _, tc := range []struct {
		name string
		// wrap returns the backend the leader sees, and the count of its
		// own batched calls.
		wrap                   func(*memory.Backend, *int) backend.Backend
		ownByClientID, ownByID bool
	}{
		{"neither", func(m *memory.Backend, _ *int) backend.Backend { return plain{m} }, false, false},
		{"client ids", func(m *memory.Backend, n *int) backend.Backend { return countingByClientID{m, m, n} }, true, false},
		{"job ids", func(m *memory.Backend, n *int) backend.Backend { return countingByID{m, m, n} }, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, clock := leaseWorld()
			ctx := context.Background()
			require.NoError(t, b.CreateQueue(ctx, flotilla.Queue{Name: "A"}))
			job := &flotilla.Job{ID: "j1", Queue: "A", JobSet: "s", PriorityClass: flotilla.ArmadaDefault,
				Requests: flotilla.Resources{1000}, SubmitTime: clock.Now()}
			_, err := b.Commit(ctx, &backend.Write{Jobs: []backend.JobSpec{{Job: job, ClientID: "c1"}},
				Events: []events.Event{{Queue: "A", JobSet: "s", Job: "j1", Type: events.Submitted, Time: clock.Now()}}})
			require.NoError(t, err)
			e := newElector(b, "http://a", "http://a", 3*time.Second, clock.Now)
			e.round(ctx)
			tm := e.term()
			calls := 0
			tb := leaderBackend(tc.wrap(b, &calls), tm, clock.Now)
			byClientID, ok := tb.(backend.ClientIDLookup)
			require.True(t, ok, "backend.ClientIDLookup offered")
			byID, ok := tb.(backend.JobLookup)
			require.True(t, ok, "backend.JobLookup offered")

			ids := make([]string, 3)
			require.NoError(t, byClientID.JobsByClientID(ctx, "A", []string{"c1", "", "c2"}, ids))
			require.Equal(t, []string{"j1", "", ""}, ids)
			recs := make([]backend.Record, 3)
			require.NoError(t, byID.JobsByID(ctx, []string{"nope", "j1", ""}, recs))
			require.Nil(t, recs[0].Spec.Job)
			require.Equal(t, "j1", recs[1].State.ID)
			require.Nil(t, recs[2].Spec.Job)
			own := 0
			if tc.ownByClientID {
				own++
			}
			if tc.ownByID {
				own++
			}
			require.Equal(t, own, calls, "the backend's own batched lookups are used")

			clock.advance(3 * time.Second)
			_, err = tb.Commit(ctx, &backend.Write{Fence: tm.token})
			require.ErrorIs(t, err, backend.ErrFenced)
		})
	}
}

func TestFollowerForwardsToTheLeaderAnd503sWithoutOne(t *testing.T) {
	b, clock := leaseWorld()
	ctx := context.Background()
	var got http.Header
	leaderSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r.Header.Clone()
		_, _ = io.WriteString(w, "from the leader "+r.URL.Path)
	}))
	defer leaderSrv.Close()
	leader := newElector(b, leaderSrv.URL, leaderSrv.URL, 3*time.Second, clock.Now)
	follower := newElector(b, "http://f", "http://f", 3*time.Second, clock.Now)
	rt := &router{e: follower}
	get := func(h http.Header) *httptest.ResponseRecorder {
		w := httptest.NewRecorder()
		r := httptest.NewRequest(http.MethodGet, "/v1/queues", nil)
		for k, v := range h {
			r.Header[k] = v
		}
		rt.ServeHTTP(w, r)
		return w
	}

	w := get(nil)
	require.Equal(t, http.StatusServiceUnavailable, w.Code, "no leader known yet")
	require.Equal(t, "1", w.Header().Get("Retry-After"))

	leader.round(ctx)
	follower.round(ctx)
	w = get(http.Header{"Authorization": {"Bearer tok"}})
	require.Equal(t, http.StatusOK, w.Code)
	require.Equal(t, "from the leader /v1/queues", w.Body.String())
	require.Equal(t, "Bearer tok", got.Get("Authorization"), "the token goes with the request")
	require.Equal(t, "http://f", got.Get(forwardedHeader))

	w = get(http.Header{forwardedHeader: {"http://x"}})
	require.Equal(t, http.StatusServiceUnavailable, w.Code, "a forwarded request is never forwarded again")

	leaderSrv.Close()
	w = get(nil)
	require.Equal(t, http.StatusServiceUnavailable, w.Code, "a leader that cannot be reached is a 503")
	require.Contains(t, w.Body.String(), "cannot be reached")
}

// TestFollowerStreamsAWatchFromTheLeaderLineByLine: a watch forwarded by a
// follower reaches the client event by event, not when the leader's
// answer ends.
func TestFollowerStreamsAWatchFromTheLeaderLineByLine(t *testing.T) {
	b, clock := leaseWorld()
	ctx := context.Background()
	next := make(chan struct{})
	leaderSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "{\"seq\":1}\n")
		http.NewResponseController(w).Flush()
		<-next
		_, _ = io.WriteString(w, "{\"seq\":2}\n")
	}))
	defer leaderSrv.Close()
	leader := newElector(b, leaderSrv.URL, leaderSrv.URL, 3*time.Second, clock.Now)
	follower := newElector(b, "http://f", "http://f", 3*time.Second, clock.Now)
	leader.round(ctx)
	follower.round(ctx)
	followerSrv := httptest.NewServer(&router{e: follower})
	defer followerSrv.Close()

	resp, err := http.Get(followerSrv.URL + "/v1/queues/A/jobsets/s/events?watch=true")
	require.NoError(t, err)
	defer resp.Body.Close()
	line := make([]byte, len("{\"seq\":1}\n"))
	_, err = io.ReadFull(resp.Body, line)
	require.NoError(t, err, "the first event arrives while the leader's answer goes on")
	require.Equal(t, "{\"seq\":1}\n", string(line))
	close(next)
	rest, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, "{\"seq\":2}\n", string(rest))
}

// TestFollowerAnswers503WhenTheLeaderDoesNotAnswerWithinTheForwardTimeout:
// a leader that accepts the request and never answers (paused, or cut off
// after it accepted the connection) holds a forwarded request for the
// forward timeout, not for as long as TCP would: the follower then
// answers 503 with Retry-After.
func TestFollowerAnswers503WhenTheLeaderDoesNotAnswerWithinTheForwardTimeout(t *testing.T) {
	b, clock := leaseWorld()
	ctx := context.Background()
	release := make(chan struct{})
	leaderSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select { // never answers while the test runs
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer leaderSrv.Close()
	defer close(release)
	leader := newElector(b, leaderSrv.URL, leaderSrv.URL, 3*time.Second, clock.Now)
	follower := newElector(b, "http://f", "http://f", 3*time.Second, clock.Now)
	leader.round(ctx)
	follower.round(ctx)
	const timeout = 200 * time.Millisecond
	rt := &router{e: follower, timeout: timeout}

	for _, method := range []string{http.MethodGet, http.MethodPost} {
		w := httptest.NewRecorder()
		start := time.Now()
		rt.ServeHTTP(w, httptest.NewRequest(method, "/v1/jobs", strings.NewReader(`{"queue": "A"}`)))
		took := time.Since(start)
		require.Equal(t, http.StatusServiceUnavailable, w.Code, method)
		require.Equal(t, "1", w.Header().Get("Retry-After"), method)
		require.Contains(t, w.Body.String(), "did not answer within 200ms", method)
		require.GreaterOrEqual(t, took, timeout, method)
		require.Less(t, took, 30*time.Second, "%s: the follower waited %s for a leader that does not answer", method, took)
	}
}

// TestFollowerStreamsAWatchPastTheForwardTimeout: the forward timeout
// bounds the wait for the leader's answer, not a watch streaming after
// it: a leader that answered at once and sends its next event later than
// the timeout is streamed on.
func TestFollowerStreamsAWatchPastTheForwardTimeout(t *testing.T) {
	b, clock := leaseWorld()
	ctx := context.Background()
	const timeout = 100 * time.Millisecond
	cut := make(chan bool, 1)
	leaderSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "{\"seq\":1}\n")
		http.NewResponseController(w).Flush()
		// The next event comes well after the forward timeout, unless the
		// follower ends the request first.
		select {
		case <-r.Context().Done():
			cut <- true
			return
		case <-time.After(5 * timeout):
			cut <- false
		}
		_, _ = io.WriteString(w, "{\"seq\":2}\n")
	}))
	defer leaderSrv.Close()
	leader := newElector(b, leaderSrv.URL, leaderSrv.URL, 3*time.Second, clock.Now)
	follower := newElector(b, "http://f", "http://f", 3*time.Second, clock.Now)
	leader.round(ctx)
	follower.round(ctx)
	followerSrv := httptest.NewServer(&router{e: follower, timeout: timeout})
	defer followerSrv.Close()

	resp, err := http.Get(followerSrv.URL + "/v1/queues/A/jobsets/s/events?watch=true")
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	all, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.False(t, <-cut, "the follower ended the watch at the forward timeout")
	require.Equal(t, "{\"seq\":1}\n{\"seq\":2}\n", string(all))
}
