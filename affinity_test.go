package flotilla

import (
	"errors"
	"testing"
)

func TestNodeAffinityMatchesAsKubernetes(t *testing.T) {
	req := func(key string, op NodeSelectorOperator, values ...string) NodeSelectorRequirement {
		return NodeSelectorRequirement{Key: key, Operator: op, Values: values}
	}
	term := func(rs ...NodeSelectorRequirement) NodeSelectorTerm { return NodeSelectorTerm{MatchExpressions: rs} }
	gpuA := map[string]string{"gpu": "a100", "zone": "z1"}
	plain := map[string]string{"zone": "z2"}
	for _, tc := range []struct {
		name   string
		terms  []NodeSelectorTerm
		labels map[string]string
		want   bool
	}{
		{"no terms: any node", nil, plain, true},
		{"In, value listed", []NodeSelectorTerm{term(req("gpu", NodeSelectorIn, "h100", "a100"))}, gpuA, true},
		{"In, key missing", []NodeSelectorTerm{term(req("gpu", NodeSelectorIn, "a100"))}, plain, false},
		{"In, other value", []NodeSelectorTerm{term(req("gpu", NodeSelectorIn, "h100"))}, gpuA, false},
		{"NotIn, key missing matches", []NodeSelectorTerm{term(req("gpu", NodeSelectorNotIn, "a100"))}, plain, true},
		{"NotIn, value listed", []NodeSelectorTerm{term(req("gpu", NodeSelectorNotIn, "a100"))}, gpuA, false},
		{"Exists", []NodeSelectorTerm{term(req("gpu", NodeSelectorExists))}, gpuA, true},
		{"Exists, missing", []NodeSelectorTerm{term(req("gpu", NodeSelectorExists))}, plain, false},
		{"DoesNotExist", []NodeSelectorTerm{term(req("gpu", NodeSelectorDoesNotExist))}, plain, true},
		{"expressions are ANDed", []NodeSelectorTerm{term(req("gpu", NodeSelectorExists), req("zone", NodeSelectorIn, "z2"))}, gpuA, false},
		{"terms are ORed", []NodeSelectorTerm{term(req("gpu", NodeSelectorExists)), term(req("zone", NodeSelectorIn, "z2"))}, plain, true},
		{"an empty term matches nothing", []NodeSelectorTerm{{}}, plain, false},
		{"an unknown operator matches nothing", []NodeSelectorTerm{term(req("zone", "Gt", "1"))}, plain, false},
	} {
		if got := AffinityMatches(tc.terms, tc.labels); got != tc.want {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestNodeAffinityValidationNamesEveryProblem(t *testing.T) {
	schema := MustResourceSchema("cpu")
	j := &Job{ID: "j", Queue: "q", Requests: schema.MustParse(map[string]string{"cpu": "1"}), NodeAffinity: []NodeSelectorTerm{
		{},
		{MatchExpressions: []NodeSelectorRequirement{
			{Key: "", Operator: NodeSelectorExists},
			{Key: "a", Operator: NodeSelectorIn},
			{Key: "b", Operator: NodeSelectorDoesNotExist, Values: []string{"x"}},
			{Key: "c", Operator: "Gt", Values: []string{"1"}},
		}},
	}}
	err := j.Validate(schema)
	want := map[string]error{
		`job "j".nodeAffinity[0].matchExpressions`:             ErrRequired,
		`job "j".nodeAffinity[1].matchExpressions[0].key`:      ErrRequired,
		`job "j".nodeAffinity[1].matchExpressions[1].values`:   ErrRequired,
		`job "j".nodeAffinity[1].matchExpressions[2].values`:   ErrInconsistent,
		`job "j".nodeAffinity[1].matchExpressions[3].operator`: ErrUnknownName,
	}
	got := Problems(err)
	if len(got) != len(want) {
		t.Fatalf("problems %v: want %d", got, len(want))
	}
	for _, e := range got {
		var fe *FieldError
		if !errors.As(e, &fe) || want[fe.Field] == nil || !errors.Is(e, want[fe.Field]) {
			t.Errorf("unexpected problem %v", e)
		}
	}
	if j.valid(schema) {
		t.Error("the fast path accepts what Validate refuses")
	}
	j.NodeAffinity = []NodeSelectorTerm{{MatchExpressions: []NodeSelectorRequirement{{Key: "a", Operator: NodeSelectorIn, Values: []string{"x"}}}}}
	if err := j.Validate(schema); err != nil || !j.valid(schema) {
		t.Fatalf("a valid affinity refused: %v", err)
	}
}
