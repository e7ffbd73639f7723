package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/flotilla-sched/flotilla/api"
	"github.com/flotilla-sched/flotilla/client"
	"github.com/flotilla-sched/flotilla/cmd/flotilla/internal/nodesfile"
	"github.com/flotilla-sched/flotilla/executor"
	"github.com/flotilla-sched/flotilla/server"
	"github.com/flotilla-sched/flotilla/submit"
)

func executorCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c := cmdIO{"executor", stdout, stderr}
	fs := flag.NewFlagSet("executor", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cf := addClientFlags(fs)
	cluster := fs.String("cluster", "", "the cluster's name (required)")
	nodesPath := fs.String("nodes", "", "the cluster's nodes: a nodes file, docs/nodes-file.md (required)")
	pool := fs.String("pool", "", "the cluster's pool (default \"default\"): each pool has its own fair shares and cycle")
	renew := fs.Duration("renew", executor.DefaultRenew, "how often to report (and so renew leases)")
	leaseTimeout := fs.Duration("lease-timeout", api.DefaultLeaseTimeout, "the service's lease timeout (serve -lease-timeout): a slow report may run until shortly before the leases it renews would expire")
	pos, err := parse(fs, args)
	if err != nil {
		return flagExit(err)
	}
	switch {
	case len(pos) != 0:
		return c.usage("unexpected arguments %q", pos)
	case *cluster == "" || *nodesPath == "":
		return c.usage("-cluster and -nodes are required")
	case *renew <= 0:
		return c.usage("-renew %s: want a positive duration", *renew)
	case *leaseTimeout <= 0:
		return c.usage("-lease-timeout %s: want a positive duration", *leaseTimeout)
	case *pool != "" && submit.CheckPool("pool", *pool) != nil:
		return c.usage("-pool: %v", submit.CheckPool("pool", *pool))
	}
	data, err := os.ReadFile(*nodesPath)
	if err != nil {
		return c.usage("%v", err)
	}
	nodes, err := nodesfile.Parse(data)
	if err != nil {
		fmt.Fprintf(stderr, "flotilla executor: %s is not a valid nodes file (docs/nodes-file.md):\n", *nodesPath)
		printErrors(stderr, err)
		return 2
	}
	cl, err := cf.client()
	if err != nil {
		return c.usage("%v", err)
	}
	log := slog.New(slog.NewJSONHandler(stderr, nil)).With("cluster", *cluster)
	onCordon := func(cordoned bool) {
		if cordoned {
			log.Warn("cluster cordoned: no new leases until it is uncordoned; running jobs go on")
		} else {
			log.Info("cluster uncordoned: leases resume")
		}
	}
	ex, err := executor.New(executor.Config{Cluster: *cluster, Nodes: nodes, Pool: *pool, Service: cl, Clock: server.SystemClock{}, Renew: *renew,
		LeaseTimeout: *leaseTimeout, OnCordon: onCordon})
	if err != nil {
		return c.usage("%v", err)
	}
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	// The first report registers the nodes: a file the service refuses
	// (a resource it does not schedule, say) would be refused every period
	// for ever, so it ends the command, naming the field. A service not
	// reachable yet is retried by the loop.
	if _, err := ex.Step(ctx); err != nil {
		if errors.Is(err, client.ErrBadRequest) {
			fmt.Fprintf(stderr, "flotilla executor: the service refused the nodes of %s:\n", *nodesPath)
			return c.fail(err)
		}
		log.Warn("report failed", "err", err)
	}
	fmt.Fprintf(stdout, "executor %s: %d nodes, reporting to %s every %s\n", *cluster, len(nodes), *cf.server, *renew)
	_ = ex.Run(ctx, func(err error) { log.Warn("report failed", "err", err) })
	log.Info("stopped", "held", len(ex.Held()), "succeeded", ex.Finished(api.PhaseSucceeded),
		"failed", ex.Finished(api.PhaseFailed), "stopped", ex.Finished(api.PhaseStopped))
	return 0
}
