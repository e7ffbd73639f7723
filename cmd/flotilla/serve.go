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
)

// defaultResources are the service's resources when -config names none.
func defaultResources() []string { return []string{"cpu", "memory", server.DefaultGPUResource} }

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
	if len(sc.Resources) == 0 {
		sc.Resources = defaultResources()
	}
	return sc.build()
}

// readServeConfig decodes a -config file strictly; an empty path is the
// empty configuration.
func readServeConfig(path string) (serveConfig, error) {
	var sc serveConfig
	if path == "" {
		return sc, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return sc, err
	}
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
	if *db != "" {
		pg, err := postgres.Open(ctx, *db, cfg.Schema)
		if err != nil {
			fmt.Fprintf(stderr, "flotilla serve: -db: %v\n", err)
			return 1
		}
		be = pg
	}
	defer be.Close()
	srv, err := server.New(ctx, server.Config{
		Scheduler: cfg, Backend: be, Clock: server.SystemClock{},
		LeaseTimeout: *leaseTimeout, RequeuePreempted: requeue,
	})
	if err != nil {
		fmt.Fprintln(stderr, "flotilla serve:")
		printErrors(stderr, err)
		return 2
	}
	m := newMetrics(srv)
	var draining atomic.Bool
	ready := func() error {
		if draining.Load() {
			return errors.New("draining: shutting down")
		}
		return nil
	}
	api := httpapi.New(srv, httpapi.Options{Auth: auth, Logger: log, Observe: m.observe, Ready: ready})
	mux := http.NewServeMux()
	mux.Handle("/", api)
	// Metrics name the queues and their load: with -auth, any known token
	// may read them (Prometheus sends one with its scrape's authorization),
	// none may not.
	mux.Handle("GET /metrics", api.Authenticated(m.handler()))

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
		BaseContext:       func(net.Listener) context.Context { return reqCtx },
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
		TLSConfig:         tlsConfig,
	}
	scheme := "http"
	if *tlsCert != "" {
		scheme = "https"
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
	log.Info("serving", "addr", ln.Addr().String(), "auth", auth != nil, "leaseTimeout", leaseTimeout.String(), "cycle", cycle.String())

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
		case <-ticker.C:
			start := time.Now()
			rep, err := srv.Cycle(context.WithoutCancel(ctx))
			m.cycle(rep, time.Since(start), err)
			if err != nil {
				log.Error("cycle failed", "err", err)
			}
		}
	}
	// Drain: no new leases; the cycle in progress has finished (cycles run
	// in this goroutine); stop accepting, end watches, flush.
	draining.Store(true)
	srv.Drain()
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
