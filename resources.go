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
// scheduler, and the Unit each entry counts. It is immutable after
// construction and safe for concurrent use.
type ResourceSchema struct {
	names []string
	units []Unit
	index map[string]int
}

// NewResourceSchema returns a schema over the given resource names, in order,
// each in its DefaultUnit: cpu in milli-units, every other resource in whole
// units (bytes of memory, GPUs). Names must be non-empty and distinct.
func NewResourceSchema(names ...string) (*ResourceSchema, error) {
	specs := make([]ResourceSpec, len(names))
	for i, n := range names {
		specs[i] = ResourceSpec{Name: n, Unit: DefaultUnit(n)}
	}
	return NewResourceSchemaOf(specs...)
}

// ResourceSpec is one resource of a schema: its name and the Unit its vector
// entries count.
type ResourceSpec struct {
	Name string
	Unit Unit
}

// NewResourceSchemaOf returns a schema over the given resources, in order,
// for units other than the default ones (a resource counted in milli-units
// that is not cpu, say). Names must be non-empty and distinct, units
// UnitMilli or UnitWhole; every problem is reported, joined.
func NewResourceSchemaOf(resources ...ResourceSpec) (*ResourceSchema, error) {
	s := &ResourceSchema{
		names: make([]string, len(resources)),
		units: make([]Unit, len(resources)),
		index: make(map[string]int, len(resources)),
	}
	var errs []error
	for i, r := range resources {
		field := fmt.Sprintf("resources[%d]", i)
		s.names[i], s.units[i] = r.Name, r.Unit
		switch _, dup := s.index[r.Name]; {
		case r.Name == "":
			errs = append(errs, Errorf(field, r.Name, ErrRequired, ""))
		case dup:
			errs = append(errs, Errorf(field, r.Name, ErrDuplicate, ""))
		default:
			s.index[r.Name] = i
		}
		if !r.Unit.valid() {
			errs = append(errs, Errorf(field+".unit", r.Unit.String(), ErrOutOfRange, "want UnitMilli or UnitWhole"))
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
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

// Unit is the unit of resource i: what one count of entry i of a vector is.
func (s *ResourceSchema) Unit(i int) Unit { return s.units[i] }

// Quantity renders v, a value of resource i in its unit, as the canonical
// Kubernetes quantity ("500m", "4Gi"); ParseQuantity(i, …) reads it back.
func (s *ResourceSchema) Quantity(i int, v int64) string { return s.units[i].Format(v) }

// ParseQuantity reads a Kubernetes quantity as a value of resource i in its
// unit, rounding up what is finer than the unit (Unit.Parse). Errors are
// *FieldError with Field "quantity".
func (s *ResourceSchema) ParseQuantity(i int, q string) (int64, error) { return s.units[i].Parse(q) }

// Names returns a copy of the resource names in order.
func (s *ResourceSchema) Names() []string { return slices.Clone(s.names) }

// Index returns the position of a resource name.
func (s *ResourceSchema) Index(name string) (int, bool) {
	i, ok := s.index[name]
	return i, ok
}

// Zero returns a new all-zero vector of this schema.
func (s *ResourceSchema) Zero() Resources { return make(Resources, len(s.names)) }

// Parse turns a map of resource name to Kubernetes quantity into a vector,
// each value in its resource's unit (ParseQuantity). field prefixes error
// paths (e.g. "jobs[2].requests"). Unknown names, malformed quantities and
// negative values are all reported, joined.
func (s *ResourceSchema) Parse(field string, m map[string]string) (Resources, error) {
	r := s.Zero()
	var errs []error
	for _, name := range sortedKeys(m) {
		q := m[name]
		f := keyPath(field, name)
		i, ok := s.index[name]
		if !ok {
			errs = append(errs, Errorf(f, name, ErrUnknownResource, "known: %s", strings.Join(s.names, ", ")))
			continue
		}
		v, err := s.ParseQuantity(i, q)
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

// ParsePartial is Parse for a quota vector (Queue.Guaranteed and the like),
// where a resource the map leaves out is not given: its entry is Absent. An
// empty map gives nil (nothing given).
func (s *ResourceSchema) ParsePartial(field string, m map[string]string) (Resources, error) {
	if len(m) == 0 {
		return nil, nil
	}
	r, err := s.Parse(field, m)
	if err != nil {
		return nil, err
	}
	for i, name := range s.names {
		if _, ok := m[name]; !ok {
			r[i] = Absent
		}
	}
	return r, nil
}

// FormatPartial is Format for a quota vector: Absent entries are left out,
// zeros kept (a guarantee or limit of 0 is given).
func (s *ResourceSchema) FormatPartial(r Resources) map[string]string {
	out := make(map[string]string, len(r))
	for i, v := range r {
		if v != Absent {
			out[s.names[i]] = s.Quantity(i, v)
		}
	}
	return out
}

// MustParse is Parse for literals known to be valid; it panics otherwise.
func (s *ResourceSchema) MustParse(m map[string]string) Resources {
	r, err := s.Parse("resources", m)
	if err != nil {
		panic(err)
	}
	return r
}

// Format renders a vector as name=quantity pairs, zeros omitted, each value
// in its resource's unit (Quantity).
func (s *ResourceSchema) Format(r Resources) map[string]string {
	out := make(map[string]string, len(r))
	for i, v := range r {
		if v != 0 {
			out[s.names[i]] = s.Quantity(i, v)
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
		b.WriteString(s.Quantity(i, v))
	}
	if b.Len() == 0 {
		return "none"
	}
	return b.String()
}

// Resources is a dense vector laid out by a ResourceSchema: entry i is an
// amount of resource i counted in the schema's Unit(i) (milli-cpu, bytes of
// memory, whole GPUs by default).
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
