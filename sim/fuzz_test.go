package sim_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/sim"
)

// FuzzParseWorkload: any input gives a workload that validates, or only
// *flotilla.FieldError problems; never a panic.
func FuzzParseWorkload(f *testing.F) {
	for _, name := range []string{"small.workload.json", "steady.workload.json"} {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{"queues": [{"name": "A"}], "jobTemplates": [{"id": "a", "queue": "A", "count": 2, "requests": {"cpu": "1"}, "gang": {"cardinality": 2}, "arrival": {"after": ["a"]}, "repeat": {"numTimes": 1, "period": "1m"}}]}`))
	f.Add([]byte(`{"queues": [], "jobTemplates": null}`))
	f.Add([]byte(`[1, 2]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		w, err := sim.ParseWorkload(data)
		if err == nil {
			if verr := w.Validate(); verr != nil {
				t.Fatalf("parsed workload does not validate: %v", verr)
			}
			return
		}
		for _, e := range flotilla.Problems(err) {
			var fe *flotilla.FieldError
			if !errors.As(e, &fe) {
				t.Fatalf("problem %v is not a *flotilla.FieldError", e)
			}
		}
	})
}
