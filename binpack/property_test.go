package binpack_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"testing"

	"github.com/leanovate/gopter"
	"github.com/leanovate/gopter/gen"
	"github.com/leanovate/gopter/prop"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/binpack"
)

// Each property runs on generated clusters: a gopter-generated seed drives a
// deterministic generator, so a failure names the seed that reproduces it.

const propRuns = 300

func runProperty(t *testing.T, name string, check func(seed int64) string) {
	seed := int64(20260101)
	if s, err := strconv.ParseInt(os.Getenv("BINPACK_PROP_SEED"), 10, 64); err == nil {
		seed = s
	}
	params := gopter.DefaultTestParametersWithSeed(seed)
	params.MinSuccessfulTests = propRuns
	props := gopter.NewProperties(params)
	props.Property(name, prop.ForAll(check, gen.Int64()))
	props.TestingRun(t)
}

type consSpec struct {
	sel  map[string]string
	tols []flotilla.Toleration
}

var consSpecs = []consSpec{
	{},
	{sel: map[string]string{"zone": "a"}},
	{sel: map[string]string{"zone": "b"}},
	{tols: []flotilla.Toleration{{Key: "dedicated", Operator: flotilla.TolerationExists}}},
	{tols: []flotilla.Toleration{{Key: "gpu", Value: "x", Effect: flotilla.TaintNoSchedule}}},
	{sel: map[string]string{"zone": "a"}, tols: []flotilla.Toleration{{Operator: flotilla.TolerationExists}}},
}

type job struct {
	node, queue, level int
	req                flotilla.Resources
}

// world is a generated cluster, the DB under test and a naive model of it.
type world struct {
	rng    *rand.Rand
	nodes  []*flotilla.Node
	nres   int
	nlev   int
	queues int
	idx    []int
	resol  []int64
	db     *binpack.DB
	cons   []binpack.ConstraintID
	jobs   []job
}

func newWorld(seed int64) (*world, error) { return newWorldN(seed, 13, 9) }

// newWorldN draws a world of up to maxNodes-1 nodes whose capacities are
// multiples of 500 below spread×500.
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
	// The joined tier is found by walking a queue's nodes or by scanning
	// the index, depending on how many nodes the queue uses: both ways.
	db.SetJoinedWalk([]int{0, 2, 1 << 30}[uint64(seed)%3])
	for _, c := range consSpecs {
		w.cons = append(w.cons, db.Constraints(c.sel, c.tols))
	}
	return w, nil
}

func (w *world) randomQuery() (*binpack.Query, int) {
	req := make(flotilla.Resources, w.nres)
	for r := range req {
		if w.rng.IntN(8) == 0 {
			req[r] = int64(w.rng.IntN(2001))
		} else {
			req[r] = int64(w.rng.IntN(5)) * 500
		}
	}
	c := w.rng.IntN(len(consSpecs))
	q := &binpack.Query{Requests: req, Level: w.rng.IntN(w.nlev), Queue: w.rng.IntN(w.queues), Constraint: w.cons[c], OnlyNode: -1}
	if len(w.nodes) > 0 && w.rng.IntN(6) == 0 {
		q.OnlyNode = w.rng.IntN(len(w.nodes))
	}
	return q, c
}

func (w *world) bind(n int, q *binpack.Query) {
	w.db.Bind(n, q.Queue, q.Level, q.Requests)
	w.jobs = append(w.jobs, job{node: n, queue: q.Queue, level: q.Level, req: q.Requests})
}

func (w *world) unbindRandom() {
	i := w.rng.IntN(len(w.jobs))
	j := w.jobs[i]
	w.db.Unbind(j.node, j.queue, j.level, j.req)
	w.jobs = slices.Delete(w.jobs, i, i+1)
}

// The model: everything recomputed from the list of bound jobs.

func (w *world) alloc(n, l int) flotilla.Resources {
	a := w.nodes[n].Total.Clone()
	for _, j := range w.jobs {
		if j.node == n && j.level >= l {
			a.Sub(j.req)
		}
	}
	return a
}

func (w *world) users(n int) []int {
	out := []int{}
	for _, j := range w.jobs {
		if j.node == n && !slices.Contains(out, j.queue) {
			out = append(out, j.queue)
		}
	}
	slices.Sort(out)
	return out
}

func (w *world) tier(n, q int) int {
	switch u := w.users(n); {
	case len(u) == 1 && u[0] == q:
		return 0
	case len(u) == 0:
		return 1
	case slices.Contains(u, q):
		return 2
	}
	return 3
}

func oracleFloor(a, b int64) int64 {
	q := a / b
	if a%b != 0 && a < 0 {
		q--
	}
	return q
}

func (w *world) key(n, l int) []int64 {
	a := w.alloc(n, l)
	k := make([]int64, len(w.idx))
	for i, r := range w.idx {
		k[i] = oracleFloor(a[r], w.resol[i])
	}
	return k
}

func oracleAdmits(c consSpec, n *flotilla.Node) bool {
	for k, v := range c.sel {
		if n.Labels[k] != v {
			return false
		}
		if _, ok := n.Labels[k]; !ok {
			return false
		}
	}
	for _, t := range n.Taints {
		if t.Effect == flotilla.TaintPreferNoSchedule {
			continue
		}
		tolerated := false
		for _, tol := range c.tols {
			effOK := tol.Effect == "" || tol.Effect == t.Effect
			exists := tol.Operator == flotilla.TolerationExists && (tol.Key == "" || tol.Key == t.Key)
			equal := tol.Operator != flotilla.TolerationExists && tol.Key == t.Key && tol.Value == t.Value
			tolerated = tolerated || (effOK && (exists || equal))
		}
		if !tolerated {
			return false
		}
	}
	return true
}

// oracleSelect is a linear scan: eligible nodes, min by (tier, key, index).
func (w *world) oracleSelect(q *binpack.Query, c int) int {
	return linearSelect(w.nodes, q, c, w.alloc, w.tier, w.key)
}

// linearSelect is the oracle behind every Select property: over nodes, the
// fitting node of the lowest tier with the smallest key, then index, from
// the caller's own view of allocatable, tiers and keys.
func linearSelect(nodes []*flotilla.Node, q *binpack.Query, c int,
	alloc func(n, level int) flotilla.Resources, tier func(n, queue int) int, key func(n, level int) []int64) int {
	fits := func(n int) bool {
		return oracleAdmits(consSpecs[c], nodes[n]) && q.Requests.Fits(alloc(n, q.Level))
	}
	if q.OnlyNode >= 0 {
		if fits(q.OnlyNode) {
			return q.OnlyNode
		}
		return -1
	}
	best, bestTier, bestKey := -1, 0, []int64(nil)
	for n := range nodes {
		if nodes[n].Unschedulable || !fits(n) {
			continue
		}
		t, k := tier(n, q.Queue), key(n, q.Level)
		if best < 0 || t < bestTier || (t == bestTier && slices.Compare(k, bestKey) < 0) {
			best, bestTier, bestKey = n, t, k
		}
	}
	return best
}

func (w *world) checkState() string {
	if err := w.db.Verify(); err != nil {
		return err.Error()
	}
	for n := range w.nodes {
		for l := 0; l < w.nlev; l++ {
			if got, want := w.db.Allocatable(n, l), w.alloc(n, l); !got.Equal(want) {
				return fmt.Sprintf("allocatable(%d,%d) = %v, model %v", n, l, got, want)
			}
		}
		if got, want := w.db.Users(n), w.users(n); !slices.Equal(got, want) {
			return fmt.Sprintf("users(%d) = %v, model %v", n, got, want)
		}
	}
	return ""
}

func TestPropertySelectMatchesOracle(t *testing.T) {
	runProperty(t, "Select agrees with a linear-scan oracle", func(seed int64) string {
		w, err := newWorld(seed)
		if err != nil {
			return err.Error()
		}
		for step := range 60 {
			if len(w.jobs) > 0 && w.rng.IntN(5) == 0 {
				w.unbindRandom()
			} else {
				q, c := w.randomQuery()
				got, ok := w.db.Select(q)
				if want := w.oracleSelect(q, c); got != want || ok != (want >= 0) {
					return fmt.Sprintf("seed %d step %d: Select(%+v) = %d, %v; oracle %d", seed, step, *q, got, ok, want)
				}
				if ok {
					w.bind(got, q)
				}
			}
			if msg := w.checkState(); msg != "" {
				return fmt.Sprintf("seed %d step %d: %s", seed, step, msg)
			}
		}
		return ""
	})
}

func TestPropertyNoOvercommit(t *testing.T) {
	runProperty(t, "binding what Select returns never over-commits", func(seed int64) string {
		w, err := newWorld(seed)
		if err != nil {
			return err.Error()
		}
		oneLevel := w.rng.IntN(2) == 0
		level := w.rng.IntN(w.nlev)
		for step := range 80 {
			if len(w.jobs) > 0 && w.rng.IntN(8) == 0 {
				w.unbindRandom()
				continue
			}
			q, c := w.randomQuery()
			if oneLevel {
				q.Level = level
			}
			n, ok := w.db.Select(q)
			if !ok {
				continue
			}
			if !oracleAdmits(consSpecs[c], w.nodes[n]) || (w.nodes[n].Unschedulable && q.OnlyNode != n) {
				return fmt.Sprintf("seed %d step %d: node %d violates constraints or cordon", seed, step, n)
			}
			w.bind(n, q)
			if w.alloc(n, q.Level).AnyNegative() {
				return fmt.Sprintf("seed %d step %d: node %d over-committed at the job's level %d: %v", seed, step, n, q.Level, w.alloc(n, q.Level))
			}
			if msg := w.checkOvercommit(); msg != "" {
				return fmt.Sprintf("seed %d step %d: %s", seed, step, msg)
			}
		}
		return w.checkState()
	})
}

// checkOvercommit: a job uses capacity at every level up to its own, so a
// job bound at a high level may drive a lower level negative; that marks the
// lower-priority jobs there as urgency-preemption victims, by design. But at
// any level with no job bound above it, nothing may be over-committed; in
// particular never at the top level, and never at all when every job is at
// one level.
func (w *world) checkOvercommit() string {
	for n := range w.nodes {
		top := -1
		for _, j := range w.jobs {
			if j.node == n {
				top = max(top, j.level)
			}
		}
		for l := max(top, 0); l < w.nlev; l++ {
			if a := w.alloc(n, l); a.AnyNegative() {
				return fmt.Sprintf("node %d over-committed at level %d (highest job level %d): %v", n, l, top, a)
			}
		}
	}
	return ""
}

type snapshot struct {
	alloc []flotilla.Resources
	users [][]int
	picks []int
}

func (w *world) snapshot() snapshot {
	var s snapshot
	for n := range w.nodes {
		for l := 0; l < w.nlev; l++ {
			s.alloc = append(s.alloc, w.db.Allocatable(n, l).Clone())
		}
		s.users = append(s.users, w.db.Users(n))
	}
	for q := 0; q < w.queues; q++ {
		for l := 0; l < w.nlev; l++ {
			for _, c := range w.cons {
				for _, size := range []int64{0, 500, 1000, 2000} {
					req := make(flotilla.Resources, w.nres)
					for r := range req {
						req[r] = size
					}
					for only := -1; only < len(w.nodes); only++ {
						n, _ := w.db.Select(&binpack.Query{Requests: req, Level: l, Queue: q, Constraint: c, OnlyNode: only})
						s.picks = append(s.picks, n)
					}
				}
			}
		}
	}
	return s
}

func TestPropertyRollbackRestores(t *testing.T) {
	runProperty(t, "Mark, changes, Rollback leaves every observable as it was", func(seed int64) string {
		w, err := newWorld(seed)
		if err != nil {
			return err.Error()
		}
		step := func() {
			if len(w.jobs) > 0 && w.rng.IntN(4) == 0 {
				w.unbindRandom()
				return
			}
			q, _ := w.randomQuery()
			if n, ok := w.db.Select(q); ok {
				w.bind(n, q)
			}
		}
		for range w.rng.IntN(20) {
			step()
		}
		if w.rng.IntN(2) == 0 {
			w.db.Forget()
		}
		before, jobs := w.snapshot(), slices.Clone(w.jobs)
		m := w.db.Mark()
		for range w.rng.IntN(30) {
			step()
			if w.rng.IntN(6) == 0 { // a nested transaction that fails
				inner, innerJobs := w.db.Mark(), slices.Clone(w.jobs)
				for range w.rng.IntN(5) {
					step()
				}
				w.db.Rollback(inner)
				w.jobs = innerJobs
				if msg := w.checkState(); msg != "" {
					return fmt.Sprintf("seed %d: inner rollback: %s", seed, msg)
				}
			}
		}
		w.db.Rollback(m)
		w.jobs = jobs
		if msg := w.checkState(); msg != "" {
			return fmt.Sprintf("seed %d: %s", seed, msg)
		}
		after := w.snapshot()
		w.db.Rollback(m) // idempotent
		if again := w.snapshot(); !slices.Equal(again.picks, after.picks) {
			return fmt.Sprintf("seed %d: second rollback changed answers", seed)
		}
		for i := range before.alloc {
			if !before.alloc[i].Equal(after.alloc[i]) {
				return fmt.Sprintf("seed %d: allocatable %d: %v before, %v after", seed, i, before.alloc[i], after.alloc[i])
			}
		}
		for i := range before.users {
			if !slices.Equal(before.users[i], after.users[i]) {
				return fmt.Sprintf("seed %d: users of %d: %v before, %v after", seed, i, before.users[i], after.users[i])
			}
		}
		if !slices.Equal(before.picks, after.picks) {
			return fmt.Sprintf("seed %d: Select answers differ after rollback", seed)
		}
		return ""
	})
}

// lazyJob is a bound job (queue >= 0) or a hold (queue == -1) of the lazy
// index test's model.
type lazyJob struct {
	node, queue, level int
	req                flotilla.Resources
}

// lazyModel is the lazy index test's model of a world: the jobs and holds
// placed, from which allocatable, tiers and index keys are recomputed.
type lazyModel struct {
	w    *world
	jobs []lazyJob
}

func (r *lazyModel) alloc(n, l int) flotilla.Resources {
	a := r.w.nodes[n].Total.Clone()
	for _, j := range r.jobs {
		if j.node == n && j.level >= l {
			a.Sub(j.req)
		}
	}
	return a
}

func (r *lazyModel) tier(n, q int) int {
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

func (r *lazyModel) key(n, l int) []int64 {
	a := r.alloc(n, l)
	k := make([]int64, len(r.w.idx))
	for i, x := range r.w.idx {
		k[i] = oracleFloor(a[x], r.w.resol[i])
	}
	return k
}

func (r *lazyModel) oracle(q *binpack.Query, c int) int {
	return linearSelect(r.w.nodes, q, c, r.alloc, r.tier, r.key)
}

// TestPropertyLazyIndexesSelectLikeTheOracle: the node indexes are brought
// up to date lazily, so Select must agree with the linear oracle after any
// random Bind/Unbind/Hold/Release/Mark/Rollback/Forget sequence without
// Verify (which flushes every index) being called between steps, and the
// allocatable of every node and level must match the model at the end.
func TestPropertyLazyIndexesSelectLikeTheOracle(t *testing.T) {
	for _, cfg := range [][2]int{{60, 9}, {150, 3}, {40, 20}} {
		checkLazyIndexAgainstOracle(t, cfg[0], cfg[1])
	}
}

func checkLazyIndexAgainstOracle(t *testing.T, maxN, spread int) {
	for seed := int64(0); seed < 1500; seed++ {
		w, err := newWorldN(seed, maxN, spread)
		if err != nil {
			t.Fatal(err)
		}
		r := &lazyModel{w: w}
		type mk struct {
			m    binpack.Mark
			jobs []lazyJob
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
				r.jobs = append(slices.Clone(r.jobs), lazyJob{node: n, queue: -1, level: q.Level, req: q.Requests})
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
					r.jobs = append(slices.Clone(r.jobs), lazyJob{node: got, queue: q.Queue, level: q.Level, req: q.Requests})
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
