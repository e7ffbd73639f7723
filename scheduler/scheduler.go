package scheduler

import (
	"context"
	"errors"
	"math"
	"slices"
	"time"

	"github.com/flotilla-sched/flotilla"
)

// Scheduler decides, one cycle at a time, which queued jobs run where. It is
// immutable after New and safe for concurrent use: every call to Schedule
// works on its own state. It never reads the clock or global randomness and
// starts no goroutines; (config, snapshot, now) determine the result.
type Scheduler struct {
	cfg        Config
	classes    []flotilla.PriorityClass
	classIndex map[string]int
	defClass   int
	// levels are the node database's levels: evictedLevel (below every
	// class), then the distinct class priorities, ascending.
	levels []int32
	// classLevel is the level a class's jobs look for room at; bindLevel the
	// level they hold capacity at (the top level for non-preemptible jobs,
	// which nothing may displace).
	classLevel, bindLevel []int
	// roundLimit is MaximumResourceFractionToSchedule as (resource, fraction).
	roundLimit []resFraction
	// forceTree runs the queue tree's code on flat worlds too (tests hold
	// it to the flat code's results).
	forceTree bool
	// noTreeMemo makes refusedByTree check every unit (tests hold the
	// remembered refusals to that).
	noTreeMemo bool
}

type resFraction struct {
	res  int
	frac float64
}

// New validates cfg (see Config.Validate) and returns a Scheduler. Every
// problem is reported at once, each a *flotilla.FieldError naming the field
// and value.
func New(cfg Config) (*Scheduler, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.defaults()
	// The topologies are the scheduler's own: a caller's later edits to
	// its slices change nothing.
	if cfg.Topologies != nil {
		ts := make([]flotilla.Topology, len(cfg.Topologies))
		for i, t := range cfg.Topologies {
			ts[i] = flotilla.Topology{Name: t.Name, Levels: slices.Clone(t.Levels)}
		}
		cfg.Topologies = ts
	}
	s := &Scheduler{
		cfg:        cfg,
		classes:    slices.Clone(cfg.PriorityClasses),
		classIndex: make(map[string]int, len(cfg.PriorityClasses)),
	}
	for i, pc := range s.classes {
		s.classIndex[pc.Name] = i
		s.levels = append(s.levels, pc.Priority)
	}
	slices.Sort(s.levels)
	s.levels = append([]int32{math.MinInt32}, slices.Compact(s.levels)...)
	for _, pc := range s.classes {
		l, _ := slices.BinarySearch(s.levels, pc.Priority)
		s.classLevel = append(s.classLevel, l)
		if pc.Preemptible {
			s.bindLevel = append(s.bindLevel, l)
		} else {
			s.bindLevel = append(s.bindLevel, len(s.levels)-1)
		}
	}
	s.defClass = s.classIndex[cfg.DefaultPriorityClass]
	for _, r := range sortedKeys(cfg.MaximumResourceFractionToSchedule) {
		i, ok := cfg.Schema.Index(r)
		if !ok {
			continue // capacity 0 everywhere: nothing is scheduled of it
		}
		s.roundLimit = append(s.roundLimit, resFraction{i, cfg.MaximumResourceFractionToSchedule[r]})
	}
	return s, nil
}

// Config returns the validated configuration with defaults filled in.
func (s *Scheduler) Config() Config { return s.cfg }

// Schedule runs one cycle over snap at time now. It returns an error only
// for a snapshot that is malformed (unknown queue, node or class; wrong
// vector length; a running gang across queues), a Queued store that fails to read, or a cancelled ctx;
// jobs that do not fit are reported in the Result with a reason. snap is
// not modified.
//
// The cycle's stages, in order:
//
//  1. Take stock (newCycle): check the snapshot; build the node database
//     once, with the running jobs bound (noting the nodes they
//     over-commit); the cost model, per-class caps, each
//     queue's demand (from the store), fair and adjusted fair shares, and
//     the rate-limit buckets at now.
//  2. Evict to fair share: the preemptible jobs of queues above their
//     protected share leave their nodes but hold their capacity (evict.go).
//  3. Fill: progressive filling offers each queue's evicted jobs back
//     first, then its new jobs in fair-share order (fill.go, gangs.go).
//     A new job takes free capacity if it can; else it displaces the
//     evicted jobs that would be rescheduled last (displace.go); else it
//     preempts lower-priority preemptible jobs on the node where the
//     fewest must go (urgency preemption, urgency.go). Urgency preemption
//     runs at the placement that needs it, not as a pass of its own,
//     because its victims depend on where that job lands.
//  4. Settle: evicted jobs that did not go back are preempted, jobs
//     displaced within the cycle leave Scheduled, incomplete gangs are
//     reported.
//
// The lottery strategy replaces stages 2 to 4 with slice-and-lottery
// leasing, which never preempts (lottery.go).
func (s *Scheduler) Schedule(ctx context.Context, snap *Snapshot, now time.Time) (*Result, error) {
	if snap == nil {
		return nil, errors.New("scheduler: nil snapshot")
	}
	// 1. Take stock.
	c, err := newCycle(s, snap, now)
	if err != nil {
		return nil, err
	}
	if s.cfg.Strategy == Lottery {
		if err := (&lottery{c}).run(ctx); err != nil {
			return nil, err
		}
		return c.result(), nil
	}
	// 2. Evict to fair share.
	c.pre.evictForFairShare()
	// 3. Fill.
	if err := c.fill(ctx); err != nil {
		return nil, err
	}
	// 4. Settle.
	c.settle()
	return c.result(), nil
}

// class resolves a job's priority class index.
func (s *Scheduler) class(j *flotilla.Job) (int, bool) {
	if j.PriorityClass == "" {
		return s.defClass, true
	}
	i, ok := s.classIndex[j.PriorityClass]
	return i, ok
}

// classOf is class, without hashing when there are few classes (their
// names are unique: Config.Validate).
func (s *Scheduler) classOf(j *flotilla.Job) (int, bool) {
	if j.PriorityClass == "" {
		return s.defClass, true
	}
	if len(s.classes) <= smallScan {
		for i := range s.classes {
			if s.classes[i].Name == j.PriorityClass {
				return i, true
			}
		}
		return 0, false
	}
	i, ok := s.classIndex[j.PriorityClass]
	return i, ok
}
