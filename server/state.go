package server

import (
	"iter"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/backend"
	"github.com/flotilla-sched/flotilla/events"
	"github.com/flotilla-sched/flotilla/scheduler"
)

// job is a non-terminal job as the service keeps it in memory: its spec
// and a compact copy of its state (the backend holds the full record).
// A queued job takes 40 bytes here besides its Job; what only a live
// lease needs is in lease, allocated when the job is leased.
type job struct {
	// spec is the job as submitted (its write's backend.JobSpec.Job);
	// read-only.
	spec *flotilla.Job
	// run is the rest of its spec that the service reads, which the jobs
	// of a template share.
	run *runSpec
	// own is the job the scheduler sees when it is not spec.Job (nil): a
	// copy of it with AvoidClusters set to the clusters where a lease
	// expired or was returned (failed), or with the priority flux gave
	// it. (Nil in the common case, it is no pointer for the collector to
	// follow.)
	own *flotilla.Job
	// lease is the live lease; nil when the job is queued.
	lease    *lease
	attempts int32
	state    events.State
	// cancelRequested: a live job was asked to stop.
	cancelRequested bool
	// reprioritized: an operator gave the job its priority (a
	// reprioritized event); flux re-prioritisation leaves it.
	reprioritized bool
}

// lease is a job's live lease. What a report reads and writes of it is
// its cluster's (cluster.marks).
type lease struct {
	cluster *cluster
	node    string
	leased  time.Time // the lease's start
	// pos is the job's index in cluster.live while the job is in its
	// unsorted tail (!sorted); once sortLive sorts it in, its place is
	// found by its id (cluster.place), so that sorting and compacting
	// need not visit every job to update it. nodeIdx is the node's index
	// in cluster.nodes, -1 when the cluster no longer reports the node.
	pos, nodeIdx int32
	// ran is when the job began running (its running event): 1 + the
	// milliseconds from the lease's start (clamped), 0 before it ran;
	// after a restart, 1 (the lease's start). It fits the struct's
	// padding: a lease takes no more memory for it.
	ran    uint32
	sorted bool
}

// started is when the lease's job began running, and whether it has.
func (l *lease) started() (time.Time, bool) {
	if l.ran == 0 {
		return time.Time{}, false
	}
	return l.leased.Add(time.Duration(l.ran-1) * time.Millisecond), true
}

// setStarted records that the lease's job began running at t.
func (l *lease) setStarted(t time.Time) {
	ms := max(t.Sub(l.leased).Milliseconds(), 0)
	l.ran = uint32(min(ms, math.MaxUint32-1)) + 1
}

// leaseMark is what the executors' reports read and write of a live
// lease, kept at the lease's place in its cluster's live list
// (cluster.marks) so that a report's passes over the cluster's leases
// read and write dense memory, not one lease after another scattered over
// the heap.
type leaseMark struct {
	// renewed is the lease's last renewal (in memory only).
	renewed time.Time
	// listedIn and listedAt say which report listed the job last
	// (state.reports) and at which index, so that a report finds the
	// jobs it lists twice and the leases it does not list without maps.
	listedIn uint64
	listedAt int32
}

// runSpec is what the service reads of a job's backend.JobSpec besides
// its Job: the settled grace period and deadline, the fake executor's
// runtime and exit code, and who submitted it. The service keeps no
// JobSpec (nor the client id, which only the backend reads again).
type runSpec struct {
	principal                string
	grace, deadline, runtime time.Duration
	exitCode                 int
	// pools are the pools the job accepts (joinPools; "" for every
	// pool).
	pools string
}

func runSpecOf(sp *backend.JobSpec) runSpec {
	return runSpec{principal: sp.Principal, grace: sp.TerminationGracePeriod, deadline: sp.ActiveDeadline,
		runtime: sp.Runtime, exitCode: sp.ExitCode, pools: joinPools(sp.Pools)}
}

// newJob returns a job of a spec, in one allocation with its own
// runSpec.
func newJob(spec backend.JobSpec) *job {
	x := &struct {
		job
		run runSpec
	}{run: runSpecOf(&spec)}
	x.job.spec, x.job.run = spec.Job, &x.run
	return &x.job
}

func (j *job) id() string { return j.spec.ID }

// sched is the job the scheduler sees: spec.Job, or own.
func (j *job) sched() *flotilla.Job {
	if j.own != nil {
		return j.own
	}
	return j.spec
}

// failed lists the clusters where a lease of the job expired or was
// returned.
func (j *job) failed() []string { return j.sched().AvoidClusters }

// gangKey names a gang within its queue.
func gangKey(j *flotilla.Job) string { return j.Queue + "\x00" + j.Gang.ID }

// restore enters a job loaded from the backend into the state: queued jobs
// into the store, live ones onto their cluster with a lease renewed now.
func (j *job) restore(s *state, st events.Job, now time.Time) {
	j.state, j.attempts, j.cancelRequested = st.State, int32(st.Attempts), st.CancelRequested
	j.setAvoid(slices.Clone(st.FailedClusters), slices.Clone(st.AvoidNodes))
	s.restoreRetries(j, &st)
	if st.Reprioritized {
		j.withPriority(st.Priority) // before it joins its queue
	}
	s.jobs.put(j)
	if j.spec.IsGang() {
		s.gangs.add(j)
	}
	switch {
	case st.State == events.Queued:
		s.queued.add(j)
	case st.State.Live():
		s.clusters.get(st.Cluster).addLive(j, st.Node, st.Leased, now, s.cfg.LeaseTimeout)
		if st.State == events.RunningState {
			j.lease.ran = 1
		}
	}
}

// setFailed records the clusters where the job failed and makes the
// scheduler avoid them, keeping the nodes it avoids.
func (j *job) setFailed(failed []string) { j.setAvoid(failed, j.sched().AvoidNodes) }

// setAvoid records the clusters where the job's lease failed and the nodes
// where its run failed under a rule that avoids them (events.Job's
// FailedClusters and AvoidNodes), and makes the scheduler avoid them. The
// job keeps the priority it was last given (flux re-prioritisation).
func (j *job) setAvoid(failed, nodes []string) {
	if len(failed) == 0 && len(nodes) == 0 && j.sched().Priority == j.spec.Priority {
		j.own = nil
		return
	}
	c := *j.spec
	c.Priority = j.sched().Priority
	if len(failed) > 0 {
		c.AvoidClusters = failed
	}
	if len(nodes) > 0 {
		c.AvoidNodes = nodes
	}
	j.own = &c
}

// apply changes the in-memory state by one stored event. The backend has
// checked the transition; specs holds the jobs of the write, for submitted
// events. The caller holds mu.
func (s *state) apply(e *events.Event, specs *writeSpecs) {
	if e.Type == events.Submitted {
		sp, i := specs.spec(e.Job)
		if sp == nil {
			return
		}
		j := specs.newJob(sp)
		j.state = events.Queued
		s.jobs.putHashed(j, specs.hashes[i])
		s.ui.added(j)
		if sp.Job.IsGang() {
			s.gangs.add(j)
		}
		if j.run.pools != "" && s.queued.batches() {
			s.queued.split(s.poolNames(), &s.jobs)
		}
		if specs.batch && j.run.pools == "" && s.queued.batches() {
			specs.queued = append(specs.queued, j.sched())
		} else {
			s.queued.add(j)
		}
		return
	}
	j := s.jobs.get(e.Job)
	if j == nil {
		return
	}
	s.usage.accrue(j, e)
	switch e.Type {
	case events.Leased:
		s.queued.remove(j)
		j.state, j.attempts = events.LeasedState, int32(e.Attempt)
		s.clusters.get(e.Cluster).addLive(j, e.Node, e.Time, e.Time, s.cfg.LeaseTimeout)
	case events.Running:
		j.state = events.RunningState
		if j.lease != nil {
			j.lease.setStarted(e.Time)
		}
	case events.CancelRequested:
		j.cancelRequested = true
	case events.Reprioritized:
		s.setPriority(j, e.Priority)
	case events.LeaseExpired, events.LeaseReturned:
		s.noteRetry(j, e)
		if l := j.lease; l != nil && !slices.Contains(j.failed(), l.cluster.name) {
			j.setFailed(append(slices.Clip(j.failed()), l.cluster.name))
		}
		s.endLease(j, e.Requeued)
	case events.RunFailed:
		s.noteRetry(j, e)
		s.endLease(j, true)
	case events.Preempted:
		s.losses.add(j, e.Time)
		s.noteRetry(j, e)
		s.endLease(j, e.Requeued)
	case events.Succeeded, events.Failed, events.Cancelled:
		if j.state == events.Queued {
			s.queued.remove(j)
		}
		s.endLease(j, false)
	}
}

// endLease takes a job off its cluster (if live) and either queues it
// again or forgets it (terminal).
func (s *state) endLease(j *job, requeue bool) {
	if j.lease != nil {
		j.lease.cluster.removeLive(j)
	}
	j.cancelRequested = false
	if requeue {
		j.state = events.Queued
		s.queued.add(j)
		return
	}
	j.state = events.FailedState // any terminal state: the job is forgotten
	s.forgetRetries(j)
	s.jobs.del(j.id())
	s.ui.ended(j)
	if j.spec.IsGang() {
		s.gangs.remove(j)
	}
}

// cluster is one executor's cluster.
type cluster struct {
	name string
	// nodes are as last reported; snap are the same nodes named
	// cluster/node for the cycles' snapshots (the scheduler needs names
	// unique across clusters).
	nodes []flotilla.Node
	snap  []*flotilla.Node
	// index maps a reported node name to its position in nodes.
	index map[string]int
	// reported is when the executor last reported (in memory only).
	reported time.Time
	// live are the jobs leased to the cluster; nil where a lease ended
	// (holes counts them). live[:sorted] is in job id order, holes
	// aside; sortLive sorts the rest in.
	live          []*job
	holes, sorted int
	spare         []*job // sortLive's buffer
	// ids hold the ids of live[:sorted] at the same places, a hole
	// keeping the id of the job that left it (so ids[:sorted] stays
	// sorted, for place): a report matches its jobs, listed in id order,
	// against them in one pass over dense memory (reportPlan.plan). Past
	// sorted they are "". spareIDs is sortLive's buffer for them.
	ids, spareIDs []string
	// run holds the snapshot entry of each live[i] at run[i] (zero at the
	// holes; NodeIndex is the node's index in nodes, -1 when the cluster
	// no longer reports it). It follows every lease that comes and goes,
	// so that a cycle's snapshot copies dense memory rather than visiting
	// every running job. spareRun is sortLive's buffer.
	run, spareRun []scheduler.Running
	// marks hold each live lease's leaseMark at its place in live (zero
	// at the holes); spareMarks is sortLive's buffer.
	marks, spareMarks []leaseMark
	// nextDue, when dueKnown, is no later than the time the first live
	// lease falls due (expires or passes its job's deadline): until then
	// a cycle need not look at the cluster's leases. Renewals only delay
	// due times, so it stays a bound; addLive lowers it.
	nextDue  time.Time
	dueKnown bool
	// cordoned: an operator cordoned the cluster; it gets no new lease.
	cordoned bool
	// pool is the cluster's pool (backend.DefaultPool when its executor
	// names none).
	pool string
}

// nodeRef resolves a snapshot node name.
type nodeRef struct {
	cluster *cluster
	node    string
}

// clusterMap holds the executors' clusters by name.
type clusterMap map[string]*cluster

// get returns the named cluster, creating it (with no nodes, never
// reported) when it is new.
func (m clusterMap) get(name string) *cluster {
	c := m[name]
	if c == nil {
		c = &cluster{name: name, index: map[string]int{}, pool: backend.DefaultPool}
		m[name] = c
	}
	return c
}

// liveJobs returns the jobs holding a lease.
func (m clusterMap) liveJobs() []*job {
	var out []*job
	for _, c := range m {
		for j := range c.jobs() {
			out = append(out, j)
		}
	}
	return out
}

// liveCounts counts leased and running jobs per queue, over the clusters'
// live jobs (bounded by what the clusters hold, not by the backlog).
func (m clusterMap) liveCounts() map[string][2]int {
	counts := make(map[string][2]int)
	for _, c := range m {
		for j := range c.jobs() {
			n := counts[j.spec.Queue]
			if j.state == events.RunningState {
				n[1]++
			} else {
				n[0]++
			}
			counts[j.spec.Queue] = n
		}
	}
	return counts
}

// jobs yields the cluster's live jobs.
func (c *cluster) jobs() iter.Seq[*job] {
	return func(yield func(*job) bool) {
		for _, j := range c.live {
			if j != nil && !yield(j) {
				return
			}
		}
	}
}

// addLive gives j a live lease on node of the cluster; timeout is the
// lease timeout.
func (c *cluster) addLive(j *job, node string, leased, renewed time.Time, timeout time.Duration) {
	idx, ok := c.index[node]
	if !ok {
		idx = -1
	}
	j.lease = &lease{cluster: c, node: node, leased: leased, pos: int32(len(c.live)), nodeIdx: int32(idx)}
	c.live = append(c.live, j)
	c.ids = append(c.ids, "") // set when sortLive sorts it in
	c.run = append(c.run, c.runOf(j))
	c.marks = append(c.marks, leaseMark{renewed: renewed})
	if due := j.due(renewed, timeout); c.dueKnown && due.Before(c.nextDue) {
		c.nextDue = due
	}
}

// mark returns live job j's leaseMark.
func (c *cluster) mark(j *job) *leaseMark { return &c.marks[c.place(j)] }

// due is when j's live lease, last renewed at renewed, falls due: it
// expires unless renewed, or its job passes its active deadline.
func (j *job) due(renewed time.Time, timeout time.Duration) time.Time {
	due := renewed.Add(timeout)
	if d := j.run.deadline; d > 0 {
		if dl := j.lease.leased.Add(d); dl.Before(due) {
			return dl
		}
	}
	return due
}

// runOf is the snapshot entry of live job j (whose lease's node index is
// set).
func (c *cluster) runOf(j *job) scheduler.Running {
	l := j.lease
	r := scheduler.Running{Job: j.sched(), NodeIndex: int(l.nodeIdx), Start: l.leased}
	if l.nodeIdx >= 0 {
		r.Node = c.snap[l.nodeIdx].Name
	}
	return r
}

// place returns live job j's index in live.
func (c *cluster) place(j *job) int {
	if !j.lease.sorted {
		return int(j.lease.pos)
	}
	if p, ok := slices.BinarySearch(c.ids[:c.sorted], j.id()); ok && c.live[p] == j {
		return p
	}
	return slices.Index(c.live, j) // not reached: sorted ids are distinct
}

// removeLive ends j's lease on the cluster.
func (c *cluster) removeLive(j *job) {
	p := c.place(j)
	c.run[p] = scheduler.Running{}
	c.marks[p] = leaseMark{}
	c.live[p] = nil
	c.holes++
	j.lease = nil
	if c.holes > 64 && c.holes > len(c.live)/2 {
		c.compact()
	}
}

// compact closes the holes of live, keeping its order.
func (c *cluster) compact() {
	if c.holes == 0 {
		return
	}
	n, sorted := 0, 0
	for i, j := range c.live {
		if j == nil {
			continue
		}
		if i < c.sorted {
			sorted++
		} else {
			j.lease.pos = int32(n)
		}
		c.live[n], c.ids[n], c.run[n], c.marks[n] = j, c.ids[i], c.run[i], c.marks[i]
		n++
	}
	clear(c.live[n:])
	clear(c.ids[n:])
	clear(c.run[n:])
	clear(c.marks[n:])
	c.live, c.ids, c.run, c.marks, c.holes, c.sorted = c.live[:n], c.ids[:n], c.run[:n], c.marks[:n], 0, sorted
}

// sortLive orders live by job id — it closes the holes, sorts the jobs
// leased since the last sortLive and merges them in, in O(n + k log k)
// for k new leases.
func (c *cluster) sortLive() {
	if c.holes == 0 && c.sorted == len(c.live) {
		return
	}
	byID := func(a, b *job) int { return strings.Compare(a.id(), b.id()) }
	head, tail := c.live[:c.sorted], c.live[c.sorted:]
	tail = slices.DeleteFunc(tail, func(j *job) bool { return j == nil })
	slices.SortFunc(tail, byID)
	out := slices.Grow(c.spare[:0], len(head)+len(tail))
	outIDs := slices.Grow(c.spareIDs[:0], len(head)+len(tail))
	outRun := slices.Grow(c.spareRun[:0], len(head)+len(tail))
	outMarks := slices.Grow(c.spareMarks[:0], len(head)+len(tail))
	// A sorted job keeps no position (place finds it), so the merge
	// reads and writes dense memory only, but for the new jobs.
	h, t := 0, 0
	for h < len(head) || t < len(tail) {
		var j *job
		if h < len(head) && head[h] == nil {
			h++
			continue
		}
		if h == len(head) || t < len(tail) && tail[t].id() < c.ids[h] {
			j = tail[t]
			t++
			l := j.lease
			outIDs = append(outIDs, j.id())
			outRun = append(outRun, c.run[l.pos]) // c.run is still the old order
			outMarks = append(outMarks, c.marks[l.pos])
			l.sorted = true
		} else {
			j = head[h]
			outIDs = append(outIDs, c.ids[h])
			outRun = append(outRun, c.run[h])
			outMarks = append(outMarks, c.marks[h])
			h++
		}
		out = append(out, j)
	}
	clear(c.live[:cap(c.live)])
	clear(c.ids[:cap(c.ids)])
	c.live, c.spare = out, c.live[:0]
	c.ids, c.spareIDs = outIDs, c.ids[:0]
	clear(c.run[:cap(c.run)])
	c.run, c.spareRun = outRun, c.run[:0]
	clear(c.marks[:cap(c.marks)])
	c.marks, c.spareMarks = outMarks, c.marks[:0]
	c.sorted, c.holes = len(c.live), 0
}

// snapName is a node's name in the cycles' snapshots.
func snapName(cluster, node string) string { return events.NodeName(cluster, node) }

// setNodes replaces the cluster's nodes (already validated), and their
// entries in byName, the snapshot's node names.
func (c *cluster) setNodes(byName map[string]nodeRef, nodes []flotilla.Node) {
	for _, n := range c.snap {
		delete(byName, n.Name)
	}
	c.nodes = nodes
	c.snap = make([]*flotilla.Node, len(nodes))
	clear(c.index)
	for i := range nodes {
		n := nodes[i]
		n.Name = snapName(c.name, nodes[i].Name)
		n.Cluster = c.name
		c.snap[i] = &n
		c.index[nodes[i].Name] = i
		byName[n.Name] = nodeRef{cluster: c, node: nodes[i].Name}
	}
	for i, j := range c.live {
		if j == nil {
			continue
		}
		idx, ok := c.index[j.lease.node]
		if !ok {
			idx = -1
		}
		j.lease.nodeIdx = int32(idx)
		c.run[i] = c.runOf(j)
	}
}

// alive reports whether the cluster takes part in scheduling at now: it
// has reported within the lease timeout.
func (c *cluster) alive(now time.Time, timeout time.Duration) bool {
	return !c.reported.IsZero() && now.Sub(c.reported) < timeout
}
