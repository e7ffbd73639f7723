package memory_test

import (
	"testing"

	"github.com/flotilla-sched/flotilla/backend"
	"github.com/flotilla-sched/flotilla/backend/backendtest"
	"github.com/flotilla-sched/flotilla/backend/memory"
)

func TestMemoryBackendPassesTheConformanceSuite(t *testing.T) {
	backendtest.Run(t, func(*testing.T) backend.Backend { return memory.New(backendtest.Schema()) })
}
