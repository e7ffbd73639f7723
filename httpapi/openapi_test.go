package httpapi_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flotilla-sched/flotilla/httpapi"
)

// TestOpenAPIDocumentListsExactlyTheHandlersRoutes checks openapi.json
// against the routes the handler serves: every documented operation is
// served and every served route is documented.
func TestOpenAPIDocumentListsExactlyTheHandlersRoutes(t *testing.T) {
	var doc struct {
		OpenAPI string                                `json:"openapi"`
		Paths   map[string]map[string]json.RawMessage `json:"paths"`
	}
	require.NoError(t, json.Unmarshal(httpapi.OpenAPI(), &doc))
	require.True(t, strings.HasPrefix(doc.OpenAPI, "3."))
	var documented []string
	for path, ops := range doc.Paths {
		for method := range ops {
			if method == "parameters" {
				continue
			}
			documented = append(documented, strings.ToUpper(method)+" "+path)
		}
	}
	served := httpapi.New(nil, httpapi.Options{}).Routes()
	slices.Sort(documented)
	slices.Sort(served)
	require.Equal(t, served, documented)
}
