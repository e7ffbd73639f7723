package nodesfile_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flotilla-sched/flotilla/cmd/flotilla/internal/nodesfile"
)

// A node's resources may be JSON numbers, as Kubernetes quantities may; a
// value of another type is still refused at its path.
func TestANodesResourcesMayBeNumbers(t *testing.T) {
	nodes, err := nodesfile.Parse([]byte(`[{"name": "n", "resources": {"cpu": 4, "memory": "8Gi", "nvidia.com/gpu": 2}}]`))
	require.NoError(t, err)
	require.Len(t, nodes, 1)
	assert.Equal(t, map[string]string{"cpu": "4", "memory": "8Gi", "nvidia.com/gpu": "2"}, nodes[0].Resources)
	_, err = nodesfile.Parse([]byte(`[{"name": "n", "resources": {"cpu": true}}]`))
	require.Error(t, err)
	assert.Contains(t, err.Error(), `nodes[0].resources.cpu "true"`)
}
