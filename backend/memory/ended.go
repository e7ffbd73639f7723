package memory

import (
	"context"
	"strings"

	"github.com/google/btree"

	"github.com/flotilla-sched/flotilla/backend"
	"github.com/flotilla-sched/flotilla/events"
)

var _ backend.EndedJobs = (*Backend)(nil)

// endedItem is an ended job in its set's index: its submit time (as
// stored), id and record's handle.
type endedItem struct {
	submit int64
	id     string
	h      uint32
}

func endedLess(a, b endedItem) bool {
	if a.submit != b.submit {
		return a.submit < b.submit
	}
	return a.id < b.id
}

// nEnded is the number of terminal states, SucceededState first.
const nEnded = int(events.PreemptedState-events.SucceededState) + 1

// endedIndex holds a job set's ended jobs per terminal state in submit
// order (32 bytes and a share of a B-tree node per job).
type endedIndex [nEnded]*btree.BTreeG[endedItem]

// noteEnded enters the job of record r (handle h), which has just reached
// terminal state st, into its set's index. Call with the write lock held.
func (b *Backend) noteEnded(set *jobSet, h uint32, r *jobRec, st events.State) {
	k := int(st - events.SucceededState)
	if set.ended == nil {
		set.ended = new(endedIndex)
	}
	t := set.ended[k]
	if t == nil {
		t = btree.NewG(32, endedLess)
		set.ended[k] = t
	}
	t.ReplaceOrInsert(endedItem{submit: encodeTime(r.job.SubmitTime), id: r.job.ID, h: h})
}

// EndedJobs returns a page of a job set's ended jobs in one state, in
// submit order (backend.EndedJobs): a descent of the set's index for that
// state to the page's start, then q.Limit steps.
func (b *Backend) EndedJobs(ctx context.Context, q backend.EndedQuery) ([]backend.Record, error) {
	if err := backend.CheckEndedQuery(q); err != nil {
		return nil, err
	}
	b.mu.RLock()
	defer b.mu.RUnlock()
	if err := b.ready(ctx); err != nil {
		return nil, err
	}
	out := []backend.Record{}
	set := b.sets[setKey{q.Queue, q.JobSet}]
	if set == nil || set.ended == nil || set.ended[int(q.State-events.SucceededState)] == nil {
		return out, nil
	}
	t := set.ended[int(q.State-events.SucceededState)]
	visit := func(it endedItem) bool {
		if q.After != nil && it.submit == encodeTime(q.After.SubmitTime) && strings.Compare(it.id, q.After.ID) <= 0 {
			return true // the cursor's own job
		}
		r := b.rec(it.h)
		out = append(out, backend.Record{Spec: b.spec(r), State: b.state(r)})
		return len(out) < q.Limit
	}
	if q.After == nil {
		t.Ascend(visit)
	} else {
		t.AscendGreaterOrEqual(endedItem{submit: encodeTime(q.After.SubmitTime), id: q.After.ID}, visit)
	}
	return out, nil
}

var _ backend.JobSetNames = (*Backend)(nil)

// JobSetNames returns a page of a queue's job sets by name
// (backend.JobSetNames): a descent of the queue's index of set names.
func (b *Backend) JobSetNames(ctx context.Context, queue, after string, limit int) ([]string, error) {
	if err := backend.CheckJobSetNamesLimit(limit); err != nil {
		return nil, err
	}
	b.mu.RLock()
	defer b.mu.RUnlock()
	if err := b.ready(ctx); err != nil {
		return nil, err
	}
	out := []string{}
	t := b.setNames[queue]
	if t == nil {
		return out, nil
	}
	t.AscendGreaterOrEqual(after, func(name string) bool {
		if name == after {
			return true
		}
		out = append(out, name)
		return len(out) < limit
	})
	return out, nil
}

var _ backend.EndedCounts = (*Backend)(nil)

// EndedCounts returns a job set's ended jobs per terminal state
// (backend.EndedCounts): the sizes of the set's index per state.
func (b *Backend) EndedCounts(ctx context.Context, queue, jobSet string) (backend.EndedCount, error) {
	var out backend.EndedCount
	b.mu.RLock()
	defer b.mu.RUnlock()
	if err := b.ready(ctx); err != nil {
		return out, err
	}
	set := b.sets[setKey{queue, jobSet}]
	if set == nil || set.ended == nil {
		return out, nil
	}
	for k, t := range set.ended {
		if t != nil {
			out.Add(events.SucceededState+events.State(k), t.Len())
		}
	}
	return out, nil
}
