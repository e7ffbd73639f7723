package sim_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/leanovate/gopter"
	"github.com/leanovate/gopter/gen"
	"github.com/leanovate/gopter/prop"
	"github.com/stretchr/testify/assert"
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

// leasedByJobSet runs a workload over clusters (both JSON) and returns,
// per job set, the lease times of its jobs in job order (-1 for a job
// never leased).
func leasedByJobSet(t *testing.T, workload, clusters string) map[string][]float64 {
	t.Helper()
	w, err := sim.ParseWorkload([]byte(workload))
	require.NoError(t, err)
	c, err := sim.ParseClusters([]byte(clusters))
	require.NoError(t, err)
	out, err := sim.Run(context.Background(), sim.Config{Workload: w, Clusters: c})
	require.NoError(t, err)
	got := map[string][]float64{}
	for _, j := range out.Jobs {
		at := -1.0
		if j.Leased != nil {
			at = *j.Leased
		}
		got[j.JobSet] = append(got[j.JobSet], at)
	}
	return got
}

// TestTemplateNodeSelectorAndTolerationsChooseTheNodes: a template's node
// selector and tolerations reach its jobs. Two jobs that select the one
// tainted node, and tolerate its taint, run there one after the other
// though an untainted node stands idle; without the toleration they
// never run; jobs that name neither use the untainted node.
func TestTemplateNodeSelectorAndTolerationsChooseTheNodes(t *testing.T) {
	got := leasedByJobSet(t, `{"duration": "1h", "queues": [{"name": "A"}], "jobTemplates": [
		{"id": "sel", "queue": "A", "count": 2, "requests": {"cpu": "1"}, "runtime": {"minimum": "10m"},
		 "nodeSelector": {"zone": "b"}, "tolerations": [{"key": "dedicated", "value": "x", "effect": "NoSchedule"}]},
		{"id": "intolerant", "queue": "A", "count": 1, "requests": {"cpu": "1"}, "nodeSelector": {"zone": "b"}},
		{"id": "plain", "queue": "A", "count": 1, "requests": {"cpu": "1"}, "arrival": {"at": "30m"}}]}`,
		`{"clusters": [{"name": "c", "nodes": [
		  {"name": "plain", "resources": {"cpu": "1"}},
		  {"name": "special", "resources": {"cpu": "1"}, "labels": {"zone": "b"}, "taints": [{"key": "dedicated", "value": "x", "effect": "NoSchedule"}]}]}]}`)
	require.Len(t, got["sel"], 2)
	assert.Equal(t, 0.0, got["sel"][0])
	assert.GreaterOrEqual(t, got["sel"][1], 600.0, "the second waits for the only node it may use")
	assert.Equal(t, []float64{-1}, got["intolerant"])
	assert.Equal(t, []float64{1800}, got["plain"])
}

// TestTemplatePriorityOrdersJobsWithinTheirQueue: of two jobs of one
// queue and class submitted together, the one of lower priority runs
// first, though its template comes second.
func TestTemplatePriorityOrdersJobsWithinTheirQueue(t *testing.T) {
	got := leasedByJobSet(t, `{"queues": [{"name": "A"}], "jobTemplates": [
		{"id": "nine", "queue": "A", "count": 1, "priority": 9, "requests": {"cpu": "1"}, "runtime": {"minimum": "5m"}},
		{"id": "zero", "queue": "A", "count": 1, "requests": {"cpu": "1"}, "runtime": {"minimum": "5m"}}]}`,
		`{"clusters": [{"name": "c", "nodes": [{"name": "n", "resources": {"cpu": "1"}}]}]}`)
	assert.Equal(t, []float64{0}, got["zero"])
	assert.GreaterOrEqual(t, got["nine"][0], 300.0)
}

// TestGangNodeUniformityLabelKeepsAGangOnOneValue: a gang of two over two
// one-job nodes of different zones runs across them, but not when its
// members must share a zone.
func TestGangNodeUniformityLabelKeepsAGangOnOneValue(t *testing.T) {
	clusters := `{"clusters": [{"name": "c", "nodes": [
	  {"name": "a", "resources": {"cpu": "1"}, "labels": {"zone": "a"}},
	  {"name": "b", "resources": {"cpu": "1"}, "labels": {"zone": "b"}}]}]}`
	for _, tc := range []struct {
		gang string
		want []float64
	}{
		{`{"cardinality": 2}`, []float64{0, 0}},
		{`{"cardinality": 2, "nodeUniformityLabel": "zone"}`, []float64{-1, -1}},
	} {
		got := leasedByJobSet(t, `{"duration": "1h", "queues": [{"name": "A"}], "jobTemplates": [
			{"id": "g", "queue": "A", "count": 2, "requests": {"cpu": "1"}, "gang": `+tc.gang+`}]}`, clusters)
		assert.Equal(t, tc.want, got["g"], tc.gang)
	}
}

// TestTemplateTolerationsAndSelectorAreJudgedByTheJobRules: a
// template's tolerations and node selector are checked as a job's are
// (flotilla.Job.Validate), at the template's paths.
func TestTemplateTolerationsAndSelectorAreJudgedByTheJobRules(t *testing.T) {
	_, err := sim.ParseWorkload([]byte(`{"queues": [{"name": "A"}], "jobTemplates": [{"id": "a", "queue": "A", "count": 1,
		"requests": {"cpu": "1"}, "nodeSelector": {"": "x"},
		"tolerations": [{"key": "k", "operator": "Maybe", "effect": "Sometimes"}, {"operator": "Exists", "value": "v"}]}]}`))
	require.ElementsMatch(t, []string{"jobTemplates[0].nodeSelector", "jobTemplates[0].tolerations[0].operator",
		"jobTemplates[0].tolerations[0].effect", "jobTemplates[0].tolerations[1].value"}, fields(t, err))
}

// TestCyclicTemplatesAreThoseThatReachACycle is a property over random
// dependency graphs (gopter draws the seed): Validate reports at
// jobTemplates[i].arrival.after exactly the templates from which a cycle
// of dependencies can be reached, as a transitive closure (the naive
// oracle) says.
func TestCyclicTemplatesAreThoseThatReachACycle(t *testing.T) {
	params := gopter.DefaultTestParametersWithSeed(20261122)
	params.MinSuccessfulTests = 500
	props := gopter.NewProperties(params)
	props.Property("cycles match the closure", prop.ForAll(func(seed int64) string {
		rng := rand.New(rand.NewPCG(uint64(seed), 2))
		n := 1 + rng.IntN(10)
		reach := make([][]bool, n)
		w := &sim.Workload{Queues: []sim.QueueSpec{{Name: "A"}}}
		for i := range n {
			reach[i] = make([]bool, n)
			tpl := sim.JobTemplate{ID: fmt.Sprintf("t%d", i), Queue: "A", Count: 1, Requests: map[string]string{"cpu": "1"}}
			for range rng.IntN(3) {
				j := rng.IntN(n)
				tpl.Arrival.After = append(tpl.Arrival.After, fmt.Sprintf("t%d", j))
				reach[i][j] = true
			}
			w.JobTemplates = append(w.JobTemplates, tpl)
		}
		for k := range n {
			for i := range n {
				for j := range n {
					reach[i][j] = reach[i][j] || reach[i][k] && reach[k][j]
				}
			}
		}
		var want []string
		for i := range n {
			for j := range n {
				if reach[i][j] && reach[j][j] {
					want = append(want, fmt.Sprintf("jobTemplates[%d].arrival.after", i))
					break
				}
			}
		}
		var got []string
		for _, e := range flotilla.Problems(w.Validate()) {
			var fe *flotilla.FieldError
			if errors.As(e, &fe) {
				got = append(got, fe.Field)
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			return fmt.Sprintf("got %v, want %v for %+v", got, want, w.JobTemplates)
		}
		return ""
	}, gen.Int64()))
	props.TestingRun(t)
}

// BenchmarkValidate20kChainedTemplates validates 20,000 templates, each
// after the one before.
func BenchmarkValidate20kChainedTemplates(b *testing.B) {
	w := &sim.Workload{Queues: []sim.QueueSpec{{Name: "A"}}}
	for i := range 20_000 {
		tpl := sim.JobTemplate{ID: fmt.Sprintf("t%d", i), Queue: "A", Count: 1, Requests: map[string]string{"cpu": "1"}}
		if i > 0 {
			tpl.Arrival.After = []string{fmt.Sprintf("t%d", i-1)}
		}
		w.JobTemplates = append(w.JobTemplates, tpl)
	}
	for b.Loop() {
		if err := w.Validate(); err != nil {
			b.Fatal(err)
		}
	}
}
