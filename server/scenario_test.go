package server

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flotilla-sched/flotilla/events"
)

// TestMillionJobQueueLeasesWhatFitsInTheFirstCycleAndDrainsInOrder is the
// seed's goal of a queue of a million jobs: submitted in batches of 1,000,
// the first cycle leases as many as the clusters hold, in submission order,
// and each cycle after the executors report their jobs done leases the next
// ones.
func TestMillionJobQueueLeasesWhatFitsInTheFirstCycleAndDrainsInOrder(t *testing.T) {
	n := 1_000_000
	if testing.Short() {
		n = 100_000
	}
	// ULIDs from the fake clock: all jobs are submitted at one instant,
	// and the ids' order is the submission order.
	var w *world
	w = newWorld(t, func(c *Config) { c.NewID = NewULIDs(c.Clock, zeroReader{}) })
	w.queue("A")
	const clusters, nodes, cores = 4, 25, 8 // 800 one-core jobs at a time
	for c := range clusters {
		w.report(Report{Cluster: fmt.Sprintf("c%d", c), Nodes: nodesOf(fmt.Sprintf("c%d", c), nodes, cores)})
	}
	var first, last []string
	for b := 0; b < n/1000; b++ {
		ids := w.submit("A", fmt.Sprintf("s%d", b%10), cpuJobs(1000, "1"))
		if b == 0 {
			first = ids
		}
		last = ids
	}
	require.Equal(t, n, w.srv.st.queued.store.Len())
	for round := range 2 {
		rep := w.cycle()
		require.Equal(t, clusters*nodes*cores, rep.Leased, "round %d", round)
		for c := range clusters {
			name := fmt.Sprintf("c%d", c)
			r := w.report(Report{Cluster: name})
			require.Len(t, r.Leases, nodes*cores)
			w.report(Report{Cluster: name, Jobs: held(PhaseSucceeded, r.Leases)})
		}
	}
	// Submission order within the queue: the first 1,000 jobs were the
	// first 1,000 leased (two rounds of 800), the last ones wait.
	for _, id := range first {
		require.Equal(t, events.SucceededState, w.state(id), id)
	}
	require.Equal(t, events.Queued, w.state(last[len(last)-1]))
	require.Equal(t, n-2*clusters*nodes*cores, w.srv.st.queued.store.Len())
}

// zeroReader is entropy of zeros, for deterministic ULIDs.
type zeroReader struct{}

func (zeroReader) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}
