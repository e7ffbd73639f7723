package submit

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/backend"
)

func TestCountExpandsATemplateIntoCountJobsWithClientIDsSuffixedByIndex(t *testing.T) {
	a := cpuJob()
	a.Count, a.ClientID = intp(3), "train-7"
	b := cpuJob()
	b.ClientID = "solo"
	none := cpuJob()
	none.Count = intp(0)
	anon := cpuJob()
	anon.Count = intp(2)
	specs := accept(t, request(a, none, b, anon))
	var got []string
	for _, s := range specs {
		got = append(got, s.ClientID)
	}
	require.Equal(t, []string{"train-7-0", "train-7-1", "train-7-2", "solo", "", ""}, got)
	require.Equal(t, []string{"job-1", "job-2", "job-3", "job-4", "job-5", "job-6"}, ids(specs))
}

func ids(specs []backend.JobSpec) []string {
	var out []string
	for _, s := range specs {
		out = append(out, s.Job.ID)
	}
	return out
}

func TestCountNegativeOrAboveMaxJobsPerRequestIsRejected(t *testing.T) {
	neg := cpuJob()
	neg.Count = intp(-1)
	reject(t, request(neg), problem{"jobs[0].count", "-1", flotilla.ErrNegative})
	huge := cpuJob()
	huge.Count = intp(1 << 40)
	reject(t, request(huge), problem{"jobs[0].count", "1099511627776", flotilla.ErrOutOfRange})

	// The limit is on the request's total: the template that crosses it is named.
	a, b := cpuJob(), cpuJob()
	a.Count, b.Count = intp(3), intp(2)
	var c counter
	_, err := Rules{MaxJobsPerRequest: 4}.Jobs(request(a, b), testCatalog(), testNow, c.next)
	requireProblems(t, err, problem{"jobs[1].count", "2", flotilla.ErrOutOfRange})
	b.Count = intp(1)
	specs, err := Rules{MaxJobsPerRequest: 4}.Jobs(request(a, b), testCatalog(), testNow, c.next)
	require.NoError(t, err)
	require.Len(t, specs, 4)
}

func TestDuplicateClientIDWithinARequestIsRejected(t *testing.T) {
	a, b := cpuJob(), cpuJob()
	a.ClientID, b.ClientID = "x", "x"
	reject(t, request(a, b), problem{"jobs[1].clientId", "x", flotilla.ErrDuplicate})

	// After expansion: x with count 2 makes x-1, which the next template also names.
	a.Count, b.ClientID = intp(2), "x-1"
	reject(t, request(a, b), problem{"jobs[1].clientId", "x-1", flotilla.ErrDuplicate})
}
