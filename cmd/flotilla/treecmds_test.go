package main

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flotilla-sched/flotilla/api"
)

// runIn runs a client command against p and returns its exit code and
// output.
func (p *inProcess) runIn(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(context.Background(), append(args, "-server", p.url), &out, &errOut)
	return code, out.String(), errOut.String()
}

// The queue and group commands create and update the tree's nodes with
// their flags; update changes only the flags given.
func TestQueueAndGroupCommandsSetTheTreeFieldsAndUpdateOnlyTheFlagsGiven(t *testing.T) {
	p := newInProcess(t)
	ctx := context.Background()
	for _, args := range [][]string{
		{"group", "create", "research", "-guaranteed", "cpu=16", "-limit", "cpu=24, memory=64Gi", "-priority-factor", "2"},
		{"queue", "create", "nlp", "-parent", "research", "-priority-factor", "0.5", "-guaranteed", "cpu=4", "-lending-limit", "cpu=2"},
		{"queue", "update", "nlp", "-limit", "cpu=8"},
		{"group", "create", "prod"},
		{"group", "update", "prod", "-parent", "research"},
	} {
		code, _, errOut := p.runIn(t, args...)
		require.Equal(t, 0, code, "%v: %s", args, errOut)
	}
	q, err := p.srv.Queue(ctx, "nlp")
	require.NoError(t, err)
	schema := p.srv.Schema()
	require.Equal(t, "research", q.Parent)
	require.Equal(t, 0.5, q.PriorityFactor)
	require.Equal(t, map[string]string{"cpu": "4"}, api.FormatQuota(schema, q.Guaranteed))
	require.Equal(t, map[string]string{"cpu": "8"}, api.FormatQuota(schema, q.Limit))
	require.Equal(t, map[string]string{"cpu": "2"}, api.FormatQuota(schema, q.LendingLimit), "update kept the flags not given")
	g, err := p.srv.Group(ctx, "prod")
	require.NoError(t, err)
	require.Equal(t, "research", g.Parent)
	g, err = p.srv.Group(ctx, "research")
	require.NoError(t, err)
	require.Equal(t, map[string]string{"cpu": "24", "memory": "64Gi"}, api.FormatQuota(schema, g.Limit))

	code, out, _ := p.runIn(t, "group", "list")
	require.Equal(t, 0, code)
	require.Equal(t, `GROUP     FACTOR  GUARANTEED  LIMIT               LENDING LIMIT  QUEUED  RUNNING  SHARE  FAIR SHARE  ADJUSTED FAIR SHARE  USAGE
research  2       cpu=16      cpu=24,memory=64Gi  -              0       0        0.000  0.000       0.000                0.000
  prod    1       -           -                   -              0       0        0.000  0.000       0.000                0.000
`, out)
	code, out, _ = p.runIn(t, "queue", "list")
	require.Equal(t, 0, code)
	require.Equal(t, `QUEUE      FACTOR  QUEUED  LEASED  RUNNING  SHARE  FAIR SHARE  ADJUSTED FAIR SHARE  USAGE
A          1       0       0       0        0.000  0.000       0.000                0.000
research/  2       0       -       0        0.000  0.000       0.000                0.000
  nlp      0.5     0       0       0        0.000  0.000       0.000                0.000
  prod/    1       0       -       0        0.000  0.000       0.000                0.000
`, out)
	code, out, _ = p.runIn(t, "group", "list", "-o", "json")
	require.Equal(t, 0, code)
	var gs []api.Group
	require.NoError(t, json.Unmarshal([]byte(out), &gs))
	require.Len(t, gs, 2)
	require.Equal(t, map[string]string{"cpu": "16"}, gs[1].Guaranteed)

	code, out, errOut := p.runIn(t, "group", "delete", "research")
	require.Equal(t, 1, code, out)
	require.Contains(t, errOut, "has children: group prod, queue nlp")
	for _, args := range [][]string{{"queue", "update", "nlp", "-parent", ""}, {"group", "delete", "prod"}, {"group", "delete", "research"}} {
		code, _, errOut := p.runIn(t, args...)
		require.Equal(t, 0, code, "%v: %s", args, errOut)
	}
}

// Bad input is exit code 2 naming the flag (a malformed -guaranteed) or the
// field and value the service refused, and stores nothing.
func TestTreeCommandsRefuseBadInputNamingTheFlagOrFieldAndValue(t *testing.T) {
	p := newInProcess(t)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"queue", "create", "x", "-guaranteed", "cpu16"}, `-guaranteed "cpu16": "cpu16" is not resource=quantity`},
		{[]string{"group", "create", "g", "-limit", "cpu=1,cpu=2"}, `-limit "cpu=1,cpu=2": resource "cpu" given twice`},
		{[]string{"queue", "create", "x", "-parent", "nope"}, `queue "x".parent "nope"`},
		{[]string{"queue", "create", "x", "-guaranteed", "cpu=lots"}, `queue "x".guaranteed.cpu "lots"`},
		{[]string{"group", "create", "g", "-guaranteed", "cpu=2", "-limit", "cpu=1"}, `group "g".limit.cpu "1"`},
		{[]string{"group", "create", "g", "-lending-limit", "memory=1Gi"}, `group "g".lendingLimit.memory "1Gi"`},
		{[]string{"group", "list", "extra"}, "list takes no arguments"},
		{[]string{"group", "rename", "g"}, `unknown subcommand "rename"`},
	} {
		code, _, errOut := p.runIn(t, c.args...)
		require.Equal(t, 2, code, "%v: %s", c.args, errOut)
		require.Contains(t, errOut, c.want, "%v", c.args)
	}
	qs, err := p.srv.ListQueues(context.Background())
	require.NoError(t, err)
	require.Len(t, qs, 1, "only queue A")
	gs, err := p.srv.ListGroups(context.Background())
	require.NoError(t, err)
	require.Empty(t, gs)
}
