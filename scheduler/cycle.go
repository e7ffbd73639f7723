package scheduler

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/binpack"
	"github.com/flotilla-sched/flotilla/fairness"
	"github.com/flotilla-sched/flotilla/internal/idindex"
)

// cycle is the working state of one Schedule call. It is built, filled and
// read once; nothing in it outlives the call except what result copies out.
//
// Its parts, by the stage that uses them (Schedule numbers the stages):
//
//  1. take stock (newCycle, this file): the node database db with the
//     running jobs bound, the cost model, each queue's queueState (shares,
//     caps, books), the rateTokens;
//  2. evict to fair share: the preemptor pre (evict.go), which owns the run
//     table, the evicted jobs' holds and the displacement index;
//  3. fill (fill.go, gangs.go): the fairness selector sel offers each
//     queue's next unit (queuestate.go), read from its backlog (backlog.go);
//     a unit is searched for (memo remembers failures by scheduling key),
//     may displace evicted jobs (displace.go) or preempt for urgency
//     (urgency.go), and is booked by commit; gangWork places gangs;
//  4. settle: pre puts late room to use and preempts the rest; the report
//     rep holds the Result and its groups throughout.
//
// The lottery strategy (lottery.go) replaces stages 2 to 4.
type cycle struct {
	s    *Scheduler
	snap *Snapshot
	// readErr is the first error reading the store; the cycle fails with it.
	readErr error
	now     time.Time
	db      *binpack.DB
	model   fairness.Model
	total   flotilla.Resources
	// excess is, for each node whose running jobs request more than its
	// total (over-committed: bindRunning), by how much, resource by
	// resource (zero where they fit); nil for the other nodes, and nil
	// altogether when there are none. Its evicted jobs may go back to it
	// within that much (tryEvicted); nothing new goes there before the
	// node is back under its total.
	excess []flotilla.Resources

	queues   []queueState
	queueIdx map[string]int

	// scheduledTotal is what this cycle newly placed, for the round limit.
	scheduledTotal flotilla.Resources
	// queuedDemand sums the queues' stored demand (nil when none).
	queuedDemand flotilla.Resources
	// memo remembers, by scheduling key, the searches that failed.
	memo memo
	// scratch is a reusable vector for share-after-next-job arithmetic.
	scratch flotilla.Resources
	query   binpack.Query

	tokens rateTokens
	rep    report
	sel    *fairness.Selector
	// tree is the queue tree (tree.go), nil for a flat list of queues;
	// tour orders the fill over it (tournament.go), in place of sel.
	tree *treeState
	tour *tournament
	// room is the tree room taken for the unit being tried (treeroom.go).
	room  treeRoom
	gangs gangWork

	// pre owns the run table and preemption (evict.go, displace.go,
	// urgency.go).
	pre preemptor
}

func newCycle(s *Scheduler, snap *Snapshot, now time.Time) (*cycle, error) {
	schema := s.cfg.Schema
	c := &cycle{
		s:              s,
		snap:           snap,
		now:            now,
		queueIdx:       make(map[string]int, len(snap.Queues)),
		memo:           memo{failed: make(map[uint64]failure)},
		rep:            report{groups: make(map[groupKey]int), every: s.cfg.ReportEveryUnscheduled},
		scratch:        schema.Zero(),
		scheduledTotal: schema.Zero(),
		total:          schema.Zero(),
	}
	c.pre.c = c
	var errs []error
	c.queues = make([]queueState, len(snap.Queues))
	c.rep.queues = c.queues
	for i, q := range snap.Queues {
		if q == nil {
			errs = append(errs, flotilla.Errorf(fmt.Sprintf("queues[%d]", i), "<nil>", flotilla.ErrRequired, ""))
			continue
		}
		if err := q.Validate(); err != nil {
			errs = append(errs, err)
		}
		if _, dup := c.queueIdx[q.Name]; dup {
			errs = append(errs, flotilla.Errorf(fmt.Sprintf("queues[%d].name", i), q.Name, flotilla.ErrDuplicate, ""))
		}
		c.queueIdx[q.Name] = i
		c.queues[i] = queueState{
			q: q, weight: q.Weight(),
			alloc: schema.Zero(), demand: schema.Zero(),
			allocByClass: make([]flotilla.Resources, len(s.classes)),
			lastGroup:    -1,
		}
	}
	// The tree needs sound queues; the nodes' problems are reported with
	// its own.
	queuesOK := len(errs) == 0
	for i, n := range snap.Nodes {
		if n == nil {
			errs = append(errs, flotilla.Errorf(fmt.Sprintf("nodes[%d]", i), "<nil>", flotilla.ErrRequired, ""))
			continue
		}
		if err := n.Validate(schema); err != nil {
			errs = append(errs, err)
			continue
		}
		if !c.total.AddChecked(n.Total) {
			errs = append(errs, flotilla.Errorf(fmt.Sprintf("nodes[%d].total", i), n.Name, flotilla.ErrOutOfRange, "cluster total overflows"))
		}
	}
	if queuesOK {
		var err error
		if c.tree, err = newTreeState(s, snap); err != nil {
			errs = append(errs, err)
		}
	}
	if c.snap.Queued != nil {
		for _, name := range c.snap.Queued.Queues() {
			if _, ok := c.queueIdx[name]; !ok {
				errs = append(errs, flotilla.Errorf("queued.queue", name, flotilla.ErrUnknownName, "no such queue in the snapshot"))
			}
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	db, err := binpack.New(binpack.Options{
		Schema:           schema,
		IndexedResources: s.cfg.IndexedResources,
		Levels:           s.levels,
		Queues:           len(snap.Queues),
	}, snap.Nodes)
	if err != nil {
		return nil, err
	}
	c.db = db
	// A failed gang is explained only when its reason is kept (tryGang).
	c.gangs.placer.DeferExplanations(true)
	c.gangs.placer.SetTopologies(s.cfg.Topologies)
	c.pre.nodeRun = make([][]int32, db.NodeCount())
	c.pre.gangRun = map[string][]int32{}
	c.pre.minPreemptibleLevel = len(s.levels)
	// The jobs the cycle schedules are added after the running ones: room
	// for a typical cycle's, so that the (large) slice is not copied.
	c.pre.run = make([]runJob, 0, len(snap.Running)+len(snap.Running)/8+256)
	if err := c.bindRunning(); err != nil {
		return nil, err
	}
	c.db.Forget()
	if c.model, err = newModel(&s.cfg, c.total); err != nil {
		return nil, err
	}
	setLimits(s, c.total, c.queues)
	if err := errors.Join(c.checkQueued(), c.collectDemand()); err != nil {
		return nil, err
	}
	if c.tree == nil {
		setShares(c.model, c.queues)
	} else {
		c.tree.decayUsage(c)
		c.tree.setShares(c)
	}
	c.tokens = newRateTokens(&c.s.cfg, snap.RateLimits, now, c.queues)
	return c, nil
}

// maxReserved caps reserveScheduled's guess (24 MiB of Assignments).
const maxReserved = 1 << 20

// reserveScheduled sizes Result.Scheduled once for the placements the
// cycle can be expected to make, so that a cycle placing hundreds of
// thousands of jobs does not copy the slice over and over as it grows: the
// jobs the queues offer (within the lookback), scaled by the fraction of
// their demand that the free capacity (and the round limit) could take,
// and capped by the rate limits' tokens. A wrong guess costs only growth,
// as before, or unused capacity, at most maxReserved entries.
func (c *cycle) reserveScheduled() {
	offered := 0
	for qi := range c.queues {
		n := c.queues[qi].queuedLen
		if lb := c.s.cfg.MaxQueueLookback; lb > 0 {
			n = min(n, lb)
		}
		offered += n
	}
	if offered == 0 || c.queuedDemand == nil {
		return
	}
	frac := 1.0
	for r, d := range c.queuedDemand {
		if d <= 0 {
			continue
		}
		free := float64(c.total[r])
		for qi := range c.queues {
			free -= float64(c.queues[qi].alloc[r])
		}
		frac = min(frac, max(free, 0)/float64(d))
	}
	for _, l := range c.s.roundLimit {
		if d := c.queuedDemand[l.res]; d > 0 {
			frac = min(frac, l.frac*float64(c.total[l.res])/float64(d))
		}
	}
	est := min(float64(offered), math.Ceil(frac*float64(offered)))
	est = c.tokens.estimate(est)
	c.rep.res.Scheduled = make([]Assignment, 0, int(min(max(est, 0), maxReserved))+1)
}

// bindRunning places the snapshot's running jobs on their nodes.
func (c *cycle) bindRunning() error {
	schema := c.s.cfg.Schema
	var errs []error
	// seen indexes the running jobs bound so far by id, to find
	// duplicates: a pointer-free hash index of their positions, which
	// compares ids only on a hash match, where a map[string]struct{}
	// hashes and copies every id into its own table.
	var seen idindex.Index
	seen.Reserve(len(c.snap.Running))
	idOf := func(h uint32) string { return c.snap.Running[h].Job.ID }
	for i := range c.snap.Running {
		r := &c.snap.Running[i]
		field := runningField(i)
		j := r.Job
		if j == nil {
			errs = append(errs, flotilla.Errorf(field.String()+".job", "<nil>", flotilla.ErrRequired, ""))
			continue
		}
		if err := j.Validate(schema); err != nil {
			errs = append(errs, err)
			continue
		}
		h := seen.Hash(j.ID)
		if _, dup := seen.FindHashed(h, j.ID, idOf); dup {
			errs = append(errs, flotilla.Errorf(field.String()+".job.id", j.ID, flotilla.ErrDuplicate, ""))
			continue
		}
		seen.InsertHashed(h, uint32(i))
		qi, ok := c.queueIndex(j.Queue)
		if !ok {
			errs = append(errs, flotilla.Errorf(field.String()+".job.queue", j.Queue, flotilla.ErrUnknownName, "no such queue in the snapshot"))
			continue
		}
		// A gang is one queue's, running as queued: evicting, ranking,
		// displacing and booking it whole all take it so.
		if ms := c.pre.gangRun[j.Gang.ID]; j.Gang.ID != "" && len(ms) > 0 && int(c.pre.run[ms[0]].queue) != qi {
			first := c.pre.run[ms[0]].job
			errs = append(errs, flotilla.Errorf(field.String()+".job.gang.id", j.Gang.ID, flotilla.ErrInconsistent,
				"job %q is in queue %q, job %q of its gang in %q", j.ID, j.Queue, first.ID, first.Queue))
			continue
		}
		ci, ok := c.s.classOf(j)
		if !ok {
			errs = append(errs, flotilla.Errorf(field.String()+".job.priorityClass", j.PriorityClass, flotilla.ErrUnknownName, "no such priority class"))
			continue
		}
		ni, ok := c.runningNode(r)
		if !ok {
			errs = append(errs, flotilla.Errorf(field.String()+".node", r.Node, flotilla.ErrUnknownName, "no such node in the snapshot"))
			continue
		}
		lvl := c.s.bindLevel[ci]
		if r.Protected {
			lvl = len(c.s.levels) - 1 // as a non-preemptible job holds it
		}
		c.db.Bind(ni, qi, lvl, j.Requests)
		c.queues[qi].account(ci, j.Requests)
		c.queues[qi].running++
		ri := c.pre.record(j, r.Start, ni, qi, ci, stRunning)
		if r.Protected {
			c.pre.run[ri].level, c.pre.run[ri].protected = int32(lvl), true
		}
		if i&1023 == 1023 {
			c.db.Forget() // running jobs are final: keep the undo log short
		}
	}
	c.pre.indexNodeRuns()
	// A gang goes whole, and urgency takes only jobs of strictly lower
	// priority: so all its members hold their capacity at its highest
	// member's level (the top level when a member is non-preemptible or
	// protected: the gang is then never preempted), and none of it looks free to a job
	// that could not take every member.
	for _, id := range sortedKeys(c.pre.gangRun) {
		ms := c.pre.gangRun[id]
		var lvl int32
		for _, m := range ms {
			lvl = max(lvl, c.pre.run[m].level)
		}
		for _, m := range ms {
			if r := &c.pre.run[m]; r.level != lvl {
				c.db.Unbind(int(r.node), int(r.queue), int(r.level), r.job.Requests)
				c.db.Bind(int(r.node), int(r.queue), int(lvl), r.job.Requests)
				r.level = lvl
			}
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	c.findOverCommitted()
	return nil
}

// findOverCommitted records the nodes whose running jobs, just bound,
// request more than their total: Kubernetes lets a node's allocatable
// shrink under its pods, so this is no error but a full node. The node
// database keeps such a node as it is, allocatable negative, so it takes
// nothing new until preemption brings it back under its total (package
// binpack); the cycle names it in Result.OverCommitted and keeps, in
// excess, by how much it is over, for its evicted jobs to go back within.
func (c *cycle) findOverCommitted() {
	for ni := 0; ni < c.db.NodeCount(); ni++ {
		a := c.db.Allocatable(ni, evictedLevel)
		if !a.AnyNegative() {
			continue
		}
		if c.excess == nil {
			c.excess = make([]flotilla.Resources, c.db.NodeCount())
		}
		e := make(flotilla.Resources, len(a))
		for r, v := range a {
			e[r] = max(-v, 0)
		}
		c.excess[ni] = e
		c.rep.res.OverCommitted = append(c.rep.res.OverCommitted, c.db.Node(ni).Name)
	}
}

// excessOf is node's excess (see cycle.excess), nil when it is not
// over-committed.
func (c *cycle) excessOf(node int) flotilla.Resources {
	if c.excess == nil {
		return nil
	}
	return c.excess[node]
}

// smallScan is how many names a lookup compares one by one before it
// hashes instead: for a few queues or classes, comparing strings is
// cheaper than hashing one.
const smallScan = 8

// queueIndex is queueIdx[name], without hashing when there are few queues.
// Queues with a duplicate name fail the cycle before it is used, so the
// first match is the map's answer.
func (c *cycle) queueIndex(name string) (int, bool) {
	if len(c.queues) <= smallScan {
		for i := range c.queues {
			if c.queues[i].q.Name == name {
				return i, true
			}
		}
		return 0, false
	}
	i, ok := c.queueIdx[name]
	return i, ok
}

// runningNode finds r's node: by its NodeIndex hint when the hint names
// it, else by name.
func (c *cycle) runningNode(r *Running) (int, bool) {
	if h := r.NodeIndex; h > 0 && h <= c.db.NodeCount() && c.db.Node(h-1).Name == r.Node {
		return h - 1, true
	}
	return c.db.NodeIndex(r.Node)
}

// addRun records a job bound to a node, for preemption.
func (p *preemptor) addRun(j *flotilla.Job, start time.Time, node, qi, ci int, st runState) int32 {
	ri := p.record(j, start, node, qi, ci, st)
	p.nodeRun[node] = append(p.nodeRun[node], ri)
	return ri
}

// nodeRunSlack is the room each node's list of jobs gets, when the running
// jobs are indexed, for the jobs the cycle places there.
const nodeRunSlack = 4

// indexNodeRuns builds nodeRun for the jobs recorded so far (the running
// ones) in one allocation: each node's list is a window of one backing
// array, with nodeRunSlack spare, so that a node's list grows on its own
// only past that.
func (p *preemptor) indexNodeRuns() {
	count := make([]int32, len(p.nodeRun)+1)
	for i := range p.run {
		count[p.run[i].node+1]++
	}
	for ni := range p.nodeRun {
		count[ni+1] += count[ni] + nodeRunSlack
	}
	backing := make([]int32, count[len(p.nodeRun)])
	for ni := range p.nodeRun {
		p.nodeRun[ni] = backing[count[ni]:count[ni]:count[ni+1]]
	}
	for i := range p.run {
		n := p.run[i].node
		p.nodeRun[n] = append(p.nodeRun[n], int32(i))
	}
}

// record adds a job bound to a node to run (not to nodeRun: addRun).
func (p *preemptor) record(j *flotilla.Job, start time.Time, node, qi, ci int, st runState) int32 {
	c := p.c
	ri := int32(len(p.run))
	p.run = append(p.run, runJob{job: j, start: start, node: int32(node), queue: int32(qi), class: int32(ci), level: int32(c.s.bindLevel[ci]), state: st, rank: -1})
	if j.Gang.ID != "" {
		p.gangRun[j.Gang.ID] = append(p.gangRun[j.Gang.ID], ri)
	}
	if c.s.classes[ci].Preemptible {
		p.anyPreemptible = true
		p.minPreemptibleLevel = min(p.minPreemptibleLevel, c.s.bindLevel[ci])
	}
	return ri
}

// unaccount removes req from the queue's allocation at class ci.
func (qs *queueState) unaccount(ci int, req flotilla.Resources) {
	qs.alloc.Sub(req)
	qs.allocByClass[ci].Sub(req)
}

// account books req on queue qi at class ci, and on its groups during the
// fill.
func (c *cycle) account(qi, ci int, req flotilla.Resources) {
	c.queues[qi].account(ci, req)
	if c.tour != nil {
		c.tour.add(qi, req, 1)
	}
}

// unaccount takes req off queue qi at class ci, and off its groups during
// the fill.
func (c *cycle) unaccount(qi, ci int, req flotilla.Resources) {
	c.queues[qi].unaccount(ci, req)
	if c.tour != nil {
		c.tour.add(qi, req, -1)
	}
}

// runningField names Snapshot.Running[i] in errors. It is a value whose
// String is only built when an error is reported.
type runningField int

func (f runningField) String() string { return fmt.Sprintf("running[%d]", int(f)) }

// account adds req to the queue's allocation at class ci.
func (qs *queueState) account(ci int, req flotilla.Resources) {
	qs.alloc.Add(req)
	if qs.allocByClass[ci] == nil {
		qs.allocByClass[ci] = make(flotilla.Resources, len(qs.alloc))
	}
	qs.allocByClass[ci].Add(req)
}

// newModel is the cost model cfg chooses over a cluster of total.
func newModel(cfg *Config, total flotilla.Resources) (fairness.Model, error) {
	if cfg.Fairness == AssetFairness {
		return fairness.NewAsset(cfg.Schema, total, cfg.ResourceWeights)
	}
	return fairness.NewDRF(total), nil
}

// setLimits turns per-class fractions (queue overrides first) into the
// queues' caps against the cluster total, in each resource's unit.
func setLimits(s *Scheduler, total flotilla.Resources, queues []queueState) {
	schema := s.cfg.Schema
	for qi := range queues {
		qs := &queues[qi]
		qs.limitByClass = make([][]int64, len(s.classes))
		for ci, pc := range s.classes {
			fr := pc.MaximumResourceFractionPerQueue
			if o, ok := qs.q.LimitsByPriorityClass[pc.Name]; ok {
				fr = o
			}
			if len(fr) == 0 {
				continue
			}
			lim := make([]int64, schema.Len())
			for r := range lim {
				lim[r] = -1
			}
			for name, f := range fr {
				if r, ok := schema.Index(name); ok {
					lim[r] = int64(math.Floor(f * float64(total[r])))
				}
			}
			qs.limitByClass[ci] = lim
		}
	}
}

// collectDemand adds each queue's queued demand, as the store keeps it,
// to its allocation, for adjusted fair share: O(queues), whatever the
// backlog.
func (c *cycle) collectDemand() error {
	var errs []error
	n := c.s.cfg.Schema.Len()
	for qi := range c.queues {
		qs := &c.queues[qi]
		qs.demand.AddSaturating(qs.alloc)
		if c.snap.Queued == nil {
			continue
		}
		st := c.snap.Queued.Stats(qs.q.Name)
		switch {
		case st.Jobs < 0 || st.GangJobs < 0 || st.GangJobs > st.Jobs:
			errs = append(errs, flotilla.Errorf("queued.stats", qs.q.Name, flotilla.ErrOutOfRange,
				"%d jobs, %d gang members", st.Jobs, st.GangJobs))
			continue
		case st.Demand != nil && len(st.Demand) != n:
			errs = append(errs, flotilla.Errorf("queued.stats.demand", qs.q.Name, flotilla.ErrInconsistent,
				"has %d resources, schema has %d", len(st.Demand), n))
			continue
		case st.Demand.AnyNegative():
			errs = append(errs, flotilla.Errorf("queued.stats.demand", qs.q.Name, flotilla.ErrNegative, "%v", st.Demand))
			continue
		}
		qs.queuedLen, qs.keys.storedGang = st.Jobs, st.GangJobs
		if st.Demand != nil {
			qs.demand.AddSaturating(st.Demand)
			if c.queuedDemand == nil {
				c.queuedDemand = c.s.cfg.Schema.Zero()
			}
			c.queuedDemand.AddSaturating(st.Demand)
		}
	}
	return errors.Join(errs...)
}

// checkQueued checks the store against the configuration once per cycle:
// its classes are the config's, with the same priorities (so every job it
// ordered has a known class at the right priority), and no running job is
// also queued.
func (c *cycle) checkQueued() error {
	if c.snap.Queued == nil {
		return nil
	}
	var errs []error
	for i, pc := range c.snap.Queued.PriorityClasses() {
		ci, ok := c.s.classIndex[pc.Name]
		switch {
		case !ok:
			errs = append(errs, flotilla.Errorf(fmt.Sprintf("queued.priorityClasses[%d].name", i), pc.Name, flotilla.ErrUnknownName, "no such priority class"))
		case c.s.classes[ci].Priority != pc.Priority:
			errs = append(errs, flotilla.Errorf(fmt.Sprintf("queued.priorityClasses[%d].priority", i), fmt.Sprint(pc.Priority), flotilla.ErrInconsistent,
				"the store orders class %s at priority %d, the config's class has %d", pc.Name, pc.Priority, c.s.classes[ci].Priority))
		}
	}
	def := c.snap.Queued.DefaultPriorityClass()
	if ci, ok := c.s.classIndex[def]; ok && c.s.classes[ci].Priority != c.s.classes[c.s.defClass].Priority {
		errs = append(errs, flotilla.Errorf("queued.defaultPriorityClass", def, flotilla.ErrInconsistent,
			"the store's default class has priority %d, the config's (%s) %d", c.s.classes[ci].Priority, c.s.classes[c.s.defClass].Name, c.s.classes[c.s.defClass].Priority))
	}
	for i := range c.snap.Running {
		j := c.snap.Running[i].Job
		if _, queued := c.snap.Queued.Get(j.ID); queued {
			errs = append(errs, flotilla.Errorf("queued.id", j.ID, flotilla.ErrDuplicate, "the job is also running"))
			if len(errs) >= 100 {
				break
			}
		}
	}
	return errors.Join(errs...)
}

// setShares sets the queues' fair and adjusted fair shares over the active
// ones, under model.
func setShares(model fairness.Model, queues []queueState) {
	n := len(queues)
	weights := make([]float64, n)
	active := make([]bool, n)
	demand := make([]float64, n)
	out := make([]float64, n)
	for i := range queues {
		qs := &queues[i]
		weights[i] = qs.weight
		active[i] = qs.running > 0 || qs.queuedLen > 0
		demand[i] = model.Share(qs.demand)
	}
	fairness.FairShares(weights, active, out)
	for i := range queues {
		queues[i].fair = out[i]
	}
	fairness.AdjustedFairShares(weights, active, demand, out)
	for i := range queues {
		queues[i].adjusted = out[i]
	}
}
