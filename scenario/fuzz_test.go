package scenario

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/flotilla-sched/flotilla"
	"github.com/stretchr/testify/require"
)

// addSeeds adds the shared scenarios (when present) and small documents to f.
func addSeeds(f *testing.F, docs ...string) {
	if all, err := filepath.Glob(filepath.Join(sharedDir, "*.json")); err == nil {
		for _, p := range all {
			if data, err := os.ReadFile(p); err == nil {
				f.Add(data)
			}
		}
	}
	for _, d := range docs {
		f.Add([]byte(d))
	}
}

func FuzzParse(f *testing.F) {
	base, err := json.Marshal(baseFile())
	require.NoError(f, err)
	addSeeds(f,
		string(base),
		`{}`, `null`, `[]`, ``, `{"nodes": [{"name": "n", "count": 3, "resources": {"cpu": "4", "memory": "8"}}]}`,
		`{"nodes": [{"name": "n", "resources": {"cpu": "4"}}], "queues": [{"name": "A"}],
		  "rounds": [{"submit": [{"id": "g", "queue": "A", "count": 2, "requests": {"cpu": "1"},
		                          "gang": {"id": "x", "cardinality": 2, "nodeUniformityLabel": "zone"},
		                          "tolerations": [{"operator": "Exists"}]}]},
		             {"finish": ["g-0"], "cancel": ["g-1"]}]}`,
		`{"nodes": [{"name": "n", "resources": {"cpu": "4"}}], "config": {"roundDuration": "1h", "seed": 18446744073709551615}}`,
		`{"nodes": [{"name": "n", "resources": {"cpu": "4", "cpu": "5"}}], "cuont": [[[{}]]]}`,
		`{"config": {"usageHalfLife": "1h", "usageWeight": 2},
		  "nodes": [{"name": "n", "count": 2, "resources": {"cpu": "8", "nvidia.com/gpu": "4"}}],
		  "groups": [{"name": "research", "guaranteed": {"nvidia.com/gpu": "4"}, "limit": {"nvidia.com/gpu": "6", "cpu": "12"},
		              "lendingLimit": {"nvidia.com/gpu": "2"}},
		             {"name": "prod", "parent": "research", "priorityFactor": 0.5}],
		  "queues": [{"name": "nlp", "parent": "research", "guaranteed": {"nvidia.com/gpu": "2"}, "usage": 0.25},
		             {"name": "serving", "parent": "prod", "limit": {"cpu": "4"}}, {"name": "adhoc"}],
		  "rounds": [{"submit": [{"id": "a", "queue": "nlp", "count": 6, "requests": {"cpu": "1", "nvidia.com/gpu": "1"}},
		                         {"id": "s", "queue": "serving", "count": 6, "requests": {"cpu": "1"}}]}, {}]}`,
		`{"nodes": [{"name": "n", "resources": {"cpu": "4"}}], "groups": [{"name": "g", "parent": "h"}, {"name": "h", "parent": "g"}],
		  "queues": [{"name": "g", "parent": "q", "limit": {"cpu": "-1"}, "usage": 2}], "config": {"usageWeight": -1}}`,
		`{"config": {"topologies": [{"name": "default", "levels": ["block", "rack", "host"]}, {"name": "nv", "levels": ["nvlink"]}]},
		  "nodes": [{"name": "n", "count": 4, "resources": {"cpu": "4"}, "labels": {"block": "b1", "rack": "r1"}}], "queues": [{"name": "A"}],
		  "rounds": [{"submit": [{"id": "g", "queue": "A", "count": 2, "requests": {"cpu": "1"},
		                          "gang": {"id": "x", "topology": {"required": "block", "preferred": "rack"}}},
		                         {"id": "h", "queue": "A", "count": 2, "requests": {"cpu": "1"},
		                          "gang": {"id": "y", "topology": {"name": "nv", "preferred": "nvlink"}}}]}]}`,
		`{"config": {"topologies": [{"name": "", "levels": ["a", "a", ""]}, {"levels": null}]}, "nodes": [{"name": "n", "resources": {"cpu": "4"}}],
		  "queues": [{"name": "A"}], "rounds": [{"submit": [{"id": "g", "queue": "A", "requests": {"cpu": "1"},
		  "gang": {"id": "x", "nodeUniformityLabel": "z", "topology": {"name": "t", "required": "rack", "preferred": "block"}}}]}]}`,
	)
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := Parse(data)
		if err != nil {
			requireAllFieldErrors(t, err)
			return
		}
		// Valid files keep their jobs and nodes within limits, so Build is
		// bounded; it must agree with Parse.
		built, err := file.Build()
		require.NoError(t, err)
		require.NotNil(t, built.Schema)

		// What a valid file means survives a round trip through JSON.
		once, err := json.Marshal(file)
		require.NoError(t, err)
		again, err := Parse(once)
		require.NoError(t, err, "re-parsing %s", once)
		twice, err := json.Marshal(again)
		require.NoError(t, err)
		require.True(t, bytes.Equal(once, twice), "%s\n!=\n%s", once, twice)
	})
}

func FuzzParseExpect(f *testing.F) {
	addSeeds(f, seedExpect, `{"rounds": [{"scheduled": {"A": -1}}]}`, `{"rounds": null}`, `{`,
		`{"rounds": [{"fairShare": {"A": 0.5, "research": 0.583}, "adjustedFairShare": {"B": 1.5, "": 0}}]}`)
	f.Fuzz(func(t *testing.T, data []byte) {
		e, err := ParseExpect(data)
		if err != nil {
			requireAllFieldErrors(t, err)
			return
		}
		_ = e.Check(seedOutput())
		_ = e.Check(nil)
	})
}

func FuzzParseOutput(f *testing.F) {
	var buf bytes.Buffer
	require.NoError(f, WriteJSON(&buf, smallOutput()))
	f.Add(buf.Bytes())
	f.Add([]byte(`{"rounds": [{"queues": [{"allocated": null}]}]}`))
	f.Add([]byte(`{"rounds": [{"queues": [{"name": "A", "parent": "g", "usage": 0.5}],
	  "groups": [{"name": "g", "allocated": null, "usage": 0.5}]}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		out, err := ParseOutput(data)
		if err != nil {
			requireAllFieldErrors(t, err)
			return
		}
		var w bytes.Buffer
		require.NoError(t, WriteTable(&w, out))
		require.NoError(t, WriteJSON(&w, out))
	})
}

// runTimeField is the field of the only problems Run may find in a file
// Parse accepted.
var runTimeField = regexp.MustCompile(`^rounds\[\d+\]\.(finish|cancel)\[\d+\]$`)

// FuzzParseRun: whatever Parse accepts, Run either runs or fails with a
// problem only a run can find (a finish or cancel naming a job that is not
// running or queued), and never panics.
func FuzzParseRun(f *testing.F) {
	f.Add([]byte(`{"nodes": [{"name": "n", "resources": {"cpu": "4"}}], "queues": [{"name": "A"}],
	  "rounds": [{"submit": [{"id": "a", "queue": "A", "count": 3, "requests": {"cpu": "1"}}]}, {"finish": ["a-0"]}]}`))
	f.Add([]byte(`{"config": {"fairness": "asset", "protectedFractionOfFairShare": 0, "requeuePreempted": true,
	  "defaultPriorityClass": "armada-preemptible"},
	  "nodes": [{"name": "n", "count": 2, "resources": {"cpu": "4", "memory": "4Gi"}}], "queues": [{"name": "A"}, {"name": "B"}],
	  "rounds": [{"submit": [{"id": "a", "queue": "A", "count": 8, "requests": {"cpu": "1"}}]},
	             {"submit": [{"id": "b", "queue": "B", "count": 4, "priorityClass": "armada-default", "requests": {"cpu": "2"},
	                          "gang": {"id": "g"}}]}, {"cancel": ["a-1"]}]}`))
	f.Add([]byte(`{"config": {"strategy": "lottery", "priorityHalftime": "1m"},
	  "nodes": [{"name": "n", "count": 2, "resources": {"cpu": "4"}}], "queues": [{"name": "A", "priorityFactor": 2}, {"name": "B"}],
	  "rounds": [{"submit": [{"id": "a", "queue": "A", "count": 8, "requests": {"cpu": "1"}}, {"id": "b", "queue": "B", "count": 8, "requests": {"cpu": "1"}}]}, {}]}`))
	f.Add([]byte(`{"config": {"usageHalfLife": "1h", "usageWeight": 2},
		  "nodes": [{"name": "n", "count": 2, "resources": {"cpu": "8", "nvidia.com/gpu": "4"}}],
		  "groups": [{"name": "research", "guaranteed": {"nvidia.com/gpu": "4"}, "limit": {"nvidia.com/gpu": "6", "cpu": "12"},
		              "lendingLimit": {"nvidia.com/gpu": "2"}},
		             {"name": "prod", "parent": "research", "priorityFactor": 0.5}],
		  "queues": [{"name": "nlp", "parent": "research", "guaranteed": {"nvidia.com/gpu": "2"}, "usage": 0.25},
		             {"name": "serving", "parent": "prod", "limit": {"cpu": "4"}}, {"name": "adhoc"}],
		  "rounds": [{"submit": [{"id": "a", "queue": "nlp", "count": 6, "requests": {"cpu": "1", "nvidia.com/gpu": "1"}},
		                         {"id": "s", "queue": "serving", "count": 6, "requests": {"cpu": "1"}}]}, {}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := Parse(data)
		if err != nil {
			return
		}
		b, err := file.Build()
		if err != nil {
			t.Fatalf("Build after Parse: %v", err)
		}
		jobs := 0
		for _, r := range b.Rounds {
			jobs += len(r.Submit)
		}
		if len(b.Nodes) > 64 || jobs > 512 || len(b.Rounds) > 16 {
			return
		}
		_, err = Run(context.Background(), b)
		if err != nil {
			// The only problems Run may find in a valid file are the
			// documented ones: a finish or cancel naming a job that is not
			// running (or queued) when its round starts.
			var fe *flotilla.FieldError
			if !errors.As(err, &fe) || !errors.Is(err, flotilla.ErrUnknownName) || !runTimeField.MatchString(fe.Field) {
				t.Fatalf("a valid file fails at run time: %v", err)
			}
		}
	})
}
