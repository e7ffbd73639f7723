package server

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
	"slices"
	"strings"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/backend"
	"github.com/flotilla-sched/flotilla/queue"
)

// Jobs that can never run (docs/submit-file.md, "Jobs no node can run"): a
// job fits a node when each of its requests is at most the node's total;
// it never fits when, while the service knows at least one node, no node
// of the pools it accepts fits it. That is judged on resources only
// (labels, taints and what runs on the nodes aside), against every node
// of every cluster the service knows now, alive, cordoned or not: clusters
// come and go, so such a job is stored and waits, and fits again when a
// large enough node registers. While the service knows no node at all,
// nothing is judged: no job is never-fit.
//
// Such jobs are counted apart (QueueInfo.NeverFit), named by a warning at
// submit (SubmitResult.Warnings), and their requests leave their queue's
// demand in the cycles of the pools none of whose nodes fits them: a
// queue whose only queued jobs never fit has no demand there, and the
// other queues get its adjusted fair share. A gang runs whole or not at
// all: one member no node of a pool fits takes the whole gang's demand
// out of that pool's cycles, and when no pool fits every member, all its
// queued members never fit.
//
// The judgement is per job shape (queue, pools, requests), never per job:
// fitTracker counts the queued jobs of each shape, judges a shape once
// against the pools' distinct node totals (fitNodes), and judges every
// shape again only when those totals change.

// nodeShape is a distinct node total in a pool, and the first node with
// it (cluster/node; clusters in name order, a cluster's nodes in the
// order reported).
type nodeShape struct {
	total flotilla.Resources
	node  string
}

// fitNodes are the nodes the service knows, per pool, by distinct total.
type fitNodes struct {
	// pools are the pools with at least one node, sorted; shapes[i] are
	// pools[i]'s distinct totals.
	pools  []string
	shapes [][]nodeShape
}

// known reports whether the service knows any node.
func (f *fitNodes) known() bool { return len(f.pools) > 0 }

// sameTotals reports whether f and o hold the same totals in the same
// pools (the verdicts then stand; only node names may differ).
func (f *fitNodes) sameTotals(o *fitNodes) bool {
	if !slices.Equal(f.pools, o.pools) {
		return false
	}
	for i := range f.shapes {
		if !slices.EqualFunc(f.shapes[i], o.shapes[i], func(a, b nodeShape) bool { return a.total.Equal(b.total) }) {
			return false
		}
	}
	return true
}

// fitsIn reports whether some node of pools[i] fits req.
func (f *fitNodes) fitsIn(i int, req flotilla.Resources) bool {
	for _, sh := range f.shapes[i] {
		if req.Fits(sh.total) {
			return true
		}
	}
	return false
}

// knownNodes are the nodes of every cluster the service knows, by pool
// and distinct total: O(nodes), once per change of the clusters' nodes.
func (s *state) knownNodes() fitNodes {
	names := make([]string, 0, len(s.clusters))
	for name, c := range s.clusters {
		if len(c.nodes) > 0 {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	var f fitNodes
	seen := map[string]bool{}
	var key []byte
	for _, name := range names {
		c := s.clusters[name]
		i, ok := slices.BinarySearch(f.pools, c.pool)
		if !ok {
			f.pools = slices.Insert(f.pools, i, c.pool)
			f.shapes = slices.Insert(f.shapes, i, nil)
		}
		for n := range c.nodes {
			node := &c.nodes[n]
			key = appendResources(append(append(key[:0], c.pool...), 0), node.Total)
			if seen[string(key)] {
				continue
			}
			seen[string(key)] = true
			f.shapes[i] = append(f.shapes[i], nodeShape{total: node.Total, node: snapName(c.name, node.Name)})
		}
	}
	return f
}

// appendResources appends r's amounts to b, 8 bytes each.
func appendResources(b []byte, r flotilla.Resources) []byte {
	for _, v := range r {
		b = binary.LittleEndian.AppendUint64(b, uint64(v))
	}
	return b
}

// jobShape is the queued jobs of one queue with the same pools and
// requests, and the verdict on them.
type jobShape struct {
	queue, pools string
	req          flotilla.Resources
	n            int
	// never: no node of any pool the jobs accept fits them (while a node
	// is known). unfit are the pools with nodes, among those the jobs
	// accept, none of whose nodes fits them, sorted.
	never bool
	unfit []string
}

// fitTracker counts the queued jobs (queuedJobs.store's) by shape and
// keeps the verdicts on the shapes against the known nodes.
type fitTracker struct {
	nodes  fitNodes
	shapes map[string]*jobShape
	// never counts each queue's never-fit jobs (no entry for 0); unfit
	// are each queue's shapes with an unfit pool.
	never map[string]int
	unfit map[string]map[*jobShape]bool
	key   []byte
	// gangs are the queued members of each gang (gangKey) by shape; a
	// gang runs whole or not at all, so one member no node of a pool fits
	// keeps the whole gang out of that pool (gangFit). unfitGangs are
	// each queue's gangs with a member of a shape with an unfit pool.
	gangs      map[string]*gangFit
	unfitGangs map[string]map[*gangFit]bool
}

// gangFit is a gang's queued members, counted by shape (the members of
// a gang accept the same pools: submit's rules).
type gangFit struct {
	queue   string
	members map[*jobShape]int
	// unfit: some member's shape has an unfit pool.
	unfit bool
}

// unfitIn reports whether some member of g fits no node of pool.
func (g *gangFit) unfitIn(pool string) bool {
	for sh := range g.members {
		if _, ok := slices.BinarySearch(sh.unfit, pool); ok {
			return true
		}
	}
	return false
}

// never reports whether no pool with nodes fits every member of g: the
// pools unfit to some member are all those its members accept and that
// have nodes (a member that never fits has them all unfit).
func (g *gangFit) never(nodes *fitNodes) bool {
	if !g.unfit {
		return false
	}
	for sh := range g.members {
		for _, p := range nodes.pools {
			if acceptsPool(sh.pools, p) && !g.unfitIn(p) {
				return false
			}
		}
		return true // the members accept the same pools: one is enough
	}
	return false
}

// indexGang enters g into (in) or takes it from its queue's unfit gangs.
func (t *fitTracker) indexGang(g *gangFit, in bool) { indexByQueue(t.unfitGangs, g.queue, g, in) }

// indexByQueue enters k into (in) or takes it from idx[queue], the set
// made on its first entry and dropped with its last.
func indexByQueue[K comparable](idx map[string]map[K]bool, queue string, k K, in bool) {
	m := idx[queue]
	if in {
		if m == nil {
			m = map[K]bool{}
			idx[queue] = m
		}
		m[k] = true
		return
	}
	delete(m, k)
	if len(m) == 0 {
		delete(idx, queue)
	}
}

// judgeGang sets g's verdict from its members' shapes and indexes it:
// O(its member shapes).
func (t *fitTracker) judgeGang(g *gangFit) {
	g.unfit = false
	for sh := range g.members {
		g.unfit = g.unfit || len(sh.unfit) > 0
	}
	t.indexGang(g, g.unfit)
}

// countGang adds n (negative: takes) members of shape sh to fj's gang:
// O(the gang's member shapes).
func (t *fitTracker) countGang(fj *flotilla.Job, sh *jobShape, n int) {
	t.key = append(append(append(t.key[:0], fj.Queue...), 0), fj.Gang.ID...)
	g := t.gangs[string(t.key)]
	if g == nil {
		if n <= 0 {
			return // not reached: a member leaves the store only after it joined
		}
		g = &gangFit{queue: fj.Queue, members: map[*jobShape]int{}}
		t.gangs[string(t.key)] = g
	}
	if g.members[sh] += n; g.members[sh] <= 0 {
		delete(g.members, sh)
	}
	if len(g.members) == 0 {
		t.indexGang(g, false)
		delete(t.gangs, string(t.key))
		return
	}
	t.judgeGang(g)
}

// reset forgets every job and node.
func (t *fitTracker) reset() {
	*t = fitTracker{shapes: map[string]*jobShape{}, never: map[string]int{}, unfit: map[string]map[*jobShape]bool{},
		gangs: map[string]*gangFit{}, unfitGangs: map[string]map[*gangFit]bool{}}
}

// count adds n (negative: takes) jobs like fj, accepting pools, to their
// shape: O(resources) after the first job of a shape.
func (t *fitTracker) count(fj *flotilla.Job, pools string, n int) {
	if t.shapes == nil {
		t.reset()
	}
	t.key = appendResources(append(append(append(append(t.key[:0], fj.Queue...), 0), pools...), 0), fj.Requests)
	sh := t.shapes[string(t.key)]
	if sh == nil {
		if n <= 0 {
			return // not reached: a job leaves the store only after it joined
		}
		sh = &jobShape{queue: fj.Queue, pools: pools, req: slices.Clone(fj.Requests)}
		t.shapes[string(t.key)] = sh
		t.judge(sh)
		t.index(sh, true)
	}
	sh.n += n
	if sh.never {
		t.addNever(sh.queue, n)
	}
	if sh.n <= 0 {
		t.index(sh, false)
		delete(t.shapes, string(t.key))
	}
	if fj.IsGang() {
		t.countGang(fj, sh, n)
	}
}

func (t *fitTracker) addNever(queue string, n int) {
	if t.never[queue] += n; t.never[queue] <= 0 {
		delete(t.never, queue)
	}
}

// index enters sh into (in) or takes it from its queue's unfit shapes.
func (t *fitTracker) index(sh *jobShape, in bool) {
	if len(sh.unfit) == 0 {
		return
	}
	indexByQueue(t.unfit, sh.queue, sh, in)
}

// judge sets sh's verdict against t.nodes: O(distinct node totals).
func (t *fitTracker) judge(sh *jobShape) {
	sh.never, sh.unfit = false, nil
	if !t.nodes.known() {
		return
	}
	fits := false
	for i, p := range t.nodes.pools {
		if !acceptsPool(sh.pools, p) {
			continue
		}
		if t.nodes.fitsIn(i, sh.req) {
			fits = true
		} else {
			sh.unfit = append(sh.unfit, p)
		}
	}
	sh.never = !fits
}

// setNodes makes nodes the known nodes; when their totals changed, every
// shape is judged again: O(shapes × distinct totals).
func (t *fitTracker) setNodes(nodes fitNodes) {
	if t.shapes == nil {
		t.reset()
	}
	same := t.nodes.sameTotals(&nodes)
	t.nodes = nodes
	if same {
		return
	}
	clear(t.never)
	clear(t.unfit)
	for _, sh := range t.shapes {
		t.judge(sh)
		t.index(sh, true)
		if sh.never {
			t.addNever(sh.queue, sh.n)
		}
	}
	clear(t.unfitGangs)
	for _, g := range t.gangs {
		t.judgeGang(g)
	}
}

// neverFit is the number of queue's queued jobs that never fit, with the
// members of the gangs that never fit whole: O(queue's unfit gangs).
func (t *fitTracker) neverFit(queue string) int {
	n := t.never[queue]
	for g := range t.unfitGangs[queue] {
		if !g.never(&t.nodes) {
			continue
		}
		for sh, k := range g.members {
			if !sh.never { // those are counted already
				n += k
			}
		}
	}
	return n
}

// demands are the queues' demands in pool's cycle, whose store is st,
// for the queues with jobs no node of pool fits, or gangs one of whose
// members none fits: st's demand without theirs (never below 0). Nil
// when there are none: O(unfit shapes and gangs).
func (t *fitTracker) demands(pool string, st *queue.Store) map[string]flotilla.Resources {
	var out map[string]flotilla.Resources
	take := func(q string, req flotilla.Resources, n int) {
		d, ok := out[q]
		if !ok {
			d = st.Stats(q).Demand.Clone()
			if out == nil {
				out = map[string]flotilla.Resources{}
			}
			out[q] = d
		}
		for r, v := range req {
			hi, lo := bits.Mul64(uint64(v), uint64(n))
			sub := int64(math.MaxInt64)
			if hi == 0 && lo <= math.MaxInt64 {
				sub = int64(lo)
			}
			if r < len(d) { // d is nil for a queue st does not hold
				d[r] = max(d[r]-sub, 0)
			}
		}
	}
	for q, shapes := range t.unfit {
		for sh := range shapes {
			if _, ok := slices.BinarySearch(sh.unfit, pool); ok {
				take(q, sh.req, sh.n)
			}
		}
	}
	for q, gangs := range t.unfitGangs {
		for g := range gangs {
			if !g.unfitIn(pool) {
				continue
			}
			for sh, k := range g.members {
				if _, ok := slices.BinarySearch(sh.unfit, pool); !ok { // the unfit shapes are taken whole above
					take(q, sh.req, k)
				}
			}
		}
	}
	return out
}

// SubmitWarning is a submission's warning about one template of its file.
type SubmitWarning struct {
	// Field is the template, jobs[i].
	Field string
	// Resource is the resource no node has enough of (or, when some node
	// has enough of each but none of all, the one the node named lacks);
	// "" when no node of the jobs' pools is known.
	Resource string
	// Node is the node with the most of Resource among those of the jobs'
	// pools (cluster/node); "" with Resource.
	Node string
	// Message is the whole warning, starting with Field.
	Message string
}

// warning is the warning for template jobs[template], whose jobs request
// req and accept pools (joinPools), when they never fit: O(distinct node totals).
func (t *fitTracker) warning(schema *flotilla.ResourceSchema, template int, req flotilla.Resources, pools string) (SubmitWarning, bool) {
	if !t.nodes.known() {
		return SubmitWarning{}, false
	}
	where := "of any cluster"
	if pools != "" {
		where = "of pool " + strings.ReplaceAll(pools, ",", ", pool ")
	}
	var shapes []nodeShape
	for i, p := range t.nodes.pools {
		if acceptsPool(pools, p) {
			if t.nodes.fitsIn(i, req) {
				return SubmitWarning{}, false
			}
			shapes = append(shapes, t.nodes.shapes[i]...)
		}
	}
	field := fmt.Sprintf("jobs[%d]", template)
	w := SubmitWarning{Field: field}
	if len(shapes) == 0 {
		w.Message = fmt.Sprintf("%s: no node %s is known: its jobs wait until a cluster of its pools reports nodes", field, where)
		return w, true
	}
	largest := func(r int) nodeShape {
		best := shapes[0]
		for _, sh := range shapes[1:] {
			if sh.total[r] > best.total[r] {
				best = sh
			}
		}
		return best
	}
	q := func(r int, v int64) string { return schema.Name(r) + "=" + schema.Quantity(r, v) }
	for r, v := range req {
		if best := largest(r); v > best.total[r] {
			w.Resource, w.Node = schema.Name(r), best.node
			w.Message = fmt.Sprintf("%s: requests %s but the largest node (%s) has %s: no node %s fits it yet",
				field, q(r, v), best.node, schema.Quantity(r, best.total[r]), where)
			return w, true
		}
	}
	// Each resource alone fits some node, but no node has all of them:
	// name the largest node by the first resource requested, and what it
	// lacks.
	first := slices.IndexFunc(req, func(v int64) bool { return v > 0 })
	best := largest(max(first, 0))
	short := req.ShortOf(best.total)
	var asked []string
	for r, v := range req {
		if v > 0 {
			asked = append(asked, q(r, v))
		}
	}
	w.Resource, w.Node = schema.Name(short), best.node
	w.Message = fmt.Sprintf("%s: requests %s but no node has all of it: the largest by %s (%s) has %s: no node %s fits it yet",
		field, strings.Join(asked, ", "), schema.Name(max(first, 0)), best.node, q(short, best.total[short]), where)
	return w, true
}

// submitWarnings are the warnings for a submit's templates, counts[i]
// being the number of specs template i made (a template of count 0 made
// none): one judgement per template, on its first job.
func (s *state) submitWarnings(specs []backend.JobSpec, counts []int) []SubmitWarning {
	if !s.queued.fit.nodes.known() {
		return nil
	}
	var out []SubmitWarning
	at := 0
	for i, n := range counts {
		if n == 0 || at >= len(specs) {
			continue
		}
		sp := &specs[at]
		at += n
		if w, ok := s.queued.fit.warning(s.cat.Schema, i, sp.Job.Requests, joinPools(sp.Pools)); ok {
			out = append(out, w)
		}
	}
	return out
}
