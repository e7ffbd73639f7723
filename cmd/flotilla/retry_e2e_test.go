package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flotilla-sched/flotilla/api"
	"github.com/flotilla-sched/flotilla/events"
)

// retryPolicyFile retries exit 137 twice, off the node that failed.
const retryPolicyFile = `{"maxAttempts": 5, "rules": [{"onExitCodes": [137, 143], "onReasons": ["oom"], "retryLimit": 2, "avoidSameNode": true}]}`

// jobLog is one job's events of a job set's log, in order.
func jobLog(evs []events.Event, id string) []events.Event {
	var out []events.Event
	for _, e := range evs {
		if e.Job == id {
			out = append(out, e)
		}
	}
	return out
}

// requireRetriedElsewhereThenFailed requires the log of a job failing with
// 137 under retryPolicyFile: three runs, each on another node than the
// one before, the first two ending run-failed (rule 1, avoid node, exit
// 137), the last failed at the rule's limit.
func requireRetriedElsewhereThenFailed(t *testing.T, log []events.Event) {
	t.Helper()
	var types []events.Type
	for _, e := range log {
		types = append(types, e.Type)
	}
	require.Equal(t, []events.Type{events.Submitted,
		events.Leased, events.Running, events.RunFailed,
		events.Leased, events.Running, events.RunFailed,
		events.Leased, events.Running, events.Failed}, types)
	for _, k := range []int{3, 6} {
		rf := log[k]
		require.Equal(t, 1, rf.Rule)
		require.True(t, rf.AvoidNode)
		require.Equal(t, 137, rf.ExitCode)
		require.Contains(t, rf.Reason, "exit code 137 (oom): rule 1 retries it")
	}
	require.NotEqual(t, log[1].Node, log[4].Node, "the first retry runs on another node")
	require.NotEqual(t, log[4].Node, log[7].Node, "the second retry runs on another node")
	require.NotEqual(t, log[1].Node, log[7].Node, "the second retry avoids both nodes that failed")
	require.Contains(t, log[9].Reason, "its retry limit is reached (2 of 2)")
	require.Equal(t, 1, log[9].Rule)
}

// The retry policy through the CLI against a real serve with a fake
// executor of three nodes: a job failing with 137 is retried on another
// node up to its rule's limit, then fails; one failing with exit 1, which
// no rule matches, fails at once. status shows the attempts and the rule,
// queue list the policy. Only an admin sets a policy; a bad file exits 2
// naming every problem, and a refusal changes nothing.
func TestRetryPolicyCommandAgainstServe(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	auth := writeFile(t, "auth.json", `{"tokens": [
		{"token": "t-ops", "principal": "ops", "admin": true, "submit": ["*"]},
		{"token": "t-alice", "principal": "alice", "submit": ["A"], "watch": ["A"]},
		{"token": "t-exec", "principal": "exec-c1", "executor": ["c1"]}]}`)
	_, url := serveOn(t, ctx, "-auth", auth, "-cycle", "100ms")
	as := func(token string, args ...string) (int, string, string) {
		t.Helper()
		return runClient(t, ctx, url, append(args, "-token", token)...)
	}
	policy := writeFile(t, "policy.json", retryPolicyFile)
	code, _, errOut := as("t-ops", "queue", "create", "A", "-retry-policy", policy)
	require.Equal(t, 0, code, errOut)

	// Rights and bad input: nothing changes.
	other := writeFile(t, "other.json", `{"rules": [{"onExitCodes": [1], "retryLimit": 9}]}`)
	code, _, errOut = as("t-alice", "queue", "update", "A", "-retry-policy", other)
	require.Equal(t, 1, code, errOut)
	require.Contains(t, errOut, "403")
	code, _, errOut = as("t-alice", "queue", "create", "B", "-retry-policy", other)
	require.Equal(t, 1, code, errOut)
	unknown := writeFile(t, "unknown.json", `{"rules": [], "retries": 3}`)
	code, _, errOut = as("t-ops", "queue", "update", "A", "-retry-policy", unknown)
	require.Equal(t, 2, code, errOut)
	require.Contains(t, errOut, "retries")
	bad := writeFile(t, "bad.json", `{"maxAttempts": -1, "rules": [{"onExitCodes": [0], "onReasons": ["bored"]}]}`)
	code, _, errOut = as("t-ops", "queue", "update", "A", "-retry-policy", bad, "-guaranteed", "cpu=x")
	require.Equal(t, 2, code, errOut)
	for _, want := range []string{`queue "A".retryPolicy.maxAttempts "-1"`, `queue "A".retryPolicy.rules[0].onExitCodes[0] "0"`,
		`queue "A".retryPolicy.rules[0].onReasons[0] "bored"`, `guaranteed.cpu "x"`} {
		require.Contains(t, errOut, want)
	}
	code, _, errOut = as("t-ops", "queue", "update", "A", "-retry-policy", "missing.json")
	require.Equal(t, 2, code, errOut)
	code, out, errOut := as("t-ops", "queue", "list", "-o", "json")
	require.Equal(t, 0, code, errOut)
	var qs []api.Queue
	require.NoError(t, json.Unmarshal([]byte(out), &qs))
	require.Len(t, qs, 1)
	want, err := events.ParseRetryPolicy("p", []byte(retryPolicyFile))
	require.NoError(t, err)
	require.Equal(t, want, qs[0].RetryPolicy, "the refusals changed nothing")
	code, out, errOut = as("t-ops", "queue", "list")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "RETRY")
	require.Contains(t, out, "max 5: 137,143,oom ×2 avoid")

	nodes := writeFile(t, "nodes.json", `[{"name": "n", "count": 3, "resources": {"cpu": "1", "memory": "4Gi"}}]`)
	start(t, ctx, "executor", "-server", url, "-token", "t-exec", "-cluster", "c1", "-nodes", nodes, "-renew", "200ms")
	jobs := writeFile(t, "jobs.json", `{"queue": "A", "jobSet": "s", "jobs": [
		{"requests": {"cpu": "1"}, "runtime": "300ms", "exitCode": 137},
		{"requests": {"cpu": "1"}, "runtime": "300ms", "exitCode": 1}]}`)
	code, out, errOut = as("t-alice", "submit", jobs)
	require.Equal(t, 0, code, errOut)
	ids := strings.Fields(out)
	require.Len(t, ids, 2)
	code, _, errOut = as("t-alice", "watch", "-queue", "A", "-jobset", "s", "-until-done")
	require.Equal(t, 0, code, errOut)
	code, out, errOut = as("t-alice", "events", "-queue", "A", "-jobset", "s", "-o", "json")
	require.Equal(t, 0, code, errOut)
	evs := parseEvents(t, out)
	requireRetriedElsewhereThenFailed(t, jobLog(evs, ids[0]))
	once := jobLog(evs, ids[1])
	require.Len(t, once, 4)
	require.Equal(t, events.Failed, once[3].Type)
	require.Equal(t, "exit code 1; no retry rule matches exit code 1", once[3].Reason)

	code, out, errOut = as("t-alice", "status", ids[0], "-o", "json")
	require.Equal(t, 0, code, errOut)
	var st api.JobStatus
	require.NoError(t, json.Unmarshal([]byte(out), &st))
	require.Equal(t, "failed", st.State)
	require.Equal(t, 3, st.Attempts)
	require.Equal(t, 1, st.Rule)
	require.Equal(t, []int{2}, st.Retries)
	code, out, errOut = as("t-alice", "status", ids[0])
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "3 (rule 1, retries 2)")
	code, out, errOut = as("t-alice", "status", "-v", ids[0])
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "3 attempt(s), retry rule 1, retries 2")
	code, out, errOut = as("t-alice", "events", "-queue", "A", "-jobset", "s")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "run-failed")
	require.Contains(t, out, "exit 137 rule 1 (avoid node)")

	// An empty -retry-policy removes the policy: the list has no RETRY
	// column again.
	code, _, errOut = as("t-ops", "queue", "update", "A", "-retry-policy", "")
	require.Equal(t, 0, code, errOut)
	code, out, errOut = as("t-ops", "queue", "list")
	require.Equal(t, 0, code, errOut)
	require.NotContains(t, out, "RETRY")
}

// serve on PostgreSQL, killed and restarted while a job is being retried:
// the retries go on where they were (the count and the nodes avoided
// rebuilt from the stored events), the job ends as without the restart,
// and replaying the stored log gives the stored states exactly.
func TestServeOnPostgresRebuildsRetriedJobsAfterARestart(t *testing.T) {
	db := postgresURL(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	addr := freePort(t)
	args := []string{"-listen", addr, "-db", db, "-cycle", "100ms", "-lease-timeout", "3s"}
	srv, url := serveOn(t, ctx, args...)
	policy := writeFile(t, "policy.json", retryPolicyFile)
	code, _, errOut := runClient(t, ctx, url, "queue", "create", "A", "-retry-policy", policy)
	require.Equal(t, 0, code, errOut)
	// Four nodes: each of the two jobs has two nodes it did not fail on
	// for its last run, whichever the other took.
	nodes := writeFile(t, "nodes.json", `[{"name": "n", "count": 4, "resources": {"cpu": "1", "memory": "4Gi"}}]`)
	start(t, ctx, "executor", "-server", url, "-cluster", "c1", "-nodes", nodes, "-renew", "300ms", "-lease-timeout", "3s")
	jobs := writeFile(t, "jobs.json", `{"queue": "A", "jobSet": "s", "jobs": [
		{"count": 2, "requests": {"cpu": "1"}, "runtime": "700ms", "exitCode": 137}]}`)
	code, out, errOut := runClient(t, ctx, url, "submit", jobs)
	require.Equal(t, 0, code, errOut)
	ids := strings.Fields(out)
	require.Len(t, ids, 2)

	// Kill the server once a run has failed and been retried.
	waitForEvent(t, ctx, url, "A", "s", "run-failed")
	killServe(t, srv)

	_, url2 := serveOn(t, ctx, args...)
	require.Equal(t, url, url2)
	code, out, errOut = runClient(t, ctx, url, "queue", "list", "-o", "json")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, `"retryPolicy":{"maxAttempts":5`, "the policy is stored")
	code, _, errOut = runClient(t, ctx, url, "watch", "-queue", "A", "-jobset", "s", "-until-done")
	require.Equal(t, 0, code, errOut)
	code, out, errOut = runClient(t, ctx, url, "events", "-queue", "A", "-jobset", "s", "-o", "json")
	require.Equal(t, 0, code, errOut)
	evs := parseEvents(t, out)
	for _, id := range ids {
		requireRetriedElsewhereThenFailed(t, jobLog(evs, id))
	}
	replayed, err := events.Replay("A", "s", func(yield func(events.Event) bool) {
		for _, e := range evs {
			if !yield(e) {
				return
			}
		}
	})
	require.NoError(t, err)
	for _, id := range ids {
		code, out, errOut := runClient(t, ctx, url, "status", id, "-o", "json")
		require.Equal(t, 0, code, errOut)
		var st api.JobStatus
		require.NoError(t, json.Unmarshal([]byte(out), &st))
		j, ok := replayed.Job(id)
		require.True(t, ok)
		require.Equal(t, j.State.String(), st.State)
		require.Equal(t, j.Attempts, st.Attempts)
		require.Equal(t, j.Rule, st.Rule)
		require.Equal(t, j.Retries, st.Retries)
		require.Equal(t, []int{2}, st.Retries)
		require.Len(t, j.AvoidNodes, 2, "the two nodes that failed")
	}
}
