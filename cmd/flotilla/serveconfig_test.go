package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flotilla-sched/flotilla"
)

// The flux block of serve -config is checked whole with the file, every
// problem at its path under flux: the bank tree's and the weights' as
// `flotilla priority` names them, and the service's own check against the
// resources.
func TestServeConfigFluxBlockProblemsAreNamedUnderFlux(t *testing.T) {
	_, err := parseServeConfig([]byte(`{"flux": {
		"bankTree": {"banks": [{"name": "A", "parent": "nowhere"}], "associations": [{"user": "u", "bank": "A"}]},
		"weights": {"bank": -1}, "defaultUsr": "x"}}`))
	require.Error(t, err)
	fields := map[string]bool{}
	for _, p := range flotilla.Problems(err) {
		var fe *flotilla.FieldError
		require.ErrorAs(t, p, &fe)
		fields[fe.Field] = true
	}
	for _, want := range []string{"flux.bankTree.banks[0].parent", "flux.weights.bank", "flux.defaultUsr"} {
		assert.True(t, fields[want], "want a problem at %s; got %v", want, fields)
	}
	assert.Contains(t, err.Error(), `did you mean "defaultUser"`)

	_, err = parseServeConfig([]byte(`{"flux": {"bankTree": {"banks": [{"name": "A"}], "associations": [{"user": "u", "bank": "A"}]},
		"usageWeights": {"mem": 1}}}`))
	require.Error(t, err)
	assert.ErrorIs(t, err, flotilla.ErrUnknownResource)
	assert.Contains(t, err.Error(), "flux.usageWeights.mem")

	_, err = parseServeConfig([]byte(`{"flux": {}}`))
	require.Error(t, err)
	assert.ErrorIs(t, err, flotilla.ErrRequired)
	assert.Contains(t, err.Error(), "flux.bankTree")

	sc, err := parseServeConfig([]byte(`{"flux": {"bankTree": {"banks": [{"name": "A"}], "associations": [{"user": "u", "bank": "A"}]}, "defaultUser": "u"}}`))
	require.NoError(t, err)
	a, err := sc.newFlux(time.Now())
	require.NoError(t, err)
	b, err := sc.newFlux(time.Now())
	require.NoError(t, err)
	assert.NotSame(t, a.Tree, b.Tree, "each service owns a bank tree of its own")
}

// `flotilla serve -config` with a flux block prioritises jobs by flux and
// `status -v` shows each job's breakdown, charged to the default user's
// association in the queue's bank.
func TestServeWithAFluxBlockShowsTheBreakdownInStatusVerbose(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cfg := writeFile(t, "serve.json", `{"flux": {
		"bankTree": {"banks": [{"name": "research", "priority": 300}], "associations": [{"user": "alice", "bank": "research"}]},
		"weights": {"bank": 10}, "banks": {"A": "research"}, "defaultUser": "alice"}}`)
	_, url := serveOn(t, ctx, "-config", cfg)
	code, _, errOut := runClient(t, ctx, url, "queue", "create", "A")
	require.Equal(t, 0, code, errOut)
	jobs := writeFile(t, "jobs.json", `{"queue": "A", "jobSet": "s", "jobs": [{"requests": {"cpu": "1"}}]}`)
	code, out, errOut := runClient(t, ctx, url, "submit", jobs)
	require.Equal(t, 0, code, errOut)
	id := strings.TrimSpace(out)
	code, out, errOut = runClient(t, ctx, url, "status", "-v", id)
	require.Equal(t, 0, code, errOut)
	_, table, found := strings.Cut(out, "flux priorities:\n")
	require.True(t, found, out)
	lines := strings.Split(strings.TrimSpace(table), "\n")
	require.Len(t, lines, 2, table)
	assert.Equal(t, []string{id, "alice", "research"}, strings.Fields(lines[1])[:3], lines[1])
}
