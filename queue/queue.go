package queue

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"math"
	"math/bits"
	"reflect"
	"slices"
	"sort"
	"time"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/internal/idindex"
)

// Entry is one queued job as the store keeps it. Entries handed out by a
// Store belong to it: read them, do not modify them. An entry is valid
// until its job is removed: the store then reuses its memory for a job
// added later.
type Entry struct {
	Job *flotilla.Job
	// ClassPriority is the priority of the job's priority class (the
	// store's default class when the job names none).
	ClassPriority int32
	// Key is the job's scheduling key (see SchedulingKey).
	Key uint64
}

// stored is an entry as a Store keeps it, at handle h of the store's
// slab: linked with the other entries of its job set by their handles
// (none: the end of the list).
type stored struct {
	Entry
	prev, next uint32
	h          uint32
}

// none is the handle of no entry.
const none = math.MaxUint32

// Less is the scheduling order inside a queue: ClassPriority, higher first;
// then Job.Priority, LOWER number first (Armada's convention: priority 1
// runs before priority 10); then Job.SubmitTime, earlier first (as wall-clock
// instants: monotonic clock readings are ignored); then Job.ID. With unique
// IDs it is a strict total order.
func Less(a, b *Entry) bool {
	if a.ClassPriority != b.ClassPriority {
		return a.ClassPriority > b.ClassPriority
	}
	if a.Job.Priority != b.Job.Priority {
		return a.Job.Priority < b.Job.Priority
	}
	if c := compareWall(a.Job.SubmitTime, b.Job.SubmitTime); c != 0 {
		return c < 0
	}
	return a.Job.ID < b.Job.ID
}

// Mark is an entry's place in the scheduling order (Less), copied out of
// the entry and its job: a reader that checks the order of what a store
// hands out keeps the last place it saw without going back to that job,
// which has usually left the processor's cache by the time the next one
// comes.
type Mark struct {
	classPriority int32
	priority      uint32
	submit        time.Time
	id            string
}

// MarkOf is e's place.
func MarkOf(e *Entry) Mark {
	return Mark{classPriority: e.ClassPriority, priority: e.Job.Priority, submit: e.Job.SubmitTime, id: e.Job.ID}
}

// Before reports whether the entry m was taken from goes before e:
// Less(that entry, e), as long as its job has not changed since.
func (m *Mark) Before(e *Entry) bool {
	if m.classPriority != e.ClassPriority {
		return m.classPriority > e.ClassPriority
	}
	if m.priority != e.Job.Priority {
		return m.priority < e.Job.Priority
	}
	if c := compareWall(m.submit, e.Job.SubmitTime); c != 0 {
		return c < 0
	}
	return m.id < e.Job.ID
}

// ID is the ID of the job m was taken from.
func (m *Mark) ID() string { return m.id }

// LessEvicted is the order of evicted jobs (running jobs reconsidered by
// preemption), which a scheduler offers before a queue's stored jobs:
// ClassPriority, higher first; then Job.Priority, lower number first; then
// the earliest start (aStart, bStart: when each job started running); then
// submit time; then ID. Times compare as in Less.
func LessEvicted(a, b *Entry, aStart, bStart time.Time) bool {
	if a.ClassPriority != b.ClassPriority {
		return a.ClassPriority > b.ClassPriority
	}
	if a.Job.Priority != b.Job.Priority {
		return a.Job.Priority < b.Job.Priority
	}
	if c := compareWall(aStart, bStart); c != 0 {
		return c < 0
	}
	if c := compareWall(a.Job.SubmitTime, b.Job.SubmitTime); c != 0 {
		return c < 0
	}
	return a.Job.ID < b.Job.ID
}

// compareWall compares the wall-clock instants of two times, ignoring any
// monotonic reading (which time.Time.Compare would prefer).
func compareWall(a, b time.Time) int {
	if as, bs := a.Unix(), b.Unix(); as != bs {
		return cmp.Compare(as, bs)
	}
	return cmp.Compare(a.Nanosecond(), b.Nanosecond())
}

func compareEntries(a, b *Entry) int {
	switch {
	case Less(a, b):
		return -1
	case Less(b, a):
		return 1
	}
	return 0
}

// item is what a queue's order holds: an entry's handle in the store's
// slab with copies of the fields Less reads, so that a search compares
// items inside the order's own blocks instead of loading two objects
// (entry, job) per comparison. The id is the one pointer the collector
// scans in an order.
type item struct {
	// rank is the class priority and the job's Priority in one number
	// that sorts as Less does: the class, higher first (MaxInt32 - class
	// in the high half), then the priority, lower first.
	rank uint64
	sec  int64
	id   string
	nsec int32
	h    uint32
}

func itemOf(e *Entry, h uint32) item {
	j := e.Job
	return item{
		rank: uint64(math.MaxInt32-int64(e.ClassPriority))<<32 | uint64(j.Priority),
		sec:  j.SubmitTime.Unix(),
		id:   j.ID,
		nsec: int32(j.SubmitTime.Nanosecond()),
		h:    h,
	}
}

// Store is the queued-job store: per queue, the jobs in scheduling order in
// a B-tree and a job-set index; across queues, an index by ID. See the
// package documentation for ownership and concurrency. The zero Store is
// not usable; call New.
type Store struct {
	schema       *flotilla.ResourceSchema
	classList    []flotilla.PriorityClass
	classes      map[string]int32
	defaultClass string
	// entries holds the stored entries; byID indexes them by job id
	// (pointer-free: a handle is an entry's position in entries).
	entries slab
	byID    idindex.Index
	// hashScratch is AddAll's: the batch's ids' hashes.
	hashScratch []uint32
	queues      map[string]*queueIndex
}

// queueIndex is one non-empty queue.
type queueIndex struct {
	order order
	sets  map[string]*jobSet // non-empty job sets
	// keys counts the queue's lone jobs (not gang members) per scheduling
	// key; gangJobs counts its gang members.
	keys     map[uint64]int
	gangJobs int
	// demandLo and demandHi are the exact 128-bit sum of the queue's
	// requests per resource (requests are never negative); demand is that
	// sum clamped to the int64 range, what Stats hands out.
	demandLo, demandHi []uint64
	demand             flotilla.Resources
}

// New returns an empty store for jobs in schema (Add validates every job
// against it, as Job.Validate does) that resolves jobs' priority classes
// against classes; jobs naming no class get defaultClass. A nil schema, an
// empty or duplicate class name, or a default class that is not among
// classes, is an error (*flotilla.FieldError; all problems joined).
func New(schema *flotilla.ResourceSchema, classes []flotilla.PriorityClass, defaultClass string) (*Store, error) {
	s := &Store{
		schema:       schema,
		classList:    slices.Clone(classes),
		classes:      make(map[string]int32, len(classes)),
		defaultClass: defaultClass,
		queues:       make(map[string]*queueIndex),
	}
	var errs []error
	if schema == nil {
		errs = append(errs, flotilla.Errorf("schema", "<nil>", flotilla.ErrRequired, ""))
	}
	for i, pc := range classes {
		switch _, dup := s.classes[pc.Name]; {
		case pc.Name == "":
			errs = append(errs, flotilla.Errorf(fmt.Sprintf("priorityClasses[%d].name", i), "", flotilla.ErrRequired, ""))
		case dup:
			errs = append(errs, flotilla.Errorf(fmt.Sprintf("priorityClasses[%d].name", i), pc.Name, flotilla.ErrDuplicate, ""))
		default:
			s.classes[pc.Name] = pc.Priority
		}
	}
	if _, ok := s.classes[defaultClass]; !ok {
		errs = append(errs, flotilla.Errorf("defaultPriorityClass", defaultClass, flotilla.ErrUnknownName, "not among the priority classes"))
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return s, nil
}

// jobSet lists the entries of one job set of a queue, linked through
// stored.prev and next: O(1) to add and remove, no map entry per job.
type jobSet struct {
	head uint32 // none when empty
	n    int
}

func (set *jobSet) add(sl *slab, e *stored) {
	e.prev, e.next = none, set.head
	if set.n > 0 {
		sl.at(set.head).prev = e.h
	}
	set.head = e.h
	set.n++
}

func (set *jobSet) remove(sl *slab, e *stored) {
	if e.prev != none {
		sl.at(e.prev).next = e.next
	} else {
		set.head = e.next
	}
	if e.next != none {
		sl.at(e.next).prev = e.prev
	}
	e.prev, e.next = none, none
	set.n--
}

// NewEntry returns the entry Add would store for j, without storing it or
// checking for duplicates: the way a scheduler builds entries for evicted
// jobs, to order them with LessEvicted. Errors as for Add, except that it
// does not validate the job against the schema (a scheduler has already
// validated its running jobs).
func (s *Store) NewEntry(j *flotilla.Job) (*Entry, error) {
	e, err := s.entry(j)
	if err != nil {
		return nil, err
	}
	return &e, nil
}

// entry is NewEntry's entry, by value.
func (s *Store) entry(j *flotilla.Job) (Entry, error) {
	if j == nil {
		return Entry{}, flotilla.Errorf("job", "", flotilla.ErrRequired, "nil job")
	}
	if j.ID == "" {
		return Entry{}, flotilla.Errorf("id", "", flotilla.ErrRequired, "")
	}
	if j.Queue == "" {
		return Entry{}, flotilla.Errorf("queue", "", flotilla.ErrRequired, "job %q", j.ID)
	}
	class := j.PriorityClass
	if class == "" {
		class = s.defaultClass
	}
	prio, ok := s.classes[class]
	if !ok {
		return Entry{}, flotilla.Errorf("priorityClass", j.PriorityClass, flotilla.ErrUnknownName, "job %q", j.ID)
	}
	return Entry{Job: j, ClassPriority: prio, Key: SchedulingKey(j, prio)}, nil
}

// Add stores j in its queue, in O(log n). Errors are *flotilla.FieldError:
// a nil job, or an empty ID or Queue (ErrRequired, fields "job", "id",
// "queue"); an ID already stored (ErrDuplicate, field "id"); a priority
// class not configured (ErrUnknownName, field "priorityClass"); anything
// Job.Validate rejects against the store's schema, such as Requests of the
// wrong length or with a negative entry (fields such as
// `job "a-1".requests.cpu`, all problems joined). An empty PriorityClass
// means the store's default class. On error the store is unchanged.
func (s *Store) Add(j *flotilla.Job) error {
	var hash uint32
	if j != nil {
		hash = s.byID.Hash(j.ID)
	}
	return s.add(j, hash, nil)
}

// AddAll adds jobs as Add does, all or none: on the first error it
// takes back the jobs it added and returns that job's errors, as Add
// would, with each *flotilla.FieldError's Field prefixed by the job's
// index in jobs ("jobs[3].id"; "jobs[3]" for a nil job), and the store
// is as it was. A job that appears twice in jobs is ErrDuplicate. It
// costs what k calls of Add cost, but that it hashes the jobs' ids first
// and fetches their slots of the id index in one pass
// (idindex.Index.Prefetch), which in a store of millions of jobs, whose
// index does not fit in cache, lets those memory reads overlap.
func (s *Store) AddAll(jobs []*flotilla.Job) error {
	hashes := slices.Grow(s.hashScratch[:0], len(jobs))[:len(jobs)]
	defer func() { s.hashScratch = hashes[:0] }()
	for i, j := range jobs {
		if j != nil {
			hashes[i] = s.byID.Hash(j.ID)
		}
	}
	_ = s.byID.Prefetch(hashes)
	var m batchMemo
	for i, j := range jobs {
		if err := s.add(j, hashes[i], &m); err != nil {
			for _, done := range jobs[:i] {
				s.Remove(done.ID)
			}
			at := fmt.Sprintf("jobs[%d]", i)
			return flotilla.RenameFields(err, func(f string) string {
				if f == "job" { // a nil job
					return at
				}
				return at + "." + f
			})
		}
	}
	return nil
}

// batchMemo is what AddAll remembers of the job it added last, for the
// next: a request's jobs come from a few templates, so most jobs share
// their requirements, queue and job set with the job before them, and
// then take its class priority and scheduling key without hashing
// (SchedulingKey costs more than the rest of an add) and its queue and
// job set without a map lookup. The zero batchMemo remembers nothing.
type batchMemo struct {
	job   *flotilla.Job // nil: none yet
	class int32
	key   uint64
	q     *queueIndex
	set   *jobSet
}

// sameRequirements reports whether a and b agree on everything the class
// priority and SchedulingKey read (class, requests, node selector,
// tolerations, node-uniformity label, gang topology, avoided clusters), so that b's are
// a's. It may answer false for requirements the key holds equal (an
// operator "" against "Equal", avoided clusters in another order): that
// only costs a hash.
func sameRequirements(a, b *flotilla.Job) bool {
	return a.PriorityClass == b.PriorityClass &&
		slices.Equal(a.Requests, b.Requests) &&
		a.Gang.NodeUniformityLabel == b.Gang.NodeUniformityLabel &&
		a.Gang.Topology == b.Gang.Topology &&
		sameTolerations(a.Tolerations, b.Tolerations) &&
		sameSelector(a.NodeSelector, b.NodeSelector) &&
		sameAffinity(a.NodeAffinity, b.NodeAffinity) &&
		slices.Equal(a.AvoidClusters, b.AvoidClusters) &&
		slices.Equal(a.AvoidNodes, b.AvoidNodes)
}

// sameSelector is maps.Equal, answered at once for one map twice (the
// jobs of a template share their node selector).
func sameSelector(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	return len(a) == 0 || reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer() || maps.Equal(a, b)
}

// sameTolerations is slices.Equal, answered at once for two views of one
// array (the jobs of a template share their tolerations).
func sameTolerations(a, b []flotilla.Toleration) bool {
	if len(a) != len(b) {
		return false
	}
	return len(a) == 0 || &a[0] == &b[0] || slices.Equal(a, b)
}

// add is Add with the id's hash in byID given (anything for a nil job)
// and, from AddAll, the memo of the batch's previous job (nil from Add).
func (s *Store) add(j *flotilla.Job, hash uint32, m *batchMemo) error {
	if j != nil {
		if _, dup := s.byID.FindHashed(hash, j.ID, s.idOf); dup {
			return flotilla.Errorf("id", j.ID, flotilla.ErrDuplicate, "already queued")
		}
	}
	var v Entry
	if m != nil && m.job != nil && j != nil && j.ID != "" && j.Queue != "" && sameRequirements(m.job, j) {
		v = Entry{Job: j, ClassPriority: m.class, Key: m.key}
	} else {
		var err error
		if v, err = s.entry(j); err != nil {
			return err
		}
	}
	if err := j.Validate(s.schema); err != nil {
		return err
	}
	h := s.entries.alloc()
	st := s.entries.at(h)
	// A free entry is zero (slab.release): set what is not.
	st.Entry, st.h = v, h
	e := &st.Entry
	var q *queueIndex
	if m != nil && m.q != nil && m.job.Queue == j.Queue {
		q = m.q
	} else {
		q = s.queues[j.Queue]
	}
	if q == nil {
		q = &queueIndex{sets: make(map[string]*jobSet)}
		n := s.schema.Len()
		q.keys = make(map[uint64]int)
		q.demandLo, q.demandHi, q.demand = make([]uint64, n), make([]uint64, n), make(flotilla.Resources, n)
		s.queues[j.Queue] = q
	}
	q.count(e, true)
	var set *jobSet
	if m != nil && m.q == q && m.job.JobSet == j.JobSet {
		set = m.set
	} else {
		set = q.sets[j.JobSet]
	}
	if set == nil {
		set = &jobSet{head: none}
		q.sets[j.JobSet] = set
	}
	q.order.insert(itemOf(e, h))
	set.add(&s.entries, st)
	s.byID.InsertHashed(hash, h)
	if m != nil {
		*m = batchMemo{job: j, class: v.ClassPriority, key: v.Key, q: q, set: set}
	}
	return nil
}

// idOf is the key of a handle of byID.
func (s *Store) idOf(h uint32) string { return s.entries.at(h).Job.ID }

// Remove takes the job with this ID out of the store, in O(log n), and
// returns it; false when no such job is stored.
func (s *Store) Remove(id string) (*flotilla.Job, bool) {
	h, ok := s.byID.Delete(id, s.idOf)
	if !ok {
		return nil, false
	}
	st := s.entries.at(h)
	e, j := &st.Entry, st.Job
	q := s.queues[j.Queue]
	s.unorder(q, st)
	q.count(e, false)
	set := q.sets[j.JobSet]
	set.remove(&s.entries, st)
	if set.n == 0 {
		delete(q.sets, j.JobSet)
	}
	if q.order.len() == 0 {
		delete(s.queues, j.Queue)
	}
	s.entries.release(h)
	return j, true
}

// count adds e to (add) or takes it from the queue's per-key counts and
// demand, in O(resources).
func (q *queueIndex) count(e *Entry, add bool) {
	if e.Job.IsGang() {
		if add {
			q.gangJobs++
		} else {
			q.gangJobs--
		}
	} else if add {
		q.keys[e.Key]++
	} else if q.keys[e.Key] <= 1 {
		delete(q.keys, e.Key)
	} else {
		q.keys[e.Key]--
	}
	for r, v := range e.Job.Requests {
		// Validated requests are ≥ 0, so a 128-bit sum is exact.
		var c uint64
		if add {
			q.demandLo[r], c = bits.Add64(q.demandLo[r], uint64(v), 0)
			q.demandHi[r] += c
		} else {
			q.demandLo[r], c = bits.Sub64(q.demandLo[r], uint64(v), 0)
			q.demandHi[r] -= c
		}
		if q.demandHi[r] != 0 || q.demandLo[r] > math.MaxInt64 {
			q.demand[r] = math.MaxInt64
		} else {
			q.demand[r] = int64(q.demandLo[r])
		}
	}
}

// unorder removes st from its queue's order.
func (s *Store) unorder(q *queueIndex, st *stored) {
	k := itemOf(&st.Entry, st.h)
	if q.order.delete(&k) {
		return
	}
	// The job was modified while stored, against the package rules, and
	// its item no longer sorts where it was put. Find it the slow way
	// rather than leave it behind.
	q.order.ascend(func(it item) bool {
		if it.h == st.h {
			k = it
			return false
		}
		return true
	})
	q.order.delete(&k)
}

// Get returns the stored entry of a job, in O(1).
func (s *Store) Get(id string) (*Entry, bool) {
	if s == nil {
		return nil, false
	}
	h, ok := s.byID.Find(id, s.idOf)
	if !ok {
		return nil, false
	}
	return &s.entries.at(h).Entry, true
}

// Len is the number of stored jobs.
func (s *Store) Len() int {
	if s == nil {
		return 0
	}
	return s.byID.Len()
}

// QueueLen is the number of jobs stored in one queue.
func (s *Store) QueueLen(queue string) int {
	if s == nil {
		return 0
	}
	if q := s.queues[queue]; q != nil {
		return q.order.len()
	}
	return 0
}

// Stats is what a store keeps up to date about one queue, so that a
// scheduling cycle need not read the queue's jobs to know it.
type Stats struct {
	// Jobs is the number of jobs in the queue; GangJobs how many of them
	// are gang members.
	Jobs, GangJobs int
	// Demand is the sum of the jobs' Requests, clamped to the int64 range;
	// nil for an empty queue. It belongs to the store: read it, do not
	// modify it; it is valid until the store next changes.
	Demand flotilla.Resources
}

// Stats returns one queue's job counts and demand, in O(1) without
// allocating; the zero Stats for a queue with no jobs.
func (s *Store) Stats(queue string) Stats {
	if s == nil {
		return Stats{}
	}
	q := s.queues[queue]
	if q == nil {
		return Stats{}
	}
	return Stats{Jobs: q.order.len(), GangJobs: q.gangJobs, Demand: q.demand}
}

// SchedulingKeys calls fn with each scheduling key of one queue's lone jobs
// (gang members are counted in Stats.GangJobs only) and how many of them
// have it, until fn returns false: O(distinct keys), in no particular
// order. fn must not modify the store.
func (s *Store) SchedulingKeys(queue string, fn func(key uint64, count int) bool) {
	if s == nil {
		return
	}
	if q := s.queues[queue]; q != nil {
		for k, n := range q.keys {
			if !fn(k, n) {
				return
			}
		}
	}
}

// PriorityClasses returns the classes the store orders jobs by, as given
// to New. The slice belongs to the store: do not modify it.
func (s *Store) PriorityClasses() []flotilla.PriorityClass {
	if s == nil {
		return nil
	}
	return s.classList
}

// DefaultPriorityClass is the class of jobs that name none, as given to New.
func (s *Store) DefaultPriorityClass() string {
	if s == nil {
		return ""
	}
	return s.defaultClass
}

// Queues returns the names of the queues holding at least one job, sorted.
// It allocates the result.
func (s *Store) Queues() []string {
	if s == nil {
		return nil
	}
	names := make([]string, 0, len(s.queues))
	for name := range s.queues {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// setEntries returns the entries of one job set in queue order, in
// O(k log k); nil when there are none.
func (s *Store) setEntries(q *queueIndex, jobSet string) []*stored {
	set := q.sets[jobSet]
	if set == nil || set.n == 0 {
		return nil
	}
	entries := make([]*stored, 0, set.n)
	for h := set.head; h != none; h = s.entries.at(h).next {
		entries = append(entries, s.entries.at(h))
	}
	slices.SortFunc(entries, func(a, b *stored) int { return compareEntries(&a.Entry, &b.Entry) })
	return entries
}

// JobSet returns the queued jobs of one job set of one queue, in queue
// order, in O(k log k) for a set of k jobs. It allocates the result; nil
// when there are none.
func (s *Store) JobSet(queue, jobSet string) []*flotilla.Job {
	q := s.queues[queue]
	if q == nil {
		return nil
	}
	entries := s.setEntries(q, jobSet)
	if entries == nil {
		return nil
	}
	jobs := make([]*flotilla.Job, len(entries))
	for i, e := range entries {
		jobs[i] = e.Job
	}
	return jobs
}

// RemoveJobSet takes every queued job of one job set of one queue out of
// the store, in O(k log n), and returns them in queue order; nil when there
// are none.
func (s *Store) RemoveJobSet(queue, jobSet string) []*flotilla.Job {
	q := s.queues[queue]
	if q == nil {
		return nil
	}
	entries := s.setEntries(q, jobSet)
	if entries == nil {
		return nil
	}
	delete(q.sets, jobSet)
	jobs := make([]*flotilla.Job, len(entries))
	for i, st := range entries {
		st.prev, st.next = none, none
		s.byID.Delete(st.Job.ID, s.idOf)
		s.unorder(q, st)
		q.count(&st.Entry, false)
		jobs[i] = st.Job
		s.entries.release(st.h)
	}
	if q.order.len() == 0 {
		delete(s.queues, queue)
	}
	return jobs
}

// Ascend calls fn for the jobs of one queue in scheduling order until fn
// returns false. fn must not modify the store.
func (s *Store) Ascend(queue string, fn func(*Entry) bool) {
	if q := s.queues[queue]; q != nil {
		q.order.ascend(func(it item) bool { return fn(&s.entries.at(it.h).Entry) })
	}
}

// sameAffinity reports whether two required node affinities are written
// alike (terms, expressions and values in the same order).
func sameAffinity(a, b []flotilla.NodeSelectorTerm) bool {
	return slices.EqualFunc(a, b, func(x, y flotilla.NodeSelectorTerm) bool {
		return slices.EqualFunc(x.MatchExpressions, y.MatchExpressions, func(p, q flotilla.NodeSelectorRequirement) bool {
			return p.Key == q.Key && p.Operator == q.Operator && slices.Equal(p.Values, q.Values)
		})
	})
}
