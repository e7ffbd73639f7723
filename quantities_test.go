package flotilla_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flotilla-sched/flotilla"
)

// A quantity in JSON is a string or a number, as Kubernetes reads one: a
// number is kept as its text, and parses as the same string would.
func TestQuantitiesReadNumbersAsTheirText(t *testing.T) {
	var q flotilla.Quantities
	require.NoError(t, json.Unmarshal([]byte(`{"cpu": 0.5, "memory": "4Gi", "nvidia.com/gpu": 2, "ephemeral-storage": 1e9, "x": null}`), &q))
	assert.Equal(t, flotilla.Quantities{"cpu": "0.5", "memory": "4Gi", "nvidia.com/gpu": "2", "ephemeral-storage": "1e9", "x": ""}, q)
	delete(q, "x")
	schema := flotilla.MustResourceSchema("cpu", "memory", "nvidia.com/gpu", "ephemeral-storage")
	got, err := schema.Parse("requests", q)
	require.NoError(t, err)
	want := schema.MustParse(map[string]string{"cpu": "500m", "memory": "4Gi", "nvidia.com/gpu": "2", "ephemeral-storage": "1G"})
	assert.Equal(t, want, got)

	for _, bad := range []string{`{"cpu": true}`, `{"cpu": [1]}`, `{"cpu": {}}`, `[]`} {
		assert.Error(t, json.Unmarshal([]byte(bad), &q), bad)
	}
	out, err := json.Marshal(flotilla.Quantities{"cpu": "1"})
	require.NoError(t, err)
	assert.JSONEq(t, `{"cpu": "1"}`, string(out), "written as strings")
}
