package flotilla

import (
	"errors"
	"fmt"
)

// Sentinel errors classify validation failures. Every error returned by a
// validator in Flotilla wraps one of these inside a *FieldError, so callers can
// test the class with errors.Is and recover the field and value with errors.As.
var (
	ErrRequired        = errors.New("is required")
	ErrMalformed       = errors.New("is malformed")
	ErrNegative        = errors.New("must not be negative")
	ErrOutOfRange      = errors.New("is out of range")
	ErrUnknownResource = errors.New("names an unknown resource")
	ErrUnknownName     = errors.New("names nothing known")
	ErrDuplicate       = errors.New("is a duplicate")
	ErrInconsistent    = errors.New("disagrees with another field")
	// ErrUnsupported marks input that is well formed but asks for something
	// Flotilla cannot do (e.g. a field of a foreign format with no
	// counterpart here).
	ErrUnsupported = errors.New("is not supported")
)

// FieldError reports one bad value: Field is a path such as
// "jobs[3].requests.cpu", Value the offending input as the user wrote it, and
// Err the class (one of the sentinels above, possibly wrapped with detail).
type FieldError struct {
	Field string
	Value string
	Err   error
}

func (e *FieldError) Error() string {
	return fmt.Sprintf("%s %q: %v", e.Field, e.Value, e.Err)
}

// Unwrap returns the class of the error, for errors.Is.
func (e *FieldError) Unwrap() error { return e.Err }

// Errorf builds a *FieldError whose class is err with optional detail appended.
// The result still satisfies errors.Is(result, err).
func Errorf(field, value string, err error, detailFormat string, args ...any) *FieldError {
	if detailFormat == "" {
		return &FieldError{Field: field, Value: value, Err: err}
	}
	return &FieldError{Field: field, Value: value, Err: fmt.Errorf("%w: "+detailFormat, append([]any{err}, args...)...)}
}

// Problems lists the problems inside err: the leaves of an errors.Join tree
// (joins nested in joins included), in order; err itself when it joins
// nothing; nil for nil. Validators report every problem at once as a join,
// and this is how a caller walks them.
func Problems(err error) []error {
	if err == nil {
		return nil
	}
	j, ok := err.(interface{ Unwrap() []error })
	if !ok {
		return []error{err}
	}
	var out []error
	for _, e := range j.Unwrap() {
		out = append(out, Problems(e)...)
	}
	return out
}

// RenameFields returns the problems of err (see Problems), flat in one
// errors.Join, with the Field of each *FieldError among them replaced by
// rename(Field); class (errors.Is) and value are kept, and other problems
// pass unchanged. A caller that validates a part of a larger document uses
// it to put the part's paths in the document's terms. nil gives nil.
func RenameFields(err error, rename func(field string) string) error {
	ps := Problems(err)
	for i, e := range ps {
		if fe, ok := e.(*FieldError); ok {
			ps[i] = &FieldError{Field: rename(fe.Field), Value: fe.Value, Err: fe.Err}
		}
	}
	return errors.Join(ps...)
}
