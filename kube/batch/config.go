package batch

import (
	"encoding/json"
	"errors"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/kube/kubeconv"
	"github.com/flotilla-sched/flotilla/scenario"
)

// ParseConfig reads a queue configuration file: a JSON document with the
// `config`, `groups`, `queues` and `priorityClasses` blocks of a scenario
// file (docs/scenarios.md), parsed and validated by package scenario, so
// every problem is reported at once with its path in the file. A `nodes`
// block, if present, is validated and ignored (the cluster's Node objects
// are the nodes); `rounds` must be absent.
//
// From `config` it takes every scheduler setting (fairness, weights,
// indexed resources, protected fraction, eviction probability, lookback,
// round and rate limits, strategy), the topologies gangs may ask to be
// placed in (config.topologies: node label keys, outermost first; a pod
// names a level with kubeconv.AnnotationTopologyRequired or -Preferred,
// or Kueue's aliases) and the seed; defaultPriorityClass,
// requeuePreempted and roundDuration are ignored (the PriorityClass
// objects name the default class; a preempted pod's owner recreates it).
// From `queues` and `groups` it takes the queue tree (parents, priority
// factors, guarantees, limits, lending limits; config.usageHalfLife and
// usageWeight turn on usage memory), its quotas laid out by the cluster's
// resources. From `priorityClasses` it takes only
// each class's maximumResourceFractionPerQueue, applied to the
// PriorityClass object of the same name: the priority and preemptibility
// always come from the object (kubeconv.PriorityClass).
func ParseConfig(data []byte) (Config, error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return Config{}, errors.Join(flotilla.Errorf(scenario.RootField, "", flotilla.ErrMalformed, "%v", err))
	}
	if raw == nil {
		return Config{}, errors.Join(flotilla.Errorf(scenario.RootField, "null", flotilla.ErrMalformed, "want a JSON object"))
	}
	if _, ok := raw["rounds"]; ok {
		return Config{}, errors.Join(flotilla.Errorf("rounds", "", flotilla.ErrOutOfRange, "a queue configuration has no rounds"))
	}
	if _, ok := raw["nodes"]; !ok {
		// Scenario files need a node; the schema comes from it.
		raw["nodes"] = json.RawMessage(`[{"name":"placeholder","resources":{"cpu":"1","memory":"1","nvidia.com/gpu":"1"}}]`)
		var err error
		if data, err = json.Marshal(raw); err != nil {
			return Config{}, errors.Join(flotilla.Errorf(scenario.RootField, "", flotilla.ErrMalformed, "%v", err))
		}
	}
	f, err := scenario.Parse(data)
	if err != nil {
		return Config{}, err
	}
	b, err := f.Build()
	if err != nil {
		return Config{}, err
	}
	sc := b.SchedulerConfig()
	schema := kubeconv.Schema()
	sc.Schema = schema
	// Quotas were laid out by the file's resources; the cluster's are
	// kubeconv.Schema()'s.
	for _, q := range b.Queues {
		q.Guaranteed, q.Limit, q.LendingLimit = relay(q.Guaranteed, b.Schema, schema), relay(q.Limit, b.Schema, schema), relay(q.LendingLimit, b.Schema, schema)
	}
	for _, g := range b.Groups {
		g.Guaranteed, g.Limit, g.LendingLimit = relay(g.Guaranteed, b.Schema, schema), relay(g.Limit, b.Schema, schema), relay(g.LendingLimit, b.Schema, schema)
	}
	cfg := Config{Schema: schema, Scheduler: &sc, Queues: b.Queues, Groups: b.Groups, Seed: b.Settings.Seed}
	for _, pc := range b.PriorityClasses {
		if pc.MaximumResourceFractionPerQueue != nil {
			if cfg.ClassLimits == nil {
				cfg.ClassLimits = map[string]map[string]float64{}
			}
			cfg.ClassLimits[pc.Name] = pc.MaximumResourceFractionPerQueue
		}
	}
	return cfg, nil
}
