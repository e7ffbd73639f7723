package binpack_test

import (
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
	return linearSelect(r.w.nodes, q, c, r.alloc, r.tier, r.key)
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
