package scenario

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/flotilla-sched/flotilla"
	"github.com/stretchr/testify/require"
)

func ptr[T any](v T) *T { return &v }

// baseFile is a valid scenario using only plain-number quantities, so that
// the tests do not depend on the quantity grammar beyond integers.
func baseFile() *File {
	return &File{
		Nodes:  []NodeTemplate{{Name: "node", Count: ptr(2), Resources: map[string]string{"cpu": "32", "memory": "128"}}},
		Queues: []QueueSpec{{Name: "A"}, {Name: "B"}},
		Rounds: []Round{
			{Submit: []JobTemplate{{ID: "a", Queue: "A", Count: ptr(4), Requests: map[string]string{"cpu": "1"}}}},
			{
				Submit: []JobTemplate{{ID: "b", Queue: "B", Requests: map[string]string{"cpu": "2"}}},
				Finish: []string{"a-0"},
				Cancel: []string{"a-1"},
			},
		},
	}
}

// marshal renders f as JSON so that validation tests go through Parse.
func marshal(t testing.TB, f *File) []byte {
	t.Helper()
	data, err := json.Marshal(f)
	require.NoError(t, err)
	return data
}

// leaves flattens errors.Join trees.
func leaves(err error) []error { return flotilla.Problems(err) }

// requireFieldError asserts that err holds a *flotilla.FieldError for field
// whose class is sentinel, and returns it.
func requireFieldError(t testing.TB, err error, field string, sentinel error) *flotilla.FieldError {
	t.Helper()
	require.Error(t, err)
	require.ErrorIs(t, err, sentinel)
	var seen []string
	for _, e := range leaves(err) {
		var fe *flotilla.FieldError
		if !errors.As(e, &fe) {
			continue
		}
		seen = append(seen, fmt.Sprintf("%s [%v]", fe.Field, fe.Err))
		if fe.Field == field && errors.Is(fe, sentinel) {
			return fe
		}
	}
	require.Failf(t, "no such field error", "want %s (%v); got:\n%s", field, sentinel, strings.Join(seen, "\n"))
	return nil
}

// requireAllFieldErrors asserts that every leaf of err is a *FieldError.
func requireAllFieldErrors(t testing.TB, err error) {
	t.Helper()
	for _, e := range leaves(err) {
		var fe *flotilla.FieldError
		require.True(t, errors.As(e, &fe), "not a *FieldError: %T %v", e, e)
		require.NotEmpty(t, fe.Field, "field path missing: %v", e)
	}
}

// runDoc parses, builds and runs a scenario document, failing the test when
// it does not parse or build.
func runDoc(t *testing.T, doc string) (*Output, error) {
	t.Helper()
	f, err := Parse([]byte(doc))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	b, err := f.Build()
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	return Run(context.Background(), b)
}
