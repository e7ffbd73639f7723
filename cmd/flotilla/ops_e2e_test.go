package main

import (
	"bufio"
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flotilla-sched/flotilla/events"
)

// opsServe is a real serve with auth (ops: admin and submit everywhere;
// alice: submit to A), queue A, and a fake executor c1 of one 1-cpu node;
// three 1-cpu jobs of priority 5 and runtime 1h are submitted to A/s and
// the first is running. watch follows A/s's events.
type opsServe struct {
	t     *testing.T
	ctx   context.Context
	url   string
	ids   []string
	watch *bufio.Reader
}

func newOpsServe(t *testing.T, ctx context.Context) *opsServe {
	auth := writeFile(t, "auth.json", `{"tokens": [
		{"token": "t-ops", "principal": "ops", "admin": true, "submit": ["*"]},
		{"token": "t-alice", "principal": "alice", "submit": ["A"]},
		{"token": "t-exec", "principal": "exec-c1", "executor": ["c1"]}]}`)
	_, url := serveOn(t, ctx, "-auth", auth, "-cycle", "100ms")
	s := &opsServe{t: t, ctx: ctx, url: url}
	code, _, errOut := s.ops("queue", "create", "A")
	require.Equal(t, 0, code, errOut)
	nodes := writeFile(t, "nodes.json", `[{"name": "n", "count": 1, "resources": {"cpu": "1", "memory": "4Gi"}}]`)
	start(t, ctx, "executor", "-server", url, "-token", "t-exec", "-cluster", "c1", "-nodes", nodes, "-renew", "200ms")
	jobs := writeFile(t, "jobs.json", `{"queue": "A", "jobSet": "s", "jobs": [
		{"count": 3, "priority": 5, "requests": {"cpu": "1"}, "runtime": "1h"}]}`)
	code, out, errOut := s.ops("submit", jobs)
	require.Equal(t, 0, code, errOut)
	s.ids = strings.Fields(out)
	require.Len(t, s.ids, 3)
	w := exec.CommandContext(ctx, binary(t), "watch", "-server", url, "-token", "t-ops", "-queue", "A", "-jobset", "s", "-o", "json")
	wout, err := w.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, w.Start())
	t.Cleanup(func() { _ = w.Process.Kill(); _ = w.Wait() })
	s.watch = bufio.NewReader(wout)
	s.until(events.Running, s.ids[0])
	return s
}

// ops runs a client command as the admin; as runs it with a token.
func (s *opsServe) ops(args ...string) (int, string, string) { return s.as("t-ops", args...) }

func (s *opsServe) as(token string, args ...string) (int, string, string) {
	s.t.Helper()
	return runClient(s.t, s.ctx, s.url, append(args, "-token", token)...)
}

// until reads the watched events until one of type typ about job; it
// returns the events read.
func (s *opsServe) until(typ events.Type, job string) []events.Event {
	s.t.Helper()
	return readEventsUntil(s.t, s.watch, func(e events.Event) bool { return e.Type == typ && e.Job == job })
}

// The reprioritize command through a real serve: queued jobs get the
// priority, the running one is named and left alone; bad input exits 2,
// a refusal 1, and neither writes an event.
func TestReprioritizeCommandAgainstServe(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s := newOpsServe(t, ctx)
	for _, bad := range [][]string{
		{"reprioritize", s.ids[1]},
		{"reprioritize", "-priority", "-1", s.ids[1]},
		{"reprioritize", "-priority", "x", s.ids[1]},
		{"reprioritize", "-priority", "1"},
		{"reprioritize", "-priority", "1", "-queue", "A"},
	} {
		code, _, _ := s.ops(bad...)
		require.Equal(t, 2, code, "%v", bad)
	}
	code, _, errOut := s.as("t-exec", "reprioritize", "-priority", "1", s.ids[1])
	require.Equal(t, 1, code, errOut)
	require.Contains(t, errOut, "403")
	code, _, errOut = s.ops("reprioritize", "-priority", "1", "no-such-job")
	require.Equal(t, 1, code, errOut)

	code, out, errOut := s.as("t-alice", "reprioritize", "-priority", "1", s.ids[2], s.ids[0])
	require.Equal(t, 0, code, errOut)
	require.Equal(t, s.ids[2]+" priority 1\n"+s.ids[0]+" is leased or running: left alone\n", out)
	evs := s.until(events.Reprioritized, s.ids[2])
	last := evs[len(evs)-1]
	require.Equal(t, uint32(1), last.Priority)
	require.Contains(t, last.Reason, "alice")
	for _, e := range evs {
		require.False(t, e.Type == events.Reprioritized && e.Job != s.ids[2], "only the queued job named: %+v", e)
	}
	code, out, errOut = s.ops("events", "-queue", "A", "-jobset", "s")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "reprioritized    "+s.ids[2]+" priority 1: priority 1 given by alice")
}

// The preempt command through a real serve: the running job is preempted
// (the event names the principal and the reason), the executor kills it,
// and its node goes to the next job; -cluster needs admin; bad input
// exits 2, a refusal 1.
func TestPreemptCommandAgainstServe(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s := newOpsServe(t, ctx)
	for _, bad := range [][]string{
		{"preempt"},
		{"preempt", s.ids[0], "-queue", "A"},
		{"preempt", "-jobset", "s"},
		{"preempt", "-node", "n-0"},
	} {
		code, _, _ := s.ops(bad...)
		require.Equal(t, 2, code, "%v", bad)
	}
	code, _, errOut := s.as("t-alice", "preempt", "-cluster", "c1")
	require.Equal(t, 1, code, errOut)
	require.Contains(t, errOut, "403")
	code, _, errOut = s.ops("preempt", "-cluster", "c1", "-node", "nope")
	require.Equal(t, 1, code, errOut)

	code, out, errOut := s.as("t-alice", "preempt", s.ids[0], s.ids[1], "-reason", "runaway")
	require.Equal(t, 0, code, errOut)
	require.Equal(t, s.ids[0]+" preempted\n"+s.ids[1]+" is queued: nothing to preempt\n", out)
	evs := s.until(events.Preempted, s.ids[0])
	last := evs[len(evs)-1]
	require.Equal(t, "preempted by alice: runaway", last.Reason)
	require.Equal(t, "c1", last.Cluster)
	s.until(events.Running, s.ids[1]) // the executor stopped it: its node runs the next job

	code, out, errOut = s.ops("preempt", "-cluster", "c1", "-node", "n-0")
	require.Equal(t, 0, code, errOut)
	require.Equal(t, s.ids[1]+" preempted\n", out)
	code, out, errOut = s.ops("status", "-o", "json", s.ids[0])
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, `"state":"preempted"`)
}

// Cordons through a real serve: only an admin cordons; a cordoned queue's
// jobs wait (queue list and status say so) while its running job goes on;
// a cordoned cluster's executor logs the cordon, gets no new lease, and
// cluster list shows it; uncordoned, leasing resumes.
func TestCordonCommandsAgainstServe(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s := newOpsServe(t, ctx)
	for _, args := range [][]string{{"queue", "cordon", "A"}, {"cluster", "cordon", "c1"}} {
		code, _, errOut := s.as("t-alice", args...)
		require.Equal(t, 1, code, errOut)
		require.Contains(t, errOut, "403")
	}
	code, _, _ := s.ops("cluster", "cordon")
	require.Equal(t, 2, code)
	code, _, _ = s.ops("cluster", "drain", "c1")
	require.Equal(t, 2, code)
	code, _, errOut := s.ops("queue", "cordon", "Z")
	require.Equal(t, 1, code, errOut)

	code, out, errOut := s.ops("queue", "cordon", "A")
	require.Equal(t, 0, code, errOut)
	require.Equal(t, "queue A cordoned\n", out)
	code, out, errOut = s.ops("preempt", s.ids[0])
	require.Equal(t, 0, code, errOut)
	code, out, errOut = s.ops("queue", "list")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "A (cordoned)")
	code, out, errOut = s.ops("status", "-o", "json", s.ids[1])
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "queue A is cordoned")

	code, out, errOut = s.ops("cluster", "cordon", "c1")
	require.Equal(t, 0, code, errOut)
	require.Equal(t, "cluster c1 cordoned\n", out)
	code, _, errOut = s.ops("queue", "uncordon", "A")
	require.Equal(t, 0, code, errOut)
	code, out, errOut = s.ops("cluster", "list", "-o", "json")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, `"name":"c1"`)
	require.Contains(t, out, `"cordoned":true`)
	code, out, errOut = s.ops("status", "-o", "json", s.ids[1])
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, `"state":"queued"`, "a cordoned cluster takes no lease")

	code, _, errOut = s.ops("cluster", "uncordon", "c1")
	require.Equal(t, 0, code, errOut)
	s.until(events.Running, s.ids[1])
	code, out, errOut = s.ops("cluster", "list")
	require.Equal(t, 0, code, errOut)
	require.Regexp(t, `c1 +default +1 +true +false +0 +1 `, out)

	// cancel -queue Q: the whole queue.
	code, _, _ = s.ops("cancel", "-jobset", "s")
	require.Equal(t, 2, code, "a job set is named within its queue")
	code, _, errOut = s.as("t-exec", "cancel", "-queue", "A")
	require.Equal(t, 1, code, errOut)
	code, out, errOut = s.ops("cancel", "-queue", "A")
	require.Equal(t, 0, code, errOut)
	require.Equal(t, s.ids[2]+" cancelled\n"+s.ids[1]+" cancel requested\n", out, "ended jobs are not named")
	s.until(events.Cancelled, s.ids[1])
}
