package gang

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/binpack"
	"github.com/flotilla-sched/flotilla/queue"
)

// This file places a gang in one domain: a cluster, or one value of the
// gang's node-uniformity label within a cluster (Place, PlaceAt,
// PlaceWithin), and checks Place's input. topology.go places a gang that
// asks for a topology, avoid.go confines a placement to the domains no
// member avoids, and explain.go says why a gang was not placed.

// Placer places complete gangs into a binpack.DB, all members or none. It
// keeps scratch memory and, per DB, the gang domains (clusters, and
// clusters × values of each node-uniformity label seen), so that after
// warm-up Place allocates nothing but the explanation of a gang that does
// not fit. It holds on to the last DB it was given until it is given
// another one.
//
// The zero Placer is ready to use. It is not safe for concurrent use.
type Placer struct {
	db      *binpack.DB
	nlev    int
	nres    int
	domains map[string][]domain // by uniformity label; "" groups by cluster only

	// Topologies (SetTopologies) and, per DB, their domains by name; the
	// rest is scratch of one topology placement (topology.go).
	topos   []flotilla.Topology
	trees   map[string]*topoTree
	lfree   [][]int64 // per level: free capacity of each domain, R entries each
	lfreeOK []bool    // per level: lfree computed for this placement
	tcand   []int32   // domains of the level being searched that hold the sum
	tfree   []int64   // that level's free capacity, for cmpTopo
	cmpTopo func(a, b int32) int
	kids    []int32 // a domain's children in packing order
	kfree   []int64 // their free capacity, R entries each
	rest    []int32 // a domain's nodes outside every child

	order []int                  // member indices in placement order
	cons  []binpack.ConstraintID // per member: its node selector and tolerations
	cur   []int                  // per member: its node in the current attempt
	query binpack.Query
	// search is the level members are Selected at: 0 (free capacity) for
	// Place, the caller's level for PlaceAt.
	search int

	sum    flotilla.Resources // the members' requests, summed
	total  flotilla.Resources // a domain's uncordoned nodes' totals, summed
	dfree  []int64            // per domain: free capacity, R entries each
	placed []int              // per domain: members placed, -1 if not tried
	cand   []int              // domains that may hold the gang, tightest first
	avoid  []string           // clusters the gang's members avoid, sorted
	// avoidNodes are the nodes the gang's members avoid, sorted.
	avoidNodes []string
	sub        []domain // the domains a placement is confined to

	// g and the method values sort without allocating closures.
	g          *Gang
	cmpMembers func(a, b int) int
	cmpDomains func(a, b int) int

	// Deferred explanations (DeferExplanations): last is the last
	// failure's domain, gang and levels, for ExplainLast.
	deferred bool
	last     lastFailure
}

// domain is one place a gang may land: a cluster, one value of the
// uniformity label within a cluster, or a domain of a topology level.
type domain struct {
	r     binpack.Restriction
	nodes []int32 // ascending
	all   bool    // holds every node of the DB: no restriction needed
	// among: a topology domain, searched by a scan of its nodes
	// (binpack.SelectAmong) rather than a restricted constraint. path is
	// its values from the outermost level down, "/"-joined; kids are its
	// children's indices in the next level's domains, [kidLo, kidHi).
	among        bool
	path         string
	kidLo, kidHi int32
}

// Placement is the answer of Place.
type Placement struct {
	// Placed is true when every member is bound.
	Placed bool
	// Nodes[i] is the node index of g.Members[i] when Placed, else nil. It
	// is a view into the Placer, valid until its next Place.
	Nodes []int
	// Domain is where the gang went (Placed) or where it came closest
	// (Why.Cause == MemberDoesNotFit): a cluster, and the value of the
	// uniformity label when the gang has one. For a topology domain, Label
	// and Value are its innermost level's, and Level and Path say which.
	Domain binpack.Restriction
	// Level is the label key of the topology level of Domain, and Path the
	// domain's values from the outermost level down ("b1/r7"); both empty
	// for a domain that is not a topology's (a gang without a topology, or
	// a preferred topology that fell back to a placement without one).
	Level, Path string
	// Why says why the gang was not placed; its Cause is Fits when Placed.
	Why Explanation
}

// Place tries to bind every member of the complete gang g, of binpack queue
// q, in db: all of them in one domain, or none. levels[i] is the level
// index g.Members[i] is bound at (its priority, or the top level for a
// non-preemptible class); every member is looked for at level 0, on
// genuinely free capacity (urgency preemption for gangs is not done here).
//
// A domain is a cluster (Node.Cluster) or, for a gang with a
// node-uniformity label, one value of that label within one cluster (nodes
// without the label are in no domain). An attempt in a domain binds the
// members one by one, largest request first (by db.CompareIndexed, ties in
// member order), each on the node db.Select picks inside the domain, and
// stops at the first member that does not fit.
//
// The gang goes to the best domain: the most members placed; then the
// least disruption (always equal for now: nothing is preempted); then the
// tightest fit, the least free capacity left in the domain (level-0
// allocatable summed over its uncordoned nodes, negative entries counted
// as 0, compared by db.CompareIndexed); then the first in ascending
// (cluster, value) order. Place finds it without trying every domain: a
// domain whose free capacity cannot hold the members' summed requests
// cannot hold the gang, and every domain that holds it loses the same
// requests, so it tries the others tightest first and keeps the first
// that holds the gang. Only when none does are the rest tried, to explain
// the one that came closest.
//
// On success the binds stay in db's undo log: the caller commits them with
// db.Forget, or undoes them with db.Rollback to a Mark taken before Place.
// On failure db is exactly as before (every node's allocatable at every
// level, its users, its answers to Select, and the undo log's length), and
// Why says which member fell short where, and on what. Not fitting is never
// an error: the error is for bad input (nil db or gang, an incomplete gang,
// q, levels or a member's requests out of the db's range), reported as
// joined *flotilla.FieldError values, with db untouched.
//
// Cost, for M members, N nodes and R resources: one attempt, O(M·(log N +
// L·R)), in a single domain; with several domains, O(N·R) to rank them plus
// one attempt per domain tried; on failure, an attempt per domain and one
// Explain (O(N·R)). After warm-up (the first gang with each uniformity
// label and each distinct member constraint per DB) it allocates nothing,
// except, on failure, the explanation's node counts, and whether the gang
// never fits costs O(M·N·R) more.
func (p *Placer) Place(db *binpack.DB, g *Gang, q int, levels []int) (Placement, error) {
	return p.PlaceAt(db, g, q, levels, 0)
}

// PlaceAt is Place with every member Selected at level search instead of
// level 0: capacity held by jobs bound below search counts as free. A
// scheduler uses it for a gang that found no free capacity, with search
// the level of the gang's lowest class, and then preempts on each node it
// used the jobs bound below search that no longer fit (removing all of them
// always suffices, since every member was placed counting only jobs at
// search or above). Domains are ranked by their allocatable at search.
func (p *Placer) PlaceAt(db *binpack.DB, g *Gang, q int, levels []int, search int) (Placement, error) {
	return p.PlaceWithin(db, g, q, levels, search, AllDomains)
}

// PlaceWithin is PlaceAt confined to the domains within chooses. A
// scheduler honouring Job.AvoidClusters places a gang for which Avoids is
// true with UnavoidedDomains first (every search it would make: free
// capacity, then the others) and only when that fails with AllDomains.
// With UnavoidedDomains and no such domain, the gang is not placed and
// Why.Cause is AllAvoided; otherwise the explanation is about the
// unavoided domains only, NeverFits included.
func (p *Placer) PlaceWithin(db *binpack.DB, g *Gang, q int, levels []int, search int, within Domains) (Placement, error) {
	if db == nil {
		return Placement{}, flotilla.Errorf("db", "", flotilla.ErrRequired, "nil node database")
	}
	p.use(db)
	p.last.ok = false
	if err := p.check(g, q, levels); err != nil {
		return Placement{}, err
	}
	if search < 0 || search >= p.nlev {
		return Placement{}, flotilla.Errorf("search", fmt.Sprint(search), flotilla.ErrOutOfRange, "the db has %d levels", p.nlev)
	}
	for i, l := range levels {
		if l < search {
			// A member bound below the search level would not count against
			// the next member's search: the two could share capacity.
			return Placement{}, flotilla.Errorf(fmt.Sprintf("levels[%d]", i), fmt.Sprint(l), flotilla.ErrOutOfRange, "below the search level %d", search)
		}
	}
	p.search = search
	m := len(g.Members)
	p.grow(m)
	avoidNodes := within == UnavoidedDomains && p.nodeSet(g)
	for i, e := range g.Members {
		p.order[i] = i
		p.cons[i] = db.JobConstraints(e.Job)
		if avoidNodes {
			p.cons[i] = db.AvoidNodes(p.cons[i], p.avoidNodes)
		}
	}
	p.g = g
	if !slices.IsSortedFunc(p.order[:m], p.cmpMembers) {
		slices.SortFunc(p.order[:m], p.cmpMembers)
	}
	p.g = nil

	why := Explanation{Gang: g.ID, Label: g.UniformityLabel, Member: -1, Members: m, Resource: -1}
	if !g.Topology.IsZero() {
		if pl, done, err := p.placeTopology(g, q, levels, within, why); done || err != nil {
			return pl, err
		}
		// A preferred topology that no domain holds: placed as without one.
	}
	doms := p.domainsFor(g.UniformityLabel)
	if len(doms) == 0 {
		why.Cause, why.NeverFits = NoUniformityLabel, true
		if db.NodeCount() == 0 {
			why.Cause = NoNodes
		}
		return Placement{Why: why}, nil
	}
	if within == UnavoidedDomains {
		if doms = p.unavoided(doms, g); len(doms) == 0 {
			why.Cause = AllAvoided
			return Placement{Why: why}, nil
		}
	}

	mark := db.Mark()
	if len(doms) == 1 {
		dom := &doms[0]
		if placed := p.attempt(g, dom, q, levels, m); placed < m {
			db.Rollback(mark)
			return p.explain(g, doms, dom, q, levels, mark, why, placed), nil
		}
		return Placement{Placed: true, Nodes: p.cur[:m], Domain: dom.r, Why: why}, nil
	}

	// Several domains. Only one with enough free capacity in total can
	// hold the gang; the winner among those that do is the tightest (every
	// one loses the same requests, so the least free before is the least
	// free after), so try them tightest first and keep the first that
	// holds the gang.
	p.rank(doms, g)
	for _, d := range p.cand {
		dom := &doms[d]
		placed := p.attempt(g, dom, q, levels, m)
		if placed == m {
			return Placement{Placed: true, Nodes: p.cur[:m], Domain: dom.r, Why: why}, nil
		}
		db.Rollback(mark)
		p.placed[d] = placed
	}
	// None holds the gang: explain the one with the most members placed,
	// the first in (cluster, value) order among equals.
	best := -1
	for d := range doms {
		if p.placed[d] < 0 {
			placed := p.attempt(g, &doms[d], q, levels, m)
			if placed == m { // cannot happen: its free capacity is too small
				return Placement{Placed: true, Nodes: p.cur[:m], Domain: doms[d].r, Why: why}, nil
			}
			db.Rollback(mark)
			p.placed[d] = placed
		}
		if best < 0 || p.placed[d] > p.placed[best] {
			best = d
		}
	}
	return p.explain(g, doms, &doms[best], q, levels, mark, why, p.placed[best]), nil
}

// rank computes each domain's free capacity (level-0 allocatable over its
// uncordoned nodes, negative entries counted as 0) and sets p.cand to the
// domains whose free capacity holds the sum of g's members, tightest
// first (by db.CompareIndexed, then domain order), and p.placed to -1.
func (p *Placer) rank(doms []domain, g *Gang) {
	db, R := p.db, p.nres
	clear(p.sum)
	for _, e := range g.Members {
		p.sum.AddSaturating(e.Job.Requests)
	}
	if cap(p.dfree) < len(doms)*R {
		p.dfree = make([]int64, len(doms)*R)
	}
	if cap(p.placed) < len(doms) {
		p.placed = make([]int, len(doms))
	}
	p.dfree, p.placed, p.cand = p.dfree[:len(doms)*R], p.placed[:len(doms)], p.cand[:0]
	for d := range doms {
		free := flotilla.Resources(p.dfree[d*R : (d+1)*R])
		clear(free)
		for _, n := range doms[d].nodes {
			if db.Cordoned(int(n)) {
				continue
			}
			for r, v := range db.Allocatable(int(n), p.search) {
				free[r] = satAdd(free[r], max(v, 0))
			}
		}
		p.placed[d] = -1
		if p.sum.Fits(free) {
			p.cand = append(p.cand, d)
		}
	}
	slices.SortFunc(p.cand, p.cmpDomains)
}

// compareDomains orders domain indices by free capacity, then index.
func (p *Placer) compareDomains(a, b int) int {
	R := p.nres
	if c := p.db.CompareIndexed(p.dfree[a*R:(a+1)*R], p.dfree[b*R:(b+1)*R]); c != 0 {
		return c
	}
	return cmp.Compare(a, b)
}

// attempt binds members in placement order inside dom until one does not
// fit, recording nodes in p.cur, and returns how many it bound.
func (p *Placer) attempt(g *Gang, dom *domain, q int, levels []int, m int) int {
	db := p.db
	lastBase, lastRestricted := binpack.ConstraintID(-1), binpack.ConstraintID(-1)
	for k, i := range p.order[:m] {
		c := p.cons[i]
		if dom.among {
			req := g.Members[i].Job.Requests
			p.query = binpack.Query{Requests: req, Level: p.search, Queue: q, Constraint: c, OnlyNode: -1}
			n, ok := db.SelectAmong(&p.query, dom.nodes)
			if !ok {
				return k
			}
			db.Bind(n, q, levels[i], req)
			p.cur[i] = n
			continue
		}
		if !dom.all {
			if c != lastBase {
				lastBase, lastRestricted = c, db.Restrict(c, dom.r)
			}
			c = lastRestricted
		}
		req := g.Members[i].Job.Requests
		p.query = binpack.Query{Requests: req, Level: p.search, Queue: q, Constraint: c, OnlyNode: -1}
		n, ok := db.Select(&p.query)
		if !ok {
			return k
		}
		db.Bind(n, q, levels[i], req)
		p.cur[i] = n
	}
	return m
}

// use switches the Placer to db, dropping what it knew of another DB.
func (p *Placer) use(db *binpack.DB) {
	if p.db == db {
		return
	}
	p.db = db
	p.nlev = len(db.Levels())
	p.nres = 0
	if s := db.Schema(); s != nil {
		p.nres = s.Len()
	}
	clear(p.domains)
	if p.domains == nil {
		p.domains = make(map[string][]domain)
	}
	clear(p.trees)
	p.sum = make(flotilla.Resources, p.nres)
	p.total = make(flotilla.Resources, p.nres)
	if p.cmpMembers == nil {
		p.cmpMembers, p.cmpDomains, p.cmpTopo = p.compareMembers, p.compareDomains, p.compareTopoDomains
	}
}

// compareMembers orders member indices of p.g largest request first, ties
// by index.
func (p *Placer) compareMembers(a, b int) int {
	if c := p.db.CompareIndexed(p.g.Members[b].Job.Requests, p.g.Members[a].Job.Requests); c != 0 {
		return c
	}
	return cmp.Compare(a, b)
}

func (p *Placer) grow(m int) {
	if cap(p.order) < m {
		p.order = make([]int, m)
		p.cons = make([]binpack.ConstraintID, m)
		p.cur = make([]int, m)
	}
	p.order, p.cons, p.cur = p.order[:m], p.cons[:m], p.cur[:m]
}

// domainsFor returns the domains of a uniformity label ("" for none: one
// per cluster) in ascending (cluster, value) order, building them once per
// DB.
func (p *Placer) domainsFor(label string) []domain {
	if d, ok := p.domains[label]; ok {
		return d
	}
	type key struct{ cluster, value string }
	at := make(map[key]int)
	var doms []domain
	for i := 0; i < p.db.NodeCount(); i++ {
		n := p.db.Node(i)
		k := key{cluster: n.Cluster}
		if label != "" {
			v, ok := n.Labels[label]
			if !ok {
				continue
			}
			k.value = v
		}
		d, ok := at[k]
		if !ok {
			d = len(doms)
			at[k] = d
			doms = append(doms, domain{r: binpack.Restriction{Cluster: k.cluster, Label: label, Value: k.value}})
		}
		doms[d].nodes = append(doms[d].nodes, int32(i))
	}
	slices.SortFunc(doms, func(a, b domain) int {
		if c := cmp.Compare(a.r.Cluster, b.r.Cluster); c != 0 {
			return c
		}
		return cmp.Compare(a.r.Value, b.r.Value)
	})
	for d := range doms {
		doms[d].all = len(doms[d].nodes) == p.db.NodeCount()
	}
	p.domains[label] = doms
	return doms
}

// check validates Place's input against the DB.
func (p *Placer) check(g *Gang, q int, levels []int) error {
	if g == nil {
		return flotilla.Errorf("gang", "", flotilla.ErrRequired, "nil gang")
	}
	var errs []error
	if len(g.Members) == 0 {
		errs = append(errs, flotilla.Errorf(field(g.ID, "members"), "0", flotilla.ErrRequired, "a gang has at least 1 member"))
	} else if !g.Complete() {
		errs = append(errs, flotilla.Errorf(field(g.ID, "members"), strconv.Itoa(len(g.Members)), flotilla.ErrInconsistent,
			"the gang is incomplete: cardinality %d", g.Cardinality))
	}
	if q < 0 || q >= p.db.Queues() {
		errs = append(errs, flotilla.Errorf("queue", strconv.Itoa(q), flotilla.ErrOutOfRange, "the db has %d queues", p.db.Queues()))
	}
	if len(levels) != len(g.Members) {
		errs = append(errs, flotilla.Errorf("levels", strconv.Itoa(len(levels)), flotilla.ErrInconsistent,
			"one level per member of gang %q: %d members", g.ID, len(g.Members)))
	}
	for i, l := range levels {
		if l < 0 || l >= p.nlev {
			errs = append(errs, flotilla.Errorf(fmt.Sprintf("levels[%d]", i), strconv.Itoa(l), flotilla.ErrOutOfRange,
				"the db has %d levels", p.nlev))
		}
	}
	for i, e := range g.Members {
		if err := p.checkMember(g.ID, i, e); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (p *Placer) checkMember(id string, i int, e *queue.Entry) error {
	f := func(sub string) string { return fmt.Sprintf("%s[%d]%s", field(id, "members"), i, sub) }
	switch {
	case e == nil:
		return flotilla.Errorf(f(""), "", flotilla.ErrRequired, "nil entry")
	case e.Job == nil:
		return flotilla.Errorf(f(".job"), "", flotilla.ErrRequired, "nil job")
	case len(e.Job.Requests) != p.nres:
		return flotilla.Errorf(f(".requests"), strconv.Itoa(len(e.Job.Requests)), flotilla.ErrInconsistent,
			"job %q has %d resources, the db's schema %d", e.Job.ID, len(e.Job.Requests), p.nres)
	}
	for r, v := range e.Job.Requests {
		if v < 0 {
			return flotilla.Errorf(f(".requests"), p.quantity(r, v), flotilla.ErrNegative, "job %q, resource %d", e.Job.ID, r)
		}
	}
	return nil
}

// quantity renders v, a value of resource r, in the unit of the db's schema.
func (p *Placer) quantity(r int, v int64) string {
	if s := p.db.Schema(); s != nil && r < s.Len() {
		return s.Quantity(r, v)
	}
	return strconv.FormatInt(v, 10)
}

// satAdd is a + b for non-negative b, clamped at math.MaxInt64. A DB does
// not bound the sum of its nodes' capacity; the scheduler does (its cluster
// total must fit an int64, which 100,000 nodes of 4 TiB in bytes do by a
// factor of 20), so there the clamp never applies.
func satAdd(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}
