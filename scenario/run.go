package scenario

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/binpack"
	"github.com/flotilla-sched/flotilla/queue"
	"github.com/flotilla-sched/flotilla/scheduler"
)

// SchedulerConfig maps a built scenario's settings onto a scheduler.Config.
func (b *Built) SchedulerConfig() scheduler.Config {
	s := &b.Settings
	cfg := scheduler.DefaultConfig(b.Schema)
	cfg.PriorityClasses = b.PriorityClasses
	cfg.DefaultPriorityClass = s.DefaultPriorityClass
	cfg.Fairness = scheduler.FairnessModel(s.Fairness)
	cfg.ResourceWeights = s.ResourceWeights
	for _, ir := range s.IndexedResources {
		cfg.IndexedResources = append(cfg.IndexedResources, binpack.IndexedResource{Name: ir.Name, Resolution: ir.Resolution})
	}
	cfg.ProtectedFractionOfFairShare = s.ProtectedFractionOfFairShare
	cfg.EvictionProbability = s.EvictionProbability
	cfg.MaxQueueLookback = s.MaxQueueLookback
	cfg.MaximumResourceFractionToSchedule = s.MaximumResourceFractionToSchedule
	cfg.MaximumSchedulingRate = s.MaximumSchedulingRate
	cfg.MaximumSchedulingBurst = s.MaximumSchedulingBurst
	cfg.MaximumPerQueueSchedulingRate = s.MaximumPerQueueSchedulingRate
	cfg.MaximumPerQueueSchedulingBurst = s.MaximumPerQueueSchedulingBurst
	cfg.EnablePreferLargeJobOrdering = s.EnablePreferLargeJobOrdering
	cfg.Strategy = scheduler.Strategy(s.Strategy)
	cfg.PriorityHalftime = s.PriorityHalftime
	cfg.UseProbabilisticSchedulingForAllResources = s.UseProbabilisticSchedulingForAllResources
	cfg.UsageHalfLife = s.UsageHalfLife
	cfg.UsageWeight = s.UsageWeight
	cfg.Topologies = s.Topologies
	return cfg
}

// Run plays a built scenario through the real scheduler, one cycle per
// round, and returns what each round decided. Between rounds, scheduled jobs
// run on their node, preempted jobs leave (or go back to their queue with
// RequeuePreempted), and unscheduled jobs stay queued. A round's finish and
// cancel lists apply before its submissions; an id that is neither running
// (finish) nor queued or running (cancel) is an error naming the round.
//
// Run keeps every round: each lists every job still queued, so its memory
// grows with rounds × queued jobs. Use RunStream for large scenarios.
func Run(ctx context.Context, b *Built) (*Output, error) {
	out := &Output{}
	err := RunStream(ctx, b, func(r *RoundOutput) error {
		out.Rounds = append(out.Rounds, *r)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// RunStream plays a built scenario as Run does, but hands each round to emit
// as soon as the round is decided and keeps nothing of it afterwards, so its
// memory is that of the cluster and one round, whatever the number of
// rounds. emit must not keep r past its return (copy what it needs); an
// error from emit stops the run and is returned as it is. Rounds emitted
// before an error stay emitted.
func RunStream(ctx context.Context, b *Built, emit func(r *RoundOutput) error) error {
	return runStream(ctx, b, nil, emit)
}

// runStream is RunStream with decided, when not nil, called for each round
// right after the scheduler decided it (see RunInspect).
func runStream(ctx context.Context, b *Built, decided func(*Decision) error, emit func(r *RoundOutput) error) error {
	cfg := b.SchedulerConfig()
	cfg.ReportEveryUnscheduled = true // the output lists every job's reason
	sched, err := scheduler.New(cfg)
	if err != nil {
		return err
	}
	store, err := queue.New(b.Schema, b.PriorityClasses, b.Settings.DefaultPriorityClass)
	if err != nil {
		return err
	}
	st := &runState{b: b, store: store, running: map[string]int{}}
	var rate scheduler.RateLimitState
	var prios scheduler.QueuePriorityState
	// The file's usage seeds at round 0, with no time passed before it;
	// then each round's Result.Usage.
	usage := scheduler.UsageState{Usage: maps.Clone(b.Usage)}
	for ri := range b.Rounds {
		round := &b.Rounds[ri]
		if err := st.retire(ri, round); err != nil {
			return err
		}
		for i, j := range round.Submit {
			if err := store.Add(j); err != nil {
				return fmt.Errorf("rounds[%d].submit[%d]: %w", ri, i, err)
			}
		}
		snap := &scheduler.Snapshot{
			Nodes:           b.Nodes,
			Queues:          b.Queues,
			Running:         st.snapshotRunning(),
			Queued:          store,
			RateLimits:      rate,
			QueuePriorities: prios,
			Groups:          b.Groups,
			Usage:           usage,
			Seed:            b.Settings.Seed + uint64(ri),
		}
		res, err := sched.Schedule(ctx, snap, round.Time)
		if err != nil {
			return fmt.Errorf("rounds[%d]: %w", ri, err)
		}
		rate = res.RateLimits
		prios = res.QueuePriorities
		usage = res.Usage
		if decided != nil {
			if err := decided(&Decision{Round: ri, Snapshot: snap, Store: store, Result: res}); err != nil {
				return err
			}
		}
		ro, err := st.apply(ri, round, res)
		if err != nil {
			return err
		}
		if err := emit(&ro); err != nil {
			return err
		}
	}
	return nil
}

// runState is the fake cluster between rounds.
type runState struct {
	b     *Built
	store *queue.Store
	// live holds running jobs in start order, nil where one has left;
	// running maps a job id to its position in live.
	live    []scheduler.Running
	running map[string]int
}

func (st *runState) snapshotRunning() []scheduler.Running {
	out := make([]scheduler.Running, 0, len(st.running))
	for _, r := range st.live {
		if r.Job != nil {
			out = append(out, r)
		}
	}
	st.live = out
	for i, r := range out {
		st.running[r.Job.ID] = i
	}
	return slices.Clone(out)
}

func (st *runState) stop(id string) {
	st.live[st.running[id]] = scheduler.Running{}
	delete(st.running, id)
}

// retire applies a round's finish and cancel lists.
func (st *runState) retire(ri int, round *BuiltRound) error {
	for i, id := range round.Finish {
		if _, ok := st.running[id]; !ok {
			return flotilla.Errorf(fmt.Sprintf("rounds[%d].finish[%d]", ri, i), id, flotilla.ErrUnknownName, "no running job has this id")
		}
		st.stop(id)
	}
	for i, id := range round.Cancel {
		if _, ok := st.store.Remove(id); ok {
			continue
		}
		if _, ok := st.running[id]; ok {
			st.stop(id)
			continue
		}
		return flotilla.Errorf(fmt.Sprintf("rounds[%d].cancel[%d]", ri, i), id, flotilla.ErrUnknownName, "no queued or running job has this id")
	}
	return nil
}

// apply moves the cluster to the state the result decided and reports it.
func (st *runState) apply(ri int, round *BuiltRound, res *scheduler.Result) (RoundOutput, error) {
	ro := RoundOutput{Round: ri}
	requeued := map[string]string{}
	for _, p := range res.Preempted {
		if _, ok := st.running[p.Job.ID]; !ok {
			return ro, fmt.Errorf("rounds[%d]: scheduler preempted %q, which is not running", ri, p.Job.ID)
		}
		st.stop(p.Job.ID)
		pr := Preemption{Job: p.Job.ID, Queue: p.Job.Queue, Node: p.Node, Reason: string(p.Reason)}
		if p.For != nil {
			pr.For = p.For.ID
		}
		ro.Preempted = append(ro.Preempted, pr)
		if st.b.Settings.RequeuePreempted {
			if err := st.store.Add(p.Job); err != nil {
				return ro, fmt.Errorf("rounds[%d]: requeue %q: %w", ri, p.Job.ID, err)
			}
			requeued[p.Job.ID] = "preempted this round (" + string(p.Reason) + ") and requeued"
		}
	}
	for _, a := range res.Scheduled {
		if _, ok := st.store.Remove(a.Job.ID); !ok {
			return ro, fmt.Errorf("rounds[%d]: scheduler placed %q, which is not queued", ri, a.Job.ID)
		}
		st.running[a.Job.ID] = len(st.live)
		st.live = append(st.live, scheduler.Running{Job: a.Job, Node: a.Node, Start: round.Time})
		ro.Scheduled = append(ro.Scheduled, Placement{Job: a.Job.ID, Queue: a.Job.Queue, Node: a.Node})
	}
	// Every job still queued is unschedulable: those the cycle examined with
	// their own reason, the rest with their queue's not-examined reason.
	var seen map[string]bool
	ro.Unschedulable, seen = st.examined(res)
	why := map[string]string{}
	for _, r := range res.NotExamined {
		why[r.Queue] = r.Reason.String()
	}
	running := map[string]int{}
	alloc := map[string]flotilla.Resources{}
	for _, r := range st.live {
		if r.Job == nil {
			continue
		}
		running[r.Job.Queue]++
		if alloc[r.Job.Queue] == nil {
			alloc[r.Job.Queue] = st.b.Schema.Zero()
		}
		alloc[r.Job.Queue].Add(r.Job.Requests)
	}
	for qi, q := range st.b.Queues {
		st.store.Ascend(q.Name, func(e *queue.Entry) bool {
			if !seen[e.Job.ID] {
				reason := requeued[e.Job.ID]
				if reason == "" {
					reason = why[q.Name]
				}
				if reason == "" {
					reason = "not examined this round"
				}
				ro.Unschedulable = append(ro.Unschedulable, Unschedulable{Job: e.Job.ID, Queue: q.Name, Reason: reason})
			}
			return true
		})
		rep := res.Queues[qi]
		a := alloc[q.Name]
		if a == nil {
			a = st.b.Schema.Zero()
		}
		qr := QueueReport{
			Name:              q.Name,
			Parent:            q.Parent,
			Running:           running[q.Name],
			Queued:            st.store.QueueLen(q.Name),
			Allocated:         st.b.Schema.Format(a),
			Share:             rep.Share,
			FairShare:         rep.FairShare,
			AdjustedFairShare: rep.AdjustedFairShare,
		}
		if st.b.Settings.UsageOn() {
			u := rep.Usage
			qr.Usage = &u
		}
		ro.Queues = append(ro.Queues, qr)
	}
	ro.Groups = st.groupReports(res, ro.Queues, alloc)
	return ro, nil
}

// groupReports is the groups' standing at the end of a round: running,
// queued, allocated and usage summed over the queues below each group (as
// the round's queue entries give them), the shares from res.Groups (zero
// when the scheduler reports no groups). Nil when the file has no groups.
func (st *runState) groupReports(res *scheduler.Result, queues []QueueReport, alloc map[string]flotilla.Resources) []GroupReport {
	b := st.b
	if len(b.Groups) == 0 {
		return nil
	}
	index := make(map[string]int, len(b.Groups))
	for gi, g := range b.Groups {
		index[g.Name] = gi
	}
	out := make([]GroupReport, len(b.Groups))
	sums := make([]flotilla.Resources, len(b.Groups))
	usage := make([]float64, len(b.Groups))
	for gi, g := range b.Groups {
		out[gi] = GroupReport{Name: g.Name, Parent: g.Parent}
		sums[gi] = b.Schema.Zero()
		if gi < len(res.Groups) {
			r := res.Groups[gi]
			out[gi].Share, out[gi].FairShare, out[gi].AdjustedFairShare = r.Share, r.FairShare, r.AdjustedFairShare
		}
	}
	for qi, q := range b.Queues {
		// Build validated the tree: parents name groups and form no cycle.
		for p, ok := index[q.Parent]; ok; p, ok = index[b.Groups[p].Parent] {
			out[p].Running += queues[qi].Running
			out[p].Queued += queues[qi].Queued
			if a := alloc[q.Name]; a != nil {
				sums[p].Add(a)
			}
			if queues[qi].Usage != nil {
				usage[p] += *queues[qi].Usage
			}
		}
	}
	for gi := range out {
		out[gi].Allocated = b.Schema.Format(sums[gi])
		if b.Settings.UsageOn() {
			u := usage[gi]
			out[gi].Usage = &u
		}
	}
	return out
}

// examined lists the still-queued jobs the cycle examined and did not place,
// each once with its reason, and returns their ids. It is the runner's only
// reader of res.UnscheduledJobs (the per-job list the runner asks for).
func (st *runState) examined(res *scheduler.Result) ([]Unschedulable, map[string]bool) {
	var out []Unschedulable
	seen := make(map[string]bool, len(res.UnscheduledJobs))
	for _, u := range res.UnscheduledJobs {
		if _, queued := st.store.Get(u.Job.ID); !queued || seen[u.Job.ID] {
			continue
		}
		seen[u.Job.ID] = true
		out = append(out, Unschedulable{Job: u.Job.ID, Queue: u.Job.Queue, Reason: u.Reason.String()})
	}
	return out, seen
}
