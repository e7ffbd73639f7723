package scheduler

import (
	"math/rand/v2"
	"slices"
	"time"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/binpack"
	"github.com/flotilla-sched/flotilla/preempt"
	"github.com/flotilla-sched/flotilla/queue"
)

// evictedLevel is the node-database level below every priority class where
// evicted jobs hold their capacity: a search at level 0 (free capacity)
// still sees them, a search at a class's level does not, so only a job that
// must displace them does.
const evictedLevel = 0

// lowestClassLevel is the level of the lowest priority class: a search
// there counts every job bound to a node but not evicted jobs' holds.
const lowestClassLevel = evictedLevel + 1

// runState is where a running job of the snapshot stands in the cycle.
type runState uint8

const (
	stRunning   runState = iota // untouched
	stEvicted                   // taken off its node, waiting to go back
	stBack                      // evicted and put back on its node
	stPreempted                 // leaves its node: in Result.Preempted
	stNew                       // scheduled this cycle
	stDisplaced                 // scheduled this cycle, then displaced by a higher priority
)

// runJob is a running job of the snapshot during the cycle.
type runJob struct {
	job   *flotilla.Job
	entry queue.Entry
	start time.Time
	node  int32
	queue int32
	class int32
	// level is what the job holds capacity at: its class's bind level, or
	// for a gang member the highest bind level among its gang's members
	// (the top level when one is non-preemptible or protected).
	level int32
	state runState
	// share and fair are the queue's standing when the job was evicted to
	// fair share, for the Preemption record.
	share, fair float64
	// sched is the job's index in Result.Scheduled, for stNew jobs.
	sched int32
	// tried is set once an evicted job has been offered (and its hold
	// released), alone or with its gang, or displaced.
	tried bool
	// rank is the evicted job's unit's place in the displacement index
	// (0: rescheduled last), -1 for a job not evicted.
	rank int32
	// by is the job an evicted job was displaced for.
	by *flotilla.Job
	// protected: the snapshot asked that the running job not be
	// preempted this cycle (Running.Protected).
	protected bool
}

// preemptor owns the cycle's preemption: the run table (the snapshot's
// running jobs, then the preemptible jobs placed this cycle), where they
// are, the evicted jobs' holds and the displacement index, and the
// mechanics that act on them: eviction to fair share and putting evicted
// jobs back (evict.go), new work displacing evicted jobs (displace.go) and
// urgency preemption (urgency.go). It shares the node database, the queues'
// books and the result with the cycle it belongs to (c).
type preemptor struct {
	c *cycle
	// run holds the snapshot's running jobs, then jobs scheduled this cycle
	// (stNew), so preemption can find and displace them; nodeRun lists them
	// per node and gangRun per gang id.
	run     []runJob
	nodeRun [][]int32
	gangRun map[string][]int32
	// held counts evicted jobs still holding capacity at evictedLevel;
	// minPreemptibleLevel is the lowest level a preemptible job is bound at.
	// Together they say whether a second, displacing search can help.
	held                int
	minPreemptibleLevel int
	// putBack counts the evicted jobs put back so far in the cycle: they
	// run again, and a job's explanation says their capacity is not room.
	putBack        int
	anyPreemptible bool
	scratch        victimScratch
	// backBuf lists the members of a unit going back; one is gangOf's
	// answer for a lone job; tolBuf builds the tolerations an evicted job
	// goes back with.
	backBuf []int32
	one     [1]int32
	tolBuf  []flotilla.Toleration
	displacement
}

// victimScratch is the reused memory of urgency's victim selection.
type victimScratch struct {
	victims, taken []int32
	victimInfo     []preempt.Victim
	victimOrder    []int
	kept           []int
	unitMembers    []int32
	unitStarts     []int
}

// evictForFairShare evicts, node by node with probability
// EvictionProbability, the preemptible jobs of queues whose share exceeds
// protectedFractionOfFairShare × max(fair share, adjusted fair share),
// whole gangs together. Evicted jobs hold their capacity at evictedLevel
// and wait at the front of their queues; the fill puts back those it can.
func (p *preemptor) evictForFairShare() {
	c := p.c
	// Evictions are final: the undo log starts empty for the fill.
	defer c.db.Forget()
	if !p.anyPreemptible || len(p.run) == 0 {
		return
	}
	cfg := &c.s.cfg
	evictable := make([]bool, len(c.queues))
	share := make([]float64, len(c.queues))
	any := false
	for qi := range c.queues {
		qs := &c.queues[qi]
		share[qi] = c.model.Share(qs.alloc)
		evictable[qi] = preempt.Evictable(share[qi], qs.fair, qs.adjusted, cfg.ProtectedFractionOfFairShare)
		any = any || evictable[qi]
	}
	if c.tree != nil {
		any = c.tree.evictable(c, share, evictable)
	}
	if !any {
		return
	}
	// The fill adds its preemptible placements to run: room for as many
	// again as are running, or as are queued if fewer, saves regrowing it.
	// (Capped as it is summed: a store's counts are not trusted not to
	// overflow.)
	queued := 0
	for qi := range c.queues {
		queued = min(queued+min(c.queues[qi].queuedLen, len(p.run)), len(p.run))
	}
	p.run = slices.Grow(p.run, queued)
	rng := rand.New(rand.NewPCG(c.snap.Seed, 0xf1a7111a))
	for n := range p.nodeRun {
		// Draw for every node, so that one node's draw does not depend on
		// what the others hold.
		if u := rng.Float64(); u >= cfg.EvictionProbability {
			continue
		}
		for _, ri := range p.nodeRun[n] {
			r := &p.run[ri]
			if r.state == stRunning && p.preemptible(ri) && evictable[r.queue] {
				p.evictGang(ri, share[r.queue])
			}
		}
		// Evictions are final: keep the undo log short.
		c.db.Forget()
	}
	for qi := range c.queues {
		qs := &c.queues[qi]
		slices.SortFunc(qs.evicted, func(a, b int32) int {
			ra, rb := &p.run[a], &p.run[b]
			if queue.LessEvicted(&ra.entry, &rb.entry, ra.start, rb.start) {
				return -1
			}
			return 1
		})
	}
	p.indexEvicted()
}

// evictGang evicts run job ri and every running member of its gang.
func (p *preemptor) evictGang(ri int32, share float64) {
	for _, m := range p.gangOf(ri) {
		if p.run[m].state == stRunning {
			p.evict(m, share)
		}
	}
}

func (p *preemptor) evict(ri int32, share float64) {
	c := p.c
	r := &p.run[ri]
	j := r.job
	qs := &c.queues[r.queue]
	c.db.Unbind(int(r.node), int(r.queue), int(r.level), j.Requests)
	c.db.Hold(int(r.node), evictedLevel, j.Requests)
	c.unaccount(int(r.queue), int(r.class), j.Requests)
	r.state = stEvicted
	r.share, r.fair = share, qs.fair
	// No scheduling key: an evicted job is offered by tryEvicted, which
	// neither reads nor fills the cache of failed keys.
	r.entry = queue.Entry{Job: j, ClassPriority: c.s.classes[r.class].Priority}
	qs.running--
	qs.evicted = append(qs.evicted, ri)
	p.held++
}

// preemptible reports whether run job ri may be preempted: its class is
// preemptible and, for a gang member, every member's is (taking one member
// takes them all, and non-preemptible jobs are never preempted).
func (p *preemptor) preemptible(ri int32) bool {
	c := p.c
	for _, m := range p.gangOf(ri) {
		if !c.s.classes[p.run[m].class].Preemptible || p.run[m].protected {
			return false
		}
	}
	return true
}

// gangOf returns the run jobs evicted together with ri: its gang's running
// members, or ri alone.
func (p *preemptor) gangOf(ri int32) []int32 {
	if id := p.run[ri].job.Gang.ID; id != "" {
		if ms := p.gangRun[id]; len(ms) > 0 {
			return ms
		}
	}
	p.one[0] = ri
	return p.one[:]
}

// tryEvicted puts an evicted job back on its own node if it fits there
// among the jobs not evicted, searching at its own class level, where the
// other evicted jobs' holds do not count: so when new work displaced some
// evicted jobs, those offered last are the ones that do not fit. On a node
// that started the cycle over-committed it fits within the node's excess
// (fitsBack). Either way its hold is released; a job that does not go back
// will be preempted. A gang member brings back its whole gang, each on its
// own node, or none.
func (p *preemptor) tryEvicted(qi int, ri int32) {
	c := p.c
	// Copy: gangOf's buffer is reused by makeRoom below.
	members := p.backBuf[:0]
	for _, m := range p.gangOf(ri) {
		if r := &p.run[m]; r.state == stEvicted && !r.tried {
			members = append(members, m)
		}
	}
	p.backBuf = members
	for _, m := range members {
		r := &p.run[m]
		c.db.Release(int(r.node), evictedLevel, r.job.Requests)
		p.held--
	}
	c.db.Forget()
	if !p.withinClassLimits(members) || !p.treeAdmits(members) {
		p.markTried(members)
		return
	}
	// Search every member at the gang's lowest class level, as for a
	// queued gang: its own members are then never its victims.
	level := len(c.s.levels) - 1
	for _, m := range members {
		level = min(level, c.s.classLevel[p.run[m].class])
	}
	mark := c.db.Mark()
	for _, m := range members {
		r := &p.run[m]
		c.query = c.makeQuery(r.job, int(r.queue), level)
		c.query.OnlyNode = int(r.node)
		c.query.Constraint = p.stayConstraint(r.job)
		if !p.fitsBack(&c.query) {
			c.db.Rollback(mark)
			p.markTried(members)
			return
		}
		c.db.Bind(int(r.node), int(r.queue), int(r.level), r.job.Requests)
	}
	c.db.Forget()
	for _, m := range members {
		r := &p.run[m]
		c.account(int(r.queue), int(r.class), r.job.Requests)
		r.state = stBack
		c.queues[r.queue].running++
	}
	p.putBack += len(members)
	for i, m := range members {
		n := int(p.run[m].node)
		if slack := c.excessOf(n); !slices.ContainsFunc(members[:i], func(o int32) bool { return int(p.run[o].node) == n }) && !p.nodeFits(n, slack) {
			p.makeRoom(n, level, slack, p.run[m].job)
		}
	}
}

// treeAdmits reports whether run jobs members (a unit going back, of one
// queue) stay within the queue tree's limits and lending holds (rule 5:
// rescheduled jobs pass the same check as new ones).
func (p *preemptor) treeAdmits(members []int32) bool {
	c := p.c
	if c.tour == nil || len(members) == 0 {
		return true
	}
	req := c.scratch
	clear(req)
	for _, m := range members {
		req.Add(p.run[m].job.Requests)
	}
	return c.tour.refusal(int(p.run[members[0]].queue), req).Code == 0
}

// withinClassLimits reports whether run jobs members (a unit going back)
// fit their queues' per-class caps, counted together: each is accounted
// in turn, as going back would, and every account is undone.
func (p *preemptor) withinClassLimits(members []int32) bool {
	c := p.c
	n, ok := 0, true
	for _, m := range members {
		r := &p.run[m]
		qs := &c.queues[r.queue]
		ok = !qs.overClassLimit(int(r.class), r.job.Requests)
		qs.account(int(r.class), r.job.Requests)
		n++
		if !ok {
			break
		}
	}
	for _, m := range members[:n] {
		r := &p.run[m]
		c.queues[r.queue].unaccount(int(r.class), r.job.Requests)
	}
	return ok
}

// fitsBack reports whether an evicted job fits back on its node, q being
// its query restricted to that node (Query.OnlyNode). A node that started
// the cycle over-committed takes its own jobs back within its excess:
// going back, they make it hold no more than it held, while new work
// finds it full until it is back under its total.
func (p *preemptor) fitsBack(q *binpack.Query) bool {
	c := p.c
	slack := c.excessOf(q.OnlyNode)
	if slack == nil {
		_, ok := c.db.Select(q)
		return ok
	}
	if !c.db.Admits(q.Constraint, q.OnlyNode) {
		return false
	}
	a := c.db.Allocatable(q.OnlyNode, q.Level)
	for r, v := range q.Requests {
		if v > a[r]+slack[r] {
			return false
		}
	}
	return true
}

// stayConstraint is the constraint an evicted job goes back to the node
// it runs on with: no node selector and every NoSchedule taint tolerated,
// since a label or a NoSchedule taint added since the job started does not
// remove a running job (in Kubernetes or here); its own tolerations still
// decide NoExecute taints. The cordon is ignored by Query.OnlyNode.
func (p *preemptor) stayConstraint(j *flotilla.Job) binpack.ConstraintID {
	c := p.c
	p.tolBuf = append(append(p.tolBuf[:0], j.Tolerations...),
		flotilla.Toleration{Operator: flotilla.TolerationExists, Effect: flotilla.TaintNoSchedule})
	return c.db.Constraints(nil, p.tolBuf)
}

// putBackLate offers every evicted unit that has not gone back once more,
// when the fill is done, in rescheduling order: room may have appeared on
// its node after the unit was displaced or offered (urgency preemption
// took a gang off the node, a job placed there was displaced in turn). A
// unit goes back only into free capacity, never preempting, within its
// queue's class caps: each member on its own node, a gang whole or not at
// all. So no job evicted to fair share is preempted while its node ends
// the cycle with room for it.
func (p *preemptor) putBackLate() {
	for k := len(p.order) - 1; k >= 0; k-- {
		p.putBackUnit(p.order[k])
	}
}

// putBackUnit puts evicted unit u back on its nodes if every member is
// still evicted and fits its node's free capacity. Free means under the
// node's total, also on a node that started the cycle over-committed: new
// work may have gone there once preemption brought it under its total.
func (p *preemptor) putBackUnit(u int32) {
	c := p.c
	members := p.backBuf[:0]
	for _, m := range p.gangOf(u) {
		if p.run[m].state != stEvicted {
			return // gone back already, or preempted with its gang
		}
		members = append(members, m)
	}
	p.backBuf = members
	for _, m := range members {
		if r := &p.run[m]; !r.tried {
			c.db.Release(int(r.node), evictedLevel, r.job.Requests)
			p.held--
			r.tried = true
		}
	}
	c.db.Forget()
	if !p.withinClassLimits(members) || !p.treeAdmits(members) {
		return
	}
	mark := c.db.Mark()
	for _, m := range members {
		r := &p.run[m]
		n := int(r.node)
		if !c.db.Admits(p.stayConstraint(r.job), n) {
			c.db.Rollback(mark)
			return
		}
		c.db.Bind(n, int(r.queue), int(r.level), r.job.Requests)
		if c.db.Allocatable(n, evictedLevel).AnyNegative() {
			c.db.Rollback(mark)
			return
		}
	}
	c.db.Forget()
	for _, m := range members {
		r := &p.run[m]
		c.account(int(r.queue), int(r.class), r.job.Requests)
		r.state, r.by = stBack, nil
		c.queues[r.queue].running++
	}
	p.putBack += len(members)
}

// markTried records that evicted jobs were offered and did not go back:
// they stay evicted, without a hold, until finishEvictions preempts them.
func (p *preemptor) markTried(members []int32) {
	for _, m := range members {
		p.run[m].tried = true
	}
}

// preempt records run job ri as preempted for why; by is the job it made
// room for, or nil.
func (p *preemptor) preempt(ri int32, why PreemptionReason, by *flotilla.Job) {
	c := p.c
	r := &p.run[ri]
	r.state = stPreempted
	pe := Preemption{Job: r.job, Node: c.db.Node(int(r.node)).Name, Reason: why, For: by}
	if why == PreemptedForFairShare {
		pe.Share, pe.FairShare = r.share, r.fair
	}
	c.rep.res.Preempted = append(c.rep.res.Preempted, pe)
}

// finishEvictions preempts every evicted job the fill did not put back,
// with its gang: a gang is preempted whole or not at all. A displaced job's
// Preemption names the job it was displaced for.
func (p *preemptor) finishEvictions() {
	c := p.c
	n := 0
	for ri := range p.run {
		if p.run[ri].state == stEvicted {
			n++
		}
	}
	c.rep.res.Preempted = slices.Grow(c.rep.res.Preempted, n)
	for ri := range p.run {
		if p.run[ri].state == stEvicted {
			by := p.run[ri].by
			for _, m := range p.gangOf(int32(ri)) {
				mr := &p.run[m]
				switch mr.state {
				case stEvicted:
					p.preempt(m, PreemptedForFairShare, by)
				case stBack:
					c.db.Unbind(int(mr.node), int(mr.queue), int(mr.level), mr.job.Requests)
					c.unaccount(int(mr.queue), int(mr.class), mr.job.Requests)
					c.queues[mr.queue].running--
					p.preempt(m, PreemptedForFairShare, by)
				}
			}
		}
	}
	c.db.Forget()
}
