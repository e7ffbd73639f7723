package server

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/api"
	"github.com/flotilla-sched/flotilla/backend"
	"github.com/flotilla-sched/flotilla/events"
	"github.com/flotilla-sched/flotilla/scheduler"
)

// The web UI's reads (package webui, httpapi's /v1/overview and the
// like). Each is one bounded piece of work under the lock: a page of a
// list, never a whole job set. The state keeps what they need besides the
// rest of it in uiState: each job set's live jobs in submit order, the
// last cycles, and the queue tree's shares over the last hour.

// Bounds of the UI's reads.
const (
	// UIMaxLimit is the most items one page holds.
	UIMaxLimit = 1000
	// UIScanBudget is the most jobs one page of a job set looks at: a
	// page whose filter matches few of them stops there, partial, with
	// the cursor to go on from.
	UIScanBudget = 1 << 20
	// UICycles is how many cycles the service keeps for the UI.
	UICycles = 100
	// UIHistory is the span of the shares' history, kept one sample per
	// UIHistoryStep.
	UIHistory     = time.Hour
	UIHistoryStep = time.Minute
)

// uiState is what the UI reads besides the service's state. The caller
// holds mu.
type uiState struct {
	// sets holds each job set's live jobs, by queue and job set.
	sets map[string]map[string]*uiSet
	// cycles are the last decided cycles, oldest first.
	cycles []api.CycleSummary
	// history holds per queue ("q/"+name) and group ("g/"+name) a share
	// sample per minute of the last hour, oldest first: of the first
	// pool's cycles, and with several pools of each pool's too (histKey).
	history map[string][]api.SharePoint
	// budget is UIScanBudget (a test lowers it); 0 means UIScanBudget.
	budget int
	// lastQueue, lastSet and last are the set found last: a submission's
	// jobs, one after another, skip the maps.
	lastQueue, lastSet string
	last               *uiSet
}

// uiSet is one job set's live jobs in submit order (submit time, then
// id): appended as they are submitted, each submission's jobs after the
// earlier ones, so it is kept sorted at no cost but for a clock that went
// back. A job that ends stays as a hole (its state terminal) until the
// holes are half of the list, which is then compacted.
type uiSet struct {
	jobs []*job
	live int
	// levels are the distinct priorities of the jobs, ascending, and
	// perhaps some no job holds any more: each job's priority is entered
	// when it is added and whenever it changes (repriced).
	levels []uint32
}

// dead reports whether a job of a uiSet has ended (its place is a hole).
func dead(j *job) bool { return j.state.Terminal() || j.state == events.FailedState }

// submitCmp orders jobs by submit time (as instants), then id.
func submitCmp(a, b *job) int {
	ta, tb := a.spec.SubmitTime, b.spec.SubmitTime
	if c := cmp.Compare(ta.Unix(), tb.Unix()); c != 0 {
		return c
	}
	if c := cmp.Compare(int64(ta.Nanosecond()), int64(tb.Nanosecond())); c != 0 {
		return c
	}
	return strings.Compare(a.id(), b.id())
}

func (u *uiState) set(queue, jobSet string, create bool) *uiSet {
	if u.last != nil && queue == u.lastQueue && jobSet == u.lastSet {
		return u.last
	}
	m := u.sets[queue]
	if m == nil {
		if !create {
			return nil
		}
		if u.sets == nil {
			u.sets = map[string]map[string]*uiSet{}
		}
		m = map[string]*uiSet{}
		u.sets[queue] = m
	}
	st := m[jobSet]
	if st == nil && create {
		st = &uiSet{}
		m[jobSet] = st
	}
	if st != nil {
		u.lastQueue, u.lastSet, u.last = queue, jobSet, st
	}
	return st
}

// added enters a new live job.
func (u *uiState) added(j *job) {
	st := u.set(j.spec.Queue, j.spec.JobSet, true)
	if n := len(st.jobs); n == 0 || submitCmp(st.jobs[n-1], j) < 0 {
		st.jobs = append(st.jobs, j)
	} else {
		i, _ := slices.BinarySearchFunc(st.jobs, j, submitCmp)
		st.jobs = slices.Insert(st.jobs, i, j)
	}
	st.live++
	st.addLevel(j.sched().Priority)
}

func (st *uiSet) addLevel(p uint32) {
	if i, ok := slices.BinarySearch(st.levels, p); !ok {
		st.levels = slices.Insert(st.levels, i, p)
	}
}

// repriced notes that a live job's priority changed (an operator's
// reprioritisation, or Flux's): its set's levels hold the new one, so
// that a page by priority reads that level in its turn.
func (u *uiState) repriced(j *job) {
	if st := u.set(j.spec.Queue, j.spec.JobSet, false); st != nil {
		st.addLevel(j.sched().Priority)
	}
}

// ended notes that a job of the set ended (its state is terminal now).
func (u *uiState) ended(j *job) {
	st := u.set(j.spec.Queue, j.spec.JobSet, false)
	if st == nil {
		return
	}
	if st.live--; st.live <= 0 {
		u.last = nil
		delete(u.sets[j.spec.Queue], j.spec.JobSet)
		if len(u.sets[j.spec.Queue]) == 0 {
			delete(u.sets, j.spec.Queue)
		}
		return
	}
	if holes := len(st.jobs) - st.live; holes > 64 && holes*2 > len(st.jobs) {
		st.compact()
	}
}

// compact drops the holes and the levels no live job holds.
func (st *uiSet) compact() {
	st.jobs = slices.DeleteFunc(st.jobs, dead)
	st.levels = st.levels[:0]
	for _, j := range st.jobs {
		st.addLevel(j.sched().Priority)
	}
}

// rebuild enters every live job of a load.
func (u *uiState) rebuild(jobs func(yield func(*job) bool)) {
	u.sets, u.last = nil, nil
	for j := range jobs {
		st := u.set(j.spec.Queue, j.spec.JobSet, true)
		st.jobs = append(st.jobs, j)
		st.live++
	}
	for _, m := range u.sets {
		for _, st := range m {
			slices.SortFunc(st.jobs, submitCmp)
			st.compact()
		}
	}
}

// cycled records a decided cycle: its summary (each queue's counts in
// each pool's decision, a line per queue and pool when the cycle had
// several pools), and a sample of the shares (the first pool's, and each
// pool's with several) when the last is a minute old or more.
func (u *uiState) cycled(seq uint64, rep *CycleReport, end time.Time) {
	c := api.CycleSummary{Seq: seq, Time: rep.Time.UTC(), DurationMs: float64(end.Sub(rep.Time).Microseconds()) / 1000,
		Leased: rep.Leased, Preempted: rep.Preempted, Expired: rep.Expired, Queues: []api.CycleQueue{}}
	pools := rep.Pools
	if len(pools) == 0 && rep.Result != nil {
		pools = []PoolResult{{Result: rep.Result}}
	}
	for _, pr := range pools {
		if pr.Result == nil {
			continue
		}
		pool := ""
		if len(pools) > 1 {
			pool = pr.Pool
		}
		c.Queues = append(c.Queues, poolCycleQueues(pr.Result, pool)...)
	}
	slices.SortFunc(c.Queues, func(a, b api.CycleQueue) int {
		if x := strings.Compare(a.Name, b.Name); x != 0 {
			return x
		}
		return strings.Compare(a.Pool, b.Pool)
	})
	res := rep.Result
	if len(u.cycles) == UICycles {
		copy(u.cycles, u.cycles[1:])
		u.cycles = u.cycles[:UICycles-1]
	}
	u.cycles = append(u.cycles, c)
	if res == nil {
		return
	}
	if u.history == nil {
		u.history = map[string][]api.SharePoint{}
	}
	t := rep.Time.UTC()
	u.sampleResult(res, "", t)
	if len(pools) > 1 {
		for _, pr := range pools {
			if pr.Result != nil {
				u.sampleResult(pr.Result, pr.Pool, t)
			}
		}
	}
}

// histKey is the key of a queue's ("q") or group's ("g") history: of the
// first pool's cycles when pool is "", else of that pool's.
func histKey(kind, name, pool string) string {
	if pool == "" {
		return kind + "/" + name
	}
	return kind + "/" + name + "\x00" + pool
}

// sampleResult samples the shares of one decision's queues and groups.
func (u *uiState) sampleResult(res *scheduler.Result, pool string, t time.Time) {
	for _, q := range res.Queues {
		u.sample(histKey("q", q.Name, pool), api.SharePoint{Time: t, Share: q.Share, FairShare: q.FairShare, AdjustedFairShare: q.AdjustedFairShare})
	}
	for _, g := range res.Groups {
		u.sample(histKey("g", g.Name, pool), api.SharePoint{Time: t, Share: g.Share, FairShare: g.FairShare, AdjustedFairShare: g.AdjustedFairShare})
	}
}

// poolHistory is the histories in each pool of a queue's or group's
// status lines (nil without any).
func (u *uiState) poolHistory(kind, name string, pools []api.QueueShare, now time.Time) []api.PoolHistory {
	var out []api.PoolHistory
	for _, p := range pools {
		out = append(out, api.PoolHistory{Pool: p.Pool, History: u.recent(histKey(kind, name, p.Pool), now)})
	}
	return out
}

// poolCycleQueues are the queues' counts in one pool's decision.
func poolCycleQueues(res *scheduler.Result, pool string) []api.CycleQueue {
	out := make([]api.CycleQueue, len(res.Queues))
	byQueue := make(map[string]*api.CycleQueue, len(res.Queues))
	for i, q := range res.Queues {
		out[i] = api.CycleQueue{Name: q.Name, Pool: pool, Queued: q.Queued, Running: q.Running}
		byQueue[q.Name] = &out[i]
	}
	for _, a := range res.Scheduled {
		if q := byQueue[a.Job.Queue]; q != nil {
			q.Leased++
		}
	}
	for _, p := range res.Preempted {
		if q := byQueue[p.Job.Queue]; q != nil {
			q.Preempted++
		}
	}
	return out
}

// sample adds p to a history when its last sample is UIHistoryStep old
// or more, dropping the samples older than UIHistory.
func (u *uiState) sample(key string, p api.SharePoint) {
	h := u.history[key]
	if n := len(h); n > 0 && p.Time.Sub(h[n-1].Time) < UIHistoryStep {
		return
	}
	i := 0
	for i < len(h) && p.Time.Sub(h[i].Time) > UIHistory {
		i++
	}
	u.history[key] = append(h[i:], p)
}

// recent is a history's samples of the last hour before now (a copy).
func (u *uiState) recent(key string, now time.Time) []api.SharePoint {
	out := []api.SharePoint{}
	for _, p := range u.history[key] {
		if now.Sub(p.Time) <= UIHistory {
			out = append(out, p)
		}
	}
	return out
}

// Overview returns a page of the queues may allows (by name, after the
// name after, at most limit of them), every group, and the last cycle.
func (s *Server) Overview(ctx context.Context, after string, limit int, may func(queue string) bool) (api.Overview, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := &s.st
	if err := st.fresh(ctx); err != nil {
		return api.Overview{}, err
	}
	now := st.clock.Now()
	ov := api.Overview{Time: now.UTC(), Cycles: st.last.cycles, Queues: []api.QueueOverview{}, Groups: []api.GroupOverview{}}
	if n := len(st.ui.cycles); n > 0 {
		c := st.ui.cycles[n-1]
		ov.LastCycle = &c
	}
	names := make([]string, 0, len(st.queues))
	for name := range st.queues {
		if name > after && may(name) {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	if len(names) > limit {
		names = names[:limit]
		ov.Next = names[limit-1]
	}
	counts := st.clusters.liveCounts()
	for _, name := range names {
		q := st.queues[name]
		rep, _, _ := st.queueReport(name, "")
		n := counts[name]
		pools := poolShares(st.queuePools(name))
		ov.Queues = append(ov.Queues, api.QueueOverview{Name: name, Parent: q.Parent, PriorityFactor: q.PriorityFactor,
			Status: api.QueueStatus{Queued: st.queued.store.QueueLen(name), Leased: n[0], Running: n[1],
				Share: rep.Share, FairShare: rep.FairShare, AdjustedFairShare: rep.AdjustedFairShare,
				Usage: rep.Usage, Cordoned: st.cordonedQueues[name], Pools: pools},
			History: st.ui.recent(histKey("q", name, ""), now), PoolHistory: st.ui.poolHistory("q", name, pools, now)})
	}
	gnames := make([]string, 0, len(st.groups))
	for name := range st.groups {
		gnames = append(gnames, name)
	}
	slices.Sort(gnames)
	for _, name := range gnames {
		g := st.groups[name]
		info := st.groupInfo(g)
		rep := info.Report
		var pools []api.QueueShare
		for _, p := range info.Pools {
			r := p.Report
			pools = append(pools, api.QueueShare{Share: r.Share, FairShare: r.FairShare, AdjustedFairShare: r.AdjustedFairShare,
				Demand: r.Demand, Running: r.Running, Queued: r.Queued, Pool: p.Pool})
		}
		ov.Groups = append(ov.Groups, api.GroupOverview{Name: name, Parent: g.Parent,
			Status: api.GroupStatus{Queued: rep.Queued, Running: rep.Running, Share: rep.Share, FairShare: rep.FairShare,
				AdjustedFairShare: rep.AdjustedFairShare, Demand: rep.Demand, Usage: rep.Usage, Pools: pools},
			History: st.ui.recent(histKey("g", name, ""), now), PoolHistory: st.ui.poolHistory("g", name, pools, now)})
	}
	return ov, nil
}

// poolShares are a queue's lines in the pools' last cycles (nil with one
// pool).
func poolShares(ps []PoolQueueReport) []api.QueueShare {
	var out []api.QueueShare
	for _, p := range ps {
		out = append(out, queueShare(p.Report, p.Pool))
	}
	return out
}

func queueShare(r scheduler.QueueReport, pool string) api.QueueShare {
	return api.QueueShare{Share: r.Share, FairShare: r.FairShare, AdjustedFairShare: r.AdjustedFairShare,
		Demand: r.Demand, Running: r.Running, Queued: r.Queued, Pool: pool}
}

// Cycles returns the last cycles, newest first, at most limit of them.
func (s *Server) Cycles(limit int) []api.CycleSummary {
	s.mu.Lock()
	defer s.mu.Unlock()
	cs := s.st.ui.cycles
	out := make([]api.CycleSummary, 0, min(limit, len(cs)))
	for i := len(cs) - 1; i >= 0 && len(out) < limit; i-- {
		c := cs[i]
		c.Queues = slices.Clone(c.Queues)
		out = append(out, c)
	}
	return out
}

// JobSets returns a page of a queue's job sets by name after the name
// after: those with live jobs, with their counts, and, when the backend
// lists its job sets (backend.JobSetNames), those whose jobs all ended,
// marked Ended. backend.ErrNotFound when there is no such queue.
func (s *Server) JobSets(ctx context.Context, queueName, after string, limit int) (api.JobSetsPage, error) {
	limit = min(limit, backend.MaxEndedPage)
	// The stored names are read outside the lock (as ended jobs are): a
	// set that starts or ends meanwhile is listed as the lock finds it.
	ask := min(max(limit, 1)+1, backend.MaxEndedPage) // one more: is there a next page
	stored, err := backend.ListJobSetNames(ctx, s.st.be, queueName, after, ask)
	if err != nil && !errors.Is(err, errors.ErrUnsupported) {
		return api.JobSetsPage{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	st := &s.st
	if err := st.fresh(ctx); err != nil {
		return api.JobSetsPage{}, err
	}
	if _, ok := st.queues[queueName]; !ok {
		return api.JobSetsPage{}, flotilla.Errorf("queue", queueName, backend.ErrNotFound, "no such queue")
	}
	page := api.JobSetsPage{Queue: queueName, Cordoned: st.cordonedQueues[queueName], JobSets: []api.JobSetSummary{}}
	sets := st.ui.sets[queueName]
	names := make([]string, 0, len(sets)+len(stored))
	for name := range sets {
		if name > after {
			names = append(names, name)
		}
	}
	// Both lists hold their first limit names after after: the first
	// limit of their union are the page's. A full page of stored names
	// no longer than limit may have more after it.
	names = append(names, stored...)
	slices.Sort(names)
	names = slices.Compact(names)
	if len(names) > limit {
		names = names[:limit]
		page.Next = names[limit-1]
	} else if len(stored) == ask && len(names) > 0 {
		page.Next = names[len(names)-1]
	}
	live := st.liveBySet(queueName)
	for _, name := range names {
		set := sets[name]
		if set == nil {
			page.JobSets = append(page.JobSets, api.JobSetSummary{Name: name, Ended: true})
			continue
		}
		n := live[name]
		page.JobSets = append(page.JobSets, api.JobSetSummary{Name: name, Queued: set.live - n[0] - n[1], Leased: n[0], Running: n[1]})
	}
	return page, nil
}

// liveBySet counts a queue's leased and running jobs per job set.
func (s *state) liveBySet(queueName string) map[string][2]int {
	out := map[string][2]int{}
	for _, c := range s.clusters {
		for j := range c.jobs() {
			if j.spec.Queue != queueName {
				continue
			}
			n := out[j.spec.JobSet]
			if j.state == events.RunningState {
				n[1]++
			} else {
				n[0]++
			}
			out[j.spec.JobSet] = n
		}
	}
	return out
}

// lastSeq is a job set's last event's sequence number (0 when it has
// none), found by reading single events: doubling, then halving, about
// 2·log2(n) reads of one event.
func (s *Server) lastSeq(ctx context.Context, queueName, jobSet string) (uint64, error) {
	has := func(seq uint64) (bool, error) {
		evs, err := s.st.be.Events(ctx, queueName, jobSet, seq, 1)
		return len(evs) > 0, err
	}
	ok, err := has(1)
	if err != nil || !ok {
		return 0, err
	}
	lo, hi := uint64(1), uint64(2) // lo holds an event; find hi that does not
	for {
		ok, err := has(hi)
		if err != nil {
			return 0, err
		}
		if !ok {
			break
		}
		lo, hi = hi, hi*2
	}
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		ok, err := has(mid)
		if err != nil {
			return 0, err
		}
		if ok {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo, nil
}

// Nodes returns a page of a cluster's nodes, by name after the name
// after, with what its live jobs request on each and the room left;
// backend.ErrNotFound when there is no such cluster.
func (s *Server) Nodes(ctx context.Context, clusterName, after string, limit int) (api.NodesPage, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := &s.st
	if err := st.fresh(ctx); err != nil {
		return api.NodesPage{}, err
	}
	c := st.clusters[clusterName]
	if c == nil || (c.reported.IsZero() && len(c.nodes) == 0) {
		return api.NodesPage{}, flotilla.Errorf("cluster", clusterName, backend.ErrNotFound, "no such cluster")
	}
	now := st.clock.Now()
	page := api.NodesPage{Cluster: c.name, Alive: c.alive(now, st.cfg.LeaseTimeout), Cordoned: c.cordoned, Nodes: []api.NodeRow{}}
	if !c.reported.IsZero() {
		t := c.reported.UTC()
		page.Reported = &t
	}
	idx := make([]int, 0, len(c.nodes))
	for i := range c.nodes {
		if c.nodes[i].Name > after {
			idx = append(idx, i)
		}
	}
	slices.SortFunc(idx, func(a, b int) int { return strings.Compare(c.nodes[a].Name, c.nodes[b].Name) })
	if len(idx) > limit {
		idx = idx[:limit]
		page.Next = c.nodes[idx[limit-1]].Name
	}
	want := make(map[int]int, len(idx)) // node index → row
	schema := st.cat.Schema
	alloc := make([]flotilla.Resources, len(idx))
	jobs := make([]int, len(idx))
	for r, i := range idx {
		want[i] = r
		alloc[r] = schema.Zero()
	}
	for j := range c.jobs() {
		if r, ok := want[int(j.lease.nodeIdx)]; ok && j.lease.nodeIdx >= 0 {
			alloc[r].AddSaturating(j.sched().Requests)
			jobs[r]++
		}
	}
	for r, i := range idx {
		n := &c.nodes[i]
		free := n.Total.Clone()
		free.Sub(alloc[r])
		page.Nodes = append(page.Nodes, api.NodeRow{Name: n.Name, Unschedulable: n.Unschedulable,
			Total: schema.Format(n.Total), Allocated: schema.Format(alloc[r]), Free: schema.Format(free), Jobs: jobs[r]})
	}
	return page, nil
}
