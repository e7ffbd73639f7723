package server

import (
	"github.com/flotilla-sched/flotilla"
	"maps"
	"slices"
	"time"
)

// preemptionLosses count, per queue, the resource-seconds preemptions
// took: each preempted run's running time (from its running event to the
// preemption; nothing for a job preempted before it ran) times its
// requests, per resource in the schema's base units (cpu in cores, not
// thousandths). They count from the process's start: a Prometheus counter
// (a restart resets it, as counters do).
type preemptionLosses map[string][]float64

// add counts live job j's run, preempted at t.
func (l *preemptionLosses) add(j *job, t time.Time) {
	if j.lease == nil {
		return
	}
	started, ok := j.lease.started()
	if !ok || !t.After(started) {
		return
	}
	secs := t.Sub(started).Seconds()
	if *l == nil {
		*l = preemptionLosses{}
	}
	q := j.spec.Queue
	v := (*l)[q]
	if v == nil {
		v = make([]float64, len(j.spec.Requests))
		(*l)[q] = v
	}
	for i, r := range j.spec.Requests {
		if i < len(v) {
			v[i] += float64(r) * secs
		}
	}
}

// PreemptionLoss returns, per queue, the resource-seconds preemptions
// took from its runs since the process started: each preempted run's
// running time times its requests, per resource of Schema in the
// resource's quantity units (a cpu request of "500m" counts 0.5 per
// second). Queues that lost nothing are absent. The caller owns the map.
func (s *Server) PreemptionLoss() map[string][]float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string][]float64, len(s.st.losses))
	for _, q := range slices.Sorted(maps.Keys(s.st.losses)) {
		v := slices.Clone(s.st.losses[q])
		for i := range v {
			if s.st.cat.Schema.Unit(i) == flotilla.UnitMilli {
				v[i] /= 1000
			}
		}
		out[q] = v
	}
	return out
}
