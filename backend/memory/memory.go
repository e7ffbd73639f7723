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
	"sync"

	"github.com/google/btree"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/backend"
	"github.com/flotilla-sched/flotilla/events"
	"github.com/flotilla-sched/flotilla/internal/idindex"
)

var _ backend.Backend = (*Backend)(nil)

// Backend is the in-memory backend. The zero Backend is not usable; call
// New. It is safe for concurrent use.
type Backend struct {
	schema *flotilla.ResourceSchema

	mu     sync.RWMutex
	closed bool
	// fence is the highest Write.Fence applied.
	fence    uint64
	queues   map[string]flotilla.Queue
	groups   map[string]flotilla.QueueGroup
	perQueue map[string]*queueState
	// recs holds every stored job's record, in the order stored, each at
	// a fixed address; byID indexes them by job id, by handle (a record's
	// position in recs).
	recs recStore
	byID idindex.Index
	// runs are the records' runSpecs (jobRec.run), pointer-free.
	runs chunked[runSpec]
	sets map[setKey]*jobSet
	// setNames holds each queue's job sets' names (JobSetNames).
	setNames  map[string]*btree.BTreeG[string]
	strs      []string
	strIndex  map[string]uint32
	executors map[string]backend.Executor
	cordons   map[backend.Cordon]bool
	retry     map[string]*events.RetryPolicy
	usage     map[string]backend.UsageRecord
	scratch   scratch
	lease     leader
}

// queueState is what a queue's jobs need, kept when the queue's definition
// is deleted.
type queueState struct {
	live int
	// clients indexes the queue's jobs that have a client id by it (a
	// handle is a position in Backend.recs).
	clients idindex.Index
}

// New returns an empty backend for jobs whose requests are in schema.
func New(schema *flotilla.ResourceSchema) *Backend {
	return &Backend{
		schema:    schema,
		queues:    map[string]flotilla.Queue{},
		groups:    map[string]flotilla.QueueGroup{},
		perQueue:  map[string]*queueState{},
		sets:      map[setKey]*jobSet{},
		setNames:  map[string]*btree.BTreeG[string]{},
		strs:      []string{""},
		strIndex:  map[string]uint32{"": 0},
		executors: map[string]backend.Executor{},
		cordons:   map[backend.Cordon]bool{},
		retry:     map[string]*events.RetryPolicy{},
		usage:     map[string]backend.UsageRecord{},
	}
}

// Close marks the backend closed; later calls return backend.ErrClosed.
// Closing twice is not an error.
func (b *Backend) Close() error {
	b.mu.Lock()
	b.closed = true
	b.mu.Unlock()
	return nil
}

// ready is the check every method makes first, under its lock.
func (b *Backend) ready(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if b.closed {
		return backend.ErrClosed
	}
	return nil
}

// intern returns s's number, adding it. Call with the write lock held.
func (b *Backend) intern(s string) uint32 {
	if s == "" {
		return 0
	}
	if i, ok := b.strIndex[s]; ok {
		return i
	}
	i := uint32(len(b.strs))
	b.strs = append(b.strs, s)
	b.strIndex[s] = i
	return i
}

// rec returns the record of a handle (of byID, of a queue's clients or of
// a job set's jobs).
func (b *Backend) rec(h uint32) *jobRec { return b.recs.at(h) }

// idOf and clientIDOf are the keys of byID and of the clients indexes.
func (b *Backend) idOf(h uint32) string       { return b.rec(h).job.ID }
func (b *Backend) clientIDOf(h uint32) string { return b.rec(h).clientID }

// job returns the record of a job id; nil when there is none.
func (b *Backend) job(id string) *jobRec {
	if h, ok := b.byID.Find(id, b.idOf); ok {
		return b.rec(h)
	}
	return nil
}

// client returns the record of a client id in qs (nil: no queue state);
// nil when there is none.
func (b *Backend) client(qs *queueState, clientID string) *jobRec {
	if qs == nil {
		return nil
	}
	if h, ok := qs.clients.Find(clientID, b.clientIDOf); ok {
		return b.rec(h)
	}
	return nil
}

func (b *Backend) queueState(name string) *queueState {
	qs := b.perQueue[name]
	if qs == nil {
		qs = &queueState{}
		b.perQueue[name] = qs
	}
	return qs
}

// cloneQueue copies q's maps and quota vectors, so that stored and
// returned queues share nothing with the caller.
func cloneQueue(q flotilla.Queue) flotilla.Queue {
	q.Guaranteed, q.Limit, q.LendingLimit = backend.CloneQuota(q.Guaranteed), backend.CloneQuota(q.Limit), backend.CloneQuota(q.LendingLimit)
	if q.LimitsByPriorityClass != nil {
		m := make(map[string]map[string]float64, len(q.LimitsByPriorityClass))
		for k, v := range q.LimitsByPriorityClass {
			m[k] = maps.Clone(v)
		}
		q.LimitsByPriorityClass = m
	}
	return q
}

// CreateQueue stores a new queue: backend.ErrExists when the name is taken.
func (b *Backend) CreateQueue(ctx context.Context, q flotilla.Queue) error {
	return b.putQueue(ctx, q, false, nil)
}

// UpdateQueue replaces a queue: backend.ErrNotFound when there is none.
func (b *Backend) UpdateQueue(ctx context.Context, q flotilla.Queue) error {
	return b.putQueue(ctx, q, true, nil)
}

// putQueue stores q, which must exist already (update) or not (create),
// fenced by fence (nil: unfenced).
func (b *Backend) putQueue(ctx context.Context, q flotilla.Queue, update bool, fence *uint64) error {
	if err := errors.Join(q.Validate(),
		backend.CheckTreeFields(b.schema, fmt.Sprintf("queue %q", q.Name), q.Name, q.Parent, q.Guaranteed, q.Limit, q.LendingLimit)); err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.readyFenced(ctx, fence); err != nil {
		return err
	}
	switch _, ok := b.queues[q.Name]; {
	case ok && !update:
		return flotilla.Errorf("queue", q.Name, backend.ErrExists, "")
	case !ok && update:
		return flotilla.Errorf("queue", q.Name, backend.ErrNotFound, "")
	}
	b.queues[q.Name] = cloneQueue(q)
	b.raiseFence(fence)
	return nil
}

// DeleteQueue removes a queue's definition: backend.ErrNotFound when there
// is none, backend.ErrNotEmpty while it has live jobs.
func (b *Backend) DeleteQueue(ctx context.Context, name string) error {
	return b.deleteQueue(ctx, name, nil)
}

// deleteQueue is DeleteQueue fenced by fence (nil: unfenced).
func (b *Backend) deleteQueue(ctx context.Context, name string, fence *uint64) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.readyFenced(ctx, fence); err != nil {
		return err
	}
	if _, ok := b.queues[name]; !ok {
		return flotilla.Errorf("queue", name, backend.ErrNotFound, "")
	}
	if qs := b.perQueue[name]; qs != nil && qs.live > 0 {
		return flotilla.Errorf("queue", name, backend.ErrNotEmpty, "%d live jobs", qs.live)
	}
	delete(b.queues, name)
	b.raiseFence(fence)
	return nil
}

// Queue returns one queue: backend.ErrNotFound when there is none.
func (b *Backend) Queue(ctx context.Context, name string) (flotilla.Queue, error) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	if err := b.ready(ctx); err != nil {
		return flotilla.Queue{}, err
	}
	q, ok := b.queues[name]
	if !ok {
		return flotilla.Queue{}, flotilla.Errorf("queue", name, backend.ErrNotFound, "")
	}
	return cloneQueue(q), nil
}

// ListQueues returns every queue sorted by name.
func (b *Backend) ListQueues(ctx context.Context) ([]flotilla.Queue, error) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	if err := b.ready(ctx); err != nil {
		return nil, err
	}
	out := make([]flotilla.Queue, 0, len(b.queues))
	for _, name := range slices.Sorted(maps.Keys(b.queues)) {
		out = append(out, cloneQueue(b.queues[name]))
	}
	return out, nil
}

// PutExecutor stores a cluster's report; the backend keeps e.Nodes.
func (b *Backend) PutExecutor(ctx context.Context, e backend.Executor) error {
	return b.putExecutor(ctx, e, nil)
}

// putExecutor is PutExecutor fenced by fence (nil: unfenced).
func (b *Backend) putExecutor(ctx context.Context, e backend.Executor, fence *uint64) error {
	var errs []error
	if e.Cluster == "" {
		errs = append(errs, flotilla.Errorf("executor.cluster", "", flotilla.ErrRequired, ""))
	}
	seen := make(map[string]bool, len(e.Nodes))
	for i := range e.Nodes {
		n := &e.Nodes[i]
		p := fmt.Sprintf("executor %q.nodes[%d]", e.Cluster, i)
		if err := n.Validate(b.schema); err != nil {
			errs = append(errs, err)
		}
		if n.Cluster != e.Cluster {
			errs = append(errs, flotilla.Errorf(p+".cluster", n.Cluster, flotilla.ErrInconsistent, "the report is cluster %q's", e.Cluster))
		}
		if seen[n.Name] {
			errs = append(errs, flotilla.Errorf(p+".name", n.Name, backend.ErrDuplicate, "in one report"))
		}
		seen[n.Name] = true
	}
	if err := timeProblem("executor.reported", e.Reported); err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.readyFenced(ctx, fence); err != nil {
		return err
	}
	e.Reported = decodeTime(encodeTime(e.Reported))
	b.executors[e.Cluster] = e
	b.raiseFence(fence)
	return nil
}

// ListExecutors returns every cluster's last report, sorted by cluster.
func (b *Backend) ListExecutors(ctx context.Context) ([]backend.Executor, error) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	if err := b.ready(ctx); err != nil {
		return nil, err
	}
	return slices.SortedFunc(maps.Values(b.executors), func(x, y backend.Executor) int {
		return cmp.Compare(x.Cluster, y.Cluster)
	}), nil
}

// PutUsage stores every record atomically.
func (b *Backend) PutUsage(ctx context.Context, rs []backend.UsageRecord) error {
	return b.putUsage(ctx, rs, nil)
}

// putUsage is PutUsage fenced by fence (nil: unfenced).
func (b *Backend) putUsage(ctx context.Context, rs []backend.UsageRecord, fence *uint64) error {
	var errs []error
	seen := make(map[string]bool, len(rs))
	for i, r := range rs {
		p := fmt.Sprintf("usage[%d]", i)
		if r.Key == "" {
			errs = append(errs, flotilla.Errorf(p+".key", "", flotilla.ErrRequired, ""))
		} else if seen[r.Key] {
			errs = append(errs, flotilla.Errorf(p+".key", r.Key, backend.ErrDuplicate, "in one write"))
		}
		seen[r.Key] = true
		if len(r.Value) != b.schema.Len() {
			errs = append(errs, flotilla.Errorf(p+".value", strconv.Itoa(len(r.Value)), flotilla.ErrInconsistent,
				"want %d entries, one per resource", b.schema.Len()))
		}
		for k, v := range r.Value {
			if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
				errs = append(errs, flotilla.Errorf(fmt.Sprintf("%s.value[%d]", p, k), strconv.FormatFloat(v, 'g', -1, 64),
					flotilla.ErrOutOfRange, "want finite and non-negative"))
			}
		}
		if err := timeProblem(p+".at", r.At); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.readyFenced(ctx, fence); err != nil {
		return err
	}
	for _, r := range rs {
		r.Value = slices.Clone(r.Value)
		r.At = decodeTime(encodeTime(r.At))
		b.usage[r.Key] = r
	}
	b.raiseFence(fence)
	return nil
}

// ListUsage returns every key's record, sorted by key.
func (b *Backend) ListUsage(ctx context.Context) ([]backend.UsageRecord, error) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	if err := b.ready(ctx); err != nil {
		return nil, err
	}
	out := make([]backend.UsageRecord, 0, len(b.usage))
	for _, k := range slices.Sorted(maps.Keys(b.usage)) {
		r := b.usage[k]
		r.Value = slices.Clone(r.Value)
		out = append(out, r)
	}
	return out, nil
}
