package scheduler_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/leanovate/gopter/gen"
	"github.com/leanovate/gopter/prop"
	"github.com/stretchr/testify/require"

	"github.com/flotilla-sched/flotilla/scheduler"
)

// scheduleAsTree runs w's cycle through the queue tree's code although w
// is flat.
func scheduleAsTree(t testing.TB, w *genWorld) *scheduler.Result {
	s, err := scheduler.New(w.cfg)
	require.NoError(t, err)
	scheduler.ForceTree(s)
	res, err := s.Schedule(context.Background(), w.snap, t0)
	require.NoError(t, err)
	return res
}

// sharesKey lists every queue's report, shares to the bit.
func sharesKey(res *scheduler.Result) string {
	s := ""
	for _, q := range res.Queues {
		s += fmt.Sprintf("%s running %d queued %d share %x fair %x adjusted %x\n", q.Name, q.Running, q.Queued, q.Share, q.FairShare, q.AdjustedFairShare)
	}
	return s
}

// A flat list of queues is Armada's model exactly (QUEUE-TREE.md §6): the
// tree's code (water-filling, the tournament, its rescheduling order) run
// on a flat world decides what the flat code decides, to every placement,
// preemption and reason, with the same fair shares to the bit.
func TestPropertyTreeCodeOnFlatWorldsIsTheFlatModel(t *testing.T) {
	worlds := []struct {
		name string
		make func(testing.TB, uint64) *genWorld
	}{
		{"general", func(t testing.TB, seed uint64) *genWorld { return makeWorld(t, seed, int(seed%3)*4) }},
		{"preemption", preemptWorld},
		{"victims", victimWorld},
		{"prefer-large", func(t testing.TB, seed uint64) *genWorld {
			w := preemptWorld(t, seed)
			w.cfg.EnablePreferLargeJobOrdering = true
			return w
		}},
	}
	for _, wk := range worlds {
		t.Run(wk.name, func(t *testing.T) {
			p := properties(t)
			p.Property("tree code == flat code", prop.ForAll(func(seed uint64) string {
				flat := wk.make(t, seed).schedule(t)
				tree := scheduleAsTree(t, wk.make(t, seed))
				if a, b := resultKey(flat), resultKey(tree); a != b {
					return fmt.Sprintf("seed %d decisions:\nflat:\n%stree:\n%s", seed, a, b)
				}
				if a, b := sharesKey(flat), sharesKey(tree); a != b {
					return fmt.Sprintf("seed %d shares:\nflat:\n%stree:\n%s", seed, a, b)
				}
				return ""
			}, gen.UInt64()))
			p.TestingRun(t)
		})
	}
}
