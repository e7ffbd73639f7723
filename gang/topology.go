package gang

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/binpack"
)

// This file places gangs that ask for a topology (flotilla.GangTopology):
// all members in one domain of a level of a hierarchy of node labels.

// SetTopologies gives the Placer the configured topologies that gangs name
// (scheduler.Config.Topologies). The Placer keeps ts (do not modify it
// afterwards) and forgets the domains it built from other topologies. A
// call with equal topologies keeps them. Without topologies, a gang that
// asks for one is bad input to Place.
func (p *Placer) SetTopologies(ts []flotilla.Topology) {
	if slices.EqualFunc(p.topos, ts, func(a, b flotilla.Topology) bool {
		return a.Name == b.Name && slices.Equal(a.Levels, b.Levels)
	}) {
		return
	}
	p.topos = ts
	clear(p.trees)
}

// topoTree is a topology's domains in one DB: per level, the domains in
// ascending (cluster, path) order, so that a domain's children at the next
// level are contiguous; and per level, each node's domain (-1: none).
type topoTree struct {
	levels  []string
	doms    [][]domain
	nodeDom [][]int32
	// maxTotal, per level, is per resource the largest total capacity of
	// a domain (its nodes' totals summed): a gang whose summed requests
	// exceed it in some resource fits no domain of the level, which is
	// then skipped without computing its domains' free capacity.
	maxTotal [][]int64
	// exact: no domain's total saturates an int64, so free capacity
	// (never above the total) sums without overflow checks.
	exact bool
}

// tree returns the domains of topology t in the Placer's DB, building them
// once per DB: O(N·L) map operations for N nodes and L levels.
func (p *Placer) tree(t *flotilla.Topology) *topoTree {
	if tr, ok := p.trees[t.Name]; ok {
		return tr
	}
	if p.trees == nil {
		p.trees = make(map[string]*topoTree)
	}
	db, L := p.db, len(t.Levels)
	N := db.NodeCount()
	type key struct {
		parent  int32
		cluster string
		value   string
	}
	tr := &topoTree{levels: t.Levels, doms: make([][]domain, L), nodeDom: make([][]int32, L)}
	values := make([][][]string, L) // per level, per domain: its path
	at := make(map[key]int32)
	for k := range tr.nodeDom {
		tr.nodeDom[k] = make([]int32, N)
		for i := range tr.nodeDom[k] {
			tr.nodeDom[k][i] = -1
		}
	}
	for i := range N {
		n := db.Node(i)
		parent := int32(-1)
		for k, label := range t.Levels {
			v, ok := n.Labels[label]
			if !ok {
				break
			}
			kk := key{parent: parent, value: v}
			if k == 0 {
				kk.cluster = n.Cluster
			}
			d, ok := at[kk]
			if !ok {
				d = int32(len(tr.doms[k]))
				at[kk] = d
				var path []string
				if parent >= 0 {
					path = slices.Clone(values[k-1][parent])
				}
				values[k] = append(values[k], append(path, v))
				tr.doms[k] = append(tr.doms[k], domain{r: binpack.Restriction{Cluster: n.Cluster, Label: label, Value: v}, among: true})
			}
			tr.doms[k][d].nodes = append(tr.doms[k][d].nodes, int32(i))
			tr.nodeDom[k][i] = d
			parent = d
		}
	}
	// Sort each level by (cluster, path) and renumber; a parent's children
	// are then contiguous at the next level.
	for k := range L {
		doms, vals := tr.doms[k], values[k]
		perm := make([]int32, len(doms))
		for d := range perm {
			perm[d] = int32(d)
		}
		slices.SortFunc(perm, func(a, b int32) int {
			return cmp.Or(cmp.Compare(doms[a].r.Cluster, doms[b].r.Cluster), slices.Compare(vals[a], vals[b]))
		})
		newIdx := make([]int32, len(doms))
		sorted := make([]domain, len(doms))
		for to, from := range perm {
			newIdx[from] = int32(to)
			sorted[to] = doms[from]
			sorted[to].path = strings.Join(vals[from], "/")
			sorted[to].kidLo, sorted[to].kidHi = -1, -1
		}
		tr.doms[k] = sorted
		for i, d := range tr.nodeDom[k] {
			if d >= 0 {
				tr.nodeDom[k][i] = newIdx[d]
			}
		}
	}
	for k := 1; k < L; k++ {
		for c := range tr.doms[k] {
			par := &tr.doms[k-1][tr.nodeDom[k-1][tr.doms[k][c].nodes[0]]]
			if par.kidLo < 0 {
				par.kidLo = int32(c)
			}
			par.kidHi = int32(c) + 1
		}
	}
	R := p.nres
	tr.exact = true
	tr.maxTotal = make([][]int64, L)
	for k := range L {
		tr.maxTotal[k] = make([]int64, R)
		sum := make([]int64, R)
		for d := range tr.doms[k] {
			clear(sum)
			for _, n := range tr.doms[k][d].nodes {
				for r, v := range db.Node(int(n)).Total {
					sum[r] = satAdd(sum[r], max(v, 0))
				}
			}
			for r := range R {
				tr.maxTotal[k][r] = max(tr.maxTotal[k][r], sum[r])
				tr.exact = tr.exact && sum[r] < math.MaxInt64
			}
		}
	}
	p.trees[t.Name] = tr
	return tr
}

// compareTopoDomains orders domain indices of the level being searched by
// their free capacity (p.tfree, compared as db.CompareIndexed does), then
// index (path order).
func (p *Placer) compareTopoDomains(a, b int32) int {
	R := p.nres
	return cmp.Or(p.db.CompareIndexed(p.tfree[int(a)*R:int(a+1)*R], p.tfree[int(b)*R:int(b+1)*R]), cmp.Compare(a, b))
}

// levelFree returns the free capacity (allocatable at the search level
// over uncordoned nodes, negative entries counted as 0) of every domain of
// level k, R entries each, computed once per placement: O(N·R).
func (p *Placer) levelFree(tr *topoTree, k int) []int64 {
	R := p.nres
	need := len(tr.doms[k]) * R
	if cap(p.lfree[k]) < need {
		p.lfree[k] = make([]int64, need)
	}
	free := p.lfree[k][:need]
	p.lfree[k] = free
	if p.lfreeOK[k] {
		return free
	}
	clear(free)
	for d := range tr.doms[k] {
		p.addFree(tr, free[d*R:(d+1)*R], tr.doms[k][d].nodes)
	}
	p.lfreeOK[k] = true
	return free
}

// addFree adds the free capacity of nodes (allocatable at the search
// level, uncordoned, negative entries as 0) to f.
func (p *Placer) addFree(tr *topoTree, f []int64, nodes []int32) {
	db := p.db
	for _, n := range nodes {
		if db.Cordoned(int(n)) {
			continue
		}
		a := db.Allocatable(int(n), p.search)
		if tr.exact {
			for r, v := range a {
				f[r] += max(v, 0)
			}
			continue
		}
		for r, v := range a {
			f[r] = satAdd(f[r], max(v, 0))
		}
	}
}

// placeTopology places g, whose Topology is set, in a domain of it. done
// is false when the gang asked only for a preferred level and no domain of
// any level could hold it: the caller then places it as without a
// topology, with db as before.
func (p *Placer) placeTopology(g *Gang, q int, levels []int, within Domains, why Explanation) (pl Placement, done bool, err error) {
	t, req, pref, err := flotilla.ResolveTopology(p.topos, "", g.Topology)
	if err != nil {
		// Again, to name the field: only on this path, which allocates.
		_, _, _, err = flotilla.ResolveTopology(p.topos, field(g.ID, "topology"), g.Topology)
		return Placement{}, true, err
	}
	tr := p.tree(t)
	L, m, R := len(t.Levels), len(g.Members), p.nres
	for len(p.lfree) < L {
		p.lfree = append(p.lfree, nil)
		p.lfreeOK = append(p.lfreeOK, false)
	}
	clear(p.lfreeOK)
	clear(p.sum)
	for _, e := range g.Members {
		p.sum.AddSaturating(e.Job.Requests)
	}
	avoid := within == UnavoidedDomains && p.avoidSet(g)
	db := p.db
	mark := db.Mark()
	// preferred: the innermost level first, then outwards, never above the
	// required level; required alone: its level only.
	lo, hi := req, req
	if pref >= 0 {
		lo, hi = max(req, 0), L-1
	}
	bestK, bestD, bestPlaced, anyFree := -1, -1, -1, false
	for k := hi; k >= lo; k-- {
		if !p.sum.Fits(tr.maxTotal[k]) {
			continue // no domain of the level is large enough, even empty
		}
		doms := tr.doms[k]
		free := p.levelFree(tr, k)
		// One scan finds the tightest domain whose free capacity holds
		// the summed requests and lists every such one; only when packing
		// the tightest fails are the others sorted, tightest first (ties
		// by path), and tried in turn: O(D) to place in the first, O(D +
		// C·log C) when C hold the sum (not O(D·C)).
		if cap(p.tcand) < len(doms) {
			p.tcand = make([]int32, 0, len(doms))
		}
		cand, best := p.tcand[:0], -1
		for d := range doms {
			if avoid && p.isAvoided(&doms[d]) {
				continue
			}
			f := free[d*R : (d+1)*R]
			if !p.sum.Fits(f) {
				continue
			}
			cand = append(cand, int32(d))
			if best < 0 || db.CompareIndexed(f, free[best*R:(best+1)*R]) < 0 {
				best = d
			}
		}
		p.tcand = cand
		for i := 0; best >= 0 && i < len(cand); i++ {
			if i == 1 {
				// cand[0] is then the tightest, already tried.
				p.tfree = free
				slices.SortFunc(cand, p.cmpTopo)
			}
			d := best
			if i > 0 {
				d = int(cand[i])
			}
			anyFree = true
			placed := p.pack(tr, k, d, g, q, levels)
			if placed == m {
				dom := &doms[d]
				return Placement{Placed: true, Nodes: p.cur[:m], Domain: dom.r, Level: t.Levels[k], Path: dom.path, Why: why}, true, nil
			}
			db.Rollback(mark)
			if k == req && placed > bestPlaced {
				bestK, bestD, bestPlaced = k, d, placed
			}
		}
	}
	if req < 0 {
		return Placement{}, false, nil
	}
	why.Level = t.Levels[req]
	return p.explainTopology(tr, req, g, q, levels, mark, why, bestK, bestD, avoid, anyFree), true, nil
}

// explainTopology explains why no domain of the required level k held g:
// no domain at all, every one avoided, none with the summed requests free
// (the roomiest named), or, when some had, a smallest-fit attempt in the
// one where packing placed the most members (bestD).
func (p *Placer) explainTopology(tr *topoTree, k int, g *Gang, q int, levels []int, mark binpack.Mark, why Explanation,
	bestK, bestD int, avoid, anyFree bool) Placement {
	doms := tr.doms[k]
	if avoid {
		sub := p.sub[:0]
		for d := range doms {
			if !p.isAvoided(&doms[d]) {
				sub = append(sub, doms[d])
			}
		}
		p.sub = sub
		// Every domain avoided, whether or not the level was searched (a
		// level no domain of which is large enough is skipped unsearched).
		if len(sub) == 0 && len(doms) > 0 {
			why.Cause = AllAvoided
			return Placement{Why: why}
		}
	}
	if len(doms) == 0 {
		why.Cause, why.NeverFits = NoTopologyDomain, true
		return Placement{Why: why}
	}
	if anyFree && bestK == k {
		dom := &doms[bestD]
		placed := p.attempt(g, dom, q, levels, len(g.Members))
		p.db.Rollback(mark)
		if placed < len(g.Members) {
			considered := doms
			if avoid {
				considered = p.sub
			}
			pl := p.explain(g, considered, dom, q, levels, mark, why, placed)
			pl.Level, pl.Path = why.Level, dom.path
			return pl
		}
		// Smallest fit over the domain holds what packing did not: explain
		// as short of room below.
	}
	R := p.nres
	free := p.levelFree(tr, k)
	best := -1
	for d := range doms {
		if avoid && p.isAvoided(&doms[d]) {
			continue
		}
		if best < 0 || p.db.CompareIndexed(free[d*R:(d+1)*R], free[best*R:(best+1)*R]) > 0 {
			best = d
		}
	}
	f := free[best*R : (best+1)*R]
	why.Cause, why.Domain, why.Path = NoDomainHasRoom, doms[best].r, doms[best].path
	why.Resource = p.shortResource(f)
	if why.Resource >= 0 {
		why.Need, why.Have = p.sum[why.Resource], f[why.Resource]
	}
	why.NeverFits = true
	for d := range doms {
		if (!avoid || !p.isAvoided(&doms[d])) && !p.neverFitsIn(g, &doms[d]) {
			why.NeverFits = false
			break
		}
	}
	return Placement{Domain: why.Domain, Level: why.Level, Path: why.Path, Why: why}
}

// shortResource is the first resource, the indexed ones in their order
// first and then the others in schema order, of which free holds less than
// p.sum; -1 when none (free holds the sum: packing, not room, failed).
// Only on the failure path; it allocates.
func (p *Placer) shortResource(free []int64) int {
	order := p.db.IndexedOrder()
	for r := range p.nres {
		if !slices.Contains(order, r) {
			order = append(order, r)
		}
	}
	for _, r := range order {
		if p.sum[r] > free[r] {
			return r
		}
	}
	return -1
}

// pack binds g's members inside domain d of level k, fewest child domains
// first, and returns how many it bound (all, or it stopped at the first
// member that fit nowhere in d). Children (the domains of level k+1 in d)
// are filled in order: a child whose free capacity holds the members'
// summed requests first (the tightest such), then the others roomiest
// first (ties by path); each member goes to the first child with a node
// that fits it, chosen there by smallest fit and tiers (SelectAmong), and
// to d's nodes outside every child last. Filling children in turn is a
// heuristic that can strand a member where smallest fit over all of d's
// nodes holds the gang (racks of 7 and 5 cores, members of 5, 4 and 3):
// then it undoes its binds and makes that attempt instead. At the
// innermost level, or in a domain without children, it is a smallest-fit
// attempt over d's nodes.
func (p *Placer) pack(tr *topoTree, k, d int, g *Gang, q int, levels []int) int {
	dom := &tr.doms[k][d]
	m := len(g.Members)
	if k+1 >= len(tr.doms) || dom.kidLo < 0 {
		return p.attempt(g, dom, q, levels, m)
	}
	R := p.nres
	// The children's free capacity, computed here for them alone (a
	// domain's share of the level), indexed from kidLo.
	lo := int(dom.kidLo)
	nk := int(dom.kidHi) - lo
	if cap(p.kfree) < nk*R {
		p.kfree = make([]int64, nk*R)
	}
	kfree := p.kfree[:nk*R]
	clear(kfree)
	kids := p.kids[:0]
	for c := dom.kidLo; c < dom.kidHi; c++ {
		kids = append(kids, c)
		i := int(c) - lo
		p.addFree(tr, kfree[i*R:(i+1)*R], tr.doms[k+1][c].nodes)
	}
	free := func(c int32) []int64 { i := int(c) - lo; return kfree[i*R : (i+1)*R] }
	holds := func(c int32) bool { return p.sum.Fits(free(c)) }
	slices.SortFunc(kids, func(a, b int32) int {
		ha, hb := holds(a), holds(b)
		switch {
		case ha && !hb:
			return -1
		case hb && !ha:
			return +1
		}
		c := p.db.CompareIndexed(free(a), free(b))
		if !ha {
			c = -c // roomiest first
		}
		return cmp.Or(c, cmp.Compare(a, b))
	})
	p.kids = kids
	rest := p.rest[:0]
	for _, n := range dom.nodes {
		if tr.nodeDom[k+1][n] < 0 {
			rest = append(rest, n)
		}
	}
	p.rest = rest
	db, next := p.db, tr.doms[k+1]
	mark := db.Mark()
	for _, i := range p.order[:m] {
		req := g.Members[i].Job.Requests
		p.query = binpack.Query{Requests: req, Level: p.search, Queue: q, Constraint: p.cons[i], OnlyNode: -1}
		n, ok := -1, false
		for _, c := range kids {
			if n, ok = db.SelectAmong(&p.query, next[c].nodes); ok {
				break
			}
		}
		if !ok {
			if n, ok = db.SelectAmong(&p.query, rest); !ok {
				db.Rollback(mark)
				return p.attempt(g, dom, q, levels, m)
			}
		}
		db.Bind(n, q, levels[i], req)
		p.cur[i] = n
	}
	return m
}

// LevelName is how messages call a topology level: the last segment of
// its label key ("rack" for topology.flotilla.dev/rack).
func LevelName(key string) string {
	if i := strings.LastIndexByte(key, '/'); i >= 0 {
		return key[i+1:]
	}
	return key
}

// domainName is "rack b1/r7", with the cluster when not the default.
func (e Explanation) domainName() string {
	s := LevelName(e.Level) + " " + e.Path
	if e.Domain.Cluster != "" {
		s += fmt.Sprintf(" of cluster %q", e.Domain.Cluster)
	}
	return s
}

// noRoomString renders NoDomainHasRoom: "no rack has 16 free
// nvidia.com/gpu: best rack b1/r7 has 12 (4 short)".
func (e Explanation) noRoomString(schema *flotilla.ResourceSchema) string {
	q := func(v int64) string {
		if schema != nil && e.Resource >= 0 && e.Resource < schema.Len() {
			return schema.Quantity(e.Resource, v)
		}
		return strconv.FormatInt(v, 10)
	}
	name := "resource " + strconv.Itoa(e.Resource)
	if schema != nil && e.Resource >= 0 && e.Resource < schema.Len() {
		name = schema.Name(e.Resource)
	}
	if e.Resource < 0 {
		return fmt.Sprintf("gang %q: no %s holds its %d members: best %s", e.Gang, LevelName(e.Level), e.Members, e.domainName())
	}
	return fmt.Sprintf("gang %q: no %s has %s free %s: best %s has %s (%s short)",
		e.Gang, LevelName(e.Level), q(e.Need), name, e.domainName(), q(e.Have), q(e.Need-e.Have))
}
