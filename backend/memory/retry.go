package memory

import (
	"context"

	"github.com/flotilla-sched/flotilla/backend"
	"github.com/flotilla-sched/flotilla/events"
)

// PutRetryPolicy stores or removes a queue's retry policy
// (backend.RetryPolicies).
func (b *Backend) PutRetryPolicy(ctx context.Context, queue string, p *events.RetryPolicy) error {
	return b.putRetryPolicy(ctx, queue, p, nil)
}

// putRetryPolicy is PutRetryPolicy, fenced by fence unless nil.
func (b *Backend) putRetryPolicy(ctx context.Context, queue string, p *events.RetryPolicy, fence *uint64) error {
	if err := backend.CheckRetryPolicy(queue, p); err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.readyFenced(ctx, fence); err != nil {
		return err
	}
	if p == nil {
		delete(b.retry, queue)
	} else {
		b.retry[queue] = p.Clone()
	}
	b.raiseFence(fence)
	return nil
}

// ListRetryPolicies returns every stored retry policy by queue name.
func (b *Backend) ListRetryPolicies(ctx context.Context) (map[string]*events.RetryPolicy, error) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	if err := b.ready(ctx); err != nil {
		return nil, err
	}
	out := make(map[string]*events.RetryPolicy, len(b.retry))
	for q, p := range b.retry {
		out[q] = p.Clone()
	}
	return out, nil
}
