package backend

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/events"
)

// The optional interfaces (ClientIDLookup, JobLookup, Fenced) are found by
// type assertion. These helpers make the assertion once, with the slower
// path when the backend does not have the capability, so that a caller —
// or a wrapper such as a leader's fenced view — needs one code path, and
// a wrapper one type that forwards to them, whatever the backend it wraps
// implements.

// JobsByID is JobLookup.JobsByID on b when b implements it; otherwise it
// calls b.Job once per id with the same contract: recs[i] is ids[i]'s
// record, the zero Record when there is none (an empty id names none);
// recs shorter or longer than ids is a *flotilla.FieldError
// (flotilla.ErrInconsistent) with recs unchanged. On another error recs
// may have been partly set.
func JobsByID(ctx context.Context, b Jobs, ids []string, recs []Record) error {
	if l, ok := b.(JobLookup); ok {
		return l.JobsByID(ctx, ids, recs)
	}
	if len(recs) != len(ids) {
		return flotilla.Errorf("recs", strconv.Itoa(len(recs)), flotilla.ErrInconsistent, "want %d, one per id", len(ids))
	}
	for i, id := range ids {
		recs[i] = Record{}
		if id == "" {
			continue
		}
		rec, err := b.Job(ctx, id)
		switch {
		case errors.Is(err, ErrNotFound):
		case err != nil:
			return err
		default:
			recs[i] = rec
		}
	}
	return nil
}

// JobsByClientID is ClientIDLookup.JobsByClientID on b when b implements
// it; otherwise it calls b.JobByClientID once per client id with the same
// contract: ids[i] is the id of the job submitted to queue with
// clientIDs[i], "" when there is none (an empty client id names none);
// ids shorter or longer than clientIDs is a *flotilla.FieldError
// (flotilla.ErrInconsistent) with ids unchanged.
func JobsByClientID(ctx context.Context, b Jobs, queue string, clientIDs, ids []string) error {
	if l, ok := b.(ClientIDLookup); ok {
		return l.JobsByClientID(ctx, queue, clientIDs, ids)
	}
	if len(ids) != len(clientIDs) {
		return flotilla.Errorf("ids", strconv.Itoa(len(ids)), flotilla.ErrInconsistent, "want %d, one per client id", len(clientIDs))
	}
	for i, cid := range clientIDs {
		ids[i] = ""
		if cid == "" {
			continue
		}
		id, err := b.JobByClientID(ctx, queue, cid)
		switch {
		case errors.Is(err, ErrNotFound):
		case err != nil:
			return err
		default:
			ids[i] = id
		}
	}
	return nil
}

// WithFence returns b's view for the leader holding token (Fenced) and
// true when b implements Fenced; otherwise b itself and false: its
// queue, executor and usage writes are then not fenced by the backend
// (Commit still is, by Write.Fence), and the caller must stop writing
// once it no longer leads.
func WithFence(b Backend, token uint64) (Backend, bool) {
	if f, ok := b.(Fenced); ok {
		return f.WithFence(token), true
	}
	return b, false
}

// EndedJobs is an optional interface of a Jobs: a job set's ended jobs
// (in a terminal state), a page at a time in submit order, as the web
// UI's job set page lists them. The service itself forgets a job once it
// ends; this reads the backend's records.
type EndedJobs interface {
	// EndedJobs returns the records of at most q.Limit jobs of the job set
	// q.Queue/q.JobSet whose state is q.State, ordered by submit time
	// (as instants), then id, those after q.After (nil: from the first).
	// Its work is bounded by q.Limit, whatever the set holds. A job set or
	// queue with no such job is an empty page. Bad input (a state that is
	// not terminal, a limit below 1 or above MaxEndedPage) is a
	// *flotilla.FieldError naming it; other errors: ErrClosed,
	// ErrUnavailable, or the context's error.
	EndedJobs(ctx context.Context, q EndedQuery) ([]Record, error)
}

// MaxEndedPage is the largest EndedQuery.Limit.
const MaxEndedPage = 1000

// EndedQuery asks for a page of a job set's ended jobs (EndedJobs).
type EndedQuery struct {
	Queue, JobSet string
	// State is a terminal state: events.SucceededState, FailedState,
	// CancelledState or PreemptedState.
	State events.State
	// After is where the previous page ended; nil for the first page.
	After *EndedAfter
	// Limit is the most records of the page, 1 to MaxEndedPage.
	Limit int
}

// EndedAfter is a place in submit order: after the job of this submit
// time and id.
type EndedAfter struct {
	SubmitTime time.Time
	ID         string
}

// CheckEndedQuery reports q's problems, every one at once.
func CheckEndedQuery(q EndedQuery) error {
	var errs []error
	if !q.State.Terminal() {
		errs = append(errs, flotilla.Errorf("state", q.State.String(), flotilla.ErrOutOfRange, "want a terminal state: succeeded, failed, cancelled or preempted"))
	}
	if q.Limit < 1 || q.Limit > MaxEndedPage {
		errs = append(errs, flotilla.Errorf("limit", strconv.Itoa(q.Limit), flotilla.ErrOutOfRange, "want 1 to %d", MaxEndedPage))
	}
	return errors.Join(errs...)
}

// ListEnded is EndedJobs.EndedJobs on b when b implements it; otherwise
// an error wrapping errors.ErrUnsupported.
func ListEnded(ctx context.Context, b Jobs, q EndedQuery) ([]Record, error) {
	if e, ok := b.(EndedJobs); ok {
		return e.EndedJobs(ctx, q)
	}
	return nil, fmt.Errorf("backend: %T lists no ended jobs: %w", b, errors.ErrUnsupported)
}

// JobSetNames is an optional interface of a Jobs: the names of a queue's
// job sets, every one it stores a job of, live or ended (the web UI's
// queue page lists the sets whose jobs have all ended from it).
type JobSetNames interface {
	// JobSetNames returns at most limit names of the queue's job sets,
	// ascending, those after the name after ("" for the first). Its work
	// is bounded by limit, whatever the queue holds. An unknown queue has
	// none. A limit below 1 or above MaxEndedPage is a
	// *flotilla.FieldError naming "limit"; other errors: ErrClosed,
	// ErrUnavailable, or the context's error.
	JobSetNames(ctx context.Context, queue, after string, limit int) ([]string, error)
}

// CheckJobSetNamesLimit reports a JobSetNames limit out of range.
func CheckJobSetNamesLimit(limit int) error {
	if limit < 1 || limit > MaxEndedPage {
		return flotilla.Errorf("limit", strconv.Itoa(limit), flotilla.ErrOutOfRange, "want 1 to %d", MaxEndedPage)
	}
	return nil
}

// ListJobSetNames is JobSetNames.JobSetNames on b when b implements it;
// otherwise an error wrapping errors.ErrUnsupported.
func ListJobSetNames(ctx context.Context, b Jobs, queue, after string, limit int) ([]string, error) {
	if e, ok := b.(JobSetNames); ok {
		return e.JobSetNames(ctx, queue, after, limit)
	}
	return nil, fmt.Errorf("backend: %T lists no job sets: %w", b, errors.ErrUnsupported)
}

// EndedCounts is an optional interface of a Jobs: how many jobs of a job
// set ended in each terminal state, kept as they end (the web UI's job
// set page shows them), never counted by a scan of the set's jobs.
type EndedCounts interface {
	// EndedCounts returns the job set's counts; all 0 for an unknown
	// set or queue. Errors: ErrClosed, ErrUnavailable, or the context's.
	EndedCounts(ctx context.Context, queue, jobSet string) (EndedCount, error)
}

// EndedCount is a job set's ended jobs per terminal state.
type EndedCount struct {
	Succeeded, Failed, Cancelled, Preempted int
}

// Add adds n to the count of terminal state st (nothing for another).
func (c *EndedCount) Add(st events.State, n int) {
	switch st {
	case events.SucceededState:
		c.Succeeded += n
	case events.FailedState:
		c.Failed += n
	case events.CancelledState:
		c.Cancelled += n
	case events.PreemptedState:
		c.Preempted += n
	}
}

// CountEnded is EndedCounts.EndedCounts on b when b implements it;
// otherwise an error wrapping errors.ErrUnsupported.
func CountEnded(ctx context.Context, b Jobs, queue, jobSet string) (EndedCount, error) {
	if e, ok := b.(EndedCounts); ok {
		return e.EndedCounts(ctx, queue, jobSet)
	}
	return EndedCount{}, fmt.Errorf("backend: %T counts no ended jobs: %w", b, errors.ErrUnsupported)
}
