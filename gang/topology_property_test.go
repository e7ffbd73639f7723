package gang_test

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/leanovate/gopter"
	"github.com/leanovate/gopter/gen"
	"github.com/leanovate/gopter/prop"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/binpack"
	"github.com/flotilla-sched/flotilla/gang"
)

// topoWorld is a small generated cluster with a three-level topology
// (block, rack, host), labels sometimes missing, two clusters, cordons and
// running jobs, and a gang of identical members: for identical members
// any greedy placement is as good as the best, so the oracle can decide
// feasibility by counting (how many members each node holds).
type topoWorld struct {
	db    *binpack.DB
	nodes []*flotilla.Node
	m     int
	req   flotilla.Resources
	gt    flotilla.GangTopology
	alloc []flotilla.Resources // each node's allocatable at level 0 before placing
}

func newTopoWorld(t *testing.T, seed uint64) *topoWorld {
	rng := rand.New(rand.NewPCG(seed, 0x70b0))
	w := &topoWorld{}
	pick := func(xs ...string) string { return xs[rng.IntN(len(xs))] }
	for i := range 1 + rng.IntN(10) {
		name := fmt.Sprint("n", i)
		n := node(name, pick("", "", "c"), int64(rng.IntN(9)))
		n.Labels = map[string]string{}
		if b := pick("b1", "b2", "b1", "b2", ""); b != "" {
			n.Labels[lBlock] = b
		}
		if r := pick("r1", "r2", "r1", "r2", ""); r != "" {
			n.Labels[lRack] = r
		}
		if rng.IntN(6) > 0 {
			n.Labels[lHost] = name
		}
		n.Unschedulable = rng.IntN(8) == 0
		w.nodes = append(w.nodes, n)
	}
	w.db = newDB(t, 2, w.nodes...)
	for i, n := range w.nodes {
		if used := int64(rng.IntN(int(n.Total[0]/core) + 1)); used > 0 {
			w.db.Bind(i, 1, top, cores(used))
		}
	}
	w.db.Forget()
	for i := range w.nodes {
		w.alloc = append(w.alloc, w.db.Allocatable(i, 0).Clone())
	}
	w.m, w.req = 1+rng.IntN(4), cores(int64(1+rng.IntN(4)))
	levels := []string{lBlock, lRack, lHost}
	req, pref := rng.IntN(4)-1, rng.IntN(4)-1
	if req < 0 && pref < 0 {
		req = rng.IntN(3)
	}
	if req >= 0 && pref >= 0 && pref < req {
		req, pref = pref, req
	}
	if req >= 0 {
		w.gt.Required = levels[req]
	}
	if pref >= 0 {
		w.gt.Preferred = levels[pref]
	}
	return w
}

// oracleDomain is a domain computed from the labels.
type oracleDomain struct {
	cluster string
	path    []string
	nodes   []int
	count   int // members of w.req the uncordoned nodes hold
	free    flotilla.Resources
}

func (w *topoWorld) domains(k int) []oracleDomain {
	levels := threeLevels[0].Levels
	byKey := map[string]*oracleDomain{}
	var out []*oracleDomain
	for i, n := range w.nodes {
		var path []string
		for _, l := range levels[:k+1] {
			v, ok := n.Labels[l]
			if !ok {
				path = nil
				break
			}
			path = append(path, v)
		}
		if path == nil {
			continue
		}
		key := n.Cluster + "\x00" + strings.Join(path, "\x00")
		d := byKey[key]
		if d == nil {
			d = &oracleDomain{cluster: n.Cluster, path: path, free: make(flotilla.Resources, 2)}
			byKey[key] = d
			out = append(out, d)
		}
		d.nodes = append(d.nodes, i)
		if n.Unschedulable {
			continue
		}
		a := w.alloc[i]
		holds := int64(1 << 30)
		for r := range a {
			d.free[r] += max(a[r], 0)
			if w.req[r] > 0 {
				holds = min(holds, a[r]/w.req[r])
			}
		}
		d.count += int(max(holds, 0))
	}
	res := make([]oracleDomain, len(out))
	for i, d := range out {
		res[i] = *d
	}
	return res
}

// best is the feasible domain leaving the least free room, ties by
// (cluster, path); -1 when none is feasible.
func (w *topoWorld) best(doms []oracleDomain) int {
	best := -1
	for i, d := range doms {
		if d.count < w.m {
			continue
		}
		if best < 0 {
			best = i
			continue
		}
		b := doms[best]
		c := cmp.Or(w.db.CompareIndexed(d.free, b.free), cmp.Compare(d.cluster, b.cluster), slices.Compare(d.path, b.path))
		if c < 0 {
			best = i
		}
	}
	return best
}

func (w *topoWorld) check(res gang.Placement) string {
	levels := threeLevels[0].Levels
	req, pref := slices.Index(levels, w.gt.Required), slices.Index(levels, w.gt.Preferred)
	lo, hi := req, req
	if pref >= 0 {
		lo, hi = max(req, 0), len(levels)-1
	}
	for k := hi; k >= lo; k-- {
		doms := w.domains(k)
		b := w.best(doms)
		if b < 0 {
			continue
		}
		want := doms[b]
		if !res.Placed {
			return fmt.Sprintf("not placed (%s); oracle: level %d domain %v of cluster %q", res.Why.String(schemaCM), k, want.path, want.cluster)
		}
		if res.Level != levels[k] || res.Path != strings.Join(want.path, "/") || res.Domain.Cluster != want.cluster {
			return fmt.Sprintf("placed in %s %s of %q; oracle: %s %v of %q (free %v)", res.Level, res.Path, res.Domain.Cluster, levels[k], want.path, want.cluster, want.free)
		}
		for i, n := range res.Nodes {
			if !slices.Contains(want.nodes, n) {
				return fmt.Sprintf("member %d on node %d, outside the domain's %v", i, n, want.nodes)
			}
		}
		return ""
	}
	if req >= 0 {
		if res.Placed {
			return fmt.Sprintf("placed in %s %s, but no domain of the required level is feasible", res.Level, res.Path)
		}
		return ""
	}
	// preferred, no domain: as without a topology, in one cluster.
	feasible := false
	counts := map[string]int{}
	for i, n := range w.nodes {
		if n.Unschedulable {
			continue
		}
		a := w.alloc[i]
		holds := min(a[0]/w.req[0], a[1]/w.req[1])
		counts[n.Cluster] += int(max(holds, 0))
	}
	for _, c := range counts {
		feasible = feasible || c >= w.m
	}
	if res.Placed != feasible || (res.Placed && res.Level != "") {
		return fmt.Sprintf("fallback: placed %v at level %q; oracle feasible %v", res.Placed, res.Level, feasible)
	}
	return ""
}

func TestPropertyTopologyPlacementMatchesOracle(t *testing.T) {
	params := gopter.DefaultTestParametersWithSeed(2026)
	params.MinSuccessfulTests = 2000
	props := gopter.NewProperties(params)
	props.Property("chosen domain feasible, least free room, members inside; required never violated", prop.ForAll(
		func(seed uint64) string {
			w := newTopoWorld(t, seed)
			g := topoGang(t, "g", w.m, w.req, w.gt)
			before := stateOf(w.db)
			var p gang.Placer
			p.SetTopologies(threeLevels)
			res, err := p.Place(w.db, g, 0, levelsOf(w.m, top))
			if err != nil {
				return err.Error()
			}
			if msg := w.check(res); msg != "" {
				return fmt.Sprintf("seed %d, %d × %v, %+v: %s", seed, w.m, w.req, w.gt, msg)
			}
			if !res.Placed {
				if d := before.diff(stateOf(w.db)); d != "" {
					return fmt.Sprintf("seed %d: a failed placement changed the db: %s", seed, d)
				}
			}
			return ""
		},
		gen.UInt64(),
	))
	props.TestingRun(t)
}
