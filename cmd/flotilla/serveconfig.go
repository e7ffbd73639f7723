package main

import (
	"errors"
	"os"
	"time"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/backend/memory"
	"github.com/flotilla-sched/flotilla/internal/strictjson"
	"github.com/flotilla-sched/flotilla/priority"
	"github.com/flotilla-sched/flotilla/scenario"
	"github.com/flotilla-sched/flotilla/scheduler"
	"github.com/flotilla-sched/flotilla/server"
)

// serveConfigFile is serve's -config (docs/serve-config.md): a scenario
// file's config and priorityClasses blocks, the service's resources, and
// flux-accounting priorities.
type serveConfigFile struct {
	Config          scenario.Config          `json:"config"`
	PriorityClasses []scenario.PriorityClass `json:"priorityClasses,omitempty"`
	Resources       []string                 `json:"resources,omitempty"`
	Flux            *fluxFile                `json:"flux,omitempty"`
}

// fluxFile is the flux block: the bank tree and weights in the forms
// `flotilla priority -bank-tree` and `-weights` read, and the rest of
// server.FluxConfig.
type fluxFile struct {
	BankTree       *priority.BankTreeFile `json:"bankTree"`
	Weights        *priority.WeightsFile  `json:"weights,omitempty"`
	Banks          map[string]string      `json:"banks,omitempty"`
	DefaultUser    string                 `json:"defaultUser,omitempty"`
	UsageWeights   map[string]float64     `json:"usageWeights,omitempty"`
	RecomputeEvery int                    `json:"recomputeEvery,omitempty"`
}

// serveConfig is what -config gives the service.
type serveConfig struct {
	cfg     scheduler.Config
	requeue bool
	// flux is the file's flux block; nil without one.
	flux *fluxFile
}

// newFlux builds the flux configuration of a new service, with a bank
// tree of its own (the service owns it), its usage clock at now; nil
// without a flux block.
func (c serveConfig) newFlux(now time.Time) (*server.FluxConfig, error) {
	if c.flux == nil {
		return nil, nil
	}
	return c.flux.build(now)
}

// build checks the flux block, every problem named under flux, and
// returns the service's flux configuration.
func (f *fluxFile) build(now time.Time) (*server.FluxConfig, error) {
	under := func(prefix string, err error) error {
		return flotilla.RenameFields(err, func(field string) string { return prefix + "." + field })
	}
	if f.BankTree == nil {
		return nil, flotilla.Errorf("flux.bankTree", "", flotilla.ErrRequired, "the banks, associations and queue priorities, as flotilla priority -bank-tree reads them")
	}
	var errs []error
	tree, err := f.BankTree.Build(now)
	if err != nil {
		errs = append(errs, under("flux.bankTree", err))
	}
	if f.Weights != nil {
		w, err := f.Weights.Weights()
		switch {
		case err != nil:
			errs = append(errs, under("flux", err)) // named weights.<key>
		case tree != nil:
			if err := tree.SetWeights(w); err != nil {
				errs = append(errs, under("flux", err))
			}
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return &server.FluxConfig{Tree: tree, Banks: f.Banks, DefaultUser: f.DefaultUser,
		UsageWeights: f.UsageWeights, RecomputeEvery: f.RecomputeEvery}, nil
}

// loadServeConfig reads -config (an empty path is the empty
// configuration), validated as a scenario's blocks would be.
func loadServeConfig(path string) (serveConfig, error) {
	data := []byte("{}")
	if path != "" {
		var err error
		if data, err = os.ReadFile(path); err != nil {
			return serveConfig{}, err
		}
	}
	return parseServeConfig(data)
}

// parseServeConfig is loadServeConfig on a file's contents: every
// problem of the file at once, each named by its path.
func parseServeConfig(data []byte) (serveConfig, error) {
	var f serveConfigFile
	decodeErr := strictjson.Decode(data, &f)
	if strictjson.Fatal(decodeErr) {
		return serveConfig{}, decodeErr
	}
	c := scenario.ConfigFile{Config: f.Config, PriorityClasses: f.PriorityClasses, Resources: f.Resources}
	cfg, settings, err := c.BuildConfig(defaultResources())
	errs := []error{err}
	if err == nil && f.Flux != nil {
		fc, err := f.Flux.build(time.Unix(0, 0))
		if err == nil {
			// The service's own check of the block, against the schema
			// (usageWeights naming a resource the service lacks, say).
			err = server.Config{Scheduler: cfg, Backend: memory.New(cfg.Schema), Clock: server.SystemClock{}, Flux: fc}.Validate()
		}
		errs = append(errs, err)
	}
	if err := strictjson.Merge(decodeErr, errors.Join(errs...)); err != nil {
		return serveConfig{}, err
	}
	return serveConfig{cfg: cfg, requeue: settings.RequeuePreempted, flux: f.Flux}, nil
}
