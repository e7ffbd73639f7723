package server

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flotilla-sched/flotilla"
)

// TestQueueAndClusterNamesThatAreNotPathSegmentsAreRefused: a queue or a
// cluster named "." or ".." could be created but never reached (the
// router cleans such a segment out of /v1/queues/./jobsets/…), so they are
// refused at creation, naming the field, storing nothing; so is a name
// that is not UTF-8.
func TestQueueAndClusterNamesThatAreNotPathSegmentsAreRefused(t *testing.T) {
	w := newWorld(t)
	for _, name := range []string{".", "..", "q\xff"} {
		requireProblems(t, w.srv.CreateQueue(w.ctx, flotilla.Queue{Name: name}),
			problem{`queue "` + strings.ReplaceAll(name, "\xff", `\xff`) + `".name`, name, flotilla.ErrMalformed})
		_, err := w.srv.Report(w.ctx, &Report{Cluster: name, Nodes: nodesOf("c", 1, 4)})
		requireProblems(t, err, problem{"cluster", name, flotilla.ErrMalformed})
	}
	qs, err := w.be.ListQueues(w.ctx)
	require.NoError(t, err)
	require.Empty(t, qs)
	exs, err := w.be.ListExecutors(w.ctx)
	require.NoError(t, err)
	require.Empty(t, exs)
	w.queue("...")
	w.report(Report{Cluster: ".c", Nodes: nodesOf(".c", 1, 4)})
}

// TestNodeNamesLabelsAndTaintsOverTheirLimitsAreRefused: a report's node
// name (253 bytes), label and taint keys (a 253-byte prefix, '/', 63
// bytes) and values (63) are bounded, each problem named by its path.
func TestNodeNamesLabelsAndTaintsOverTheirLimitsAreRefused(t *testing.T) {
	w := newWorld(t)
	n := nodesOf("c1", 1, 4)[0]
	n.Name = strings.Repeat("n", 254)
	n.Labels = map[string]string{strings.Repeat("k", 64): "a", "zone": strings.Repeat("v", 64), strings.Repeat("p", 253) + "/" + strings.Repeat("k", 63): "ok"}
	n.Taints = []flotilla.Taint{{Key: "gpu", Value: strings.Repeat("v", 64), Effect: flotilla.TaintNoSchedule}}
	_, err := w.srv.Report(w.ctx, &Report{Cluster: "c1", Nodes: []flotilla.Node{n}})
	var fields []string
	for _, fe := range fieldErrors(t, err) {
		require.ErrorIs(t, fe, flotilla.ErrOutOfRange, fe.Field)
		fields = append(fields, fe.Field)
	}
	require.ElementsMatch(t, []string{"nodes[0].name", "nodes[0].labels." + strings.Repeat("k", 64), "nodes[0].labels.zone", "nodes[0].taints[0].value"}, fields)
	exs, err := w.be.ListExecutors(w.ctx)
	require.NoError(t, err)
	require.Empty(t, exs)
}
