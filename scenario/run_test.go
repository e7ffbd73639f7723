package scenario

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"
)

// TestRunLeavesItsBuiltUnchanged: Run is deterministic and does not change
// the Built it is given, so two runs of one Built give the same output.
func TestRunLeavesItsBuiltUnchanged(t *testing.T) {
	doc := `{
	  "config": {"defaultPriorityClass": "p", "requeuePreempted": true},
	  "priorityClasses": [{"name": "p", "priority": 1, "preemptible": true}],
	  "nodes": [{"name": "n", "count": 2, "resources": {"cpu": "4"}}],
	  "queues": [{"name": "A"}, {"name": "B"}],
	  "rounds": [
	    {"submit": [{"id": "a", "queue": "A", "count": 8, "requests": {"cpu": "1"}}]},
	    {"submit": [{"id": "b", "queue": "B", "count": 8, "requests": {"cpu": "1"}}]},
	    {}
	  ]
	}`
	f, err := Parse([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	b, err := f.Build()
	if err != nil {
		t.Fatal(err)
	}
	o1, err := Run(context.Background(), b)
	if err != nil {
		t.Fatal(err)
	}
	o2, err := Run(context.Background(), b)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(o1, o2) {
		t.Errorf("two runs of one Built differ")
	}
}

// TestRunDemandSaturatesSoAdjustedFairShareStaysPositive: queue demand is
// summed without wrapping, so three queued jobs of 4000T cpu (4e18 milli
// each, past int64 together) leave the only active queue, holding 89% of
// the cluster, with an adjusted fair share above 0.
func TestRunDemandSaturatesSoAdjustedFairShareStaysPositive(t *testing.T) {
	out, err := runDoc(t, `{
	  "nodes": [{"name": "n", "resources": {"cpu": "9000T"}}],
	  "queues": [{"name": "A"}],
	  "rounds": [{"submit": [{"id": "a", "queue": "A", "count": 3, "requests": {"cpu": "4000T"}}]}]
	}`)
	if err != nil {
		t.Fatal(err)
	}
	q := out.Rounds[0].Queues[0]
	if q.Running != 2 || !(q.AdjustedFairShare > 0) {
		t.Errorf("queue A: running %d, share %v, adjusted fair share %v; want adjusted fair share > 0", q.Running, q.Share, q.AdjustedFairShare)
	}
}

// TestRunJobTemplateAvoidClustersSendsJobsToAnotherCluster: a template's
// avoidClusters reaches each of its jobs, which then go to the other
// cluster (whose node is the looser fit) while it has room.
func TestRunJobTemplateAvoidClustersSendsJobsToAnotherCluster(t *testing.T) {
	out, err := runDoc(t, `{
	  "nodes": [{"name": "a", "cluster": "c1", "resources": {"cpu": "2"}},
	            {"name": "b", "cluster": "c2", "resources": {"cpu": "3"}}],
	  "queues": [{"name": "A"}],
	  "rounds": [{"submit": [{"id": "j", "queue": "A", "count": 4, "requests": {"cpu": "1"}, "avoidClusters": ["c1"]}]}]
	}`)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, p := range out.Rounds[0].Scheduled {
		got[p.Job] = p.Node
	}
	want := map[string]string{"j-0": "b", "j-1": "b", "j-2": "b", "j-3": "a"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("placements %v, want %v", got, want)
	}
}

// TestRunInspectHandsOverEachDecisionBeforeItIsApplied: RunInspect calls
// decided once per round, before emit, with the store still holding the
// jobs the round scheduled and the result the output is made of; an error
// from decided stops the run with nothing more emitted.
func TestRunInspectHandsOverEachDecisionBeforeItIsApplied(t *testing.T) {
	f, err := Parse([]byte(`{
	  "nodes": [{"name": "n", "resources": {"cpu": "2"}}],
	  "queues": [{"name": "A"}],
	  "rounds": [{"submit": [{"id": "a", "queue": "A", "count": 3, "requests": {"cpu": "1"}}]}, {}, {}]
	}`))
	if err != nil {
		t.Fatal(err)
	}
	b, err := f.Build()
	if err != nil {
		t.Fatal(err)
	}
	var calls []string
	stop := errors.New("stop")
	err = RunInspect(context.Background(), b, func(d *Decision) error {
		calls = append(calls, fmt.Sprintf("decided %d: %d queued, %d running, %d scheduled", d.Round, d.Store.Len(), len(d.Snapshot.Running), len(d.Result.Scheduled)))
		if d.Round == 1 {
			return stop
		}
		return nil
	}, func(r *RoundOutput) error {
		calls = append(calls, fmt.Sprintf("emit %d", r.Round))
		return nil
	})
	if !errors.Is(err, stop) {
		t.Fatalf("err %v, want the decided callback's", err)
	}
	want := []string{"decided 0: 3 queued, 0 running, 2 scheduled", "emit 0", "decided 1: 1 queued, 2 running, 0 scheduled"}
	if !reflect.DeepEqual(calls, want) {
		t.Errorf("calls %q, want %q", calls, want)
	}
}
