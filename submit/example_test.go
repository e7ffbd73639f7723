package submit_test

import (
	"fmt"
	"strconv"
	"time"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/submit"
)

func ExampleRules_ParseJobs() {
	cat := &submit.Catalog{
		Schema:               flotilla.MustResourceSchema("cpu", "memory", "nvidia.com/gpu"),
		PriorityClasses:      flotilla.DefaultPriorityClasses(),
		DefaultPriorityClass: flotilla.ArmadaDefault,
	}
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	n := 0
	newID := func() string { n++; return "job-" + strconv.Itoa(n) } // the service uses ULID-like ids

	specs, err := submit.Rules{}.ParseJobs([]byte(`{"queue": "A", "jobSet": "s1", "jobs": [
		{"count": 2, "clientId": "train", "requests": {"cpu": "1", "nvidia.com/gpu": "1"}},
		{"requests": {"cpu": "500m"}, "terminationGracePeriod": "30s", "activeDeadline": "1h"}]}`), cat, now, newID)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, s := range specs {
		fmt.Println(s.Job.ID, s.ClientID, cat.Schema.String(s.Job.Requests), s.TerminationGracePeriod, s.ActiveDeadline)
	}

	_, err = submit.Rules{}.ParseJobs([]byte(`{"queue": "A", "jobSet": "s1", "jobs": [
		{"requests": {"cpu": "1"}, "terminationGracePeriod": "100ms", "priorityClass": "urgent"},
		{"requests": {"cpu": "-1"}, "gang": {"id": "g", "cardinality": 2}}]}`), cat, now, newID)
	fmt.Println(err)
	// Output:
	// job-1 train-0 cpu=1 nvidia.com/gpu=1 1s 336h0m0s
	// job-2 train-1 cpu=1 nvidia.com/gpu=1 1s 336h0m0s
	// job-3  cpu=500m 30s 1h0m0s
	// jobs[0].priorityClass "urgent": names nothing known: no such priority class; known: armada-default, armada-preemptible
	// jobs[0].terminationGracePeriod "100ms": is out of range: want 0 (meaning 1s) or at least 1s
	// jobs[1].requests.cpu "-1": must not be negative
	// jobs[1].gang.cardinality "2": disagrees with another field: gang "g" has 1 members in this request; all members are submitted together
}
