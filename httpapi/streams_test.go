package httpapi_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flotilla-sched/flotilla/api"
	"github.com/flotilla-sched/flotilla/httpapi"
)

// stalledConn is a ResponseWriter whose client stops reading once room
// bytes are written: a write past that blocks, as on a full socket, until
// its deadline (set through http.ResponseController) has passed: the test
// sends the fake clock's time on tick when it advances it. Each stalled
// write first sends the deadline in force to stalled (zero: none).
type stalledConn struct {
	header  http.Header
	room    int
	mu      sync.Mutex
	dl      time.Time
	stalled chan time.Time
	tick    chan time.Time
}

func (c *stalledConn) Header() http.Header { return c.header }
func (c *stalledConn) WriteHeader(int)     {}
func (c *stalledConn) FlushError() error   { return nil }

func (c *stalledConn) SetWriteDeadline(t time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.dl = t
	return nil
}

func (c *stalledConn) Write(p []byte) (int, error) {
	if len(p) <= c.room {
		c.room -= len(p)
		return len(p), nil
	}
	c.mu.Lock()
	dl := c.dl
	c.mu.Unlock()
	c.stalled <- dl
	for now := range c.tick {
		if !dl.IsZero() && !now.Before(dl) {
			return 0, os.ErrDeadlineExceeded
		}
	}
	return 0, io.ErrClosedPipe // the test gave up
}

// TestAStreamWhoseClientStopsReadingEndsAtItsWriteDeadline: a stream
// (watching or listing) whose client stops reading holds its page of
// events only until the write in progress passes the stream write
// timeout, on the handler's clock; then the handler returns and its slot
// is free. Before, it held them for ever (1,000 such watches pinned
// 572 MB).
func TestAStreamWhoseClientStopsReadingEndsAtItsWriteDeadline(t *testing.T) {
	for _, query := range []string{"watch=true", ""} {
		s := newService(t, httpapi.Options{})
		ctx := context.Background()
		c := s.client(t, "")
		_, err := c.CreateQueue(ctx, api.Queue{Name: "A"})
		require.NoError(t, err)
		_, err = c.Submit(ctx, []byte(`{"queue": "A", "jobSet": "s", "jobs": [{"count": 50, "requests": {"cpu": "1"}}]}`))
		require.NoError(t, err)
		const timeout = 30 * time.Second
		observed := make(chan int, 1)
		h := httpapi.New(s.srv, httpapi.Options{Clock: s.clock, StreamWriteTimeout: timeout,
			Observe: func(route string, status int, d time.Duration) { observed <- status }})
		conn := &stalledConn{header: http.Header{}, room: 2000, stalled: make(chan time.Time), tick: make(chan time.Time)}
		done := make(chan struct{})
		go func() {
			defer close(done)
			h.ServeHTTP(conn, httptest.NewRequest(http.MethodGet, "/v1/queues/A/jobsets/s/events?"+query, nil))
		}()
		var dl time.Time
		select {
		case dl = <-conn.stalled:
		case <-done:
			t.Fatalf("%s: the stream ended before its client stopped reading", query)
		}
		if dl.IsZero() {
			close(conn.tick)
			<-done
			t.Fatalf("%s: the stalled write has no deadline: the stream is held for ever", query)
		}
		require.Equal(t, s.clock.Now().Add(timeout), dl, query)
		require.Equal(t, 1, h.Streams())
		// Just before the deadline the write goes on waiting: it takes a
		// second tick.
		s.clock.Advance(timeout - time.Nanosecond)
		for range 2 {
			select {
			case conn.tick <- s.clock.Now():
			case <-done:
				t.Fatalf("%s: the stream ended before its deadline", query)
			}
		}
		s.clock.Advance(time.Nanosecond)
		conn.tick <- s.clock.Now()
		<-done
		require.Equal(t, http.StatusOK, <-observed, "the handler returned and was observed")
		require.Zero(t, h.Streams(), "%s: its slot is free", query)
	}
}

// TestStreamsPastTheirBoundsAre503WithRetryAfterAndHealthStillAnswers:
// over loopback HTTP, a principal holds at most MaxStreamsPerPrincipal
// event streams and the service MaxStreams; past either a request gets
// 503 with Retry-After and an api.Error saying which bound, without
// touching the streams held; /healthz and /readyz answer all along; a
// stream that ends frees its slot.
func TestStreamsPastTheirBoundsAre503WithRetryAfterAndHealthStillAnswers(t *testing.T) {
	auth, err := httpapi.ParseAuth([]byte(`{"tokens": [
		{"token": "t-alice", "principal": "alice", "watch": ["A"]},
		{"token": "t-bob", "principal": "bob", "watch": ["A"]},
		{"token": "t-ops", "principal": "ops", "admin": true}]}`))
	require.NoError(t, err)
	ended := make(chan struct{}, 8)
	s := newService(t, httpapi.Options{Auth: auth, MaxStreams: 3, MaxStreamsPerPrincipal: 2,
		Observe: func(route string, status int, d time.Duration) {
			if route == "GET /v1/queues/{queue}/jobsets/{jobSet}/events" && status == http.StatusOK {
				ended <- struct{}{}
			}
		}})
	ctx := context.Background()
	_, err = s.client(t, "t-ops").CreateQueue(ctx, api.Queue{Name: "A"})
	require.NoError(t, err)
	type stream struct {
		resp   *http.Response
		cancel context.CancelFunc
	}
	open := func(token, query string) stream {
		t.Helper()
		rctx, cancel := context.WithCancel(ctx)
		req, err := http.NewRequestWithContext(rctx, http.MethodGet, s.url+"/v1/queues/A/jobsets/s/events?"+query, nil)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		t.Cleanup(func() { cancel(); resp.Body.Close() })
		return stream{resp, cancel}
	}
	refused := func(token, query, why string) {
		t.Helper()
		st := open(token, query)
		require.Equal(t, http.StatusServiceUnavailable, st.resp.StatusCode)
		require.Equal(t, "5", st.resp.Header.Get("Retry-After"))
		var e api.Error
		require.NoError(t, json.NewDecoder(st.resp.Body).Decode(&e))
		require.Contains(t, e.Error, why)
	}
	health := func() {
		t.Helper()
		for _, path := range []string{"/healthz", "/readyz"} {
			resp, err := http.Get(s.url + path)
			require.NoError(t, err)
			resp.Body.Close()
			require.Equal(t, http.StatusOK, resp.StatusCode, path)
		}
	}
	a1, a2 := open("t-alice", "watch=true"), open("t-alice", "watch=true")
	require.Equal(t, http.StatusOK, a1.resp.StatusCode)
	require.Equal(t, http.StatusOK, a2.resp.StatusCode)
	refused("t-alice", "watch=true", "principal alice has 2 event streams open")
	refused("t-alice", "", "principal alice has 2 event streams open") // a listing is a stream too
	health()
	b1 := open("t-bob", "watch=true")
	require.Equal(t, http.StatusOK, b1.resp.StatusCode)
	refused("t-bob", "watch=true", "serves 3 event streams")
	health()

	a1.cancel()
	a1.resp.Body.Close()
	<-ended // the handler returned: its slot is free
	b2 := open("t-bob", "watch=true")
	require.Equal(t, http.StatusOK, b2.resp.StatusCode)
	refused("t-alice", "watch=true", "serves 3 event streams")
}
