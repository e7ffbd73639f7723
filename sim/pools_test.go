package sim_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/scheduler"
	"github.com/flotilla-sched/flotilla/sim"
)

// requireFieldError requires err to hold a *flotilla.FieldError at field
// with value and kind.
func requireFieldError(t *testing.T, err error, field, value string, kind error) {
	t.Helper()
	require.Error(t, err)
	for _, p := range flotilla.Problems(err) {
		var fe *flotilla.FieldError
		if errors.As(p, &fe) && fe.Field == field {
			require.Equal(t, value, fe.Value, "%s", p)
			require.ErrorIs(t, p, kind)
			return
		}
	}
	t.Fatalf("no problem at %s in %v", field, err)
}

func TestWorkloadPoolsAndGangTopologyAreCheckedNamingFieldAndValue(t *testing.T) {
	tmpl := func(extra string) string {
		return `{"queues": [{"name": "A"}], "jobTemplates": [{"id": "t", "queue": "A", "count": 2,
			"requests": {"cpu": "1"}` + extra + `}]}`
	}
	for _, tc := range []struct {
		name, extra, field, value string
		kind                      error
	}{
		{"no pool named", `, "pools": []`, "jobTemplates[0].pools", "[]", flotilla.ErrRequired},
		{"a malformed pool", `, "pools": ["a", "b c"]`, "jobTemplates[0].pools[1]", "b c", flotilla.ErrMalformed},
		{"a pool twice", `, "pools": ["a", "a"]`, "jobTemplates[0].pools[1]", "a", flotilla.ErrDuplicate},
		{"a topology asking no level", `, "gang": {"cardinality": 2, "topology": {"name": "default"}}`,
			"jobTemplates[0].gang.topology.required", "", flotilla.ErrRequired},
		{"a topology with a node-uniformity label", `, "gang": {"cardinality": 2, "nodeUniformityLabel": "zone", "topology": {"required": "rack"}}`,
			"jobTemplates[0].gang.topology.required", "rack", flotilla.ErrInconsistent},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := sim.ParseWorkload([]byte(tmpl(tc.extra)))
			requireFieldError(t, err, tc.field, tc.value, tc.kind)
		})
	}
	w, err := sim.ParseWorkload([]byte(tmpl(`, "pools": ["b", "a"], "gang": {"cardinality": 2, "topology": {"name": "net", "required": "rack", "preferred": "host"}}`)))
	require.NoError(t, err)
	require.Equal(t, []string{"b", "a"}, w.JobTemplates[0].Pools)
	require.Equal(t, &sim.GangTopology{Name: "net", Required: "rack", Preferred: "host"}, w.JobTemplates[0].Gang.Topology)
}

// twoPools are two clusters of one 4-cpu node, in pools a and b.
func twoPools(t *testing.T) *sim.Clusters {
	c, err := sim.ParseClusters([]byte(`{"clusters": [
		{"name": "ca", "pool": "a", "nodes": [{"name": "na", "resources": {"cpu": "4"}}]},
		{"name": "cb", "pool": "b", "nodes": [{"name": "nb", "resources": {"cpu": "4"}}]}]}`))
	require.NoError(t, err)
	return c
}

// A template's pools keep its jobs off the other pools' clusters, however
// much room those have: queue A's jobs accept pool b only and run there
// four at a time, while pool a runs B's.
func TestSimulatedJobsRunOnlyInThePoolsTheyAccept(t *testing.T) {
	w, err := sim.ParseWorkload([]byte(`{"seed": 3, "queues": [{"name": "A"}, {"name": "B"}], "jobTemplates": [
		{"id": "onlyB", "queue": "A", "count": 8, "requests": {"cpu": "1"}, "pools": ["b"], "runtime": {"minimum": "30s"}},
		{"id": "any", "queue": "B", "count": 2, "requests": {"cpu": "1"}, "runtime": {"minimum": "30s"}}]}`))
	require.NoError(t, err)
	out, err := sim.Run(context.Background(), sim.Config{Workload: w, Clusters: twoPools(t)})
	require.NoError(t, err)
	require.True(t, out.Pools)
	scheduled := map[string]int{}
	for _, r := range out.Queues {
		scheduled[r.Queue+"@"+r.Pool] += r.Scheduled
		if r.Queue == "A" {
			require.LessOrEqual(t, r.Running, 4, "pool %s holds four", r.Pool)
		}
		if r.Queue == "A" && r.Pool == "a" {
			require.Zero(t, r.Running+r.Queued, "cycle %d: A's jobs are not pool a's", r.Cycle)
		}
	}
	require.Equal(t, 8, scheduled["A@b"])
	require.Zero(t, scheduled["A@a"])
	require.Equal(t, 2, scheduled["B@a"]+scheduled["B@b"])
	for _, j := range out.Jobs {
		require.Equal(t, "succeeded", j.State, j.Job)
	}
}

// A gang's topology reaches the scheduler: each gang of three 2-cpu jobs
// requiring a rack lands on the three nodes of rack r1, though rack r0's
// two nodes and one of r1 would hold it too (and do without the
// topology); a topology or level the configuration lacks is refused
// naming the template's field.
func TestSimulatedGangTopologyPlacesEachGangInOneRack(t *testing.T) {
	c, err := sim.ParseClusters([]byte(`{"clusters": [{"name": "c", "nodes": [
		{"name": "r0", "count": 2, "resources": {"cpu": "2"}, "labels": {"rack": "r0"}},
		{"name": "r1", "count": 3, "resources": {"cpu": "2"}, "labels": {"rack": "r1"}}]}]}`))
	require.NoError(t, err)
	w, err := sim.ParseWorkload([]byte(`{"seed": 5, "queues": [{"name": "A"}], "jobTemplates": [
		{"id": "g", "queue": "A", "count": 6, "requests": {"cpu": "2"}, "gang": {"cardinality": 3, "topology": {"required": "rack"}},
		 "arrival": {"rate": 0.05}, "runtime": {"minimum": "20s", "tailMean": "20s"}}]}`))
	require.NoError(t, err)
	schema := flotilla.MustResourceSchema("cpu")
	sc := scheduler.DefaultConfig(schema)
	sc.Topologies = []flotilla.Topology{{Name: "default", Levels: []string{"rack"}}}
	gangs := 0
	out, err := sim.RunObserved(context.Background(), sim.Config{Workload: w, Clusters: c, Scheduler: &sc},
		func(_ time.Duration, res *scheduler.Result) {
			racks := map[string]map[string]bool{}
			for _, a := range res.Scheduled {
				if racks[a.Job.Gang.ID] == nil {
					racks[a.Job.Gang.ID] = map[string]bool{}
				}
				racks[a.Job.Gang.ID][strings.SplitN(strings.TrimPrefix(a.Node, "c/"), "-", 2)[0]] = true
			}
			for id, rs := range racks {
				require.Len(t, rs, 1, "gang %s spans racks %v", id, rs)
				gangs++
			}
		})
	require.NoError(t, err)
	require.Equal(t, 2, gangs)
	for _, j := range out.Jobs {
		require.Equal(t, "succeeded", j.State, j.Job)
	}

	w.JobTemplates[0].Gang.Topology.Required = "zone"
	_, err = sim.Run(context.Background(), sim.Config{Workload: w, Clusters: c, Scheduler: &sc})
	requireFieldError(t, err, "workload.jobTemplates[0].gang.topology.required", "zone", flotilla.ErrUnknownName)
	_, err = sim.Run(context.Background(), sim.Config{Workload: w, Clusters: c})
	require.Error(t, err, "no topology configured")
	require.Contains(t, err.Error(), "workload.jobTemplates[0].gang.topology")
}
