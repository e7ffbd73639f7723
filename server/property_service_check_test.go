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
)

// The invariants of the service's property test (property_service_test.go).

// svcView is every job as the logs' replay leaves it, with its stored
// record.
type svcView struct {
	// logs are the job sets' logs by queue/set.
	logs map[string][]events.Event
	// jobs are the replayed states; recs the stored records.
	jobs map[string]events.Job
	recs map[string]backend.Record
}

func logName(queue, set string) string { return queue + "/" + set }

// view reads every log, checks its sequence numbers and replays it (rule
// 6: each event a transition of the table, seqs 1…n), and reads the
// record of every job the logs name.
func (r *svcRun) view() (*svcView, string) {
	w := r.w
	v := &svcView{logs: map[string][]events.Event{}, jobs: map[string]events.Job{}, recs: map[string]backend.Record{}}
	for _, q := range propQueues {
		for _, set := range propSets {
			evs, err := w.srv.Events(w.ctx, q, set, 0, 0)
			if err != nil {
				return nil, fmt.Sprintf("events of %s/%s: %v", q, set, err)
			}
			for i, e := range evs {
				if e.Seq != uint64(i+1) {
					return nil, fmt.Sprintf("log %s/%s: event %d has seq %d", q, set, i, e.Seq)
				}
			}
			js, err := events.Replay(q, set, slices.Values(evs))
			if err != nil {
				return nil, fmt.Sprintf("log %s/%s does not replay: %v", q, set, err)
			}
			v.logs[logName(q, set)] = evs
			for j := range js.Jobs() {
				v.jobs[j.ID] = j
			}
		}
	}
	for id := range v.jobs {
		rec, err := w.be.Job(w.ctx, id)
		if err != nil {
			return nil, fmt.Sprintf("job %s of the logs: %v", id, err)
		}
		v.recs[id] = rec
	}
	return v, ""
}

// check checks every invariant of the service as it stands.
func (r *svcRun) check() string {
	v, msg := r.view()
	if msg != "" {
		return msg
	}
	for name, evs := range v.logs {
		r.seen[name] = uint64(len(evs))
	}
	for _, f := range []func(*svcView) string{r.checkJobs, r.checkMemory, r.checkStatus, r.checkLeases, r.checkNodes} {
		if msg := f(v); msg != "" {
			return msg
		}
	}
	return ""
}

// checkJobs is rule 2 and the backend's half of rule 3: every acknowledged
// id is submitted exactly once, in its own job set's log, and no other
// job is; every record is its log's replay.
func (r *svcRun) checkJobs(v *svcView) string {
	submitted := map[string]int{}
	for name, evs := range v.logs {
		for _, e := range evs {
			if logName(e.Queue, e.JobSet) != name {
				return fmt.Sprintf("log %s holds an event of %s/%s", name, e.Queue, e.JobSet)
			}
			if e.Type == events.Submitted {
				submitted[e.Job]++
			}
		}
	}
	for _, id := range r.acked {
		if submitted[id] != 1 {
			return fmt.Sprintf("acknowledged job %s has %d submitted events", id, submitted[id])
		}
	}
	for _, id := range slices.Sorted(maps.Keys(v.jobs)) {
		if !r.ackedIn[id] && !r.maybe[id] {
			return fmt.Sprintf("job %s is stored but was never acknowledged", id)
		}
		if d := diffState(v.recs[id].State, v.jobs[id]); d != "" {
			return fmt.Sprintf("job %s: stored %s", id, d)
		}
	}
	return ""
}

// diffState says how two job states differ ("" when equal).
func diffState(a, b events.Job) string {
	if a.ID == b.ID && a.Queue == b.Queue && a.JobSet == b.JobSet && a.State == b.State &&
		a.Attempts == b.Attempts && a.CancelRequested == b.CancelRequested && a.Cluster == b.Cluster &&
		a.Node == b.Node && slices.Equal(a.FailedClusters, b.FailedClusters) && a.Submitted.Equal(b.Submitted) &&
		a.Leased.Equal(b.Leased) && a.Finished.Equal(b.Finished) && a.Reason == b.Reason && a.ExitCode == b.ExitCode &&
		slices.Equal(a.Retries, b.Retries) && a.Rule == b.Rule && slices.Equal(a.AvoidNodes, b.AvoidNodes) {
		return ""
	}
	return fmt.Sprintf("%+v, replay %+v", a, b)
}

// checkMemory is the server's half of rule 3: its maps hold exactly the
// jobs that have not ended, each as the replay left it; the queued ones
// in the store, the live ones on their cluster.
func (r *svcRun) checkMemory(v *svcView) string {
	s := r.w.srv
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.st.queued.cycling || len(s.st.queued.deferred) > 0 {
		return fmt.Sprintf("between cycles: cycling %v, %d deferred store changes", s.st.queued.cycling, len(s.st.queued.deferred))
	}
	queued, live := 0, 0
	for _, id := range slices.Sorted(maps.Keys(v.jobs)) {
		st := v.jobs[id]
		j := s.st.jobs.get(id)
		if st.State.Terminal() {
			if j != nil {
				return fmt.Sprintf("job %s is %s but the server keeps it", id, st.State)
			}
			continue
		}
		if j == nil {
			return fmt.Sprintf("job %s is %s but the server lost it", id, st.State)
		}
		cl, node := "", ""
		if j.lease != nil {
			cl, node = j.lease.cluster.name, j.lease.node
		}
		if j.state != st.State || int(j.attempts) != st.Attempts || j.cancelRequested != st.CancelRequested ||
			cl != st.Cluster || node != st.Node || !slices.Equal(j.failed(), st.FailedClusters) {
			return fmt.Sprintf("job %s in memory: %s attempts %d cancel %v on %q/%q failed %v; replay %+v",
				id, j.state, j.attempts, j.cancelRequested, cl, node, j.failed(), st)
		}
		if !slices.Equal(j.sched().AvoidClusters, st.FailedClusters) {
			return fmt.Sprintf("job %s: the scheduler's job avoids %v, failed on %v", id, j.sched().AvoidClusters, st.FailedClusters)
		}
		if !slices.Equal(j.sched().AvoidNodes, st.AvoidNodes) || !slices.Equal(s.st.retries[id], st.Retries) {
			return fmt.Sprintf("job %s: the scheduler's job avoids nodes %v after retries %v; replay %v after %v",
				id, j.sched().AvoidNodes, s.st.retries[id], st.AvoidNodes, st.Retries)
		}
		_, inStore := s.st.queued.store.Get(id)
		if inStore != (st.State == events.Queued) {
			return fmt.Sprintf("job %s is %s; in the queued store: %v", id, st.State, inStore)
		}
		switch {
		case st.State == events.Queued:
			queued++
		case st.State.Live():
			live++
			if !slices.Contains(j.lease.cluster.live, j) {
				return fmt.Sprintf("job %s is leased to %s, not among its live jobs", id, cl)
			}
		}
	}
	if s.st.jobs.len() != queued+live {
		return fmt.Sprintf("the server keeps %d jobs, the logs have %d queued and %d live", s.st.jobs.len(), queued, live)
	}
	if n := s.st.queued.store.Len(); n != queued {
		return fmt.Sprintf("the queued store holds %d jobs, the logs %d", n, queued)
	}
	// Rule 1, the server's side: each live job on exactly one cluster.
	onClusters := 0
	for _, c := range s.st.clusters {
		for j := range c.jobs() {
			if j.lease == nil || j.lease.cluster != c || !j.state.Live() {
				return fmt.Sprintf("cluster %s lists job %s (%s), not leased to it", c.name, j.id(), j.state)
			}
			onClusters++
		}
	}
	if onClusters != live {
		return fmt.Sprintf("the clusters list %d live jobs, the logs %d", onClusters, live)
	}
	return ""
}

// checkStatus: Status says what the replay says.
func (r *svcRun) checkStatus(v *svcView) string {
	if len(r.acked) == 0 {
		return ""
	}
	sts, err := r.w.srv.Status(r.w.ctx, r.acked...)
	if err != nil {
		return fmt.Sprintf("status: %v", err)
	}
	for _, st := range sts {
		j := v.jobs[st.Job]
		if st.State != j.State || st.Attempts != j.Attempts || st.Cluster != j.Cluster || st.Node != j.Node ||
			st.CancelRequested != j.CancelRequested || st.Queue != j.Queue || st.JobSet != j.JobSet {
			return fmt.Sprintf("status of %s: %+v; replay %+v", st.Job, st, j)
		}
	}
	return ""
}

// checkLeases is rule 1 over the executors: no two hold the same lease,
// none holds a lease that never was, and one that holds a job's live
// lease is on the lease's cluster. (An executor that has not reported
// since may still run a lease that ended: its next report kills it.)
// Live members of one gang are all on one cluster.
func (r *svcRun) checkLeases(v *svcView) string {
	type lease struct {
		id      string
		attempt int
	}
	holder := map[lease]string{}
	for _, e := range r.execs {
		for _, id := range slices.Sorted(maps.Keys(e.held)) {
			h := e.held[id]
			l := lease{id, h.attempt}
			if other, ok := holder[l]; ok {
				return fmt.Sprintf("executors %s and %s both hold lease %d of %s", other, e.name, h.attempt, id)
			}
			holder[l] = e.name
			st := v.jobs[id]
			switch {
			case h.attempt > st.Attempts:
				return fmt.Sprintf("%s holds lease %d of %s, which had %d", e.name, h.attempt, id, st.Attempts)
			case st.State.Live() && h.attempt == st.Attempts && (st.Cluster != e.name || st.Node != h.node):
				return fmt.Sprintf("%s holds lease %d of %s on %s, live on %s/%s", e.name, h.attempt, id, h.node, st.Cluster, st.Node)
			}
		}
	}
	gangCluster := map[string]string{}
	for _, id := range slices.Sorted(maps.Keys(v.jobs)) {
		st, sj := v.jobs[id], v.recs[id].Spec.Job
		if !st.State.Live() || !sj.IsGang() {
			continue
		}
		k := gangKey(sj)
		if c, ok := gangCluster[k]; ok && c != st.Cluster {
			return fmt.Sprintf("gang %s has live members on %s and %s (job %s)", sj.Gang.ID, c, st.Cluster, id)
		}
		gangCluster[k] = st.Cluster
	}
	return ""
}

// checkNodes is rule 4: on every node as last reported, the live leases'
// requests fit its capacity; no live lease names a node not reported.
func (r *svcRun) checkNodes(v *svcView) string {
	s := r.w.srv
	s.mu.Lock()
	defer s.mu.Unlock()
	used := map[string]flotilla.Resources{}
	for _, id := range slices.Sorted(maps.Keys(v.jobs)) {
		st := v.jobs[id]
		if !st.State.Live() {
			continue
		}
		c := s.st.clusters[st.Cluster]
		if c == nil {
			return fmt.Sprintf("job %s is leased to %s, a cluster the server does not know", id, st.Cluster)
		}
		if _, ok := c.index[st.Node]; !ok {
			return fmt.Sprintf("job %s is leased to %s/%s, not a reported node", id, st.Cluster, st.Node)
		}
		n := snapName(st.Cluster, st.Node)
		if used[n] == nil {
			used[n] = make(flotilla.Resources, s.st.cat.Schema.Len())
		}
		used[n].Add(v.recs[id].Spec.Job.Requests)
	}
	for _, n := range slices.Sorted(maps.Keys(used)) {
		ref := s.st.nodes[n]
		total := ref.cluster.nodes[ref.cluster.index[ref.node]].Total
		if !used[n].Fits(total) {
			return fmt.Sprintf("node %s over-committed: live leases request %v of %v", n, used[n], total)
		}
	}
	return ""
}

// duringSchedule is a context whose Err runs fn, once, the first time it
// is called while the server's cycle is in Schedule (the lock released):
// the scheduler polls its context as it starts filling, so commands run
// there interleave with the cycle deterministically. (A cycle with
// nothing to fill may not poll it: the commands then run after it.)
type duringSchedule struct {
	context.Context
	srv *Server
	fn  func()
}

func (d *duringSchedule) Err() error {
	if d.fn != nil && d.srv.st.queued.cycling {
		fn := d.fn
		d.fn = nil
		fn()
	}
	return d.Context.Err()
}

// cycle runs a cycle, with the commands during run while Schedule runs,
// then checks what it leased: a gang whole, in one cluster and one value
// of its uniformity label, only clusters that take part, and (with
// avoid) the avoid rule.
func (r *svcRun) cycle(during []svcCmd) string {
	s := r.w.srv
	now := r.w.clock.Now()
	var alive []string
	cordoned := map[string]bool{}
	for _, name := range slices.Sorted(maps.Keys(s.st.clusters)) {
		c := s.st.clusters[name]
		if c.alive(now, s.st.cfg.LeaseTimeout) {
			alive = append(alive, name)
		}
		for _, n := range c.nodes {
			if n.Unschedulable {
				cordoned[snapName(name, n.Name)] = true
			}
		}
	}
	draining := s.st.stopping
	ctx := &duringSchedule{Context: r.w.ctx, srv: s}
	var msg string
	if len(during) > 0 {
		ctx.fn = func() { msg = r.interleave(during) }
	}
	crep, err := s.Cycle(ctx)
	if err != nil {
		return fmt.Sprintf("cycle: %v", err)
	}
	if ctx.fn != nil {
		// Schedule returned without polling (nothing to fill): the
		// commands run after it.
		ctx.fn()
	}
	if msg != "" {
		return "while Schedule ran: " + msg
	}
	v, msg := r.view()
	if msg != "" {
		return msg
	}
	var news []events.Event
	for _, name := range slices.Sorted(maps.Keys(v.logs)) {
		news = append(news, v.logs[name][r.seen[name]:]...)
	}
	gangCluster := map[string]string{}
	gangLeased := map[string]int{}
	gangZone := map[string]string{}
	for _, e := range news {
		if e.Type != events.Leased {
			continue
		}
		if !slices.Contains(alive, e.Cluster) {
			return fmt.Sprintf("job %s leased to %s, which had not reported within the lease timeout", e.Job, e.Cluster)
		}
		if cordoned[snapName(e.Cluster, e.Node)] {
			return fmt.Sprintf("job %s leased to %s/%s, reported unschedulable", e.Job, e.Cluster, e.Node)
		}
		if draining {
			return fmt.Sprintf("job %s leased by a draining service", e.Job)
		}
		if sj := v.recs[e.Job].Spec.Job; sj.IsGang() {
			k := gangKey(sj)
			if c, ok := gangCluster[k]; ok && c != e.Cluster {
				return fmt.Sprintf("gang %s leased to %s and %s in one cycle", sj.Gang.ID, c, e.Cluster)
			}
			gangCluster[k] = e.Cluster
			if l := sj.Gang.NodeUniformityLabel; l != "" {
				zone := s.st.clusters[e.Cluster].nodes[s.st.clusters[e.Cluster].index[e.Node]].Labels[l]
				if z, ok := gangZone[k]; ok && z != zone {
					return fmt.Sprintf("gang %s leased across %s values %s and %s", sj.Gang.ID, l, z, zone)
				}
				gangZone[k] = zone
			}
			if gangLeased[k]++; gangLeased[k] == sj.Gang.Cardinality {
				delete(gangLeased, k)
			}
		}
	}
	for k, n := range gangLeased {
		return fmt.Sprintf("gang %q leased in part: %d members in one cycle", k, n)
	}
	for _, e := range news {
		if e.Type == events.Preempted && draining {
			return fmt.Sprintf("job %s preempted by a draining service", e.Job)
		}
	}
	if r.avoid {
		return r.checkAvoid(v, alive, news, crep)
	}
	return ""
}

// interleave runs cmds while a cycle's Schedule runs: a cycle among them
// must be refused with ErrCycleRunning.
func (r *svcRun) interleave(cmds []svcCmd) string {
	for _, c := range cmds {
		if c.kind == cmdCycle {
			if !r.w.srv.st.queued.cycling {
				continue // run after the cycle: no second cycle
			}
			if _, err := r.w.srv.Cycle(r.w.ctx); !errors.Is(err, ErrCycleRunning) {
				return fmt.Sprintf("a second cycle: %v, want ErrCycleRunning", err)
			}
			continue
		}
		if msg := r.do(c); msg != "" {
			return fmt.Sprintf("%s: %s", c, msg)
		}
	}
	return ""
}

// checkAvoid is rule 5: a cycle leases a job (a gang: its members leased
// together) to a cluster where it failed only when no other cluster that
// took part in the cycle, where it did not fail, had room for it. Room is
// the free capacity left after the cycle, counting the jobs it preempted
// as still there, and any lease that ended meanwhile, and the placements
// the service dropped (so only room the cycle had all along counts).
func (r *svcRun) checkAvoid(v *svcView, alive []string, news []events.Event, crep *CycleReport) string {
	s := r.w.srv
	free := map[string][]flotilla.Resources{} // per alive cluster, per node
	for _, name := range alive {
		c := s.st.clusters[name]
		for _, n := range c.nodes {
			if n.Unschedulable {
				free[name] = append(free[name], make(flotilla.Resources, len(n.Total)))
				continue
			}
			free[name] = append(free[name], n.Total.Clone())
		}
	}
	take := func(cluster, node string, req flotilla.Resources) {
		if free[cluster] == nil {
			return // not in the cycle (or no lease: a queued job cancelled)
		}
		if i, ok := s.st.clusters[cluster].index[node]; ok {
			free[cluster][i].Sub(req)
		}
	}
	for id, st := range v.jobs {
		if st.State.Live() {
			take(st.Cluster, st.Node, v.recs[id].Spec.Job.Requests)
		}
	}
	// Placements the service dropped (their job was cancelled while
	// Schedule ran) took room in the scheduler's view.
	leased := map[string]bool{}
	for _, e := range news {
		leased[e.Job] = leased[e.Job] || e.Type == events.Leased
	}
	if crep.Result != nil {
		for _, a := range crep.Result.Scheduled {
			if ref, ok := s.st.nodes[a.Node]; ok && !leased[a.Job.ID] {
				take(ref.cluster.name, ref.node, a.Job.Requests)
			}
		}
	}
	groups := map[string][]events.Event{}
	var order []string
	for _, e := range news {
		switch e.Type {
		case events.Preempted, events.Succeeded, events.Failed, events.Cancelled, events.LeaseExpired, events.LeaseReturned:
			take(e.Cluster, e.Node, v.recs[e.Job].Spec.Job.Requests)
		case events.Leased:
			k := e.Job
			if sj := v.recs[e.Job].Spec.Job; sj.IsGang() {
				k = gangKey(sj)
			}
			if groups[k] == nil {
				order = append(order, k)
			}
			groups[k] = append(groups[k], e)
		}
	}
	for _, k := range order {
		g := groups[k]
		to := g[0].Cluster
		var failed, avoided []string
		var reqs []flotilla.Resources
		for _, e := range g {
			failed = append(failed, v.jobs[e.Job].FailedClusters...)
			avoided = append(avoided, v.jobs[e.Job].AvoidNodes...)
			reqs = append(reqs, v.recs[e.Job].Spec.Job.Requests)
		}
		if !slices.Contains(failed, to) {
			continue
		}
		for _, other := range alive {
			if other == to || slices.Contains(failed, other) {
				continue
			}
			label := v.recs[g[0].Job].Spec.Job.Gang.NodeUniformityLabel
			// The nodes a run failed on under a rule that avoids them
			// are avoided too (a gang avoids every member's): the
			// other cluster has room only on the rest.
			room := slices.Clone(free[other])
			for i, n := range s.st.clusters[other].nodes {
				if slices.Contains(avoided, snapName(other, n.Name)) {
					room[i] = make(flotilla.Resources, len(room[i]))
				}
			}
			if fitsDomain(reqs, room, s.st.clusters[other].nodes, label) {
				return fmt.Sprintf("job %s leased back to %s, where it failed (%v), while %s had room (free %v)",
					g[0].Job, to, failed, other, free[other])
			}
		}
	}
	return ""
}

// fitsDomain reports whether first-fit places every request on the free
// capacities of nodes sharing one value of label (any nodes when label is
// empty).
func fitsDomain(reqs, free []flotilla.Resources, nodes []flotilla.Node, label string) bool {
	if label == "" {
		return fitsAll(reqs, free)
	}
	domains := map[string][]flotilla.Resources{}
	for i, n := range nodes {
		if v, ok := n.Labels[label]; ok {
			domains[v] = append(domains[v], free[i])
		}
	}
	for _, d := range slices.Sorted(maps.Keys(domains)) {
		if fitsAll(reqs, domains[d]) {
			return true
		}
	}
	return false
}

// fitsAll reports whether first-fit places every request on the nodes'
// free capacities (largest request first).
func fitsAll(reqs []flotilla.Resources, free []flotilla.Resources) bool {
	left := make([]flotilla.Resources, len(free))
	for i := range free {
		left[i] = free[i].Clone()
	}
	reqs = slices.Clone(reqs)
	slices.SortFunc(reqs, func(a, b flotilla.Resources) int { return int(b[0] - a[0]) })
	for _, q := range reqs {
		placed := false
		for i := range left {
			if q.Fits(left[i]) {
				left[i].Sub(q)
				placed = true
				break
			}
		}
		if !placed {
			return false
		}
	}
	return true
}

// settle brings every executor back with every node schedulable, the
// backend healthy, the service not draining (a restart), and lets the
// world run, five seconds a round, checking the invariants, until every
// job has ended.
func (r *svcRun) settle() string {
	r.flaky.armed = faultNone
	if r.w.srv.st.stopping {
		if msg := r.do(svcCmd{kind: cmdRestart}); msg != "" {
			return msg
		}
	}
	for _, e := range r.execs {
		e.alive = true
		for i := range e.nodes {
			e.nodes[i].Unschedulable = false
		}
	}
	for range 120 {
		v, msg := r.view()
		if msg != "" {
			return msg
		}
		if !slices.ContainsFunc(r.acked, func(id string) bool { return !v.jobs[id].State.Terminal() }) {
			return ""
		}
		r.w.clock.Advance(5 * time.Second)
		for _, e := range r.execs {
			if msg := r.report(e, svcCmd{kind: cmdReport}); msg != "" {
				return msg
			}
			if msg := r.check(); msg != "" {
				return msg
			}
		}
		if msg := r.cycle(nil); msg != "" {
			return msg
		}
		if msg := r.check(); msg != "" {
			return msg
		}
	}
	v, _ := r.view()
	var stuck []string
	for _, id := range r.acked {
		if st := v.jobs[id]; !st.State.Terminal() {
			stuck = append(stuck, fmt.Sprintf("%s %s attempts %d on %q", id, st.State, st.Attempts, st.Cluster))
		}
	}
	if len(stuck) == 0 {
		return ""
	}
	return "jobs never ended: " + strings.Join(stuck, "; ")
}
