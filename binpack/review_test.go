package binpack_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/binpack"
)

// rvJob is a bound job (queue >= 0) or a hold (queue == -1).
type rvJob struct {
	node, queue, level int
	req                flotilla.Resources
}

type rvWorld struct {
	w    *world
	jobs []rvJob
}

func (r *rvWorld) alloc(n, l int) flotilla.Resources {
	a := r.w.nodes[n].Total.Clone()
	for _, j := range r.jobs {
		if j.node == n && j.level >= l {
			a.Sub(j.req)
		}
	}
	return a
}

func (r *rvWorld) tier(n, q int) int {
	var u []int
	for _, j := range r.jobs {
		if j.node == n && j.queue >= 0 && !slices.Contains(u, j.queue) {
			u = append(u, j.queue)
		}
	}
	switch {
	case len(u) == 1 && u[0] == q:
		return 0
	case len(u) == 0:
		return 1
	case slices.Contains(u, q):
		return 2
	}
	return 3
}

func (r *rvWorld) key(n, l int) []int64 {
	a := r.alloc(n, l)
	k := make([]int64, len(r.w.idx))
	for i, x := range r.w.idx {
		k[i] = oracleFloor(a[x], r.w.resol[i])
	}
	return k
}

func (r *rvWorld) oracle(q *binpack.Query, c int) int {
	w := r.w
	fits := func(n int) bool {
		return oracleAdmits(consSpecs[c], w.nodes[n]) && q.Requests.Fits(r.alloc(n, q.Level))
	}
	if q.OnlyNode >= 0 {
		if fits(q.OnlyNode) {
			return q.OnlyNode
		}
		return -1
	}
	best, bestTier, bestKey := -1, 0, []int64(nil)
	for n := range w.nodes {
		if w.nodes[n].Unschedulable || !fits(n) {
			continue
		}
		t, k := r.tier(n, q.Queue), r.key(n, q.Level)
		if best < 0 || t < bestTier || (t == bestTier && slices.Compare(k, bestKey) < 0) {
			best, bestTier, bestKey = n, t, k
		}
	}
	return best
}

// TestReviewSelectLazyOracle compares Select with a linear oracle after
// random Bind/Unbind/Hold/Release/Mark/Rollback/Forget sequences, without
// calling Verify (which flushes every index) between steps.
func TestReviewSelectLazyOracle(t *testing.T) {
	for _, cfg := range [][2]int{{60, 9}, {150, 3}, {40, 20}} {
		reviewLazyOracle(t, cfg[0], cfg[1])
	}
}

func reviewLazyOracle(t *testing.T, maxN, spread int) {
	for seed := int64(0); seed < 1500; seed++ {
		w, err := newWorldN(seed, maxN, spread)
		if err != nil {
			t.Fatal(err)
		}
		r := &rvWorld{w: w}
		type mk struct {
			m    binpack.Mark
			jobs []rvJob
		}
		var marks []mk
		for step := 0; step < 80; step++ {
			switch op := w.rng.IntN(12); {
			case op == 0 && len(r.jobs) > 0:
				i := w.rng.IntN(len(r.jobs))
				j := r.jobs[i]
				if j.queue < 0 {
					w.db.Release(j.node, j.level, j.req)
				} else {
					w.db.Unbind(j.node, j.queue, j.level, j.req)
				}
				r.jobs = slices.Delete(slices.Clone(r.jobs), i, i+1)
			case op == 1 && len(w.nodes) > 0:
				q, _ := w.randomQuery()
				n := w.rng.IntN(len(w.nodes))
				w.db.Hold(n, q.Level, q.Requests)
				r.jobs = append(slices.Clone(r.jobs), rvJob{node: n, queue: -1, level: q.Level, req: q.Requests})
			case op == 2:
				marks = append(marks, mk{w.db.Mark(), slices.Clone(r.jobs)})
			case op == 3 && len(marks) > 0:
				i := w.rng.IntN(len(marks))
				w.db.Rollback(marks[i].m)
				r.jobs = slices.Clone(marks[i].jobs)
				marks = marks[:i+1]
			case op == 4:
				w.db.Forget()
				marks = nil
			default:
				q, c := w.randomQuery()
				got, ok := w.db.Select(q)
				if want := r.oracle(q, c); got != want || ok != (want >= 0) {
					t.Fatalf("seed %d step %d: Select(%+v) = %d, %v; oracle %d", seed, step, *q, got, ok, want)
				}
				if ok {
					w.db.Bind(got, q.Queue, q.Level, q.Requests)
					r.jobs = append(slices.Clone(r.jobs), rvJob{node: got, queue: q.Queue, level: q.Level, req: q.Requests})
				}
			}
		}
		for n := range w.nodes {
			for l := 0; l < w.nlev; l++ {
				if got, want := w.db.Allocatable(n, l), r.alloc(n, l); !got.Equal(want) {
					t.Fatalf("seed %d: allocatable(%d,%d) = %v, model %v", seed, n, l, got, want)
				}
			}
		}
		if err := w.db.Verify(); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
	}
}

var _ = fmt.Sprint

func newWorldN(seed int64, maxNodes int, spread int) (*world, error) {
	rng := rand.New(rand.NewPCG(uint64(seed), 0x5eed))
	schemas := [][]string{{"cpu"}, {"cpu", "memory"}, {gpuName, "cpu", "memory"},
		{"memory", "cpu", "ephemeral-storage", gpuName}, {"x", "y"}, {"a", "b", "c", "d", "e"}}
	names := schemas[rng.IntN(len(schemas))]
	schema := flotilla.MustResourceSchema(names...)
	w := &world{rng: rng, nres: len(names), nlev: 1 + rng.IntN(3), queues: 1 + rng.IntN(4)}
	levels := make([]int32, w.nlev)
	for l := range levels {
		levels[l] = int32(l*1000 + rng.IntN(1000))
	}
	opts := binpack.Options{Schema: schema, Levels: levels, Queues: w.queues}
	if rng.IntN(2) == 0 {
		perm := rng.Perm(len(names))[:1+rng.IntN(min(len(names), binpack.MaxIndexedResources))]
		for _, i := range perm {
			res := []int64{1, 250, 1000, 3000}[rng.IntN(4)]
			opts.IndexedResources = append(opts.IndexedResources, binpack.IndexedResource{Name: names[i], Resolution: res})
			w.idx, w.resol = append(w.idx, i), append(w.resol, res)
		}
	} else {
		for _, n := range []string{gpuName, "cpu", "memory"} {
			if i, ok := schema.Index(n); ok {
				w.idx, w.resol = append(w.idx, i), append(w.resol, 1)
			}
		}
		if len(w.idx) == 0 { // none of the defaults: the schema's first ones
			for i := range min(len(names), binpack.MaxIndexedResources) {
				w.idx, w.resol = append(w.idx, i), append(w.resol, 1)
			}
		}
	}
	for i := range rng.IntN(maxNodes) {
		n := &flotilla.Node{Name: fmt.Sprint("n", i), Total: make(flotilla.Resources, w.nres)}
		for r := range n.Total {
			n.Total[r] = int64(rng.IntN(spread)) * 500
		}
		if z := rng.IntN(3); z < 2 {
			n.Labels = map[string]string{"zone": []string{"a", "b"}[z]}
		}
		if rng.IntN(3) == 0 {
			effects := []flotilla.TaintEffect{flotilla.TaintNoSchedule, flotilla.TaintNoExecute, flotilla.TaintPreferNoSchedule}
			n.Taints = append(n.Taints, flotilla.Taint{Key: []string{"dedicated", "gpu"}[rng.IntN(2)],
				Value: []string{"x", "y"}[rng.IntN(2)], Effect: effects[rng.IntN(3)]})
		}
		n.Unschedulable = rng.IntN(7) == 0
		w.nodes = append(w.nodes, n)
	}
	db, err := binpack.New(opts, w.nodes)
	if err != nil {
		return nil, err
	}
	w.db = db
	for _, c := range consSpecs {
		w.cons = append(w.cons, db.Constraints(c.sel, c.tols))
	}
	return w, nil
}
