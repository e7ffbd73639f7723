package flotilla

import (
	"testing"

	"github.com/leanovate/gopter"
	"github.com/leanovate/gopter/gen"
	"github.com/leanovate/gopter/prop"
)

// The allocation-free fast path must accept exactly what Validate accepts.
func TestJobFastValidityAgreesWithValidate(t *testing.T) {
	schema := MustResourceSchema("cpu", "memory")
	params := gopter.DefaultTestParametersWithSeed(7)
	params.MinSuccessfulTests = 20000
	p := gopter.NewProperties(params)
	pick := func(xs ...string) gopter.Gen { return gen.OneConstOf(stringsToAny(xs)...) }
	p.Property("valid(j) == (report(j) == nil)", prop.ForAll(
		func(id, queue, gangID, label, tolKey, tolOp, tolVal, tolEff, avoid string, nreq, card int, neg, sel bool) bool {
			j := &Job{ID: id, Queue: queue, Requests: make(Resources, nreq)}
			if neg && nreq > 0 {
				j.Requests[0] = -1
			}
			j.Gang = Gang{ID: gangID, Cardinality: card, NodeUniformityLabel: label}
			if sel {
				j.NodeSelector = map[string]string{label: "x"}
			}
			if tolOp != "none" {
				j.Tolerations = []Toleration{{Key: tolKey, Operator: TolerationOperator(tolOp), Value: tolVal, Effect: TaintEffect(tolEff)}}
			}
			if avoid != "none" {
				j.AvoidClusters = []string{"c1", avoid}
			}
			return j.valid(schema) == (j.report(schema) == nil)
		},
		pick("", "a"), pick("", "q"), pick("", "g"), pick("", "zone"), pick("", "k"),
		pick("none", "", "Equal", "Exists", "Bogus"), pick("", "v"), pick("", "NoSchedule", "NoExecute", "PreferNoSchedule", "Sometimes"),
		pick("none", "", "c2"),
		gen.IntRange(0, 3), gen.IntRange(-1, 2), gen.Bool(), gen.Bool(),
	))
	p.TestingRun(t)
}

func stringsToAny(xs []string) []any {
	out := make([]any, len(xs))
	for i, x := range xs {
		out[i] = x
	}
	return out
}

// Node's allocation-free fast path must accept exactly what its full
// report accepts.
func TestNodeFastValidityAgreesWithValidate(t *testing.T) {
	schema := MustResourceSchema("cpu", "memory")
	params := gopter.DefaultTestParametersWithSeed(11)
	params.MinSuccessfulTests = 5000
	p := gopter.NewProperties(params)
	pick := func(xs ...string) gopter.Gen { return gen.OneConstOf(stringsToAny(xs)...) }
	p.Property("valid(n) == (report(n) == nil)", prop.ForAll(
		func(name, label, taintKey, taintEff string, ntotal int, neg, taint bool) bool {
			n := &Node{Name: name, Total: make(Resources, ntotal), Labels: map[string]string{label: "x"}}
			if neg && ntotal > 0 {
				n.Total[ntotal-1] = -1
			}
			if taint {
				n.Taints = []Taint{{Key: taintKey, Value: "v", Effect: TaintEffect(taintEff)}}
			}
			return n.valid(schema) == (n.report(schema) == nil)
		},
		pick("", "n"), pick("", "zone"), pick("", "gpu"), pick("", "NoSchedule", "NoExecute", "PreferNoSchedule", "Sometimes"),
		gen.IntRange(0, 3), gen.Bool(), gen.Bool(),
	))
	p.TestingRun(t)
}
