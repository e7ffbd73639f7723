package submit

import (
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/backend"
	"github.com/flotilla-sched/flotilla/gang"
)

// testNow is the submit time of every test request.
var testNow = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)

func testCatalog() *Catalog {
	return &Catalog{
		Schema:               flotilla.MustResourceSchema("cpu", "memory", DefaultGPUResource),
		PriorityClasses:      flotilla.DefaultPriorityClasses(),
		DefaultPriorityClass: flotilla.ArmadaDefault,
	}
}

// counter is a deterministic IDSource: job-1, job-2, …; calls counts them.
type counter struct{ calls int }

func (c *counter) next() string {
	c.calls++
	return "job-" + strconv.Itoa(c.calls)
}

func intp(n int) *int { return &n }

// cpuJob is a one-cpu template.
func cpuJob() JobTemplate { return JobTemplate{Requests: map[string]string{"cpu": "1"}} }

// request wraps templates in a request for queue A, job set s1.
func request(ts ...JobTemplate) *Request {
	return &Request{Queue: "A", JobSet: "s1", Jobs: ts}
}

// submit runs the default rules on req.
func submit(req *Request) ([]backend.JobSpec, error) {
	var c counter
	return Rules{}.Jobs(req, testCatalog(), testNow, c.next)
}

// accept requires req to be accepted and returns its jobs.
func accept(t *testing.T, req *Request) []backend.JobSpec {
	t.Helper()
	specs, err := submit(req)
	require.NoError(t, err)
	return specs
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

// reject requires req to be rejected with exactly the problems want, no
// jobs, and no id drawn.
func reject(t *testing.T, req *Request, want ...problem) {
	t.Helper()
	var c counter
	specs, err := Rules{}.Jobs(req, testCatalog(), testNow, c.next)
	require.Nil(t, specs)
	require.Zero(t, c.calls, "ids drawn for a rejected request")
	requireProblems(t, err, want...)
}

// gangCheck runs the library's gang rule over accepted jobs.
func gangCheck(specs []backend.JobSpec) error {
	jobs := make([]*flotilla.Job, len(specs))
	for i := range specs {
		jobs[i] = specs[i].Job
	}
	return gang.ValidateSubmission(jobs, nil)
}
