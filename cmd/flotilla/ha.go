package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/http/httputil"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/api"
	"github.com/flotilla-sched/flotilla/backend"
	"github.com/flotilla-sched/flotilla/events"
	"github.com/flotilla-sched/flotilla/httpapi"
)

// High availability: several serve processes on one database elect one
// leader with the backend's lease (backend.Leases). The leader runs the
// service (server.Server) and its cycles; the others forward every API
// request to the leader's advertised address, and answer 503 themselves
// when the leader has not answered (its response headers) within
// -forward-timeout (a leader paused, or cut off after it accepted the
// connection).
//
// The elector renews or tries the lease every ttl/3 in a goroutine of its
// own (so that a long cycle or a reload never delays a renewal). A lease
// taken with a new token starts a term; the serve loop then makes the
// leader: an empty write with the token (raising the backend's fence, so
// the previous leader can write no more), then server.New with the token
// as its fence, which rebuilds the state from the database. A term ends
// ttl after the Lead call that last renewed it was sent, unless a renewal
// succeeded since: the lease may have ended by then on the database's
// clock. When it ends, the term's context is cancelled (the loop drops the
// server and its cycles) and the term's writes are refused at once (see
// termBackend). A term never starts again under the token of a term the
// process ended (the database may still count it live: a renewal applied
// whose answer was lost): the process resigns and takes the lease again
// with a higher token, which fences off the ended term's writes still in
// flight before the new term reloads.

// forwardedHeader marks a request a follower forwarded: the process that
// receives it answers it or refuses it, and never forwards it again.
const forwardedHeader = "Flotilla-Forwarded"

// DefaultLeaderTTL is serve's -leader-ttl.
const DefaultLeaderTTL = 10 * time.Second

// DefaultForwardTimeout is serve's -forward-timeout: how long a follower
// waits for the leader to answer a forwarded request (its response
// headers; a watch then streams on without a limit) before it answers 503
// itself.
const DefaultForwardTimeout = 30 * time.Second

// term is one period of leadership under one token.
type term struct {
	token uint64
	// ctx ends with the term.
	ctx    context.Context
	cancel context.CancelFunc
	// epoch is the elector's first reading of its clock, and until when
	// the term ends unless renewed, in nanoseconds since epoch: times are
	// compared by Sub, on the monotonic clock (time.Now's readings carry
	// one), so a step of the wall clock (NTP, an operator) neither
	// lengthens nor shortens a term. Unix times would follow the wall
	// clock: set back, it would keep a deposed leader writing.
	epoch time.Time
	until atomic.Int64
}

// alive reports whether the term still holds at now.
func (t *term) alive(now time.Time) bool {
	return t.ctx.Err() == nil && int64(now.Sub(t.epoch)) < t.until.Load()
}

// elector takes part in the election for one process.
type elector struct {
	leases backend.Leases
	// holder names this process in the lease; advertise is where the
	// others forward requests to.
	holder, advertise string
	ttl               time.Duration
	// now is the elector's clock (time.Now in serve: its readings carry
	// the monotonic clock); epoch is its first reading.
	now   func() time.Time
	epoch time.Time
	// newTerm hears of each new term (buffered: the latest is what counts).
	newTerm chan struct{}
	// onChange, when set, hears of every change of leader (for logging).
	onChange func(leading bool, leader string, token uint64)

	mu sync.Mutex
	// cur is the current term, nil while following.
	cur *term
	// ended is the token of the last term this process ended (0: none).
	// No term starts again under it: that term's writes still in flight
	// carry it, and only a higher fence refuses them.
	ended uint64
	// leader is the leader's advertised address as last read ("" when
	// none is known); lastErr the last Lead's error.
	leader  string
	lastErr error
}

func newElector(leases backend.Leases, holder, advertise string, ttl time.Duration, now func() time.Time) *elector {
	return &elector{leases: leases, holder: holder, advertise: advertise, ttl: ttl, now: now, epoch: now(),
		newTerm: make(chan struct{}, 1)}
}

// round is one election round: one Lead call, and the term started,
// renewed or ended by its answer. It returns how long to wait before the
// next round.
func (e *elector) round(ctx context.Context) time.Duration {
	sent := e.now()
	e.mu.Lock()
	if e.cur != nil && !e.cur.alive(sent) {
		e.endTerm() // not renewed for a whole ttl (this process was paused?)
	}
	limit := e.ttl / 3
	if e.cur != nil {
		// A Lead call that hangs must not outlive the term.
		limit = min(limit, time.Duration(e.cur.until.Load()-int64(sent.Sub(e.epoch))))
	}
	e.mu.Unlock()
	lctx, cancel := context.WithTimeout(ctx, limit)
	l, err := e.leases.Lead(lctx, e.holder, e.advertise, e.ttl)
	cancel()
	if err == nil && l.Leading && l.Token <= e.endedToken() {
		// The database renewed the lease of a term this process ended
		// (a renewal applied whose answer was lost): give it up, so that
		// the next Lead takes it with a higher token.
		rctx, cancel := context.WithTimeout(ctx, e.ttl/3)
		err = e.leases.Resign(rctx, e.holder)
		cancel()
		e.mu.Lock()
		defer e.mu.Unlock()
		e.lastErr = err
		e.setLeader("", l.Token)
		return 10 * time.Millisecond
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.lastErr = err
	wait := e.ttl / 3
	switch {
	case err != nil:
		if e.cur != nil && !e.cur.alive(e.now()) {
			e.endTerm()
		}
		if e.cur == nil {
			e.setLeader("", 0)
		}
		wait = min(wait, 250*time.Millisecond)
	case l.Leading:
		if e.cur != nil && e.cur.token != l.Token {
			e.endTerm()
		}
		if e.cur == nil {
			t := &term{token: l.Token, epoch: e.epoch}
			t.ctx, t.cancel = context.WithCancel(context.WithoutCancel(ctx))
			e.cur = t
			select {
			case e.newTerm <- struct{}{}:
			default:
			}
		}
		e.cur.until.Store(int64(sent.Sub(e.epoch) + e.ttl))
		e.setLeader(e.advertise, l.Token)
	default:
		if e.cur != nil {
			e.endTerm()
		}
		leader := ""
		if l.Expires.After(l.Now) {
			leader = l.Address
			// Try again just after the leader's lease would end.
			wait = min(wait, l.Expires.Sub(l.Now)+10*time.Millisecond)
		}
		e.setLeader(leader, l.Token)
	}
	return max(wait, time.Millisecond)
}

// setLeader records the leader's address; the caller holds mu.
func (e *elector) setLeader(addr string, token uint64) {
	if addr == e.leader {
		return
	}
	e.leader = addr
	if e.onChange != nil {
		e.onChange(e.cur != nil, addr, token)
	}
}

// endedToken returns the token of the last term this process ended.
func (e *elector) endedToken() uint64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.ended
}

// endTerm ends the current term; the caller holds mu.
func (e *elector) endTerm() {
	e.ended = max(e.ended, e.cur.token)
	e.cur.until.Store(math.MinInt64)
	e.cur.cancel()
	e.cur = nil
}

// run calls round until ctx ends, then resigns the lease if it holds it,
// so that another process takes over at once.
func (e *elector) run(ctx context.Context) {
	for {
		wait := e.round(ctx)
		select {
		case <-ctx.Done():
			e.mu.Lock()
			leading := e.cur != nil
			if leading {
				e.endTerm()
			}
			e.mu.Unlock()
			if leading {
				rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), e.ttl/3)
				_ = e.leases.Resign(rctx, e.holder)
				cancel()
			}
			return
		case <-time.After(wait):
		}
	}
}

// term returns the current term, nil while following.
func (e *elector) term() *term {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.cur
}

// leaderAddr returns the leader's address ("" when none is known) and the
// last Lead's error.
func (e *elector) leaderAddr() (string, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.leader, e.lastErr
}

// errNotLeader refuses a write of a term that has ended.
var errNotLeader = fmt.Errorf("flotilla serve: this process no longer leads: %w", backend.ErrFenced)

// termBackend is the backend a leader's server writes through: every
// write is refused once the term has ended by this process's clock (its
// lease may have passed to another process), queue, executor and usage
// writes included. Reads pass through. When the backend implements
// backend.Fenced, those writes go through its view for the term's token
// as well, so the database refuses them once a successor has written,
// also one that passed the clock check before the process was paused.
type termBackend struct {
	backend.Backend
	t   *term
	now func() time.Time
}

// leaderBackend returns be as the term's server sees it: fenced by the
// term's token (backend.Fenced, when be has it) and by the term's clock,
// keeping its optional backend.ClientIDLookup and backend.JobLookup.
func leaderBackend(be backend.Backend, t *term, now func() time.Time) backend.Backend {
	if f, ok := be.(backend.Fenced); ok {
		be = f.WithFence(t.token)
	}
	tb := termBackend{Backend: be, t: t, now: now}
	cl, byClientID := be.(backend.ClientIDLookup)
	jl, byID := be.(backend.JobLookup)
	switch {
	case byClientID && byID:
		return termLookupsBackend{tb, cl, jl}
	case byClientID:
		return termLookupBackend{tb, cl}
	case byID:
		return termJobLookupBackend{tb, jl}
	}
	return tb
}

type termLookupBackend struct {
	termBackend
	backend.ClientIDLookup
}

type termJobLookupBackend struct {
	termBackend
	backend.JobLookup
}

type termLookupsBackend struct {
	termBackend
	backend.ClientIDLookup
	backend.JobLookup
}

func (b termBackend) check() error {
	if !b.t.alive(b.now()) {
		return errNotLeader
	}
	return nil
}

func (b termBackend) Commit(ctx context.Context, w *backend.Write) ([]events.Event, error) {
	if err := b.check(); err != nil {
		return nil, err
	}
	return b.Backend.Commit(ctx, w)
}

func (b termBackend) CreateQueue(ctx context.Context, q flotilla.Queue) error {
	if err := b.check(); err != nil {
		return err
	}
	return b.Backend.CreateQueue(ctx, q)
}

func (b termBackend) UpdateQueue(ctx context.Context, q flotilla.Queue) error {
	if err := b.check(); err != nil {
		return err
	}
	return b.Backend.UpdateQueue(ctx, q)
}

func (b termBackend) DeleteQueue(ctx context.Context, name string) error {
	if err := b.check(); err != nil {
		return err
	}
	return b.Backend.DeleteQueue(ctx, name)
}

func (b termBackend) PutExecutor(ctx context.Context, e backend.Executor) error {
	if err := b.check(); err != nil {
		return err
	}
	return b.Backend.PutExecutor(ctx, e)
}

func (b termBackend) PutUsage(ctx context.Context, rs []backend.UsageRecord) error {
	if err := b.check(); err != nil {
		return err
	}
	return b.Backend.PutUsage(ctx, rs)
}

// termHandler serves h's requests for the term t: each request's context
// ends when the term does, so a watch served by a leader that steps down
// ends (its client resumes, through whichever process it reaches) rather
// than staying open on a server that writes nothing more.
func termHandler(t *term, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithCancel(r.Context())
		defer cancel()
		stop := context.AfterFunc(t.ctx, cancel)
		defer stop()
		h.ServeHTTP(w, r.WithContext(ctx))
	})
}

// router answers the API: the leader's handler while this process leads,
// else a proxy to the leader (with -auth, for a known token only), else
// 503.
type router struct {
	e *elector
	// auth, when set, is this process's -auth: a request goes to the
	// leader only with a known token (the leader checks its rights), so
	// a follower never passes on a request it would itself refuse.
	auth *httpapi.Auth
	// timeout bounds the wait for the leader's answer to a forwarded
	// request (until its response headers); 0 means
	// DefaultForwardTimeout.
	timeout time.Duration
	// api is the leader's API handler, nil while not leading.
	api atomic.Pointer[http.Handler]

	mu    sync.Mutex
	proxy *httputil.ReverseProxy
	to    string
}

func (rt *router) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if h := rt.api.Load(); h != nil {
		(*h).ServeHTTP(w, r)
		return
	}
	leader, lerr := rt.e.leaderAddr()
	switch {
	case r.Header.Get(forwardedHeader) != "":
		unavailable(w, "this process does not lead (the request was forwarded to it); retry")
	case leader == "" || leader == rt.e.advertise:
		why := "no leader is known yet; retry"
		if errors.Is(lerr, backend.ErrUnavailable) {
			why = "no leader is known: " + lerr.Error()
		}
		unavailable(w, why)
	default:
		p, err := rt.proxyTo(leader)
		if err != nil {
			unavailable(w, err.Error())
			return
		}
		authenticated(rt.auth, rt.bounded(p)).ServeHTTP(w, r)
	}
}

// errForwardTimeout ends a forwarded request whose leader did not answer
// within the forward timeout.
var errForwardTimeout = errors.New("the leader did not answer within the forward timeout")

// forwardDeadlineKey is the context key of a forwarded request's
// *forwardDeadline.
type forwardDeadlineKey struct{}

// forwardDeadline ends a forwarded request, unless stopped first (when
// the leader's response headers arrive).
type forwardDeadline struct{ timer *time.Timer }

// forwardTimeout is the router's bound on the leader's answer.
func (rt *router) forwardTimeout() time.Duration {
	if rt.timeout <= 0 {
		return DefaultForwardTimeout
	}
	return rt.timeout
}

// bounded forwards through p, ending the request with errForwardTimeout
// when the leader has not answered (sent its response headers) within the
// forward timeout: a leader that is paused, or cut off after it accepted
// the connection, does not hold the request (or the client) for as long
// as TCP would. The body then streams without a limit (a watch).
func (rt *router) bounded(p *httputil.ReverseProxy) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithCancelCause(r.Context())
		defer cancel(nil)
		d := &forwardDeadline{}
		d.timer = time.AfterFunc(rt.forwardTimeout(), func() { cancel(errForwardTimeout) })
		defer d.timer.Stop()
		p.ServeHTTP(w, r.WithContext(context.WithValue(ctx, forwardDeadlineKey{}, d)))
	})
}

// answered stops the forward deadline of resp's request once the leader's
// response headers have arrived; errForwardTimeout when it had passed.
func answered(resp *http.Response) error {
	if d, ok := resp.Request.Context().Value(forwardDeadlineKey{}).(*forwardDeadline); ok && !d.timer.Stop() {
		return errForwardTimeout
	}
	return nil
}

// proxyTo returns the reverse proxy to the leader at addr.
func (rt *router) proxyTo(addr string) (*httputil.ReverseProxy, error) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if rt.to == addr {
		return rt.proxy, nil
	}
	target, err := url.Parse(addr)
	if err != nil || target.Host == "" {
		return nil, fmt.Errorf("the leader's address %q is not a URL", addr)
	}
	rt.proxy = &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			pr.SetXForwarded()
			pr.Out.Header.Set(forwardedHeader, rt.e.advertise)
		},
		FlushInterval:  -1, // watches stream
		ModifyResponse: answered,
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			if errors.Is(err, errForwardTimeout) || errors.Is(context.Cause(r.Context()), errForwardTimeout) {
				unavailable(w, fmt.Sprintf("the leader at %s did not answer within %s; retry", addr, rt.forwardTimeout()))
				return
			}
			unavailable(w, fmt.Sprintf("the leader at %s cannot be reached (%v); retry", addr, err))
		},
	}
	rt.to = addr
	return rt.proxy, nil
}

// unavailable answers 503 with Retry-After: 1.
func unavailable(w http.ResponseWriter, why string) {
	w.Header().Set("Retry-After", "1")
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusServiceUnavailable)
	_ = json.NewEncoder(w).Encode(api.Error{Error: why})
}
