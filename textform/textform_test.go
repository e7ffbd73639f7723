package textform_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/textform"
)

// The JSON names are the public formats' (SCENARIOS.md, SERVICE.md):
// a taint always writes key and effect, a toleration only what is set.
func TestJSONNamesAreTheFormatsAndEmptyOptionalFieldsAreLeftOut(t *testing.T) {
	for _, tc := range []struct {
		v    any
		want string
	}{
		{textform.Taint{Key: "gpu", Value: "true", Effect: "NoSchedule"}, `{"key":"gpu","value":"true","effect":"NoSchedule"}`},
		{textform.Taint{}, `{"key":"","effect":""}`},
		{textform.Toleration{Key: "gpu", Operator: "Equal", Value: "true", Effect: "NoExecute"},
			`{"key":"gpu","operator":"Equal","value":"true","effect":"NoExecute"}`},
		{textform.Toleration{Operator: "Exists"}, `{"operator":"Exists"}`},
		{textform.Toleration{}, `{}`},
	} {
		got, err := json.Marshal(tc.v)
		require.NoError(t, err)
		assert.JSONEq(t, tc.want, string(got))
		assert.Equal(t, tc.want, string(got), "field order")
	}
}

// Tolerations makes the default operator explicit and keeps every other
// field as written, an unknown operator included (Job.Validate judges
// it); a toleration's own Flotilla keeps an empty operator empty.
func TestTolerationsMakeTheDefaultOperatorExplicitAndKeepTheRestAsWritten(t *testing.T) {
	in := []textform.Toleration{
		{Key: "gpu", Value: "true", Effect: "NoSchedule"},
		{Operator: "Exists"},
		{Key: "k", Operator: "Equal", Value: "v"},
		{Key: "k", Operator: "Gt", Value: "1", Effect: "Never"},
	}
	assert.Equal(t, []flotilla.Toleration{
		{Key: "gpu", Operator: flotilla.TolerationEqual, Value: "true", Effect: flotilla.TaintNoSchedule},
		{Operator: flotilla.TolerationExists},
		{Key: "k", Operator: flotilla.TolerationEqual, Value: "v"},
		{Key: "k", Operator: "Gt", Value: "1", Effect: "Never"},
	}, textform.Tolerations(in))
	assert.Equal(t, flotilla.Toleration{Key: "gpu", Value: "true", Effect: flotilla.TaintNoSchedule}, in[0].Flotilla())
	assert.Nil(t, textform.Tolerations(nil))
	assert.Nil(t, textform.Tolerations([]textform.Toleration{}))
}

// A taint goes to the library's form and back unchanged, an effect the
// library does not know included (Node.Validate judges it); no taints
// are nil either way.
func TestTaintsRoundTripThroughTheLibrarysForm(t *testing.T) {
	in := []textform.Taint{{Key: "gpu", Value: "true", Effect: "NoSchedule"}, {Key: "spot", Effect: "PreferNoSchedule"}, {Key: "x", Effect: "Never"}}
	lib := textform.Taints(in)
	assert.Equal(t, []flotilla.Taint{
		{Key: "gpu", Value: "true", Effect: flotilla.TaintNoSchedule},
		{Key: "spot", Effect: flotilla.TaintPreferNoSchedule},
		{Key: "x", Effect: "Never"},
	}, lib)
	assert.Equal(t, in, textform.TaintsOf(lib))
	assert.Nil(t, textform.Taints(nil))
	assert.Nil(t, textform.TaintsOf([]flotilla.Taint{}))
}
