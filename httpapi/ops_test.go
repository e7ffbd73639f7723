package httpapi_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flotilla-sched/flotilla/api"
	"github.com/flotilla-sched/flotilla/client"
	"github.com/flotilla-sched/flotilla/events"
	"github.com/flotilla-sched/flotilla/httpapi"
)

// opsService is a service with auth (authFile), queues A and B, job set s
// in each with two queued jobs (A: job-1, job-2; B: job-3, job-4), and
// cluster c1 with one 4-cpu node.
func opsService(t *testing.T) *service {
	t.Helper()
	ctx := context.Background()
	auth, err := httpapi.ParseAuth([]byte(authFile))
	require.NoError(t, err)
	s := newService(t, httpapi.Options{Auth: auth})
	ops := s.client(t, "t-ops")
	for _, q := range []string{"A", "B"} {
		_, err := ops.CreateQueue(ctx, api.Queue{Name: q})
		require.NoError(t, err)
		_, err = s.srv.SubmitJSON(ctx, []byte(`{"queue": "`+q+`", "jobSet": "s", "jobs": [{"count": 2, "requests": {"cpu": "1"}}]}`))
		require.NoError(t, err)
	}
	_, err = s.client(t, "t-exec").Report(ctx, "c1", api.Report{Nodes: []api.Node{{Name: "n1", Resources: map[string]string{"cpu": "4"}}}})
	require.NoError(t, err)
	return s
}

// allEvents is every event of A/s and B/s.
func (s *service) allEvents(t *testing.T) []events.Event {
	t.Helper()
	var out []events.Event
	for _, q := range []string{"A", "B"} {
		evs, err := s.be.Events(context.Background(), q, "s", 0, 0)
		require.NoError(t, err)
		out = append(out, evs...)
	}
	return out
}

func prio(p uint32) *uint32 { return &p }

// The rights of the operator's verbs: a submitter changes the jobs of its
// queues, an admin every job; a watcher, an executor or an unknown token
// none; each refusal changes nothing.
func TestOperatorVerbsRightsAndRefusalsChangeNothing(t *testing.T) {
	ctx := context.Background()
	s := opsService(t)
	ops, alice, bob, exec, nobody := s.client(t, "t-ops"), s.client(t, "t-alice"), s.client(t, "t-bob"), s.client(t, "t-exec"), s.client(t, "")
	reprio := func(c *client.Client, req api.ReprioritizeRequest) func() error {
		return func() error { _, err := c.Reprioritize(ctx, req); return err }
	}
	// job-5 never fits: it stays queued until B is cancelled whole.
	_, err := s.srv.SubmitJSON(ctx, []byte(`{"queue": "B", "jobSet": "s", "jobs": [{"requests": {"cpu": "9"}}]}`))
	require.NoError(t, err)
	preempt := func(c *client.Client, req api.PreemptRequest) func() error {
		return func() error { _, err := c.Preempt(ctx, req); return err }
	}

	cases := []struct {
		name string
		call func() error
		want error
	}{
		{"reprioritize without a token", reprio(nobody, api.ReprioritizeRequest{JobIDs: []string{"job-1"}, Priority: prio(1)}), client.ErrUnauthorized},
		{"reprioritize by a watcher", reprio(bob, api.ReprioritizeRequest{JobIDs: []string{"job-3"}, Priority: prio(1)}), client.ErrForbidden},
		{"reprioritize by an executor", reprio(exec, api.ReprioritizeRequest{JobIDs: []string{"job-1"}, Priority: prio(1)}), client.ErrForbidden},
		{"reprioritize another queue's job", reprio(alice, api.ReprioritizeRequest{JobIDs: []string{"job-1", "job-3"}, Priority: prio(1)}), client.ErrForbidden},
		{"reprioritize another queue's job set", reprio(alice, api.ReprioritizeRequest{Queue: "B", JobSet: "s", Priority: prio(1)}), client.ErrForbidden},
		{"reprioritize without a priority", reprio(ops, api.ReprioritizeRequest{JobIDs: []string{"job-1"}}), client.ErrBadRequest},
		{"reprioritize ids and a job set", reprio(ops, api.ReprioritizeRequest{JobIDs: []string{"job-1"}, Queue: "A", JobSet: "s", Priority: prio(1)}), client.ErrBadRequest},
		{"reprioritize a queue without its job set", reprio(ops, api.ReprioritizeRequest{Queue: "A", Priority: prio(1)}), client.ErrBadRequest},
		{"reprioritize an unknown job", reprio(ops, api.ReprioritizeRequest{JobIDs: []string{"job-1", "job-99"}, Priority: prio(1)}), client.ErrNotFound},
		{"reprioritize its queue's job", reprio(alice, api.ReprioritizeRequest{JobIDs: []string{"job-1"}, Priority: prio(1)}), nil},
		{"reprioritize its queue's job set", reprio(alice, api.ReprioritizeRequest{Queue: "A", JobSet: "s", Priority: prio(2)}), nil},
		{"admin reprioritizes every queue", reprio(ops, api.ReprioritizeRequest{JobIDs: []string{"job-3"}, Priority: prio(0)}), nil},
		{"preempt without a token", preempt(nobody, api.PreemptRequest{JobIDs: []string{"job-1"}}), client.ErrUnauthorized},
		{"preempt by a watcher", preempt(bob, api.PreemptRequest{JobIDs: []string{"job-3"}}), client.ErrForbidden},
		{"preempt by an executor", preempt(exec, api.PreemptRequest{Cluster: "c1"}), client.ErrForbidden},
		{"preempt another queue's job", preempt(alice, api.PreemptRequest{JobIDs: []string{"job-1", "job-3"}}), client.ErrForbidden},
		{"preempt another queue", preempt(alice, api.PreemptRequest{Queue: "B"}), client.ErrForbidden},
		{"preempt a cluster without admin", preempt(alice, api.PreemptRequest{Cluster: "c1"}), client.ErrForbidden},
		{"preempt a node without admin", preempt(alice, api.PreemptRequest{Cluster: "c1", Node: "n1"}), client.ErrForbidden},
		{"preempt ids and a queue", preempt(ops, api.PreemptRequest{JobIDs: []string{"job-1"}, Queue: "A"}), client.ErrBadRequest},
		{"preempt an unknown node", preempt(ops, api.PreemptRequest{Cluster: "c1", Node: "n9"}), client.ErrNotFound},
		{"preempt an unknown cluster", preempt(ops, api.PreemptRequest{Cluster: "c9"}), client.ErrNotFound},
		{"preempt its queue's job", preempt(alice, api.PreemptRequest{JobIDs: []string{"job-1"}, Reason: "runaway"}), nil},
		{"preempt its queue", preempt(alice, api.PreemptRequest{Queue: "A"}), nil},
		{"admin preempts a node", preempt(ops, api.PreemptRequest{Cluster: "c1", Node: "n1"}), nil},
		{"cancel another queue whole", func() error { _, err := alice.CancelJobSet(ctx, "B", ""); return err }, client.ErrForbidden},
		{"cancel a job set of no queue", func() error { _, err := ops.CancelJobSet(ctx, "", "s"); return err }, client.ErrBadRequest},
		{"admin cancels a queue whole", func() error { _, err := ops.CancelJobSet(ctx, "B", ""); return err }, nil},
	}
	for _, c := range cases {
		if c.name == "preempt without a token" {
			_, err := s.srv.Cycle(ctx) // job-1 … job-4 are leased on c1/n1
			require.NoError(t, err)
		}
		before := s.allEvents(t)
		err := c.call()
		if c.want == nil {
			require.NoError(t, err, c.name)
			require.Greater(t, len(s.allEvents(t)), len(before), "%s: an event is written", c.name)
			continue
		}
		require.True(t, errors.Is(err, c.want), "%s: %v", c.name, err)
		require.Equal(t, before, s.allEvents(t), "%s: a refusal changes nothing", c.name)
	}
}

// Reprioritize through the API: the queued jobs named get the priority
// (their events carry it), a running one is reported and left alone.
func TestReprioritizeThroughTheAPI(t *testing.T) {
	ctx := context.Background()
	s := opsService(t)
	ops := s.client(t, "t-ops")
	_, err := s.srv.Cycle(ctx)
	require.NoError(t, err)
	_, err = s.client(t, "t-exec").Report(ctx, "c1", api.Report{})
	require.NoError(t, err)
	res, err := ops.Reprioritize(ctx, api.ReprioritizeRequest{JobIDs: []string{"job-1"}, Priority: prio(3)})
	require.NoError(t, err)
	require.Equal(t, api.ReprioritizeResponse{Reprioritized: []string{}, Live: []string{"job-1"}, Finished: []string{}}, res)
	_, err = ops.Submit(ctx, []byte(`{"queue": "A", "jobSet": "t", "jobs": [{"requests": {"cpu": "9"}}]}`))
	require.Error(t, err, "ops may not submit: its submit list is empty")
	_, err = s.srv.SubmitJSON(ctx, []byte(`{"queue": "A", "jobSet": "t", "jobs": [{"count": 2, "requests": {"cpu": "9"}}]}`))
	require.NoError(t, err)
	res, err = ops.Reprioritize(ctx, api.ReprioritizeRequest{Queue: "A", JobSet: "t", Priority: prio(3)})
	require.NoError(t, err)
	require.Equal(t, []string{"job-5", "job-6"}, res.Reprioritized)
	evs, err := ops.Events(ctx, "A", "t", 0, 0)
	require.NoError(t, err)
	require.Len(t, evs, 4)
	for _, e := range evs[2:] {
		require.Equal(t, events.Reprioritized, e.Type)
		require.Equal(t, uint32(3), e.Priority)
		require.Contains(t, e.Reason, "ops")
	}
}

// Preempt through the API: the events name the principal and the reason;
// a queued job named is reported and left alone.
func TestPreemptThroughTheAPI(t *testing.T) {
	ctx := context.Background()
	s := opsService(t)
	_, err := s.srv.SubmitJSON(ctx, []byte(`{"queue": "A", "jobSet": "s", "jobs": [{"requests": {"cpu": "9"}}]}`))
	require.NoError(t, err)
	_, err = s.srv.Cycle(ctx)
	require.NoError(t, err)
	res, err := s.client(t, "t-alice").Preempt(ctx, api.PreemptRequest{JobIDs: []string{"job-1", "job-5"}, Reason: "runaway"})
	require.NoError(t, err)
	require.Equal(t, api.PreemptResponse{Preempted: []string{"job-1"}, Queued: []string{"job-5"}, Finished: []string{}}, res)
	evs, err := s.client(t, "t-alice").Events(ctx, "A", "s", 0, 0)
	require.NoError(t, err)
	last := evs[len(evs)-1]
	require.Equal(t, events.Preempted, last.Type)
	require.Equal(t, "job-1", last.Job)
	require.Equal(t, "preempted by alice: runaway", last.Reason)
	require.Equal(t, "c1", last.Cluster)
	require.Equal(t, "n1", last.Node)
}

// Cordons are admin's: anyone else is refused and nothing is stored; an
// admin cordons and uncordons a queue and a cluster, which the queue's
// status, the cluster list and the executor's report answer show.
func TestCordonRightsAndWhatItShows(t *testing.T) {
	ctx := context.Background()
	s := opsService(t)
	ops, alice, bob, exec, nobody := s.client(t, "t-ops"), s.client(t, "t-alice"), s.client(t, "t-bob"), s.client(t, "t-exec"), s.client(t, "")
	for _, c := range []struct {
		name string
		cl   *client.Client
		kind string
		obj  string
		want error
	}{
		{"no token", nobody, "queue", "A", client.ErrUnauthorized},
		{"a submitter cordons its queue", alice, "queue", "A", client.ErrForbidden},
		{"a watcher", bob, "queue", "B", client.ErrForbidden},
		{"an executor cordons its cluster", exec, "cluster", "c1", client.ErrForbidden},
		{"a submitter cordons a cluster", alice, "cluster", "c1", client.ErrForbidden},
		{"an unknown queue", ops, "queue", "Z", client.ErrNotFound},
		{"an unknown cluster", ops, "cluster", "c9", client.ErrNotFound},
	} {
		for _, on := range []bool{true, false} {
			err := c.cl.Cordon(ctx, c.kind, c.obj, on)
			require.True(t, errors.Is(err, c.want), "%s (%v): %v", c.name, on, err)
		}
		cs, err := s.be.ListCordons(ctx)
		require.NoError(t, err)
		require.Empty(t, cs, "%s: a refusal stores nothing", c.name)
	}
	require.NoError(t, ops.Cordon(ctx, "queue", "A", true))
	require.NoError(t, ops.Cordon(ctx, "cluster", "c1", true))
	q, err := alice.Queue(ctx, "A")
	require.NoError(t, err)
	require.True(t, q.Status.Cordoned)
	reply, err := exec.Report(ctx, "c1", api.Report{})
	require.NoError(t, err)
	require.True(t, reply.Cordoned)
	_, err = exec.ListClusters(ctx)
	require.True(t, errors.Is(err, client.ErrForbidden), "an executor lists no clusters: %v", err)
	cs, err := alice.ListClusters(ctx)
	require.NoError(t, err)
	require.Len(t, cs, 1)
	require.Equal(t, "c1", cs[0].Name)
	require.True(t, cs[0].Cordoned)
	require.True(t, cs[0].Alive)
	require.Equal(t, 1, cs[0].Nodes)
	require.NoError(t, ops.Cordon(ctx, "cluster", "c1", false))
	require.NoError(t, ops.Cordon(ctx, "queue", "A", false))
	q, err = alice.Queue(ctx, "A")
	require.NoError(t, err)
	require.False(t, q.Status.Cordoned)
	reply, err = exec.Report(ctx, "c1", api.Report{})
	require.NoError(t, err)
	require.False(t, reply.Cordoned)
}
