package httpapi_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flotilla-sched/flotilla/api"
	"github.com/flotilla-sched/flotilla/client"
	"github.com/flotilla-sched/flotilla/httpapi"
)

// A job set its queue never had is 404 naming it, for a listing of its
// events and for a cancellation, as an unknown job id is; a set whose jobs
// all ended is found; a watch may start before the set's first job.
func TestAJobSetThatNeverHadAJobIsNotFound(t *testing.T) {
	ctx := context.Background()
	s := newService(t, httpapi.Options{})
	c := s.client(t, "")
	_, err := c.CreateQueue(ctx, api.Queue{Name: "A"})
	require.NoError(t, err)

	_, err = c.Events(ctx, "A", "nosuch", 0, 0)
	require.ErrorIs(t, err, client.ErrNotFound)
	var ce *client.Error
	require.True(t, errors.As(err, &ce))
	require.Len(t, ce.Body.Problems, 1)
	assert.Equal(t, api.Problem{Field: "jobSet", Value: "nosuch", Error: "not found: queue A has no job set of that name"}, ce.Body.Problems[0])

	_, err = c.CancelJobSet(ctx, "A", "nosuch")
	require.ErrorIs(t, err, client.ErrNotFound)
	assert.Contains(t, err.Error(), "nosuch")

	ids, err := c.Submit(ctx, []byte(`{"queue": "A", "jobSet": "s1", "jobs": [{"requests": {"cpu": "1"}}]}`))
	require.NoError(t, err)
	_, err = c.Cancel(ctx, ids...)
	require.NoError(t, err)
	evs, err := c.Events(ctx, "A", "s1", 0, 0)
	require.NoError(t, err, "a set whose jobs ended is found")
	require.Len(t, evs, 2)
	res, err := c.CancelJobSet(ctx, "A", "s1")
	require.NoError(t, err, "a set whose jobs ended is found")
	assert.Empty(t, res.Cancelled)

	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	req, err := http.NewRequestWithContext(wctx, http.MethodGet, s.url+"/v1/queues/A/jobsets/later/events?watch=true", nil)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode, "a watch may start before the set's first job")
	cancel()
	_, _ = io.Copy(io.Discard, resp.Body)
}
