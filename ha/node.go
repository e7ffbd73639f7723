package ha

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/backend"
	"github.com/flotilla-sched/flotilla/httpapi"
	"github.com/flotilla-sched/flotilla/server"
)

// Config is what a Node runs.
type Config struct {
	// Backend is the storage every process shares.
	Backend backend.Backend
	// Leases elects the leader among the processes sharing Backend; nil
	// means this process is the only one (it always leads, fence 0).
	Leases backend.Leases
	// NewServer builds the service over be (the leader's fenced view of
	// Backend) with fence as server.Config.Fence; ctx ends with the term.
	// Required.
	NewServer func(ctx context.Context, be backend.Backend, fence uint64) (*server.Server, error)
	// API are the options of the leader's API handler (httpapi.New). A
	// follower forwards a request only with a token API.Auth knows (when
	// set), and never one it would itself refuse.
	API httpapi.Options
	// Holder names this process in the lease (Holder gives the usual
	// name); Advertise is the http:// or https:// URL the other processes
	// forward requests to while this one leads. Both required with
	// Leases.
	Holder, Advertise string
	// TTL is the leader lease, renewed every third of it (0:
	// DefaultLeaderTTL); ForwardTimeout bounds a follower's wait for the
	// leader's answer to a forwarded request (0: DefaultForwardTimeout).
	TTL, ForwardTimeout time.Duration
	// Cycle is the time between scheduling cycles; required.
	Cycle time.Duration
	// OnCycle, when set, hears of every cycle Run runs: its report, how
	// long it took, and its error.
	OnCycle func(rep *server.CycleReport, took time.Duration, err error)
	// Logger receives the leadership changes and failed cycles (nil:
	// none).
	Logger *slog.Logger
	// Now is the node's clock: the lease's timing (a term ends one TTL
	// after the renewal that kept it was sent, compared with Sub, so a
	// clock with monotonic readings, as time.Now's) and the durations
	// reported. nil means time.Now.
	Now func() time.Time
}

// Node is one process of a highly available service: it leads (runs the
// service) or follows (forwards the API to the leader). Its methods may be
// called from any goroutine.
type Node struct {
	cfg Config
	log *slog.Logger
	el  *elector // nil without leases
	rt  *router
	// current is the service this process runs: with leases, the
	// leader's of the current term (nil while following).
	current  atomic.Pointer[server.Server]
	api      atomic.Pointer[httpapi.Handler]
	draining atomic.Bool

	// Owned by Run (and Start before it).
	cur          *term
	electing     chan struct{}
	stopElecting context.CancelFunc
}

// New checks cfg and returns its Node; Start runs it.
func New(cfg Config) (*Node, error) {
	var errs []error
	if cfg.Backend == nil {
		errs = append(errs, flotilla.Errorf("Backend", "", flotilla.ErrRequired, ""))
	}
	if cfg.NewServer == nil {
		errs = append(errs, flotilla.Errorf("NewServer", "", flotilla.ErrRequired, ""))
	}
	if cfg.Cycle <= 0 {
		errs = append(errs, flotilla.Errorf("Cycle", cfg.Cycle.String(), flotilla.ErrOutOfRange, "want a positive duration"))
	}
	if cfg.TTL < 0 || cfg.ForwardTimeout < 0 {
		errs = append(errs, flotilla.Errorf("TTL", cfg.TTL.String()+", "+cfg.ForwardTimeout.String(), flotilla.ErrNegative, "TTL and ForwardTimeout"))
	}
	if cfg.Leases != nil {
		if cfg.Holder == "" {
			errs = append(errs, flotilla.Errorf("Holder", "", flotilla.ErrRequired, "with Leases"))
		}
		if !strings.HasPrefix(cfg.Advertise, "http://") && !strings.HasPrefix(cfg.Advertise, "https://") {
			errs = append(errs, flotilla.Errorf("Advertise", cfg.Advertise, flotilla.ErrMalformed, "want an http:// or https:// URL"))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if cfg.TTL == 0 {
		cfg.TTL = DefaultLeaderTTL
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	n := &Node{cfg: cfg, log: cfg.Logger, electing: make(chan struct{}), stopElecting: func() {}}
	if n.log == nil {
		n.log = slog.New(slog.DiscardHandler)
	}
	n.rt = &router{auth: cfg.API.Auth, timeout: cfg.ForwardTimeout}
	if cfg.Leases != nil {
		n.el = newElector(cfg.Leases, cfg.Holder, cfg.Advertise, cfg.TTL, cfg.Now)
		n.el.onChange = func(leads bool, leader string, token uint64) {
			n.log.Info("leader", "leader", leader, "leading", leads, "token", token)
		}
		n.rt.e = n.el
	}
	return n, nil
}

// Start starts the node. Without leases it builds the service (its error
// is NewServer's). With leases it runs a first election round and starts
// the elector's goroutine; a process that leads at once (the only one, or
// one restarted at the address of one that died) builds its service
// before Start returns, so that it serves only once it has loaded. A
// failed takeover is logged and tried again by Run. Call Start once, then
// Run.
func (n *Node) Start(ctx context.Context) error {
	if n.el == nil {
		close(n.electing)
		srv, err := n.cfg.NewServer(ctx, n.cfg.Backend, 0)
		if err != nil {
			return err
		}
		n.current.Store(srv)
		h := httpapi.New(srv, n.cfg.API)
		n.api.Store(h)
		var hh http.Handler = h
		n.rt.api.Store(&hh)
		return nil
	}
	ectx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	n.stopElecting = cancel
	n.el.round(ectx)
	go func() {
		defer close(n.electing)
		n.el.run(ectx)
	}()
	if t := n.el.term(); t != nil {
		<-n.el.newTerm
		n.cur = t
		n.lead(t)
	}
	return nil
}

// Run runs the cycles every Config.Cycle while this process leads, takes
// up each new term and drops each ended one, until ctx ends. Then it
// drains: the service takes no new leases (the cycle in progress has
// finished: cycles run in this goroutine), Ready reports draining, and
// the lease is given up so that another process leads at once. The caller
// then stops its HTTP server.
func (n *Node) Run(ctx context.Context) {
	ticker := time.NewTicker(n.cfg.Cycle)
	defer ticker.Stop()
	var newTerm chan struct{}
	if n.el != nil {
		newTerm = n.el.newTerm
	}
	for {
		var termEnded <-chan struct{}
		if n.cur != nil {
			termEnded = n.cur.ctx.Done()
		}
		select {
		case <-ctx.Done():
			n.drain()
			return
		case <-newTerm:
			if t := n.el.term(); t != nil && t != n.cur {
				n.stepDown()
				n.cur = t
				n.lead(t)
			}
		case <-termEnded:
			n.stepDown()
		case <-ticker.C:
			switch {
			case n.el == nil:
				n.cycle(context.WithoutCancel(ctx), n.current.Load())
			case n.cur != nil && n.current.Load() == nil:
				n.lead(n.cur) // the takeover failed: again
			case n.cur != nil:
				n.cycle(n.cur.ctx, n.current.Load())
			}
		}
	}
}

// drain ends Run: no new leases, Ready says so, the lease is given up.
func (n *Node) drain() {
	n.draining.Store(true)
	if srv := n.current.Load(); srv != nil {
		srv.Drain()
	}
	n.stopElecting()
	<-n.electing
}

// cycle runs one cycle of srv, its context ctx.
func (n *Node) cycle(ctx context.Context, srv *server.Server) {
	start := n.cfg.Now()
	rep, err := srv.Cycle(ctx)
	if n.cfg.OnCycle != nil {
		n.cfg.OnCycle(rep, n.cfg.Now().Sub(start), err)
	}
	if err != nil {
		n.log.Error("cycle failed", "err", err)
	}
}

// lead makes this process the leader of term t: an empty write with its
// token fences off the previous leader, then the state is rebuilt from
// the database under that token; the first cycle runs at once.
func (n *Node) lead(t *term) {
	began := n.cfg.Now()
	tb := leaderBackend(n.cfg.Backend, t, n.cfg.Now)
	if _, err := tb.Commit(t.ctx, &backend.Write{Fence: t.token}); err != nil {
		n.log.Error("taking over failed: fencing", "token", t.token, "err", err)
		return
	}
	srv, err := n.cfg.NewServer(t.ctx, tb, t.token)
	if err != nil {
		n.log.Error("taking over failed: loading", "token", t.token, "err", err)
		return
	}
	api := httpapi.New(srv, n.cfg.API)
	h := termHandler(t, api)
	n.current.Store(srv)
	n.api.Store(api)
	n.rt.api.Store(&h)
	n.log.Info("leading", "token", t.token, "loaded", n.cfg.Now().Sub(began).String())
	n.cycle(t.ctx, srv)
	n.log.Info("first cycle as leader", "token", t.token, "sinceTerm", n.cfg.Now().Sub(began).String())
}

// stepDown drops the current term's service, if any.
func (n *Node) stepDown() {
	if n.cur == nil {
		return
	}
	n.rt.api.Store(nil)
	n.api.Store(nil)
	if srv := n.current.Swap(nil); srv != nil {
		srv.Drain()
	}
	n.log.Warn("stepped down", "token", n.cur.token)
	n.cur = nil
}

// Handler is the API: the leader's handler while this process leads,
// else a proxy to the leader, else 503 with Retry-After.
func (n *Node) Handler() http.Handler { return n.rt }

// Current is the service this process runs, nil while it does not lead.
func (n *Node) Current() *server.Server { return n.current.Load() }

// API is the leader's API handler, nil while this process does not lead.
func (n *Node) API() *httpapi.Handler { return n.api.Load() }

// Leading reports whether this process leads and runs its service.
func (n *Node) Leading() bool {
	return n.el == nil || (n.el.term() != nil && n.current.Load() != nil)
}

// Ready is nil while the node can answer the API: it leads, or it knows a
// leader to forward to, and Run is not draining.
func (n *Node) Ready() error {
	if n.draining.Load() {
		return errors.New("draining: shutting down")
	}
	if n.el != nil && !n.Leading() {
		if leader, err := n.el.leaderAddr(); leader == "" || leader == n.el.advertise {
			if err != nil {
				return fmt.Errorf("no leader is known: %w", err)
			}
			return errors.New("no leader is known yet")
		}
	}
	return nil
}

// Holder names a process in the leader lease: its host's name and the
// address it listens on (not the advertised URL, which several processes
// may share: a load balancer's, or an unspecified address's on every
// host). No two live processes on one host listen at one address, so no
// two renew one lease as their own; a process restarted at the address of
// one that died takes its lease over at once.
func Holder(listening net.Addr) string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "localhost"
	}
	return host + " " + listening.String()
}

// RequireKnownToken guards a handler served beside the API by a process
// that may not lead (and so has no API handler of its own: /metrics):
// with auth, a request needs a known bearer token, whatever its rights;
// else it is refused with 401.
func RequireKnownToken(auth *httpapi.Auth, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if auth != nil {
			tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
			if _, known := auth.Lookup(strings.TrimSpace(tok)); !ok || !known {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusUnauthorized)
				_, _ = io.WriteString(w, `{"error": "a known bearer token is required"}`+"\n")
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// Unavailable answers 503 with Retry-After: 1 and why as the JSON error.
func Unavailable(w http.ResponseWriter, why string) { unavailable(w, why) }
