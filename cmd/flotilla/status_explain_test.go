package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/api"
	"github.com/flotilla-sched/flotilla/backend/memory"
	"github.com/flotilla-sched/flotilla/httpapi"
	"github.com/flotilla-sched/flotilla/priority"
	"github.com/flotilla-sched/flotilla/scheduler"
	"github.com/flotilla-sched/flotilla/server"
)

// waitingBehindFour is an in-process service with one 2-cpu node whose
// last cycle left four of six one-cpu jobs queued; it returns the ids.
func waitingBehindFour(t *testing.T) (*inProcess, []string) {
	t.Helper()
	ctx := context.Background()
	p := newInProcess(t)
	node := flotilla.Node{Name: "n0", Total: flotilla.MustResourceSchema("cpu", "memory").MustParse(map[string]string{"cpu": "2", "memory": "4Gi"})}
	_, err := p.srv.Report(ctx, &server.Report{Cluster: "c1", Nodes: []flotilla.Node{node}})
	require.NoError(t, err)
	ids := p.submit(t, 6)
	_, err = p.srv.Cycle(ctx)
	require.NoError(t, err)
	return p, ids
}

// `flotilla status` gives a queued job's quantified reason: the nodes
// searched and what they are short of.
func TestStatusGivesTheQuantifiedReason(t *testing.T) {
	p, ids := waitingBehindFour(t)
	code, out, errOut := runCmd("status", "-server", p.url, ids[5])
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "0/1 nodes fit: 1 short of cpu by at least 1")
}

// `flotilla status -v` gives the long form: the job's place in its queue,
// its priority, its queue's shares and the reason per group of nodes; with
// -o json the same under "explain".
func TestStatusVerboseGivesPlaceSharesAndNodeGroups(t *testing.T) {
	p, ids := waitingBehindFour(t)
	code, out, errOut := runCmd("status", "-server", p.url, "-v", ids[5])
	require.Equal(t, 0, code, errOut)
	for _, want := range []string{
		"job " + ids[5] + ": queued, 0 attempt(s)",
		"place        4 of 4 queued in A now; 3 ahead, requesting cpu 3 in total",
		"class armada-default (priority 30000)",
		"queue share  1.000 after the last cycle",
		"1 node     no room now: short of cpu by at least 1",
	} {
		assert.Contains(t, out, want)
	}

	var o, e bytes.Buffer
	require.Equal(t, 0, run(context.Background(), []string{"status", "-server", p.url, "-v", "-o", "json", ids[2], ids[0]}, &o, &e), e.String())
	dec := json.NewDecoder(&o)
	var first, second api.JobStatus
	require.NoError(t, dec.Decode(&first))
	require.NoError(t, dec.Decode(&second))
	require.NotNil(t, first.Explain)
	require.NotNil(t, first.Explain.Place)
	assert.Equal(t, 1, first.Explain.Place.Position)
	require.NotNil(t, first.Explain.Unscheduled)
	assert.Equal(t, "no-room", first.Explain.Unscheduled.Code)
	require.NotNil(t, second.Explain, "a leased job has a long form too")
	assert.Nil(t, second.Explain.Place, "a leased job has no place in its queue")

	code, out, _ = runCmd("status", "-server", p.url, "-o", "json", ids[5])
	require.Equal(t, 0, code)
	assert.NotContains(t, out, `"explain"`, "only asked for")
}

// With flux priorities, `flotilla status -v` ends with the jobs' flux
// breakdowns, the table `flotilla priority` prints.
func TestStatusVerboseWithFluxPrintsTheBreakdownTable(t *testing.T) {
	ctx := context.Background()
	tree, err := priority.NewBankTree(time.Hour, time.Now())
	require.NoError(t, err)
	require.NoError(t, tree.AddBank("A", "", 1, 0))
	require.NoError(t, tree.AddAssociation(server.DefaultFluxUser, "A", 1))
	schema := flotilla.MustResourceSchema("cpu", "memory")
	srv, err := server.New(ctx, server.Config{Scheduler: scheduler.DefaultConfig(schema), Backend: memory.New(schema),
		Clock: server.SystemClock{}, Flux: &server.FluxConfig{Tree: tree}})
	require.NoError(t, err)
	require.NoError(t, srv.CreateQueue(ctx, flotilla.Queue{Name: "A"}))
	ts := httptest.NewServer(httpapi.New(srv, httpapi.Options{}))
	t.Cleanup(ts.Close)
	ids, err := srv.SubmitJSON(ctx, []byte(`{"queue": "A", "jobSet": "s", "jobs": [{"count": 2, "requests": {"cpu": "1"}}]}`))
	require.NoError(t, err)
	code, out, errOut := runCmd(append([]string{"status", "-server", ts.URL, "-v"}, ids...)...)
	require.Equal(t, 0, code, errOut)
	_, table, found := strings.Cut(out, "flux priorities:\n")
	require.True(t, found, out)
	lines := strings.Split(strings.TrimSpace(table), "\n")
	require.Len(t, lines, 3, table)
	assert.True(t, strings.HasPrefix(lines[0], "JOBID"), lines[0])
	for i, id := range ids {
		assert.True(t, strings.HasPrefix(lines[i+1], id+" "), lines[i+1])
		assert.Contains(t, lines[i+1], server.DefaultFluxUser)
	}
}
