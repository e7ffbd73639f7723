package backend

import (
	"context"
	"errors"
	"time"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/events"
)

// Sentinel errors classify a backend's refusals. A backend wraps them with
// the field and value concerned (a *flotilla.FieldError where a field is
// named), so errors.Is finds the class and errors.As the details.
var (
	// ErrNotFound: the queue, job or client id named does not exist.
	ErrNotFound = errors.New("not found")
	// ErrExists: a queue of that name exists already.
	ErrExists = errors.New("exists already")
	// ErrNotEmpty: the queue still has live (non-terminal) jobs, or the
	// group still has children (queues or groups naming it as parent).
	ErrNotEmpty = errors.New("is not empty")
	// ErrDuplicate: a job id, or a client id in its queue, is already
	// stored or appears twice in one write. It is flotilla.ErrDuplicate,
	// so one errors.Is test serves validation and storage alike.
	ErrDuplicate = flotilla.ErrDuplicate
	// ErrFenced: the write's fencing token is lower than the highest the
	// backend has applied; a newer leader has written.
	ErrFenced = errors.New("fenced off by a newer leader")
	// ErrOutcomeUnknown: the write may or may not have been applied (the
	// connection was lost during the commit). Read back before retrying.
	// A backend whose write can still be applied after it answered
	// ErrOutcomeUnknown (a COMMIT in flight) fails its later calls until
	// the outcome is final, so that what a caller reads back holds.
	ErrOutcomeUnknown = errors.New("outcome unknown")
	// ErrClosed: the backend was closed.
	ErrClosed = errors.New("backend closed")
	// ErrUnavailable: the storage cannot be reached now (a database that
	// is down, restarting or refusing connections, or that did not answer
	// within the backend's time limit); nothing was changed.
	// Retrying later may succeed. A commit whose outcome is unknown wraps
	// ErrOutcomeUnknown instead (or as well).
	ErrUnavailable = errors.New("storage unavailable; retry")
)

// Backend is the whole storage of the service. Open one with the service's
// *flotilla.ResourceSchema (see memory.New), so that a database can store
// requests and capacities by resource name. Close releases it; every method
// called after Close returns ErrClosed.
type Backend interface {
	Queues
	Groups
	Jobs
	Executors
	Usage
	Cordons
	RetryPolicies
	Close() error
}

// Queues stores the queue definitions. Queues are validated with
// flotilla.Queue.Validate and CheckTreeFields; a queue read back is a copy
// the caller owns, a quota vector with no entry given read back as nil.
// The queue tree as a whole (parents that exist and are groups, no cycles,
// guarantees that add up) is the service's to check, not the backend's.
type Queues interface {
	// CreateQueue stores a new queue; ErrExists when the name is taken.
	CreateQueue(ctx context.Context, q flotilla.Queue) error
	// UpdateQueue replaces a queue's definition; ErrNotFound when there
	// is no queue of that name.
	UpdateQueue(ctx context.Context, q flotilla.Queue) error
	// DeleteQueue removes a queue's definition: ErrNotFound when there is
	// none, ErrNotEmpty while it has live jobs. Its jobs, event logs and
	// client ids are kept, so a queue created again under the same name
	// continues its logs' sequence numbers and its idempotency.
	DeleteQueue(ctx context.Context, name string) error
	// Queue returns one queue; ErrNotFound when there is none.
	Queue(ctx context.Context, name string) (flotilla.Queue, error)
	// ListQueues returns every queue, sorted by name.
	ListQueues(ctx context.Context) ([]flotilla.Queue, error)
}

// Groups stores the queue tree's groups (flotilla.QueueGroup), in the same
// name space as queues for the service (the backend does not check that a
// group's name is not a queue's). A group is validated with
// ValidateGroup; one read back is a copy the caller owns, a quota vector
// with no entry given read back as nil.
type Groups interface {
	// CreateGroup stores a new group; ErrExists when a group of that name
	// exists.
	CreateGroup(ctx context.Context, g flotilla.QueueGroup) error
	// UpdateGroup replaces a group's definition; ErrNotFound when there is
	// no group of that name.
	UpdateGroup(ctx context.Context, g flotilla.QueueGroup) error
	// DeleteGroup removes a group: ErrNotFound when there is none,
	// ErrNotEmpty (naming a child) while a queue or a group names it as
	// its parent.
	DeleteGroup(ctx context.Context, name string) error
	// ListGroups returns every group, sorted by name.
	ListGroups(ctx context.Context) ([]flotilla.QueueGroup, error)
}

// JobSpec is what was submitted for one job; it never changes after
// submit.
type JobSpec struct {
	// Job is the scheduler's view: ID, Queue, JobSet, class, priority,
	// submit time, dense Requests in the backend's schema, selectors,
	// tolerations, gang. After Commit the backend may keep this pointer
	// and hand it out again: neither the caller nor any reader may modify
	// the Job it points to.
	Job *flotilla.Job
	// ClientID makes a submission idempotent: unique per queue when set.
	ClientID string
	// Principal is who submitted the job (the caller's authenticated
	// identity; empty when none). The service charges the job's usage to
	// it (flux associations) after a restart too.
	Principal string
	// TerminationGracePeriod and ActiveDeadline are as the server settled
	// them (docs/submit-file.md's submission rules).
	TerminationGracePeriod, ActiveDeadline time.Duration
	// Runtime and ExitCode tell the fake executor how the job "runs".
	Runtime  time.Duration
	ExitCode int
	// Pools names the pools the job accepts (docs/submit-file.md's `pools`),
	// sorted and distinct; nil accepts every pool.
	Pools []string
}

// Record is a stored job: what was submitted and the state its events left
// it in.
type Record struct {
	Spec  JobSpec
	State events.Job
}

// Write is one atomic change of jobs: new jobs and events, stored together
// or not at all.
type Write struct {
	// Jobs are new jobs. Each must come with its submitted event in
	// Events, and every submitted event with its job here. A job id
	// already stored, or a (queue, client id) already used, is refused
	// with ErrDuplicate.
	Jobs []JobSpec
	// Events are appended to their job sets' logs in the order given, any
	// number of job sets in one write. Seq is ignored: the backend gives
	// each event its log's next sequence number. Each event is applied to
	// its job's state (as stored, or as the earlier events of this write
	// left it) with events.Transition; one refusal refuses the write.
	// Times are stored as instants to the nanosecond and read back in
	// UTC.
	Events []events.Event
	// Fence is the writer's fencing token (see the package doc): a write
	// whose Fence is lower than the highest Fence of any write applied
	// before is refused with ErrFenced. An applied write raises the
	// highest Fence to its own, even when it stores nothing else.
	Fence uint64
}

// Jobs stores jobs and their job sets' event logs.
type Jobs interface {
	// Commit applies w atomically and returns its events as stored (with
	// their sequence numbers; the caller owns the slice). The returned
	// slice may be w.Events itself, each event's Seq and Time set as
	// stored: a caller that needs w.Events unchanged copies it first. On
	// an error w is unchanged. Errors: bad
	// input (a *flotilla.FieldError per problem, joined), an event naming
	// a queue that does not exist (ErrNotFound), a job or client id
	// already used (ErrDuplicate), a transition the state machine refuses
	// (events.ErrRefused), ErrFenced, ErrOutcomeUnknown, ErrClosed, or
	// the context's error. On every error but ErrOutcomeUnknown nothing
	// was applied and no sequence number was consumed.
	Commit(ctx context.Context, w *Write) ([]events.Event, error)
	// Job returns one job's record; ErrNotFound when there is none.
	Job(ctx context.Context, id string) (Record, error)
	// JobByClientID returns the id of the job submitted to queue with
	// clientID; ErrNotFound when there is none.
	JobByClientID(ctx context.Context, queue, clientID string) (string, error)
	// Events returns the events of one job set's log with sequence
	// numbers from `from` on (0 and 1 both mean the first), at most limit
	// of them (limit ≤ 0: all), in order. Past the end of the log, or for
	// a job set with no events yet, it returns none and no error; a queue
	// that does not exist is ErrNotFound. The caller owns the slice.
	Events(ctx context.Context, queue, jobSet string, from uint64, limit int) ([]events.Event, error)
	// LiveJobs calls fn with every job not in a terminal state, in an
	// order the backend chooses, and stops at fn's first error, which it
	// returns. Each record is the job's state when it is read; a job
	// committed during the call may or may not be visited. fn may call
	// the backend.
	LiveJobs(ctx context.Context, fn func(Record) error) error
}

// ClientIDLookup is an optional interface of a Jobs: JobByClientID for
// many client ids of one queue in one call, as a service submitting a
// request of many jobs asks.
type ClientIDLookup interface {
	// JobsByClientID sets ids[i] to the id of the job submitted to queue
	// with clientIDs[i], "" when there is none (an empty client id names
	// none). ids must be as long as clientIDs (else a
	// *flotilla.FieldError, flotilla.ErrInconsistent, and ids unchanged).
	// Errors: ErrClosed or the context's error.
	JobsByClientID(ctx context.Context, queue string, clientIDs, ids []string) error
}

// JobLookup is an optional interface of a Jobs: Job for many ids in one
// call (one lock hold, one database round trip), as a service reading the
// ended jobs an executor reports asks.
type JobLookup interface {
	// JobsByID sets recs[i] to the record of the job ids[i], or to the
	// zero Record (Spec.Job nil) when there is none (an empty id names
	// none). Every id is answered, an id given twice at each of its
	// places. The caller owns ids and recs; the backend keeps neither.
	// Each record is as Job returns it: its Spec.Job may be shared and
	// must not be modified; its State is the job's when it was read. recs
	// must be as long as ids (else a *flotilla.FieldError,
	// flotilla.ErrInconsistent, and recs unchanged). Errors: ErrClosed,
	// ErrUnavailable, or the context's error; after one, recs may have
	// been partly set.
	JobsByID(ctx context.Context, ids []string, recs []Record) error
}

// Fenced is an optional interface of a Backend: a view of it whose
// queue, group, executor, usage, cordon and retry-policy writes are
// fenced like Jobs.Commit.
type Fenced interface {
	// WithFence returns a view of the backend for the leader holding
	// token. Its CreateQueue, UpdateQueue, DeleteQueue, CreateGroup,
	// UpdateGroup, DeleteGroup, PutExecutor, PutUsage, PutCordon and
	// PutRetryPolicy check token against the highest fence applied, atomically
	// with the write: a token lower than it is refused with an error
	// wrapping ErrFenced (a *flotilla.FieldError naming "fence") and
	// nothing is changed; otherwise the write is applied and raises the
	// highest fence to token, as a Commit with Write.Fence token does.
	// Bad input is reported before the fence is checked, ErrExists,
	// ErrNotFound and ErrNotEmpty after it (a refused write raises
	// nothing). Its
	// Commit is the backend's, fenced by Write.Fence as always; its reads
	// and optional interfaces (ClientIDLookup, JobLookup, Leases) are the
	// backend's. The view shares the backend's storage: closing either
	// closes both. The backend's own writes stay unfenced.
	WithFence(token uint64) Backend
}

// Executor is one cluster as its executor last reported it.
type Executor struct {
	// Cluster names the cluster; every node's Cluster must equal it.
	Cluster string
	// Nodes are the cluster's nodes, Total in the backend's schema. The
	// backend may keep the slice: do not modify it after the call, nor a
	// slice read back.
	Nodes []flotilla.Node
	// Reported is when the executor last reported.
	Reported time.Time
	// Pool is the cluster's pool (`executor -pool`); "" is DefaultPool.
	Pool string
}

// DefaultPool is the pool of a cluster whose executor names none.
const DefaultPool = "default"

// Executors stores the clusters' last reports.
type Executors interface {
	// PutExecutor stores a cluster's report, replacing the previous one.
	// Nodes are validated with flotilla.Node.Validate against the schema;
	// node names must be distinct.
	PutExecutor(ctx context.Context, e Executor) error
	// ListExecutors returns every cluster's last report, sorted by
	// cluster name.
	ListExecutors(ctx context.Context) ([]Executor, error)
}

// UsageRecord is the decayed resource × time one key has used: a queue or a
// flux association, named as the service chooses (an opaque, non-empty
// key).
type UsageRecord struct {
	Key string
	// Value is resource × seconds per resource of the backend's schema,
	// decayed up to At; finite and non-negative, schema.Len() entries.
	Value []float64
	// At is when Value was computed.
	At time.Time
}

// Usage stores usage history.
type Usage interface {
	// PutUsage stores every record atomically, each replacing the stored
	// record of its key. A key appearing twice is ErrDuplicate.
	PutUsage(ctx context.Context, rs []UsageRecord) error
	// ListUsage returns every key's record, sorted by key. The caller owns
	// the slices.
	ListUsage(ctx context.Context) ([]UsageRecord, error)
}
