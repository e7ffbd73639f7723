package httpapi_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/api"
	"github.com/flotilla-sched/flotilla/client"
	"github.com/flotilla-sched/flotilla/httpapi"
)

const authFile = `{"tokens": [
  {"token": "t-alice", "principal": "alice", "submit": ["A"], "watch": ["*"]},
  {"token": "t-bob", "principal": "bob", "watch": ["B"]},
  {"token": "t-exec", "principal": "exec-c1", "executor": ["c1"]},
  {"token": "t-ops", "principal": "ops", "admin": true},
  {"token": "t-none", "principal": "idle"}
]}`

func TestEachRightIsRefusedWithoutItAndTheRefusalChangesNothing(t *testing.T) {
	ctx := context.Background()
	auth, err := httpapi.ParseAuth([]byte(authFile))
	require.NoError(t, err)
	s := newService(t, httpapi.Options{Auth: auth})
	ops, alice, bob, exec, nobody, wrong, idle := s.client(t, "t-ops"), s.client(t, "t-alice"), s.client(t, "t-bob"),
		s.client(t, "t-exec"), s.client(t, ""), s.client(t, "t-unknown"), s.client(t, "t-none")
	for _, q := range []string{"A", "B"} {
		_, err := ops.CreateQueue(ctx, api.Queue{Name: q})
		require.NoError(t, err)
	}
	file := func(q string) []byte {
		return []byte(`{"queue": "` + q + `", "jobSet": "s", "jobs": [{"requests": {"cpu": "1"}}]}`)
	}
	node := api.Report{Nodes: []api.Node{{Name: "n1", Resources: map[string]string{"cpu": "4"}}}}
	cases := []struct {
		name string
		call func() error
		want error
	}{
		{"no token", func() error { _, err := nobody.ListQueues(ctx); return err }, client.ErrUnauthorized},
		{"unknown token", func() error { _, err := wrong.ListQueues(ctx); return err }, client.ErrUnauthorized},
		{"non-admin creates a queue", func() error { _, err := alice.CreateQueue(ctx, api.Queue{Name: "C"}); return err }, client.ErrForbidden},
		{"non-admin deletes a queue", func() error { return alice.DeleteQueue(ctx, "B") }, client.ErrForbidden},
		{"submit without the right", func() error { _, err := alice.Submit(ctx, file("B")); return err }, client.ErrForbidden},
		{"submit by a watcher", func() error { _, err := bob.Submit(ctx, file("B")); return err }, client.ErrForbidden},
		{"submit with the right", func() error { _, err := alice.Submit(ctx, file("A")); return err }, nil},
		{"watch without the right", func() error { _, err := bob.Events(ctx, "A", "s", 0, 0); return err }, client.ErrForbidden},
		{"watch with the right", func() error { _, err := alice.Events(ctx, "A", "s", 0, 0); return err }, nil},
		{"status without the right", func() error { _, err := bob.Status(ctx, "job-1"); return err }, client.ErrForbidden},
		{"explained status without the right", func() error { _, err := bob.StatusExplained(ctx, "job-1"); return err }, client.ErrForbidden},
		{"explained status with the right", func() error { _, err := alice.StatusExplained(ctx, "job-1"); return err }, nil},
		{"cancel without the right", func() error { _, err := bob.Cancel(ctx, "job-1"); return err }, client.ErrForbidden},
		{"cancel a job set without the right", func() error { _, err := bob.CancelJobSet(ctx, "A", "s"); return err }, client.ErrForbidden},
		{"report for another cluster", func() error { _, err := exec.Report(ctx, "c2", node); return err }, client.ErrForbidden},
		{"report by a submitter", func() error { _, err := alice.Report(ctx, "c1", node); return err }, client.ErrForbidden},
		{"report for its cluster", func() error { _, err := exec.Report(ctx, "c1", node); return err }, nil},
		{"admin submits only where its submit list says", func() error { _, err := ops.Submit(ctx, file("B")); return err }, client.ErrForbidden},
		{"admin reports only for its executor list", func() error { _, err := ops.Report(ctx, "c2", node); return err }, client.ErrForbidden},
		{"admin reads every queue", func() error { _, err := ops.Events(ctx, "A", "s", 0, 0); return err }, nil},
		{"admin reads every job", func() error { _, err := ops.Status(ctx, "job-1"); return err }, nil},
		{"admin cancels in every queue (B never had job set s: not found, not forbidden)", func() error { _, err := ops.CancelJobSet(ctx, "B", "s"); return err }, client.ErrNotFound},
		{"an executor lists queues", func() error { _, err := exec.ListQueues(ctx); return err }, client.ErrForbidden},
		{"a token without rights lists queues", func() error { _, err := idle.ListQueues(ctx); return err }, client.ErrForbidden},
		{"an executor reads a queue", func() error { _, err := exec.Queue(ctx, "A"); return err }, client.ErrForbidden},
		{"a watcher reads another queue", func() error { _, err := bob.Queue(ctx, "A"); return err }, client.ErrForbidden},
		{"a watcher reads its queue", func() error { _, err := bob.Queue(ctx, "B"); return err }, nil},
	}
	for _, c := range cases {
		before, err := s.be.Events(ctx, "A", "s", 0, 0)
		require.NoError(t, err)
		err = c.call()
		if c.want == nil {
			require.NoError(t, err, c.name)
			continue
		}
		require.True(t, errors.Is(err, c.want), "%s: %v", c.name, err)
		after, err := s.be.Events(ctx, "A", "s", 0, 0)
		require.NoError(t, err)
		require.Equal(t, before, after, "%s: a refusal changes nothing", c.name)
	}
	qs, err := ops.ListQueues(ctx)
	require.NoError(t, err)
	require.Len(t, qs, 2, "the refused create and delete changed nothing")
	st, err := alice.Status(ctx, "job-1")
	require.NoError(t, err)
	require.Equal(t, "queued", st[0].State, "the refused cancels changed nothing")
}

func TestParseAuthNamesEveryProblem(t *testing.T) {
	_, err := httpapi.ParseAuth([]byte(`{"tokens": [{"token": "x"}, {"token": "x", "principal": "p"}, {"principal": "q"}, {"token": "y", "principal": "r", "sumbit": ["A"]}]}`))
	require.Error(t, err)
	var fields []string
	for _, p := range flotilla.Problems(err) {
		var fe *flotilla.FieldError
		require.True(t, errors.As(p, &fe), "%v", p)
		fields = append(fields, fe.Field)
	}
	require.ElementsMatch(t, []string{"tokens[0].principal", "tokens[1].token", "tokens[2].token", "tokens[3].sumbit"}, fields)
	_, err = httpapi.ParseAuth([]byte(`{"tokens": []}`))
	require.ErrorIs(t, err, flotilla.ErrRequired)
}

// TestListingShowsTheQueuesAPrincipalMayRead: an admin lists every queue,
// a submitter or watcher those it may read, and anonymous requests
// (no -auth) every queue.
func TestListingShowsTheQueuesAPrincipalMayRead(t *testing.T) {
	ctx := context.Background()
	auth, err := httpapi.ParseAuth([]byte(authFile))
	require.NoError(t, err)
	for _, opts := range []httpapi.Options{{Auth: auth}, {}} {
		s := newService(t, opts)
		for _, q := range []string{"A", "B", "C"} {
			require.NoError(t, s.srv.CreateQueue(ctx, flotilla.Queue{Name: q}))
		}
		names := func(token string) []string {
			qs, err := s.client(t, token).ListQueues(ctx)
			require.NoError(t, err)
			var out []string
			for _, q := range qs {
				out = append(out, q.Name)
			}
			return out
		}
		if opts.Auth == nil {
			require.Equal(t, []string{"A", "B", "C"}, names(""))
			continue
		}
		require.Equal(t, []string{"A", "B", "C"}, names("t-ops"))
		require.Equal(t, []string{"A", "B", "C"}, names("t-alice"), "watch: *")
		require.Equal(t, []string{"B"}, names("t-bob"))
	}
}
