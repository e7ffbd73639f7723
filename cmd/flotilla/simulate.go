package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/cmd/flotilla/internal/armada"
	"github.com/flotilla-sched/flotilla/cmd/flotilla/internal/simreport"
	"github.com/flotilla-sched/flotilla/scenario"
	"github.com/flotilla-sched/flotilla/sim"
)

// simulate runs package sim over a cluster file and a workload file and
// writes its tables (sim.Output.WriteDir), its plots and index.html into
// -o DIR; a run lasting over two seconds shows a progress line on
// stderr.
func simulate(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("simulate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	clusterPath := fs.String("cluster", "", "cluster file (JSON, package sim's format; .yaml/.yml: Armada's ClusterSpec)")
	workloadPath := fs.String("workload", "", "workload file (JSON, package sim's format; .yaml/.yml: Armada's WorkloadSpec)")
	dir := fs.String("o", "", "output directory (created if absent)")
	configPath := fs.String("config", "", "SCENARIOS.md's config and priorityClasses, as serve's -config")
	seed := fs.String("seed", "", "random seed; overrides the workload's seed")
	if err := fs.Parse(args); err != nil {
		return flagExit(err)
	}
	if fs.NArg() != 0 || *clusterPath == "" || *workloadPath == "" || *dir == "" {
		fmt.Fprint(stderr, "usage: flotilla simulate -cluster FILE -workload FILE -o DIR [-config FILE] [-seed N]\n")
		return 2
	}
	cfg, rename, code := simInputs(*clusterPath, *workloadPath, *configPath, *seed, stderr)
	if code != 0 {
		return code
	}
	progress := simreport.NewProgressLine(stderr, time.Now)
	cfg.Progress = progress.Update
	out, err := sim.Run(ctx, cfg)
	progress.Finish()
	if err != nil {
		var fe *flotilla.FieldError
		if errors.As(err, &fe) {
			fmt.Fprintln(stderr, "flotilla: bad simulation input:")
			printErrors(stderr, flotilla.RenameFields(err, rename))
			return 2
		}
		fmt.Fprintf(stderr, "flotilla: simulate: %v\n", err)
		return 1
	}
	if err := os.MkdirAll(*dir, 0o755); err != nil {
		fmt.Fprintf(stderr, "flotilla: %v\n", err)
		return 1
	}
	if err := out.WriteDir(*dir); err != nil {
		fmt.Fprintf(stderr, "flotilla: %v\n", err)
		return 1
	}
	if err := simreport.Write(*dir, cfg, out); err != nil {
		fmt.Fprintf(stderr, "flotilla: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "simulated %gs of virtual time, %d jobs; wrote %s\n", out.End, len(out.Jobs), *dir)
	return 0
}

// simConfig reads and checks simulate's input files into a sim.Config,
// printing every problem; the code is 0 when all is well, else 2.
func simConfig(clusterPath, workloadPath, configPath, seed string, stderr io.Writer) (sim.Config, int) {
	cfg, _, code := simInputs(clusterPath, workloadPath, configPath, seed, stderr)
	return cfg, code
}

// simInputs is simConfig, with the renaming that puts the field paths of
// sim.Run's problems (workload.jobTemplates[3].requests) in the terms of
// the files as written: the identity for sim's JSON files, Armada's paths
// for its YAML files (armada.IsFile).
func simInputs(clusterPath, workloadPath, configPath, seed string, stderr io.Writer) (sim.Config, func(string) string, int) {
	var cfg sim.Config
	rename := armada.PathRenamer{}
	bad := func(path, what string, err error) (sim.Config, func(string) string, int) {
		fmt.Fprintf(stderr, "flotilla: %s is not a valid %s:\n", path, what)
		printErrors(stderr, err)
		return sim.Config{}, nil, 2
	}
	data, err := os.ReadFile(clusterPath)
	if err != nil {
		fmt.Fprintf(stderr, "flotilla: %v\n", err)
		return cfg, nil, 2
	}
	var pendingMin, pendingTail time.Duration
	if armada.IsFile(clusterPath) {
		ac, err := armada.ParseClusters(data)
		if err != nil {
			return bad(clusterPath, "cluster file (Armada's ClusterSpec)", err)
		}
		cfg.Clusters, pendingMin, pendingTail = ac.Clusters, ac.PendingMinimum, ac.PendingTail
		rename = append(rename, ac.Paths.Prefixed("clusters.")...)
	} else if cfg.Clusters, err = sim.ParseClusters(data); err != nil {
		return bad(clusterPath, "cluster file", err)
	}
	if data, err = os.ReadFile(workloadPath); err != nil {
		fmt.Fprintf(stderr, "flotilla: %v\n", err)
		return cfg, nil, 2
	}
	if armada.IsFile(workloadPath) {
		aw, err := armada.ParseWorkload(data)
		if err != nil {
			return bad(workloadPath, "workload file (Armada's WorkloadSpec)", err)
		}
		cfg.Workload = aw.Workload
		rename = append(rename, aw.Paths.Prefixed("workload.")...)
		// Armada's simulator submits a preempted job again: so does an
		// Armada workload here, unless -config says otherwise (below).
		cfg.RequeuePreempted = true
	} else if cfg.Workload, err = sim.ParseWorkload(data); err != nil {
		return bad(workloadPath, "workload file", err)
	}
	if err := armada.ApplyPendingDelay(cfg.Workload, pendingMin, pendingTail); err != nil {
		return bad(clusterPath, "cluster file (Armada's ClusterSpec)", err)
	}
	if seed != "" {
		n, err := strconv.ParseUint(seed, 10, 64)
		if err != nil {
			return bad("-seed", "seed", flotilla.Errorf("seed", seed, flotilla.ErrMalformed, "want a non-negative integer"))
		}
		cfg.Workload.Seed = n
	}
	if configPath != "" {
		data, err := os.ReadFile(configPath)
		if err != nil {
			return bad(configPath, "config file", err)
		}
		sc, err := scenario.ParseConfigFile(data)
		if err != nil {
			return bad(configPath, "config file", err)
		}
		if len(sc.Resources) > 0 {
			return bad(configPath, "config file", flotilla.Errorf("resources", strings.Join(sc.Resources, ","),
				flotilla.ErrInconsistent, "simulate takes its resources from the cluster file"))
		}
		// The simulation's schema is every resource a node names; the
		// configuration is validated against those (sim replaces the
		// Schema with its own, which names the same resources).
		schedCfg, settings, err := sc.BuildConfig(clusterResources(cfg.Clusters))
		if err != nil {
			return bad(configPath, "config file", err)
		}
		cfg.Scheduler = &schedCfg
		if sc.SetsRequeuePreempted() {
			cfg.RequeuePreempted = settings.RequeuePreempted
		}
	}
	return cfg, rename.Rename, 0
}

// clusterResources is every resource a node of c names, sorted (the
// simulation's schema).
func clusterResources(c *sim.Clusters) []string {
	var names []string
	for _, cl := range c.Clusters {
		for _, n := range cl.Nodes {
			for r := range n.Resources {
				if !slices.Contains(names, r) {
					names = append(names, r)
				}
			}
		}
	}
	slices.Sort(names)
	return names
}
