package submit

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flotilla-sched/flotilla"
)

func TestTerminationGracePeriodUnsetOrZeroIsOneSecondBelowOneSecondOrAboveMaximumRejected(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Duration // when accepted
		bad  error         // class when rejected
	}{
		{in: "", want: time.Second},
		{in: "0s", want: time.Second},
		{in: "0", want: time.Second},
		{in: "1s", want: time.Second},
		{in: "30s", want: 30 * time.Second},
		{in: "5m", want: DefaultMaxTerminationGracePeriod},
		{in: "500ms", bad: flotilla.ErrOutOfRange},
		{in: "1ns", bad: flotilla.ErrOutOfRange},
		{in: "5m1s", bad: flotilla.ErrOutOfRange},
		{in: "-1s", bad: flotilla.ErrNegative},
		{in: "30", bad: flotilla.ErrMalformed},
		{in: "soon", bad: flotilla.ErrMalformed},
	} {
		t.Run(tc.in, func(t *testing.T) {
			tpl := cpuJob()
			tpl.TerminationGracePeriod = tc.in
			if tc.bad != nil {
				reject(t, request(tpl), problem{"jobs[0].terminationGracePeriod", tc.in, tc.bad})
				return
			}
			specs := accept(t, request(tpl))
			require.Equal(t, tc.want, specs[0].TerminationGracePeriod)
		})
	}
}

func TestMaxTerminationGracePeriodIsConfigurable(t *testing.T) {
	tpl := cpuJob()
	tpl.TerminationGracePeriod = "2m"
	var c counter
	rules := Rules{MaxTerminationGracePeriod: time.Minute}
	_, err := rules.Jobs(request(tpl), testCatalog(), testNow, c.next)
	requireProblems(t, err, problem{"jobs[0].terminationGracePeriod", "2m", flotilla.ErrOutOfRange})
	rules.MaxTerminationGracePeriod = 3 * time.Minute
	specs, err := rules.Jobs(request(tpl), testCatalog(), testNow, c.next)
	require.NoError(t, err)
	require.Equal(t, 2*time.Minute, specs[0].TerminationGracePeriod)
}

func TestActiveDeadlineUnsetIsThreeDaysOrFourteenDaysWhenTheJobRequestsAGPU(t *testing.T) {
	for _, tc := range []struct {
		name     string
		requests map[string]string
		deadline string
		want     time.Duration
		bad      error
	}{
		{name: "cpu default", requests: map[string]string{"cpu": "1"}, want: 72 * time.Hour},
		{name: "gpu default", requests: map[string]string{"cpu": "1", "nvidia.com/gpu": "1"}, want: 14 * 24 * time.Hour},
		{name: "zero gpu is cpu", requests: map[string]string{"cpu": "1", "nvidia.com/gpu": "0"}, want: 72 * time.Hour},
		{name: "given cpu", requests: map[string]string{"cpu": "1"}, deadline: "1h", want: time.Hour},
		{name: "given gpu", requests: map[string]string{"nvidia.com/gpu": "2"}, deadline: "1h", want: time.Hour},
		{name: "zero", requests: map[string]string{"cpu": "1"}, deadline: "0s", bad: flotilla.ErrOutOfRange},
		{name: "negative", requests: map[string]string{"cpu": "1"}, deadline: "-1h", bad: flotilla.ErrNegative},
		{name: "malformed", requests: map[string]string{"cpu": "1"}, deadline: "3 days", bad: flotilla.ErrMalformed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tpl := JobTemplate{Requests: tc.requests, ActiveDeadline: tc.deadline}
			if tc.bad != nil {
				reject(t, request(tpl), problem{"jobs[0].activeDeadline", tc.deadline, tc.bad})
				return
			}
			require.Equal(t, tc.want, accept(t, request(tpl))[0].ActiveDeadline)
		})
	}
}

func TestGPUResourceIsConfigurableAndASchemaWithoutItHasNoGPUJobs(t *testing.T) {
	tpl := JobTemplate{Requests: map[string]string{"amd.com/gpu": "1"}}
	cat := testCatalog()
	cat.Schema = flotilla.MustResourceSchema("cpu", "amd.com/gpu")
	var c counter
	specs, err := Rules{}.Jobs(request(tpl), cat, testNow, c.next)
	require.NoError(t, err)
	require.Equal(t, DefaultActiveDeadline, specs[0].ActiveDeadline, "nvidia.com/gpu is not in this schema")
	specs, err = Rules{GPUResource: "amd.com/gpu"}.Jobs(request(tpl), cat, testNow, c.next)
	require.NoError(t, err)
	require.Equal(t, DefaultGPUActiveDeadline, specs[0].ActiveDeadline)
}

func TestJobsCountedCountsEachTemplatesJobsInFileOrderAndNothingWhenRefused(t *testing.T) {
	a, none, b := cpuJob(), cpuJob(), cpuJob()
	a.Count, none.Count = intp(3), intp(0)
	data, err := json.Marshal(request(a, none, b))
	require.NoError(t, err)
	var c counter
	specs, counts, err := Rules{}.ParseJobsCounted(data, testCatalog(), testNow, IDSource(c.next).Batch())
	require.NoError(t, err)
	require.Equal(t, []int{3, 0, 1}, counts)
	require.Len(t, specs, 4)

	bad := cpuJob()
	bad.Requests = map[string]string{"cpu": "lots"}
	specs, counts, err = Rules{}.JobsCounted(request(a, bad), testCatalog(), testNow, IDSource(c.next).Batch())
	require.Error(t, err)
	require.Nil(t, specs)
	require.Nil(t, counts)
}

func TestPriorityClassMustBeConfiguredAndEmptyMeansTheDefault(t *testing.T) {
	a, b := cpuJob(), cpuJob()
	b.PriorityClass = flotilla.ArmadaPreemptible
	specs := accept(t, request(a, b))
	require.Equal(t, flotilla.ArmadaDefault, specs[0].Job.PriorityClass)
	require.Equal(t, flotilla.ArmadaPreemptible, specs[1].Job.PriorityClass)
	b.PriorityClass = "urgent"
	reject(t, request(a, b), problem{"jobs[1].priorityClass", "urgent", flotilla.ErrUnknownName})
}

func TestRequestsMustBeNonEmptyWellFormedNonNegativeAndInTheSchema(t *testing.T) {
	for _, tc := range []struct {
		name     string
		requests map[string]string
		want     []problem
	}{
		{name: "absent", want: []problem{{"jobs[0].requests", "", flotilla.ErrRequired}}},
		{name: "malformed", requests: map[string]string{"cpu": "lots"}, want: []problem{{"jobs[0].requests.cpu", "lots", flotilla.ErrMalformed}}},
		{name: "negative", requests: map[string]string{"memory": "-1Gi"}, want: []problem{{"jobs[0].requests.memory", "-1Gi", flotilla.ErrNegative}}},
		{name: "unknown", requests: map[string]string{"cpu": "1", "tpu": "1"}, want: []problem{{"jobs[0].requests.tpu", "tpu", flotilla.ErrUnknownResource}}},
		{name: "all", requests: map[string]string{"cpu": "x", "memory": "-1", "tpu": "1"}, want: []problem{
			{"jobs[0].requests.cpu", "x", flotilla.ErrMalformed},
			{"jobs[0].requests.memory", "-1", flotilla.ErrNegative},
			{"jobs[0].requests.tpu", "tpu", flotilla.ErrUnknownResource},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reject(t, request(JobTemplate{Requests: tc.requests}), tc.want...)
		})
	}
	specs := accept(t, request(JobTemplate{Requests: map[string]string{"cpu": "500m", "memory": "4Gi"}}))
	require.Equal(t, flotilla.Resources{500, 4 << 30, 0}, specs[0].Job.Requests)
}

func TestTolerationsAndNodeSelectorsAreJudgedByJobValidateAtTheFilesPaths(t *testing.T) {
	tpl := cpuJob()
	tpl.Tolerations = []Toleration{
		{Key: "gpu", Effect: "NoSchedule"},
		{Operator: "Equal", Value: "v"},
		{Key: "k", Operator: "Exists", Value: "v"},
		{Key: "k", Operator: "Maybe", Effect: "Sometimes"},
	}
	tpl.NodeSelector = map[string]string{"": "a"}
	reject(t, request(tpl),
		problem{"jobs[0].nodeSelector", "", flotilla.ErrRequired},
		problem{"jobs[0].tolerations[1].operator", "Equal", flotilla.ErrInconsistent},
		problem{"jobs[0].tolerations[2].value", "v", flotilla.ErrInconsistent},
		problem{"jobs[0].tolerations[3].operator", "Maybe", flotilla.ErrUnknownName},
		problem{"jobs[0].tolerations[3].effect", "Sometimes", flotilla.ErrUnknownName},
	)
	tpl.Tolerations, tpl.NodeSelector = tpl.Tolerations[:1], map[string]string{"zone": "a"}
	j := accept(t, request(tpl))[0].Job
	require.Equal(t, []flotilla.Toleration{{Key: "gpu", Operator: flotilla.TolerationEqual, Effect: flotilla.TaintNoSchedule}}, j.Tolerations)
	require.Equal(t, map[string]string{"zone": "a"}, j.NodeSelector)
}

func TestRuntimeMustNotBeNegativeAndExitCodeIsAnExitStatus(t *testing.T) {
	tpl := cpuJob()
	tpl.Runtime, tpl.ExitCode = "-1s", 256
	reject(t, request(tpl),
		problem{"jobs[0].runtime", "-1s", flotilla.ErrNegative},
		problem{"jobs[0].exitCode", "256", flotilla.ErrOutOfRange})
	tpl.ExitCode = -1
	tpl.Runtime = "never"
	reject(t, request(tpl),
		problem{"jobs[0].runtime", "never", flotilla.ErrMalformed},
		problem{"jobs[0].exitCode", "-1", flotilla.ErrOutOfRange})
	tpl.Runtime, tpl.ExitCode = "20s", 3
	s := accept(t, request(tpl))[0]
	require.Equal(t, 20*time.Second, s.Runtime)
	require.Equal(t, 3, s.ExitCode)
}

func TestQueueJobSetAndAJobTemplateAreRequired(t *testing.T) {
	reject(t, &Request{},
		problem{"queue", "", flotilla.ErrRequired},
		problem{"jobSet", "", flotilla.ErrRequired},
		problem{"jobs", "", flotilla.ErrRequired})
}

func TestEveryJobGetsTheSubmitTimeTheQueueAndTheJobSet(t *testing.T) {
	a := cpuJob()
	a.Count, a.Priority = intp(2), 7
	for _, s := range accept(t, request(a, cpuJob())) {
		require.Equal(t, testNow, s.Job.SubmitTime)
		require.Equal(t, "A", s.Job.Queue)
		require.Equal(t, "s1", s.Job.JobSet)
	}
}

func TestExpandedJobsDoNotShareRequestVectors(t *testing.T) {
	a := cpuJob()
	a.Count = intp(2)
	specs := accept(t, request(a))
	specs[0].Job.Requests[0] = 99
	require.Equal(t, int64(1000), specs[1].Job.Requests[0])
}

func TestAnyProblemRejectsTheWholeRequestNamingEveryProblem(t *testing.T) {
	good := cpuJob()
	good.Count = intp(10)
	bad1 := cpuJob()
	bad1.PriorityClass, bad1.TerminationGracePeriod = "nope", "100ms"
	bad2 := JobTemplate{Requests: map[string]string{"cpu": "-2"}, ActiveDeadline: "x", Count: intp(-3)}
	reject(t, request(good, bad1, bad2),
		problem{"jobs[1].priorityClass", "nope", flotilla.ErrUnknownName},
		problem{"jobs[1].terminationGracePeriod", "100ms", flotilla.ErrOutOfRange},
		problem{"jobs[2].count", "-3", flotilla.ErrNegative},
		problem{"jobs[2].requests.cpu", "-2", flotilla.ErrNegative},
		problem{"jobs[2].activeDeadline", "x", flotilla.ErrMalformed})
}

func TestMisconfiguredRulesCatalogOrIDSourceAreErrorsNotPanics(t *testing.T) {
	var c counter
	_, err := Rules{MaxTerminationGracePeriod: time.Millisecond, MaxJobsPerRequest: -1}.Jobs(request(cpuJob()), nil, testNow, nil)
	requireProblems(t, err,
		problem{"submitRules.maxTerminationGracePeriod", "1ms", flotilla.ErrOutOfRange},
		problem{"submitRules.maxJobsPerRequest", "-1", flotilla.ErrNegative},
		problem{"catalog", "<nil>", flotilla.ErrRequired},
		problem{"newID", "<nil>", flotilla.ErrRequired})
	_, err = Rules{}.Jobs(nil, &Catalog{DefaultPriorityClass: "x"}, testNow, c.next)
	requireProblems(t, err,
		problem{"catalog.schema", "<nil>", flotilla.ErrRequired},
		problem{"catalog.defaultPriorityClass", "x", flotilla.ErrUnknownName},
		problem{"(root)", "<nil>", flotilla.ErrRequired})
}
