package scheduler_test

import (
	"fmt"
	"math"
	"time"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/scheduler"
)

// addTree makes w a queue tree from the fuzz bytes left, one time in two:
// groups (nil, duplicate names, parents that are unknown, queues or close
// cycles), queues' parents, guarantees, limits and lending limits (partial
// vectors, negative entries, wrong lengths, inconsistent with each other),
// usage memory with values in and out of [0, 1] and times before and after
// the cycle's, and a protected fraction above 1 (guarantee reclaim).
func (w *fuzzWorld) addTree(f *fuzzBytes) {
	if !f.bit() {
		return
	}
	w.tree = true
	// One world in eight is sloppy: every field drawn at random, most such
	// trees invalid. The others break a rule only one time in 32 per field.
	sloppy := f.intn(8) == 0
	bad := func() bool {
		if sloppy {
			return f.intn(4) == 0
		}
		return f.intn(32) == 0
	}
	vec := func(cpu, mem int) flotilla.Resources {
		r := flotilla.Resources{int64(cpu) * 500, int64(mem) << 30 * 1000}
		switch {
		case bad():
			return r[:1] // wrong length
		case bad():
			r[f.intn(2)] = -1000
		}
		if f.intn(4) == 0 {
			r[f.intn(2)] = flotilla.Absent
		}
		return r
	}
	// quotas gives a guarantee, a limit at or above it and a lending limit
	// at or below it (each maybe absent), or, when sloppy, any three.
	quotas := func() (g, l, ll flotilla.Resources) {
		gc, gm := f.intn(9), f.intn(5)
		if f.intn(3) > 0 {
			g = vec(gc, gm)
		}
		if f.intn(3) == 0 {
			if sloppy {
				l = vec(f.intn(9), f.intn(5))
			} else {
				l = vec(gc+f.intn(9), gm+f.intn(5))
			}
		}
		if g != nil && f.intn(3) == 0 {
			if sloppy {
				ll = vec(f.intn(9), f.intn(5))
			} else {
				ll = vec(f.intn(gc+1), f.intn(gm+1))
			}
		}
		return g, l, ll
	}
	if w.cfg.Strategy == scheduler.Lottery && !bad() {
		w.cfg.Strategy = scheduler.ProgressiveFilling // the lottery refuses a tree
	}
	nG := f.intn(4)
	parent := func(nGroups int) string {
		switch {
		case nGroups == 0 || f.intn(3) == 0:
			return ""
		case bad():
			return []string{"nowhere", "q0"}[f.intn(2)]
		default:
			return fmt.Sprintf("g%d", f.intn(nGroups)) // may close a cycle
		}
	}
	for i := range nG {
		if bad() {
			w.snap.Groups = append(w.snap.Groups, nil)
			continue
		}
		name := fmt.Sprintf("g%d", i)
		if bad() {
			name = "q0" // a queue's name
		}
		// A group's parent is an earlier group, except when a cycle is
		// wanted.
		p := parent(i)
		if bad() {
			p = parent(nG)
		}
		grp := &flotilla.QueueGroup{Name: name, Parent: p, PriorityFactor: []float64{0, 1, 2, 0.5}[f.intn(4)]}
		// A group's explicit guarantee is rarely above its children's:
		// give one only sloppily or with a large amount.
		_, grp.Limit, _ = quotas()
		if sloppy || f.intn(4) == 0 {
			grp.Guaranteed = vec(64, 64)
			if sloppy {
				grp.Guaranteed, grp.Limit, grp.LendingLimit = quotas()
			} else if grp.Limit != nil {
				grp.Limit = vec(64+f.intn(9), 64+f.intn(5))
			}
		}
		w.snap.Groups = append(w.snap.Groups, grp)
	}
	for _, q := range w.snap.Queues {
		q.Parent = parent(nG)
		q.Guaranteed, q.Limit, q.LendingLimit = quotas()
	}
	if f.bit() {
		w.cfg.ProtectedFractionOfFairShare = 2
	}
	if f.bit() && w.cfg.Strategy != scheduler.Lottery {
		w.cfg.UsageHalfLife = time.Duration(1+f.intn(4)) * time.Minute
		w.cfg.UsageWeight = float64(f.intn(3))
		w.snap.Usage.Time = t0.Add(time.Duration(f.intn(5)-2) * time.Minute)
		w.snap.Usage.Usage = map[string]float64{}
		for _, q := range w.snap.Queues {
			u := []float64{0, 0.25, 1, 0.5}[f.intn(4)]
			if bad() {
				u = []float64{-0.5, 2, math.NaN()}[f.intn(3)]
			}
			w.snap.Usage.Usage[q.Name] = u
		}
	}
}

// checkTree returns the first broken rule of the tree in a successful
// Schedule: every group reported; no node of the tree ends above its limit
// in a resource it was not already above before the cycle (rule 5: every
// placement keeps its path within the limits; removals only lower it).
func (w *fuzzWorld) checkTree(res *scheduler.Result) string {
	if !w.tree {
		return ""
	}
	if len(res.Groups) != len(w.snap.Groups) {
		return fmt.Sprintf("%d groups, %d reported", len(w.snap.Groups), len(res.Groups))
	}
	parent, limit := map[string]string{}, map[string]flotilla.Resources{}
	for _, g := range w.snap.Groups {
		parent[g.Name], limit[g.Name] = g.Parent, g.Limit
	}
	for _, q := range w.snap.Queues {
		parent[q.Name], limit[q.Name] = q.Parent, q.Limit
	}
	held := func(jobs []*flotilla.Job) map[string]flotilla.Resources {
		h := map[string]flotilla.Resources{}
		for _, j := range jobs {
			for n := j.Queue; n != ""; n = parent[n] {
				if h[n] == nil {
					h[n] = make(flotilla.Resources, len(j.Requests))
				}
				h[n].Add(j.Requests)
			}
		}
		return h
	}
	preempted := map[string]bool{}
	for _, p := range res.Preempted {
		preempted[p.Job.ID] = true
	}
	var before, after []*flotilla.Job
	for _, r := range w.snap.Running {
		before = append(before, r.Job)
		if !preempted[r.Job.ID] {
			after = append(after, r.Job)
		}
	}
	for _, a := range res.Scheduled {
		after = append(after, a.Job)
	}
	was, is := held(before), held(after)
	for n, l := range limit {
		for r, x := range is[n] {
			if l == nil || l[r] == flotilla.Absent || x <= l[r] {
				continue
			}
			if b := was[n]; b == nil || x > b[r] {
				return fmt.Sprintf("%s holds %d of resource %d over its limit %d (held %v before)", n, x, r, l[r], was[n])
			}
		}
	}
	return ""
}
