package sim_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/sim"
)

// fields are the field paths of err's problems, each a *flotilla.FieldError.
func fields(t *testing.T, err error) []string {
	t.Helper()
	var out []string
	for _, e := range flotilla.Problems(err) {
		var fe *flotilla.FieldError
		require.True(t, errors.As(e, &fe), "%v is not a *flotilla.FieldError", e)
		out = append(out, fe.Field)
	}
	return out
}

// TestBadWorkloadFileNamesEveryBadField: each bad workload gets every
// problem at once, each a *flotilla.FieldError at its JSON path.
func TestBadWorkloadFileNamesEveryBadField(t *testing.T) {
	for _, tc := range []struct {
		name, file string
		want       []string
	}{
		{"empty object", `{}`, []string{"queues", "jobTemplates"}},
		{"unknown key", `{"queues": [{"name": "A", "wieght": 2}], "jobTemplates": [{"id": "a", "queue": "A", "count": 1, "requests": {"cpu": "1"}}]}`,
			[]string{"queues[0].wieght"}},
		{"bad queue", `{"queues": [{"name": "A", "weight": 0}, {"name": "A"}, {}], "jobTemplates": [{"id": "a", "queue": "A", "count": 1, "requests": {"cpu": "1"}}]}`,
			[]string{"queues[0].weight", "queues[1].name", "queues[2].name"}},
		{"bad template", `{"queues": [{"name": "A"}], "jobTemplates": [{"queue": "Z", "count": 0, "runtime": {"minimum": "soon", "tailMean": "-1s"}, "arrival": {"at": "x", "rate": -1, "after": ["nope"]}}]}`,
			[]string{"jobTemplates[0].id", "jobTemplates[0].queue", "jobTemplates[0].count", "jobTemplates[0].requests",
				"jobTemplates[0].arrival.at", "jobTemplates[0].arrival.rate", "jobTemplates[0].arrival.after[0]",
				"jobTemplates[0].runtime.minimum", "jobTemplates[0].runtime.tailMean"}},
		{"gang and repeat", `{"queues": [{"name": "A"}], "jobTemplates": [{"id": "a", "queue": "A", "count": 3, "requests": {"cpu": "1"}, "gang": {"cardinality": 2}, "repeat": {"numTimes": 0, "period": "0s"}}]}`,
			[]string{"jobTemplates[0].gang.cardinality", "jobTemplates[0].repeat.numTimes", "jobTemplates[0].repeat.period"}},
		{"duplicate ids and a cycle", `{"duration": "-1h", "queues": [{"name": "A"}], "jobTemplates": [
			{"id": "a", "queue": "A", "count": 1, "requests": {"cpu": "1"}, "arrival": {"after": ["b"]}},
			{"id": "b", "queue": "A", "count": 1, "requests": {"cpu": "1"}, "arrival": {"after": ["a"]}},
			{"id": "a", "queue": "A", "count": 1, "requests": {"cpu": "1"}}]}`,
			[]string{"duration", "jobTemplates[2].id", "jobTemplates[0].arrival.after", "jobTemplates[1].arrival.after"}},
		{"wrong type", `{"queues": [{"name": "A"}], "jobTemplates": [{"id": "a", "queue": "A", "count": "many", "requests": {"cpu": "1"}}]}`,
			[]string{"jobTemplates[0].count"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := sim.ParseWorkload([]byte(tc.file))
			require.Error(t, err)
			require.ElementsMatch(t, tc.want, fields(t, err))
		})
	}
}

// TestBadClusterFileNamesEveryBadField: the same for cluster files.
func TestBadClusterFileNamesEveryBadField(t *testing.T) {
	for _, tc := range []struct {
		name, file string
		want       []string
	}{
		{"empty object", `{}`, []string{"clusters"}},
		{"bad clusters", `{"clusters": [{"name": "c", "nodes": [{"name": "n", "count": -1, "resources": {"cpu": "lots"}, "taints": [{}]}]}, {"name": "c", "nodes": []}, {"nodes": [{"name": "n"}]}]}`,
			[]string{"clusters[0].nodes[0].count", "clusters[0].nodes[0].resources.cpu", "clusters[0].nodes[0].taints[0].key",
				"clusters[0].nodes[0].taints[0].effect", "clusters[1].name", "clusters[1].nodes", "clusters[2].name", "clusters[2].nodes[0].resources"}},
		{"node named twice", `{"clusters": [{"name": "c", "nodes": [{"name": "n", "resources": {"cpu": "1"}}]}, {"name": "d", "nodes": [{"name": "n", "resources": {"cpu": "1"}}]}]}`,
			[]string{"clusters[1].nodes[0].name"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := sim.ParseClusters([]byte(tc.file))
			require.Error(t, err)
			require.ElementsMatch(t, tc.want, fields(t, err))
		})
	}
}

// TestRunRejectsRequestsAndClassesTheClustersAndConfigLack: what only
// the pair of files can tell — a resource no node has, a priority class
// the configuration lacks — is reported by Run under workload., before
// anything runs.
func TestRunRejectsRequestsAndClassesTheClustersAndConfigLack(t *testing.T) {
	w, err := sim.ParseWorkload([]byte(`{"queues": [{"name": "A"}], "jobTemplates": [
		{"id": "a", "queue": "A", "count": 1, "requests": {"gpu": "1"}, "priorityClass": "gold"}]}`))
	require.NoError(t, err)
	c, err := sim.ParseClusters([]byte(`{"clusters": [{"name": "c", "nodes": [{"name": "n", "resources": {"cpu": "1"}}]}]}`))
	require.NoError(t, err)
	_, err = sim.Run(context.Background(), sim.Config{Workload: w, Clusters: c, Renew: -1})
	require.ElementsMatch(t, []string{"workload.jobTemplates[0].requests.gpu", "workload.jobTemplates[0].priorityClass", "renew"}, fields(t, err))
	_, err = sim.Run(context.Background(), sim.Config{})
	require.ElementsMatch(t, []string{"workload", "clusters"}, fields(t, err))
}
