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
