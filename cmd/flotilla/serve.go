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
	"syscall"
	"time"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/backend"
	"github.com/flotilla-sched/flotilla/backend/memory"
	"github.com/flotilla-sched/flotilla/backend/postgres"
	"github.com/flotilla-sched/flotilla/cmd/flotilla/internal/metrics"
	"github.com/flotilla-sched/flotilla/ha"
	"github.com/flotilla-sched/flotilla/httpapi"
	"github.com/flotilla-sched/flotilla/server"
	"github.com/flotilla-sched/flotilla/submit"
)

// defaultResources are the service's resources when -config names none.
func defaultResources() []string { return []string{"cpu", "memory", submit.DefaultGPUResource} }

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

// serveFlags are serve's flags.
type serveFlags struct {
	listen, db, configPath, authPath, tlsCert, tlsKey, advertise *string
	cycle, leaseTimeout, leaderTTL, forwardTimeout               *time.Duration
	maxStreams, maxStreamsPerPrincipal                           *int
	streamWriteTimeout                                           *time.Duration
}

// serveInputs are what serve reads before it listens.
type serveInputs struct {
	config    serveConfig
	auth      *httpapi.Auth
	tlsConfig *tls.Config
}

func serve(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	f, code := parseServeFlags(args, stderr)
	if f == nil {
		return code
	}
	in, code := readServeInputs(f, stderr)
	if in == nil {
		return code
	}
	log := slog.New(slog.NewJSONHandler(stderr, nil))
	be, leases, code := openBackend(ctx, *f.db, in.config.cfg.Schema, stderr)
	if be == nil {
		return code
	}
	defer be.Close()
	// node is set before any request is served (the metrics and the
	// readiness read it).
	var node *ha.Node
	m := metrics.New(func() *server.Server { return node.Current() }, func() bool { return node.Leading() })
	nc := ha.Config{
		Backend: be, Leases: leases, TTL: *f.leaderTTL, ForwardTimeout: *f.forwardTimeout, Cycle: *f.cycle,
		OnCycle: m.Cycle, Logger: log,
		API: httpapi.Options{Auth: in.auth, Logger: log, Observe: m.Observe, Ready: func() error { return node.Ready() },
			MaxStreams: *f.maxStreams, MaxStreamsPerPrincipal: *f.maxStreamsPerPrincipal, StreamWriteTimeout: *f.streamWriteTimeout},
		NewServer: func(ctx context.Context, be backend.Backend, fence uint64) (*server.Server, error) {
			// A new term's service owns a bank tree of its own.
			flux, err := in.config.newFlux(time.Now())
			if err != nil {
				return nil, err
			}
			return server.New(ctx, server.Config{
				Scheduler: in.config.cfg, Backend: be, Clock: server.SystemClock{},
				LeaseTimeout: *f.leaseTimeout, RequeuePreempted: in.config.requeue, Fence: fence, Flux: flux,
			})
		},
	}
	var err error
	if leases == nil {
		// The only process: it loads before it listens.
		if node, err = startNode(ctx, nc); err != nil {
			fmt.Fprintln(stderr, "flotilla serve:")
			printErrors(stderr, err)
			return 2
		}
	}
	ln, err := net.Listen("tcp", *f.listen)
	if err != nil {
		fmt.Fprintf(stderr, "flotilla serve: %v\n", err)
		return 1
	}
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if leases != nil {
		// Elected: the node runs a first election round before serving; a
		// process that leads at once serves only once it has loaded.
		nc.Holder, nc.Advertise = ha.Holder(ln.Addr()), *f.advertise
		if nc.Advertise == "" {
			nc.Advertise = f.scheme() + "://" + ln.Addr().String()
		}
		if node, err = startNode(ctx, nc); err != nil {
			fmt.Fprintf(stderr, "flotilla serve: %v\n", err)
			return 1
		}
	}
	return serveHTTP(ctx, node, serveMux(node, leases != nil, in.auth, m), ln, in.tlsConfig, log, stdout,
		"auth", in.auth != nil, "leaseTimeout", f.leaseTimeout.String(), "cycle", f.cycle.String(),
		"leaderTTL", f.leaderTTL.String(), "forwardTimeout", f.forwardTimeout.String(), "elected", leases != nil)
}

// scheme is the URL scheme serve answers on.
func (f *serveFlags) scheme() string {
	if *f.tlsCert != "" {
		return "https"
	}
	return "http"
}

// parseServeFlags parses and checks serve's flags; nil with the exit code
// when the command ends.
func parseServeFlags(args []string, stderr io.Writer) (*serveFlags, int) {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	f := &serveFlags{
		listen:                 fs.String("listen", "127.0.0.1:8080", "address to listen on"),
		db:                     fs.String("db", "", "database URL (empty: the in-memory backend)"),
		configPath:             fs.String("config", "", "the service's configuration file: resources, the scheduler's config and priorityClasses, flux priorities (docs/serve-config.md)"),
		authPath:               fs.String("auth", "", "auth file of tokens and rights, docs/auth-file.md (required off loopback)"),
		cycle:                  fs.Duration("cycle", time.Second, "time between scheduling cycles"),
		leaseTimeout:           fs.Duration("lease-timeout", server.DefaultLeaseTimeout, "lease timeout: leases not renewed for this long expire"),
		tlsCert:                fs.String("tls-cert", "", "TLS certificate file (with -tls-key)"),
		tlsKey:                 fs.String("tls-key", "", "TLS key file (with -tls-cert)"),
		advertise:              fs.String("advertise", "", "with -db: the URL the other servers forward requests to while this one leads (default: the listening address; required when it is unspecified, as :8080)"),
		leaderTTL:              fs.Duration("leader-ttl", ha.DefaultLeaderTTL, "with -db: the leader lease; renewed every third of it, taken over when it ends"),
		forwardTimeout:         fs.Duration("forward-timeout", ha.DefaultForwardTimeout, "with -db: how long a follower waits for the leader to answer a forwarded request (its headers; a watch then streams) before answering 503"),
		maxStreams:             fs.Int("max-streams", httpapi.DefaultMaxStreams, "event streams (events, watch) served at once; past it a request for one gets 503 with Retry-After"),
		maxStreamsPerPrincipal: fs.Int("max-streams-per-principal", httpapi.DefaultMaxStreamsPerPrincipal, "event streams one principal may hold at once; past it 503 with Retry-After"),
		streamWriteTimeout:     fs.Duration("stream-write-timeout", httpapi.DefaultStreamWriteTimeout, "how long one event may take to reach a stream's client before the stream ends"),
	}
	if err := fs.Parse(args); err != nil {
		suggestFlag(fs, err)
		return nil, flagExit(err)
	}
	bad := func(format string, a ...any) (*serveFlags, int) {
		fmt.Fprintf(stderr, "flotilla serve: "+format+"\n", a...)
		return nil, 2
	}
	switch {
	case fs.NArg() != 0:
		return bad("unexpected arguments %q", fs.Args())
	case *f.cycle <= 0:
		return bad("-cycle %s: want a positive duration", *f.cycle)
	case *f.leaseTimeout <= 0:
		return bad("-lease-timeout %s: want a positive duration", *f.leaseTimeout)
	case *f.leaderTTL <= 0:
		return bad("-leader-ttl %s: want a positive duration", *f.leaderTTL)
	case *f.forwardTimeout <= 0:
		return bad("-forward-timeout %s: want a positive duration", *f.forwardTimeout)
	case *f.maxStreams <= 0:
		return bad("-max-streams %d: want a positive number", *f.maxStreams)
	case *f.maxStreamsPerPrincipal <= 0:
		return bad("-max-streams-per-principal %d: want a positive number", *f.maxStreamsPerPrincipal)
	case *f.streamWriteTimeout <= 0:
		return bad("-stream-write-timeout %s: want a positive duration", *f.streamWriteTimeout)
	case *f.advertise != "" && !strings.HasPrefix(*f.advertise, "http://") && !strings.HasPrefix(*f.advertise, "https://"):
		return bad("-advertise %s: want an http:// or https:// URL", *f.advertise)
	case *f.db != "" && *f.advertise == "" && unspecifiedHost(*f.listen):
		return bad("-listen %s with -db: give -advertise, the URL the other servers reach this one at", *f.listen)
	case (*f.tlsCert == "") != (*f.tlsKey == ""):
		return bad("-tls-cert and -tls-key go together")
	case *f.authPath == "" && !isLoopback(*f.listen):
		return bad("-listen %s is not a loopback address: give -auth to listen beyond this machine", *f.listen)
	case *f.db != "" && !strings.HasPrefix(*f.db, "postgres://") && !strings.HasPrefix(*f.db, "postgresql://"):
		return bad("-db %s: want a postgres:// URL (or nothing, for the in-memory backend)", *f.db)
	}
	return f, 0
}

// readServeInputs reads -config, -auth and the TLS files: bad input (exit
// 2) before anything listens.
func readServeInputs(f *serveFlags, stderr io.Writer) (*serveInputs, int) {
	var in serveInputs
	var err error
	if in.config, err = loadServeConfig(*f.configPath); err != nil {
		fmt.Fprintf(stderr, "flotilla serve: %s is not a valid configuration (docs/serve-config.md):\n", *f.configPath)
		printErrors(stderr, err)
		return nil, 2
	}
	if *f.authPath != "" {
		data, err := os.ReadFile(*f.authPath)
		if err != nil {
			fmt.Fprintf(stderr, "flotilla serve: %v\n", err)
			return nil, 2
		}
		if in.auth, err = httpapi.ParseAuth(data); err != nil {
			fmt.Fprintf(stderr, "flotilla serve: %s is not a valid auth file (docs/auth-file.md):\n", *f.authPath)
			printErrors(stderr, err)
			return nil, 2
		}
	}
	if *f.tlsCert != "" {
		// Read before listening: a certificate that cannot be used is bad
		// input (exit 2), not a server that stops after saying it listens.
		cert, err := tls.LoadX509KeyPair(*f.tlsCert, *f.tlsKey)
		if err != nil {
			fmt.Fprintf(stderr, "flotilla serve: -tls-cert %s -tls-key %s: %v\n", *f.tlsCert, *f.tlsKey, err)
			return nil, 2
		}
		in.tlsConfig = &tls.Config{Certificates: []tls.Certificate{cert}}
	}
	return &in, 0
}

// openBackend opens the in-memory backend, or with a URL the database,
// whose leases elect the leader among the processes sharing it (nil: this
// process is the only one). A nil backend comes with the exit code.
func openBackend(ctx context.Context, db string, schema *flotilla.ResourceSchema, stderr io.Writer) (backend.Backend, backend.Leases, int) {
	if db == "" {
		return memory.New(schema), nil, 0
	}
	pg, err := postgres.Open(ctx, db, schema)
	var fe *flotilla.FieldError
	if errors.As(err, &fe) {
		// The URL itself (a parameter, as call_timeout): bad input.
		fmt.Fprintln(stderr, "flotilla serve: -db is not a valid database URL:")
		printErrors(stderr, err)
		return nil, nil, 2
	}
	if err != nil {
		fmt.Fprintf(stderr, "flotilla serve: -db: %v\n", err)
		return nil, nil, 1
	}
	return pg, pg, 0
}

// startNode makes the node of cfg and starts it.
func startNode(ctx context.Context, cfg ha.Config) (*ha.Node, error) {
	n, err := ha.New(cfg)
	if err != nil {
		return nil, err
	}
	return n, n.Start(ctx)
}

// serveMux routes the API to the node and, beside it, the metrics; with
// leases also health and readiness, which are this process's (every API
// request goes to the leader's handler, here or forwarded).
func serveMux(node *ha.Node, elected bool, auth *httpapi.Auth, m *metrics.Metrics) *http.ServeMux {
	mux := http.NewServeMux()
	mux.Handle("/", node.Handler())
	if !elected {
		// Metrics name the queues and their load: with -auth, any known
		// token may read them (Prometheus sends one with its scrape's
		// authorization), none may not.
		mux.Handle("GET /metrics", node.API().Authenticated(m.Handler()))
		return mux
	}
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "ok\n") })
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		if err := node.Ready(); err != nil {
			ha.Unavailable(w, err.Error())
			return
		}
		_, _ = io.WriteString(w, "ok\n")
	})
	mux.Handle("GET /metrics", ha.RequireKnownToken(auth, m.Handler()))
	return mux
}

// serveHTTP serves mux on ln and runs the node until ctx ends (SIGTERM)
// or the HTTP server fails (exit 1); then the node drains (no new leases,
// the lease given up), requests end (watches included), and the server
// shuts down. logAttrs go with the "serving" log line.
func serveHTTP(ctx context.Context, node *ha.Node, mux http.Handler, ln net.Listener, tlsConfig *tls.Config,
	log *slog.Logger, stdout io.Writer, logAttrs ...any) int {
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
	runCtx, stopRun := context.WithCancel(ctx)
	defer stopRun()
	served := make(chan error, 1)
	go func() {
		if tlsConfig != nil {
			served <- hs.ServeTLS(ln, "", "") // the certificate is in TLSConfig
		} else {
			served <- hs.Serve(ln)
		}
		stopRun()
	}()
	scheme := "http"
	if tlsConfig != nil {
		scheme = "https"
	}
	fmt.Fprintf(stdout, "listening on %s://%s\n", scheme, ln.Addr())
	log.Info("serving", append([]any{"addr", ln.Addr().String()}, logAttrs...)...)
	node.Run(runCtx)
	code := 0
	select {
	case err := <-served:
		log.Error("server stopped", "err", err)
		code = 1
	default:
	}
	log.Info("shutting down")
	shutCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	endRequests()
	if err := hs.Shutdown(shutCtx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		log.Warn("shutdown", "err", err)
	}
	return code
}

func flagExit(err error) int {
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	return 2
}
