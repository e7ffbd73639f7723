package server

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/backend"
	"github.com/flotilla-sched/flotilla/events"
	"github.com/flotilla-sched/flotilla/scheduler"
)

// ErrCycleRunning: Cycle was called while another cycle runs.
var ErrCycleRunning = errors.New("server: a cycle is already running")

// CycleReport is what one cycle did.
type CycleReport struct {
	// Time is the cycle's time (the clock when it started).
	Time time.Time
	// Expired counts leases that expired; DeadlineExceeded jobs that
	// failed on their active deadline.
	Expired, DeadlineExceeded int
	// Leased and Preempted count the leased and preempted events written.
	Leased, Preempted int
	// Result is the scheduler's decision (nil when the service is
	// draining): the one pool's, or with several pools the first's by
	// name (Pools has each).
	Result *scheduler.Result
	// Pools are each known pool's decision, in pool name order.
	Pools []PoolResult
	// UsageErr is why the usage history could not be stored at the end
	// of the cycle (nil when it was); the next cycle stores it again.
	UsageErr error
}

// PoolResult is one pool's decision in a cycle.
type PoolResult struct {
	Pool   string
	Result *scheduler.Result
	// Skipped are the jobs of Result.Scheduled whose lease was not
	// written (the job or its node changed while the pool's cycle
	// decided, or a gang mate's did), in no set order; nil when
	// every lease was written. Such a job may be scheduled again, in a
	// later pool or cycle.
	Skipped []string
}

// Cycle runs one scheduling cycle at the clock's time:
//
//  1. Leases not renewed within the lease timeout expire (the job is
//     queued again, or fails after MaxAttempts, or is cancelled if that
//     was requested) and jobs past their active deadline fail; one write.
//  2. For each known pool in name order (the pools of the clusters the
//     service knows; backend.DefaultPool when it knows none), steps 2
//     and 3 run for the pool's clusters and the queued jobs that accept
//     it, with the pool's own state from the last cycle (rate limits,
//     queue priorities, usage memory): a job leased in one pool is no
//     longer queued when the next pool's snapshot is taken.
//     A snapshot is taken of the pool's clusters that reported within the lease
//     timeout (their nodes and live leases; a node whose live jobs request
//     more than its reported total goes to the core as it is, which holds
//     it full: see scheduler.Result.OverCommitted), the queues, and the
//     queued jobs, and scheduler.Schedule decides. Submissions, cancellations
//     and reports proceed meanwhile; their changes to the queued jobs are
//     applied when Schedule returns.
//  3. The decision becomes preempted and leased events, written in chunks
//     of at most 1,000 preemptions or leases (a gang's leases always in
//     one), the preemptions first; each chunk is one write made under the
//     lock from the state as it is then, and between chunks the lock is
//     released, so that a report or a submission waits for one chunk at
//     most. Jobs that changed since the snapshot are skipped (a lease for
//     a job cancelled during the cycle is dropped, with the rest of its
//     gang). A chunk that fails ends the cycle with its error, the chunks
//     before it stored: as if the cycle had decided less. Executors
//     receive their leases and kill orders with their next report.
//
// Only one cycle runs at a time (ErrCycleRunning otherwise).
func (s *Server) Cycle(ctx context.Context) (*CycleReport, error) {
	s.mu.Lock()
	rep, pools, err := s.st.cycleStart(ctx)
	s.mu.Unlock()
	if err != nil || pools == nil {
		return rep, err
	}
	for _, pool := range pools {
		if err = s.poolCycle(ctx, rep, pool); err != nil {
			break
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.st.cycleEnd(ctx, rep, err)
}

// poolCycle is one pool's part of a cycle: its snapshot, decision, and
// the decision's events.
func (s *Server) poolCycle(ctx context.Context, rep *CycleReport, pool string) error {
	s.mu.Lock()
	snap := s.st.snapshot(pool, rep.Time)
	s.st.queued.cycling = true
	s.mu.Unlock()

	res, err := s.st.schedule(ctx, snap, rep.Time)

	s.mu.Lock()
	d, err := s.st.cycleDecided(rep, snap, res, err)
	s.mu.Unlock()
	// The decision is written a chunk at a time, the lock released
	// between chunks, so that reports and submissions wait for one chunk
	// at most, not for the whole decision.
	for more := err == nil; more; {
		s.mu.Lock()
		more, err = d.next(ctx, &s.st)
		s.mu.Unlock()
		if more && s.st.betweenChunks != nil {
			s.st.betweenChunks()
		}
	}
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.st.last.pool(pool).remember(res)
	rep.Pools = append(rep.Pools, PoolResult{Pool: pool, Result: res, Skipped: d.skipped})
	if rep.Result == nil {
		rep.Result = res
	}
	return nil
}

// cycleStart is a cycle's first part, before the pools' decisions: the
// expiries and deadlines written. It returns the pools to decide for. A
// draining service's cycle ends here, with no pool.
func (s *state) cycleStart(ctx context.Context) (*CycleReport, []string, error) {
	if s.last.running {
		return nil, nil, ErrCycleRunning
	}
	if err := s.fresh(ctx); err != nil {
		return nil, nil, err
	}
	s.endBrokenGangs(ctx)
	now := s.clock.Now()
	rep := &CycleReport{Time: now}
	w := s.expiries(now, rep)
	s.followGangs(w, now)
	if _, err := s.commit(ctx, w); err != nil {
		return nil, nil, err
	}
	if s.stopping {
		rep.UsageErr = s.cycleUsage(ctx, now)
		return rep, nil, nil
	}
	s.last.running = true
	return rep, s.poolNames(), nil
}

// cycleDecided ends the cycle's use of the queued-job store once Schedule
// has returned res (or err) for snap: the store's deferred changes are
// applied. It returns the writer of the decision.
func (s *state) cycleDecided(rep *CycleReport, snap *scheduler.Snapshot, res *scheduler.Result, err error) (*decisionWriter, error) {
	s.queued.cycling = false
	s.queued.flush()
	clear(snap.Running) // the buffer is the next snapshot's, holding no jobs meanwhile
	s.scratch.running = snap.Running[:0]
	return &decisionWriter{res: res, rep: rep}, err
}

// cycleEnd is a cycle's last part, once its pools' decisions are written
// (or err stopped one): the next cycle may start, and, after a cycle that
// wrote every decision, the usage history is stored.
func (s *state) cycleEnd(ctx context.Context, rep *CycleReport, err error) (*CycleReport, error) {
	s.last.running = false
	if err != nil {
		return nil, err
	}
	s.last.cycles++
	s.ui.cycled(s.last.cycles, rep, s.clock.Now())
	rep.UsageErr = s.cycleUsage(ctx, rep.Time)
	return rep, nil
}

// Run calls Cycle every interval until ctx ends, and returns ctx's error
// (or a cycle's error other than the context's). It is the one place the
// service waits on real time; it runs in the caller's goroutine.
func (s *Server) Run(ctx context.Context, interval time.Duration) error {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if _, err := s.Cycle(ctx); err != nil && ctx.Err() == nil && !errors.Is(err, ErrCycleRunning) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}

// Drain makes later cycles lease and preempt nothing (they still expire
// leases and enforce deadlines): the first step of a graceful stop.
func (s *Server) Drain() {
	s.mu.Lock()
	s.st.stopping = true
	s.mu.Unlock()
}

// expiries plans the lease expiries and deadline failures due at now.
func (s *state) expiries(now time.Time, rep *CycleReport) *backend.Write {
	var due []dueLease
	for _, c := range s.clusters {
		if c.dueKnown && now.Before(c.nextDue) {
			continue
		}
		// The next due time counts the leases due now: if their events
		// are not stored, the next cycle looks again.
		next, found := time.Time{}, false
		for i, j := range c.live {
			if j == nil {
				continue
			}
			renewed := c.marks[i].renewed
			if now.Sub(renewed) >= s.cfg.LeaseTimeout || j.pastDeadline(now) {
				due = append(due, dueLease{j, renewed})
			}
			if d := j.due(renewed, s.cfg.LeaseTimeout); !found || d.Before(next) {
				next, found = d, true
			}
		}
		c.nextDue, c.dueKnown = next, found
	}
	slices.SortFunc(due, func(a, b dueLease) int { return strings.Compare(a.j.id(), b.j.id()) })
	w := &backend.Write{}
	for _, d := range due {
		j, l := d.j, d.j.lease
		if j.pastDeadline(now) {
			sj := j.spec
			ev := events.Event{Time: now, Queue: sj.Queue, JobSet: sj.JobSet, Job: sj.ID,
				Cluster: l.cluster.name, Node: l.node, Attempt: int(j.attempts)}
			w.Events = append(w.Events, s.failedRun(j, ev, events.Failure{Reason: events.ReasonDeadline},
				fmt.Sprintf("deadline exceeded: active for %s, deadline %s", now.Sub(l.leased), j.run.deadline)))
			rep.DeadlineExceeded++
			continue
		}
		w.Events = append(w.Events, s.leaseEnd(j, events.LeaseExpired, now, "",
			fmt.Sprintf("lease not renewed by cluster %s for %s (lease timeout %s)", l.cluster.name, now.Sub(d.renewed), s.cfg.LeaseTimeout)))
		rep.Expired++
	}
	return w
}

// dueLease is a live job whose lease falls due, and when the lease was
// last renewed.
type dueLease struct {
	j       *job
	renewed time.Time
}

// pastDeadline reports whether live job j has passed its active deadline
// at now.
func (j *job) pastDeadline(now time.Time) bool {
	return j.run.deadline > 0 && now.Sub(j.lease.leased) >= j.run.deadline
}

// snapshot builds pool's snapshot: its live clusters' nodes and leases,
// every queue, its queued-job store (which Schedule then reads,
// queued.cycling, until cycleDecided), and what the pool's last cycle
// left. The caller holds mu. Its Running are
// in cluster name order, each cluster's in the order the cluster keeps
// them (not sorted): the scheduler's decisions do not depend on the order
// of Snapshot.Running, so the cycle's result depends on the state only,
// not on the order of the changes that made it.
func (s *state) snapshot(pool string, now time.Time) *scheduler.Snapshot {
	last := s.last.pool(pool)
	snap := &scheduler.Snapshot{
		Queued:          s.snapshotQueued(pool),
		RateLimits:      last.rate,
		QueuePriorities: last.prio,
		Seed:            s.cfg.Seed + s.last.cycles,
	}
	names := make([]string, 0, len(s.clusters))
	for name, c := range s.clusters {
		if c.pool == pool && c.alive(now, s.cfg.LeaseTimeout) {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	running := 0
	for _, name := range names {
		c := s.clusters[name]
		running += len(c.live) - c.holes
	}
	snap.Running = slices.Grow(s.scratch.running[:0], running)
	for _, name := range names {
		c := s.clusters[name]
		base := len(snap.Nodes) + 1 // NodeIndex counts from 1
		// In the order the cluster keeps them, sorted or not: a cycle's
		// decisions do not depend on the order of Snapshot.Running
		// (scheduler's TestPropertyRunningOrderDoesNotMatter).
		for _, r := range c.run {
			if r.Job == nil || r.NodeIndex < 0 {
				continue // a hole, or the node left the cluster: its lease will end
			}
			r.NodeIndex += base
			snap.Running = append(snap.Running, r)
		}
		if c.cordoned {
			snap.Nodes = append(snap.Nodes, cordonedNodes(c.snap)...)
		} else {
			snap.Nodes = append(snap.Nodes, c.snap...)
		}
	}
	qnames := make([]string, 0, len(s.queues))
	for name := range s.queues {
		qnames = append(qnames, name)
	}
	slices.Sort(qnames)
	for _, name := range qnames {
		snap.Queues = append(snap.Queues, s.queues[name])
	}
	s.snapshotTree(snap, last)
	return snap
}

// snapshotTree adds the queue tree to snap: the groups, by name, and the
// usage memory the last cycle left (Result.Usage) for the queues that
// exist. The definitions are shared, not copied: the service replaces a
// definition on change, never modifies it.
func (s *state) snapshotTree(snap *scheduler.Snapshot, last *poolCycle) {
	if len(s.groups) > 0 {
		snap.Groups = make([]*flotilla.QueueGroup, 0, len(s.groups))
		for _, name := range slices.Sorted(maps.Keys(s.groups)) {
			snap.Groups = append(snap.Groups, s.groups[name])
		}
	}
	u := last.usage
	for name := range u.Usage {
		if _, ok := s.queues[name]; !ok { // a queue deleted since: its memory goes
			kept := make(map[string]float64, len(u.Usage))
			for name, x := range u.Usage {
				if _, ok := s.queues[name]; ok {
					kept[name] = x
				}
			}
			u.Usage = kept
			break
		}
	}
	snap.Usage = u
}

// decisionChunk is how many leases, or preemptions, one write of a
// cycle's decision holds at most (a gang's leases are never split, so a
// chunk may hold a gang more).
const decisionChunk = 1000

// decisionWriter writes a cycle's decision (res) as events, a chunk at a
// time, each chunk one write made from the state as it is then: the
// preemptions first, so that executors hear of their kill orders no later
// than of the leases they make room for, then the leases, every gang's in
// one chunk. A job whose state changed since the cycle's snapshot is
// skipped (with the rest of its gang). A chunk that fails stops the
// writer: the chunks before it are stored, as if the cycle had decided
// less.
type decisionWriter struct {
	res *scheduler.Result
	rep *CycleReport
	// preempted and scheduled count the entries of res.Preempted and
	// res.Scheduled written so far.
	preempted, scheduled int
	// skipped are the jobs of res.Scheduled whose lease was not written
	// (PoolResult.Skipped).
	skipped []string
}

// next writes the decision's next chunk and reports whether any remain.
// The caller holds mu.
func (d *decisionWriter) next(ctx context.Context, s *state) (more bool, err error) {
	res, now := d.res, d.rep.Time
	var w *backend.Write
	switch {
	case d.preempted < len(res.Preempted):
		end := min(d.preempted+decisionChunk, len(res.Preempted))
		w = d.preemptions(s, res.Preempted[d.preempted:end])
		d.preempted = end
	case d.scheduled < len(res.Scheduled):
		end := chunkEnd(res.Scheduled, d.scheduled)
		w = d.leases(s, res.Scheduled[d.scheduled:end])
		d.scheduled = end
	default:
		return false, nil
	}
	s.followGangs(w, now)
	if _, err := s.commit(ctx, w); err != nil {
		return false, err
	}
	return d.preempted < len(res.Preempted) || d.scheduled < len(res.Scheduled), nil
}

// chunkEnd is where the chunk of leases that starts at as[from] ends:
// decisionChunk further on, or after it at the end of the gang the last
// lease belongs to (the scheduler lists a gang's members together).
func chunkEnd(as []scheduler.Assignment, from int) int {
	end := min(from+decisionChunk, len(as))
	for end < len(as) && as[end-1].Job.IsGang() && as[end].Job.IsGang() && gangKey(as[end-1].Job) == gangKey(as[end].Job) {
		end++
	}
	return end
}

// leases is the write of leases for as, skipping jobs whose state changed
// while the cycle ran (and the rest of their gang).
func (d *decisionWriter) leases(s *state, as []scheduler.Assignment) *backend.Write {
	now := d.rep.Time
	w := &backend.Write{Events: make([]events.Event, 0, len(as))}
	var skipGang map[string]bool
	type lease struct {
		j   *job
		ref nodeRef
	}
	leases := make([]lease, 0, len(as))
	hashes := s.jobs.hashes(s.scratch.hashes, len(as), func(i int) string { return as[i].Job.ID })
	s.scratch.hashes = hashes[:0]
	for i, a := range as {
		j := s.jobs.getHashed(a.Job.ID, hashes[i])
		ref, ok := s.nodes[a.Node]
		if j == nil || j.state != events.Queued || !ok {
			if a.Job.IsGang() {
				if skipGang == nil {
					skipGang = map[string]bool{}
				}
				skipGang[gangKey(a.Job)] = true
			}
			d.skipped = append(d.skipped, a.Job.ID)
			continue
		}
		leases = append(leases, lease{j, ref})
	}
	for _, l := range leases {
		sj := l.j.spec
		if sj.IsGang() && skipGang[gangKey(sj)] {
			d.skipped = append(d.skipped, sj.ID)
			continue
		}
		w.Events = append(w.Events, events.Event{Time: now, Queue: sj.Queue, JobSet: sj.JobSet, Job: sj.ID,
			Type: events.Leased, Cluster: l.ref.cluster.name, Node: l.ref.node, Attempt: int(l.j.attempts) + 1})
		d.rep.Leased++
	}
	return w
}

// preemptions is the write of the preemptions ps, skipping jobs that are
// no longer live.
func (d *decisionWriter) preemptions(s *state, ps []scheduler.Preemption) *backend.Write {
	w := &backend.Write{Events: make([]events.Event, 0, len(ps))}
	for _, p := range ps {
		j := s.jobs.get(p.Job.ID)
		if j == nil || !j.state.Live() {
			continue
		}
		sj := j.spec
		w.Events = append(w.Events, events.Event{Time: d.rep.Time, Queue: sj.Queue, JobSet: sj.JobSet, Job: sj.ID,
			Type: events.Preempted, Cluster: j.lease.cluster.name, Node: j.lease.node, Attempt: int(j.attempts),
			Reason: preemptionReason(&p), Requeued: s.cfg.RequeuePreempted && !j.cancelRequested})
		d.rep.Preempted++
	}
	return w
}

// preemptionReason is the preempted event's sentence.
func preemptionReason(p *scheduler.Preemption) string {
	var r string
	switch p.Reason {
	case scheduler.PreemptedForFairShare:
		r = fmt.Sprintf("preempted to fair share: queue %s held share %.3f above its fair share %.3f", p.Job.Queue, p.Share, p.FairShare)
	default:
		r = "preempted for a job of higher priority"
	}
	if p.For != nil {
		r += fmt.Sprintf(", for job %s of queue %s", p.For.ID, p.For.Queue)
	}
	return r
}

// lastCycle is what the last cycle left: per pool, the state the
// scheduler carries from one cycle to the next, and what Status, Detail
// and Queue say of it.
type lastCycle struct {
	// pools are each pool's, by name.
	pools map[string]*poolCycle
	// cycles counts the cycles decided (cycle n uses Config.Seed + n).
	cycles uint64
	// running is set from a cycle's start until its decision is written:
	// another cycle then gets ErrCycleRunning.
	running bool
}

// pool returns what the pool's last cycle left (zero before its first).
func (l *lastCycle) pool(name string) *poolCycle {
	p := l.pools[name]
	if p == nil {
		if l.pools == nil {
			l.pools = make(map[string]*poolCycle)
		}
		p = &poolCycle{}
		l.pools[name] = p
	}
	return p
}

// poolCycle is what one pool's last cycle left.
type poolCycle struct {
	rate scheduler.RateLimitState
	prio scheduler.QueuePriorityState
	// usage is the queue tree's usage memory (Result.Usage), for the next
	// snapshot; the last one a cycle produced, or the one restored from
	// the backend.
	usage scheduler.UsageState
	// waiting explains, per queue and scheduling key, why the last cycle
	// left jobs queued; notReached per queue why it did not reach some.
	waiting    map[waitKey]scheduler.Reason
	notReached map[string]scheduler.QueueRemainder
	shares     map[string]scheduler.QueueReport
	groups     map[string]scheduler.GroupReport
}

type waitKey struct {
	queue string
	key   uint64
}

// remember keeps what the next cycle and Status need of a cycle's result.
func (l *poolCycle) remember(res *scheduler.Result) {
	l.rate, l.prio = res.RateLimits, res.QueuePriorities
	if res.Usage.Usage != nil || !res.Usage.Time.IsZero() {
		l.usage = res.Usage
	}
	l.waiting = make(map[waitKey]scheduler.Reason, len(res.Unscheduled))
	for _, g := range res.Unscheduled {
		k := waitKey{g.Queue, g.Key}
		if _, ok := l.waiting[k]; !ok {
			l.waiting[k] = g.Reason
		}
	}
	l.notReached = make(map[string]scheduler.QueueRemainder, len(res.NotExamined))
	for _, r := range res.NotExamined {
		l.notReached[r.Queue] = r
	}
	l.shares = make(map[string]scheduler.QueueReport, len(res.Queues))
	for _, q := range res.Queues {
		l.shares[q.Name] = q
	}
	l.groups = make(map[string]scheduler.GroupReport, len(res.Groups))
	for _, g := range res.Groups {
		l.groups[g.Name] = g
	}
}
