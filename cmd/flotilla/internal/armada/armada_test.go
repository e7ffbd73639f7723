package armada

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/leanovate/gopter"
	"github.com/leanovate/gopter/gen"
	"github.com/leanovate/gopter/prop"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/sim"
)

// armadaTemplate reads a one-queue workload around the YAML of one job
// template (indented under jobTemplates) and returns its template.
func armadaTemplate(t *testing.T, tpl string) sim.JobTemplate {
	t.Helper()
	w, err := ParseWorkload([]byte("queues:\n  - name: q\n    weight: 1\n    jobTemplates:\n" + tpl))
	require.NoError(t, err)
	require.Len(t, w.Workload.JobTemplates, 1)
	return w.Workload.JobTemplates[0]
}

const armadaRequests = "        requirements:\n          resourceRequirements:\n            requests: {cpu: 1}\n"

// TestArmadaJobTemplateFieldsMapToSimTemplates: each mapping rule of
// README's table, one row each.
func TestArmadaJobTemplateFieldsMapToSimTemplates(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		check      func(t *testing.T, j sim.JobTemplate)
	}{
		{"id absent is <queue>-<index>", "      - number: 1\n" + armadaRequests, func(t *testing.T, j sim.JobTemplate) {
			assert.Equal(t, "q-0", j.ID)
			assert.Equal(t, "q", j.Queue)
			assert.Equal(t, "", j.JobSet, "sim's default job set is the id")
		}},
		{"a whole number written as a float", "      - number: 1e1\n" + armadaRequests, func(t *testing.T, j sim.JobTemplate) {
			assert.Equal(t, 10, j.Count)
		}},
		{"number, id, jobSet, class, queuePriority", "      - number: 7\n        id: x\n        jobSet: s\n        priorityClassName: armada-preemptible\n        queuePriority: 3\n" + armadaRequests,
			func(t *testing.T, j sim.JobTemplate) {
				assert.Equal(t, sim.JobTemplate{ID: "x", Queue: "q", JobSet: "s", Count: 7, PriorityClass: "armada-preemptible",
					Priority: 3, Requests: map[string]string{"cpu": "1"}}, j)
			}},
		{"requests are quantities as written; limits are ignored", "      - number: 1\n        requirements:\n          resourceRequirements:\n            requests: {cpu: 500m, memory: 4Gi, nvidia.com/gpu: 1}\n            limits: {cpu: 2}\n",
			func(t *testing.T, j sim.JobTemplate) {
				assert.Equal(t, flotilla.Quantities{"cpu": "500m", "memory": "4Gi", "nvidia.com/gpu": "1"}, j.Requests)
			}},
		{"earliestSubmitTime without dependencies", "      - number: 1\n        earliestSubmitTime: 30m\n        earliestSubmitTimeFromDependencyCompletion: 2h\n" + armadaRequests,
			func(t *testing.T, j sim.JobTemplate) { assert.Equal(t, sim.Arrival{At: "30m0s"}, j.Arrival) }},
		{"dependencies: the later of the two delays", "      - number: 1\n        id: a\n" + armadaRequests +
			"      - number: 1\n        dependencies: [a]\n        earliestSubmitTime: 1m\n        earliestSubmitTimeFromDependencyCompletion: 5m\n" + armadaRequests,
			nil},
		{"runtime distribution", "      - number: 1\n        runtimeDistribution: {minimum: 5m, tailMean: 36s}\n" + armadaRequests,
			func(t *testing.T, j sim.JobTemplate) {
				assert.Equal(t, sim.Runtime{Minimum: "5m0s", TailMean: "36s"}, j.Runtime)
			}},
		{"gang: cluster uniformity by default, no tail", "      - number: 4\n        gangCardinality: 2\n        runtimeDistribution: {minimum: 5m, tailMean: 36s}\n" + armadaRequests,
			func(t *testing.T, j sim.JobTemplate) {
				assert.Equal(t, &sim.Gang{Cardinality: 2, NodeUniformityLabel: armadaClusterLabel}, j.Gang)
				assert.Equal(t, sim.Runtime{Minimum: "5m0s"}, j.Runtime, "Armada drops a gang template's tail")
			}},
		{"gang with its own label", "      - number: 2\n        gangCardinality: 2\n        gangNodeUniformityLabel: rack\n" + armadaRequests,
			func(t *testing.T, j sim.JobTemplate) {
				assert.Equal(t, &sim.Gang{Cardinality: 2, NodeUniformityLabel: "rack"}, j.Gang)
			}},
		{"repeat numTimes counts every submission", "      - number: 1\n        repeat: {numTimes: 3, period: 10m}\n" + armadaRequests,
			func(t *testing.T, j sim.JobTemplate) {
				assert.Equal(t, &sim.Repeat{NumTimes: 2, Period: "10m0s"}, j.Repeat)
			}},
		{"repeat once is no repeat", "      - number: 1\n        repeat: {numTimes: 1, period: 10m}\n" + armadaRequests,
			func(t *testing.T, j sim.JobTemplate) { assert.Nil(t, j.Repeat) }},
		{"repeat with period 0 is one bigger submission", "      - number: 2\n        repeat: {numTimes: 3, period: 0s}\n" + armadaRequests,
			func(t *testing.T, j sim.JobTemplate) {
				assert.Nil(t, j.Repeat)
				assert.Equal(t, 6, j.Count)
			}},
		{"node selector and tolerations", "      - number: 1\n        requirements:\n          nodeSelector: {zone: b}\n          tolerations:\n            - {key: k, operator: Exists, effect: NoSchedule, tolerationSeconds: 30}\n          resourceRequirements:\n            requests: {cpu: 1}\n",
			func(t *testing.T, j sim.JobTemplate) {
				assert.Equal(t, map[string]string{"zone": "b"}, j.NodeSelector)
				assert.Equal(t, []sim.Toleration{{Key: "k", Operator: "Exists", Effect: "NoSchedule"}}, j.Tolerations)
			}},
		{"ignored: preemptionPolicy, plain annotations, queue of its own queue", "      - number: 1\n        queue: q\n        numberSuccessful: 0\n        requirements:\n          preemptionPolicy: Never\n          annotations: {owner: me}\n          resourceRequirements:\n            requests: {cpu: 1}\n",
			func(t *testing.T, j sim.JobTemplate) {
				assert.Equal(t, sim.JobTemplate{ID: "q-0", Queue: "q", Count: 1, Requests: map[string]string{"cpu": "1"}}, j)
			}},
		{"keys match without regard to case, as Armada's loader", "      - Number: 2\n        RUNTIMEDISTRIBUTION: {Minimum: 1m}\n        Requirements:\n          ResourceRequirements:\n            Requests: {cpu: 1}\n",
			func(t *testing.T, j sim.JobTemplate) {
				assert.Equal(t, 2, j.Count)
				assert.Equal(t, "1m0s", j.Runtime.Minimum)
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.check == nil {
				w, err := ParseWorkload([]byte("queues:\n  - name: q\n    weight: 1\n    jobTemplates:\n" + tc.yaml))
				require.NoError(t, err)
				j := w.Workload.JobTemplates[1]
				assert.Equal(t, sim.Arrival{At: "5m0s", After: []string{"a"}}, j.Arrival)
				return
			}
			tc.check(t, armadaTemplate(t, tc.yaml))
		})
	}
}

// TestArmadaWorkloadTopLevelMapsQueuesAndSeed: weight and randomSeed (an
// int64, its bits the seed).
func TestArmadaWorkloadTopLevelMapsQueuesAndSeed(t *testing.T) {
	w, err := ParseWorkload([]byte("name: x\nrandomSeed: -1\nqueues:\n  - name: A\n    weight: 2.5\n    jobTemplates:\n      - number: 1\n" + armadaRequests))
	require.NoError(t, err)
	assert.Equal(t, uint64(1<<64-1), w.Workload.Seed)
	require.Len(t, w.Workload.Queues, 1)
	assert.Equal(t, "A", w.Workload.Queues[0].Name)
	assert.Equal(t, 2.5, *w.Workload.Queues[0].Weight)
}

// TestArmadaClusterSpecMapsNodesAsArmadaNamesAndLabelsThem: node template
// k of cluster c is nodes c-k-0 …, labelled with the cluster's name over
// a label of that key; taints and labels carried; the older form's
// unnamed clusters are <pool>-<group>-<index>.
func TestArmadaClusterSpecMapsNodesAsArmadaNamesAndLabelsThem(t *testing.T) {
	c, err := ParseClusters([]byte(`
pools:
  - name: p
    clusterGroups:
      - clusters:
          - nodeTemplates:
              - number: 2
                labels: {zone: a, armadaproject.io/clusterName: other}
                taints: [{key: k, value: v, effect: NoSchedule, timeAdded: "2024-01-01T00:00:00Z"}]
                totalResources: {resources: {cpu: "32", memory: 256Gi}}
              - number: 1
                totalResources: {resources: {cpu: 8}}
`))
	require.NoError(t, err)
	two, one := 2, 1
	assert.Equal(t, &sim.Clusters{Clusters: []sim.Cluster{{Name: "p-0-0", Pool: "p", Nodes: []sim.NodeTemplate{
		{Name: "p-0-0-0", Count: &two, Resources: map[string]string{"cpu": "32", "memory": "256Gi"},
			Labels: map[string]string{"zone": "a", armadaClusterLabel: "p-0-0"}, Taints: []sim.Taint{{Key: "k", Value: "v", Effect: "NoSchedule"}}},
		{Name: "p-0-0-1", Count: &one, Resources: map[string]string{"cpu": "8"}, Labels: map[string]string{armadaClusterLabel: "p-0-0"}},
	}}}}, c.Clusters)
}

// TestArmadaPendingDelayIsAddedToEveryRuntime: the pending delay's
// minimum adds to every template's minimum; its tail becomes the tail of
// templates without one, and is refused beside one.
func TestArmadaPendingDelayIsAddedToEveryRuntime(t *testing.T) {
	w := &sim.Workload{JobTemplates: []sim.JobTemplate{{ID: "a", Runtime: sim.Runtime{Minimum: "1m"}}, {ID: "b"}}}
	require.NoError(t, ApplyPendingDelay(w, 10e9, 5e9))
	assert.Equal(t, sim.Runtime{Minimum: "1m10s", TailMean: "5s"}, w.JobTemplates[0].Runtime)
	assert.Equal(t, sim.Runtime{Minimum: "10s", TailMean: "5s"}, w.JobTemplates[1].Runtime)
	w = &sim.Workload{JobTemplates: []sim.JobTemplate{{ID: "a", Runtime: sim.Runtime{TailMean: "1m"}}}}
	err := ApplyPendingDelay(w, 0, 5e9)
	assert.Equal(t, []string{"pendingDelayDistribution.tailMean"}, armadaProblemFields(t, err))
	c, err := ParseClusters([]byte("pendingDelayDistribution: {minimum: 10s, tailMean: 5s}\nclusters: [{name: c, pool: p, nodeTemplates: [{number: 1, totalResources: {resources: {cpu: 1}}}]}]\n"))
	require.NoError(t, err)
	assert.Equal(t, [2]float64{10, 5}, [2]float64{c.PendingMinimum.Seconds(), c.PendingTail.Seconds()})
}

// armadaProblemFields are the field paths of err's problems, each a
// *flotilla.FieldError.
func armadaProblemFields(t *testing.T, err error) []string {
	t.Helper()
	var out []string
	for _, e := range flotilla.Problems(err) {
		var fe *flotilla.FieldError
		require.True(t, errors.As(e, &fe), "%v is not a *flotilla.FieldError", e)
		out = append(out, fe.Field)
	}
	return out
}

// TestBadArmadaWorkloadNamesEveryBadFieldAtItsYAMLPath: every problem at
// once, at Armada's paths, what cannot be honoured refused by name.
func TestBadArmadaWorkloadNamesEveryBadFieldAtItsYAMLPath(t *testing.T) {
	for _, tc := range []struct {
		name, file string
		want       []string
	}{
		{"empty", "", []string{"(root)"}},
		{"not YAML", "queues: [", []string{"(root)"}},
		{"two documents", "queues: []\n---\nqueues: []\n", []string{"(root)"}},
		{"not a mapping", "- 1\n", []string{"(root)"}},
		{"no queues", "name: x\n", []string{"queues", "queues"}},
		{"unknown, repeated and mistyped keys", "randomSeed: x\nqueues:\n  - name: A\n    weight: 1\n    Weight: 2\n    jobTemplates:\n      - number: 1\n        jobsets: s\n        requirements: [1]\n",
			[]string{"randomSeed", "queues[0].Weight", "queues[0].jobTemplates[0].jobsets", "queues[0].jobTemplates[0].requirements"}},
		{"queues", "queues:\n  - name: A\n  - name: A\n    weight: 0\n    jobTemplates:\n      - number: 1\n" + armadaRequests,
			[]string{"queues[0].weight", "queues[1].name", "queues[1].weight"}},
		{"template values", "queues:\n  - name: A\n    weight: 1\n    jobTemplates:\n      - number: 3\n        gangCardinality: 2\n        queuePriority: -1\n        dependencies: [nope]\n        runtimeDistribution: {minimum: 5, tailMean: -1s}\n        earliestSubmitTime: soon\n        repeat: {numTimes: 0}\n" + armadaRequests,
			[]string{"queues[0].jobTemplates[0].gangCardinality", "queues[0].jobTemplates[0].queuePriority",
				"queues[0].jobTemplates[0].dependencies[0]", "queues[0].jobTemplates[0].runtimeDistribution.minimum",
				"queues[0].jobTemplates[0].runtimeDistribution.tailMean", "queues[0].jobTemplates[0].earliestSubmitTime",
				"queues[0].jobTemplates[0].repeat.numTimes"}},
		{"what Flotilla cannot honour", "queues:\n  - name: A\n    weight: 1\n    jobTemplates:\n      - number: 1\n        numberSuccessful: 1\n        queue: B\n        gangNodeUniformityLabel: rack\n        requirements:\n          affinity: {nodeAffinity: {}}\n          annotations: {armadaproject.io/gangId: g}\n          preemptionPolicy: Sometimes\n          tolerations: [{operator: Maybe}]\n          resourceRequirements:\n            requests: {cpu: 1}\n            claims: [{name: c}]\n",
			[]string{"queues[0].jobTemplates[0].numberSuccessful", "queues[0].jobTemplates[0].queue",
				"queues[0].jobTemplates[0].gangNodeUniformityLabel", "queues[0].jobTemplates[0].requirements.affinity",
				"queues[0].jobTemplates[0].requirements.annotations.armadaproject.io/gangId",
				"queues[0].jobTemplates[0].requirements.preemptionPolicy",
				"queues[0].jobTemplates[0].requirements.resourceRequirements.claims",
				"queues[0].jobTemplates[0].requirements.tolerations[0].operator"}},
		{"uneven repeats after dependencies", "queues:\n  - name: A\n    weight: 1\n    jobTemplates:\n      - {id: a, number: 1, requirements: {resourceRequirements: {requests: {cpu: 1}}}}\n      - {number: 1, dependencies: [a], earliestSubmitTimeFromDependencyCompletion: 5m, repeat: {numTimes: 2, period: 1m}, requirements: {resourceRequirements: {requests: {cpu: 1}}}}\n",
			[]string{"queues[0].jobTemplates[1].earliestSubmitTimeFromDependencyCompletion"}},
		{"a queue that is not a mapping leaves the others' paths", "queues:\n  - 1\n  - {name: B, weight: -1, jobTemplates: [{number: 1, requirements: {resourceRequirements: {requests: {cpu: 1}}}}]}\n",
			[]string{"queues[0]", "queues[1].weight"}},
		{"a dependency on one repetition", "queues:\n  - name: A\n    weight: 1\n    jobTemplates:\n      - {id: a, number: 1, repeat: {numTimes: 2, period: 1m}, requirements: {resourceRequirements: {requests: {cpu: 1}}}}\n      - {number: 1, dependencies: [a-repeat-1], requirements: {resourceRequirements: {requests: {cpu: 1}}}}\n",
			[]string{"queues[0].jobTemplates[1].dependencies[0]"}},
		{"merge keys", "queues:\n  - &q\n    name: A\n    weight: 1\n  - <<: *q\n", []string{"queues[1].<<", "queues[1].name", "queues[1].weight", "queues"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseWorkload([]byte(tc.file))
			require.Error(t, err)
			assert.ElementsMatch(t, tc.want, armadaProblemFields(t, err), "%v", err)
		})
	}
}

// TestBadArmadaClusterSpecNamesEveryBadFieldAtItsYAMLPath: the same for
// cluster files.
func TestBadArmadaClusterSpecNamesEveryBadFieldAtItsYAMLPath(t *testing.T) {
	for _, tc := range []struct {
		name, file string
		want       []string
	}{
		{"no clusters", "name: x\n", []string{"clusters"}},
		{"cluster fields", "clusters:\n  - name: a\n    nodeTemplates:\n      - number: -1\n        totalResources: {resources: {cpu: x}}\n  - name: a\n    pool: p\n    nodeTemplates:\n      - number: 1\n        taints: [{key: k}]\n        totalResources: {resourcez: {cpu: 1}}\n",
			[]string{"clusters[0].pool", "clusters[0].nodeTemplates[0].number", "clusters[0].nodeTemplates[0].totalResources.resources.cpu",
				"clusters[1].name", "clusters[1].nodeTemplates[0].taints[0].effect", "clusters[1].nodeTemplates[0].totalResources.resourcez",
				"clusters[1].nodeTemplates[0].totalResources.resources"}},
		{"bad pool name", "clusters:\n  - {name: a, pool: p, nodeTemplates: [{number: 1, totalResources: {resources: {cpu: 1}}}]}\n  - {name: b, pool: \"q q\", nodeTemplates: [{number: 1, totalResources: {resources: {cpu: 1}}}]}\n",
			[]string{"clusters[1].pool"}},
		{"older form without a pool name", "pools:\n  - clusterGroups:\n      - clusters:\n          - nodeTemplates: [{number: 1, totalResources: {resources: {cpu: 1}}}]\n",
			[]string{"pools[0].name", "pools[0].clusterGroups[0].clusters[0].pool"}},
		{"older form with another pool", "pools:\n  - name: p\n    clusterGroups:\n      - clusters:\n          - pool: other\n            nodeTemplates: [{number: 1, totalResources: {resources: {cpu: 1}}}]\n",
			[]string{"pools[0].clusterGroups[0].clusters[0].pool"}},
		{"resubmission delay", "workflowManagerDelayDistribution: {minimum: 1m}\nclusters: [{name: a, pool: p, nodeTemplates: [{number: 1, totalResources: {resources: {cpu: 1}}}]}]\n",
			[]string{"workflowManagerDelayDistribution"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseClusters([]byte(tc.file))
			require.Error(t, err)
			assert.ElementsMatch(t, tc.want, armadaProblemFields(t, err), "%v", err)
		})
	}
}

// FuzzArmadaFiles: any bytes read as either of Armada's files give a
// result or only *flotilla.FieldError problems; never a panic.
func FuzzArmadaFiles(f *testing.F) {
	for _, name := range []string{"clusters.yaml", "pools.yaml", "workload.yaml"} {
		b, err := os.ReadFile(filepath.Join("..", "..", "testdata", "armada", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("a: &a [*a, *a]\nqueues: *a\n"))
	f.Add([]byte("queues:\n  - &q {name: A, weight: 1, jobTemplates: [{number: 1}]}\n  - *q\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		check := func(err error) {
			for _, e := range flotilla.Problems(err) {
				var fe *flotilla.FieldError
				if !errors.As(e, &fe) {
					t.Fatalf("problem %v is not a *flotilla.FieldError", e)
				}
			}
		}
		if w, err := ParseWorkload(data); err == nil {
			require.NoError(t, w.Workload.Validate())
		} else {
			check(err)
		}
		if c, err := ParseClusters(data); err == nil {
			require.NoError(t, c.Clusters.Validate())
		} else {
			check(err)
		}
	})
}

// TestArmadaAliasesAreFollowedWithinABudget: an alias reads as the node
// it names (a queue given twice is a duplicate), and a small file whose
// aliases expand past maxYAMLNodes is refused as a whole, at once.
func TestArmadaAliasesAreFollowedWithinABudget(t *testing.T) {
	_, err := ParseWorkload([]byte("queues:\n  - &q {name: A, weight: 1, jobTemplates: [{id: a, number: 1, requirements: {resourceRequirements: {requests: {cpu: 1}}}}]}\n  - *q\n"))
	assert.ElementsMatch(t, []string{"queues[1].name", "queues[1].jobTemplates[0].id"}, armadaProblemFields(t, err))

	tols := "[" + strings.Repeat("{key: k, operator: Exists}, ", 30) + "]"
	tpls := "[" + strings.Repeat("*t, ", 100) + "]"
	file := "queues:\n  - &q\n    name: A\n    weight: 1\n    jobTemplates:\n      - &t {number: 1, requirements: {tolerations: " + tols + "}}\n" +
		"  - &b {name: B, weight: 1, jobTemplates: " + tpls + "}\n" + strings.Repeat("  - *b\n", 100) // ~1.5M nodes expanded
	start := time.Now()
	_, err = ParseWorkload([]byte(file))
	assert.Less(t, time.Since(start), 10*time.Second)
	var budget []error
	for _, e := range flotilla.Problems(err) {
		if errors.Is(e, flotilla.ErrOutOfRange) && strings.HasPrefix(e.Error(), "(root)") {
			budget = append(budget, e)
		}
	}
	assert.Len(t, budget, 1, "%v", err)
}

// TestArmadaWorkloadKeepsEveryJobAndItsTimes is a property over random
// WorkloadSpecs (gopter draws the seed of a generator of valid files):
// the jobs sim will submit — Σ count × (1 + repetitions) — are Armada's,
// Σ number × numTimes; every template's first submission is its
// earliestSubmitTime, its runtime minimum its own, its id its own or
// <queue>-<index>.
func TestArmadaWorkloadKeepsEveryJobAndItsTimes(t *testing.T) {
	params := gopter.DefaultTestParametersWithSeed(20261122)
	params.MinSuccessfulTests = 300
	props := gopter.NewProperties(params)
	props.Property("jobs and times kept", prop.ForAll(func(seed int64) string {
		rng := rand.New(rand.NewPCG(uint64(seed), 1))
		var b strings.Builder
		type want struct {
			id      string
			at, min time.Duration
		}
		var wants []want
		jobs := 0
		b.WriteString("queues:\n")
		for q := range 1 + rng.IntN(4) {
			fmt.Fprintf(&b, "  - name: q%d\n    weight: %d\n    jobTemplates:\n", q, 1+rng.IntN(5))
			for j := range 1 + rng.IntN(4) {
				number := 1 + rng.IntN(20)
				fmt.Fprintf(&b, "      - number: %d\n", number)
				w := want{id: fmt.Sprintf("q%d-%d", q, j), at: time.Duration(rng.IntN(120)) * time.Minute, min: time.Duration(rng.IntN(600)) * time.Second}
				if rng.IntN(2) == 0 {
					w.id = fmt.Sprintf("t%d-%d", q, j)
					fmt.Fprintf(&b, "        id: %s\n", w.id)
				}
				if w.at > 0 || rng.IntN(2) == 0 {
					fmt.Fprintf(&b, "        earliestSubmitTime: %q\n", w.at.String())
				}
				fmt.Fprintf(&b, "        runtimeDistribution: {minimum: %q}\n", w.min.String())
				if g := 1 + rng.IntN(4); number%g == 0 && rng.IntN(2) == 0 {
					fmt.Fprintf(&b, "        gangCardinality: %d\n", g)
				}
				times := 1
				if rng.IntN(2) == 0 {
					times = 1 + rng.IntN(4)
					fmt.Fprintf(&b, "        repeat: {numTimes: %d, period: %q}\n", times, []string{"0s", "1m", "1h"}[rng.IntN(3)])
				}
				b.WriteString("        requirements: {resourceRequirements: {requests: {cpu: 1}}}\n")
				jobs += number * times
				wants = append(wants, w)
			}
		}
		aw, err := ParseWorkload([]byte(b.String()))
		if err != nil {
			return fmt.Sprintf("%v\n%s", err, b.String())
		}
		got := 0
		for i, tpl := range aw.Workload.JobTemplates {
			n := 1
			if tpl.Repeat != nil {
				n += tpl.Repeat.NumTimes
			}
			got += tpl.Count * n
			at, _ := time.ParseDuration(orZero(tpl.Arrival.At))
			minimum, _ := time.ParseDuration(orZero(tpl.Runtime.Minimum))
			if w := wants[i]; tpl.ID != w.id || at != w.at || minimum != w.min {
				return fmt.Sprintf("template %d: id %s at %v min %v, want %+v\n%s", i, tpl.ID, at, minimum, w, b.String())
			}
		}
		if got != jobs {
			return fmt.Sprintf("%d jobs, want %d\n%s", got, jobs, b.String())
		}
		return ""
	}, gen.Int64()))
	props.TestingRun(t)
}

// TestArmadaClustersOfTwoPoolsAreEachInTheirPool: each pool is scheduled
// on its own, as in Armada: every cluster keeps its pool, in both forms.
func TestArmadaClustersOfTwoPoolsAreEachInTheirPool(t *testing.T) {
	c, err := ParseClusters([]byte("clusters:\n  - {name: a, pool: p, nodeTemplates: [{number: 1, totalResources: {resources: {cpu: 1}}}]}\n" +
		"  - {name: b, pool: q, nodeTemplates: [{number: 1, totalResources: {resources: {cpu: 1}}}]}\n" +
		"pools:\n  - name: r\n    clusterGroups: [{clusters: [{nodeTemplates: [{number: 1, totalResources: {resources: {cpu: 1}}}]}]}]\n"))
	require.NoError(t, err)
	var got []string
	for _, cl := range c.Clusters.Clusters {
		got = append(got, cl.Name+"="+cl.Pool)
	}
	assert.Equal(t, []string{"a=p", "b=q", "r-0-0=r"}, got)
}
