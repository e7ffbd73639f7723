package scheduler_test

import (
	"slices"
	"strings"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/scheduler"
)

// oracle is a deliberately naive progressive-filling cycle: linear scans,
// no caches, no heaps, no indexes. The fast scheduler must agree with it
// placement for placement. It supports what the generated worlds use:
// DRF, lookback, per-class limits off, no rate or round limits.
type oracle struct {
	schema   *flotilla.ResourceSchema
	classes  map[string]flotilla.PriorityClass
	defClass string
	lookback int
}

type oNode struct {
	n     *flotilla.Node
	free  flotilla.Resources
	users map[string]int
}

func (o *oracle) class(j *flotilla.Job) flotilla.PriorityClass {
	if j.PriorityClass == "" {
		return o.classes[o.defClass]
	}
	return o.classes[j.PriorityClass]
}

func (o *oracle) run(snap *scheduler.Snapshot, queued []*flotilla.Job) []scheduler.Assignment {
	total := o.schema.Zero()
	nodes := make([]*oNode, len(snap.Nodes))
	byName := map[string]*oNode{}
	for i, n := range snap.Nodes {
		total.Add(n.Total)
		nodes[i] = &oNode{n: n, free: n.Total.Clone(), users: map[string]int{}}
		byName[n.Name] = nodes[i]
	}
	alloc := map[string]flotilla.Resources{}
	active := map[string]bool{}
	for _, q := range snap.Queues {
		alloc[q.Name] = o.schema.Zero()
	}
	for _, r := range snap.Running {
		n := byName[r.Node]
		n.free.Sub(r.Job.Requests)
		n.users[r.Job.Queue]++
		alloc[r.Job.Queue].Add(r.Job.Requests)
		active[r.Job.Queue] = true
	}
	perQueue := map[string][]*flotilla.Job{}
	for _, j := range queued {
		perQueue[j.Queue] = append(perQueue[j.Queue], j)
		active[j.Queue] = true
	}
	for q, js := range perQueue {
		slices.SortFunc(js, func(a, b *flotilla.Job) int {
			pa, pb := o.class(a).Priority, o.class(b).Priority
			switch {
			case pa != pb:
				if pa > pb {
					return -1
				}
				return 1
			case a.Priority != b.Priority:
				if a.Priority < b.Priority {
					return -1
				}
				return 1
			case !a.SubmitTime.Equal(b.SubmitTime):
				return a.SubmitTime.Compare(b.SubmitTime)
			}
			return strings.Compare(a.ID, b.ID)
		})
		perQueue[q] = js
	}
	var sumW float64
	for _, q := range snap.Queues {
		if active[q.Name] {
			sumW += q.Weight()
		}
	}
	share := func(r flotilla.Resources) float64 {
		var m float64
		for i, v := range r {
			if total[i] > 0 {
				m = max(m, float64(v)/float64(total[i]))
			}
		}
		return m
	}
	pos := map[string]int{}
	var out []scheduler.Assignment
	for {
		best, bestFrac, bestPrio := -1, 0.0, int32(0)
		for qi, q := range snap.Queues {
			js := perQueue[q.Name]
			p := pos[q.Name]
			if p >= len(js) || (o.lookback > 0 && p >= o.lookback) {
				continue
			}
			after := alloc[q.Name].Clone()
			after.Add(js[p].Requests)
			frac := share(after) / (q.Weight() / sumW)
			prio := o.class(js[p]).Priority
			better := best < 0 || prio > bestPrio ||
				(prio == bestPrio && (frac < bestFrac || (frac == bestFrac && q.Name < snap.Queues[best].Name)))
			if better {
				best, bestFrac, bestPrio = qi, frac, prio
			}
		}
		if best < 0 {
			return out
		}
		q := snap.Queues[best].Name
		j := perQueue[q][pos[q]]
		pos[q]++
		if n := o.pick(nodes, j); n != nil {
			n.free.Sub(j.Requests)
			n.users[q]++
			alloc[q].Add(j.Requests)
			out = append(out, scheduler.Assignment{Job: j, Node: n.n.Name})
		}
	}
}

// pick returns the smallest fitting node of the first non-empty tier.
func (o *oracle) pick(nodes []*oNode, j *flotilla.Job) *oNode {
	tier := func(n *oNode) int {
		switch {
		case len(n.users) == 1 && n.users[j.Queue] > 0:
			return 0
		case len(n.users) == 0:
			return 1
		case n.users[j.Queue] > 0:
			return 2
		}
		return 3
	}
	var idx []int
	for _, name := range []string{"nvidia.com/gpu", "cpu", "memory"} {
		if i, ok := o.schema.Index(name); ok {
			idx = append(idx, i)
		}
	}
	for t := range 4 {
		var best *oNode
		for _, n := range nodes {
			if tier(n) != t || n.n.Unschedulable || !j.Requests.Fits(n.free) ||
				!flotilla.SelectorMatches(j.NodeSelector, n.n.Labels) || !flotilla.TaintsTolerated(n.n.Taints, j.Tolerations) {
				continue
			}
			if best == nil {
				best = n
				continue
			}
			for _, i := range idx {
				if n.free[i] != best.free[i] {
					if n.free[i] < best.free[i] {
						best = n
					}
					break
				}
			}
		}
		if best != nil {
			return best
		}
	}
	return nil
}
