package httpapi_test

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flotilla-sched/flotilla/api"
	"github.com/flotilla-sched/flotilla/httpapi"
)

// jsonFields are the JSON names of a struct's fields.
func jsonFields(v any) []string {
	var out []string
	t := reflect.TypeOf(v)
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if name != "" && name != "-" {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// The bodies of the operator's routes in openapi.json have exactly the
// properties the handler's api types read and write.
func TestOpenAPIOperatorSchemasMatchTheAPITypes(t *testing.T) {
	var doc struct {
		Components struct {
			Schemas map[string]struct {
				Properties map[string]json.RawMessage `json:"properties"`
			} `json:"schemas"`
		} `json:"components"`
	}
	require.NoError(t, json.Unmarshal(httpapi.OpenAPI(), &doc))
	for name, v := range map[string]any{
		"CancelRequest": api.CancelRequest{}, "CancelResponse": api.CancelResponse{},
		"ReprioritizeRequest": api.ReprioritizeRequest{}, "ReprioritizeResponse": api.ReprioritizeResponse{},
		"PreemptRequest": api.PreemptRequest{}, "PreemptResponse": api.PreemptResponse{},
		"Cluster": api.Cluster{}, "ReportReply": api.ReportReply{},
		"Queue": api.Queue{}, "RetryPolicy": api.RetryPolicy{}, "JobStatus": api.JobStatus{},
		"SubmitResponse": api.SubmitResponse{}, "SubmitWarning": api.SubmitWarning{},
		// The web UI's reads.
		"Overview": api.Overview{}, "QueueOverview": api.QueueOverview{}, "GroupOverview": api.GroupOverview{},
		"SharePoint": api.SharePoint{}, "PoolHistory": api.PoolHistory{}, "CycleSummary": api.CycleSummary{}, "CycleQueue": api.CycleQueue{},
		"CyclesPage": api.CyclesPage{}, "JobSetSummary": api.JobSetSummary{}, "JobSetsPage": api.JobSetsPage{},
		"JobRow": api.JobRow{}, "JobsPage": api.JobsPage{}, "EndedCounts": api.EndedCounts{}, "NodeRow": api.NodeRow{}, "NodesPage": api.NodesPage{},
	} {
		s, ok := doc.Components.Schemas[name]
		require.True(t, ok, "schema %s is documented", name)
		var props []string
		for p := range s.Properties {
			props = append(props, p)
		}
		slices.Sort(props)
		require.Equal(t, jsonFields(v), props, name)
	}
}

// A queue's status in openapi.json has exactly api.QueueStatus's
// properties.
func TestOpenAPIQueueStatusMatchesTheAPIType(t *testing.T) {
	var doc struct {
		Components struct {
			Schemas struct {
				Queue struct {
					Properties struct {
						Status struct {
							Properties map[string]json.RawMessage `json:"properties"`
						} `json:"status"`
					} `json:"properties"`
				} `json:"Queue"`
			} `json:"schemas"`
		} `json:"components"`
	}
	require.NoError(t, json.Unmarshal(httpapi.OpenAPI(), &doc))
	var props []string
	for p := range doc.Components.Schemas.Queue.Properties.Status.Properties {
		props = append(props, p)
	}
	slices.Sort(props)
	require.Equal(t, jsonFields(api.QueueStatus{}), props)
}
