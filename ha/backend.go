package ha

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/backend"
	"github.com/flotilla-sched/flotilla/events"
)

// errNotLeader refuses a write of a term that has ended.
var errNotLeader = fmt.Errorf("flotilla serve: this process no longer leads: %w", backend.ErrFenced)

// The leader's backend has both batched lookups.
var (
	_ backend.ClientIDLookup = termBackend{}
	_ backend.JobLookup      = termBackend{}
	_ backend.EndedJobs      = termBackend{}
	_ backend.JobSetNames    = termBackend{}
	_ backend.EndedCounts    = termBackend{}
)

// termBackend is the backend a leader's server writes through: every
// write is refused once the term has ended by this process's clock (its
// lease may have passed to another process), queue, group, executor and
// usage writes included. Reads pass through. When the backend implements
// backend.Fenced, those writes go through its view for the term's token
// as well, so the database refuses them once a successor has written,
// also one that passed the clock check before the process was paused.
// It offers the batched lookups (backend.ClientIDLookup,
// backend.JobLookup) whatever the backend has: the backend's own when it
// has them, else one call per job (backend.JobsByID, JobsByClientID).
type termBackend struct {
	backend.Backend
	t   *term
	now func() time.Time
}

// leaderBackend returns be as the term's server sees it: fenced by the
// term's token (backend.WithFence) and by the term's clock.
func leaderBackend(be backend.Backend, t *term, now func() time.Time) backend.Backend {
	be, _ = backend.WithFence(be, t.token)
	return termBackend{Backend: be, t: t, now: now}
}

// JobsByClientID is backend.ClientIDLookup's, through the backend's.
func (b termBackend) JobsByClientID(ctx context.Context, queue string, clientIDs, ids []string) error {
	return backend.JobsByClientID(ctx, b.Backend, queue, clientIDs, ids)
}

// JobsByID is backend.JobLookup's, through the backend's.
func (b termBackend) JobsByID(ctx context.Context, ids []string, recs []backend.Record) error {
	return backend.JobsByID(ctx, b.Backend, ids, recs)
}

// EndedJobs is backend.EndedJobs', through the backend's (an error
// wrapping errors.ErrUnsupported when it has none).
func (b termBackend) EndedJobs(ctx context.Context, q backend.EndedQuery) ([]backend.Record, error) {
	return backend.ListEnded(ctx, b.Backend, q)
}

// JobSetNames is backend.JobSetNames', through the backend's (an error
// wrapping errors.ErrUnsupported when it has none).
func (b termBackend) JobSetNames(ctx context.Context, queue, after string, limit int) ([]string, error) {
	return backend.ListJobSetNames(ctx, b.Backend, queue, after, limit)
}

// EndedCounts is backend.EndedCounts', through the backend's (an error
// wrapping errors.ErrUnsupported when it has none).
func (b termBackend) EndedCounts(ctx context.Context, queue, jobSet string) (backend.EndedCount, error) {
	return backend.CountEnded(ctx, b.Backend, queue, jobSet)
}

func (b termBackend) check() error {
	if !b.t.alive(b.now()) {
		return errNotLeader
	}
	return nil
}

func (b termBackend) Commit(ctx context.Context, w *backend.Write) ([]events.Event, error) {
	if err := b.check(); err != nil {
		return nil, err
	}
	return b.Backend.Commit(ctx, w)
}

func (b termBackend) CreateQueue(ctx context.Context, q flotilla.Queue) error {
	if err := b.check(); err != nil {
		return err
	}
	return b.Backend.CreateQueue(ctx, q)
}

func (b termBackend) UpdateQueue(ctx context.Context, q flotilla.Queue) error {
	if err := b.check(); err != nil {
		return err
	}
	return b.Backend.UpdateQueue(ctx, q)
}

func (b termBackend) DeleteQueue(ctx context.Context, name string) error {
	if err := b.check(); err != nil {
		return err
	}
	return b.Backend.DeleteQueue(ctx, name)
}

func (b termBackend) CreateGroup(ctx context.Context, g flotilla.QueueGroup) error {
	if err := b.check(); err != nil {
		return err
	}
	return b.Backend.CreateGroup(ctx, g)
}

func (b termBackend) UpdateGroup(ctx context.Context, g flotilla.QueueGroup) error {
	if err := b.check(); err != nil {
		return err
	}
	return b.Backend.UpdateGroup(ctx, g)
}

func (b termBackend) DeleteGroup(ctx context.Context, name string) error {
	if err := b.check(); err != nil {
		return err
	}
	return b.Backend.DeleteGroup(ctx, name)
}

func (b termBackend) PutExecutor(ctx context.Context, e backend.Executor) error {
	if err := b.check(); err != nil {
		return err
	}
	return b.Backend.PutExecutor(ctx, e)
}

func (b termBackend) PutUsage(ctx context.Context, rs []backend.UsageRecord) error {
	if err := b.check(); err != nil {
		return err
	}
	return b.Backend.PutUsage(ctx, rs)
}

// termHandler serves h's requests for the term t: each request's context
// ends when the term does, so a watch served by a leader that steps down
// ends (its client resumes, through whichever process it reaches) rather
// than staying open on a server that writes nothing more.
func termHandler(t *term, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithCancel(r.Context())
		defer cancel()
		stop := context.AfterFunc(t.ctx, cancel)
		defer stop()
		h.ServeHTTP(w, r.WithContext(ctx))
	})
}
