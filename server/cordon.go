package server

import (
	"context"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/backend"
	"github.com/flotilla-sched/flotilla/events"
	"github.com/flotilla-sched/flotilla/queue"
	"github.com/flotilla-sched/flotilla/scheduler"
)

// Cordons (docs/operator-commands.md): a cordoned queue's queued jobs are not leased (its
// running ones go on); a cordoned cluster gets no new lease (its running
// jobs go on, and its executor hears of it in every report's answer).
// Both are stored (backend.Cordons), so that a restart keeps them.

// Cordon cordons (on) or uncordons (!on) a queue or a cluster. The queue
// must exist, the cluster must have reported (else backend.ErrNotFound
// naming it); bad input is a *flotilla.FieldError. Doing what is done
// already is no error. The next cycle honours it.
func (s *Server) Cordon(ctx context.Context, c backend.Cordon, on bool) error {
	if err := c.Check(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.st.cordon(ctx, c, on)
}

// cordon is Cordon under the lock.
func (s *state) cordon(ctx context.Context, c backend.Cordon, on bool) error {
	if err := s.fresh(ctx); err != nil {
		return err
	}
	switch c.Kind {
	case backend.CordonQueue:
		if _, ok := s.queues[c.Name]; !ok {
			return flotilla.Errorf("queue", c.Name, backend.ErrNotFound, "no such queue")
		}
	default:
		if cl, ok := s.clusters[c.Name]; !ok || cl.reported.IsZero() && len(cl.nodes) == 0 {
			return flotilla.Errorf("cluster", c.Name, backend.ErrNotFound, "no such cluster")
		}
	}
	if err := s.be.PutCordon(ctx, c, on); err != nil {
		return err
	}
	s.setCordon(c, on)
	return nil
}

// setCordon records a stored cordon in memory.
func (s *state) setCordon(c backend.Cordon, on bool) {
	if c.Kind == backend.CordonCluster {
		s.clusters.get(c.Name).cordoned = on
		return
	}
	if on {
		s.cordonedQueues[c.Name] = true
	} else {
		delete(s.cordonedQueues, c.Name)
	}
}

// loadCordons reads the stored cordons (load).
func (s *state) loadCordons(ctx context.Context) error {
	cs, err := s.be.ListCordons(ctx)
	if err != nil {
		return err
	}
	s.cordonedQueues = make(map[string]bool)
	for _, c := range cs {
		s.setCordon(c, true)
	}
	return nil
}

// snapshotQueued is the Queued pool's cycle reads: its store, without the
// cordoned queues' jobs, and without the demand of the jobs no node of
// the pool fits (neverfit.go).
func (s *state) snapshotQueued(pool string) scheduler.Queued {
	st := s.queued.of(pool)
	demand := s.queued.fit.demands(pool, st)
	if len(s.cordonedQueues) == 0 && demand == nil {
		return st
	}
	// Copies: the cycle reads them with the lock released.
	return cordonedQueued{Store: st, off: maps.Clone(s.cordonedQueues), demand: demand}
}

// cordonedQueued is a queue.Store whose cordoned queues hold no job for
// the scheduler: they are not listed, count nothing and read empty; and
// whose queues in demand have that demand.
type cordonedQueued struct {
	*queue.Store
	off    map[string]bool
	demand map[string]flotilla.Resources
}

func (q cordonedQueued) Queues() []string {
	return slices.DeleteFunc(q.Store.Queues(), func(name string) bool { return q.off[name] })
}

func (q cordonedQueued) Stats(name string) queue.Stats {
	if q.off[name] {
		return queue.Stats{}
	}
	st := q.Store.Stats(name)
	if d, ok := q.demand[name]; ok && st.Demand != nil {
		st.Demand = d
	}
	return st
}

func (q cordonedQueued) SchedulingKeys(name string, fn func(key uint64, count int) bool) {
	if !q.off[name] {
		q.Store.SchedulingKeys(name, fn)
	}
}

func (q cordonedQueued) Open(name string) (queue.EntryReader, error) {
	if q.off[name] {
		return emptyReader{}, nil
	}
	return q.Store.Open(name)
}

// emptyReader reads no entry.
type emptyReader struct{}

func (emptyReader) Read([]*queue.Entry) (int, error) { return 0, nil }

// cordonedNodes are a cordoned cluster's snapshot nodes, each a copy
// marked unschedulable: no new job, running jobs stay (flotilla.Node).
func cordonedNodes(nodes []*flotilla.Node) []*flotilla.Node {
	out := make([]*flotilla.Node, len(nodes))
	for i, n := range nodes {
		c := *n
		c.Unschedulable = true
		out[i] = &c
	}
	return out
}

// ClusterInfo is one cluster as the service knows it.
type ClusterInfo struct {
	Name string
	// Nodes are the nodes last reported.
	Nodes []flotilla.Node
	// Reported is when its executor last reported to this process (zero
	// when it has not since the process started); Alive whether that was
	// within the lease timeout (the cluster takes part in cycles).
	Reported time.Time
	Alive    bool
	// Cordoned: no new leases go to it.
	Cordoned bool
	// Pool is its pool.
	Pool string
	// Leased and Running count its live jobs.
	Leased, Running int
}

// ListClusters returns every cluster, sorted by name.
func (s *Server) ListClusters(ctx context.Context) ([]ClusterInfo, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.st.fresh(ctx); err != nil {
		return nil, err
	}
	now := s.st.clock.Now()
	out := make([]ClusterInfo, 0, len(s.st.clusters))
	for _, c := range s.st.clusters {
		if c.reported.IsZero() && len(c.nodes) == 0 {
			continue // known only by a cordon of a cluster that never reported
		}
		info := ClusterInfo{Name: c.name, Nodes: slices.Clone(c.nodes), Reported: c.reported,
			Alive: c.alive(now, s.st.cfg.LeaseTimeout), Cordoned: c.cordoned, Pool: c.pool}
		for j := range c.jobs() {
			if j.state == events.RunningState {
				info.Running++
			} else {
				info.Leased++
			}
		}
		out = append(out, info)
	}
	slices.SortFunc(out, func(a, b ClusterInfo) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}
