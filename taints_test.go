package flotilla

import (
	"testing"

	"github.com/leanovate/gopter"
	"github.com/leanovate/gopter/gen"
	"github.com/leanovate/gopter/prop"
	"github.com/stretchr/testify/assert"
)

func TestTolerates(t *testing.T) {
	gpu := Taint{Key: "gpu", Value: "true", Effect: TaintNoSchedule}
	cases := []struct {
		name  string
		tol   Toleration
		taint Taint
		want  bool
	}{
		{"equal key value effect", Toleration{Key: "gpu", Operator: TolerationEqual, Value: "true", Effect: TaintNoSchedule}, gpu, true},
		{"empty operator means Equal", Toleration{Key: "gpu", Value: "true", Effect: TaintNoSchedule}, gpu, true},
		{"equal other value", Toleration{Key: "gpu", Value: "false", Effect: TaintNoSchedule}, gpu, false},
		{"equal empty value vs set", Toleration{Key: "gpu", Effect: TaintNoSchedule}, gpu, false},
		{"equal empty value vs empty", Toleration{Key: "gpu"}, Taint{Key: "gpu", Effect: TaintNoExecute}, true},
		{"equal other key", Toleration{Key: "tpu", Value: "true"}, gpu, false},
		{"exists ignores value", Toleration{Key: "gpu", Operator: TolerationExists}, gpu, true},
		{"exists ignores value even if set", Toleration{Key: "gpu", Operator: TolerationExists, Value: "x"}, gpu, true},
		{"exists other key", Toleration{Key: "tpu", Operator: TolerationExists}, gpu, false},
		{"empty key exists matches all keys", Toleration{Operator: TolerationExists}, gpu, true},
		{"empty key exists matches other effects", Toleration{Operator: TolerationExists}, Taint{Key: "a", Effect: TaintNoExecute}, true},
		{"empty key exists respects effect", Toleration{Operator: TolerationExists, Effect: TaintNoExecute}, gpu, false},
		{"empty key equal is no wildcard", Toleration{Value: "true"}, gpu, false},
		{"empty effect matches every effect", Toleration{Key: "gpu", Value: "true"}, Taint{Key: "gpu", Value: "true", Effect: TaintNoExecute}, true},
		{"effect mismatch", Toleration{Key: "gpu", Value: "true", Effect: TaintNoExecute}, gpu, false},
		{"effect prefer", Toleration{Key: "gpu", Value: "true", Effect: TaintPreferNoSchedule}, Taint{Key: "gpu", Value: "true", Effect: TaintPreferNoSchedule}, true},
		{"unknown operator", Toleration{Key: "gpu", Operator: "In", Value: "true"}, gpu, false},
		{"case matters", Toleration{Key: "GPU", Value: "true"}, gpu, false},
	}
	for _, c := range cases {
		assert.Equal(t, c.want, c.tol.Tolerates(c.taint), c.name)
	}
}

func TestTaintsTolerated(t *testing.T) {
	noSched := Taint{Key: "gpu", Value: "true", Effect: TaintNoSchedule}
	noExec := Taint{Key: "maint", Effect: TaintNoExecute}
	prefer := Taint{Key: "spot", Value: "yes", Effect: TaintPreferNoSchedule}
	tolGPU := Toleration{Key: "gpu", Value: "true"}
	tolMaint := Toleration{Key: "maint", Operator: TolerationExists, Effect: TaintNoExecute}
	cases := []struct {
		name   string
		taints []Taint
		tols   []Toleration
		want   bool
	}{
		{"no taints", nil, nil, true},
		{"no taints with tolerations", nil, []Toleration{tolGPU}, true},
		{"untolerated NoSchedule", []Taint{noSched}, nil, false},
		{"untolerated NoExecute", []Taint{noExec}, nil, false},
		{"PreferNoSchedule never blocks", []Taint{prefer}, nil, true},
		{"tolerated NoSchedule", []Taint{noSched}, []Toleration{tolGPU}, true},
		{"one of two tolerated", []Taint{noSched, noExec}, []Toleration{tolGPU}, false},
		{"both tolerated", []Taint{noSched, noExec, prefer}, []Toleration{tolMaint, tolGPU}, true},
		{"wildcard", []Taint{noSched, noExec, prefer}, []Toleration{{Operator: TolerationExists}}, true},
		{"unknown effect fails closed", []Taint{{Key: "x", Effect: "Bogus"}}, nil, false},
		{"empty effect fails closed", []Taint{{Key: "x"}}, nil, false},
		{"empty effect tolerated by empty-effect toleration", []Taint{{Key: "x"}}, []Toleration{{Key: "x"}}, true},
	}
	for _, c := range cases {
		assert.Equal(t, c.want, TaintsTolerated(c.taints, c.tols), c.name)
	}
}

func TestSelectorMatches(t *testing.T) {
	labels := map[string]string{"zone": "a", "gpu": "a100", "empty": ""}
	cases := []struct {
		name     string
		selector map[string]string
		labels   map[string]string
		want     bool
	}{
		{"nil selector", nil, labels, true},
		{"nil selector nil labels", nil, nil, true},
		{"empty selector", map[string]string{}, nil, true},
		{"one match", map[string]string{"zone": "a"}, labels, true},
		{"two match", map[string]string{"zone": "a", "gpu": "a100"}, labels, true},
		{"value differs", map[string]string{"zone": "b"}, labels, false},
		{"key missing", map[string]string{"rack": "1"}, labels, false},
		{"empty value present", map[string]string{"empty": ""}, labels, true},
		{"empty value absent key", map[string]string{"other": ""}, labels, false},
		{"labels nil", map[string]string{"zone": "a"}, nil, false},
		{"one of two differs", map[string]string{"zone": "a", "gpu": "h100"}, labels, false},
	}
	for _, c := range cases {
		assert.Equal(t, c.want, SelectorMatches(c.selector, c.labels), c.name)
	}
}

func TestTaintsNoAllocation(t *testing.T) {
	taints := []Taint{{Key: "gpu", Value: "true", Effect: TaintNoSchedule}, {Key: "spot", Effect: TaintPreferNoSchedule}, {Key: "m", Effect: TaintNoExecute}}
	tols := []Toleration{{Key: "m", Operator: TolerationExists}, {Key: "gpu", Value: "true", Effect: TaintNoSchedule}}
	selector := map[string]string{"zone": "a", "gpu": "a100"}
	labels := map[string]string{"zone": "a", "gpu": "a100", "rack": "7"}
	var ok bool
	allocs := testing.AllocsPerRun(1000, func() {
		ok = TaintsTolerated(taints, tols) && SelectorMatches(selector, labels) && tols[1].Tolerates(taints[0])
	})
	assert.True(t, ok)
	assert.Zero(t, allocs)
}

// TestTaintProperties checks the rules as properties over small random
// alphabets, so that keys, values and effects often collide.
func TestTaintProperties(t *testing.T) {
	params := gopter.DefaultTestParameters()
	params.MinSuccessfulTests = 500
	params.Rng.Seed(2)
	props := gopter.NewProperties(params)
	str := gen.OneConstOf("", "a", "b")
	effect := gen.OneConstOf(TaintEffect(""), TaintNoSchedule, TaintPreferNoSchedule, TaintNoExecute)
	taintGen := gopter.CombineGens(str, str, effect).Map(func(v []any) Taint {
		return Taint{Key: v[0].(string), Value: v[1].(string), Effect: v[2].(TaintEffect)}
	})
	tolGen := gopter.CombineGens(str, gen.OneConstOf(TolerationOperator(""), TolerationEqual, TolerationExists), str, effect).Map(func(v []any) Toleration {
		return Toleration{Key: v[0].(string), Operator: v[1].(TolerationOperator), Value: v[2].(string), Effect: v[3].(TaintEffect)}
	})
	props.Property("Tolerates agrees with the spelled-out rule", prop.ForAll(func(tol Toleration, taint Taint) bool {
		effectOK := tol.Effect == "" || tol.Effect == taint.Effect
		var match bool
		if tol.Operator == TolerationExists {
			match = tol.Key == "" || tol.Key == taint.Key
		} else {
			match = tol.Key == taint.Key && tol.Value == taint.Value
		}
		return tol.Tolerates(taint) == (effectOK && match)
	}, tolGen, taintGen))
	props.Property("the wildcard toleration tolerates every node", prop.ForAll(func(taints []Taint) bool {
		return TaintsTolerated(taints, []Toleration{{Operator: TolerationExists}})
	}, gen.SliceOf(taintGen)))
	props.Property("PreferNoSchedule taints never change the answer", prop.ForAll(func(taints []Taint, tols []Toleration) bool {
		var blocking []Taint
		for _, tn := range taints {
			if tn.Effect != TaintPreferNoSchedule {
				blocking = append(blocking, tn)
			}
		}
		return TaintsTolerated(taints, tols) == TaintsTolerated(blocking, tols)
	}, gen.SliceOf(taintGen), gen.SliceOf(tolGen)))
	props.Property("adding a toleration never hurts", prop.ForAll(func(taints []Taint, tols []Toleration, extra Toleration) bool {
		return !TaintsTolerated(taints, tols) || TaintsTolerated(taints, append(tols, extra))
	}, gen.SliceOf(taintGen), gen.SliceOf(tolGen), tolGen))
	props.TestingRun(t)
}

func BenchmarkTaintsTolerated(b *testing.B) {
	taints := []Taint{{Key: "gpu", Value: "true", Effect: TaintNoSchedule}, {Key: "spot", Effect: TaintPreferNoSchedule}, {Key: "m", Effect: TaintNoExecute}}
	tols := []Toleration{{Key: "m", Operator: TolerationExists}, {Key: "gpu", Value: "true", Effect: TaintNoSchedule}}
	b.ReportAllocs()
	for b.Loop() {
		if !TaintsTolerated(taints, tols) {
			b.Fatal("not tolerated")
		}
	}
}
