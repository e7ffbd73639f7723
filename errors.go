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
