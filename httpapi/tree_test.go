package httpapi_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/api"
	"github.com/flotilla-sched/flotilla/client"
	"github.com/flotilla-sched/flotilla/httpapi"
)

// treeService is a service with the tree research{cpu 16} > vision{cpu
// 8}, and adhoc at the root.
func treeService(t *testing.T, opts httpapi.Options) *service {
	t.Helper()
	s := newService(t, opts)
	ctx := context.Background()
	schema := s.srv.Schema()
	cpu := func(q string) flotilla.Resources {
		r, err := schema.ParsePartial("quota", map[string]string{"cpu": q})
		require.NoError(t, err)
		return r
	}
	require.NoError(t, s.srv.CreateGroup(ctx, flotilla.QueueGroup{Name: "research", Guaranteed: cpu("16")}))
	require.NoError(t, s.srv.CreateQueue(ctx, flotilla.Queue{Name: "vision", Parent: "research", Guaranteed: cpu("8")}))
	require.NoError(t, s.srv.CreateQueue(ctx, flotilla.Queue{Name: "adhoc"}))
	return s
}

// A request that would leave the queue tree invalid is refused with 400
// naming each problem's field and value (409 for a name taken or a group
// with children, 404 for an unknown group), and changes nothing.
func TestTreeRequestsThatWouldMakeTheTreeInvalidAreRefusedNamingFieldAndValue(t *testing.T) {
	type fv struct{ field, value string }
	cases := []struct {
		name, method, path, body string
		code                     int
		want                     []fv
	}{
		{"unknown parent", "POST", "/v1/queues", `{"name": "nlp", "parent": "nope"}`, 400, []fv{{`queue "nlp".parent`, "nope"}}},
		{"malformed quota", "POST", "/v1/queues", `{"name": "nlp", "guaranteed": {"cpu": "lots"}}`, 400, []fv{{`queue "nlp".guaranteed.cpu`, "lots"}}},
		{"unknown resource", "POST", "/v1/queues", `{"name": "nlp", "limit": {"gpu": "1"}}`, 400, []fv{{`queue "nlp".limit.gpu`, "gpu"}}},
		{"limit below guarantee", "PUT", "/v1/queues/vision", `{"parent": "research", "guaranteed": {"cpu": "8"}, "limit": {"cpu": "4"}}`, 400,
			[]fv{{`queue "vision".limit.cpu`, "4"}}},
		{"parent is a queue", "POST", "/v1/groups", `{"name": "g", "parent": "adhoc"}`, 400, []fv{{`group "g".parent`, "adhoc"}}},
		{"guarantee below the children's", "PUT", "/v1/groups/research", `{"guaranteed": {"cpu": "4"}}`, 400,
			[]fv{{`group "research".guaranteed.cpu`, "4"}}},
		{"lending limit above guarantee", "POST", "/v1/groups", `{"name": "g", "lendingLimit": {"memory": "1Gi"}}`, 400,
			[]fv{{`group "g".lendingLimit.memory`, "1Gi"}}},
		{"own parent", "PUT", "/v1/groups/research", `{"parent": "research", "guaranteed": {"cpu": "16"}}`, 400,
			[]fv{{`group "research".parent`, "research"}}},
		{"bad factor and quota at once", "POST", "/v1/groups", `{"name": "g", "priorityFactor": -1, "limit": {"cpu": "-2"}}`, 400,
			[]fv{{`group "g".limit.cpu`, "-2"}}},
		{"name of another group in the path", "PUT", "/v1/groups/research", `{"name": "other"}`, 400, []fv{{"name", "other"}}},
		{"group with children", "DELETE", "/v1/groups/research", ``, 409, []fv{{"group", "research"}}},
		{"group named as a queue", "POST", "/v1/groups", `{"name": "adhoc"}`, 409, []fv{{"group", "adhoc"}}},
		{"unknown group", "PUT", "/v1/groups/nope", `{}`, 404, []fv{{"group", "nope"}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := treeService(t, httpapi.Options{})
			before := treeOf(t, s)
			req, err := http.NewRequest(c.method, s.url+c.path, strings.NewReader(c.body))
			require.NoError(t, err)
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			require.Equal(t, c.code, resp.StatusCode, "%s", body)
			var e api.Error
			require.NoError(t, json.Unmarshal(body, &e))
			var got []fv
			for _, p := range e.Problems {
				got = append(got, fv{p.Field, p.Value})
			}
			for _, w := range c.want {
				require.Contains(t, got, w, "%s", body)
			}
			require.Equal(t, before, treeOf(t, s), "a refused request changes nothing")
		})
	}
}

// Groups and the queues' tree fields go through the API and back in the
// wire form (quantities as given, resources not given left out).
func TestGroupsAndQueueTreeFieldsRoundTripThroughTheHTTPAPI(t *testing.T) {
	ctx := context.Background()
	s := newService(t, httpapi.Options{})
	c := s.client(t, "")
	g, err := c.CreateGroup(ctx, api.Group{Name: "research", PriorityFactor: 2, Guaranteed: map[string]string{"cpu": "16"},
		Limit: map[string]string{"cpu": "24", "memory": "64Gi"}, LendingLimit: map[string]string{"cpu": "8"}})
	require.NoError(t, err)
	require.Equal(t, map[string]string{"cpu": "24", "memory": "64Gi"}, g.Limit)
	require.NotNil(t, g.Status)
	q, err := c.CreateQueue(ctx, api.Queue{Name: "nlp", Parent: "research", PriorityFactor: 0.5, Guaranteed: map[string]string{"cpu": "4"},
		Limit: map[string]string{"memory": "0"}})
	require.NoError(t, err)
	require.Equal(t, "research", q.Parent)
	require.Equal(t, map[string]string{"cpu": "4"}, q.Guaranteed)
	require.Equal(t, map[string]string{"memory": "0"}, q.Limit, "a limit of 0 is given")
	require.Nil(t, q.LendingLimit)
	_, err = c.CreateGroup(ctx, api.Group{Name: "prod"})
	require.NoError(t, err)
	_, err = c.UpdateGroup(ctx, api.Group{Name: "prod", Parent: "research"})
	require.NoError(t, err)
	gs, err := c.ListGroups(ctx)
	require.NoError(t, err)
	require.Len(t, gs, 2)
	require.Equal(t, "prod", gs[0].Name)
	require.Equal(t, "research", gs[0].Parent)
	require.Equal(t, 2.0, gs[1].PriorityFactor)
	err = c.DeleteGroup(ctx, "research")
	require.ErrorIs(t, err, client.ErrConflict)
	require.NoError(t, c.DeleteGroup(ctx, "prod"))
	_, err = c.Group(ctx, "prod")
	require.ErrorIs(t, err, client.ErrNotFound)
	got, err := c.Queue(ctx, "nlp")
	require.NoError(t, err)
	require.Equal(t, q, got)
}

// Reading groups needs the right to list queues; changing them is admin
// only, and a refusal changes nothing.
func TestGroupRightsFollowTheQueueRights(t *testing.T) {
	ctx := context.Background()
	auth, err := httpapi.ParseAuth([]byte(authFile))
	require.NoError(t, err)
	s := treeService(t, httpapi.Options{Auth: auth})
	alice, exec, ops := s.client(t, "t-alice"), s.client(t, "t-exec"), s.client(t, "t-ops")
	gs, err := alice.ListGroups(ctx)
	require.NoError(t, err)
	require.Len(t, gs, 1)
	_, err = alice.Group(ctx, "research")
	require.NoError(t, err)
	_, err = exec.ListGroups(ctx)
	require.ErrorIs(t, err, client.ErrForbidden)
	before := treeOf(t, s)
	_, err = alice.CreateGroup(ctx, api.Group{Name: "g"})
	require.ErrorIs(t, err, client.ErrForbidden)
	_, err = alice.UpdateGroup(ctx, api.Group{Name: "research"})
	require.ErrorIs(t, err, client.ErrForbidden)
	require.ErrorIs(t, alice.DeleteGroup(ctx, "research"), client.ErrForbidden)
	require.Equal(t, before, treeOf(t, s))
	_, err = ops.CreateGroup(ctx, api.Group{Name: "g"})
	require.NoError(t, err)
}
