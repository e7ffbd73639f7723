package server

import (
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/submit"
)

// The submit file's types (package submit), by the names this package's
// tests have always used.
type (
	SubmitRequest = submit.Request
	JobTemplate   = submit.JobTemplate
	GangSpec      = submit.GangSpec
	Toleration    = submit.Toleration
)

// testNow is the submit time of every test request.
var testNow = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)

// counter is a deterministic submit.IDSource: job-1, job-2, …; calls counts them.
type counter struct{ calls int }

func (c *counter) next() string {
	c.calls++
	return "job-" + strconv.Itoa(c.calls)
}

func intp(n int) *int { return &n }

// cpuJob is a one-cpu template.
func cpuJob() JobTemplate { return JobTemplate{Requests: map[string]string{"cpu": "1"}} }

// request wraps templates in a request for queue A, job set s1.
func request(ts ...JobTemplate) *SubmitRequest {
	return &SubmitRequest{Queue: "A", JobSet: "s1", Jobs: ts}
}

// problem is one expected problem: field, value and class.
type problem struct {
	field, value string
	class        error
}

// fieldErrors returns the problems of err, requiring each to be a
// *flotilla.FieldError.
func fieldErrors(t *testing.T, err error) []*flotilla.FieldError {
	t.Helper()
	var out []*flotilla.FieldError
	for _, e := range flotilla.Problems(err) {
		var fe *flotilla.FieldError
		require.True(t, errors.As(e, &fe), "problem %v is not a *flotilla.FieldError", e)
		out = append(out, fe)
	}
	return out
}

// requireProblems requires err to hold exactly the problems want, in any
// order, each satisfying errors.Is with its class.
func requireProblems(t *testing.T, err error, want ...problem) {
	t.Helper()
	require.Error(t, err)
	got := fieldErrors(t, err)
	require.Len(t, got, len(want), "problems: %v", err)
	for _, w := range want {
		found := false
		for _, fe := range got {
			if fe.Field == w.field && fe.Value == w.value && errors.Is(fe, w.class) {
				found = true
				break
			}
		}
		require.True(t, found, "want %s %q (%v) among:\n%v", w.field, w.value, w.class, err)
	}
}
