package submit

import (
	"strings"
	"testing"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/backend"
)

// FuzzParseSubmit feeds arbitrary bytes to Parse and the rules: they
// never panic; every problem is a *flotilla.FieldError; an accepted request
// yields jobs that all pass Job.Validate and the library's gang rule; and
// ParseJobs accepts exactly what Parse followed by Jobs accepts,
// with the same jobs.
func FuzzParseSubmit(f *testing.F) {
	for _, seed := range []string{
		serviceExample,
		`{"queue": "A", "jobSet": "s", "jobs": [{"requests": {"cpu": "1"}}]}`,
		`{"queue": "A", "jobSet": "s", "jobs": [{"count": 3, "clientId": "c", "requests": {"cpu": "1", "nvidia.com/gpu": "1"}, "terminationGracePeriod": "0s"}, {"clientId": "c-1", "requests": {"memory": "1Gi"}}]}`,
		`{"queue": "A", "jobSet": "s", "jobs": [{"count": 1, "requests": {"cpu": "1"}, "gang": {"id": "g", "cardinality": 2}}, {"requests": {"cpu": "2"}, "gang": {"id": "g", "cardinality": 2}, "priorityClass": "armada-preemptible"}]}`,
		`{"queue": "A", "jobSet": "s", "jobs": [{"requests": {"cpu": "-1"}, "tolerations": [{"operator": "Exists", "value": "v"}], "activeDeadline": "0s", "runtime": "-1s", "exitCode": 300}]}`,
		`{"jobs": [{"cuont": 2}]}`,
		`{"queue": 1}`,
		``,
		// The refusals of names.go, of text that is not UTF-8, of a
		// request of nothing.
		`{"queue": "..", "jobSet": ".", "jobs": [{"requests": {"cpu": "0"}}]}`,
		"{\"queue\": \"A\", \"jobSet\": \"s\xff\", \"jobs\": [{\"requests\": {\"cpu\": \"1\"}, \"nodeSelector\": {\"z\xfe\": \"a\"}}]}",
		`{"queue": "A", "jobSet": "s", "jobs": [{"requests": {"cpu": "1"}, "clientId": "` + strings.Repeat("c", 254) + `", "gang": {"id": "g", "cardinality": 1, "nodeUniformityLabel": "` + strings.Repeat("l", 64) + `"}}]}`,
		// Gang topologies: accepted, unknown, inconsistent.
		`{"queue": "A", "jobSet": "s", "jobs": [{"count": 2, "requests": {"cpu": "1"}, "gang": {"id": "g", "cardinality": 2, "topology": {"required": "topology.flotilla.dev/block", "preferred": "topology.flotilla.dev/rack"}}}]}`,
		`{"queue": "A", "jobSet": "s", "jobs": [{"requests": {"cpu": "1"}, "gang": {"id": "g", "cardinality": 2, "topology": {"name": "nv"}}}, {"requests": {"cpu": "1"}, "gang": {"id": "g", "cardinality": 2, "nodeUniformityLabel": "z", "topology": {"preferred": "rack"}}}]}`,
	} {
		f.Add([]byte(seed))
	}
	cat := topoCatalog()
	rules := Rules{MaxJobsPerRequest: 1000}
	f.Fuzz(func(t *testing.T, data []byte) {
		var c1, c2 counter
		var specs []backend.JobSpec
		req, err := Parse(data)
		if err == nil {
			specs, err = rules.Jobs(req, cat, testNow, c1.next)
		}
		both, bothErr := rules.ParseJobs(data, cat, testNow, c2.next)
		if (err == nil) != (bothErr == nil) {
			t.Fatalf("Parse+Jobs error %v, ParseJobs error %v", err, bothErr)
		}
		if err != nil {
			if specs != nil || both != nil {
				t.Fatalf("jobs returned with an error")
			}
			for _, e := range append(flotilla.Problems(err), flotilla.Problems(bothErr)...) {
				if _, ok := e.(*flotilla.FieldError); !ok {
					t.Fatalf("problem %v (%T) is not a *flotilla.FieldError", e, e)
				}
			}
			return
		}
		if len(specs) != len(both) {
			t.Fatalf("ParseJobs gave %d jobs, Parse+Jobs %d", len(both), len(specs))
		}
		for i, s := range specs {
			if err := s.Job.Validate(cat.Schema); err != nil {
				t.Fatalf("accepted job %d invalid: %v", i, err)
			}
			if s.TerminationGracePeriod < MinTerminationGracePeriod || s.TerminationGracePeriod > DefaultMaxTerminationGracePeriod || s.ActiveDeadline <= 0 || s.Runtime < 0 {
				t.Fatalf("accepted job %d: %+v", i, s)
			}
			if s.ClientID != both[i].ClientID || !s.Job.Requests.Equal(both[i].Job.Requests) {
				t.Fatalf("job %d differs between ParseJobs and Parse+Jobs", i)
			}
		}
		if err := gangCheck(specs); err != nil {
			t.Fatalf("gang rule: %v", err)
		}
	})
}
