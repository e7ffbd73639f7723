package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/backend"
	"github.com/flotilla-sched/flotilla/backend/memory"
	"github.com/flotilla-sched/flotilla/backend/postgres"
	"github.com/flotilla-sched/flotilla/httpapi"
	"github.com/flotilla-sched/flotilla/internal/strictjson"
	"github.com/flotilla-sched/flotilla/scenario"
	"github.com/flotilla-sched/flotilla/scheduler"
	"github.com/flotilla-sched/flotilla/server"
	"github.com/flotilla-sched/flotilla/submit"
)

// defaultResources are the service's resources when -config names none.
func defaultResources() []string { return []string{"cpu", "memory", submit.DefaultGPUResource} }

// serveConfig is serve's -config file: SCENARIOS.md's config and
// priorityClasses blocks, and the resources the service schedules.
type serveConfig struct {
	Config          scenario.Config          `json:"config"`
	PriorityClasses []scenario.PriorityClass `json:"priorityClasses,omitempty"`
	// Resources names the service's resources; absent means cpu, memory
	// and nvidia.com/gpu.
	Resources []string `json:"resources,omitempty"`
}

// loadServeConfig reads -config into the scheduler's configuration and
// the service's requeue setting, validated as a scenario's would be.
func loadServeConfig(path string) (scheduler.Config, bool, error) {
	sc, err := readServeConfig(path)
	if err != nil {
		return scheduler.Config{}, false, err
	}
	return sc.buildDefault()
}

// parseServeConfig is loadServeConfig on a file's contents.
func parseServeConfig(data []byte) (scheduler.Config, bool, error) {
	sc, err := decodeServeConfig(data)
	if err != nil {
		return scheduler.Config{}, false, err
	}
	return sc.buildDefault()
}

// buildDefault is build with the default resources when sc names none.
func (sc serveConfig) buildDefault() (scheduler.Config, bool, error) {
	if len(sc.Resources) == 0 {
		sc.Resources = defaultResources()
	}
	return sc.build()
}

// readServeConfig decodes a -config file strictly; an empty path is the
// empty configuration.
func readServeConfig(path string) (serveConfig, error) {
	if path == "" {
		return serveConfig{}, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return serveConfig{}, err
	}
	return decodeServeConfig(data)
}

// decodeServeConfig decodes a -config file's contents strictly.
func decodeServeConfig(data []byte) (serveConfig, error) {
	var sc serveConfig
	if err := strictjson.Decode(data, &sc); err != nil {
		return serveConfig{}, err
	}
	return sc, nil
}

// build validates the config and priority classes over sc.Resources as a
// scenario's would be and returns the scheduler's configuration and the
// requeue setting.
func (sc serveConfig) build() (scheduler.Config, bool, error) {
	// A node template of count 0 gives the schema its resources and no
	// nodes; Build validates the config and classes as for a scenario.
	res := make(map[string]string, len(sc.Resources))
	for _, r := range sc.Resources {
		res[r] = "0"
	}
	zero := 0
	f := &scenario.File{Config: sc.Config, PriorityClasses: sc.PriorityClasses,
		Nodes: []scenario.NodeTemplate{{Name: "resources", Count: &zero, Resources: res}}}
	built, err := f.Build()
	if err != nil {
		return scheduler.Config{}, false, flotilla.RenameFields(err, func(f string) string {
			if strings.HasPrefix(f, "nodes[0].resources") {
				return "resources" + strings.TrimPrefix(f, "nodes[0].resources")
			}
			return f
		})
	}
	return built.SchedulerConfig(), built.Settings.RequeuePreempted, nil
}

// isLoopback reports whether a listen address binds loopback only.
func isLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// unspecifiedHost reports whether a listen address binds every address
// (0.0.0.0, ::, or no host): not one another process can reach it at.
func unspecifiedHost(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	ip := net.ParseIP(host)
	return host == "" || ip != nil && ip.IsUnspecified()
}

func serve(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	listen := fs.String("listen", "127.0.0.1:8080", "address to listen on")
	db := fs.String("db", "", "database URL (empty: the in-memory backend)")
	configPath := fs.String("config", "", "scheduler configuration: the config and priorityClasses blocks of SCENARIOS.md")
	authPath := fs.String("auth", "", "auth file of tokens and rights (required off loopback)")
	cycle := fs.Duration("cycle", time.Second, "time between scheduling cycles")
	leaseTimeout := fs.Duration("lease-timeout", server.DefaultLeaseTimeout, "lease timeout: leases not renewed for this long expire")
	tlsCert := fs.String("tls-cert", "", "TLS certificate file (with -tls-key)")
	tlsKey := fs.String("tls-key", "", "TLS key file (with -tls-cert)")
	advertise := fs.String("advertise", "", "with -db: the URL the other servers forward requests to while this one leads (default: the listening address; required when it is unspecified, as :8080)")
	leaderTTL := fs.Duration("leader-ttl", DefaultLeaderTTL, "with -db: the leader lease; renewed every third of it, taken over when it ends")
	maxStreams := fs.Int("max-streams", httpapi.DefaultMaxStreams, "event streams (events, watch) served at once; past it a request for one gets 503 with Retry-After")
	maxStreamsPerPrincipal := fs.Int("max-streams-per-principal", httpapi.DefaultMaxStreamsPerPrincipal, "event streams one principal may hold at once; past it 503 with Retry-After")
	streamWriteTimeout := fs.Duration("stream-write-timeout", httpapi.DefaultStreamWriteTimeout, "how long one event may take to reach a stream's client before the stream ends")
	forwardTimeout := fs.Duration("forward-timeout", DefaultForwardTimeout, "with -db: how long a follower waits for the leader to answer a forwarded request (its headers; a watch then streams) before answering 503")
	if err := fs.Parse(args); err != nil {
		return flagExit(err)
	}
	bad := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "flotilla serve: "+format+"\n", a...)
		return 2
	}
	switch {
	case fs.NArg() != 0:
		return bad("unexpected arguments %q", fs.Args())
	case *cycle <= 0:
		return bad("-cycle %s: want a positive duration", *cycle)
	case *leaseTimeout <= 0:
		return bad("-lease-timeout %s: want a positive duration", *leaseTimeout)
	case *leaderTTL <= 0:
		return bad("-leader-ttl %s: want a positive duration", *leaderTTL)
	case *forwardTimeout <= 0:
		return bad("-forward-timeout %s: want a positive duration", *forwardTimeout)
	case *advertise != "" && !strings.HasPrefix(*advertise, "http://") && !strings.HasPrefix(*advertise, "https://"):
		return bad("-advertise %s: want an http:// or https:// URL", *advertise)
	case *db != "" && *advertise == "" && unspecifiedHost(*listen):
		return bad("-listen %s with -db: give -advertise, the URL the other servers reach this one at", *listen)
	case (*tlsCert == "") != (*tlsKey == ""):
		return bad("-tls-cert and -tls-key go together")
	case *authPath == "" && !isLoopback(*listen):
		return bad("-listen %s is not a loopback address: give -auth to listen beyond this machine", *listen)
	case *db != "" && !strings.HasPrefix(*db, "postgres://") && !strings.HasPrefix(*db, "postgresql://"):
		return bad("-db %s: want a postgres:// URL (or nothing, for the in-memory backend)", *db)
	}
	cfg, requeue, err := loadServeConfig(*configPath)
	if err != nil {
		fmt.Fprintf(stderr, "flotilla serve: %s is not a valid configuration:\n", *configPath)
		printErrors(stderr, err)
		return 2
	}
	var auth *httpapi.Auth
	if *authPath != "" {
		data, err := os.ReadFile(*authPath)
		if err != nil {
			return bad("%v", err)
		}
		if auth, err = httpapi.ParseAuth(data); err != nil {
			fmt.Fprintf(stderr, "flotilla serve: %s is not a valid auth file:\n", *authPath)
			printErrors(stderr, err)
			return 2
		}
	}
	var tlsConfig *tls.Config
	if *tlsCert != "" {
		// Read before listening: a certificate that cannot be used is bad
		// input (exit 2), not a server that stops after saying it listens.
		cert, err := tls.LoadX509KeyPair(*tlsCert, *tlsKey)
		if err != nil {
			return bad("-tls-cert %s -tls-key %s: %v", *tlsCert, *tlsKey, err)
		}
		tlsConfig = &tls.Config{Certificates: []tls.Certificate{cert}}
	}
	log := slog.New(slog.NewJSONHandler(stderr, nil))
	var be backend.Backend = memory.New(cfg.Schema)
	// leases elect the leader among the processes sharing a database;
	// nil (the in-memory backend) means this process is the only one.
	var leases backend.Leases
	if *db != "" {
		pg, err := postgres.Open(ctx, *db, cfg.Schema)
		var fe *flotilla.FieldError
		if errors.As(err, &fe) {
			// The URL itself (a parameter, as call_timeout): bad input.
			fmt.Fprintln(stderr, "flotilla serve: -db is not a valid database URL:")
			printErrors(stderr, err)
			return 2
		}
		if err != nil {
			fmt.Fprintf(stderr, "flotilla serve: -db: %v\n", err)
			return 1
		}
		be, leases = pg, pg
	}
	defer be.Close()
	newServer := func(ctx context.Context, be backend.Backend, fence uint64) (*server.Server, error) {
		return server.New(ctx, server.Config{
			Scheduler: cfg, Backend: be, Clock: server.SystemClock{},
			LeaseTimeout: *leaseTimeout, RequeuePreempted: requeue, Fence: fence,
		})
	}
	// current is the service this process runs: always the one without
	// leases; with them, the leader's of the current term (nil while
	// following).
	var current atomic.Pointer[server.Server]
	if leases == nil {
		srv, err := newServer(ctx, be, 0)
		if err != nil {
			fmt.Fprintln(stderr, "flotilla serve:")
			printErrors(stderr, err)
			return 2
		}
		current.Store(srv)
	}
	var el *elector // set once listening, with leases
	leading := func() bool { return leases == nil || (el != nil && el.term() != nil && current.Load() != nil) }
	m := newMetrics(current.Load, leading)
	var draining atomic.Bool
	ready := func() error {
		if draining.Load() {
			return errors.New("draining: shutting down")
		}
		if leases != nil && !leading() {
			if leader, err := el.leaderAddr(); leader == "" || leader == el.advertise {
				if err != nil {
					return fmt.Errorf("no leader is known: %w", err)
				}
				return errors.New("no leader is known yet")
			}
		}
		return nil
	}
	apiOpts := httpapi.Options{Auth: auth, Logger: log, Observe: m.observe, Ready: ready,
		MaxStreams: *maxStreams, MaxStreamsPerPrincipal: *maxStreamsPerPrincipal, StreamWriteTimeout: *streamWriteTimeout}
	mux := http.NewServeMux()
	var rt *router
	if leases == nil {
		api := httpapi.New(current.Load(), apiOpts)
		mux.Handle("/", api)
		// Metrics name the queues and their load: with -auth, any known
		// token may read them (Prometheus sends one with its scrape's
		// authorization), none may not.
		mux.Handle("GET /metrics", api.Authenticated(m.handler()))
	} else {
		// Every API request goes to the leader's handler, here or
		// forwarded; health, readiness and metrics are this process's.
		rt = &router{auth: auth, timeout: *forwardTimeout}
		mux.Handle("/", rt)
		mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "ok\n") })
		mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
			if err := ready(); err != nil {
				unavailable(w, err.Error())
				return
			}
			_, _ = io.WriteString(w, "ok\n")
		})
		mux.Handle("GET /metrics", authenticated(auth, m.handler()))
	}

	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		fmt.Fprintf(stderr, "flotilla serve: %v\n", err)
		return 1
	}
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	// Requests, watches included, end when the server shuts down.
	reqCtx, endRequests := context.WithCancel(context.WithoutCancel(ctx))
	defer endRequests()
	hs := &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second,
		// No ReadTimeout: net/http keeps its deadline on the connection
		// while a watch streams, and would end every watch when it passes.
		// Bodies are bounded in size instead (413).
		IdleTimeout: 2 * time.Minute,
		BaseContext: func(net.Listener) context.Context { return reqCtx },
		ErrorLog:    slog.NewLogLogger(log.Handler(), slog.LevelWarn),
		TLSConfig:   tlsConfig,
	}
	scheme := "http"
	if *tlsCert != "" {
		scheme = "https"
	}
	// runCycle runs one cycle of srv, its context cctx.
	runCycle := func(cctx context.Context, srv *server.Server) {
		start := time.Now()
		rep, err := srv.Cycle(cctx)
		m.cycle(rep, time.Since(start), err)
		if err != nil {
			log.Error("cycle failed", "err", err)
		}
	}
	// With leases: the term being led (nil while following), and whether
	// its server runs.
	var cur *term
	var termEnded <-chan struct{}
	// lead makes this process the leader of term t: an empty write with
	// its token fences off the previous leader, then the state is rebuilt
	// from the database under that token; the first cycle runs at once.
	lead := func(t *term) {
		began := time.Now()
		tb := leaderBackend(be, t, time.Now)
		if _, err := tb.Commit(t.ctx, &backend.Write{Fence: t.token}); err != nil {
			log.Error("taking over failed: fencing", "token", t.token, "err", err)
			return
		}
		srv, err := newServer(t.ctx, tb, t.token)
		if err != nil {
			log.Error("taking over failed: loading", "token", t.token, "err", err)
			return
		}
		h := termHandler(t, httpapi.New(srv, apiOpts))
		current.Store(srv)
		rt.api.Store(&h)
		log.Info("leading", "token", t.token, "loaded", time.Since(began).String())
		runCycle(t.ctx, srv)
		log.Info("first cycle as leader", "token", t.token, "sinceTerm", time.Since(began).String())
	}
	stepDown := func() {
		if cur == nil {
			return
		}
		rt.api.Store(nil)
		if srv := current.Swap(nil); srv != nil {
			srv.Drain()
		}
		log.Warn("stepped down", "token", cur.token)
		cur, termEnded = nil, nil
	}

	electing := make(chan struct{})
	var newTerm chan struct{}
	stopElecting := func() {}
	if leases != nil {
		addr := *advertise
		if addr == "" {
			addr = scheme + "://" + ln.Addr().String()
		}
		el = newElector(leases, leaseHolder(ln.Addr()), addr, *leaderTTL, time.Now)
		el.onChange = func(leads bool, leader string, token uint64) {
			log.Info("leader", "leader", leader, "leading", leads, "token", token)
		}
		rt.e = el
		newTerm = el.newTerm
		ectx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		stopElecting = cancel
		// A first round before serving: a process that leads at once (the
		// only one, or one restarted at the address of one that died)
		// serves only once it has loaded, as without leases.
		el.round(ectx)
		go func() {
			defer close(electing)
			el.run(ectx)
		}()
		if t := el.term(); t != nil {
			<-newTerm
			cur, termEnded = t, t.ctx.Done()
			lead(t)
		}
	} else {
		close(electing)
	}
	served := make(chan error, 1)
	go func() {
		if tlsConfig != nil {
			served <- hs.ServeTLS(ln, "", "") // the certificate is in TLSConfig
		} else {
			served <- hs.Serve(ln)
		}
	}()
	fmt.Fprintf(stdout, "listening on %s://%s\n", scheme, ln.Addr())
	log.Info("serving", "addr", ln.Addr().String(), "auth", auth != nil, "leaseTimeout", leaseTimeout.String(), "cycle", cycle.String(),
		"leaderTTL", leaderTTL.String(), "forwardTimeout", forwardTimeout.String(), "elected", leases != nil)

	code := 0
	ticker := time.NewTicker(*cycle)
	defer ticker.Stop()
loop:
	for {
		select {
		case <-ctx.Done():
			break loop
		case err := <-served:
			log.Error("server stopped", "err", err)
			code = 1
			break loop
		case <-newTerm:
			if t := el.term(); t != nil && t != cur {
				stepDown()
				cur, termEnded = t, t.ctx.Done()
				lead(t)
			}
		case <-termEnded:
			stepDown()
		case <-ticker.C:
			switch {
			case leases == nil:
				runCycle(context.WithoutCancel(ctx), current.Load())
			case cur != nil && current.Load() == nil:
				lead(cur) // the takeover failed: again
			case cur != nil:
				runCycle(cur.ctx, current.Load())
			}
		}
	}
	// Drain: no new leases; the cycle in progress has finished (cycles run
	// in this goroutine); give up the lease, so that another process leads
	// at once; stop accepting, end watches, flush.
	draining.Store(true)
	if srv := current.Load(); srv != nil {
		srv.Drain()
	}
	stopElecting()
	<-electing
	log.Info("shutting down")
	shutCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	endRequests()
	if err := hs.Shutdown(shutCtx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		log.Warn("shutdown", "err", err)
	}
	return code
}

// leaseHolder names this process in the leader lease: its host's name
// and the address it listens on (not the advertised URL, which several
// processes may share: a load balancer's, or an unspecified address's on
// every host). No two live processes on one host listen at one address,
// so no two renew one lease as their own; a process restarted at the
// address of one that died takes its lease over at once.
func leaseHolder(listening net.Addr) string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "localhost"
	}
	return host + " " + listening.String()
}

// authenticated guards /metrics of a process that may not lead (and so
// has no API handler of its own): with auth, a request needs a known
// bearer token, whatever its rights.
func authenticated(auth *httpapi.Auth, next http.Handler) http.Handler {
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

func flagExit(err error) int {
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	return 2
}
