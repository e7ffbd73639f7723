package httpapi_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/flotilla-sched/flotilla/api"
	"github.com/flotilla-sched/flotilla/backend"
	"github.com/flotilla-sched/flotilla/server"
	"github.com/flotilla-sched/flotilla/submit"
)

// TestProtocolVocabularyIsTheServices: an executor tells the service's
// refusals and phases by api's names, which must be the service's own
// texts (an executor links api, not server).
func TestProtocolVocabularyIsTheServices(t *testing.T) {
	assert.Equal(t, backend.ErrNotFound.Error(), api.ErrNotFound.Error())
	assert.Equal(t, server.ErrNotHeld.Error(), api.ErrNotHeld.Error())
	assert.Equal(t, server.ErrUnknownCluster.Error(), api.ErrUnknownCluster.Error())
	assert.Equal(t, submit.DefaultGPUResource, api.DefaultGPUResource)
	assert.Equal(t, server.DefaultLeaseTimeout, api.DefaultLeaseTimeout)
	want := []server.JobPhase{server.PhasePending, server.PhaseRunning, server.PhaseSucceeded, server.PhaseFailed, server.PhaseReturned, server.PhaseStopped}
	if assert.Len(t, api.Phases, len(want)) {
		for i, p := range want {
			assert.Equal(t, string(p), string(api.Phases[i]))
		}
	}
}
