package scheduler_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/scheduler"
)

// Late put-back (putBackLate): evicted jobs displaced early in the cycle
// go back at its end into the room left on their own nodes, in
// rescheduling order, a gang whole. Each case is two 4-core nodes, every
// preemptible job evicted (protected fraction 0); C's gang of half-core
// members, eight on node-0 and two on node-1, is rescheduled first (its
// first member weighs least), B's jobs on node-1 after it. A's queued mid
// jobs go first: the first displace B's units (rescheduled last), the last
// finds only C's gang left to displace and takes node-0, freeing node-1's
// share of the gang too, so room appears on node-1 after B's units were
// displaced.
func TestLatePutBackRules(t *testing.T) {
	half := func(j *flotilla.Job) { preemptible(j); inGang("c", 10, "")(j) }
	for _, c := range []struct {
		rule string
		// b lays out B's jobs on node-1 (names to class modifiers and
		// start offsets); a are the cpus of A's queued mid jobs.
		b     []bRun
		a     []string
		back  []string // B's jobs that run on
		gone  []string // B's jobs preempted to fair share
		cGone bool     // C's gang is preempted to fair share
	}{{
		rule: "the room left goes to the job its queue offers back first (started earlier), not the one displaced last",
		b: []bRun{
			{"np", "1", nonPreemptible, -3 * time.Hour},
			{"new", "1", preemptible, 0}, // listed (and numbered) first
			{"old", "1", preemptible, -2 * time.Hour},
		},
		a:    []string{"1", "1", "1"},
		back: []string{"np", "old"}, gone: []string{"new"}, cGone: true,
	}, {
		rule: "a displaced gang goes back whole when its node ends with room for all of it",
		b: []bRun{
			{"g1", "1", func(j *flotilla.Job) { preemptible(j); inGang("b", 2, "")(j) }, -time.Hour},
			{"g2", "1", func(j *flotilla.Job) { preemptible(j); inGang("b", 2, "")(j) }, -time.Hour},
		},
		a:    []string{"2", "2"},
		back: []string{"g1", "g2"}, cGone: true,
	}} {
		t.Run(c.rule, func(t *testing.T) {
			w := newWorld(t)
			withMidPreemptible(w)
			w.cfg.ProtectedFractionOfFairShare = 0
			w.addNodes(2, "4")
			w.addQueue("A", 1)
			w.addQueue("B", 1)
			w.addQueue("C", 1)
			var gang []*flotilla.Job
			for i := range 10 {
				gang = append(gang, w.run("C", "500m", []string{"node-0", "node-1"}[i/8], half, startedAt(-4*time.Hour)))
			}
			ids := map[string]string{}
			for _, r := range c.b {
				ids[w.run("B", r.cpu, "node-1", r.mod, startedAt(r.start)).ID] = r.name
			}
			for _, cpu := range c.a {
				w.submit("A", 1, cpu, midPreemptible)
			}
			res := w.schedule()
			assert.Len(t, res.Scheduled, len(c.a), "A's jobs all run")
			pre := preemptedIDs(res)
			var gone []string
			for id, name := range ids {
				if why, ok := pre[id]; ok {
					assert.Equal(t, scheduler.PreemptedForFairShare, why, name)
					gone = append(gone, name)
				}
			}
			assert.ElementsMatch(t, c.gone, gone, "B's jobs preempted")
			for _, j := range gang {
				_, ok := pre[j.ID]
				assert.Equal(t, c.cGone, ok, "C's gang member %s preempted", j.ID)
			}
			for _, q := range res.Queues {
				if q.Name == "B" {
					assert.Equal(t, len(c.back), q.Running, "B's running count")
				}
			}
		})
	}
}

// bRun is a running job of queue B in TestLatePutBackRules.
type bRun struct {
	name, cpu string
	mod       func(*flotilla.Job)
	start     time.Duration
}
