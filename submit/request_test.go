package submit

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flotilla-sched/flotilla"
)

// serviceExample is SERVICE.md's submit file.
const serviceExample = `{"queue": "A", "jobSet": "s1",
 "jobs": [
   {"count": 40, "priorityClass": "armada-preemptible", "priority": 0,
    "requests": {"cpu": "1", "memory": "4Gi"},
    "nodeSelector": {"zone": "a"}, "tolerations": [],
    "gang": {"id": "g1", "cardinality": 40, "nodeUniformityLabel": "zone"},
    "terminationGracePeriod": "30s", "activeDeadline": "1h",
    "clientId": "train-7", "runtime": "20s", "exitCode": 0}
 ]}`

func TestParseSubmitDecodesServiceMDsSubmitFile(t *testing.T) {
	req, err := Parse([]byte(serviceExample))
	require.NoError(t, err)
	require.Equal(t, "A", req.Queue)
	require.Equal(t, "s1", req.JobSet)
	require.Len(t, req.Jobs, 1)
	j := req.Jobs[0]
	require.Equal(t, 40, *j.Count)
	require.Equal(t, &GangSpec{ID: "g1", Cardinality: 40, NodeUniformityLabel: "zone"}, j.Gang)
	require.Equal(t, "train-7", j.ClientID)
	require.Equal(t, "20s", j.Runtime)

	specs, err := Rules{}.Jobs(req, testCatalog(), testNow, (&counter{}).next)
	require.NoError(t, err)
	require.Len(t, specs, 40)
	require.Equal(t, "train-7-39", specs[39].ClientID)
	require.Equal(t, 30*time.Second, specs[0].TerminationGracePeriod)
	require.Equal(t, time.Hour, specs[0].ActiveDeadline)
	require.Equal(t, flotilla.Gang{ID: "g1", Cardinality: 40, NodeUniformityLabel: "zone"}, specs[0].Job.Gang)
}

func TestParseSubmitReportsUnknownKeysAndTypeErrorsAtTheFilesPaths(t *testing.T) {
	req, err := Parse([]byte(`{"queue": "A", "jobSet": 7, "jobs": [
		{"requests": {"cpu": "1"}},
		{"cuont": 2, "requests": {"cpu": true}, "priority": -1}]}`))
	require.Nil(t, req)
	requireProblems(t, err,
		problem{"jobSet", "7", flotilla.ErrMalformed},
		problem{"jobs[1].cuont", "cuont", flotilla.ErrUnknownName},
		problem{"jobs[1].requests.cpu", "true", flotilla.ErrMalformed},
		problem{"jobs[1].priority", "-1", flotilla.ErrNegative})
	require.Contains(t, err.Error(), `did you mean "count"`)
}

func TestParseSubmitRejectsMalformedDocumentsWhole(t *testing.T) {
	for _, doc := range []string{``, `[]`, `{"queue": "A"`, `{} {}`} {
		req, err := Parse([]byte(doc))
		require.Nil(t, req, doc)
		require.Error(t, err, doc)
		for _, fe := range fieldErrors(t, err) {
			require.Equal(t, "(root)", fe.Field, doc)
		}
	}
}

func TestParseJobsReportsTypeErrorsTogetherWithTheRulesProblems(t *testing.T) {
	specs, err := Rules{}.ParseJobs([]byte(`{"queue": "A", "jobSet": 7, "jobs": [
		{"requests": {"cpu": "1"}, "priorityClass": "urgent"},
		{"count": "2", "requests": {"gpu": "1"}, "terminationGracePeriod": "10ms"}]}`),
		testCatalog(), testNow, (&counter{}).next)
	require.Nil(t, specs)
	requireProblems(t, err,
		// decoding: the mistyped jobSet is not reported again as missing
		problem{"jobSet", "7", flotilla.ErrMalformed},
		problem{"jobs[1].count", "2", flotilla.ErrMalformed},
		// the rules
		problem{"jobs[0].priorityClass", "urgent", flotilla.ErrUnknownName},
		problem{"jobs[1].requests.gpu", "gpu", flotilla.ErrUnknownResource},
		problem{"jobs[1].terminationGracePeriod", "10ms", flotilla.ErrOutOfRange})

	specs, err = Rules{}.ParseJobs([]byte(serviceExample), testCatalog(), testNow, (&counter{}).next)
	require.NoError(t, err)
	require.Len(t, specs, 40)
}

// Requests may be JSON numbers, as Kubernetes quantities may: "cpu": 1 is
// "cpu": "1", and 0.5 is 500m.
func TestParseSubmitReadsNumbersAsQuantities(t *testing.T) {
	req, err := Parse([]byte(`{"queue": "A", "jobSet": "s", "jobs": [{"requests": {"cpu": 0.5, "memory": 1073741824}}]}`))
	require.NoError(t, err)
	require.Equal(t, flotilla.Quantities{"cpu": "0.5", "memory": "1073741824"}, req.Jobs[0].Requests)
	specs, err := Rules{}.Jobs(req, testCatalog(), testNow, (&counter{}).next)
	require.NoError(t, err)
	require.Len(t, specs, 1)
	schema := testCatalog().Schema
	require.Equal(t, schema.MustParse(map[string]string{"cpu": "500m", "memory": "1Gi"}), specs[0].Job.Requests)
}
