package scheduler_test

// Accounting invariants of a cycle, checked over generated worlds (evicted
// gangs returning as a unit, gang preemption, same-cycle displacement and
// retry, lookback with peeked entries and gang members, limits, the
// lottery): every queued job is reported exactly once (scheduled, in an
// Unscheduled group's count, or counted in NotExamined); per queue,
// Running, Allocated and Queued balance with what the Result implies; no
// node is over-committed at any priority; gangs are placed or preempted
// whole.

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/leanovate/gopter/gen"
	"github.com/leanovate/gopter/prop"
	"github.com/stretchr/testify/require"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/queue"
	"github.com/flotilla-sched/flotilla/scheduler"
)

// Extra classes for the property's multi-level variants.
var (
	urgentClass    = flotilla.PriorityClass{Name: "urgent", Priority: 25000, Preemptible: true}
	scavengerClass = flotilla.PriorityClass{Name: "scavenger", Priority: 10000, Preemptible: true}
)

// accountingWorld is preemptWorld (gangs, running and queued, and fair-share
// preemption on) with knobs drawn from v: lookback, eviction probability,
// round, rate and class limits, two extra preemptible classes that jobs
// are moved into, gangs (running and queued) given a non-preemptible
// member so that they are pinned at the top level, and queued jobs that
// avoid clusters.
func accountingWorld(t testing.TB, seed uint64, v uint32) *genWorld {
	w := preemptWorld(t, seed)
	rng := rand.New(rand.NewPCG(seed, uint64(v)))
	w.cfg.MaxQueueLookback = int(v % 4)
	if v&(1<<2) != 0 {
		w.cfg.EvictionProbability = 0.5
	}
	if v&(1<<3) != 0 {
		w.cfg.MaximumResourceFractionToSchedule = map[string]float64{"cpu": 0.3}
	}
	if v&(1<<4) != 0 {
		w.cfg.MaximumPerQueueSchedulingRate = 1
		w.cfg.MaximumPerQueueSchedulingBurst = 2 + int(v>>11)%4
	}
	if v&(1<<5) != 0 {
		w.cfg.MaximumSchedulingRate = 1
		w.cfg.MaximumSchedulingBurst = 3 + int(v>>13)%6
	}
	classes := []string{flotilla.ArmadaPreemptible}
	if v&(1<<6) != 0 {
		w.cfg.PriorityClasses = append(w.cfg.PriorityClasses, urgentClass, scavengerClass)
		classes = append(classes, urgentClass.Name, scavengerClass.Name)
	}
	if v&(1<<7) != 0 {
		// Cap every class's share per queue: tryEvicted's and tryGang's
		// class-limit paths.
		for i := range w.cfg.PriorityClasses {
			w.cfg.PriorityClasses[i].MaximumResourceFractionPerQueue = map[string]float64{"cpu": 0.4}
		}
	}
	lowNP := false
	if v&(1<<10) != 0 {
		// A non-preemptible class below the preemptible ones: it binds at
		// the top level but searches at its own.
		w.cfg.PriorityClasses = append(w.cfg.PriorityClasses, flotilla.PriorityClass{Name: "batch", Priority: 15000})
		lowNP = true
	}
	// Move preemptible jobs among the preemptible classes; a gang's members
	// may end up in different classes.
	repick := func(j *flotilla.Job) {
		if lowNP && !classOf(w, j).Preemptible && rng.IntN(2) == 0 {
			j.PriorityClass = "batch"
		}
		if classOf(w, j).Preemptible || j.IsGang() {
			j.PriorityClass = classes[rng.IntN(len(classes))]
		}
	}
	for _, r := range w.snap.Running {
		repick(r.Job)
	}
	for _, j := range w.queued {
		repick(j)
	}
	// Pin gangs: one member of some gangs becomes non-preemptible.
	pinned := map[string]bool{}
	pin := func(j *flotilla.Job) {
		if j.IsGang() && !pinned[j.Gang.ID] && rng.IntN(3) == 0 {
			pinned[j.Gang.ID] = true
			j.PriorityClass = flotilla.ArmadaDefault
		}
	}
	if v&(1<<8) != 0 {
		for _, r := range w.snap.Running {
			pin(r.Job)
		}
		for _, j := range w.queued {
			pin(j)
		}
	}
	if v&(1<<9) != 0 {
		w.cfg.Strategy = scheduler.Lottery
		w.cfg.PriorityHalftime = time.Hour
	}
	if v&(1<<12) != 0 {
		// Few scheduling keys and no queued gangs, so that queues run out
		// of jobs that could fit and are finished early (finishFailed).
		lone := w.queued[:0]
		for _, j := range w.queued {
			if !j.IsGang() {
				lone = append(lone, j)
			}
		}
		for i, q := range w.snap.Queues {
			for k := range 20 * (i + 1) {
				lone = append(lone, &flotilla.Job{ID: fmt.Sprintf("x%d-%d", i, k), Queue: q.Name, SubmitTime: t0.Add(time.Duration(k%7) * time.Second)})
			}
		}
		for _, j := range lone {
			j.Requests = w.cfg.Schema.MustParse(map[string]string{"cpu": []string{"1", "2"}[rng.IntN(2)], "memory": "4Gi"})
			j.NodeSelector, j.Tolerations = nil, nil
			j.PriorityClass = classes[rng.IntN(len(classes))]
		}
		w.queued = lone
	}
	if v&(1<<14) != 0 {
		// Some queued jobs (gang members too) avoid a cluster or both:
		// their searches outside those clusters run first, and must leave
		// the books as balanced as any other search.
		sets := [][]string{{"c0"}, {"c1"}, {"c1", "c0"}}
		for _, j := range w.queued {
			if rng.IntN(3) == 0 {
				j.AvoidClusters = sets[rng.IntN(len(sets))]
			}
		}
	}
	// The store orders by class priority: rebuild it with the final classes.
	store, err := queue.New(w.cfg.Schema, w.cfg.PriorityClasses, w.cfg.DefaultPriorityClass)
	require.NoError(t, err)
	for _, j := range w.queued {
		require.NoError(t, store.Add(j))
	}
	w.snap.Queued = store
	return w
}

// accountingInvariants checks res against w's snapshot. It returns the first
// violation, or "".
func accountingInvariants(w *genWorld, res *scheduler.Result) string {
	schema := w.cfg.Schema
	running := map[string]*flotilla.Job{}
	gangMembers := map[string][]*flotilla.Job{} // running gangs
	for _, r := range w.snap.Running {
		running[r.Job.ID] = r.Job
		if r.Job.IsGang() {
			gangMembers[r.Job.Gang.ID] = append(gangMembers[r.Job.Gang.ID], r.Job)
		}
	}
	queued := map[string]*flotilla.Job{}
	queuedGangs := map[string][]*flotilla.Job{}
	queuedPerQueue := map[string]int{}
	for _, j := range w.queued {
		queued[j.ID] = j
		queuedPerQueue[j.Queue]++
		if j.IsGang() {
			queuedGangs[j.Gang.ID] = append(queuedGangs[j.Gang.ID], j)
		}
	}
	// A gang with a non-preemptible member is never preempted and holds
	// its capacity at every priority.
	pinnedGang := func(members []*flotilla.Job) bool {
		for _, m := range members {
			if !classOf(w, m).Preemptible {
				return true
			}
		}
		return false
	}

	preempted := map[string]bool{}
	preemptedPerQueue := map[string]int{}
	for _, p := range res.Preempted {
		j, ok := running[p.Job.ID]
		switch {
		case !ok:
			return fmt.Sprintf("preempted %s is not a running job", p.Job.ID)
		case preempted[p.Job.ID]:
			return "preempted twice: " + p.Job.ID
		case !classOf(w, j).Preemptible:
			return fmt.Sprintf("non-preemptible %s preempted (%s)", j.ID, p.Reason)
		case j.IsGang() && pinnedGang(gangMembers[j.Gang.ID]):
			return fmt.Sprintf("%s of gang %s with a non-preemptible member preempted (%s)", j.ID, j.Gang.ID, p.Reason)
		case p.Reason == scheduler.PreemptedForUrgency && p.For == nil:
			return fmt.Sprintf("%s preempted for urgency names no job", j.ID)
		case p.Reason == scheduler.PreemptedForUrgency && classOf(w, p.For).Priority <= classOf(w, j).Priority:
			// Urgency takes only jobs of strictly lower priority, a gang's
			// members included.
			return fmt.Sprintf("%s (%s) preempted for urgency by %s (%s)", j.ID, j.PriorityClass, p.For.ID, p.For.PriorityClass)
		}
		preempted[p.Job.ID] = true
		preemptedPerQueue[j.Queue]++
	}
	for id, ms := range gangMembers {
		n := 0
		for _, m := range ms {
			if preempted[m.ID] {
				n++
			}
		}
		if n != 0 && n != len(ms) {
			return fmt.Sprintf("running gang %s: %d of %d members preempted", id, n, len(ms))
		}
	}

	seen := map[string]string{}
	scheduledPerQueue := map[string]int{}
	reportedPerQueue := map[string]int{}
	alloc := map[string]flotilla.Resources{}
	for _, q := range w.snap.Queues {
		alloc[q.Name] = schema.Zero()
	}
	for _, r := range w.snap.Running {
		if !preempted[r.Job.ID] {
			alloc[r.Job.Queue].Add(r.Job.Requests)
		}
	}
	nodes := map[string]*flotilla.Node{}
	for _, n := range w.snap.Nodes {
		nodes[n.Name] = n
	}
	placedGang := map[string][]*flotilla.Node{}
	for _, a := range res.Scheduled {
		if a.Job == nil {
			return "nil job in Scheduled"
		}
		if _, ok := queued[a.Job.ID]; !ok {
			return fmt.Sprintf("scheduled %s is not a queued job", a.Job.ID)
		}
		if seen[a.Job.ID] != "" {
			return "scheduled twice: " + a.Job.ID
		}
		if nodes[a.Node] == nil {
			return fmt.Sprintf("%s scheduled on unknown node %q", a.Job.ID, a.Node)
		}
		seen[a.Job.ID] = "scheduled"
		scheduledPerQueue[a.Job.Queue]++
		reportedPerQueue[a.Job.Queue]++
		alloc[a.Job.Queue].Add(a.Job.Requests)
		if a.Job.IsGang() {
			placedGang[a.Job.Gang.ID] = append(placedGang[a.Job.Gang.ID], nodes[a.Node])
		}
	}
	// Unscheduled groups: counted per queue; their examples are queued jobs
	// of the group's queue and key, not also scheduled.
	perJob := map[groupID]int{}
	if w.cfg.ReportEveryUnscheduled {
		for _, u := range res.UnscheduledJobs {
			if _, ok := queued[u.Job.ID]; !ok {
				return fmt.Sprintf("unscheduled %s is not a queued job", u.Job.ID)
			}
			if seen[u.Job.ID] != "" {
				return fmt.Sprintf("%s both %s and unscheduled (%s)", u.Job.ID, seen[u.Job.ID], u.Reason)
			}
			seen[u.Job.ID] = "unscheduled"
			perJob[groupID{u.Job.Queue, u.Reason.Code, jobKey(w, u.Job)}]++
		}
	} else if res.UnscheduledJobs != nil {
		return "UnscheduledJobs listed without ReportEveryUnscheduled"
	}
	groups := map[groupID]bool{}
	for _, g := range res.Unscheduled {
		id := groupID{g.Queue, g.Reason.Code, g.Key}
		if groups[id] {
			return fmt.Sprintf("group %v twice", id)
		}
		groups[id] = true
		if g.Count <= 0 || len(g.Examples) > min(g.Count, scheduler.UnscheduledExamples) {
			return fmt.Sprintf("group %v: count %d, %d examples", id, g.Count, len(g.Examples))
		}
		if w.cfg.ReportEveryUnscheduled && perJob[id] != g.Count {
			return fmt.Sprintf("group %v: count %d, %d jobs listed", id, g.Count, perJob[id])
		}
		for _, j := range g.Examples {
			if _, ok := queued[j.ID]; !ok || j.Queue != g.Queue || jobKey(w, j) != g.Key || seen[j.ID] == "scheduled" {
				return fmt.Sprintf("group %v: example %s is not an unscheduled queued job of the group", id, j.ID)
			}
		}
		reportedPerQueue[g.Queue] += g.Count
	}
	// Progressive filling reports a queue's remainder once; the lottery
	// once per reason (lookback, rate limit, cycle limit).
	remainders := map[string]bool{}
	for _, n := range res.NotExamined {
		key := n.Queue
		if w.cfg.Strategy == scheduler.Lottery {
			key += "/" + n.Reason.Code.String()
		}
		if remainders[key] {
			return fmt.Sprintf("queue %s appears twice in NotExamined: %v", n.Queue, res.NotExamined)
		}
		if n.Count <= 0 {
			return fmt.Sprintf("queue %s: NotExamined count %d", n.Queue, n.Count)
		}
		remainders[key] = true
		reportedPerQueue[n.Queue] += n.Count
	}

	// Gangs, queued: all members placed or none, in one cluster.
	for id, ns := range placedGang {
		if card := queuedGangs[id][0].Gang.Cardinality; len(ns) != card || len(queuedGangs[id]) != card {
			return fmt.Sprintf("gang %s: %d placed, cardinality %d, %d queued", id, len(ns), card, len(queuedGangs[id]))
		}
		for _, n := range ns {
			if n.Cluster != ns[0].Cluster {
				return fmt.Sprintf("gang %s spans clusters", id)
			}
		}
	}

	// Per queue: Running, Allocated, Queued, and every queued job once.
	if len(res.Queues) != len(w.snap.Queues) {
		return fmt.Sprintf("%d queue reports for %d queues", len(res.Queues), len(w.snap.Queues))
	}
	snapRunning := map[string]int{}
	for _, r := range w.snap.Running {
		snapRunning[r.Job.Queue]++
	}
	for i, q := range res.Queues {
		name := w.snap.Queues[i].Name
		if q.Name != name {
			return fmt.Sprintf("Queues[%d] is %s, want %s", i, q.Name, name)
		}
		if want := snapRunning[name] - preemptedPerQueue[name] + scheduledPerQueue[name]; q.Running != want {
			return fmt.Sprintf("queue %s: Running %d, want %d running − %d preempted + %d scheduled = %d",
				name, q.Running, snapRunning[name], preemptedPerQueue[name], scheduledPerQueue[name], want)
		}
		if !q.Allocated.Equal(alloc[name]) {
			return fmt.Sprintf("queue %s: Allocated %v, want %v", name, q.Allocated, alloc[name])
		}
		if want := queuedPerQueue[name] - scheduledPerQueue[name]; q.Queued != want {
			return fmt.Sprintf("queue %s: Queued %d, want %d", name, q.Queued, want)
		}
		if reportedPerQueue[name] != queuedPerQueue[name] {
			return fmt.Sprintf("queue %s: %d queued, %d reported (scheduled+unscheduled+not examined); NotExamined=%v",
				name, queuedPerQueue[name], reportedPerQueue[name], res.NotExamined)
		}
	}

	// Rate limits: every bucket starts full, and only jobs that stay
	// scheduled spend a token (displaced ones are refunded).
	if w.cfg.MaximumSchedulingRate > 0 {
		if got, want := res.RateLimits.Global.Tokens, float64(w.cfg.MaximumSchedulingBurst-len(res.Scheduled)); got != want {
			return fmt.Sprintf("global tokens %v, want burst − scheduled = %v", got, want)
		}
	}
	if w.cfg.MaximumPerQueueSchedulingRate > 0 {
		for _, q := range w.snap.Queues {
			if got, want := res.RateLimits.PerQueue[q.Name].Tokens, float64(w.cfg.MaximumPerQueueSchedulingBurst-scheduledPerQueue[q.Name]); got != want {
				return fmt.Sprintf("queue %s tokens %v, want burst − scheduled = %v", q.Name, got, want)
			}
		}
	}
	return overCommittedPinned(w, res, preempted)
}

// overCommittedPinned is overCommitted with members of a gang that has a
// non-preemptible member counted at every priority, as they are bound.
func overCommittedPinned(w *genWorld, res *scheduler.Result, preempted map[string]bool) string {
	type placed struct {
		j    *flotilla.Job
		node string
	}
	var all []placed
	for _, r := range w.snap.Running {
		if !preempted[r.Job.ID] {
			all = append(all, placed{r.Job, r.Node})
		}
	}
	for _, a := range res.Scheduled {
		all = append(all, placed{a.Job, a.Node})
	}
	pinned := map[string]bool{}
	for _, x := range all {
		if x.j.IsGang() && !classOf(w, x.j).Preemptible {
			pinned[x.j.Gang.ID] = true
		}
	}
	for _, pc := range w.cfg.PriorityClasses {
		free := map[string]flotilla.Resources{}
		for _, n := range w.snap.Nodes {
			free[n.Name] = n.Total.Clone()
		}
		for _, x := range all {
			c := classOf(w, x.j)
			if c.Priority >= pc.Priority || !c.Preemptible || pinned[x.j.Gang.ID] && x.j.IsGang() {
				free[x.node].Sub(x.j.Requests)
				if free[x.node].AnyNegative() {
					return fmt.Sprintf("%s over-committed at priority %d by %s", x.node, pc.Priority, x.j.ID)
				}
			}
		}
	}
	return ""
}

// groupID names an Unscheduled group.
type groupID struct {
	queue string
	code  scheduler.ReasonCode
	key   uint64
}

// jobKey is a queued job's scheduling key in w.
func jobKey(w *genWorld, j *flotilla.Job) uint64 {
	return queue.SchedulingKey(j, classOf(w, j).Priority)
}

// accountingCheck schedules w with and without ReportEveryUnscheduled, checks
// accountingInvariants on both results, and that both place and preempt the
// same jobs: reporting in aggregate (and finishing early queues whose
// remaining jobs all failed) changes no decision.
func accountingCheck(w *genWorld) string {
	var placed, reported [2]string
	for i, every := range []bool{true, false} {
		w.cfg.ReportEveryUnscheduled = every
		s, err := scheduler.New(w.cfg)
		if err != nil {
			return fmt.Sprintf("config: %v", err)
		}
		res, err := s.Schedule(context.Background(), w.snap, t0)
		if err != nil {
			return err.Error()
		}
		if msg := accountingInvariants(w, res); msg != "" {
			return fmt.Sprintf("ReportEveryUnscheduled %v: %s", every, msg)
		}
		placed[i] = fmt.Sprint(res.Scheduled, res.Preempted)
		reported[i] = reportedCounts(res)
	}
	if placed[0] != placed[1] {
		return fmt.Sprintf("placements differ with and without ReportEveryUnscheduled:\n%s\n%s", placed[0], placed[1])
	}
	// The early finish reports what reading on would have, except that a
	// round or global rate limit reached after it cannot claim its jobs
	// (README, Known gaps).
	if w.cfg.MaximumResourceFractionToSchedule == nil && w.cfg.MaximumSchedulingRate == 0 && reported[0] != reported[1] {
		return fmt.Sprintf("unscheduled counts differ with and without ReportEveryUnscheduled:\n%s\n%s", reported[0], reported[1])
	}
	return ""
}

// reportedCounts lists a result's Unscheduled group counts and NotExamined
// counts in a canonical order.
func reportedCounts(res *scheduler.Result) string {
	var lines []string
	for _, g := range res.Unscheduled {
		lines = append(lines, fmt.Sprintf("unscheduled %s %s %x: %d", g.Queue, g.Reason.Code, g.Key, g.Count))
	}
	for _, n := range res.NotExamined {
		lines = append(lines, fmt.Sprintf("not examined %s %s: %d", n.Queue, n.Reason.Code, n.Count))
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}

// Over generated worlds, with and without ReportEveryUnscheduled: every
// queued job is reported exactly once; Running, Allocated and Queued
// balance; no over-commit at any priority; gangs whole.
func TestPropertyAccountingInvariants(t *testing.T) {
	p := properties(t)
	p.Property("Running, Allocated, Queued, every queued job once, no over-commit, gangs whole", prop.ForAll(func(seed uint64, v uint32) string {
		if msg := accountingCheck(accountingWorld(t, seed, v)); msg != "" {
			return fmt.Sprintf("seed %d v %d: %s", seed, v, msg)
		}
		return ""
	}, gen.UInt64(), gen.UInt32Range(0, 1<<16-1)))
	p.TestingRun(t)
}

// The same invariants over a fixed sweep, so that a failure names a small
// seed and knob value that replay without gopter.
func TestAccountingInvariantsOverASeedSweep(t *testing.T) {
	n := uint64(3000)
	if testing.Short() {
		n = 300
	}
	for seed := range n {
		v := uint32(seed*2654435761) & (1<<16 - 1)
		if msg := accountingCheck(accountingWorld(t, seed, v)); msg != "" {
			t.Fatalf("seed %d v %d: %s", seed, v, msg)
		}
	}
}

// Bookkeeping over generated worlds (preemptWorld and lookback variants):
// per queue, Allocated and Running equal what the Result implies; every
// queued job is reported exactly once (scheduled, unscheduled, or counted
// in NotExamined); no job is both scheduled and preempted or scheduled
// twice; running gangs lose all members or none.
func TestAccountingBalancesOverPreemptionWorldsWithLookback(t *testing.T) {
	for seed := range uint64(1500) {
		w := preemptWorld(t, seed)
		w.cfg.MaxQueueLookback = int(seed % 4)
		if seed%5 == 0 {
			w.cfg.MaximumResourceFractionToSchedule = map[string]float64{"cpu": 0.3}
		}
		res := w.schedule(t)
		if msg := bookkeeping(w, res); msg != "" {
			t.Fatalf("seed %d (lookback %d): %s", seed, w.cfg.MaxQueueLookback, msg)
		}
	}
}

// bookkeeping checks res against w: it returns the first imbalance, or "".
func bookkeeping(w *genWorld, res *scheduler.Result) string {
	schema := w.cfg.Schema
	alloc := map[string]flotilla.Resources{}
	running := map[string]int{}
	for _, q := range w.snap.Queues {
		alloc[q.Name] = schema.Zero()
	}
	preempted := map[string]bool{}
	for _, p := range res.Preempted {
		if preempted[p.Job.ID] {
			return "preempted twice: " + p.Job.ID
		}
		preempted[p.Job.ID] = true
	}
	gangs := map[string][2]int{}
	for _, r := range w.snap.Running {
		if id := r.Job.Gang.ID; id != "" {
			c := gangs[id]
			c[0]++
			if preempted[r.Job.ID] {
				c[1]++
			}
			gangs[id] = c
		}
		if !preempted[r.Job.ID] {
			alloc[r.Job.Queue].Add(r.Job.Requests)
			running[r.Job.Queue]++
		}
	}
	for id, c := range gangs {
		if c[1] != 0 && c[1] != c[0] {
			return fmt.Sprintf("running gang %s lost %d of %d members", id, c[1], c[0])
		}
	}
	seen := map[string]string{}
	perQueue := map[string]int{}
	for _, a := range res.Scheduled {
		if preempted[a.Job.ID] {
			return "scheduled and preempted: " + a.Job.ID
		}
		if seen[a.Job.ID] != "" {
			return "reported twice: " + a.Job.ID
		}
		seen[a.Job.ID] = "scheduled"
		alloc[a.Job.Queue].Add(a.Job.Requests)
		running[a.Job.Queue]++
		perQueue[a.Job.Queue]++
	}
	for _, u := range res.UnscheduledJobs {
		if seen[u.Job.ID] != "" {
			return fmt.Sprintf("%s both %s and unscheduled (%s)", u.Job.ID, seen[u.Job.ID], u.Reason)
		}
		seen[u.Job.ID] = "unscheduled"
		perQueue[u.Job.Queue]++
	}
	for _, n := range res.NotExamined {
		perQueue[n.Queue] += n.Count
	}
	queued := map[string]int{}
	for _, j := range w.queued {
		queued[j.Queue]++
	}
	for _, q := range res.Queues {
		if !q.Allocated.Equal(alloc[q.Name]) {
			return fmt.Sprintf("queue %s: Allocated %v, running+scheduled-preempted %v", q.Name, q.Allocated, alloc[q.Name])
		}
		if q.Running != running[q.Name] {
			return fmt.Sprintf("queue %s: Running %d, want %d", q.Name, q.Running, running[q.Name])
		}
		if perQueue[q.Name] != queued[q.Name] {
			return fmt.Sprintf("queue %s: %d queued jobs, %d reported (scheduled+unscheduled+not examined)", q.Name, queued[q.Name], perQueue[q.Name])
		}
	}
	return ""
}
