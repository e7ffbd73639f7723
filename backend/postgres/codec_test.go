package postgres

import (
	"encoding/json"
	"maps"
	"testing"

	"github.com/flotilla-sched/flotilla"
)

// FuzzParseAmountsAgreesWithJSON checks the fast reader of stored resource
// objects against encoding/json: whatever it accepts, json reads to the
// same amounts.
func FuzzParseAmountsAgreesWithJSON(f *testing.F) {
	for _, s := range []string{
		`{"cpu": 1000, "memory": 1073741824}`, `{}`, `{"cpu":-5}`, `{"a": 01}`, `{"a\"b": 1}`, `{"a": 1e3}`,
		`{"cpu": 9223372036854775807}`, `{"cpu": 9223372036854775808}`, `{"a": 1, "a": 2}`, ` { "x" : 0 } `, `{"a": 1,}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		got, ok := parseAmounts(raw, 2)
		if !ok {
			return
		}
		var want map[string]int64
		if err := json.Unmarshal(raw, &want); err != nil {
			t.Fatalf("parseAmounts(%q) accepts %v; json refuses: %v", raw, got, err)
		}
		m := map[string]int64{}
		for _, a := range got {
			m[a.name] = a.v
		}
		if !maps.Equal(m, want) {
			t.Fatalf("parseAmounts(%q) = %v, json %v", raw, m, want)
		}
	})
}

func TestStoredResourcesReadBackAsWritten(t *testing.T) {
	schema := flotilla.MustResourceSchema("cpu", "memory", "nvidia.com/gpu")
	for _, r := range []flotilla.Resources{{0, 0, 0}, {1000, 1 << 40, 8}, {-1, 9223372036854775807, 1}} {
		raw := appendResources(nil, schema, r)
		got, err := decodeResources(schema, raw, "requests")
		if err != nil || !got.Equal(r) {
			t.Errorf("decodeResources(%s) = %v, %v; want %v", raw, got, err, r)
		}
	}
	// PostgreSQL's own jsonb text, and an escaped name json reads.
	for raw, want := range map[string]flotilla.Resources{
		`{"cpu": 1000, "memory": 4096}`:         {1000, 4096, 0},
		`{"nvidia.com\/gpu": 2, "cpu": 1}`:      {1, 0, 2},
		`{"cpu": 5, "memory": 0, "unknown": 0}`: {5, 0, 0},
	} {
		got, err := decodeResources(schema, []byte(raw), "requests")
		if err != nil || !got.Equal(want) {
			t.Errorf("decodeResources(%s) = %v, %v; want %v", raw, got, err, want)
		}
	}
}
