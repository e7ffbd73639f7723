package server

import (
	"slices"
	"time"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/backend"
	"github.com/flotilla-sched/flotilla/events"
)

// job is a non-terminal job as the service keeps it in memory: its spec
// and a compact copy of its state (the backend holds the full record).
type job struct {
	spec backend.JobSpec
	// sched is the job the scheduler sees: spec.Job, or a copy of it with
	// AvoidClusters set once a lease failed somewhere.
	sched *flotilla.Job
	// failed lists the clusters where a lease expired or was returned.
	failed   []string
	cluster  *cluster // the live lease's, nil when queued
	node     string
	leased   time.Time // the live lease's start
	renewed  time.Time // the live lease's last renewal (in memory only)
	attempts int
	state    events.State
	// cancelRequested: a live job was asked to stop.
	cancelRequested bool
}

func newJob(spec backend.JobSpec) *job {
	return &job{spec: spec, sched: spec.Job}
}

func (j *job) id() string { return j.spec.Job.ID }

// gangKey names a gang within its queue.
func gangKey(j *flotilla.Job) string { return j.Queue + "\x00" + j.Gang.ID }

// restore enters a job loaded from the backend into the state: queued jobs
// into the store, live ones onto their cluster with a lease renewed now.
func (j *job) restore(s *Server, st events.Job, now time.Time) {
	j.state, j.attempts, j.cancelRequested = st.State, st.Attempts, st.CancelRequested
	j.setFailed(slices.Clone(st.FailedClusters))
	s.jobs[j.id()] = j
	if j.spec.Job.IsGang() {
		s.addGangMember(j)
	}
	switch {
	case st.State == events.Queued:
		s.storeAdd(j.sched)
	case st.State.Live():
		j.leased, j.renewed = st.Leased, now
		j.node = st.Node
		s.cluster(st.Cluster).addLive(j)
	}
}

// setFailed records the clusters where the job failed and makes the
// scheduler avoid them. The job keeps the priority it was last given
// (flux re-prioritisation).
func (j *job) setFailed(failed []string) {
	j.failed = failed
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
func (s *Server) apply(e *events.Event, specs map[string]*backend.JobSpec) {
	if e.Type == events.Submitted {
		sp := specs[e.Job]
		if sp == nil {
			return
		}
		j := newJob(*sp)
		j.state = events.Queued
		s.jobs[e.Job] = j
		if sp.Job.IsGang() {
			s.addGangMember(j)
		}
		s.storeAdd(j.sched)
		return
	}
	j := s.jobs[e.Job]
	if j == nil {
		return
	}
	s.accrue(j, e)
	switch e.Type {
	case events.Leased:
		s.storeRemove(e.Job)
		j.state, j.attempts = events.LeasedState, e.Attempt
		j.node, j.leased, j.renewed = e.Node, e.Time, e.Time
		s.cluster(e.Cluster).addLive(j)
	case events.Running:
		j.state = events.RunningState
	case events.CancelRequested:
		j.cancelRequested = true
	case events.LeaseExpired, events.LeaseReturned:
		if c := j.cluster; c != nil && !slices.Contains(j.failed, c.name) {
			j.setFailed(append(slices.Clip(j.failed), c.name))
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
	if j.cluster != nil {
		j.cluster.removeLive(j)
	}
	j.cancelRequested = false
	if requeue {
		j.state = events.Queued
		s.storeAdd(j.sched)
		return
	}
	j.state = events.FailedState // any terminal state: the job is forgotten
	delete(s.jobs, j.id())
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
	// live are the jobs leased to the cluster.
	live map[*job]struct{}
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
		c = &cluster{name: name, index: map[string]int{}, live: map[*job]struct{}{}}
		s.clusters[name] = c
	}
	return c
}

func (c *cluster) addLive(j *job) {
	j.cluster = c
	c.live[j] = struct{}{}
}

func (c *cluster) removeLive(j *job) {
	delete(c.live, j)
	j.cluster, j.node = nil, ""
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
}

// alive reports whether the cluster takes part in scheduling at now: it
// has reported within the lease timeout.
func (c *cluster) alive(now time.Time, timeout time.Duration) bool {
	return !c.reported.IsZero() && now.Sub(c.reported) < timeout
}
