package scheduler_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/queue"
	"github.com/flotilla-sched/flotilla/scheduler"
)

// randomTreeWorld builds a random queue tree over bundle-sized nodes:
// up to three levels of groups, two to eight queues, guarantees (whole
// bundles, every resource given, or GPUs only), limits at or above the
// effective guarantees, lending limits at or below them, priority factors
// 0.5, 1 or 2. equal makes every job one bundle (loop freedom is proved
// for equal costs); otherwise jobs take one or two bundles and some are
// gangs of two or three.
type randomTreeWorld struct {
	*treeWorld
	rng   *rand.Rand
	equal bool
	// path lists each queue's ancestors, queue first.
	path map[string][]string
	// limit is each node's limit in bundles of GPUs (0: none).
	limit map[string]int
	// guar is each queue's guarantee in bundles and whether every resource
	// is given (false: GPUs only).
	guar     map[string]int
	guarFull map[string]bool
	queues   []string
}

func newRandomTreeWorld(t testing.TB, seed uint64, equal bool) *randomTreeWorld {
	rng := rand.New(rand.NewPCG(seed, 0x7eee))
	w := &randomTreeWorld{treeWorld: newTreeWorld(t, 2+rng.IntN(4)), rng: rng, equal: equal,
		path: map[string][]string{}, limit: map[string]int{}, guar: map[string]int{}, guarFull: map[string]bool{}}
	capacity := 8 * len(w.snap.Nodes)
	// Groups: a random forest, each group's parent an earlier group or the root.
	nG := rng.IntN(5)
	parents := map[string]string{}
	var groups []string
	for i := range nG {
		name := fmt.Sprintf("g%d", i)
		parent := ""
		if i > 0 && rng.IntN(3) > 0 {
			parent = groups[rng.IntN(i)]
		}
		parents[name] = parent
		groups = append(groups, name)
	}
	factors := []float64{0.5, 1, 2}
	nQ := 2 + rng.IntN(7)
	eff := map[string]int{} // effective guarantee in bundles, GPUs (the binding resource)
	for i := range nQ {
		name := fmt.Sprintf("q%d", i)
		parent := ""
		if nG > 0 && rng.IntN(4) > 0 {
			parent = groups[rng.IntN(nG)]
		}
		parents[name] = parent
		w.queues = append(w.queues, name)
		var g flotilla.Resources
		if rng.IntN(2) == 0 {
			n := 1 + rng.IntN(capacity/3+1)
			w.guar[name], w.guarFull[name] = n, rng.IntN(3) > 0
			if w.guarFull[name] {
				g = w.bundles(n)
			} else {
				g = w.gpus(n)
			}
		}
		q := w.queue(name, parent, factors[rng.IntN(3)], g, nil)
		if w.guar[name] > 0 && rng.IntN(3) == 0 {
			q.LendingLimit = w.gpus(rng.IntN(w.guar[name] + 1))
		}
		for p := name; p != ""; p = parents[p] {
			eff[p] += w.guar[name]
			w.path[name] = append(w.path[name], p)
		}
	}
	// Children groups come after their parents: walk backwards, so that a
	// group's effective guarantee is final when it is read, and an
	// explicit guarantee's surplus reaches its ancestors.
	for i := len(groups) - 1; i >= 0; i-- {
		name := groups[i]
		var g, l flotilla.Resources
		if rng.IntN(3) == 0 {
			extra := rng.IntN(3)
			g = w.bundles(eff[name] + extra)
			for p := name; p != ""; p = parents[p] {
				eff[p] += extra
			}
		}
		if rng.IntN(3) == 0 {
			w.limit[name] = eff[name] + 1 + rng.IntN(capacity)
			l = w.gpus(w.limit[name])
		}
		grp := w.group(name, parents[name], g, l)
		grp.PriorityFactor = factors[rng.IntN(3)]
	}
	for _, q := range w.snap.Queues {
		if rng.IntN(3) == 0 {
			w.limit[q.Name] = w.guar[q.Name] + 1 + rng.IntN(capacity)
			q.Limit = w.gpus(w.limit[q.Name])
		}
	}
	if rng.IntN(4) == 0 {
		w.cfg.ProtectedFractionOfFairShare = 1.5
	}
	return w
}

// submitRandom queues n random jobs in random queues.
func (w *randomTreeWorld) submitRandom(n int) {
	store := w.snap.Queued.(*queue.Store)
	for range n {
		q := w.queues[w.rng.IntN(len(w.queues))]
		size, members := 1, 1
		if !w.equal {
			size = 1 + w.rng.IntN(2)
			if w.rng.IntN(6) == 0 {
				members = 2 + w.rng.IntN(2)
			}
		}
		w.seq++
		gangID := ""
		if members > 1 {
			gangID = fmt.Sprintf("gang-%d", w.seq)
		}
		for m := range members {
			j := &flotilla.Job{ID: fmt.Sprintf("%s-%04d-%d", q, w.seq, m), Queue: q, SubmitTime: w.now,
				PriorityClass: flotilla.ArmadaPreemptible,
				Requests: w.schema.MustParse(map[string]string{"cpu": fmt.Sprint(8 * size),
					"memory": fmt.Sprintf("%dGi", 64*size), "nvidia.com/gpu": fmt.Sprint(size)})}
			if gangID != "" {
				j.Gang = flotilla.Gang{ID: gangID, Cardinality: members}
			}
			require.NoError(w.t, store.Add(j))
		}
	}
}

// gpusHeld sums the GPUs each node of the tree holds in running.
func (w *randomTreeWorld) gpusHeld(running []scheduler.Running) map[string]int64 {
	held := map[string]int64{}
	gpu, _ := w.schema.Index("nvidia.com/gpu")
	for _, r := range running {
		for _, n := range w.path[r.Job.Queue] {
			held[n] += r.Job.Requests[gpu]
		}
	}
	return held
}

// withinGuarantee reports whether queue q holding what running says is at
// or below its guarantee in every resource.
func (w *randomTreeWorld) withinGuarantee(q string, running []scheduler.Running) bool {
	alloc := w.schema.Zero()
	for _, r := range running {
		if r.Job.Queue == q {
			alloc.Add(r.Job.Requests)
		}
	}
	if alloc.IsZero() {
		return true
	}
	g := w.guar[q]
	if g == 0 {
		return false
	}
	limit := w.gpus(g)
	if w.guarFull[q] {
		limit = w.bundles(g)
	}
	for r, x := range alloc {
		if limit[r] == flotilla.Absent {
			if x > 0 {
				return false
			}
			continue
		}
		if x > limit[r] {
			return false
		}
	}
	return true
}

// lca is the lowest common ancestor of queues a and b ("" for the root).
func (w *randomTreeWorld) lca(a, b string) string {
	for _, x := range w.path[a] {
		if slices.Contains(w.path[b], x) {
			return x
		}
	}
	return ""
}

// treeRoundChecks runs one round of w and checks the tree's invariants
// on it: no node above its limit, no fair-share victim from a queue that
// held at most its guarantee. It requeues the preempted jobs (as the
// service does) and returns the result.
func (w *randomTreeWorld) checkedRound() (*scheduler.Result, string) {
	before := slices.Clone(w.snap.Running)
	res := w.round()
	for _, p := range res.Preempted {
		if p.Reason == scheduler.PreemptedForFairShare && w.withinGuarantee(p.Job.Queue, before) {
			return res, fmt.Sprintf("%s lost %s to fair share while within its guarantee", p.Job.Queue, p.Job.ID)
		}
	}
	for n, held := range w.gpusHeld(w.snap.Running) {
		if l := w.limit[n]; l > 0 && held > int64(l) {
			return res, fmt.Sprintf("%s holds %d GPUs over its limit %d", n, held, l)
		}
	}
	store := w.snap.Queued.(*queue.Store)
	for _, p := range res.Preempted {
		j := *p.Job
		require.NoError(w.t, store.Add(&j))
	}
	return res, ""
}

// treeSoakStats gathers the loop-freedom soak's figures.
type treeSoakStats struct {
	worlds, displacements, sameLevel int
	byDepth                          map[int]int
	lastPreempting                   [10]int
}

// soakTreeWorld runs one random world: submissions in the first rounds,
// then rounds with no new input until the cluster settles. Every
// displacement (victim, displacer, their LCA) is recorded; with inputs
// unchanged since it, the reverse displacement fails the test, and so does
// a round after settling that changes anything.
func soakTreeWorld(t testing.TB, seed uint64, equal bool, st *treeSoakStats) {
	w := newRandomTreeWorld(t, seed, equal)
	type pair struct{ victim, by string }
	seen := map[pair]int{}     // displacement → round
	states := map[string]int{} // running set → the last round that left it
	lastInput, lastPreempting := 0, 0
	const rounds = 12
	for round := range rounds {
		if round < 3 && (round == 0 || w.rng.IntN(2) == 0) {
			w.submitRandom(4 + w.rng.IntN(8*len(w.snap.Nodes)))
			lastInput = round
		}
		res, msg := w.checkedRound()
		if msg != "" {
			t.Fatalf("seed %d round %d: %s", seed, round, msg)
		}
		if len(res.Preempted) > 0 {
			lastPreempting = round + 1
		}
		for _, p := range res.Preempted {
			if p.For == nil {
				continue
			}
			st.displacements++
			l := w.lca(p.Job.Queue, p.For.Queue)
			depth := 0
			for x := l; x != ""; {
				depth++
				x = parentOf(w, x)
			}
			st.byDepth[depth]++
			if p.Job.Queue == p.For.Queue {
				st.sameLevel++
			}
			if r, ok := seen[pair{victim: p.For.ID, by: p.Job.ID}]; ok && r >= lastInput {
				t.Fatalf("seed %d (equal sizes %v): %s displaced %s in round %d, which displaced it in round %d (LCA %q), nothing new since round %d",
					seed, equal, p.For.ID, p.Job.ID, round, r, l, lastInput)
			}
			seen[pair{victim: p.Job.ID, by: p.For.ID}] = round
		}
		// A state the cluster returns to, with nothing new since it left
		// it, is a loop: it would go round for ever.
		key := runningKey(w.snap.Running)
		if r, ok := states[key]; ok && r >= lastInput && r < round && changed(res) {
			t.Fatalf("seed %d: round %d returns the cluster to its state after round %d, inputs unchanged", seed, round, r)
		}
		states[key] = round
		if round >= rounds-2 && (len(res.Scheduled) > 0 || len(res.Preempted) > 0) {
			t.Fatalf("seed %d: round %d, with nothing new since round %d, still scheduled %d and preempted %d",
				seed, round, lastInput, len(res.Scheduled), len(res.Preempted))
		}
	}
	st.worlds++
	st.lastPreempting[lastPreempting]++
}

// runningKey names the set of running jobs and their nodes.
func runningKey(running []scheduler.Running) string {
	ids := make([]string, len(running))
	for i, r := range running {
		ids[i] = r.Job.ID + "@" + r.Node
	}
	slices.Sort(ids)
	return fmt.Sprint(ids)
}

func changed(res *scheduler.Result) bool { return len(res.Scheduled) > 0 || len(res.Preempted) > 0 }

func parentOf(w *randomTreeWorld, name string) string {
	for _, g := range w.snap.Groups {
		if g.Name == name {
			return g.Parent
		}
	}
	for _, q := range w.snap.Queues {
		if q.Name == name {
			return q.Parent
		}
	}
	return ""
}

// Loop freedom over random trees (QUEUE-TREE.md §7): no displacement is
// ever reversed while the inputs stay unchanged, the limits hold on every
// path, no queue within its guarantee loses a job to fair share, and once
// nothing new arrives the cluster settles: the last two rounds change
// nothing. FLOTILLA_SOAK=N runs N worlds of each kind (equal and mixed job
// sizes) and logs the figures; the regular suite runs 5,000 of each
// (about ten seconds; 40 with -short). FLOTILLA_SOAK_SEED=S runs world S of each kind alone.
func TestTreeSoakLoopFreedom(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("FLOTILLA_SOAK"))
	if n == 0 {
		n = 5000
		if testing.Short() {
			n = 40
		}
	}
	first := uint64(1)
	if one, err := strconv.ParseUint(os.Getenv("FLOTILLA_SOAK_SEED"), 10, 64); err == nil {
		first, n = one, 1
	}
	for _, equal := range []bool{true, false} {
		st := &treeSoakStats{byDepth: map[int]int{}}
		for seed := first; seed < first+uint64(n); seed++ {
			soakTreeWorld(t, seed, equal, st)
		}
		t.Logf("equal sizes %v: %d worlds, %d displacements (by LCA depth, 0 = root: %v; within one queue %d), none reversed; last preempting round (none, 1st, …): %v",
			equal, st.worlds, st.displacements, st.byDepth, st.sameLevel, st.lastPreempting)
	}
}
