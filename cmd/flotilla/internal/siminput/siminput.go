package siminput

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/cmd/flotilla/internal/armada"
	"github.com/flotilla-sched/flotilla/scenario"
	"github.com/flotilla-sched/flotilla/sim"
)

// Files are simulate's inputs: the cluster and workload files (sim's JSON,
// or Armada's YAML by name: armada.IsFile), the optional config file
// (scenario.ConfigFile, without resources) and the optional seed.
type Files struct {
	Cluster, Workload, Config, Seed string
}

// BadFile is an input that is not valid: Path (a file, or -seed) is not a
// valid What (such as "cluster file (Armada's ClusterSpec)"), for every
// problem of Err.
type BadFile struct {
	Path, What string
	Err        error
}

func (e *BadFile) Error() string {
	return fmt.Sprintf("%s is not a valid %s: %v", e.Path, e.What, e.Err)
}

func (e *BadFile) Unwrap() error { return e.Err }

// Read reads and checks the files into a sim.Config, with the renaming
// that puts the field paths of sim.Run's problems
// (workload.jobTemplates[3].requests) in the terms of the files as
// written: the identity for sim's JSON files, Armada's paths for its
// YAML files. A cluster or workload file that cannot be read is the
// os error; any other problem is a *BadFile, found in the order cluster,
// workload, seed, config. An Armada workload requeues preempted jobs, as
// Armada's simulator does, unless the config file says otherwise.
func Read(f Files) (sim.Config, func(string) string, error) {
	var cfg sim.Config
	rename := armada.PathRenamer{}
	bad := func(path, what string, err error) (sim.Config, func(string) string, error) {
		return sim.Config{}, nil, &BadFile{Path: path, What: what, Err: err}
	}
	data, err := os.ReadFile(f.Cluster)
	if err != nil {
		return cfg, nil, err
	}
	var pendingMin, pendingTail time.Duration
	if armada.IsFile(f.Cluster) {
		ac, err := armada.ParseClusters(data)
		if err != nil {
			return bad(f.Cluster, "cluster file (Armada's ClusterSpec)", err)
		}
		cfg.Clusters, pendingMin, pendingTail = ac.Clusters, ac.PendingMinimum, ac.PendingTail
		rename = append(rename, ac.Paths.Prefixed("clusters.")...)
	} else if cfg.Clusters, err = sim.ParseClusters(data); err != nil {
		return bad(f.Cluster, "cluster file", err)
	}
	if data, err = os.ReadFile(f.Workload); err != nil {
		return cfg, nil, err
	}
	if armada.IsFile(f.Workload) {
		aw, err := armada.ParseWorkload(data)
		if err != nil {
			return bad(f.Workload, "workload file (Armada's WorkloadSpec)", err)
		}
		cfg.Workload = aw.Workload
		rename = append(rename, aw.Paths.Prefixed("workload.")...)
		cfg.RequeuePreempted = true // unless the config says otherwise (below)
	} else if cfg.Workload, err = sim.ParseWorkload(data); err != nil {
		return bad(f.Workload, "workload file", err)
	}
	if err := armada.ApplyPendingDelay(cfg.Workload, pendingMin, pendingTail); err != nil {
		return bad(f.Cluster, "cluster file (Armada's ClusterSpec)", err)
	}
	if f.Seed != "" {
		n, err := strconv.ParseUint(f.Seed, 10, 64)
		if err != nil {
			return bad("-seed", "seed", flotilla.Errorf("seed", f.Seed, flotilla.ErrMalformed, "want a non-negative integer"))
		}
		cfg.Workload.Seed = n
	}
	if f.Config != "" {
		if err := readConfig(f.Config, &cfg); err != nil {
			return bad(f.Config, "config file", err)
		}
	}
	return cfg, rename.Rename, nil
}

// readConfig reads the config file at path into cfg: the scheduler's
// configuration over the clusters' resources and, when the file gives
// it, the requeue setting.
func readConfig(path string, cfg *sim.Config) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	sc, err := scenario.ParseConfigFile(data)
	if err != nil {
		return err
	}
	if len(sc.Resources) > 0 {
		return flotilla.Errorf("resources", strings.Join(sc.Resources, ","),
			flotilla.ErrInconsistent, "simulate takes its resources from the cluster file")
	}
	// The simulation's schema is every resource a node names; the
	// configuration is validated against those (sim replaces the Schema
	// with its own, which names the same resources).
	schedCfg, settings, err := sc.BuildConfig(clusterResources(cfg.Clusters))
	if err != nil {
		return err
	}
	cfg.Scheduler = &schedCfg
	if sc.SetsRequeuePreempted() {
		cfg.RequeuePreempted = settings.RequeuePreempted
	}
	return nil
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
