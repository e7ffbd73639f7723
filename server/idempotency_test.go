package server

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flotilla-sched/flotilla/backend"
	"github.com/flotilla-sched/flotilla/backend/memory"
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
			before := w.srv.st.queued.store.Len()
			ids := w.submit("A", "s1", tc.ts...)
			require.Equal(t, tc.want(ids), ids)
			fresh := 0
			for _, id := range ids {
				if id != first[0] && id != first[1] {
					fresh++
					require.Equal(t, "queued", w.state(id).String())
				}
			}
			require.Equal(t, before+fresh, w.srv.st.queued.store.Len(), "only the new jobs are stored")
		})
	}
}

// countingBackend counts the per-job client id look-ups it is asked.
type countingBackend struct {
	*memory.Backend
	single int
}

func (b *countingBackend) JobByClientID(ctx context.Context, queue, clientID string) (string, error) {
	b.single++
	return b.Backend.JobByClientID(ctx, queue, clientID)
}

// perJobBackend hides the memory backend's backend.ClientIDLookup.
type perJobBackend struct{ backend.Backend }

// TestSubmitLooksUpAllClientIDsOfARequestInOneCallWhenTheBackendCan: a
// backend that implements backend.ClientIDLookup is asked once per
// request, not once per job (JobByClientID); one that does not is asked
// per job; both find the used client ids.
func TestSubmitLooksUpAllClientIDsOfARequestInOneCallWhenTheBackendCan(t *testing.T) {
	for _, batch := range []bool{true, false} {
		var counting *countingBackend
		w := newWorld(t, func(c *Config) {
			counting = &countingBackend{Backend: c.Backend.(*memory.Backend)}
			c.Backend = counting
			if !batch {
				c.Backend = perJobBackend{counting}
			}
		})
		w.queue("A")
		first := w.submit("A", "s1", JobTemplate{Count: intp(3), Requests: map[string]string{"cpu": "1"}, ClientID: "c"})
		again := w.submit("A", "s1", JobTemplate{Count: intp(4), Requests: map[string]string{"cpu": "1"}, ClientID: "c"})
		require.Equal(t, first, again[:3], "batch %v", batch)
		require.NotContains(t, first, again[3])
		want := 0
		if !batch {
			want = 7
		}
		require.Equal(t, want, counting.single, "JobByClientID calls, batch %v", batch)
	}
}
