package postgres

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/flotilla-sched/flotilla"
)

// Times are stored as Unix nanoseconds, which cover 1678 to 2262; the zero
// time is NULL.
var (
	minTime = time.Unix(0, math.MinInt64)
	maxTime = time.Unix(0, math.MaxInt64)
)

// timeProblem is a FieldError for a time a bigint of nanoseconds cannot
// hold, or nil.
func timeProblem(field string, t time.Time) error {
	if t.IsZero() || (!t.Before(minTime) && !t.After(maxTime)) {
		return nil
	}
	return flotilla.Errorf(field, t.Format(time.RFC3339Nano), flotilla.ErrOutOfRange, "want a time between 1678 and 2262")
}

// encodeTime is t as stored: nil for the zero time.
func encodeTime(t time.Time) *int64 {
	if t.IsZero() {
		return nil
	}
	n := t.UnixNano()
	return &n
}

// decodeTime is a stored time, in UTC.
func decodeTime(n *int64) time.Time {
	if n == nil {
		return time.Time{}
	}
	return time.Unix(0, *n).UTC()
}

// textProblem is a FieldError for a string PostgreSQL's text cannot hold
// (a NUL byte or invalid UTF-8), or nil.
func textProblem(field, s string) error {
	if textOK(s) {
		return nil
	}
	return flotilla.Errorf(field, strconv.Quote(s), flotilla.ErrMalformed, "stored text must be UTF-8 without NUL bytes")
}

// textOK reports whether PostgreSQL's text can hold s.
func textOK(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == 0 {
			return false
		}
		if s[i] >= utf8.RuneSelf {
			return utf8.ValidString(s) && !strings.ContainsRune(s, 0)
		}
	}
	return true
}

// appendResources appends r as a JSON object keyed by resource name.
func appendResources(buf []byte, schema *flotilla.ResourceSchema, r flotilla.Resources) []byte {
	buf = append(buf, '{')
	for i, v := range r {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = strconv.AppendQuote(buf, schema.Name(i))
		buf = append(buf, ':')
		buf = strconv.AppendInt(buf, v, 10)
	}
	return append(buf, '}')
}

// decodeResources reads a JSON object of resource amounts into the schema:
// a resource the schema lacks is an error unless its amount is zero.
func decodeResources(schema *flotilla.ResourceSchema, raw []byte, field string) (flotilla.Resources, error) {
	m, ok := parseAmounts(raw, schema.Len())
	if !ok {
		if err := json.Unmarshal(raw, &m); err != nil {
			return nil, fmt.Errorf("%s: stored resources %s: %w", field, raw, err)
		}
	}
	r := schema.Zero()
	for _, a := range m {
		name, v := a.name, a.v
		i, ok := schema.Index(name)
		if !ok {
			if v != 0 {
				return nil, flotilla.Errorf(field, name, flotilla.ErrUnknownResource, "stored with amount %d; the backend's schema is %v", v, schema.Names())
			}
			continue
		}
		r[i] = v
	}
	return r, nil
}

// amount is one resource's amount as stored.
type amount struct {
	name string
	v    int64
}

// amounts reads a JSON object of resource amounts when parseAmounts
// cannot.
type amounts []amount

// UnmarshalJSON reads a JSON object of integers.
func (a *amounts) UnmarshalJSON(b []byte) error {
	var m map[string]int64
	if err := json.Unmarshal(b, &m); err != nil {
		return err
	}
	for k, v := range m {
		*a = append(*a, amount{k, v})
	}
	return nil
}

// parseAmounts reads the common form of a stored resource object, as
// PostgreSQL prints a jsonb object of integers with plain names
// ({"cpu": 1000, "memory": 4096}), without a map; ok is false for any
// other form (escaped names, other spacing), which json reads instead.
func parseAmounts(raw []byte, n int) (out amounts, ok bool) {
	out = make(amounts, 0, n)
	i := 0
	skip := func() {
		for i < len(raw) && raw[i] == ' ' {
			i++
		}
	}
	skip()
	if i >= len(raw) || raw[i] != '{' {
		return nil, false
	}
	i++
	skip()
	if i < len(raw) && raw[i] == '}' {
		return out, i == len(raw)-1
	}
	for {
		skip()
		if i >= len(raw) || raw[i] != '"' {
			return nil, false
		}
		start := i + 1
		for i = start; i < len(raw) && raw[i] != '"'; i++ {
			if c := raw[i]; c == '\\' || c < 0x20 || c >= utf8.RuneSelf {
				return nil, false
			}
		}
		if i >= len(raw) {
			return nil, false
		}
		name := string(raw[start:i])
		i++
		skip()
		if i >= len(raw) || raw[i] != ':' {
			return nil, false
		}
		i++
		skip()
		start = i
		for i < len(raw) && (raw[i] == '-' || (raw[i] >= '0' && raw[i] <= '9')) {
			i++
		}
		digits := raw[start:i]
		if len(digits) > 0 && digits[0] == '-' {
			digits = digits[1:]
		}
		if len(digits) == 0 || (digits[0] == '0' && len(digits) > 1) {
			return nil, false // JSON has no leading zeros
		}
		v, err := strconv.ParseInt(string(raw[start:i]), 10, 64)
		if err != nil {
			return nil, false
		}
		out = append(out, amount{name, v})
		skip()
		if i >= len(raw) {
			return nil, false
		}
		switch raw[i] {
		case ',':
			i++
		case '}':
			return out, i == len(raw)-1
		default:
			return nil, false
		}
	}
}

// toleration is the stored form of a flotilla.Toleration.
type toleration struct {
	Key      string                      `json:"key,omitempty"`
	Operator flotilla.TolerationOperator `json:"operator,omitempty"`
	Value    string                      `json:"value,omitempty"`
	Effect   flotilla.TaintEffect        `json:"effect,omitempty"`
}

// taint is the stored form of a flotilla.Taint.
type taint struct {
	Key    string               `json:"key"`
	Value  string               `json:"value,omitempty"`
	Effect flotilla.TaintEffect `json:"effect"`
}

// node is the stored form of a flotilla.Node of an executor's report (the
// cluster is the report's).
type node struct {
	Name          string            `json:"name"`
	Labels        map[string]string `json:"labels,omitempty"`
	Taints        []taint           `json:"taints,omitempty"`
	Total         json.RawMessage   `json:"total"`
	Unschedulable bool              `json:"unschedulable,omitempty"`
}

// jsonOrNil marshals v, or returns nil (NULL) when isNil.
func jsonOrNil(isNil bool, v any) ([]byte, error) {
	if isNil {
		return nil, nil
	}
	return json.Marshal(v)
}
