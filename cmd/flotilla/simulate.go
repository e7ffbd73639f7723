package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/cmd/flotilla/internal/siminput"
	"github.com/flotilla-sched/flotilla/cmd/flotilla/internal/simreport"
	"github.com/flotilla-sched/flotilla/sim"
)

// simulate runs package sim over a cluster file and a workload file and
// writes its tables (sim.Output.WriteDir), its plots and index.html into
// -o DIR; a run lasting over two seconds shows a progress line on
// stderr when stderr is a terminal.
func simulate(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("simulate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	clusterPath := fs.String("cluster", "", "cluster file (JSON, the format of sim/doc.go; .yaml/.yml: Armada's ClusterSpec)")
	workloadPath := fs.String("workload", "", "workload file (JSON, the format of sim/doc.go; .yaml/.yml: Armada's WorkloadSpec)")
	dir := fs.String("o", "", "output directory (created if absent)")
	configPath := fs.String("config", "", "the config and priorityClasses blocks of a scenario file (docs/scenarios.md), as serve's -config")
	seed := fs.String("seed", "", "random seed; overrides the workload's seed")
	if err := fs.Parse(args); err != nil {
		suggestFlag(fs, err)
		return flagExit(err)
	}
	if fs.NArg() != 0 || *clusterPath == "" || *workloadPath == "" || *dir == "" {
		fmt.Fprint(stderr, "usage: flotilla simulate -cluster FILE -workload FILE -o DIR [-config FILE] [-seed N]\n")
		return 2
	}
	cfg, rename, err := siminput.Read(siminput.Files{Cluster: *clusterPath, Workload: *workloadPath, Config: *configPath, Seed: *seed})
	var bad *siminput.BadFile
	switch {
	case errors.As(err, &bad):
		fmt.Fprintf(stderr, "flotilla: %s is not a valid %s:\n", bad.Path, bad.What)
		printErrors(stderr, bad.Err)
		return 2
	case err != nil:
		fmt.Fprintf(stderr, "flotilla: %v\n", err)
		return 2
	}
	progress := simreport.NewProgressLine(stderr, time.Now)
	if simreport.IsTerminal(stderr) {
		// On a terminal only: in a redirected log, carriage returns
		// would join every update into one line.
		cfg.Progress = progress.Update
	}
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
