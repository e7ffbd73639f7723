package flotilla

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
)

// ResourceSchema fixes the order of resources in every Resources vector of one
// scheduler. It is immutable after construction and safe for concurrent use.
type ResourceSchema struct {
	names []string
	index map[string]int
}

// NewResourceSchema returns a schema over the given resource names, in order.
// Names must be non-empty and distinct.
func NewResourceSchema(names ...string) (*ResourceSchema, error) {
	s := &ResourceSchema{names: slices.Clone(names), index: make(map[string]int, len(names))}
	for i, n := range names {
		field := fmt.Sprintf("resources[%d]", i)
		if n == "" {
			return nil, Errorf(field, n, ErrRequired, "")
		}
		if _, dup := s.index[n]; dup {
			return nil, Errorf(field, n, ErrDuplicate, "")
		}
		s.index[n] = i
	}
	return s, nil
}

// MustResourceSchema is NewResourceSchema for names known to be valid; it
// panics otherwise. Use it for literals in programs and tests.
func MustResourceSchema(names ...string) *ResourceSchema {
	s, err := NewResourceSchema(names...)
	if err != nil {
		panic(err)
	}
	return s
}

// Len is the number of resources, the length of every vector of this schema.
func (s *ResourceSchema) Len() int { return len(s.names) }

// Name is the name of resource i.
func (s *ResourceSchema) Name(i int) string { return s.names[i] }

// Names returns a copy of the resource names in order.
func (s *ResourceSchema) Names() []string { return slices.Clone(s.names) }

// Index returns the position of a resource name.
func (s *ResourceSchema) Index(name string) (int, bool) {
	i, ok := s.index[name]
	return i, ok
}

// Zero returns a new all-zero vector of this schema.
func (s *ResourceSchema) Zero() Resources { return make(Resources, len(s.names)) }

// Parse turns a map of resource name to Kubernetes quantity into a vector.
// field prefixes error paths (e.g. "jobs[2].requests"). Unknown names,
// malformed quantities and negative values are all reported, joined.
func (s *ResourceSchema) Parse(field string, m map[string]string) (Resources, error) {
	r := s.Zero()
	var errs []error
	for _, name := range sortedKeys(m) {
		q := m[name]
		f := field + "." + name
		i, ok := s.index[name]
		if !ok {
			errs = append(errs, Errorf(f, name, ErrUnknownResource, "known: %s", strings.Join(s.names, ", ")))
			continue
		}
		v, err := ParseQuantity(q)
		if err != nil {
			errs = append(errs, &FieldError{Field: f, Value: q, Err: err})
			continue
		}
		if v < 0 {
			errs = append(errs, Errorf(f, q, ErrNegative, ""))
			continue
		}
		r[i] = v
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return r, nil
}

// MustParse is Parse for literals known to be valid; it panics otherwise.
func (s *ResourceSchema) MustParse(m map[string]string) Resources {
	r, err := s.Parse("resources", m)
	if err != nil {
		panic(err)
	}
	return r
}

// Format renders a vector as name=quantity pairs in schema order, zeros omitted.
func (s *ResourceSchema) Format(r Resources) map[string]string {
	out := make(map[string]string, len(r))
	for i, v := range r {
		if v != 0 {
			out[s.names[i]] = FormatQuantity(v)
		}
	}
	return out
}

// String renders a vector for people: "cpu=4 memory=16Gi".
func (s *ResourceSchema) String(r Resources) string {
	var b strings.Builder
	for i, v := range r {
		if v == 0 {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(s.names[i])
		b.WriteByte('=')
		b.WriteString(FormatQuantity(v))
	}
	if b.Len() == 0 {
		return "none"
	}
	return b.String()
}

// Resources is a dense vector of milli-units laid out by a ResourceSchema.
// Methods that take a second vector require equal lengths; they never
// allocate unless their name says so (Clone).
type Resources []int64

// Clone returns a copy.
func (r Resources) Clone() Resources { return slices.Clone(r) }

// Add sets r += o.
func (r Resources) Add(o Resources) {
	for i := range r {
		r[i] += o[i]
	}
}

// Sub sets r -= o.
func (r Resources) Sub(o Resources) {
	for i := range r {
		r[i] -= o[i]
	}
}

// Fits reports whether r ≤ avail in every resource.
func (r Resources) Fits(avail Resources) bool {
	for i, v := range r {
		if v > avail[i] {
			return false
		}
	}
	return true
}

// Equal reports element-wise equality.
func (r Resources) Equal(o Resources) bool { return slices.Equal(r, o) }

// IsZero reports whether every entry is zero.
func (r Resources) IsZero() bool {
	for _, v := range r {
		if v != 0 {
			return false
		}
	}
	return true
}

// AnyNegative reports whether some entry is below zero.
func (r Resources) AnyNegative() bool {
	for _, v := range r {
		if v < 0 {
			return true
		}
	}
	return false
}

// ShortOf returns the index of the first resource in which r exceeds avail,
// or -1 when r fits.
func (r Resources) ShortOf(avail Resources) int {
	for i, v := range r {
		if v > avail[i] {
			return i
		}
	}
	return -1
}

// AddChecked sets r += o and reports false, leaving r unchanged, if any entry
// would overflow int64.
func (r Resources) AddChecked(o Resources) bool {
	for i := range r {
		if (o[i] > 0 && r[i] > math.MaxInt64-o[i]) || (o[i] < 0 && r[i] < math.MinInt64-o[i]) {
			return false
		}
	}
	r.Add(o)
	return true
}

// AddSaturating sets r += o, clamping each entry to the int64 range
// instead of wrapping: for sums (demand, capacity) that may exceed it.
func (r Resources) AddSaturating(o Resources) {
	for i, v := range o {
		switch {
		case v > 0 && r[i] > math.MaxInt64-v:
			r[i] = math.MaxInt64
		case v < 0 && r[i] < math.MinInt64-v:
			r[i] = math.MinInt64
		default:
			r[i] += v
		}
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
