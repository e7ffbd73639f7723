package memory

import (
	"cmp"
	"context"
	"maps"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/google/btree"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/backend"
	"github.com/flotilla-sched/flotilla/events"
)

// setKey names a job set.
type setKey struct{ queue, name string }

// jobSet is one job set: its jobs in the order they were stored, as
// handles of their records in Backend.recs (a job's position here is its
// record's index), and its log.
type jobSet struct {
	queue, name string
	jobs        chunked[uint32]
	// log.at(k) is the event of sequence number k+1.
	log chunked[event]
	// reasons holds the events' reasons; reasons[0] is "".
	reasons []string
	// ended indexes the set's ended jobs (nil until one ends).
	ended *endedIndex
}

// event is one stored event, compact: its job is jobs[job] of its set, its
// cluster and node are interned strings, its reason reasons[reason].
type event struct {
	time                  int64
	job                   uint32
	cluster, node, reason uint32
	exitCode              int32
	priority              uint32 // reprioritized's
	attempt               uint16
	typ                   events.Type
	requeued              bool
	rule                  uint8 // at most events.MaxRules
	avoidNode             bool
}

// jobRec is one stored job: its spec (sharing the submitted *flotilla.Job)
// and its state, compact (88 bytes): the rest of its spec is a runSpec
// it shares with the jobs stored before it that have the same (the jobs
// of a template), the cluster and node are interned, and what most jobs
// lack (a reason, failed clusters) is in extra. Records live in Backend.recs, never moving, and are named
// elsewhere by handle (their position there): a queued job's record is the
// only place the backend holds pointers for it, at most two (its job and
// its client id).
type jobRec struct {
	job                         *flotilla.Job
	clientID                    string
	submitted, leased, finished int64
	extra                       *recExtra // nil: no reason, no failed cluster
	run                         uint32    // in Backend.runs
	cluster, node               uint32
	index                       uint32 // in its set's jobs
	attempts                    int32
	exitCode                    int32
	state                       events.State
	cancelRequested             bool
}

// runSpec is the part of a job's spec besides its Job and client id: the
// settled grace period and deadline, the fake executor's runtime and exit
// code, and the principal (interned).
type runSpec struct {
	grace, deadline, runtime time.Duration
	exitCode                 int
	principal                uint32
	// pools are the spec's Pools (shared by the jobs of a template).
	pools []string
}

// runOf returns the number of s's runSpec in b.runs: the last one added
// when it is the same, else a new one. Jobs stored one after the other
// mostly come from one template and share it; jobs whose specs all
// differ cost a runSpec each, as they cost the fields before. Call with
// the write lock held.
func (b *Backend) runOf(s *backend.JobSpec) uint32 {
	r := runSpec{grace: s.TerminationGracePeriod, deadline: s.ActiveDeadline, runtime: s.Runtime, exitCode: s.ExitCode}
	if n := b.runs.len(); n > 0 {
		last := b.runs.at(n - 1)
		if last.grace == r.grace && last.deadline == r.deadline && last.runtime == r.runtime && last.exitCode == r.exitCode &&
			b.strs[last.principal] == s.Principal && slices.Equal(last.pools, s.Pools) {
			return uint32(n - 1)
		}
	}
	r.principal = b.intern(s.Principal)
	r.pools = slices.Clone(s.Pools)
	b.runs.append(r)
	return uint32(b.runs.len() - 1)
}

// recExtra is the part of a job's state that a queued job lacks.
type recExtra struct {
	reason string
	failed []uint32
	// reprioritized and priority are events.Job's.
	reprioritized bool
	priority      uint32
	// retries, rule and avoidNodes are events.Job's Retries, Rule and
	// AvoidNodes (nodes interned).
	retries    []int
	rule       int
	avoidNodes []uint32
}

// Unix nanoseconds cover 1678 to 2262; the zero time is stored as
// zeroTime.
var (
	minTime = time.Unix(0, math.MinInt64+1)
	maxTime = time.Unix(0, math.MaxInt64)
)

const zeroTime = math.MinInt64

func timeProblem(field string, t time.Time) error {
	if t.IsZero() || (!t.Before(minTime) && !t.After(maxTime)) {
		return nil
	}
	return flotilla.Errorf(field, t.Format(time.RFC3339Nano), flotilla.ErrOutOfRange, "want a time between 1678 and 2262")
}

func encodeTime(t time.Time) int64 {
	if t.IsZero() {
		return zeroTime
	}
	return t.UnixNano()
}

func decodeTime(n int64) time.Time {
	if n == zeroTime {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}

// state rebuilds a job's events.Job.
func (b *Backend) state(r *jobRec) events.Job {
	j := events.Job{
		ID: r.job.ID, Queue: r.job.Queue, JobSet: r.job.JobSet,
		State: r.state, Attempts: int(r.attempts), CancelRequested: r.cancelRequested,
		Cluster: b.strs[r.cluster], Node: b.strs[r.node],
		Submitted: decodeTime(r.submitted), Leased: decodeTime(r.leased), Finished: decodeTime(r.finished),
		ExitCode: int(r.exitCode),
	}
	if x := r.extra; x != nil {
		j.Reason = x.reason
		j.Reprioritized, j.Priority = x.reprioritized, x.priority
		if len(x.failed) > 0 {
			j.FailedClusters = make([]string, len(x.failed))
			for i, c := range x.failed {
				j.FailedClusters[i] = b.strs[c]
			}
		}
		j.Retries, j.Rule = slices.Clone(x.retries), x.rule
		if len(x.avoidNodes) > 0 {
			j.AvoidNodes = make([]string, len(x.avoidNodes))
			for i, n := range x.avoidNodes {
				j.AvoidNodes[i] = b.strs[n]
			}
		}
	}
	return j
}

// setState stores j into r. Call with the write lock held.
func (b *Backend) setState(r *jobRec, j *events.Job) {
	r.state, r.attempts, r.cancelRequested = j.State, int32(j.Attempts), j.CancelRequested
	r.cluster, r.node = b.intern(j.Cluster), b.intern(j.Node)
	r.submitted, r.leased, r.finished = encodeTime(j.Submitted), encodeTime(j.Leased), encodeTime(j.Finished)
	r.exitCode = int32(j.ExitCode)
	if j.Reason == "" && len(j.FailedClusters) == 0 && !j.Reprioritized && j.Retries == nil && j.Rule == 0 && j.AvoidNodes == nil {
		r.extra = nil
		return
	}
	if r.extra == nil {
		r.extra = new(recExtra)
	}
	x := r.extra
	x.reason = j.Reason
	x.reprioritized, x.priority = j.Reprioritized, j.Priority
	if len(j.FailedClusters) != len(x.failed) {
		x.failed = x.failed[:0]
		for _, c := range j.FailedClusters {
			x.failed = append(x.failed, b.intern(c))
		}
	}
	x.rule = j.Rule
	if !slices.Equal(x.retries, j.Retries) {
		x.retries = slices.Clone(j.Retries)
	}
	if len(j.AvoidNodes) != len(x.avoidNodes) {
		x.avoidNodes = x.avoidNodes[:0]
		for _, n := range j.AvoidNodes {
			x.avoidNodes = append(x.avoidNodes, b.intern(n))
		}
	}
}

// spec rebuilds a job's backend.JobSpec.
func (b *Backend) spec(r *jobRec) backend.JobSpec {
	run := b.runs.at(int(r.run))
	return backend.JobSpec{
		Job: r.job, ClientID: r.clientID, Principal: b.strs[run.principal],
		TerminationGracePeriod: run.grace, ActiveDeadline: run.deadline,
		Runtime: run.runtime, ExitCode: run.exitCode, Pools: slices.Clone(run.pools),
	}
}

// jobSet returns the job set named, creating it; last is the previous
// answer, returned again without a lookup when it is the one named.
func (b *Backend) jobSet(last *jobSet, queue, name string) *jobSet {
	if last != nil && last.queue == queue && last.name == name {
		return last
	}
	k := setKey{queue, name}
	s := b.sets[k]
	if s == nil {
		s = &jobSet{queue: queue, name: name, reasons: []string{""}}
		b.sets[k] = s
		names := b.setNames[queue]
		if names == nil {
			names = btree.NewOrderedG[string](32)
			b.setNames[queue] = names
		}
		names.ReplaceOrInsert(name)
	}
	return s
}

// Job returns one job's record; backend.ErrNotFound when there is none.
func (b *Backend) Job(ctx context.Context, id string) (backend.Record, error) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	if err := b.ready(ctx); err != nil {
		return backend.Record{}, err
	}
	r := b.job(id)
	if r == nil {
		return backend.Record{}, flotilla.Errorf("job", id, backend.ErrNotFound, "")
	}
	return backend.Record{Spec: b.spec(r), State: b.state(r)}, nil
}

// JobByClientID returns the id of the job submitted to queue with
// clientID; backend.ErrNotFound when there is none.
func (b *Backend) JobByClientID(ctx context.Context, queue, clientID string) (string, error) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	if err := b.ready(ctx); err != nil {
		return "", err
	}
	if clientID != "" {
		if r := b.client(b.perQueue[queue], clientID); r != nil {
			return r.job.ID, nil
		}
	}
	// No detail: a service asks for every client id it is submitted,
	// and most are new, so this error is built often.
	return "", flotilla.Errorf("clientId", clientID, backend.ErrNotFound, "")
}

var _ backend.ClientIDLookup = (*Backend)(nil)

// JobsByClientID is JobByClientID for many client ids of one queue, under
// one hold of the lock; see backend.ClientIDLookup.
func (b *Backend) JobsByClientID(ctx context.Context, queue string, clientIDs, ids []string) error {
	if len(ids) != len(clientIDs) {
		return flotilla.Errorf("ids", strconv.Itoa(len(ids)), flotilla.ErrInconsistent, "want %d, one per client id", len(clientIDs))
	}
	b.mu.RLock()
	defer b.mu.RUnlock()
	if err := b.ready(ctx); err != nil {
		return err
	}
	qs := b.perQueue[queue]
	if qs == nil || qs.clients.Len() == 0 {
		// No client id used in the queue. (Hash must not run on an
		// empty index: it seeds it, a write, and this holds the read
		// lock only.)
		clear(ids)
		return nil
	}
	hashes := make([]uint32, len(clientIDs))
	for i, c := range clientIDs {
		hashes[i] = qs.clients.Hash(c)
	}
	_ = qs.clients.Prefetch(hashes)
	for i, c := range clientIDs {
		ids[i] = ""
		if c != "" {
			if h, ok := qs.clients.FindHashed(hashes[i], c, b.clientIDOf); ok {
				ids[i] = b.rec(h).job.ID
			}
		}
	}
	return nil
}

var _ backend.JobLookup = (*Backend)(nil)

// JobsByID is Job for many ids, under one hold of the lock; see
// backend.JobLookup.
func (b *Backend) JobsByID(ctx context.Context, ids []string, recs []backend.Record) error {
	if len(recs) != len(ids) {
		return flotilla.Errorf("recs", strconv.Itoa(len(recs)), flotilla.ErrInconsistent, "want %d, one per id", len(ids))
	}
	b.mu.RLock()
	defer b.mu.RUnlock()
	if err := b.ready(ctx); err != nil {
		return err
	}
	for i, id := range ids {
		recs[i] = backend.Record{}
		if r := b.job(id); r != nil {
			recs[i] = backend.Record{Spec: b.spec(r), State: b.state(r)}
		}
	}
	return nil
}

// Events returns a job set's events from sequence number from on, at most
// limit (≤ 0: all); see backend.Jobs.
func (b *Backend) Events(ctx context.Context, queue, jobSet string, from uint64, limit int) ([]events.Event, error) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	if err := b.ready(ctx); err != nil {
		return nil, err
	}
	if _, ok := b.queues[queue]; !ok {
		return nil, flotilla.Errorf("queue", queue, backend.ErrNotFound, "")
	}
	s := b.sets[setKey{queue, jobSet}]
	if from == 0 {
		from = 1
	}
	if s == nil || from > uint64(s.log.len()) {
		return []events.Event{}, nil
	}
	start, end := int(from-1), s.log.len()
	if limit > 0 && limit < end-start {
		end = start + limit
	}
	out := make([]events.Event, 0, end-start)
	for k := start; k < end; k++ {
		ev := s.log.at(k)
		out = append(out, events.Event{
			Seq: uint64(k + 1), Time: decodeTime(ev.time), Queue: s.queue, JobSet: s.name,
			Job: b.rec(*s.jobs.at(int(ev.job))).job.ID, Type: ev.typ, Cluster: b.strs[ev.cluster], Node: b.strs[ev.node],
			Attempt: int(ev.attempt), Reason: s.reasons[ev.reason], ExitCode: int(ev.exitCode), Requeued: ev.requeued,
			Rule: int(ev.rule), AvoidNode: ev.avoidNode,
			Priority: ev.priority,
		})
	}
	return out, nil
}

// liveChunk is how many records LiveJobs reads under one hold of the lock.
const liveChunk = 256

// LiveJobs calls fn with every job not in a terminal state, job set by job
// set (sorted by queue, then name), each in the order its jobs were
// stored. It reads liveChunk jobs at a time and holds no lock while fn
// runs.
func (b *Backend) LiveJobs(ctx context.Context, fn func(backend.Record) error) error {
	b.mu.RLock()
	if err := b.ready(ctx); err != nil {
		b.mu.RUnlock()
		return err
	}
	keys := slices.SortedFunc(maps.Keys(b.sets), func(x, y setKey) int {
		if x.queue != y.queue {
			return cmp.Compare(x.queue, y.queue)
		}
		return cmp.Compare(x.name, y.name)
	})
	b.mu.RUnlock()
	buf := make([]backend.Record, 0, liveChunk)
	for _, k := range keys {
		for pos := 0; ; {
			b.mu.RLock()
			if err := b.ready(ctx); err != nil {
				b.mu.RUnlock()
				return err
			}
			s := b.sets[k]
			buf = buf[:0]
			for ; pos < s.jobs.len() && len(buf) < liveChunk; pos++ {
				if r := b.rec(*s.jobs.at(pos)); !r.state.Terminal() {
					buf = append(buf, backend.Record{Spec: b.spec(r), State: b.state(r)})
				}
			}
			done := pos >= s.jobs.len()
			b.mu.RUnlock()
			for _, r := range buf {
				if err := fn(r); err != nil {
					return err
				}
			}
			if done {
				break
			}
		}
	}
	return nil
}
