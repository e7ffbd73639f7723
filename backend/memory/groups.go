package memory

import (
	"context"
	"maps"
	"slices"
	"strings"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/backend"
)

// cloneGroup copies g's quota vectors, so that stored and returned groups
// share nothing with the caller.
func cloneGroup(g flotilla.QueueGroup) flotilla.QueueGroup {
	g.Guaranteed, g.Limit, g.LendingLimit = backend.CloneQuota(g.Guaranteed), backend.CloneQuota(g.Limit), backend.CloneQuota(g.LendingLimit)
	return g
}

// CreateGroup stores a new group: backend.ErrExists when the name is taken
// by a group.
func (b *Backend) CreateGroup(ctx context.Context, g flotilla.QueueGroup) error {
	return b.putGroup(ctx, g, false, nil)
}

// UpdateGroup replaces a group: backend.ErrNotFound when there is none.
func (b *Backend) UpdateGroup(ctx context.Context, g flotilla.QueueGroup) error {
	return b.putGroup(ctx, g, true, nil)
}

// putGroup stores g, which must exist already (update) or not (create),
// fenced by fence (nil: unfenced).
func (b *Backend) putGroup(ctx context.Context, g flotilla.QueueGroup, update bool, fence *uint64) error {
	if err := backend.ValidateGroup(b.schema, &g); err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.readyFenced(ctx, fence); err != nil {
		return err
	}
	switch _, ok := b.groups[g.Name]; {
	case ok && !update:
		return flotilla.Errorf("group", g.Name, backend.ErrExists, "")
	case !ok && update:
		return flotilla.Errorf("group", g.Name, backend.ErrNotFound, "")
	}
	b.groups[g.Name] = cloneGroup(g)
	b.raiseFence(fence)
	return nil
}

// DeleteGroup removes a group: backend.ErrNotFound when there is none,
// backend.ErrNotEmpty while a queue or group names it as parent.
func (b *Backend) DeleteGroup(ctx context.Context, name string) error {
	return b.deleteGroup(ctx, name, nil)
}

// deleteGroup is DeleteGroup fenced by fence (nil: unfenced).
func (b *Backend) deleteGroup(ctx context.Context, name string, fence *uint64) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.readyFenced(ctx, fence); err != nil {
		return err
	}
	if _, ok := b.groups[name]; !ok {
		return flotilla.Errorf("group", name, backend.ErrNotFound, "")
	}
	var children []string
	for q, def := range b.queues {
		if def.Parent == name {
			children = append(children, "queue "+q)
		}
	}
	for g, def := range b.groups {
		if def.Parent == name {
			children = append(children, "group "+g)
		}
	}
	if len(children) > 0 {
		slices.Sort(children)
		return flotilla.Errorf("group", name, backend.ErrNotEmpty, "has children: %s", strings.Join(children, ", "))
	}
	delete(b.groups, name)
	b.raiseFence(fence)
	return nil
}

// ListGroups returns every group sorted by name.
func (b *Backend) ListGroups(ctx context.Context) ([]flotilla.QueueGroup, error) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	if err := b.ready(ctx); err != nil {
		return nil, err
	}
	out := make([]flotilla.QueueGroup, 0, len(b.groups))
	for _, name := range slices.Sorted(maps.Keys(b.groups)) {
		out = append(out, cloneGroup(b.groups[name]))
	}
	return out, nil
}
