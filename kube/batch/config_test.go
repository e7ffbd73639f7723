package batch

import (
	"errors"
	"strings"
	"testing"

	"github.com/flotilla-sched/flotilla"
)

func TestParseConfigTakesQueuesSettingsAndClassLimits(t *testing.T) {
	cfg, err := ParseConfig([]byte(`{
		"config": {"fairness": "asset", "protectedFractionOfFairShare": 0.5, "seed": 7},
		"priorityClasses": [{"name": "armada-default", "priority": 1, "preemptible": false,
			"maximumResourceFractionPerQueue": {"cpu": 0.25}}],
		"queues": [{"name": "a", "priorityFactor": 2}, {"name": "b"}]
	}`))
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Queues) != 2 || cfg.Queues[0].Name != "a" || cfg.Queues[0].PriorityFactor != 2 ||
		cfg.Scheduler.Fairness != "asset" || cfg.Scheduler.ProtectedFractionOfFairShare != 0.5 || cfg.Seed != 7 ||
		cfg.ClassLimits["armada-default"]["cpu"] != 0.25 || cfg.Schema.Len() != 3 {
		t.Fatalf("config = %+v, scheduler %+v", cfg, cfg.Scheduler)
	}
}

// Every problem of the file is reported at once, at its path.
func TestParseConfigReportsEveryProblemAtItsPath(t *testing.T) {
	_, err := ParseConfig([]byte(`{"config": {"evictionProbability": 2}, "queues": [{"name": ""}]}`))
	for _, w := range []string{"config.evictionProbability", "queues[0].name"} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("error %v lacks %s", err, w)
		}
	}
	var fe *flotilla.FieldError
	if !errors.As(err, &fe) {
		t.Fatalf("%v holds no *flotilla.FieldError", err)
	}
	if _, err := ParseConfig([]byte(`{"rounds": []}`)); err == nil || !strings.Contains(err.Error(), "rounds") {
		t.Fatalf("rounds accepted: %v", err)
	}
	if _, err := ParseConfig([]byte(`{`)); err == nil {
		t.Fatal("malformed JSON accepted")
	}
}

// A document that is not a JSON object (null among them) is refused, at
// the root, never a panic.
func TestParseConfigRefusesADocumentThatIsNotAnObject(t *testing.T) {
	for _, doc := range []string{`null`, ` null `, `[]`, `"queues"`, `1`} {
		_, err := ParseConfig([]byte(doc))
		var fe *flotilla.FieldError
		if !errors.As(err, &fe) {
			t.Errorf("ParseConfig(%s) = %v, want a *flotilla.FieldError", doc, err)
		}
	}
}

// ParseConfig never panics, and every refusal holds a *flotilla.FieldError.
func FuzzParseConfig(f *testing.F) {
	for _, s := range []string{`{}`, `null`, `{"queues": [{"name": "a"}]}`, `{"config": {"fairness": "asset"}}`,
		`{"nodes": [{"name": "n", "resources": {"cpu": "1"}}]}`, `{"priorityClasses": [{"name": "p", "maximumResourceFractionPerQueue": {"cpu": 2}}]}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		_, err := ParseConfig(data)
		var fe *flotilla.FieldError
		if err != nil && !errors.As(err, &fe) {
			t.Fatalf("ParseConfig(%q) = %v, holds no *flotilla.FieldError", data, err)
		}
	})
}

// config.topologies, as in a scenario file, become the scheduler's
// topologies; a malformed one is refused at its path.
func TestParseConfigTakesTopologies(t *testing.T) {
	cfg, err := ParseConfig([]byte(`{"config": {"topologies": [
		{"name": "default", "levels": ["topology.flotilla.dev/block", "topology.flotilla.dev/rack", "kubernetes.io/hostname"]},
		{"name": "nvlink", "levels": ["topology.flotilla.dev/nvlink", "kubernetes.io/hostname"]}]}}`))
	if err != nil {
		t.Fatal(err)
	}
	ts := cfg.Scheduler.Topologies
	if len(ts) != 2 || ts[0].Name != "default" || len(ts[0].Levels) != 3 || ts[0].Levels[1] != "topology.flotilla.dev/rack" ||
		ts[1].Name != "nvlink" || len(ts[1].Levels) != 2 {
		t.Fatalf("topologies %+v", ts)
	}
	for _, tc := range []struct{ doc, path string }{
		{`{"config": {"topologies": [{"name": "t", "levels": []}]}}`, "config.topologies[0].levels"},
		{`{"config": {"topologies": [{"name": "t", "levels": ["a", "a"]}]}}`, "config.topologies[0].levels[1]"},
		{`{"config": {"topologies": [{"name": "t", "levels": ["a"]}, {"name": "t", "levels": ["b"]}]}}`, "config.topologies[1].name"},
		{`{"config": {"topologies": [{"levels": ["a"]}]}}`, "config.topologies[0].name"},
	} {
		_, err := ParseConfig([]byte(tc.doc))
		var fe *flotilla.FieldError
		if !errors.As(err, &fe) || !strings.Contains(err.Error(), tc.path) {
			t.Errorf("ParseConfig(%s) = %v, want a *flotilla.FieldError at %s", tc.doc, err, tc.path)
		}
	}
}
