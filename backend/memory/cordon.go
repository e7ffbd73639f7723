package memory

import (
	"cmp"
	"context"
	"maps"
	"slices"

	"github.com/flotilla-sched/flotilla/backend"
)

// PutCordon cordons or uncordons a queue or a cluster (backend.Cordons).
func (b *Backend) PutCordon(ctx context.Context, c backend.Cordon, on bool) error {
	return b.putCordon(ctx, c, on, nil)
}

// putCordon is PutCordon, fenced by fence unless nil.
func (b *Backend) putCordon(ctx context.Context, c backend.Cordon, on bool, fence *uint64) error {
	if err := c.Check(); err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.readyFenced(ctx, fence); err != nil {
		return err
	}
	if on {
		b.cordons[c] = true
	} else {
		delete(b.cordons, c)
	}
	b.raiseFence(fence)
	return nil
}

// ListCordons returns every cordon, sorted by kind, then name.
func (b *Backend) ListCordons(ctx context.Context) ([]backend.Cordon, error) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	if err := b.ready(ctx); err != nil {
		return nil, err
	}
	return slices.SortedFunc(maps.Keys(b.cordons), func(x, y backend.Cordon) int {
		return cmp.Or(cmp.Compare(x.Kind, y.Kind), cmp.Compare(x.Name, y.Name))
	}), nil
}
