package memory

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/backend"
	"github.com/flotilla-sched/flotilla/events"
	"github.com/flotilla-sched/flotilla/internal/idindex"
)

// clientKey names a client id in its queue.
type clientKey struct{ queue, clientID string }

// notNew marks, in scratch.evJob, an event whose job is not one of the
// write's new jobs.
const notNew = -1

// scratch is Commit's working memory, kept between calls (under the write
// lock) so that a Commit allocates little besides what it stores.
type scratch struct {
	// idHash[i] is the hash of w.Jobs[i]'s id in byID, and clientHash[i]
	// that of its client id in its queue's clients index (0 without a
	// client id), each computed once for the check and the insertion. In
	// a queue never created, whose writes are refused, clientHash[i] is
	// the client id's hash in byID, for pairByPosition only.
	idHash, clientHash []uint32
	// evHash[i] is the hash in byID of the job of a write's event i when
	// that job is stored already (prefetched before it is read).
	evHash []uint32
	// pairIDs and pairClients index w.Jobs by id and by client id, a
	// handle being a position in w.Jobs (pairByPosition). Unlike maps
	// they hold no pointers and are cleared without freeing their room.
	pairIDs, pairClients idindex.Index
	// pairRoom is the most jobs pairIDs and pairClients were sized for.
	pairRoom int
	// newIdx, clients and submitted are checkPairs' working memory;
	// pairsRoom is the most jobs newIdx and clients held.
	newIdx    map[string]int
	clients   map[clientKey]struct{}
	pairsRoom int
	submitted []bool
	states    []events.Job
	// evJob[i] is event i's job: ≥ 0 a new job's index in w.Jobs, < 0
	// -(k+1) for touchedRecs[k] (notNew until Commit finds the job).
	evJob []int32
	// touched indexes touchedRecs, the stored jobs a write's events
	// change, and touchedStates their staged states (Commit);
	// touchedRoom is the most jobs touched held.
	touched       map[*jobRec]int
	touchedRoom   int
	touchedRecs   []*jobRec
	touchedStates []events.Job
}

// oversized reports whether working memory with room for room jobs (or
// events) is too large to keep for a write of n: sized for a write over
// eight times larger, and for more than 4,096. Such memory is given back
// rather than kept, and cleared, for every small write after one huge one.
func oversized(room, n int) bool { return room > max(8*n, 4096) }

// resize returns s with length n, in s's room unless that is oversized
// for n (then in new room). The elements are s's old ones, or zero.
func resize[T any](s []T, n int) []T {
	if oversized(cap(s), n) {
		s = nil
	}
	return slices.Grow(s[:0], n)[:n]
}

// emptied returns s emptied, in s's room unless that is oversized for n.
func emptied[T any](s []T, n int) []T {
	if oversized(cap(s), n) {
		return nil
	}
	return s[:0]
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

// hashNew hashes the new jobs' ids and client ids into b.scratch, once for
// both the checks and the insertions, and prefetches the slots they probe
// in byID and the clients indexes, so that the lookups that follow find
// them in cache. Call with the write lock held (a first Hash seeds an
// index) and with every w.Jobs[i].Job set.
//
// A queue that is defined but has no state yet is given an empty one, to
// hash into: an empty state answers every reader as a missing one does,
// so a write refused later changes nothing observable.
func (b *Backend) hashNew(w *backend.Write) {
	sc := &b.scratch
	n := len(w.Jobs)
	sc.idHash = resize(sc.idHash, n)
	sc.clientHash = resize(sc.clientHash, n)
	var qs *queueState
	name, from := "", 0
	for i := range w.Jobs {
		s := &w.Jobs[i]
		sc.idHash[i] = b.byID.Hash(s.Job.ID)
		sc.clientHash[i] = 0
		if s.ClientID == "" {
			continue
		}
		if qs == nil || name != s.Job.Queue {
			if qs != nil {
				_ = qs.clients.Prefetch(sc.clientHash[from:i])
			}
			qs, name, from = b.perQueue[s.Job.Queue], s.Job.Queue, i
			if _, ok := b.queues[name]; ok && qs == nil {
				qs = b.queueState(name)
			}
		}
		if qs != nil {
			sc.clientHash[i] = qs.clients.Hash(s.ClientID)
		} else {
			sc.clientHash[i] = b.byID.Hash(s.ClientID)
		}
	}
	if qs != nil {
		_ = qs.clients.Prefetch(sc.clientHash[from:])
	}
	_ = b.byID.Prefetch(sc.idHash)
}

// pairByPosition is the common case of checkPairs, without its maps: it
// reports whether w's job ids and client ids are distinct and the k-th
// submitted event of w is the submitted event of w.Jobs[k] (its job, queue
// and job set), for every k, leaving in evJob each event's job when new
// (notNew otherwise). When it reports false, w may still be good (its
// events in another order, say): checkPairs decides, and words the
// errors. Call after hashNew.
func (b *Backend) pairByPosition(w *backend.Write, evJob []int32) bool {
	sc := &b.scratch
	n := len(w.Jobs)
	if n > 0 {
		// Tables sized for one huge write are dropped rather than
		// cleared for every small one after it.
		if oversized(sc.pairRoom, n) {
			sc.pairIDs, sc.pairClients, sc.pairRoom = idindex.Index{}, idindex.Index{}, 0
		}
		sc.pairIDs.Clear()
		sc.pairClients.Clear()
		sc.pairIDs.Reserve(n)
		sc.pairClients.Reserve(n)
		sc.pairRoom = max(sc.pairRoom, n)
	}
	// The hashes are byID's and the clients indexes' (any hash will do
	// that gives one key one value while the tables are in use; a client
	// id's hash depends on its queue). A client id found in another queue
	// under the same hash is only a suspected duplicate: checkPairs looks
	// again.
	idOf := func(h uint32) string { return w.Jobs[h].Job.ID }
	clientIDOf := func(h uint32) string { return w.Jobs[h].ClientID }
	for i := range w.Jobs {
		s := &w.Jobs[i]
		if _, dup := sc.pairIDs.FindHashed(sc.idHash[i], s.Job.ID, idOf); dup {
			return false
		}
		sc.pairIDs.InsertHashed(sc.idHash[i], uint32(i))
		if s.ClientID != "" {
			if _, dup := sc.pairClients.FindHashed(sc.clientHash[i], s.ClientID, clientIDOf); dup {
				return false
			}
			sc.pairClients.InsertHashed(sc.clientHash[i], uint32(i))
		}
	}
	k := 0
	for i := range w.Events {
		e := &w.Events[i]
		if e.Type == events.Submitted {
			if k == n {
				return false
			}
			if j := w.Jobs[k].Job; e.Job != j.ID || e.Queue != j.Queue || e.JobSet != j.JobSet {
				return false
			}
			evJob[i] = int32(k)
			k++
			continue
		}
		evJob[i] = notNew
		if n > 0 {
			if h, ok := sc.pairIDs.FindHashed(b.byID.Hash(e.Job), e.Job, idOf); ok {
				evJob[i] = int32(h)
			}
		}
	}
	return k == n
}

// checkPairs is Commit's check of w as a whole, under the write lock: job
// ids and client ids distinct, every new job with exactly one submitted
// event and every submitted event with its job, in the same job set. When
// it finds no problem and errs is empty, it leaves in evJob each event's
// job when new (notNew otherwise).
func (b *Backend) checkPairs(w *backend.Write, errs []error, evJob []int32) []error {
	sc := &b.scratch
	if sc.newIdx == nil || oversized(sc.pairsRoom, len(w.Jobs)) {
		sc.newIdx, sc.clients, sc.pairsRoom = map[string]int{}, map[clientKey]struct{}{}, 0
	}
	clear(sc.newIdx)
	clear(sc.clients)
	sc.pairsRoom = max(sc.pairsRoom, len(w.Jobs))
	sc.submitted = resize(sc.submitted, len(w.Jobs))
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
	if len(errs) == 0 {
		for i := range w.Events {
			evJob[i] = notNew
			if idx, ok := sc.newIdx[w.Events[i].Job]; ok {
				evJob[i] = int32(idx)
			}
		}
	}
	return errs
}

// Commit applies w atomically; see backend.Jobs. Its steps: the write on
// its own (checkFields, then, under the lock, the pairing of jobs and
// submitted events), against the stored state (checkStoredJobs,
// stageEvents), and, when nothing was refused, the apply (storeNewJobs,
// storeTouched, appendEvents), which cannot fail.
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
	sc := &b.scratch
	evJob := resize(sc.evJob, len(w.Events))
	defer func() { sc.evJob = evJob[:0] }()
	if len(errs) > 0 {
		return nil, errors.Join(b.checkPairs(w, errs, evJob)...)
	}
	b.hashNew(w)
	if !b.pairByPosition(w, evJob) {
		if errs = b.checkPairs(w, nil, evJob); len(errs) > 0 {
			return nil, errors.Join(errs...)
		}
	}
	errs = b.checkStoredJobs(w)
	defer b.unstage()
	if errs = b.stageEvents(w, evJob, errs); len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	first := b.storeNewJobs(w)
	b.storeTouched()
	b.appendEvents(w, evJob, first)
	b.fence = w.Fence
	return w.Events, nil
}

// checkStoredJobs reports each new job of w whose id, or whose client id
// in its queue, is stored already. Call after hashNew.
func (b *Backend) checkStoredJobs(w *backend.Write) []error {
	var errs []error
	sc := &b.scratch
	var qs *queueState
	qsName := ""
	for i := range w.Jobs {
		j := w.Jobs[i].Job
		if _, ok := b.byID.FindHashed(sc.idHash[i], j.ID, b.idOf); ok {
			errs = append(errs, flotilla.Errorf(fmt.Sprintf("jobs[%d].job.id", i), j.ID, backend.ErrDuplicate, "the job is stored already"))
		}
		if c := w.Jobs[i].ClientID; c != "" {
			if qs == nil || qsName != j.Queue {
				qs, qsName = b.perQueue[j.Queue], j.Queue
			}
			// No queue state: the queue is not defined and never
			// had jobs, so no client id is stored there (and
			// hashNew's hash is byID's, for pairByPosition only).
			if qs == nil {
				continue
			}
			if h, ok := qs.clients.FindHashed(sc.clientHash[i], c, b.clientIDOf); ok {
				errs = append(errs, flotilla.Errorf(fmt.Sprintf("jobs[%d].clientId", i), c, backend.ErrDuplicate,
					"used in queue %q by job %q", j.Queue, b.rec(h).job.ID))
			}
		}
	}
	return errs
}

// stageEvents applies w's events to their jobs' states in scratch, as
// events.Transition does, and returns errs with every event refused (its
// queue or stored job unknown, its transition refused) added. A new job's
// staged state is scratch.states[i] (w.Jobs[i]'s); a stored one's is in
// touchedStates, beside its record in touchedRecs, and evJob[i] becomes
// -(k+1) for touchedRecs[k]. Call unstage when the write is done, applied
// or not.
func (b *Backend) stageEvents(w *backend.Write, evJob []int32, errs []error) []error {
	sc := &b.scratch
	// states is all zero: it is cleared when a Commit ends (and grown
	// zero), so that it holds no pointers between writes.
	sc.states = resize(sc.states, len(w.Jobs))
	if sc.touched == nil || oversized(sc.touchedRoom, len(w.Events)) {
		sc.touched, sc.touchedRoom = map[*jobRec]int{}, 0
	}
	sc.touchedRecs, sc.touchedStates = emptied(sc.touchedRecs, len(w.Events)), emptied(sc.touchedStates, len(w.Events))
	// The stored jobs' slots in byID, fetched together (a cycle's
	// leases and a report's phases are thousands of events): evHash[i]
	// is event i's job's hash when the job is not new.
	evHash := resize(sc.evHash, len(w.Events))
	defer func() { sc.evHash = evHash[:0] }()
	if b.byID.Len() > 0 {
		for i := range w.Events {
			if evJob[i] < 0 {
				evHash[i] = b.byID.Hash(w.Events[i].Job)
			}
		}
		_ = b.byID.Prefetch(evHash)
	}
	states, touched := sc.states, sc.touched
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
		if idx := evJob[i]; idx >= 0 {
			st = &states[idx]
		} else if h, ok := b.byID.FindHashed(evHash[i], e.Job, b.idOf); ok {
			r := b.rec(h)
			ti, ok := touched[r]
			if !ok {
				ti = len(sc.touchedRecs)
				touched[r] = ti
				sc.touchedRecs = append(sc.touchedRecs, r)
				sc.touchedStates = append(sc.touchedStates, b.state(r))
			}
			st, evJob[i] = &sc.touchedStates[ti], -int32(ti)-1
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
	return errs
}

// unstage clears stageEvents' working memory, kept for the next write and
// holding no pointers.
func (b *Backend) unstage() {
	sc := &b.scratch
	clear(sc.states)
	sc.states = sc.states[:0]
	sc.touchedRoom = max(sc.touchedRoom, len(sc.touched))
	clear(sc.touched)
	clear(sc.touchedRecs)
	clear(sc.touchedStates)
	sc.touchedRecs, sc.touchedStates = sc.touchedRecs[:0], sc.touchedStates[:0]
}

// storeNewJobs stores w's new jobs in their staged states and returns the
// handle of the first: they are added to b.recs in w.Jobs' order, so
// w.Jobs[i]'s handle is first+i. A client id's hash is its queue's (the
// state hashNew found or made): a job in a queue never created has its
// submitted event there too (the pairing checked), which stageEvents
// refused.
func (b *Backend) storeNewJobs(w *backend.Write) (first uint32) {
	sc := &b.scratch
	first = uint32(b.recs.len())
	var set *jobSet
	var qs *queueState
	qsName := ""
	for i := range w.Jobs {
		s := &w.Jobs[i]
		h, r := b.recs.add()
		// Field by field: a new record is zero already, and a composite
		// literal would write it twice.
		r.job, r.clientID, r.run = s.Job, s.ClientID, b.runOf(s)
		b.byID.InsertHashed(sc.idHash[i], h)
		set = b.jobSet(set, s.Job.Queue, s.Job.JobSet)
		r.index = uint32(set.jobs.len())
		set.jobs.append(h)
		if qs == nil || qsName != s.Job.Queue {
			qs, qsName = b.queueState(s.Job.Queue), s.Job.Queue
		}
		if s.ClientID != "" {
			qs.clients.InsertHashed(sc.clientHash[i], h)
		}
		b.setState(r, &sc.states[i])
		if st := sc.states[i].State; !st.Terminal() {
			qs.live++
		} else {
			b.noteEnded(set, h, r, st)
		}
	}
	return first
}

// storeTouched gives the stored jobs w's events changed their staged
// states.
func (b *Backend) storeTouched() {
	sc := &b.scratch
	var set *jobSet
	for k, r := range sc.touchedRecs {
		n := &sc.touchedStates[k]
		if !r.state.Terminal() && n.State.Terminal() {
			b.perQueue[r.job.Queue].live--
			set = b.jobSet(set, r.job.Queue, r.job.JobSet)
			b.noteEnded(set, *set.jobs.at(int(r.index)), r, n.State)
		}
		b.setState(r, n)
	}
}

// appendEvents appends w's events to their job sets' logs. They are
// returned in w.Events itself, each given its sequence number and stored
// time (see backend.Jobs.Commit): a copy would be as large as the write.
// first is storeNewJobs' handle of w.Jobs[0].
func (b *Backend) appendEvents(w *backend.Write, evJob []int32, first uint32) {
	sc := &b.scratch
	var set *jobSet
	for i := range w.Events {
		e := &w.Events[i]
		set = b.jobSet(set, e.Queue, e.JobSet)
		var r *jobRec
		if k := evJob[i]; k >= 0 {
			r = b.rec(first + uint32(k))
		} else {
			r = sc.touchedRecs[-k-1]
		}
		ev := event{
			time: encodeTime(e.Time), job: r.index,
			cluster: b.intern(e.Cluster), node: b.intern(e.Node),
			exitCode: int32(e.ExitCode), attempt: uint16(e.Attempt), typ: e.Type, requeued: e.Requeued,
			priority: e.Priority, rule: uint8(e.Rule), avoidNode: e.AvoidNode,
		}
		if e.Reason != "" {
			ev.reason = uint32(len(set.reasons))
			set.reasons = append(set.reasons, e.Reason)
		}
		set.log.append(ev)
		e.Seq = uint64(set.log.len())
		e.Time = decodeTime(ev.time)
	}
}
