package gang_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/gang"
)

// gangJobs is a request of n members of gang id in queue A.
func gangJobs(id string, n, card int) []*flotilla.Job {
	jobs := make([]*flotilla.Job, n)
	for i := range jobs {
		jobs[i] = &flotilla.Job{ID: fmt.Sprintf("%s-%d", id, i), Queue: "A", Requests: cores(1),
			Gang: flotilla.Gang{ID: id, Cardinality: card, NodeUniformityLabel: "rack"}}
	}
	return jobs
}

func TestValidateSubmission(t *testing.T) {
	usedIDs := map[string]bool{"old": true}
	used := func(id string) bool { return usedIDs[id] }

	t.Run("valid", func(t *testing.T) {
		jobs := gangJobs("g", 32, 32)
		// A gang of 31 priority-1 members and one priority-0 member is legal.
		jobs[31].PriorityClass = flotilla.ArmadaPreemptible
		jobs[31].Priority = 9
		jobs = append(jobs, &flotilla.Job{ID: "lone", Queue: "B"})
		jobs = append(jobs, gangJobs("h", 1, 1)...)
		require.NoError(t, gang.ValidateSubmission(jobs, used))
		require.NoError(t, gang.ValidateSubmission(jobs, nil))
		require.NoError(t, gang.ValidateSubmission(nil, used))
	})

	type want struct {
		class        error
		field, value string
		detail       string
	}
	for name, tc := range map[string]struct {
		jobs func() []*flotilla.Job
		want []want
	}{
		"reused id": {
			func() []*flotilla.Job { return gangJobs("old", 2, 2) },
			[]want{{flotilla.ErrDuplicate, `gang "old".id`, "old", "already used"}},
		},
		"too few members": {
			func() []*flotilla.Job { return gangJobs("g", 3, 4) },
			[]want{{flotilla.ErrInconsistent, `gang "g".cardinality`, "4", "the request holds 3 members"}},
		},
		"too many members": {
			func() []*flotilla.Job { return gangJobs("g", 3, 2) },
			[]want{{flotilla.ErrInconsistent, `gang "g".cardinality`, "2", "the request holds 3 members"}},
		},
		"zero cardinality": {
			func() []*flotilla.Job { return gangJobs("g", 1, 0) },
			[]want{{flotilla.ErrOutOfRange, `gang "g".cardinality`, "0", "at least 1"}},
		},
		"members disagree": {
			func() []*flotilla.Job {
				j := gangJobs("g", 3, 3)
				j[1].Gang.Cardinality = 2
				j[2].Queue = "B"
				j[2].Gang.NodeUniformityLabel = "zone"
				return j
			},
			[]want{
				{flotilla.ErrInconsistent, `gang "g".cardinality`, "2", `job "g-1" says 2, job "g-0" says 3`},
				{flotilla.ErrInconsistent, `gang "g".queue`, "B", `job "g-2" is in queue "B", job "g-0" in "A"`},
				{flotilla.ErrInconsistent, `gang "g".nodeUniformityLabel`, "zone", `job "g-2" says "zone", job "g-0" says "rack"`},
			},
		},
		"every problem of every gang": {
			func() []*flotilla.Job {
				j := append(gangJobs("old", 1, 2), nil)
				return append(j, gangJobs("g", 2, 3)...)
			},
			[]want{
				{flotilla.ErrRequired, "jobs[1]", "", "nil job"},
				{flotilla.ErrInconsistent, `gang "old".cardinality`, "2", "holds 1 members"},
				{flotilla.ErrDuplicate, `gang "old".id`, "old", ""},
				{flotilla.ErrInconsistent, `gang "g".cardinality`, "3", "holds 2 members"},
			},
		},
	} {
		t.Run(name, func(t *testing.T) {
			err := gang.ValidateSubmission(tc.jobs(), used)
			require.Error(t, err)
			joined, ok := err.(interface{ Unwrap() []error })
			require.True(t, ok, "errors.Join")
			errs := joined.Unwrap()
			require.Len(t, errs, len(tc.want), err.Error())
			for i, w := range tc.want {
				var fe *flotilla.FieldError
				require.True(t, errors.As(errs[i], &fe))
				assert.ErrorIs(t, fe, w.class)
				assert.Equal(t, w.field, fe.Field)
				assert.Equal(t, w.value, fe.Value)
				assert.Contains(t, fe.Error(), w.detail)
			}
		})
	}
}
