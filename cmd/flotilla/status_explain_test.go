package main

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/api"
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
