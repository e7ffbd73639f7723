package memory

import (
	"context"
	"strconv"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/backend"
	"github.com/flotilla-sched/flotilla/events"
)

var _ backend.Fenced = (*Backend)(nil)

// WithFence returns a view of b whose queue, group, executor, usage, cordon and retry-policy writes are
// fenced by token (backend.Fenced): under b's lock, a token below the
// highest fence applied is refused with backend.ErrFenced and nothing
// changes; an applied write raises the highest fence to token. The view
// shares b: its reads, Commit, lookups and lease are b's, and closing it
// closes b.
func (b *Backend) WithFence(token uint64) backend.Backend {
	return fencedView{Backend: b, token: token}
}

// fencedView is WithFence's view. Embedding *Backend keeps every method of
// b, the optional interfaces too; the ten unfenced writes are replaced.
type fencedView struct {
	*Backend
	token uint64
}

func (v fencedView) CreateQueue(ctx context.Context, q flotilla.Queue) error {
	return v.putQueue(ctx, q, false, &v.token)
}

func (v fencedView) UpdateQueue(ctx context.Context, q flotilla.Queue) error {
	return v.putQueue(ctx, q, true, &v.token)
}

func (v fencedView) DeleteQueue(ctx context.Context, name string) error {
	return v.deleteQueue(ctx, name, &v.token)
}

func (v fencedView) CreateGroup(ctx context.Context, g flotilla.QueueGroup) error {
	return v.putGroup(ctx, g, false, &v.token)
}

func (v fencedView) UpdateGroup(ctx context.Context, g flotilla.QueueGroup) error {
	return v.putGroup(ctx, g, true, &v.token)
}

func (v fencedView) DeleteGroup(ctx context.Context, name string) error {
	return v.deleteGroup(ctx, name, &v.token)
}

func (v fencedView) PutExecutor(ctx context.Context, e backend.Executor) error {
	return v.putExecutor(ctx, e, &v.token)
}

func (v fencedView) PutUsage(ctx context.Context, rs []backend.UsageRecord) error {
	return v.putUsage(ctx, rs, &v.token)
}

func (v fencedView) PutCordon(ctx context.Context, c backend.Cordon, on bool) error {
	return v.putCordon(ctx, c, on, &v.token)
}

func (v fencedView) PutRetryPolicy(ctx context.Context, queue string, p *events.RetryPolicy) error {
	return v.putRetryPolicy(ctx, queue, p, &v.token)
}

// readyFenced is ready, then the check of fence (nil: an unfenced write)
// against the highest fence applied. Call with the write lock held.
func (b *Backend) readyFenced(ctx context.Context, fence *uint64) error {
	if err := b.ready(ctx); err != nil {
		return err
	}
	if fence != nil && *fence < b.fence {
		return flotilla.Errorf("fence", strconv.FormatUint(*fence, 10), backend.ErrFenced, "a write with fence %d was applied", b.fence)
	}
	return nil
}

// raiseFence records an applied write's fence (nil: unfenced, no change).
// Call with the write lock held, after readyFenced passed.
func (b *Backend) raiseFence(fence *uint64) {
	if fence != nil {
		b.fence = max(b.fence, *fence)
	}
}
