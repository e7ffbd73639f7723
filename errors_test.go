package flotilla

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestProblemsFlattensNestedJoinsInOrder(t *testing.T) {
	a, b, c := errors.New("a"), Errorf("x", "1", ErrNegative, ""), errors.New("c")
	assert.Nil(t, Problems(nil))
	assert.Equal(t, []error{a}, Problems(a))
	assert.Equal(t, []error{a, b, c}, Problems(errors.Join(a, errors.Join(b, errors.Join(c)))))
	wrapped := fmt.Errorf("file: %w", errors.Join(a, b))
	assert.Equal(t, []error{wrapped}, Problems(wrapped), "a wrapped join is one problem: its context would be lost")
}

func TestRenameFieldsKeepsClassValueAndOtherProblems(t *testing.T) {
	other := errors.New("not a field problem")
	err := errors.Join(Errorf(`queue "A".priorityFactor`, "-1", ErrNegative, ""), other,
		errors.Join(Errorf(`queue "A".name`, "", ErrRequired, "")))
	got := RenameFields(err, func(f string) string { return strings.Replace(f, `queue "A"`, "queues[3]", 1) })
	ps := Problems(got)
	require.Len(t, ps, 3)
	var fe *FieldError
	require.ErrorAs(t, ps[0], &fe)
	assert.Equal(t, "queues[3].priorityFactor", fe.Field)
	assert.Equal(t, "-1", fe.Value)
	assert.ErrorIs(t, ps[0], ErrNegative)
	assert.Same(t, other, ps[1])
	require.ErrorAs(t, ps[2], &fe)
	assert.Equal(t, "queues[3].name", fe.Field)
	assert.ErrorIs(t, got, ErrRequired)
	assert.NoError(t, RenameFields(nil, strings.ToUpper))
}
