package server

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/backend"
	"github.com/flotilla-sched/flotilla/events"
	"github.com/flotilla-sched/flotilla/fairness"
	"github.com/flotilla-sched/flotilla/priority"
	"github.com/flotilla-sched/flotilla/scheduler"
)

// DefaultUsageHalfLife is the half-life of queue usage when
// Config.UsageHalfLife is 0: flux-accounting's one week.
const DefaultUsageHalfLife = priority.DefaultUsageHalfLife

// Key prefixes of the usage records the service stores (backend.Usage).
// The names after the prefix are path-escaped (url.PathEscape), so that a
// name holding '/' cannot be confused with the separator.
const (
	// UsageKeyQueue + queue: the queue's decayed resource × seconds.
	UsageKeyQueue = "queue/"
	// UsageKeyLottery + queue: the lottery strategy's queue priority (in
	// backend.DefaultPool; in another pool + "/" + pool, as the share's).
	UsageKeyLottery = "lottery/"
	// UsageKeyFlux + user + "/" + bank: a flux association's decayed
	// resource × seconds.
	UsageKeyFlux = "flux/"
	// UsageKeyShare + queue: the queue tree's usage memory of the queue,
	// its decayed average share u ∈ [0,1] (scheduler.UsageState), kept in
	// entry 0 of the record's Value; in backend.DefaultPool (in another
	// pool, UsageKeyShare + queue + "/" + pool).
	UsageKeyShare = "share/"
)

// UsageShareKey is the key of the record that holds queue's usage memory
// in pool ("" is backend.DefaultPool): UsageKeyShare + queue, + "/" + pool
// outside the default pool, names path-escaped. New starts each pool's
// usage memory from such records, a value u ∈ [0,1] in entry 0 as of At,
// so a backend written before New gives the first cycles a history.
func UsageShareKey(queue, pool string) string { return usageKey(UsageKeyShare, queue, poolOf(pool)) }

// accrual is the decayed resource × time of one queue or association:
// val as of at, and rate, the summed requests of the live leases charged
// to it, which accrue from at on.
//
// Usage is continuous: a resource-second used at time s counts
// 0.5^((t−s)/halfLife) at time t. Over an interval of length Δ with a
// constant rate r (the live leases did not change: every lease start and
// end advances the accrual first) the value becomes
//
//	val·β + r·(halfLife/ln 2)·(1 − β),  β = 0.5^(Δ/halfLife)
//
// which is exact: advancing in several steps or in one gives the same
// value (up to rounding), and under a constant rate r from 0 the value at
// t is r·(halfLife/ln 2)·(1 − 0.5^(t/halfLife)), tending to
// r·halfLife/ln 2.
type accrual struct {
	val []float64
	// pending is what accrued since the last flush into a flux BankTree,
	// decayed like val (nil for queues).
	pending []float64
	rate    flotilla.Resources
	at      time.Time
}

func newAccrual(n int, at time.Time, pending bool) *accrual {
	a := &accrual{val: make([]float64, n), rate: make(flotilla.Resources, n), at: at}
	if pending {
		a.pending = make([]float64, n)
	}
	return a
}

// advance moves the accrual to t. A t not after at changes nothing (a
// clock that steps back accrues nothing and decays nothing).
func (a *accrual) advance(t time.Time, halfLife time.Duration) {
	dt := t.Sub(a.at)
	if dt <= 0 {
		return
	}
	x := -math.Ln2 * float64(dt) / float64(halfLife)
	beta := math.Exp(x)
	grow := -math.Expm1(x) * halfLife.Seconds() / math.Ln2
	for i := range a.val {
		inc := float64(a.rate[i]) * grow
		a.val[i] = a.val[i]*beta + inc
		if a.pending != nil {
			a.pending[i] = a.pending[i]*beta + inc
		}
	}
	a.at = t
}

// valueAt is val advanced to t, leaving the accrual as it is.
func (a *accrual) valueAt(t time.Time, halfLife time.Duration) []float64 {
	c := accrual{val: slices.Clone(a.val), rate: a.rate, at: a.at}
	c.advance(t, halfLife)
	return c.val
}

// charge adds (sign 1) or removes (sign −1) requests from the rate at t.
func (a *accrual) charge(req flotilla.Resources, sign int64, t time.Time, halfLife time.Duration) {
	a.advance(t, halfLife)
	for i := range a.rate {
		if i < len(req) {
			a.rate[i] += sign * req[i]
		}
	}
}

// usageState is the service's usage history: per queue, and per flux
// association when Config.Flux is set.
type usageState struct {
	halfLife time.Duration
	n        int // the schema's length
	queues   map[string]*accrual
	flux     *fluxState // nil without Config.Flux
}

// queue returns the accrual of the named queue, new at t when it has
// none.
func (u *usageState) queue(name string, t time.Time) *accrual {
	a := u.queues[name]
	if a == nil {
		a = newAccrual(u.n, t, false)
		u.queues[name] = a
	}
	return a
}

// accrue charges a job's lease to its queue (and flux association) from
// the event that starts it to the event that ends it. It runs before the
// event changes the job's in-memory state.
func (u *usageState) accrue(j *job, e *events.Event) {
	var sign int64
	switch e.Type {
	case events.Leased:
		if j.state.Live() {
			return
		}
		sign = 1
	case events.LeaseExpired, events.LeaseReturned, events.Preempted, events.Succeeded, events.Failed, events.Cancelled:
		if !j.state.Live() {
			return
		}
		sign = -1
	default:
		return
	}
	u.charge(j, sign, e.Time)
}

// charge adds (sign 1) or removes (sign −1) live job j's requests from
// the rates of its queue and flux association at t.
func (u *usageState) charge(j *job, sign int64, t time.Time) {
	req := j.spec.Requests
	u.queue(j.spec.Queue, t).charge(req, sign, t, u.halfLife)
	if f := u.flux; f != nil {
		f.accrual(f.assoc(j.run.principal, j.spec.Queue), t, u.n).charge(req, sign, t, f.tree.HalfLife())
	}
}

// QueueUsage returns the queue's usage history now: per resource of the
// schema, resource × seconds (in the schema's units: milli-cpu seconds,
// byte seconds, …) used by its leased and running jobs, each second
// decayed with the usage half-life. A queue that never held a lease has
// zeros.
func (s *Server) QueueUsage(name string) []float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.st.usage.value(name, s.st.clock.Now())
}

// value is the named queue's usage at now.
func (u *usageState) value(name string, now time.Time) []float64 {
	a := u.queues[name]
	if a == nil {
		return make([]float64, u.n)
	}
	return a.valueAt(now, u.halfLife)
}

// loadUsage restores the usage history from the backend's records (first
// load) or carries the in-memory history over a reload, and charges the
// live jobs' leases. The caller holds mu; the live jobs are loaded.
func (s *state) loadUsage(ctx context.Context, now time.Time) error {
	if s.usage != nil {
		// A reload (the outcome of a write was unknown): the history in
		// memory is newer than the records. Close it at now and charge
		// the live leases as loaded from now on.
		for _, a := range s.usage.queues {
			a.advance(now, s.usage.halfLife)
			clear(a.rate)
		}
		if f := s.usage.flux; f != nil {
			for _, a := range f.assocs {
				a.advance(now, f.tree.HalfLife())
				clear(a.rate)
			}
		}
		for _, j := range s.clusters.liveJobs() {
			s.usage.charge(j, 1, now)
		}
		if f := s.usage.flux; f != nil {
			f.loaded(now, &s.jobs, &s.queued)
		}
		return nil
	}
	u := &usageState{halfLife: s.cfg.UsageHalfLife, n: s.cat.Schema.Len(), queues: map[string]*accrual{}}
	if u.halfLife == 0 {
		u.halfLife = DefaultUsageHalfLife
	}
	if s.cfg.Flux != nil {
		u.flux = newFluxState(s.cfg.Flux, s.cat.Schema)
		u.flux.repriced = s.ui.repriced
	}
	rs, err := s.be.ListUsage(ctx)
	if err != nil {
		return fmt.Errorf("server: loading usage: %w", err)
	}
	s.usage = u
	lottery := map[string]*scheduler.QueuePriorityState{}
	share := map[string]*scheduler.UsageState{}
	cpu := lotteryIndex(s.cat.Schema)
	for _, r := range rs {
		if len(r.Value) != u.n || slices.ContainsFunc(r.Value, func(x float64) bool { return !(x >= 0) || math.IsInf(x, 0) }) {
			continue // another schema's record, or not usage: not ours to read
		}
		prefix, names, ok := parseUsageKey(r.Key)
		if !ok {
			continue
		}
		switch {
		case prefix == UsageKeyQueue && len(names) == 1:
			a := newAccrual(u.n, r.At, false)
			copy(a.val, r.Value)
			u.queues[names[0]] = a
		case prefix == UsageKeyLottery && len(names) <= 2:
			l := lottery[usagePool(names)]
			if l == nil {
				l = &scheduler.QueuePriorityState{Priorities: map[string]float64{}}
				lottery[usagePool(names)] = l
			}
			l.Priorities[names[0]] = r.Value[cpu]
			if r.At.After(l.Time) {
				l.Time = r.At
			}
		case prefix == UsageKeyFlux && len(names) == 2 && u.flux != nil:
			u.flux.restore(assocKey{user: names[0], bank: names[1]}, r, now)
		case prefix == UsageKeyShare && len(names) <= 2 && r.Value[0] <= 1:
			u := share[usagePool(names)]
			if u == nil {
				u = &scheduler.UsageState{Usage: map[string]float64{}}
				share[usagePool(names)] = u
			}
			u.Usage[names[0]] = r.Value[0]
			if r.At.After(u.Time) {
				u.Time = r.At
			}
		}
	}
	for pool, l := range lottery {
		s.last.pool(pool).prio = *l
	}
	for pool, u := range share {
		s.last.pool(pool).usage = *u
	}
	// Charge the live leases from when they started (or from the record's
	// time, when they started before it), in the order they started.
	live := s.clusters.liveJobs()
	slices.SortFunc(live, func(a, b *job) int {
		if c := a.lease.leased.Compare(b.lease.leased); c != 0 {
			return c
		}
		return cmp.Compare(a.id(), b.id())
	})
	for _, j := range live {
		u.charge(j, 1, j.lease.leased)
	}
	if f := u.flux; f != nil {
		f.loaded(now, &s.jobs, &s.queued)
	}
	return nil
}

// cycleUsage brings the usage history to now at the end of a cycle, feeds
// the flux tree and re-prioritises queued jobs when Config.Flux is set,
// and stores every record in one PutUsage: each queue's usage, the
// lottery's queue priorities (Result.QueuePriorities, when the strategy
// produced them), each association's usage and the queue tree's usage
// memory (Result.Usage, when a cycle produced it). The caller holds mu.
func (s *state) cycleUsage(ctx context.Context, now time.Time) error {
	u := s.usage
	for _, a := range u.queues {
		a.advance(now, u.halfLife)
	}
	if u.flux != nil {
		u.flux.cycle(now, &s.jobs, &s.queued)
	}
	rs := make([]backend.UsageRecord, 0, len(u.queues))
	for name, a := range u.queues {
		rs = append(rs, backend.UsageRecord{Key: UsageKeyQueue + url.PathEscape(name), Value: nonNegative(a.val), At: a.at})
	}
	for pool, last := range s.last.pools {
		prio := last.prio
		if prio.Time.IsZero() {
			continue
		}
		cpu := lotteryIndex(s.cat.Schema)
		for name, p := range prio.Priorities {
			v := make([]float64, u.n)
			v[cpu] = p
			rs = append(rs, backend.UsageRecord{Key: usageKey(UsageKeyLottery, name, pool), Value: nonNegative(v), At: prio.Time})
		}
	}
	if u.flux != nil {
		for k, a := range u.flux.assocs {
			rs = append(rs, backend.UsageRecord{Key: UsageKeyFlux + url.PathEscape(k.user) + "/" + url.PathEscape(k.bank),
				Value: nonNegative(a.val), At: a.at})
		}
	}
	for pool, last := range s.last.pools {
		share := last.usage
		if share.Time.IsZero() {
			continue
		}
		for name, x := range share.Usage {
			v := make([]float64, u.n)
			v[0] = min(x, 1)
			rs = append(rs, backend.UsageRecord{Key: usageKey(UsageKeyShare, name, pool), Value: nonNegative(v), At: share.Time})
		}
	}
	if len(rs) == 0 {
		return nil
	}
	slices.SortFunc(rs, func(a, b backend.UsageRecord) int { return strings.Compare(a.Key, b.Key) })
	if err := s.be.PutUsage(ctx, rs); err != nil {
		return fmt.Errorf("server: storing usage: %w", err)
	}
	return nil
}

// lotteryIndex is where a lottery record keeps the queue priority: the
// cpu entry (the priority is in cpu cores, the asset model's unit), or
// entry 0 in a schema without cpu (where the lottery's priorities are
// always 0).
func lotteryIndex(schema *flotilla.ResourceSchema) int {
	if i, ok := schema.Index(fairness.ResourceCPU); ok {
		return i
	}
	return 0
}

// nonNegative returns v with rounding errors below 0 (and anything not
// finite) set to 0: the backend stores finite, non-negative usage.
func nonNegative(v []float64) []float64 {
	out := slices.Clone(v)
	for i, x := range out {
		if !(x > 0) || math.IsInf(x, 0) {
			out[i] = 0
		}
	}
	return out
}

// parseUsageKey splits a record key into its prefix and unescaped names.
func parseUsageKey(key string) (prefix string, names []string, ok bool) {
	for _, p := range []string{UsageKeyQueue, UsageKeyLottery, UsageKeyFlux, UsageKeyShare} {
		rest, found := strings.CutPrefix(key, p)
		if !found {
			continue
		}
		for part := range strings.SplitSeq(rest, "/") {
			n, err := url.PathUnescape(part)
			if err != nil || n == "" {
				return "", nil, false
			}
			names = append(names, n)
		}
		return p, names, true
	}
	return "", nil, false
}

// usageKey is the key of a queue's lottery priority or usage memory
// (prefix) in pool: prefix + queue, + "/" + pool outside
// backend.DefaultPool.
func usageKey(prefix, queue, pool string) string {
	if pool == backend.DefaultPool {
		return prefix + url.PathEscape(queue)
	}
	return prefix + url.PathEscape(queue) + "/" + url.PathEscape(pool)
}

// usagePool is the pool of a lottery or share key's names (usageKey).
func usagePool(names []string) string {
	if len(names) == 2 {
		return names[1]
	}
	return backend.DefaultPool
}
