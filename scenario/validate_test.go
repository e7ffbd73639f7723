package scenario

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/binpack"
	"github.com/flotilla-sched/flotilla/scheduler"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestBaseFileIsValid(t *testing.T) {
	f, err := Parse(marshal(t, baseFile()))
	require.NoError(t, err)
	require.NoError(t, f.Validate())
}

func TestValidateRules(t *testing.T) {
	submit0 := func(f *File) *JobTemplate { return &f.Rounds[0].Submit[0] }
	gangOf := func(id string, card int, label string) *GangSpec {
		return &GangSpec{ID: id, Cardinality: card, NodeUniformityLabel: label}
	}
	job := func(id, queue string) JobTemplate {
		return JobTemplate{ID: id, Queue: queue, Requests: map[string]string{"cpu": "1"}}
	}
	cases := []struct {
		name  string
		edit  func(f *File)
		field string
		err   error
	}{
		{"unnamed avoided cluster", func(f *File) { submit0(f).AvoidClusters = []string{"c1", ""} }, "rounds[0].submit[0].avoidClusters[1]", flotilla.ErrRequired},
		// config
		{"unknown fairness", func(f *File) { f.Config.Fairness = "max-min" }, "config.fairness", flotilla.ErrUnknownName},
		{"negative weight", func(f *File) { f.Config.ResourceWeights = map[string]float64{"cpu": -1} }, "config.resourceWeights.cpu", flotilla.ErrNegative},
		{"indexed resource without name", func(f *File) { f.Config.IndexedResources = []IndexedResource{{Resolution: "1"}} }, "config.indexedResources[0].name", flotilla.ErrRequired},
		{"indexed resource twice", func(f *File) {
			f.Config.IndexedResources = []IndexedResource{{Name: "cpu"}, {Name: "cpu"}}
		}, "config.indexedResources[1].name", flotilla.ErrDuplicate},
		{"zero resolution", func(f *File) {
			f.Config.IndexedResources = []IndexedResource{{Name: "cpu", Resolution: "0"}}
		}, "config.indexedResources[0].resolution", flotilla.ErrOutOfRange},
		{"negative resolution", func(f *File) {
			f.Config.IndexedResources = []IndexedResource{{Name: "cpu", Resolution: "-1"}}
		}, "config.indexedResources[0].resolution", flotilla.ErrOutOfRange},
		{"malformed resolution", func(f *File) {
			f.Config.IndexedResources = []IndexedResource{{Name: "cpu", Resolution: "lots"}}
		}, "config.indexedResources[0].resolution", flotilla.ErrMalformed},
		{"negative protected fraction", func(f *File) { f.Config.ProtectedFractionOfFairShare = ptr(-0.5) }, "config.protectedFractionOfFairShare", flotilla.ErrNegative},
		{"probability above 1", func(f *File) { f.Config.EvictionProbability = ptr(1.5) }, "config.evictionProbability", flotilla.ErrOutOfRange},
		{"negative probability", func(f *File) { f.Config.EvictionProbability = ptr(-0.1) }, "config.evictionProbability", flotilla.ErrNegative},
		{"negative lookback", func(f *File) { f.Config.MaxQueueLookback = ptr(-1) }, "config.maxQueueLookback", flotilla.ErrNegative},
		{"round fraction above 1", func(f *File) {
			f.Config.MaximumResourceFractionToSchedule = map[string]float64{"cpu": 1.5}
		}, "config.maximumResourceFractionToSchedule.cpu", flotilla.ErrOutOfRange},
		{"negative rate", func(f *File) { f.Config.MaximumSchedulingRate = -1 }, "config.maximumSchedulingRate", flotilla.ErrNegative},
		{"negative burst", func(f *File) { f.Config.MaximumSchedulingBurst = -1 }, "config.maximumSchedulingBurst", flotilla.ErrNegative},
		{"rate without burst", func(f *File) { f.Config.MaximumSchedulingRate = 10 }, "config.maximumSchedulingBurst", flotilla.ErrInconsistent},
		{"negative per-queue rate", func(f *File) { f.Config.MaximumPerQueueSchedulingRate = -1 }, "config.maximumPerQueueSchedulingRate", flotilla.ErrNegative},
		{"per-queue rate without burst", func(f *File) { f.Config.MaximumPerQueueSchedulingRate = 1 }, "config.maximumPerQueueSchedulingBurst", flotilla.ErrInconsistent},
		{"malformed duration", func(f *File) { f.Config.RoundDuration = "1 second" }, "config.roundDuration", flotilla.ErrMalformed},
		{"negative duration", func(f *File) { f.Config.RoundDuration = "-1s" }, "config.roundDuration", flotilla.ErrNegative},
		{"duration overflowing the clock", func(f *File) { f.Config.RoundDuration = "2000000h" }, "config.roundDuration", flotilla.ErrOutOfRange},
		{"unknown default class", func(f *File) { f.Config.DefaultPriorityClass = "urgent" }, "config.defaultPriorityClass", flotilla.ErrUnknownName},
		{"classes without the default default", func(f *File) {
			f.PriorityClasses = []PriorityClass{{Name: "batch", Priority: 1}}
			submit0(f).PriorityClass = "batch"
			f.Rounds[1].Submit[0].PriorityClass = "batch"
		}, "config.defaultPriorityClass", flotilla.ErrUnknownName},

		{"unknown strategy", func(f *File) { f.Config.Strategy = "lotery" }, "config.strategy", flotilla.ErrUnknownName},
		{"lottery without half-time", func(f *File) { f.Config.Strategy = StrategyLottery }, "config.priorityHalftime", flotilla.ErrRequired},
		{"malformed half-time", func(f *File) { f.Config.Strategy, f.Config.PriorityHalftime = StrategyLottery, "10 minutes" }, "config.priorityHalftime", flotilla.ErrMalformed},
		{"negative half-time", func(f *File) { f.Config.PriorityHalftime = "-10m" }, "config.priorityHalftime", flotilla.ErrNegative},
		{"zero half-time", func(f *File) { f.Config.Strategy, f.Config.PriorityHalftime = StrategyLottery, "0s" }, "config.priorityHalftime", flotilla.ErrRequired},
		{"all-lottery without the lottery", func(f *File) { f.Config.UseProbabilisticSchedulingForAllResources = true },
			"config.useProbabilisticSchedulingForAllResources", flotilla.ErrInconsistent},
		{"lottery without cpu", func(f *File) {
			f.Config.Strategy, f.Config.PriorityHalftime = StrategyLottery, "10m"
			f.Nodes[0].Resources = map[string]string{"memory": "128"}
			for i := range f.Rounds {
				f.Rounds[i].Submit[0].Requests = map[string]string{"memory": "1"}
			}
		}, "config.strategy", flotilla.ErrUnknownResource},

		// priority classes
		{"class without name", func(f *File) {
			f.PriorityClasses = []PriorityClass{{Name: flotilla.ArmadaDefault}, {}}
		}, "priorityClasses[1].name", flotilla.ErrRequired},
		{"class twice", func(f *File) {
			f.PriorityClasses = []PriorityClass{{Name: flotilla.ArmadaDefault}, {Name: flotilla.ArmadaDefault}}
		}, "priorityClasses[1].name", flotilla.ErrDuplicate},
		{"class fraction above 1", func(f *File) {
			f.PriorityClasses = []PriorityClass{{Name: flotilla.ArmadaDefault, MaximumResourceFractionPerQueue: map[string]float64{"cpu": 2}}}
		}, "priorityClasses[0].maximumResourceFractionPerQueue.cpu", flotilla.ErrOutOfRange},

		// nodes
		{"no nodes", func(f *File) { f.Nodes = nil; f.Rounds = nil }, "nodes", flotilla.ErrRequired},
		{"node without name", func(f *File) { f.Nodes[0].Name = "" }, "nodes[0].name", flotilla.ErrRequired},
		{"negative node count", func(f *File) { f.Nodes[0].Count = ptr(-1) }, "nodes[0].count", flotilla.ErrNegative},
		{"too many nodes", func(f *File) { f.Nodes[0].Count = ptr(MaxNodes + 1) }, "nodes[0].count", flotilla.ErrOutOfRange},
		{"node without resources", func(f *File) {
			f.Nodes = append(f.Nodes, NodeTemplate{Name: "empty"})
		}, "nodes[1].resources", flotilla.ErrRequired},
		{"node with empty resource name", func(f *File) { f.Nodes[0].Resources[""] = "1" }, "nodes[0].resources", flotilla.ErrRequired},
		{"negative capacity", func(f *File) { f.Nodes[0].Resources["cpu"] = "-32" }, "nodes[0].resources.cpu", flotilla.ErrNegative},
		{"malformed capacity", func(f *File) { f.Nodes[0].Resources["memory"] = "lots" }, "nodes[0].resources.memory", flotilla.ErrMalformed},
		{"duplicate node after expansion", func(f *File) {
			f.Nodes = append(f.Nodes, NodeTemplate{Name: "node-1", Resources: map[string]string{"cpu": "1"}})
		}, "nodes[1].name", flotilla.ErrDuplicate},
		{"duplicate node templates", func(f *File) {
			f.Nodes = append(f.Nodes, f.Nodes[0])
		}, "nodes[1].name", flotilla.ErrDuplicate},
		{"empty label key", func(f *File) { f.Nodes[0].Labels = map[string]string{"": "a"} }, "nodes[0].labels", flotilla.ErrRequired},
		{"taint without key", func(f *File) {
			f.Nodes[0].Taints = []Taint{{Effect: "NoSchedule"}}
		}, "nodes[0].taints[0].key", flotilla.ErrRequired},
		{"taint without effect", func(f *File) { f.Nodes[0].Taints = []Taint{{Key: "gpu"}} }, "nodes[0].taints[0].effect", flotilla.ErrRequired},
		{"taint with unknown effect", func(f *File) {
			f.Nodes[0].Taints = []Taint{{Key: "gpu", Effect: "NoSchedul"}}
		}, "nodes[0].taints[0].effect", flotilla.ErrUnknownName},

		// queues
		{"queue without name", func(f *File) { f.Queues[1].Name = "" }, "queues[1].name", flotilla.ErrRequired},
		{"queue twice", func(f *File) { f.Queues = append(f.Queues, QueueSpec{Name: "A"}) }, "queues[2].name", flotilla.ErrDuplicate},
		{"negative priority factor", func(f *File) { f.Queues[0].PriorityFactor = ptr(-2.0) }, "queues[0].priorityFactor", flotilla.ErrNegative},
		{"priority factor whose weight is +Inf", func(f *File) { f.Queues[0].PriorityFactor = ptr(1e-310) }, "queues[0].priorityFactor", flotilla.ErrOutOfRange},
		{"priority factor whose weights overflow when summed", func(f *File) {
			f.Queues[0].PriorityFactor, f.Queues[1].PriorityFactor = ptr(1e-308), ptr(1e-308)
		}, "queues[1].priorityFactor", flotilla.ErrOutOfRange},
		{"limit for unknown class", func(f *File) {
			f.Queues[0].LimitsByPriorityClass = map[string]map[string]float64{"urgent": {"cpu": 0.5}}
		}, "queues[0].limitsByPriorityClass.urgent", flotilla.ErrUnknownName},
		{"limit above 1", func(f *File) {
			f.Queues[0].LimitsByPriorityClass = map[string]map[string]float64{flotilla.ArmadaPreemptible: {"cpu": 1.01}}
		}, "queues[0].limitsByPriorityClass.armada-preemptible.cpu", flotilla.ErrOutOfRange},

		// jobs
		{"job without id", func(f *File) { submit0(f).ID = "" }, "rounds[0].submit[0].id", flotilla.ErrRequired},
		{"job without queue", func(f *File) { submit0(f).Queue = "" }, "rounds[0].submit[0].queue", flotilla.ErrRequired},
		{"unknown queue", func(f *File) { submit0(f).Queue = "C" }, "rounds[0].submit[0].queue", flotilla.ErrUnknownName},
		{"unknown priority class", func(f *File) { f.Rounds[1].Submit[0].PriorityClass = "urgent" }, "rounds[1].submit[0].priorityClass", flotilla.ErrUnknownName},
		{"job without requests", func(f *File) { submit0(f).Requests = nil }, "rounds[0].submit[0].requests", flotilla.ErrRequired},
		{"negative request", func(f *File) { submit0(f).Requests["cpu"] = "-1" }, "rounds[0].submit[0].requests.cpu", flotilla.ErrNegative},
		{"malformed request", func(f *File) { submit0(f).Requests["cpu"] = "one" }, "rounds[0].submit[0].requests.cpu", flotilla.ErrMalformed},
		{"request for unknown resource", func(f *File) { submit0(f).Requests["cpus"] = "1" }, "rounds[0].submit[0].requests.cpus", flotilla.ErrUnknownResource},
		{"negative job count", func(f *File) { submit0(f).Count = ptr(-4) }, "rounds[0].submit[0].count", flotilla.ErrNegative},
		{"too many jobs", func(f *File) { submit0(f).Count = ptr(MaxJobs + 1) }, "rounds[0].submit[0].count", flotilla.ErrOutOfRange},
		{"empty node selector key", func(f *File) { submit0(f).NodeSelector = map[string]string{"": "a"} }, "rounds[0].submit[0].nodeSelector", flotilla.ErrRequired},
		{"duplicate id across rounds", func(f *File) { f.Rounds[1].Submit[0].ID = "a-3" }, "rounds[1].submit[0].id", flotilla.ErrDuplicate},
		{"duplicate id in one round", func(f *File) {
			f.Rounds[1].Submit = append(f.Rounds[1].Submit, job("b", "A"))
		}, "rounds[1].submit[1].id", flotilla.ErrDuplicate},
		{"duplicate counted template", func(f *File) {
			f.Rounds[1].Submit = append(f.Rounds[1].Submit, f.Rounds[0].Submit[0])
		}, "rounds[1].submit[1].id", flotilla.ErrDuplicate},
		{"toleration with unknown operator", func(f *File) {
			submit0(f).Tolerations = []Toleration{{Key: "gpu", Operator: "Equals"}}
		}, "rounds[0].submit[0].tolerations[0].operator", flotilla.ErrUnknownName},
		{"toleration without key needs Exists", func(f *File) {
			submit0(f).Tolerations = []Toleration{{Value: "true"}}
		}, "rounds[0].submit[0].tolerations[0].operator", flotilla.ErrInconsistent},
		{"toleration Exists with value", func(f *File) {
			submit0(f).Tolerations = []Toleration{{Key: "gpu", Operator: "Exists", Value: "true"}}
		}, "rounds[0].submit[0].tolerations[0].value", flotilla.ErrInconsistent},
		{"toleration with unknown effect", func(f *File) {
			submit0(f).Tolerations = []Toleration{{Key: "gpu", Effect: "Never"}}
		}, "rounds[0].submit[0].tolerations[0].effect", flotilla.ErrUnknownName},

		// gangs
		{"gang without id", func(f *File) { submit0(f).Gang = gangOf("", 4, "") }, "rounds[0].submit[0].gang.id", flotilla.ErrRequired},
		{"negative cardinality", func(f *File) { submit0(f).Gang = gangOf("g", -4, "") }, "rounds[0].submit[0].gang.cardinality", flotilla.ErrNegative},
		{"cardinality above member count", func(f *File) { submit0(f).Gang = gangOf("g", 5, "") }, "rounds[0].submit[0].gang.cardinality", flotilla.ErrInconsistent},
		{"cardinality below member count", func(f *File) { submit0(f).Gang = gangOf("g", 3, "") }, "rounds[0].submit[0].gang.cardinality", flotilla.ErrInconsistent},
		{"members disagree on cardinality", func(f *File) {
			submit0(f).Gang = gangOf("g", 5, "")
			j := job("a2", "A")
			j.Gang = gangOf("g", 6, "")
			f.Rounds[0].Submit = append(f.Rounds[0].Submit, j)
		}, "rounds[0].submit[1].gang.cardinality", flotilla.ErrInconsistent},
		{"members disagree on uniformity label", func(f *File) {
			submit0(f).Gang = gangOf("g", 5, "zone")
			j := job("a2", "A")
			j.Gang = gangOf("g", 5, "rack")
			f.Rounds[0].Submit = append(f.Rounds[0].Submit, j)
		}, "rounds[0].submit[1].gang.nodeUniformityLabel", flotilla.ErrInconsistent},
		{"members disagree on queue", func(f *File) {
			submit0(f).Gang = gangOf("g", 5, "")
			j := job("a2", "B")
			j.Gang = gangOf("g", 0, "")
			f.Rounds[0].Submit = append(f.Rounds[0].Submit, j)
		}, "rounds[0].submit[1].queue", flotilla.ErrInconsistent},
		{"members disagree on job set", func(f *File) {
			submit0(f).Gang = gangOf("g", 5, "")
			j := job("a2", "A")
			j.JobSet = "other"
			j.Gang = gangOf("g", 5, "")
			f.Rounds[0].Submit = append(f.Rounds[0].Submit, j)
		}, "rounds[0].submit[1].jobSet", flotilla.ErrInconsistent},
		{"gang id reused in a later round", func(f *File) {
			submit0(f).Gang = gangOf("g", 0, "")
			f.Rounds[1].Submit[0].Gang = gangOf("g", 0, "")
		}, "rounds[1].submit[0].gang.id", flotilla.ErrDuplicate},

		// finish and cancel
		{"finish of an id never submitted", func(f *File) { f.Rounds[1].Finish = []string{"a-9"} }, "rounds[1].finish[0]", flotilla.ErrUnknownName},
		{"cancel of an id submitted later", func(f *File) { f.Rounds[0].Cancel = []string{"b"} }, "rounds[0].cancel[0]", flotilla.ErrUnknownName},
		{"empty finish id", func(f *File) { f.Rounds[1].Finish = []string{""} }, "rounds[1].finish[0]", flotilla.ErrRequired},
		{"cancel listed twice", func(f *File) { f.Rounds[1].Cancel = []string{"a-1", "a-1"} }, "rounds[1].cancel[1]", flotilla.ErrDuplicate},
		{"finish and cancel of one job", func(f *File) { f.Rounds[1].Cancel = []string{"a-0"} }, "rounds[1].cancel[0]", flotilla.ErrInconsistent},
		{"cancel after finish in an earlier round", func(f *File) {
			f.Rounds = append(f.Rounds, Round{Cancel: []string{"a-0"}})
		}, "rounds[2].cancel[0]", flotilla.ErrInconsistent},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := baseFile()
			tc.edit(f)
			// Through JSON, as the command reads it ...
			parsed, err := Parse(marshal(t, f))
			assert.Nil(t, parsed)
			requireFieldError(t, err, tc.field, tc.err)
			requireAllFieldErrors(t, err)
			// ... and from Go, for Validate and Build alike.
			requireFieldError(t, f.Validate(), tc.field, tc.err)
			b, err := f.Build()
			assert.Nil(t, b)
			requireFieldError(t, err, tc.field, tc.err)
		})
	}
}

func TestValidateReportsEveryProblem(t *testing.T) {
	f := baseFile()
	f.Config.Fairness = "fifo"
	f.Nodes[0].Resources["cpu"] = "-1"
	f.Queues[0].PriorityFactor = ptr(-1.0)
	f.Rounds[0].Submit[0].Queue = "C"
	f.Rounds[1].Submit[0].PriorityClass = "urgent"
	f.Rounds[1].Finish = []string{"zz"}
	err := f.Validate()
	requireFieldError(t, err, "config.fairness", flotilla.ErrUnknownName)
	requireFieldError(t, err, "nodes[0].resources.cpu", flotilla.ErrNegative)
	requireFieldError(t, err, "queues[0].priorityFactor", flotilla.ErrNegative)
	requireFieldError(t, err, "rounds[0].submit[0].queue", flotilla.ErrUnknownName)
	requireFieldError(t, err, "rounds[1].submit[0].priorityClass", flotilla.ErrUnknownName)
	requireFieldError(t, err, "rounds[1].finish[0]", flotilla.ErrUnknownName)
	assert.Len(t, leaves(err), 6)
}

func TestValidateMessagesNameFieldAndValue(t *testing.T) {
	f := baseFile()
	f.Rounds[0].Submit[0].Queue = "C"
	f.Nodes = append(f.Nodes, NodeTemplate{Name: "node", Count: ptr(3), Resources: map[string]string{"cpu": "1"}})
	err := f.Validate()
	require.Error(t, err)
	assert.Equal(t,
		`nodes[1].name "node": is a duplicate: node "node-0" is also made by nodes[0] (and 1 more)`+"\n"+
			`rounds[0].submit[0].queue "C": names nothing known: no such queue; known: A, B`,
		err.Error())
}

func TestValidateRejectsNonFiniteFloatsFromGo(t *testing.T) {
	f := baseFile()
	f.Config.ProtectedFractionOfFairShare = ptr(math.Inf(1))
	f.Config.EvictionProbability = ptr(math.NaN())
	f.Queues[0].PriorityFactor = ptr(math.Inf(1))
	f.Config.ResourceWeights = map[string]float64{"cpu": math.NaN()}
	err := f.Validate()
	requireFieldError(t, err, "config.protectedFractionOfFairShare", flotilla.ErrOutOfRange)
	requireFieldError(t, err, "config.evictionProbability", flotilla.ErrOutOfRange)
	requireFieldError(t, err, "queues[0].priorityFactor", flotilla.ErrOutOfRange)
	requireFieldError(t, err, "config.resourceWeights.cpu", flotilla.ErrOutOfRange)
}

func TestValidateSizeLimitsCountEveryTemplate(t *testing.T) {
	f := baseFile()
	f.Rounds[1].Finish, f.Rounds[1].Cancel = nil, nil
	_, err := f.build(2, 5)
	require.NoError(t, err, "2 nodes and 5 jobs are within the limits")

	_, err = f.build(2, 4)
	requireFieldError(t, err, "rounds[1].submit[0].count", flotilla.ErrOutOfRange)

	f.Nodes = append(f.Nodes, NodeTemplate{Name: "extra", Resources: map[string]string{"cpu": "1"}})
	_, err = f.build(2, 5)
	requireFieldError(t, err, "nodes[1].count", flotilla.ErrOutOfRange)

	f.Rounds[1].Submit[0].Gang = &GangSpec{ID: "g", Cardinality: 6}
	_, err = f.build(3, 5)
	requireFieldError(t, err, "rounds[1].submit[0].gang.cardinality", flotilla.ErrOutOfRange)
}

func TestValidateAccepts(t *testing.T) {
	cases := []struct {
		name string
		edit func(f *File)
	}{
		{"zero counts", func(f *File) {
			f.Rounds[0].Submit[0].Count = ptr(0)
			f.Rounds[1].Finish, f.Rounds[1].Cancel = nil, nil
			f.Nodes = append(f.Nodes, NodeTemplate{Name: "spare", Count: ptr(0), Resources: map[string]string{"gpu": "1"}})
		}},
		{"protected fraction above 1", func(f *File) { f.Config.ProtectedFractionOfFairShare = ptr(1.5) }},
		{"avoided clusters, repeated or unknown", func(f *File) { f.Rounds[0].Submit[0].AvoidClusters = []string{"c1", "c1", "nowhere"} }},
		{"zero round duration", func(f *File) { f.Config.RoundDuration = "0s" }},
		{"weights under drf", func(f *File) { f.Config.ResourceWeights = map[string]float64{"cpu": 1, "memory": 0} }},
		{"gang split over templates", func(f *File) {
			f.Rounds[0].Submit[0].Gang = &GangSpec{ID: "g", Cardinality: 5, NodeUniformityLabel: "zone"}
			f.Rounds[0].Submit = append(f.Rounds[0].Submit, JobTemplate{
				ID: "a2", Queue: "A", Requests: map[string]string{"cpu": "1"},
				Gang: &GangSpec{ID: "g", NodeUniformityLabel: "zone"},
			})
		}},
		{"same gang id in two rounds is not allowed but ids of other gangs are", func(f *File) {
			f.Rounds[0].Submit[0].Gang = &GangSpec{ID: "g1"}
			f.Rounds[1].Submit[0].Gang = &GangSpec{ID: "g2", Cardinality: 1}
		}},
		{"lottery", func(f *File) {
			f.Config.Strategy, f.Config.PriorityHalftime = StrategyLottery, "10m"
			f.Config.UseProbabilisticSchedulingForAllResources = true
		}},
		{"explicit progressive filling with an unused half-time", func(f *File) {
			f.Config.Strategy, f.Config.PriorityHalftime = StrategyProgressiveFilling, "1h"
		}},
		// A resource no node has is a resource of capacity 0 everywhere:
		// naming it in a weight, an index, a round fraction or a cap is
		// harmless (Armada's default config indexes nvidia.com/gpu on
		// CPU-only clusters).
		{"resources no node has in weights, index, fractions and caps", func(f *File) {
			f.Config.ResourceWeights = map[string]float64{"cpu": 1, "nvidia.com/gpu": 1}
			f.Config.IndexedResources = []IndexedResource{{Name: "nvidia.com/gpu", Resolution: "1"}, {Name: "cpu"}}
			f.Config.MaximumResourceFractionToSchedule = map[string]float64{"nvidia.com/gpu": 0.5}
			f.PriorityClasses = []PriorityClass{{Name: flotilla.ArmadaDefault, MaximumResourceFractionPerQueue: map[string]float64{"nvidia.com/gpu": 0.5}}}
			f.Queues[0].LimitsByPriorityClass = map[string]map[string]float64{flotilla.ArmadaDefault: {"nvidia.com/gpu": 0.5}}
		}},
		// 0 means the default factor 1, as for flotilla.Queue.
		{"zero priority factor", func(f *File) { f.Queues[0].PriorityFactor = ptr(0.0) }},
		{"minimum priority factor", func(f *File) { f.Queues[0].PriorityFactor = ptr(flotilla.MinPriorityFactor) }},
		{"tolerate everything", func(f *File) { f.Rounds[0].Submit[0].Tolerations = []Toleration{{Operator: "Exists"}} }},
		{"every config field", func(f *File) {
			f.Config = Config{
				Fairness:                          FairnessAsset,
				ResourceWeights:                   map[string]float64{"cpu": 1, "memory": 0},
				IndexedResources:                  []IndexedResource{{Name: "cpu", Resolution: "1"}, {Name: "memory"}},
				ProtectedFractionOfFairShare:      ptr(0.0),
				EvictionProbability:               ptr(0.0),
				MaxQueueLookback:                  ptr(0),
				MaximumResourceFractionToSchedule: map[string]float64{"cpu": 1, "memory": 0},
				MaximumSchedulingRate:             10, MaximumSchedulingBurst: 20,
				MaximumPerQueueSchedulingRate: 1, MaximumPerQueueSchedulingBurst: 2,
				EnablePreferLargeJobOrdering: true,
				DefaultPriorityClass:         flotilla.ArmadaPreemptible,
				RequeuePreempted:             true,
				RoundDuration:                "250ms",
				Seed:                         ptr(uint64(0)),
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := baseFile()
			tc.edit(f)
			_, err := Parse(marshal(t, f))
			require.NoError(t, err)
		})
	}
}

// TestValidateRejectsCancelOfAJobSubmittedInTheSameRound: SCENARIOS.md,
// finish and cancel apply at the start of the round that lists them, so an
// id submitted in the same round is bad input, rejected by Parse with the
// field named, never a run-time failure.
func TestValidateRejectsCancelOfAJobSubmittedInTheSameRound(t *testing.T) {
	_, err := Parse([]byte(`{
	  "nodes": [{"name": "n", "resources": {"cpu": "1"}}],
	  "queues": [{"name": "A"}],
	  "rounds": [{"submit": [{"id": "a", "queue": "A", "requests": {"cpu": "1"}}], "cancel": ["a"]}]
	}`))
	if err == nil || !strings.Contains(err.Error(), `rounds[0].cancel[0] "a"`) {
		t.Errorf("want the same-round cancel rejected naming rounds[0].cancel[0], got %v", err)
	}
}

// TestValidateRejectsWhatRunWouldReject: the package doc says "a file that
// validates builds without error" and SCENARIOS.md that bad input is
// rejected "with an error that names the field and the value", so a
// configuration the scheduler would refuse (asset fairness with every weight
// 0, without cpu or with zero cpu; a cluster total that overflows; a class
// at the reserved priority) is rejected by Parse, not by Run with a field
// that is no path in the file ("weights", "schema", "total.cpu",
// "nodes[1].total").
func TestValidateRejectsWhatRunWouldReject(t *testing.T) {
	job := `"queues": [{"name": "A"}], "rounds": [{"submit": [{"id": "a", "queue": "A", "requests": {"%s": "1"}}]}]`
	cases := map[string]string{
		"asset with all weights zero": `{"config": {"fairness": "asset", "resourceWeights": {"cpu": 0}},
		   "nodes": [{"name": "n", "resources": {"cpu": "4"}}], ` + fmt.Sprintf(job, "cpu") + `}`,
		"asset without cpu": `{"config": {"fairness": "asset"},
		   "nodes": [{"name": "n", "resources": {"memory": "4Gi"}}], ` + fmt.Sprintf(job, "memory") + `}`,
		"asset with zero cpu": `{"config": {"fairness": "asset"},
		   "nodes": [{"name": "n", "count": 0, "resources": {"cpu": "4"}}], ` + fmt.Sprintf(job, "cpu") + `}`,
		"cluster total overflows": `{"nodes": [{"name": "n", "count": 2, "resources": {"cpu": "4", "memory": "5Ei"}}], ` +
			fmt.Sprintf(job, "cpu") + `}`,
		"reserved class priority": `{"priorityClasses": [{"name": "armada-default", "priority": -2147483648}],
		   "nodes": [{"name": "n", "resources": {"cpu": "4"}}], ` + fmt.Sprintf(job, "cpu") + `}`,
	}
	for name, doc := range cases {
		t.Run(name, func(t *testing.T) {
			f, perr := Parse([]byte(doc))
			if perr == nil {
				b, err := f.Build()
				if err != nil {
					t.Fatal(err)
				}
				_, rerr := Run(context.Background(), b)
				var fe *flotilla.FieldError
				errors.As(rerr, &fe)
				t.Errorf("Parse accepted a file that Run rejects: %v (field %q)", rerr, fe.Field)
			}
		})
	}
}

// The scenario format and the library judge the same input the same way:
// each bad (or newly accepted) value goes through Parse and through the
// library validator the scenario delegates to, and both accept it or both
// reject it with the same sentinel, each naming the field in its own terms.
func TestScenarioAndLibraryValidationAgree(t *testing.T) {
	schema := flotilla.MustResourceSchema("cpu", "memory")
	cfgWith := func(edit func(*scheduler.Config)) func() error {
		return func() error {
			cfg := scheduler.DefaultConfig(schema)
			edit(&cfg)
			_, err := scheduler.New(cfg)
			return err
		}
	}
	queueWith := func(q flotilla.Queue) func() error { return func() error { return q.Validate() } }
	nodeWith := func(taints ...flotilla.Taint) func() error {
		return func() error {
			n := flotilla.Node{Name: "node", Total: schema.Zero(), Taints: taints}
			return n.Validate(schema)
		}
	}
	jobWith := func(edit func(*flotilla.Job)) func() error {
		return func() error {
			j := flotilla.Job{ID: "a", Queue: "A", Requests: schema.MustParse(map[string]string{"cpu": "1"})}
			edit(&j)
			return j.Validate(schema)
		}
	}
	limit := func(r string, f float64) map[string]map[string]float64 {
		return map[string]map[string]float64{flotilla.ArmadaDefault: {r: f}}
	}
	cases := []struct {
		name          string
		edit          func(*File)
		library       func() error
		field, libFld string
		sentinel      error // nil: both accept
	}{
		{"priority factor 0 means 1", func(f *File) { f.Queues[0].PriorityFactor = ptr(0.0) },
			queueWith(flotilla.Queue{Name: "A", PriorityFactor: 0}), "", "", nil},
		{"priority factor with an infinite weight", func(f *File) { f.Queues[0].PriorityFactor = ptr(1e-310) },
			queueWith(flotilla.Queue{Name: "A", PriorityFactor: 1e-310}), "queues[0].priorityFactor", `queue "A".priorityFactor`, flotilla.ErrOutOfRange},
		{"negative priority factor", func(f *File) { f.Queues[0].PriorityFactor = ptr(-1.0) },
			queueWith(flotilla.Queue{Name: "A", PriorityFactor: -1}), "queues[0].priorityFactor", `queue "A".priorityFactor`, flotilla.ErrNegative},
		{"queue limit on a resource no node has", func(f *File) { f.Queues[0].LimitsByPriorityClass = limit("nvidia.com/gpu", 0.5) },
			queueWith(flotilla.Queue{Name: "A", LimitsByPriorityClass: limit("nvidia.com/gpu", 0.5)}), "", "", nil},
		{"queue limit above 1", func(f *File) { f.Queues[0].LimitsByPriorityClass = limit("cpu", 1.5) },
			queueWith(flotilla.Queue{Name: "A", LimitsByPriorityClass: limit("cpu", 1.5)}),
			"queues[0].limitsByPriorityClass.armada-default.cpu", `queue "A".limitsByPriorityClass.armada-default.cpu`, flotilla.ErrOutOfRange},
		{"class cap on a resource no node has", func(f *File) {
			f.PriorityClasses = []PriorityClass{{Name: flotilla.ArmadaDefault, MaximumResourceFractionPerQueue: map[string]float64{"nvidia.com/gpu": 0.5}}}
		}, cfgWith(func(c *scheduler.Config) {
			c.PriorityClasses = []flotilla.PriorityClass{{Name: flotilla.ArmadaDefault, MaximumResourceFractionPerQueue: map[string]float64{"nvidia.com/gpu": 0.5}}}
		}), "", "", nil},
		{"class cap NaN", func(f *File) {
			f.PriorityClasses = []PriorityClass{{Name: flotilla.ArmadaDefault, MaximumResourceFractionPerQueue: map[string]float64{"cpu": math.NaN()}}}
		}, cfgWith(func(c *scheduler.Config) {
			c.PriorityClasses = []flotilla.PriorityClass{{Name: flotilla.ArmadaDefault, MaximumResourceFractionPerQueue: map[string]float64{"cpu": math.NaN()}}}
		}), "priorityClasses[0].maximumResourceFractionPerQueue.cpu", "priorityClasses[0].maximumResourceFractionPerQueue.cpu", flotilla.ErrOutOfRange},
		{"class without name", func(f *File) { f.PriorityClasses = []PriorityClass{{Name: flotilla.ArmadaDefault}, {}} },
			cfgWith(func(c *scheduler.Config) {
				c.PriorityClasses = []flotilla.PriorityClass{{Name: flotilla.ArmadaDefault}, {}}
			}),
			"priorityClasses[1].name", "priorityClasses[1].name", flotilla.ErrRequired},
		{"taint with empty effect", func(f *File) { f.Nodes[0].Taints = []Taint{{Key: "gpu"}} },
			nodeWith(flotilla.Taint{Key: "gpu"}), "nodes[0].taints[0].effect", `node "node".taints[0].effect`, flotilla.ErrRequired},
		{"taint with unknown effect", func(f *File) { f.Nodes[0].Taints = []Taint{{Key: "gpu", Effect: "Never"}} },
			nodeWith(flotilla.Taint{Key: "gpu", Effect: "Never"}), "nodes[0].taints[0].effect", `node "node".taints[0].effect`, flotilla.ErrUnknownName},
		{"indexed resource no node has", func(f *File) { f.Config.IndexedResources = []IndexedResource{{Name: "nvidia.com/gpu"}, {Name: "cpu"}} },
			cfgWith(func(c *scheduler.Config) {
				c.IndexedResources = []binpack.IndexedResource{{Name: "nvidia.com/gpu", Resolution: 1}, {Name: "cpu", Resolution: 1}}
			}), "", "", nil},
		{"duplicate indexed resource", func(f *File) { f.Config.IndexedResources = []IndexedResource{{Name: "cpu"}, {Name: "cpu"}} },
			cfgWith(func(c *scheduler.Config) {
				c.IndexedResources = []binpack.IndexedResource{{Name: "cpu", Resolution: 1}, {Name: "cpu", Resolution: 1}}
			}), "config.indexedResources[1].name", "indexedResources[1].name", flotilla.ErrDuplicate},
		{"too many indexed resources", func(f *File) {
			f.Config.IndexedResources = []IndexedResource{{Name: "a"}, {Name: "b"}, {Name: "c"}, {Name: "d"}, {Name: "e"}}
		}, cfgWith(func(c *scheduler.Config) {
			for _, n := range []string{"a", "b", "c", "d", "e"} {
				c.IndexedResources = append(c.IndexedResources, binpack.IndexedResource{Name: n, Resolution: 1})
			}
		}), "config.indexedResources", "indexedResources", flotilla.ErrOutOfRange},
		{"weight for a resource no node has", func(f *File) { f.Config.ResourceWeights = map[string]float64{"cpu": 1, "nvidia.com/gpu": 2} },
			cfgWith(func(c *scheduler.Config) { c.ResourceWeights = map[string]float64{"cpu": 1, "nvidia.com/gpu": 2} }), "", "", nil},
		{"NaN weight", func(f *File) { f.Config.ResourceWeights = map[string]float64{"cpu": math.NaN()} },
			cfgWith(func(c *scheduler.Config) { c.ResourceWeights = map[string]float64{"cpu": math.NaN()} }),
			"config.resourceWeights.cpu", "resourceWeights.cpu", flotilla.ErrOutOfRange},
		{"negative weight", func(f *File) { f.Config.ResourceWeights = map[string]float64{"cpu": -1} },
			cfgWith(func(c *scheduler.Config) { c.ResourceWeights = map[string]float64{"cpu": -1} }),
			"config.resourceWeights.cpu", "resourceWeights.cpu", flotilla.ErrNegative},
		{"round fraction on a resource no node has", func(f *File) { f.Config.MaximumResourceFractionToSchedule = map[string]float64{"nvidia.com/gpu": 0.1} },
			cfgWith(func(c *scheduler.Config) {
				c.MaximumResourceFractionToSchedule = map[string]float64{"nvidia.com/gpu": 0.1}
			}), "", "", nil},
		{"infinite protected fraction", func(f *File) { f.Config.ProtectedFractionOfFairShare = ptr(math.Inf(1)) },
			cfgWith(func(c *scheduler.Config) { c.ProtectedFractionOfFairShare = math.Inf(1) }),
			"config.protectedFractionOfFairShare", "protectedFractionOfFairShare", flotilla.ErrOutOfRange},
		{"negative burst", func(f *File) { f.Config.MaximumSchedulingBurst = -1 },
			cfgWith(func(c *scheduler.Config) { c.MaximumSchedulingBurst = -1 }),
			"config.maximumSchedulingBurst", "maximumSchedulingBurst", flotilla.ErrNegative},
		{"toleration Exists with a value", func(f *File) {
			f.Rounds[0].Submit[0].Tolerations = []Toleration{{Key: "k", Operator: "Exists", Value: "v"}}
		}, jobWith(func(j *flotilla.Job) {
			j.Tolerations = []flotilla.Toleration{{Key: "k", Operator: flotilla.TolerationExists, Value: "v"}}
		}), "rounds[0].submit[0].tolerations[0].value", `job "a".tolerations[0].value`, flotilla.ErrInconsistent},
		{"empty node selector key", func(f *File) { f.Rounds[0].Submit[0].NodeSelector = map[string]string{"": "x"} },
			jobWith(func(j *flotilla.Job) { j.NodeSelector = map[string]string{"": "x"} }),
			"rounds[0].submit[0].nodeSelector", `job "a".nodeSelector`, flotilla.ErrRequired},
		{"unknown default class", func(f *File) { f.Config.DefaultPriorityClass = "gold" },
			cfgWith(func(c *scheduler.Config) { c.DefaultPriorityClass = "gold" }),
			"config.defaultPriorityClass", "defaultPriorityClass", flotilla.ErrUnknownName},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := baseFile()
			tc.edit(f)
			libErr := tc.library()
			if tc.sentinel == nil {
				_, err := Parse(marshal(t, f))
				assert.NoError(t, err, "scenario")
				assert.NoError(t, libErr, "library")
				return
			}
			requireFieldError(t, f.Validate(), tc.field, tc.sentinel)
			requireFieldError(t, libErr, tc.libFld, tc.sentinel)
		})
	}
}

// The library judges an indexed resource's resolution in milli-units; the
// problem still shows the value as the file writes it.
func TestIndexedResourceResolutionProblemNamesTheValueAsWritten(t *testing.T) {
	f := baseFile()
	f.Config.IndexedResources = []IndexedResource{{Name: "cpu", Resolution: "-1"}, {Name: "memory", Resolution: "0"}}
	err := f.Validate()
	assert.Equal(t, "-1", requireFieldError(t, err, "config.indexedResources[0].resolution", flotilla.ErrOutOfRange).Value)
	assert.Equal(t, "0", requireFieldError(t, err, "config.indexedResources[1].resolution", flotilla.ErrOutOfRange).Value)
}

// The library judges the lottery's half-time as a time.Duration; the
// problem still shows the value as the file writes it ("-10m", not
// "-10m0s").
func TestPriorityHalftimeProblemNamesTheValueAsWritten(t *testing.T) {
	for _, tc := range []struct {
		halftime string
		sentinel error
	}{{"-10m", flotilla.ErrNegative}, {"0", flotilla.ErrRequired}, {"-1.5h", flotilla.ErrNegative}} {
		f := baseFile()
		f.Config.Strategy, f.Config.PriorityHalftime = StrategyLottery, tc.halftime
		assert.Equal(t, tc.halftime, requireFieldError(t, f.Validate(), "config.priorityHalftime", tc.sentinel).Value)
	}
}
