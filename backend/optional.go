package backend

import (
	"context"
	"errors"
	"strconv"

	"github.com/flotilla-sched/flotilla"
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
