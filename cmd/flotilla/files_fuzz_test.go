package main

import (
	"errors"
	"testing"
	"time"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/cmd/flotilla/internal/nodesfile"
)

// problemsAreFieldErrors fails t unless every problem of err is a
// *flotilla.FieldError.
func problemsAreFieldErrors(t *testing.T, err error) {
	t.Helper()
	for _, e := range flotilla.Problems(err) {
		var fe *flotilla.FieldError
		if !errors.As(e, &fe) {
			t.Fatalf("problem %v is not a *flotilla.FieldError", e)
		}
	}
}

// FuzzLoadNodes: an executor's nodes file (an array, or an object with a
// nodes array) is refused with *flotilla.FieldError problems only, or
// gives nodes with distinct non-empty names and quantities that parse;
// never a panic.
func FuzzLoadNodes(f *testing.F) {
	f.Add([]byte(`[{"name": "node", "count": 2, "resources": {"cpu": "16", "memory": "64Gi"}}]`))
	f.Add([]byte(`{"nodes": [{"name": "g", "resources": {"cpu": "8", "nvidia.com/gpu": "4"}, "labels": {"zone": "a"}, "taints": [{"key": "gpu", "value": "true", "effect": "NoSchedule"}]}]}`))
	f.Add([]byte(`[{"name": "a", "resources": {"cpu": "1"}}, {"name": "a", "resources": {"cpu": "-1"}}]`))
	f.Add([]byte(`[{"name": "n", "count": -1, "resources": {"cpu": "1x"}, "unschedulable": "no"}]`))
	f.Add([]byte(`  [] `))
	f.Fuzz(func(t *testing.T, data []byte) {
		nodes, err := nodesfile.Parse(data)
		if err != nil {
			problemsAreFieldErrors(t, err)
			return
		}
		seen := map[string]bool{}
		for _, n := range nodes {
			if n.Name == "" || seen[n.Name] {
				t.Fatalf("node name %q is empty or repeated", n.Name)
			}
			seen[n.Name] = true
			for r, q := range n.Resources {
				if _, err := flotilla.ParseQuantity(q); err != nil {
					t.Fatalf("node %s: %s = %q does not parse: %v", n.Name, r, q, err)
				}
			}
		}
	})
}

// FuzzParseServeConfig: a -config file is refused with *flotilla.FieldError
// problems only, or gives a scheduler configuration that validates; never
// a panic.
func FuzzParseServeConfig(f *testing.F) {
	f.Add([]byte(`{"config": {"fairnessModel": "drf", "maximumFractionToSchedule": 0.5}}`))
	f.Add([]byte(`{"config": {}, "priorityClasses": [{"name": "high", "priority": 100, "preemptible": false}], "resources": ["cpu", "memory"]}`))
	f.Add([]byte(`{"config": {"protectedFractionOfFairShare": 2}, "priorityClasses": [{"name": "", "priority": -1}], "resources": ["cpu", "cpu"]}`))
	f.Add([]byte(`{"resources": []}`))
	f.Add([]byte(`{"confgi": 1}`))
	f.Add([]byte(`{"flux": {"bankTree": {"banks": [{"name": "A"}], "associations": [{"user": "u", "bank": "A"}]}, "weights": {"bank": 10}, "usageWeights": {"cpu": 1}}}`))
	f.Add([]byte(`{"flux": {"bankTree": {"banks": [{"name": "A", "parent": "B"}], "associations": []}, "weights": {"bank": -1}, "usageWeights": {"gpu": -1}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		sc, err := parseServeConfig(data)
		if err != nil {
			problemsAreFieldErrors(t, err)
			return
		}
		if _, err := sc.newFlux(time.Unix(0, 0)); err != nil {
			t.Fatalf("an accepted flux block does not build: %v", err)
		}
		if verr := sc.cfg.Validate(); verr != nil {
			t.Fatalf("an accepted config does not validate: %v", verr)
		}
	})
}
