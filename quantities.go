package flotilla

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// Quantities maps resource names to quantities as people write them:
// "500m", "2", "4Gi" (Kubernetes' grammar; ResourceSchema.Parse reads
// them). In JSON a value may also be a number (1, 0.5, 2e3), as
// Kubernetes reads a quantity: it is kept as the number's text, so
// {"cpu": 1} is {"cpu": "1"}. It is a map[string]string, assignable to and
// from one.
type Quantities map[string]string

// UnmarshalJSON reads an object whose values are strings or numbers (null
// is the empty string, the zero value, as for a map of strings).
func (q *Quantities) UnmarshalJSON(data []byte) error {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return err
	}
	if raw == nil {
		*q = nil
		return nil
	}
	out := make(Quantities, len(raw))
	for k, v := range raw {
		v = bytes.TrimSpace(v)
		switch {
		case len(v) > 0 && v[0] == '"':
			var s string
			if err := json.Unmarshal(v, &s); err != nil {
				return err
			}
			out[k] = s
		case bytes.Equal(v, []byte("null")):
			out[k] = ""
		default:
			var n json.Number
			if err := json.Unmarshal(v, &n); err != nil {
				return fmt.Errorf("quantity %q: %s is not a string or a number", k, v)
			}
			out[k] = n.String()
		}
	}
	*q = out
	return nil
}
