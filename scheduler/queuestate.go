package scheduler

import (
	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/gang"
	"github.com/flotilla-sched/flotilla/queue"
)

// queueState is one queue's standing during the cycle: what it holds and
// may hold, its shares, what it offers next (next) and how far its stored
// jobs have been read (backlog).
type queueState struct {
	q      *flotilla.Queue
	weight float64
	// fair and adjusted are the queue's fair and adjusted fair shares.
	fair, adjusted float64
	// alloc is held by running and newly scheduled jobs, all classes;
	// allocByClass splits it per priority class for per-class limits.
	alloc        flotilla.Resources
	allocByClass []flotilla.Resources
	// limitByClass is the per-class cap in each resource's unit, nil when uncapped;
	// an entry < 0 means that resource is uncapped.
	limitByClass [][]int64
	demand       flotilla.Resources
	running      int
	queuedLen    int // queued at the start of the cycle
	scheduled    int
	// evicted are the queue's evicted jobs in LessEvicted order; evPos is
	// how many have been offered.
	evicted []int32
	evPos   int
	// retry are jobs placed this cycle and then displaced, offered again
	// before the queue's next new job; stopped is set once the queue may
	// take no more new jobs this cycle.
	retry   []int32
	stopped bool
	// reported is set once the queue's not-examined remainder is recorded.
	reported  bool
	lastGroup int // index in Result.Unscheduled of the queue's last group, or -1
	next      unit
	backlog
}

// unitKind says what a queue offers next.
type unitKind uint8

const (
	noUnit      unitKind = iota // nothing: the queue is done
	evictedUnit                 // a job evicted to fair share, going back
	retryUnit                   // a job placed this cycle, then displaced: offered again
	loneUnit                    // a queued job
	gangUnit                    // a complete gang of queued jobs
)

// unit is what a queue offers next, and what fairness judges it by: req,
// the whole gang's requests for a gang, and prio, its class priority (a
// gang's lowest).
type unit struct {
	kind unitKind
	// entry is the job, or the gang's first member.
	entry *queue.Entry
	gang  *gang.Gang
	// run is the job's index in the run table, for evictedUnit and
	// retryUnit.
	run  int32
	req  flotilla.Resources
	prio int32
	// For a lone job: its class, its scheduling key and whether it is
	// plain (no node selector, affinity, tolerations or avoided clusters
	// or nodes), read when the unit is loaded, so that trying it reads
	// nothing more of the job: by then the job has long left the cache
	// (a queue's turn comes back after every other queue's).
	class int32
	key   uint64
	plain bool
}

// loneOf is the unit of a single job, whose class is known: kind
// loneUnit, evictedUnit or retryUnit, the last two with the job's
// run-table index.
func (c *cycle) loneOf(kind unitKind, e *queue.Entry, run int32) unit {
	j := e.Job
	ci, _ := c.s.classOf(j)
	return unit{kind: kind, entry: e, run: run, req: j.Requests, prio: e.ClassPriority, class: int32(ci), key: e.Key,
		plain: len(j.NodeSelector) == 0 && len(j.NodeAffinity) == 0 && len(j.Tolerations) == 0 &&
			len(j.AvoidClusters) == 0 && len(j.AvoidNodes) == 0}
}

// gangOfUnit is the unit of complete gang g.
func gangOfUnit(g *gang.Gang) unit {
	return unit{kind: gangUnit, entry: g.Members[0], gang: g, run: -1, req: g.Requests, prio: g.ClassPriority}
}

// cost is the scheduling-rate tokens the unit needs: one per job.
func (u *unit) cost() int {
	if u.gang != nil {
		return len(u.gang.Members)
	}
	return 1
}

// backlog is how far a queue's stored jobs have been read: the reader, its
// batch buffer, the lookback's count and what the early finish
// (finishFailed) needs to know of the jobs taken.
type backlog struct {
	// reader reads the queue's stored jobs in order, a batch into buf at a
	// time; buf[bufPos:bufLen] are read and not yet taken.
	reader         queue.EntryReader
	buf            []*queue.Entry
	bufPos, bufLen int
	read           int // entries read from the store
	readDone       bool
	// last is the place of the last entry read that passed invalidQueued
	// (hasLast: one has): the next must sort after it (queue.Less), so no
	// job is taken twice.
	last    queue.Mark
	hasLast bool
	// pulled counts jobs taken from the cursor; examined counts units
	// toward the lookback (a gang once); peeked is a job read from the
	// cursor but not taken, because it would start a unit past the lookback.
	pulled, examined int
	peeked           *queue.Entry
	// begun counts gangs with members read but not complete; readAhead how
	// many jobs were read past the lookback looking for their members.
	begun, readAhead int
	// shortcut is set when the queue may be finished early; fails counts
	// its jobs that failed to fit, and the next check is due at checkAt.
	shortcut       bool
	fails, checkAt int
	keys           keyCounts
	// treeRefused holds the scheduling keys of the queue's lone jobs the
	// queue tree's limits or lending holds refused this cycle, with their
	// requests (refusedByTree, treeRefusal).
	treeRefused map[uint64]flotilla.Resources
}

// keyCounts counts the jobs taken from a queue so that the cycle can tell
// when every job left has a key that failed: gang members in all, lone
// jobs per scheduling key (the current run of equal keys, runKey × runLen,
// not yet added to keyPulled).
type keyCounts struct {
	storedGang, gangPulled int // the queue's stored gang members; those taken
	keyPulled              map[uint64]int
	runKey                 uint64
	runLen                 int
}
