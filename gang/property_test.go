package gang_test

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"os"
	"reflect"
	"slices"
	"strconv"
	"testing"

	"github.com/leanovate/gopter"
	"github.com/leanovate/gopter/gen"
	"github.com/leanovate/gopter/prop"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/binpack"
	"github.com/flotilla-sched/flotilla/gang"
	"github.com/flotilla-sched/flotilla/queue"
)

// Each property runs on generated worlds: a gopter-generated seed drives a
// deterministic generator, so a failure names the seed that reproduces it
// (GANG_PROP_SEED replays a run).
func runProperty(t *testing.T, name string, runs int, check func(seed int64) string) {
	seed := int64(20260202)
	if s, err := strconv.ParseInt(os.Getenv("GANG_PROP_SEED"), 10, 64); err == nil {
		seed = s
	}
	params := gopter.DefaultTestParametersWithSeed(seed)
	params.MinSuccessfulTests = runs
	props := gopter.NewProperties(params)
	props.Property(name, prop.ForAll(check, gen.Int64()))
	props.TestingRun(t)
}

type bound struct {
	node, queue, level int
	req                flotilla.Resources
}

// world is a generated set of clusters with running jobs and one gang.
type world struct {
	nodes  []*flotilla.Node
	queues int
	jobs   []bound // bound before the gang
	db     *binpack.DB
	g      *gang.Gang
	q      int
	levels []int
	label  string
}

func newWorld(seed int64) (*world, error) {
	rng := rand.New(rand.NewPCG(uint64(seed), 0x9a9))
	w := &world{queues: 1 + rng.IntN(3)}
	clusters := []string{"", "east", "west"}[:1+rng.IntN(3)]
	for i := range rng.IntN(13) {
		cpu := int64(rng.IntN(9)) * 4
		n := &flotilla.Node{Name: fmt.Sprint("n", i), Cluster: clusters[rng.IntN(len(clusters))],
			Total: flotilla.Resources{cpu * core, int64(rng.IntN(2*int(cpu)+1)) * 2 * gi}, Labels: map[string]string{}}
		if rng.IntN(5) > 0 {
			n.Labels["rack"] = []string{"r1", "r2", "r3"}[rng.IntN(3)]
		}
		if rng.IntN(3) > 0 {
			n.Labels["zone"] = []string{"a", "b"}[rng.IntN(2)]
		}
		if rng.IntN(6) == 0 {
			n.Taints = []flotilla.Taint{{Key: "dedicated", Value: "x", Effect: flotilla.TaintNoSchedule}}
		}
		n.Unschedulable = rng.IntN(8) == 0
		w.nodes = append(w.nodes, n)
	}
	db, err := binpack.New(binpack.Options{Schema: schemaCM, Levels: twoLevels, Queues: w.queues}, w.nodes)
	if err != nil {
		return nil, err
	}
	w.db = db
	for range rng.IntN(25) {
		req := flotilla.Resources{int64(1+rng.IntN(8)) * core, int64(rng.IntN(10)) * gi}
		q := &binpack.Query{Requests: req, Level: rng.IntN(2), Queue: rng.IntN(w.queues), OnlyNode: -1}
		if n, ok := db.Select(q); ok {
			db.Bind(n, q.Queue, q.Level, req)
			w.jobs = append(w.jobs, bound{n, q.Queue, q.Level, req})
		}
	}
	if rng.IntN(2) == 0 {
		db.Forget()
	}

	switch rng.IntN(10) {
	case 0:
		w.label = "absent"
	case 1, 2, 3, 4:
		w.label = "rack"
	}
	m := 1 + rng.IntN(6)
	store, err := queue.New(schemaCM, flotilla.DefaultPriorityClasses(), flotilla.ArmadaDefault)
	if err != nil {
		return nil, err
	}
	var acc gang.Accumulator
	same := rng.IntN(3) == 0 // identical members
	req := flotilla.Resources{int64(1+rng.IntN(12)) * core, int64(rng.IntN(24)) * gi}
	for i := range m {
		if !same {
			req = flotilla.Resources{int64(1+rng.IntN(12)) * core, int64(rng.IntN(24)) * gi}
		}
		j := &flotilla.Job{ID: fmt.Sprint("m", i), Queue: "A", Requests: req,
			Gang: flotilla.Gang{ID: "g", Cardinality: m, NodeUniformityLabel: w.label}}
		if rng.IntN(4) == 0 {
			j.NodeSelector = map[string]string{"zone": []string{"a", "b"}[rng.IntN(2)]}
		}
		if rng.IntN(4) == 0 {
			j.Tolerations = []flotilla.Toleration{{Key: "dedicated", Operator: flotilla.TolerationExists}}
		}
		if rng.IntN(2) == 0 {
			j.PriorityClass = flotilla.ArmadaPreemptible
		}
		e, err := store.NewEntry(j)
		if err != nil {
			return nil, err
		}
		if w.g, _, err = acc.Add(e); err != nil {
			return nil, err
		}
		w.levels = append(w.levels, rng.IntN(2))
	}
	w.q = rng.IntN(w.queues)
	return w, nil
}

// domainOf is the (cluster, value) domain of a node, ok false when the node
// has no value of the world's label.
func (w *world) domainOf(n int) (binpack.Restriction, bool) {
	nd := w.nodes[n]
	r := binpack.Restriction{Cluster: nd.Cluster, Label: w.label}
	if w.label == "" {
		return r, true
	}
	v, ok := nd.Labels[w.label]
	r.Value = v
	return r, ok
}

// oracle is one domain tried on its own: a DB over just its nodes, the
// running jobs rebound, the gang placed there by a Placer that sees one
// domain and so needs no restriction.
type oracle struct {
	r      binpack.Restriction
	placed int
	free   flotilla.Resources
	nodes  []int // per member, as indices of the full world
}

func (w *world) oracles() ([]oracle, error) {
	var doms []binpack.Restriction
	for n := range w.nodes {
		if r, ok := w.domainOf(n); ok && !slices.Contains(doms, r) {
			doms = append(doms, r)
		}
	}
	slices.SortFunc(doms, func(a, b binpack.Restriction) int {
		return cmp.Or(cmp.Compare(a.Cluster, b.Cluster), cmp.Compare(a.Value, b.Value))
	})
	var out []oracle
	for _, r := range doms {
		var sub []*flotilla.Node
		var full []int
		for n := range w.nodes {
			if d, ok := w.domainOf(n); ok && d == r {
				sub = append(sub, w.nodes[n])
				full = append(full, n)
			}
		}
		db, err := binpack.New(binpack.Options{Schema: schemaCM, Levels: twoLevels, Queues: w.queues}, sub)
		if err != nil {
			return nil, err
		}
		for _, j := range w.jobs {
			if i := slices.Index(full, j.node); i >= 0 {
				db.Bind(i, j.queue, j.level, j.req)
			}
		}
		o := oracle{r: r, free: make(flotilla.Resources, 2)}
		for i := range sub {
			if !sub[i].Unschedulable {
				for r, v := range db.Allocatable(i, 0) {
					o.free[r] += max(v, 0)
				}
			}
		}
		res, err := new(gang.Placer).Place(db, w.g, w.q, w.levels)
		if err != nil {
			return nil, err
		}
		o.placed = res.Why.PlacedBefore
		if res.Placed {
			o.placed = len(w.g.Members)
			for _, i := range res.Nodes {
				o.nodes = append(o.nodes, full[i])
			}
		}
		out = append(out, o)
	}
	return out, nil
}

func TestPropertyPlace(t *testing.T) {
	runProperty(t, "a gang is placed whole in the best domain, or not at all and without trace", 300, func(seed int64) string {
		fail := func(format string, args ...any) string {
			return fmt.Sprintf("seed %d: ", seed) + fmt.Sprintf(format, args...)
		}
		w, err := newWorld(seed)
		if err != nil {
			return fail("%v", err)
		}
		db, g, m := w.db, w.g, len(w.g.Members)
		before := stateOf(db)
		mark := db.Mark()
		var p gang.Placer
		res, err := p.Place(db, g, w.q, w.levels)
		if err != nil {
			return fail("Place: %v", err)
		}
		nodes := slices.Clone(res.Nodes)

		// Same world, same answer.
		w2, _ := newWorld(seed)
		res2, err := new(gang.Placer).Place(w2.db, w2.g, w2.q, w2.levels)
		if err != nil || res2.Placed != res.Placed || !slices.Equal(res2.Nodes, nodes) || res2.Domain != res.Domain || !reflect.DeepEqual(res2.Why, res.Why) {
			return fail("not deterministic: %+v then %+v (%v)", res, res2, err)
		}

		oracles, err := w.oracles()
		if err != nil {
			return fail("oracle: %v", err)
		}
		best := -1
		for i, o := range oracles {
			switch {
			case best < 0 || o.placed > oracles[best].placed:
				best = i
			case o.placed == m && o.placed == oracles[best].placed && db.CompareIndexed(o.free, oracles[best].free) < 0:
				best = i
			}
		}

		if !res.Placed {
			if d := before.diff(stateOf(db)); d != "" {
				return fail("a gang that was not placed changed the DB: %s", d)
			}
			if res.Nodes != nil {
				return fail("nodes %v without a placement", res.Nodes)
			}
			switch {
			case len(w.nodes) == 0:
				if res.Why.Cause != gang.NoNodes {
					return fail("no nodes, cause %v", res.Why.Cause)
				}
			case len(oracles) == 0:
				if res.Why.Cause != gang.NoUniformityLabel {
					return fail("label %q on no node, cause %v", w.label, res.Why.Cause)
				}
			default:
				why := res.Why
				if why.Cause != gang.MemberDoesNotFit || why.Member < 0 || why.Member >= m || why.Job != g.Members[why.Member].Job.ID ||
					why.Reason.Kind == binpack.Fits || why.Reason.Kind == binpack.InvalidQuery {
					return fail("explanation %+v", why)
				}
				if oracles[best].placed == m {
					return fail("domain %+v holds the gang on its own", oracles[best].r)
				}
				if res.Domain != oracles[best].r || why.PlacedBefore != oracles[best].placed || why.Domain != res.Domain {
					return fail("explained domain %+v after %d members; oracle %+v after %d", res.Domain, why.PlacedBefore,
						oracles[best].r, oracles[best].placed)
				}
			}
			// A node that could take every member at once means the gang fits.
			for n, nd := range w.nodes {
				if _, ok := w.domainOf(n); !ok || nd.Unschedulable {
					continue
				}
				if g.Requests.Fits(before.alloc[n*2]) && admitsAll(db, g, n) {
					return fail("node %d could hold the whole gang", n)
				}
			}
			return ""
		}

		if len(nodes) != m || res.Why.Cause != gang.Fits {
			return fail("placed with %d nodes for %d members, cause %v", len(nodes), m, res.Why.Cause)
		}
		if best < 0 || oracles[best].placed != m || res.Domain != oracles[best].r || !slices.Equal(nodes, oracles[best].nodes) {
			return fail("placed in %+v on %v; oracle says %+v", res.Domain, nodes, oracles[best])
		}
		for i, n := range nodes {
			r, ok := w.domainOf(n)
			if !ok || r != res.Domain {
				return fail("member %d on node %d outside domain %+v", i, n, res.Domain)
			}
			j := g.Members[i].Job
			if w.nodes[n].Unschedulable || !db.Admits(db.Constraints(j.NodeSelector, j.Tolerations), n) {
				return fail("member %d on node %d breaks its constraints or a cordon", i, n)
			}
		}
		// The DB is before plus exactly the members' binds.
		want := slices.Clone(before.alloc)
		for i, n := range nodes {
			for l := 0; l <= w.levels[i]; l++ {
				want[n*2+l] = want[n*2+l].Clone()
				want[n*2+l].Sub(g.Members[i].Job.Requests)
			}
		}
		for n := range w.nodes {
			for l := range 2 {
				if got := db.Allocatable(n, l); !got.Equal(want[n*2+l]) {
					return fail("node %d level %d: allocatable %v, want %v", n, l, got, want[n*2+l])
				}
			}
			if slices.Contains(nodes, n) && db.Allocatable(n, 0).AnyNegative() {
				return fail("node %d over-committed", n)
			}
			if slices.Contains(nodes, n) && !slices.Contains(db.Users(n), w.q) {
				return fail("node %d lacks the gang's queue among its users", n)
			}
		}
		if db.Pending() != before.pending+m {
			return fail("undo log %d, want %d", db.Pending(), before.pending+m)
		}
		db.Rollback(mark)
		if d := before.diff(stateOf(db)); d != "" {
			return fail("rolling back the placement: %s", d)
		}
		return ""
	})
}

// PlaceWithin with UnavoidedDomains is Place (at the same search level)
// on a DB that lacks the nodes of every cluster a member avoids: the same
// answer, the same nodes, the same explanation of a failure; with no
// domain left, AllAvoided. Either way a failure leaves no trace.
func TestPropertyPlaceWithinUnavoidedDomainsIsPlaceWithoutTheAvoidedClusters(t *testing.T) {
	runProperty(t, "PlaceWithin(UnavoidedDomains) == Place without the avoided clusters", 300, func(seed int64) string {
		fail := func(format string, args ...any) string {
			return fmt.Sprintf("seed %d: ", seed) + fmt.Sprintf(format, args...)
		}
		w, err := newWorld(seed)
		if err != nil {
			return fail("%v", err)
		}
		rng := rand.New(rand.NewPCG(uint64(seed), 0xa701d))
		var avoid []string
		for _, e := range w.g.Members {
			if rng.IntN(2) == 0 {
				e.Job.AvoidClusters = []string{[]string{"", "east", "west", "nowhere"}[rng.IntN(4)]}
				avoid = append(avoid, e.Job.AvoidClusters...)
			}
		}
		// The oracle's DB: the other clusters' nodes, in the same order,
		// with their running jobs.
		var sub []*flotilla.Node
		var full []int
		for n, nd := range w.nodes {
			if !slices.Contains(avoid, nd.Cluster) {
				sub = append(sub, nd)
				full = append(full, n)
			}
		}
		odb, err := binpack.New(binpack.Options{Schema: schemaCM, Levels: twoLevels, Queues: w.queues}, sub)
		if err != nil {
			return fail("%v", err)
		}
		for _, j := range w.jobs {
			if i := slices.Index(full, j.node); i >= 0 {
				odb.Bind(i, j.queue, j.level, j.req)
			}
		}
		var p gang.Placer
		for search := range 2 {
			levels := slices.Clone(w.levels)
			for i := range levels {
				levels[i] = max(levels[i], search)
			}
			before := stateOf(w.db)
			mark := w.db.Mark()
			got, err := p.PlaceWithin(w.db, w.g, w.q, levels, search, gang.UnavoidedDomains)
			if err != nil {
				return fail("PlaceWithin: %v", err)
			}
			gotNodes := slices.Clone(got.Nodes)
			if !got.Placed {
				if d := before.diff(stateOf(w.db)); d != "" {
					return fail("search %d: a gang that was not placed changed the DB: %s", search, d)
				}
			}
			w.db.Rollback(mark)
			omark := odb.Mark()
			want, err := new(gang.Placer).PlaceAt(odb, w.g, w.q, levels, search)
			if err != nil {
				return fail("oracle: %v", err)
			}
			var wantNodes []int
			for _, n := range want.Nodes {
				wantNodes = append(wantNodes, full[n])
			}
			odb.Rollback(omark)
			if got.Placed != want.Placed || !slices.Equal(gotNodes, wantNodes) || (got.Placed && got.Domain != want.Domain) {
				return fail("search %d, avoiding %q: placed %v on %v in %+v; oracle %v on %v in %+v",
					search, avoid, got.Placed, gotNodes, got.Domain, want.Placed, wantNodes, want.Domain)
			}
			if got.Placed {
				continue
			}
			switch want.Why.Cause {
			case gang.NoNodes, gang.NoUniformityLabel:
				// No domain left: every one avoided, or none at all (the
				// whole DB may have nodes, none with the label).
				if c := got.Why.Cause; c != gang.AllAvoided && c != gang.NoUniformityLabel && c != want.Why.Cause {
					return fail("search %d: cause %v, oracle %v", search, got.Why.Cause, want.Why.Cause)
				}
			default:
				g, o := got.Why, want.Why
				if g.Cause != o.Cause || g.Member != o.Member || g.PlacedBefore != o.PlacedBefore || g.Domain != o.Domain || g.NeverFits != o.NeverFits {
					return fail("search %d: explanation %+v; oracle %+v", search, g, o)
				}
			}
		}
		return ""
	})
}

func admitsAll(db *binpack.DB, g *gang.Gang, n int) bool {
	for _, e := range g.Members {
		if !db.Admits(db.Constraints(e.Job.NodeSelector, e.Job.Tolerations), n) {
			return false
		}
	}
	return true
}

func TestPropertyAccumulator(t *testing.T) {
	runProperty(t, "a gang is handed out complete exactly once, when its last member arrives", 200, func(seed int64) string {
		rng := rand.New(rand.NewPCG(uint64(seed), 0xacc))
		store, _ := queue.New(schemaCM, flotilla.DefaultPriorityClasses(), flotilla.ArmadaDefault)
		type gspec struct {
			id    string
			card  int
			jobs  []*flotilla.Job
			drop  bool // one member never arrives
			sum   flotilla.Resources
			class int32
		}
		var gangs []*gspec
		var stream []*queue.Entry
		for i := range rng.IntN(8) {
			gs := &gspec{id: fmt.Sprint("g", i), card: 1 + rng.IntN(5), drop: rng.IntN(4) == 0, sum: make(flotilla.Resources, 2), class: 1 << 30}
			for k := range gs.card {
				j := &flotilla.Job{ID: fmt.Sprint(gs.id, "-", k), Queue: "A", Requests: cores(int64(1 + rng.IntN(4))),
					Gang: flotilla.Gang{ID: gs.id, Cardinality: gs.card}}
				if rng.IntN(3) == 0 {
					j.PriorityClass = flotilla.ArmadaPreemptible
				}
				if gs.drop && k == gs.card-1 {
					continue
				}
				e, err := store.NewEntry(j)
				if err != nil {
					return err.Error()
				}
				gs.jobs = append(gs.jobs, j)
				gs.sum.Add(j.Requests)
				gs.class = min(gs.class, e.ClassPriority)
				stream = append(stream, e)
			}
			gangs = append(gangs, gs)
		}
		for i := range rng.IntN(4) {
			e, _ := store.NewEntry(&flotilla.Job{ID: fmt.Sprint("lone", i), Queue: "A", Requests: cores(1)})
			stream = append(stream, e)
		}
		rng.Shuffle(len(stream), func(i, j int) { stream[i], stream[j] = stream[j], stream[i] })

		var acc gang.Accumulator
		for round := range 2 { // the second round runs on recycled gangs
			seen := map[string]int{}
			var firstSeen []string
			for _, e := range stream {
				g, complete, err := acc.Add(e)
				if err != nil {
					return fmt.Sprintf("seed %d: %v", seed, err)
				}
				id := e.Job.Gang.ID
				if id == "" {
					if !complete || len(g.Members) != 1 || g.Members[0] != e || !g.Requests.Equal(e.Job.Requests) {
						return fmt.Sprintf("seed %d: lone job %s not a complete gang of one", seed, e.Job.ID)
					}
					continue
				}
				if seen[id] == 0 {
					firstSeen = append(firstSeen, id)
				}
				seen[id]++
				gs := gangs[slices.IndexFunc(gangs, func(s *gspec) bool { return s.id == id })]
				if complete != (seen[id] == gs.card) {
					return fmt.Sprintf("seed %d round %d: gang %s complete=%v after %d of %d", seed, round, id, complete, seen[id], gs.card)
				}
				if len(g.Members) != seen[id] || g.Members[len(g.Members)-1] != e {
					return fmt.Sprintf("seed %d: gang %s members %d, want %d", seed, id, len(g.Members), seen[id])
				}
				if complete && (!g.Requests.Equal(gs.sum) || g.ClassPriority != gs.class || g.Queue != "A") {
					return fmt.Sprintf("seed %d: gang %s sum %v class %d, want %v %d", seed, id, g.Requests, g.ClassPriority, gs.sum, gs.class)
				}
			}
			var wantPending []string
			for _, id := range firstSeen {
				gs := gangs[slices.IndexFunc(gangs, func(s *gspec) bool { return s.id == id })]
				if gs.drop {
					wantPending = append(wantPending, id)
				}
			}
			var gotPending []string
			for _, g := range acc.Pending() {
				gotPending = append(gotPending, g.ID)
			}
			if !slices.Equal(gotPending, wantPending) {
				return fmt.Sprintf("seed %d: pending %v, want %v", seed, gotPending, wantPending)
			}
			acc.Reset()
		}
		return ""
	})
}

func TestPropertyEvictionClosure(t *testing.T) {
	runProperty(t, "eviction closure evicts whole gangs and nothing else", 200, func(seed int64) string {
		rng := rand.New(rand.NewPCG(uint64(seed), 0xe71c))
		var running []*flotilla.Job
		for i := range rng.IntN(30) {
			id := ""
			if rng.IntN(3) > 0 {
				id = fmt.Sprint("g", rng.IntN(6))
			}
			running = append(running, &flotilla.Job{ID: fmt.Sprint("j", i), Gang: flotilla.Gang{ID: id}})
		}
		evicted := make([]bool, len(running))
		for i := range evicted {
			evicted[i] = rng.IntN(5) == 0
		}
		want := slices.Clone(evicted)
		for i, j := range running {
			for k, o := range running {
				if evicted[k] && j.Gang.ID != "" && o.Gang.ID == j.Gang.ID {
					want[i] = true
				}
			}
		}
		newly := 0
		for i := range want {
			if want[i] && !evicted[i] {
				newly++
			}
		}
		added, err := gang.EvictionClosure(running, evicted)
		if err != nil || added != newly || !slices.Equal(evicted, want) {
			return fmt.Sprintf("seed %d: %v added %d (want %d), %v want %v", seed, err, added, newly, evicted, want)
		}
		return ""
	})
}

// With DeferExplanations, a placement is the same, and a failure's
// explanation is the eager one without its Reason; ExplainLast then gives
// the eager explanation exactly and leaves the DB as it was. With nothing
// to explain (placed, or another cause) ExplainLast says so.
func TestPropertyDeferredExplanationIsTheEagerOneOnRequest(t *testing.T) {
	runProperty(t, "deferred explanation == eager explanation, on request", 300, func(seed int64) string {
		fail := func(format string, args ...any) string {
			return fmt.Sprintf("seed %d: ", seed) + fmt.Sprintf(format, args...)
		}
		w, err := newWorld(seed)
		if err != nil {
			return fail("%v", err)
		}
		eager, err := new(gang.Placer).Place(w.db, w.g, w.q, w.levels)
		if err != nil {
			return fail("Place: %v", err)
		}
		w2, _ := newWorld(seed)
		var p gang.Placer
		p.DeferExplanations(true)
		lazy, err := p.Place(w2.db, w2.g, w2.q, w2.levels)
		if err != nil {
			return fail("deferred Place: %v", err)
		}
		if lazy.Placed != eager.Placed || !slices.Equal(lazy.Nodes, eager.Nodes) || lazy.Domain != eager.Domain {
			return fail("deferred placement %+v, eager %+v", lazy, eager)
		}
		before := stateOf(w2.db)
		why, ok := p.ExplainLast(w2.db)
		if d := before.diff(stateOf(w2.db)); d != "" {
			return fail("ExplainLast changed the DB: %s", d)
		}
		if eager.Placed || eager.Why.Cause != gang.MemberDoesNotFit {
			if ok || !reflect.DeepEqual(lazy.Why, eager.Why) {
				return fail("nothing to explain, yet ExplainLast %v, deferred why %+v, eager %+v", ok, lazy.Why, eager.Why)
			}
			return ""
		}
		noReason := eager.Why
		noReason.Reason = binpack.Reason{}
		if !reflect.DeepEqual(lazy.Why, noReason) {
			return fail("deferred why %+v, want the eager %+v without its reason", lazy.Why, eager.Why)
		}
		if !ok || !reflect.DeepEqual(why, eager.Why) {
			return fail("ExplainLast %+v (%v), eager %+v", why, ok, eager.Why)
		}
		return ""
	})
}
