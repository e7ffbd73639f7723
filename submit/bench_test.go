package submit

import (
	"testing"
)

// BenchmarkJobs1000 expands one request of 1,000 jobs (10 templates of
// 100, each with a client id, tolerations and a node selector), the
// service's batch size; ns/op / 1000 is the cost per job.
func BenchmarkJobs1000(b *testing.B) {
	cat := testCatalog()
	req := &Request{Queue: "A", JobSet: "s1"}
	for i := range 10 {
		t := JobTemplate{
			Count:                  intp(100),
			Requests:               map[string]string{"cpu": "1", "memory": "4Gi"},
			NodeSelector:           map[string]string{"zone": "a"},
			Tolerations:            []Toleration{{Key: "gpu", Effect: "NoSchedule"}},
			TerminationGracePeriod: "30s",
			ClientID:               "c" + string(rune('a'+i)),
		}
		req.Jobs = append(req.Jobs, t)
	}
	id := func() string { return "id" }
	b.ReportAllocs()
	for b.Loop() {
		specs, err := Rules{}.Jobs(req, cat, testNow, id)
		if err != nil || len(specs) != 1000 {
			b.Fatal(err, len(specs))
		}
	}
}
