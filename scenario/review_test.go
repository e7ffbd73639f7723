package scenario_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/scenario"
)

func reviewRun(t *testing.T, doc string) (*scenario.Output, error) {
	t.Helper()
	f, err := scenario.Parse([]byte(doc))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	b, err := f.Build()
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	return scenario.Run(context.Background(), b)
}

// SCENARIOS.md: "Submit time is the round's time ... and ties keep that
// order" (templates in the order listed, a template's jobs by index). With
// room for 10 of 12 one-cpu jobs, a-0 … a-9 must start and a-10, a-11 wait.
func TestReviewSubmitOrderTiesKeepIndexOrder(t *testing.T) {
	out, err := reviewRun(t, `{
	  "nodes": [{"name": "n", "resources": {"cpu": "10"}}],
	  "queues": [{"name": "A"}],
	  "rounds": [{"submit": [{"id": "a", "queue": "A", "count": 12, "requests": {"cpu": "1"}}]}]
	}`)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range out.Rounds[0].Scheduled {
		got = append(got, s.Job)
	}
	var want []string
	for i := range 10 {
		want = append(want, fmt.Sprintf("a-%d", i))
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("scheduled %v, want %v (submit order)", got, want)
	}
}

// Templates in the order listed: a template listed first must go first even
// when its ids sort later.
func TestReviewSubmitOrderTemplatesInFileOrder(t *testing.T) {
	out, err := reviewRun(t, `{
	  "nodes": [{"name": "n", "resources": {"cpu": "1"}}],
	  "queues": [{"name": "A"}],
	  "rounds": [{"submit": [
	    {"id": "zeta", "queue": "A", "requests": {"cpu": "1"}},
	    {"id": "alpha", "queue": "A", "requests": {"cpu": "1"}}
	  ]}]
	}`)
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Rounds[0].Scheduled) != 1 || out.Rounds[0].Scheduled[0].Job != "zeta" {
		t.Errorf("scheduled %+v, want zeta (listed first)", out.Rounds[0].Scheduled)
	}
}

// SCENARIOS.md: finish and cancel apply at the start of the round that
// lists them, so an id submitted in the same round is bad input, rejected
// by Parse with the field named, never a run-time failure.
func TestReviewCancelInSubmitRoundAcceptedButRunFails(t *testing.T) {
	_, err := scenario.Parse([]byte(`{
	  "nodes": [{"name": "n", "resources": {"cpu": "1"}}],
	  "queues": [{"name": "A"}],
	  "rounds": [{"submit": [{"id": "a", "queue": "A", "requests": {"cpu": "1"}}], "cancel": ["a"]}]
	}`))
	if err == nil || !strings.Contains(err.Error(), `rounds[0].cancel[0] "a"`) {
		t.Errorf("want the same-round cancel rejected naming rounds[0].cancel[0], got %v", err)
	}
}

// Run must be deterministic and must not change the Built it is given: two
// runs of one Built give the same output.
func TestReviewRunTwiceSameBuilt(t *testing.T) {
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
	f, err := scenario.Parse([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	b, err := f.Build()
	if err != nil {
		t.Fatal(err)
	}
	o1, err := scenario.Run(context.Background(), b)
	if err != nil {
		t.Fatal(err)
	}
	o2, err := scenario.Run(context.Background(), b)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(o1, o2) {
		t.Errorf("two runs of one Built differ")
	}
}

// Files that Parse (and so Validate) accept but Run then rejects, with an
// error whose Field is not a path in the file ("weights", "schema",
// "total.cpu", "nodes[1].total" for a file with one node template). The
// package doc: "a file that validates builds without error"; SCENARIOS.md:
// bad input is rejected "with an error that names the field and the value".
func TestReviewValidateAcceptsWhatRunRejects(t *testing.T) {
	job := `"queues": [{"name": "A"}], "rounds": [{"submit": [{"id": "a", "queue": "A", "requests": {"%s": "1"}}]}]`
	cases := map[string]string{
		"asset with all weights zero": `{"config": {"fairness": "asset", "resourceWeights": {"cpu": 0}},
		   "nodes": [{"name": "n", "resources": {"cpu": "4"}}], ` + fmt.Sprintf(job, "cpu") + `}`,
		"asset without cpu": `{"config": {"fairness": "asset"},
		   "nodes": [{"name": "n", "resources": {"memory": "4Gi"}}], ` + fmt.Sprintf(job, "memory") + `}`,
		"asset with zero cpu": `{"config": {"fairness": "asset"},
		   "nodes": [{"name": "n", "count": 0, "resources": {"cpu": "4"}}], ` + fmt.Sprintf(job, "cpu") + `}`,
		"cluster total overflows": `{"nodes": [{"name": "n", "count": 2, "resources": {"cpu": "4", "memory": "5Ei"}}], ` +
			fmt.Sprintf(job, "cpu") + `}`,
		"reserved class priority": `{"priorityClasses": [{"name": "armada-default", "priority": -2147483648}],
		   "nodes": [{"name": "n", "resources": {"cpu": "4"}}], ` + fmt.Sprintf(job, "cpu") + `}`,
	}
	for name, doc := range cases {
		t.Run(name, func(t *testing.T) {
			f, perr := scenario.Parse([]byte(doc))
			if perr == nil {
				b, err := f.Build()
				if err != nil {
					t.Fatal(err)
				}
				_, rerr := scenario.Run(context.Background(), b)
				var fe *flotilla.FieldError
				errors.As(rerr, &fe)
				t.Errorf("Parse accepted a file that Run rejects: %v (field %q)", rerr, fe.Field)
			}
		})
	}
}

// Queue demand is summed in int64 without overflow checks: three queued
// jobs of 4000T cpu (4e18 milli each) overflow it and the only active
// queue, holding 89% of the cluster, gets an adjusted fair share of 0.
func TestReviewDemandOverflowZeroesAdjustedFairShare(t *testing.T) {
	out, err := reviewRun(t, `{
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

// A duplicate key must be reported by Parse as ErrDuplicate with its path.
func TestReviewDuplicateKeyIsDuplicate(t *testing.T) {
	_, err := scenario.Parse([]byte(`{"config": {}, "config": {}, "nodes": [{"name": "n", "resources": {"cpu": "1"}}]}`))
	var fe *flotilla.FieldError
	if !errors.Is(err, flotilla.ErrDuplicate) || !errors.As(err, &fe) || fe.Field != "config" {
		t.Errorf("err = %v", err)
	}
}

// FuzzReviewParseRun: whatever Parse accepts, Run must either run or fail
// with a *flotilla.FieldError, and never panic.
func FuzzReviewParseRun(f *testing.F) {
	f.Add([]byte(`{"nodes": [{"name": "n", "resources": {"cpu": "4"}}], "queues": [{"name": "A"}],
	  "rounds": [{"submit": [{"id": "a", "queue": "A", "count": 3, "requests": {"cpu": "1"}}]}, {"finish": ["a-0"]}]}`))
	f.Add([]byte(`{"config": {"fairness": "asset", "protectedFractionOfFairShare": 0, "requeuePreempted": true,
	  "defaultPriorityClass": "armada-preemptible"},
	  "nodes": [{"name": "n", "count": 2, "resources": {"cpu": "4", "memory": "4Gi"}}], "queues": [{"name": "A"}, {"name": "B"}],
	  "rounds": [{"submit": [{"id": "a", "queue": "A", "count": 8, "requests": {"cpu": "1"}}]},
	             {"submit": [{"id": "b", "queue": "B", "count": 4, "priorityClass": "armada-default", "requests": {"cpu": "2"},
	                          "gang": {"id": "g"}}]}, {"cancel": ["a-1"]}]}`))
	f.Add([]byte(`{"config": {"strategy": "lottery", "priorityHalftime": "1m"},
	  "nodes": [{"name": "n", "count": 2, "resources": {"cpu": "4"}}], "queues": [{"name": "A", "priorityFactor": 2}, {"name": "B"}],
	  "rounds": [{"submit": [{"id": "a", "queue": "A", "count": 8, "requests": {"cpu": "1"}}, {"id": "b", "queue": "B", "count": 8, "requests": {"cpu": "1"}}]}, {}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := scenario.Parse(data)
		if err != nil {
			return
		}
		b, err := file.Build()
		if err != nil {
			t.Fatalf("Build after Parse: %v", err)
		}
		jobs := 0
		for _, r := range b.Rounds {
			jobs += len(r.Submit)
		}
		if len(b.Nodes) > 64 || jobs > 512 || len(b.Rounds) > 16 {
			return
		}
		_, err = scenario.Run(context.Background(), b)
		if err != nil {
			var fe *flotilla.FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("Run error is not a FieldError: %v", err)
			}
		}
	})
}
