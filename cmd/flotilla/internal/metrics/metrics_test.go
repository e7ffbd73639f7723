package metrics

import (
	"errors"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/flotilla-sched/flotilla/scheduler"
	"github.com/flotilla-sched/flotilla/server"
)

// flotilla_overcommitted_nodes is the number of nodes the last cycle that
// ran found over-committed: a failed cycle leaves it, a cycle that
// scheduled nothing sets it to zero.
func TestOverCommittedNodesGaugeIsTheLastCyclesCount(t *testing.T) {
	m := New(func() *server.Server { return nil }, func() bool { return true })
	steps := []struct {
		rep  *server.CycleReport
		err  error
		want float64
	}{
		{&server.CycleReport{Result: &scheduler.Result{OverCommitted: []string{"n1", "n7"}}}, nil, 2},
		{nil, errors.New("storage unavailable"), 2},
		{&server.CycleReport{Result: &scheduler.Result{OverCommitted: []string{"n7"}}}, nil, 1},
		{&server.CycleReport{}, nil, 0},
	}
	for i, s := range steps {
		m.Cycle(s.rep, time.Millisecond, s.err)
		require.Equal(t, s.want, testutil.ToFloat64(m.overCommitted), "after cycle %d", i)
	}
}
