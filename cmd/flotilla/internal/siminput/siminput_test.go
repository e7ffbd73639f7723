package siminput

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const simData = "../../testdata/simulate"

func TestConfigIsReadInTheClustersUnits(t *testing.T) {
	// example.com/fpga is a resource of the cluster file only: its
	// indexed resolution "2" is two whole fpgas, not 2000 milli-units as it
	// would be against serve's default resources.
	cfg, _, err := Read(Files{Cluster: filepath.Join(simData, "fpga.clusters.json"), Workload: filepath.Join(simData, "fpga.workload.json"),
		Config: filepath.Join(simData, "fpga.config.json")})
	require.NoError(t, err)
	require.NotNil(t, cfg.Scheduler)
	require.NotEmpty(t, cfg.Scheduler.IndexedResources)
	assert.Equal(t, "example.com/fpga", cfg.Scheduler.IndexedResources[0].Name)
	assert.Equal(t, int64(2), cfg.Scheduler.IndexedResources[0].Resolution)
	assert.True(t, cfg.RequeuePreempted, "config.requeuePreempted")
}
