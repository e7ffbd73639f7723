package server

import (
	"slices"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/backend"
	"github.com/flotilla-sched/flotilla/scheduler"
)

// poolOf is the pool an executor's pool name means: backend.DefaultPool
// for "".
func poolOf(name string) string {
	if name == "" {
		return backend.DefaultPool
	}
	return name
}

// poolNames are the known pools, sorted: those of the clusters the
// service knows, or backend.DefaultPool when it knows none.
func (s *state) poolNames() []string {
	var out []string
	for _, c := range s.clusters {
		if c.nodes == nil && c.reported.IsZero() {
			continue // known only by a cordon of a cluster that never reported
		}
		if !slices.Contains(out, c.pool) {
			out = append(out, c.pool)
		}
	}
	if len(out) == 0 {
		return []string{backend.DefaultPool}
	}
	slices.Sort(out)
	return out
}

// setPool puts cluster c in the pool its executor named (""
// for backend.DefaultPool); the queued jobs' stores split once the
// service knows more than one pool, and a pool new to them gets its
// store.
func (s *state) setPool(c *cluster, name string) {
	c.pool = poolOf(name)
	if pools := s.poolNames(); len(pools) > 1 || !s.queued.batches() {
		s.queued.split(pools, &s.jobs)
	}
}

// reportPools are the pools whose last cycle a queue's or group's report
// is read from, the primary one first: backend.DefaultPool when known,
// else the first by name; then the others in name order.
func (s *state) reportPools() []string {
	pools := s.poolNames()
	if i := slices.Index(pools, backend.DefaultPool); i > 0 {
		pools = append(append([]string{backend.DefaultPool}, pools[:i]...), pools[i+1:]...)
	}
	return pools
}

// queueReport is queue's line in the last cycle of the first pool (of
// reportPools) that accepts a job of pools (joinPools; "" any) and where
// the queue had jobs, else of the first whose last cycle saw the queue;
// and that pool.
func (s *state) queueReport(queue, pools string) (scheduler.QueueReport, string, bool) {
	var first scheduler.QueueReport
	firstPool := ""
	for _, p := range s.reportPools() {
		if !acceptsPool(pools, p) {
			continue
		}
		rep, ok := s.last.pool(p).shares[queue]
		switch {
		case ok && rep.Running+rep.Queued > 0:
			return rep, p, true
		case ok && firstPool == "":
			first, firstPool = rep, p
		}
	}
	return first, firstPool, firstPool != ""
}

// queuePools are queue's lines in each pool's last cycle, when the
// service knows more than one pool.
func (s *state) queuePools(queue string) []PoolQueueReport {
	pools := s.poolNames()
	if len(pools) < 2 {
		return nil
	}
	var out []PoolQueueReport
	for _, p := range pools {
		if rep, ok := s.last.pool(p).shares[queue]; ok {
			out = append(out, PoolQueueReport{Pool: p, Report: rep})
		}
	}
	return out
}

// groupInfo is a group with its lines in the pools' last cycles.
func (s *state) groupInfo(g *flotilla.QueueGroup) GroupInfo {
	info := GroupInfo{QueueGroup: cloneGroup(*g)}
	for _, p := range s.reportPools() {
		if rep, ok := s.last.pool(p).groups[g.Name]; ok {
			info.Report, info.Pool = rep, p
			break
		}
	}
	if pools := s.poolNames(); len(pools) > 1 {
		for _, p := range pools {
			if rep, ok := s.last.pool(p).groups[g.Name]; ok {
				info.Pools = append(info.Pools, PoolGroupReport{Pool: p, Report: rep})
			}
		}
	}
	return info
}
