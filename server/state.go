package server

import (
	"iter"
	"slices"
	"strings"
	"time"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/backend"
	"github.com/flotilla-sched/flotilla/events"
)

// job is a non-terminal job as the service keeps it in memory: its spec
// and a compact copy of its state (the backend holds the full record).
// A queued job takes 80 bytes here; what only a live lease needs is in
// lease, allocated when the job is leased.
type job struct {
	spec backend.JobSpec
	// sched is the job the scheduler sees: spec.Job, or a copy of it with
	// AvoidClusters set to the clusters where a lease expired or was
	// returned (failed).
	sched *flotilla.Job
	// lease is the live lease; nil when the job is queued.
	lease    *lease
	attempts int32
	state    events.State
	// cancelRequested: a live job was asked to stop.
	cancelRequested bool
}

// lease is a job's live lease.
type lease struct {
	cluster *cluster
	node    string
	leased  time.Time // the lease's start
	renewed time.Time // its last renewal (in memory only)
	// pos is the job's index in cluster.live; nodeIdx the node's in
	// cluster.nodes, -1 when the cluster no longer reports the node.
	pos, nodeIdx int32
	// listedIn and listedAt say which report listed the job last
	// (Server.reports) and at which index, so that a report finds the
	// jobs it lists twice and the leases it does not list without maps.
	listedAt int32
	listedIn uint64
}

func newJob(spec backend.JobSpec) *job {
	return &job{spec: spec, sched: spec.Job}
}

func (j *job) id() string { return j.spec.Job.ID }

// failed lists the clusters where a lease of the job expired or was
// returned.
func (j *job) failed() []string { return j.sched.AvoidClusters }

// gangKey names a gang within its queue.
func gangKey(j *flotilla.Job) string { return j.Queue + "\x00" + j.Gang.ID }

// restore enters a job loaded from the backend into the state: queued jobs
// into the store, live ones onto their cluster with a lease renewed now.
func (j *job) restore(s *Server, st events.Job, now time.Time) {
	j.state, j.attempts, j.cancelRequested = st.State, int32(st.Attempts), st.CancelRequested
	j.setFailed(slices.Clone(st.FailedClusters))
	s.jobs.put(j)
	if j.spec.Job.IsGang() {
		s.addGangMember(j)
	}
	switch {
	case st.State == events.Queued:
		s.storeAdd(j.sched)
	case st.State.Live():
		s.cluster(st.Cluster).addLive(j, st.Node, st.Leased, now, s.cfg.LeaseTimeout)
	}
}

// setFailed records the clusters where the job failed and makes the
// scheduler avoid them. The job keeps the priority it was last given
// (flux re-prioritisation).
func (j *job) setFailed(failed []string) {
	if len(failed) == 0 && j.sched.Priority == j.spec.Job.Priority {
		j.sched = j.spec.Job
		return
	}
	c := *j.spec.Job
	c.Priority = j.sched.Priority
	if len(failed) > 0 {
		c.AvoidClusters = failed
	}
	j.sched = &c
}

// apply changes the in-memory state by one stored event. The backend has
// checked the transition; specs holds the jobs of the write, for submitted
// events. The caller holds mu.
func (s *Server) apply(e *events.Event, specs *writeSpecs) {
	if e.Type == events.Submitted {
		sp := specs.spec(e.Job)
		if sp == nil {
			return
		}
		j := specs.newJob(sp)
		j.state = events.Queued
		s.jobs.put(j)
		if sp.Job.IsGang() {
			s.addGangMember(j)
		}
		s.storeAdd(j.sched)
		return
	}
	j := s.jobs.get(e.Job)
	if j == nil {
		return
	}
	s.accrue(j, e)
	switch e.Type {
	case events.Leased:
		s.storeRemove(e.Job)
		j.state, j.attempts = events.LeasedState, int32(e.Attempt)
		s.cluster(e.Cluster).addLive(j, e.Node, e.Time, e.Time, s.cfg.LeaseTimeout)
	case events.Running:
		j.state = events.RunningState
	case events.CancelRequested:
		j.cancelRequested = true
	case events.LeaseExpired, events.LeaseReturned:
		if l := j.lease; l != nil && !slices.Contains(j.failed(), l.cluster.name) {
			j.setFailed(append(slices.Clip(j.failed()), l.cluster.name))
		}
		s.endLease(j, e.Requeued)
	case events.Preempted:
		s.endLease(j, e.Requeued)
	case events.Succeeded, events.Failed, events.Cancelled:
		if j.state == events.Queued {
			s.storeRemove(e.Job)
		}
		s.endLease(j, false)
	}
}

// endLease takes a job off its cluster (if live) and either queues it
// again or forgets it (terminal).
func (s *Server) endLease(j *job, requeue bool) {
	if j.lease != nil {
		j.lease.cluster.removeLive(j)
	}
	j.cancelRequested = false
	if requeue {
		j.state = events.Queued
		s.storeAdd(j.sched)
		return
	}
	j.state = events.FailedState // any terminal state: the job is forgotten
	s.jobs.del(j.id())
	if j.spec.Job.IsGang() {
		s.removeGangMember(j)
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
	// live are the jobs leased to the cluster, each at its lease's pos;
	// nil where a lease ended (holes counts them). live[:sorted] is in
	// job id order, holes aside; sortLive sorts the rest in.
	live          []*job
	holes, sorted int
	spare         []*job // sortLive's buffer
	// ids hold the ids of live[:sorted] at the same places ("" at the
	// holes): a report matches its jobs, listed in id order, against them
	// in one pass over dense memory (planReport). Past sorted they are not
	// kept. spareIDs is sortLive's buffer for them.
	ids, spareIDs []string
	// nextDue, when dueKnown, is no later than the time the first live
	// lease falls due (expires or passes its job's deadline): until then
	// a cycle need not look at the cluster's leases. Renewals only delay
	// due times, so it stays a bound; addLive lowers it.
	nextDue  time.Time
	dueKnown bool
}

// nodeRef resolves a snapshot node name.
type nodeRef struct {
	cluster *cluster
	node    string
}

// cluster returns the named cluster, creating it (with no nodes, never
// reported) when it is new.
func (s *Server) cluster(name string) *cluster {
	c := s.clusters[name]
	if c == nil {
		c = &cluster{name: name, index: map[string]int{}}
		s.clusters[name] = c
	}
	return c
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
	j.lease = &lease{cluster: c, node: node, leased: leased, renewed: renewed, pos: int32(len(c.live)), nodeIdx: int32(idx)}
	c.live = append(c.live, j)
	c.ids = append(c.ids, "") // set when sortLive sorts it in
	if due := j.due(timeout); c.dueKnown && due.Before(c.nextDue) {
		c.nextDue = due
	}
}

// due is when j's live lease falls due: it expires unless renewed, or its
// job passes its active deadline.
func (j *job) due(timeout time.Duration) time.Time {
	due := j.lease.renewed.Add(timeout)
	if d := j.spec.ActiveDeadline; d > 0 {
		if dl := j.lease.leased.Add(d); dl.Before(due) {
			return dl
		}
	}
	return due
}

// removeLive ends j's lease on the cluster.
func (c *cluster) removeLive(j *job) {
	c.live[j.lease.pos] = nil
	c.ids[j.lease.pos] = ""
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
		}
		j.lease.pos = int32(n)
		c.live[n], c.ids[n] = j, c.ids[i]
		n++
	}
	clear(c.live[n:])
	clear(c.ids[n:])
	c.live, c.ids, c.holes, c.sorted = c.live[:n], c.ids[:n], 0, sorted
}

// sortLive orders live by job id — it closes the holes, sorts the jobs
// leased since the last sortLive and merges them in, in O(n + k log k)
// for k new leases — and calls emit (unless nil) with each live job in
// that order, in the same pass.
func (c *cluster) sortLive(emit func(*job)) {
	if c.holes == 0 && c.sorted == len(c.live) {
		if emit != nil {
			for _, j := range c.live {
				emit(j)
			}
		}
		return
	}
	byID := func(a, b *job) int { return strings.Compare(a.id(), b.id()) }
	head, ids, tail := c.live[:c.sorted], c.ids[:c.sorted], c.live[c.sorted:]
	tail = slices.DeleteFunc(tail, func(j *job) bool { return j == nil })
	slices.SortFunc(tail, byID)
	out := slices.Grow(c.spare[:0], len(head)+len(tail))
	outIDs := slices.Grow(c.spareIDs[:0], len(head)+len(tail))
	for len(head) > 0 || len(tail) > 0 {
		var j *job
		var id string
		switch {
		case len(head) > 0 && head[0] == nil:
			head, ids = head[1:], ids[1:]
			continue
		case len(head) == 0 || len(tail) > 0 && tail[0].id() < ids[0]:
			j, id, tail = tail[0], tail[0].id(), tail[1:]
		default:
			j, id, head, ids = head[0], ids[0], head[1:], ids[1:]
		}
		j.lease.pos = int32(len(out))
		out = append(out, j)
		outIDs = append(outIDs, id)
		if emit != nil {
			emit(j)
		}
	}
	clear(c.live[:cap(c.live)])
	clear(c.ids[:cap(c.ids)])
	c.live, c.spare = out, c.live[:0]
	c.ids, c.spareIDs = outIDs, c.ids[:0]
	c.sorted, c.holes = len(c.live), 0
}

// snapName is a node's name in the cycles' snapshots.
func snapName(cluster, node string) string { return cluster + "/" + node }

// setNodes replaces the cluster's nodes (already validated).
func (c *cluster) setNodes(s *Server, nodes []flotilla.Node) {
	for _, n := range c.snap {
		delete(s.nodes, n.Name)
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
		s.nodes[n.Name] = nodeRef{cluster: c, node: nodes[i].Name}
	}
	for j := range c.jobs() {
		idx, ok := c.index[j.lease.node]
		if !ok {
			idx = -1
		}
		j.lease.nodeIdx = int32(idx)
	}
}

// alive reports whether the cluster takes part in scheduling at now: it
// has reported within the lease timeout.
func (c *cluster) alive(now time.Time, timeout time.Duration) bool {
	return !c.reported.IsZero() && now.Sub(c.reported) < timeout
}
