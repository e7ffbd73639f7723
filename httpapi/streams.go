package httpapi

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/flotilla-sched/flotilla/api"
	"github.com/flotilla-sched/flotilla/server"
)

// Defaults of the bounds on event streams (GET
// /v1/queues/{queue}/jobsets/{jobSet}/events, following or not). A stream
// holds up to a page of events while its client reads them (about 0.5 MB
// on a job set of long-running jobs), so the bounds keep what streams can
// pin to about DefaultMaxStreams of those.
const (
	// DefaultMaxStreams bounds the streams served at once.
	DefaultMaxStreams = 512
	// DefaultMaxStreamsPerPrincipal bounds one principal's streams.
	// Without Options.Auth every request is one principal's.
	DefaultMaxStreamsPerPrincipal = 64
	// DefaultStreamWriteTimeout is how long one event may take to reach
	// the connection: a client that stops reading for that long loses its
	// stream (a watch resumes with from = its last sequence number + 1).
	DefaultStreamWriteTimeout = 30 * time.Second
)

// streamSlots counts the streams being served, in total and per
// principal.
type streamSlots struct {
	max, perPrincipal int
	mu                sync.Mutex
	total             int
	byPrincipal       map[string]int
}

// acquire takes a slot for a stream of principal who, or says why there
// is none.
func (s *streamSlots) acquire(who string) (release func(), refusal string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.byPrincipal[who] >= s.perPrincipal:
		return nil, fmt.Sprintf("principal %s has %d event streams open, the most one principal may; retry later", who, s.perPrincipal)
	case s.total >= s.max:
		return nil, fmt.Sprintf("the service serves %d event streams, the most it serves at once; retry later", s.max)
	}
	s.total++
	s.byPrincipal[who]++
	var once sync.Once
	return func() {
		once.Do(func() {
			s.mu.Lock()
			defer s.mu.Unlock()
			s.total--
			if s.byPrincipal[who]--; s.byPrincipal[who] == 0 {
				delete(s.byPrincipal, who)
			}
		})
	}, ""
}

// Streams reports how many event streams the handler serves now.
func (h *Handler) Streams() int {
	h.streams.mu.Lock()
	defer h.streams.mu.Unlock()
	return h.streams.total
}

// openStream takes a stream slot for the request's principal, answering
// 503 with Retry-After (and reporting false) past a bound.
func (h *Handler) openStream(w http.ResponseWriter, r *http.Request) (func(), bool) {
	p := principal(r)
	release, why := h.streams.acquire(p.Name)
	if release == nil {
		h.opts.Logger.Warn("stream refused", "path", r.URL.Path, "principal", p.Name, "why", why)
		w.Header().Set("Retry-After", strconv.Itoa(streamRetryAfter))
		writeJSON(w, http.StatusServiceUnavailable, api.Error{Error: why})
		return nil, false
	}
	return release, true
}

// streamRetryAfter is the Retry-After, in seconds, of a stream refused
// past a bound.
const streamRetryAfter = 5

// deadlineWriter gives each write to a stream a deadline of the stream
// write timeout from now (the handler's clock): a write the client does
// not take in time fails, ending the stream, instead of blocking for ever
// with its page of events. A ResponseWriter without deadlines
// (http.ErrNotSupported) is written to without.
type deadlineWriter struct {
	w       io.Writer
	rc      *http.ResponseController
	clock   server.Clock
	timeout time.Duration
}

func (d *deadlineWriter) Write(p []byte) (int, error) {
	if err := d.rc.SetWriteDeadline(d.clock.Now().Add(d.timeout)); err != nil && !errors.Is(err, http.ErrNotSupported) {
		return 0, err
	}
	return d.w.Write(p)
}

// flush sends what is buffered, under a deadline.
func (d *deadlineWriter) flush() error {
	if err := d.rc.SetWriteDeadline(d.clock.Now().Add(d.timeout)); err != nil && !errors.Is(err, http.ErrNotSupported) {
		return err
	}
	return d.rc.Flush()
}

// clear lifts the deadline once the stream is written, so that it does
// not outlive the response on a connection kept alive.
func (d *deadlineWriter) clear() { _ = d.rc.SetWriteDeadline(time.Time{}) }
