package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/api"
	"github.com/flotilla-sched/flotilla/httpapi"
)

// TestNamesNoPathCanReachOrNotUTF8AreRefusedAtCreationNamingTheField: a
// queue or job set named "." or ".." was accepted and then unreachable
// (events, watch and queue delete got 404: the router cleans the path),
// and "q\xff" and "q\xfe" both became the queue "q\uFFFD". Each is now a
// 400 whose problems name the field, and nothing is stored.
func TestNamesNoPathCanReachOrNotUTF8AreRefusedAtCreationNamingTheField(t *testing.T) {
	s := newService(t, httpapi.Options{})
	ctx := context.Background()
	require.NoError(t, s.srv.CreateQueue(ctx, flotilla.Queue{Name: "A"}))
	post := func(path string, body []byte) api.Error {
		t.Helper()
		resp, err := http.Post(s.url+path, "application/json", bytes.NewReader(body))
		require.NoError(t, err)
		defer resp.Body.Close()
		require.Equal(t, http.StatusBadRequest, resp.StatusCode, "%s %q", path, body)
		var e api.Error
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&e))
		require.Len(t, e.Problems, 1, e.Error)
		return e
	}
	for _, name := range []string{".", "..", "q\xff", "q\xfe", strings.Repeat("q", 254)} {
		e := post("/v1/queues", []byte(`{"name": "`+name+`"}`))
		require.True(t, e.Problems[0].Field == "name" || strings.HasSuffix(e.Problems[0].Field, ".name"), e.Error)
		e = post("/v1/jobs", []byte(`{"queue": "A", "jobSet": "`+name+`", "jobs": [{"requests": {"cpu": "1"}}]}`))
		require.Equal(t, "jobSet", e.Problems[0].Field, e.Error)
		e = post("/v1/clusters/"+strings.ReplaceAll(name, ".", "%2E")+"/report", []byte(`{"nodes": []}`))
		require.Equal(t, "cluster", e.Problems[0].Field, e.Error)
	}
	qs, err := s.be.ListQueues(ctx)
	require.NoError(t, err)
	require.Len(t, qs, 1, "only A")
	evs, err := s.be.Events(ctx, "A", "s", 0, 0)
	require.NoError(t, err)
	require.Empty(t, evs)
}
