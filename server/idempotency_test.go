package server

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestResubmittedClientIDsNameTheExistingJobsAndOnlyTheNewJobsAreStored(t *testing.T) {
	w := newWorld(t)
	w.queue("A")
	first := w.submit("A", "s1", JobTemplate{Count: intp(2), Requests: map[string]string{"cpu": "1"}, ClientID: "c"})
	require.Len(t, first, 2)
	for _, tc := range []struct {
		name string
		ts   []JobTemplate
		want func(ids []string) []string // the ids expected, from the reply
	}{
		{"used ids first", []JobTemplate{
			{Count: intp(3), Requests: map[string]string{"cpu": "1"}, ClientID: "c"},
		}, func(ids []string) []string { return append(append([]string{}, first...), ids[2]) }},
		{"a new id first", []JobTemplate{
			{Requests: map[string]string{"cpu": "1"}, ClientID: "x"},
			{Count: intp(2), Requests: map[string]string{"cpu": "1"}, ClientID: "c"},
		}, func(ids []string) []string { return append([]string{ids[0]}, first...) }},
		{"all used", []JobTemplate{
			{Count: intp(2), Requests: map[string]string{"cpu": "1"}, ClientID: "c"},
		}, func([]string) []string { return first }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := w.srv.store.Len()
			ids := w.submit("A", "s1", tc.ts...)
			require.Equal(t, tc.want(ids), ids)
			fresh := 0
			for _, id := range ids {
				if id != first[0] && id != first[1] {
					fresh++
					require.Equal(t, "queued", w.state(id).String())
				}
			}
			require.Equal(t, before+fresh, w.srv.store.Len(), "only the new jobs are stored")
		})
	}
}
