package jobsfile

import (
	"bytes"
	"errors"
	"os"
	"testing"

	"github.com/flotilla-sched/flotilla"
)

// FuzzDecodeJobs: the jobs file of `flotilla priority` never panics the
// decoder; every error names a field; accepted jobs satisfy the documented
// rules (id and user set, urgency 0–31, ids unique).
func FuzzDecodeJobs(f *testing.F) {
	for _, p := range []string{"../../testdata/priority/jobs.json", "../../testdata/priority/jobs.jsonl"} {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte(`[{"id": "a", "user": "u", "urgency": 31}]`))
	f.Add([]byte(`{"id": "a", "user": "u"}` + "\n" + `{"id": "a", "user": "v", "urgency": 40}`))
	f.Add([]byte(`[{"id": 1}]`))
	f.Add([]byte(``))
	f.Fuzz(func(t *testing.T, data []byte) {
		jobs, err := Decode(bytes.NewReader(data))
		if err != nil {
			var fe *flotilla.FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("error without a field: %v", err)
			}
			return
		}
		seen := map[string]bool{}
		for _, j := range jobs {
			if j.ID == "" || j.User == "" || j.Urgency < 0 || j.Urgency > 31 || seen[j.ID] {
				t.Fatalf("accepted a job breaking the rules: %+v", j)
			}
			seen[j.ID] = true
		}
	})
}
