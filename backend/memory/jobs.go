package memory

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/backend"
	"github.com/flotilla-sched/flotilla/events"
)

// setKey names a job set.
type setKey struct{ queue, name string }

// jobSet is one job set: its jobs in the order they were stored and its log.
type jobSet struct {
	queue, name string
	jobs        chunked[*jobRec]
	// log.at(k) is the event of sequence number k+1.
	log chunked[event]
	// reasons holds the events' reasons; reasons[0] is "".
	reasons []string
}

// event is one stored event, compact: its job is jobs[job] of its set, its
// cluster and node are interned strings, its reason reasons[reason].
type event struct {
	time                  int64
	job                   uint32
	cluster, node, reason uint32
	exitCode              int32
	attempt               uint16
	typ                   events.Type
	requeued              bool
}

// jobRec is one stored job: its spec (sharing the submitted *flotilla.Job)
// and its state, compact (120 bytes): the principal, cluster and node are
// interned, and what most jobs lack (a reason, failed clusters) is in
// extra.
type jobRec struct {
	job                         *flotilla.Job
	clientID                    string
	grace, deadline, runtime    time.Duration
	specExit                    int
	submitted, leased, finished int64
	extra                       *recExtra // nil: no reason, no failed cluster
	principal                   uint32
	cluster, node               uint32
	index                       uint32 // in its set's jobs
	attempts                    int32
	exitCode                    int32
	state                       events.State
	cancelRequested             bool
}

// recExtra is the part of a job's state that a queued job lacks.
type recExtra struct {
	reason string
	failed []uint32
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
		if len(x.failed) > 0 {
			j.FailedClusters = make([]string, len(x.failed))
			for i, c := range x.failed {
				j.FailedClusters[i] = b.strs[c]
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
	if j.Reason == "" && len(j.FailedClusters) == 0 {
		r.extra = nil
		return
	}
	if r.extra == nil {
		r.extra = new(recExtra)
	}
	x := r.extra
	x.reason = j.Reason
	if len(j.FailedClusters) != len(x.failed) {
		x.failed = x.failed[:0]
		for _, c := range j.FailedClusters {
			x.failed = append(x.failed, b.intern(c))
		}
	}
}

// spec rebuilds a job's backend.JobSpec.
func (b *Backend) spec(r *jobRec) backend.JobSpec {
	return backend.JobSpec{
		Job: r.job, ClientID: r.clientID, Principal: b.strs[r.principal],
		TerminationGracePeriod: r.grace, ActiveDeadline: r.deadline,
		Runtime: r.runtime, ExitCode: r.specExit,
	}
}

// clientKey names a client id in its queue.
type clientKey struct{ queue, clientID string }

// scratch is Commit's working memory, kept between calls (under the write
// lock) so that a Commit allocates little besides what it stores.
type scratch struct {
	newIdx    map[string]int
	clients   map[clientKey]struct{}
	submitted []bool
	states    []events.Job
	evJob     []int32
	hashes    []uint32
	// touched indexes touchedRecs, the stored jobs a write's events
	// change, and touchedStates their staged states (Commit).
	touched       map[*jobRec]int
	touchedRecs   []*jobRec
	touchedStates []events.Job
}

// checkFields is Commit's check of each job and event of w on its own,
// without the lock: every problem as a FieldError (backend.Write's
// CheckFields, and what this backend's compact records cannot hold).
func (b *Backend) checkFields(w *backend.Write) []error {
	errs := w.CheckFields(b.schema)
	for i := range w.Events {
		e := &w.Events[i]
		p := func(f string) string { return fmt.Sprintf("events[%d].%s", i, f) }
		if !e.Time.IsZero() && (e.Time.Before(minTime) || e.Time.After(maxTime)) {
			errs = append(errs, timeProblem(p("time"), e.Time))
		}
		if e.Attempt < 0 || e.Attempt > math.MaxUint16 {
			errs = append(errs, flotilla.Errorf(p("attempt"), strconv.Itoa(e.Attempt), flotilla.ErrOutOfRange, "want 0 to %d", math.MaxUint16))
		}
		if e.ExitCode < math.MinInt32 || e.ExitCode > math.MaxInt32 {
			errs = append(errs, flotilla.Errorf(p("exitCode"), strconv.Itoa(e.ExitCode), flotilla.ErrOutOfRange, "want a 32-bit exit code"))
		}
	}
	return errs
}

// checkPairs is Commit's check of w as a whole, under the write lock: job
// ids and client ids distinct, every new job with exactly one submitted
// event and every submitted event with its job, in the same job set. It
// leaves each new job's index by id in b.scratch.newIdx.
func (b *Backend) checkPairs(w *backend.Write, errs []error) []error {
	sc := &b.scratch
	if sc.newIdx == nil {
		sc.newIdx, sc.clients = map[string]int{}, map[clientKey]struct{}{}
	}
	clear(sc.newIdx)
	clear(sc.clients)
	sc.submitted = slices.Grow(sc.submitted[:0], len(w.Jobs))[:len(w.Jobs)]
	clear(sc.submitted)
	for i := range w.Jobs {
		s := &w.Jobs[i]
		if s.Job == nil {
			continue
		}
		if _, dup := sc.newIdx[s.Job.ID]; dup {
			errs = append(errs, flotilla.Errorf(fmt.Sprintf("jobs[%d].job.id", i), s.Job.ID, backend.ErrDuplicate, "twice in one write"))
		} else {
			sc.newIdx[s.Job.ID] = i
		}
		if s.ClientID != "" {
			k := clientKey{s.Job.Queue, s.ClientID}
			if _, dup := sc.clients[k]; dup {
				errs = append(errs, flotilla.Errorf(fmt.Sprintf("jobs[%d].clientId", i), s.ClientID, backend.ErrDuplicate,
					"twice in queue %q in one write", s.Job.Queue))
			}
			sc.clients[k] = struct{}{}
		}
	}
	for i := range w.Events {
		e := &w.Events[i]
		if e.Type != events.Submitted {
			continue
		}
		idx, ok := sc.newIdx[e.Job]
		switch {
		case !ok:
			errs = append(errs, flotilla.Errorf(fmt.Sprintf("events[%d].job", i), e.Job, flotilla.ErrInconsistent,
				"a submitted event needs its job in the write's jobs"))
		case sc.submitted[idx]:
			errs = append(errs, flotilla.Errorf(fmt.Sprintf("events[%d].job", i), e.Job, backend.ErrDuplicate, "a second submitted event"))
		default:
			sc.submitted[idx] = true
			if j := w.Jobs[idx].Job; j.Queue != e.Queue || j.JobSet != e.JobSet {
				errs = append(errs, flotilla.Errorf(fmt.Sprintf("events[%d].jobSet", i), e.Queue+"/"+e.JobSet, flotilla.ErrInconsistent,
					"the job is in %s/%s", j.Queue, j.JobSet))
			}
		}
	}
	for i, s := range w.Jobs {
		if s.Job != nil && !sc.submitted[i] && sc.newIdx[s.Job.ID] == i {
			errs = append(errs, flotilla.Errorf(fmt.Sprintf("jobs[%d].job.id", i), s.Job.ID, flotilla.ErrInconsistent,
				"a new job needs its submitted event in the write"))
		}
	}
	return errs
}

// Commit applies w atomically; see backend.Jobs.
func (b *Backend) Commit(ctx context.Context, w *backend.Write) ([]events.Event, error) {
	if w == nil {
		return nil, flotilla.Errorf("write", "", flotilla.ErrRequired, "nil write")
	}
	errs := b.checkFields(w)
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.ready(ctx); err != nil {
		return nil, err
	}
	if w.Fence < b.fence {
		return nil, flotilla.Errorf("fence", strconv.FormatUint(w.Fence, 10), backend.ErrFenced, "a write with fence %d was applied", b.fence)
	}
	if errs = b.checkPairs(w, errs); len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	newIdx := b.scratch.newIdx

	// Check against the stored state, staging each job's state.
	var qs *queueState
	qsName := ""
	// hashes are the new jobs' ids' hashes in byID, for their insertion.
	hashes := slices.Grow(b.scratch.hashes[:0], len(w.Jobs))[:len(w.Jobs)]
	defer func() { b.scratch.hashes = hashes[:0] }()
	for i := range w.Jobs {
		hashes[i] = b.byID.Hash(w.Jobs[i].Job.ID)
	}
	_ = b.byID.Prefetch(hashes)
	for i := range w.Jobs {
		j := w.Jobs[i].Job
		if _, ok := b.byID.FindHashed(hashes[i], j.ID, b.idOf); ok {
			errs = append(errs, flotilla.Errorf(fmt.Sprintf("jobs[%d].job.id", i), j.ID, backend.ErrDuplicate, "the job is stored already"))
		}
		if c := w.Jobs[i].ClientID; c != "" {
			if qs == nil || qsName != j.Queue {
				qs, qsName = b.perQueue[j.Queue], j.Queue
			}
			if r := b.client(qs, c); r != nil {
				errs = append(errs, flotilla.Errorf(fmt.Sprintf("jobs[%d].clientId", i), c, backend.ErrDuplicate,
					"used in queue %q by job %q", j.Queue, r.job.ID))
			}
		}
	}
	states := slices.Grow(b.scratch.states[:0], len(w.Jobs))[:len(w.Jobs)]
	clear(states)
	defer func() { clear(states); b.scratch.states = states[:0] }()
	// evJob[i] is event i's job: ≥ 0 a new job's index in w.Jobs, < 0
	// -(k+1) for touchedRecs[k].
	evJob := slices.Grow(b.scratch.evJob[:0], len(w.Events))[:len(w.Events)]
	defer func() { b.scratch.evJob = evJob[:0] }()
	if b.scratch.touched == nil {
		b.scratch.touched = map[*jobRec]int{}
	}
	touched, touchedRecs, touchedStates := b.scratch.touched, b.scratch.touchedRecs[:0], b.scratch.touchedStates[:0]
	defer func() {
		// Kept for the next write, holding no pointers.
		clear(touched)
		clear(touchedRecs)
		clear(touchedStates)
		b.scratch.touchedRecs, b.scratch.touchedStates = touchedRecs[:0], touchedStates[:0]
	}()
	lastQueue := ""
	for i := range w.Events {
		e := &w.Events[i]
		if e.Queue != lastQueue {
			if _, ok := b.queues[e.Queue]; !ok {
				errs = append(errs, flotilla.Errorf(fmt.Sprintf("events[%d].queue", i), e.Queue, backend.ErrNotFound, ""))
				continue
			}
			lastQueue = e.Queue
		}
		var st *events.Job
		if idx, ok := newIdx[e.Job]; ok {
			st, evJob[i] = &states[idx], int32(idx)
		} else if r := b.job(e.Job); r != nil {
			ti, ok := touched[r]
			if !ok {
				ti = len(touchedRecs)
				touched[r] = ti
				touchedRecs = append(touchedRecs, r)
				touchedStates = append(touchedStates, b.state(r))
			}
			st, evJob[i] = &touchedStates[ti], -int32(ti)-1
		} else {
			errs = append(errs, flotilla.Errorf(fmt.Sprintf("events[%d].job", i), e.Job, backend.ErrNotFound, ""))
			continue
		}
		n, err := events.Transition(*st, *e)
		if err != nil {
			errs = append(errs, fmt.Errorf("events[%d]: %w", i, err))
			continue
		}
		*st = n
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}

	// Apply: nothing below fails.
	slab := make([]jobRec, len(w.Jobs))
	var set *jobSet
	for i := range w.Jobs {
		s := &w.Jobs[i]
		r := &slab[i]
		*r = jobRec{job: s.Job, clientID: s.ClientID, principal: b.intern(s.Principal), grace: s.TerminationGracePeriod, deadline: s.ActiveDeadline,
			runtime: s.Runtime, specExit: s.ExitCode}
		h := uint32(b.recs.len())
		b.recs.append(r)
		b.byID.InsertHashed(hashes[i], h)
		set = b.jobSet(set, s.Job.Queue, s.Job.JobSet)
		r.index = uint32(set.jobs.len())
		set.jobs.append(r)
		if qs == nil || qsName != s.Job.Queue {
			qs, qsName = b.queueState(s.Job.Queue), s.Job.Queue
		}
		if s.ClientID != "" {
			qs.clients.Insert(s.ClientID, h)
		}
		b.setState(r, &states[i])
		if !states[i].State.Terminal() {
			qs.live++
		}
	}
	for k, r := range touchedRecs {
		n := &touchedStates[k]
		if !r.state.Terminal() && n.State.Terminal() {
			b.perQueue[r.job.Queue].live--
		}
		b.setState(r, n)
	}
	// The events are returned in w.Events itself, each given its
	// sequence number and stored time (see backend.Jobs.Commit): a copy
	// would be as large as the write.
	for i := range w.Events {
		e := &w.Events[i]
		set = b.jobSet(set, e.Queue, e.JobSet)
		var r *jobRec
		if k := evJob[i]; k >= 0 {
			r = &slab[k]
		} else {
			r = touchedRecs[-k-1]
		}
		ev := event{
			time: encodeTime(e.Time), job: r.index,
			cluster: b.intern(e.Cluster), node: b.intern(e.Node),
			exitCode: int32(e.ExitCode), attempt: uint16(e.Attempt), typ: e.Type, requeued: e.Requeued,
		}
		if e.Reason != "" {
			ev.reason = uint32(len(set.reasons))
			set.reasons = append(set.reasons, e.Reason)
		}
		set.log.append(ev)
		e.Seq = uint64(set.log.len())
		e.Time = decodeTime(ev.time)
	}
	b.fence = w.Fence
	return w.Events, nil
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
			Job: (*s.jobs.at(int(ev.job))).job.ID, Type: ev.typ, Cluster: b.strs[ev.cluster], Node: b.strs[ev.node],
			Attempt: int(ev.attempt), Reason: s.reasons[ev.reason], ExitCode: int(ev.exitCode), Requeued: ev.requeued,
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
				if r := *s.jobs.at(pos); !r.state.Terminal() {
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
