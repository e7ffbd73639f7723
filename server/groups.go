package server

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/backend"
	"github.com/flotilla-sched/flotilla/fairness"
	"github.com/flotilla-sched/flotilla/scheduler"
	"github.com/flotilla-sched/flotilla/submit"
)

// The queue tree (docs/queue-tree.md): groups are its inner nodes, queues its
// leaves. The service checks the whole tree (fairness.NewTree's rules) on
// every change of a queue or group and refuses a change that would leave it
// invalid, before anything is stored. A change takes effect at the next
// cycle, whatever jobs run.

// validGroup checks a group definition on its own: backend.ValidateGroup's
// rules and a name usable in paths and logs (as a queue's). An over-long
// name is the only problem reported.
func (d *deps) validGroup(g *flotilla.QueueGroup) error {
	field := fmt.Sprintf("group %q.name", g.Name)
	if len(g.Name) > submit.MaxNameBytes {
		return submit.CheckSegment(fmt.Sprintf("group %q.name", submit.Shown(g.Name)), "group", g.Name)
	}
	return errors.Join(backend.ValidateGroup(d.cat.Schema, g), checkName(field, "group", g.Name))
}

// checkTree checks the queue tree as it would be with q (when not nil) or
// g (when not nil) put in, replacing the node of that name: every problem
// of fairness.NewTree, each field named `queue "NAME"` or `group "NAME"`
// rather than by its index.
func (s *state) checkTree(q *flotilla.Queue, g *flotilla.QueueGroup) error {
	spec := fairness.TreeSpec{
		Groups: make([]fairness.NodeSpec, 0, len(s.groups)+1),
		Queues: make([]fairness.NodeSpec, 0, len(s.queues)+1),
	}
	for _, name := range slices.Sorted(maps.Keys(s.groups)) {
		if g == nil || name != g.Name {
			spec.Groups = append(spec.Groups, fairness.GroupSpec(s.groups[name]))
		}
	}
	if g != nil {
		spec.Groups = append(spec.Groups, fairness.GroupSpec(g))
	}
	for _, name := range slices.Sorted(maps.Keys(s.queues)) {
		if q == nil || name != q.Name {
			spec.Queues = append(spec.Queues, fairness.QueueSpec(s.queues[name]))
		}
	}
	if q != nil {
		spec.Queues = append(spec.Queues, fairness.QueueSpec(q))
	}
	_, err := fairness.NewTree(s.cat.Schema, spec)
	if err == nil {
		return nil
	}
	return flotilla.RenameFields(err, func(f string) string { return nodePath(&spec, f) })
}

// nodePath puts a TreeSpec path (groups[3].limit.cpu) in the service's
// terms (group "research".limit.cpu).
func nodePath(spec *fairness.TreeSpec, field string) string {
	for _, kind := range []struct {
		prefix, name string
		nodes        []fairness.NodeSpec
	}{{"groups[", "group", spec.Groups}, {"queues[", "queue", spec.Queues}} {
		rest, ok := strings.CutPrefix(field, kind.prefix)
		if !ok {
			continue
		}
		num, tail, ok := strings.Cut(rest, "]")
		i, err := strconv.Atoi(num)
		if !ok || err != nil || i < 0 || i >= len(kind.nodes) {
			return field
		}
		return fmt.Sprintf("%s %q%s", kind.name, kind.nodes[i].Name, tail)
	}
	return field
}

// CreateGroup adds a group of the queue tree. Errors: the definition's
// problems and the tree's with it (*flotilla.FieldError, joined: an unknown
// parent, a cycle, a limit below the guarantee, …), backend.ErrExists when
// a group or a queue has the name, or the backend's error; nothing changes
// on error.
func (s *Server) CreateGroup(ctx context.Context, g flotilla.QueueGroup) error {
	return s.putGroup(ctx, g, s.st.be.CreateGroup)
}

// UpdateGroup replaces a group's definition; the next cycle uses it.
// Errors as for CreateGroup, and backend.ErrNotFound when there is no such
// group.
func (s *Server) UpdateGroup(ctx context.Context, g flotilla.QueueGroup) error {
	return s.putGroup(ctx, g, s.st.be.UpdateGroup)
}

// putGroup validates g, then under the lock checks the tree with g in it,
// stores g with store and keeps it in memory.
func (s *Server) putGroup(ctx context.Context, g flotilla.QueueGroup, store func(context.Context, flotilla.QueueGroup) error) error {
	if err := s.st.validGroup(&g); err != nil {
		return err
	}
	g = cloneGroup(g)
	s.mu.Lock()
	defer s.mu.Unlock()
	st := &s.st
	if err := st.fresh(ctx); err != nil {
		return err
	}
	if _, ok := st.queues[g.Name]; ok {
		return flotilla.Errorf("group", g.Name, backend.ErrExists, "a queue has this name")
	}
	if err := st.checkTree(nil, &g); err != nil {
		return err
	}
	if err := store(ctx, g); err != nil {
		return err
	}
	st.groups[g.Name] = &g
	return nil
}

// DeleteGroup removes a group: backend.ErrNotFound when there is none,
// backend.ErrNotEmpty while a queue or a group has it as parent.
func (s *Server) DeleteGroup(ctx context.Context, name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := &s.st
	if err := st.fresh(ctx); err != nil {
		return err
	}
	if _, ok := st.groups[name]; !ok {
		return flotilla.Errorf("group", name, backend.ErrNotFound, "no such group")
	}
	if children := st.children(name); len(children) > 0 {
		return flotilla.Errorf("group", name, backend.ErrNotEmpty, "has children: %s", strings.Join(children, ", "))
	}
	if err := st.be.DeleteGroup(ctx, name); err != nil {
		return err
	}
	delete(st.groups, name)
	return nil
}

// children lists the queues and groups whose parent is the named group,
// as "queue NAME" and "group NAME", sorted.
func (s *state) children(name string) []string {
	var out []string
	for _, q := range s.queues {
		if q.Parent == name {
			out = append(out, "queue "+q.Name)
		}
	}
	for _, g := range s.groups {
		if g.Parent == name {
			out = append(out, "group "+g.Name)
		}
	}
	slices.Sort(out)
	return out
}

// GroupInfo is a group with its standing in the last cycle.
type GroupInfo struct {
	flotilla.QueueGroup
	// Report is the group's line in the last cycle's result (share, fair
	// shares, usage, its jobs counted); zero before the first cycle that
	// saw the group.
	Report scheduler.GroupReport
	// Pool is the pool whose last cycle Report is from ("" before any).
	Pool string
	// Pools are the group's lines in each pool's last cycle, in pool
	// name order, when the service knows more than one pool (Report is
	// then the first's, or backend.DefaultPool's when it has one).
	Pools []PoolGroupReport
}

// PoolGroupReport is a group's line in one pool's last cycle.
type PoolGroupReport struct {
	Pool   string
	Report scheduler.GroupReport
}

// Group returns one group; backend.ErrNotFound when there is none.
func (s *Server) Group(ctx context.Context, name string) (GroupInfo, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.st.fresh(ctx); err != nil {
		return GroupInfo{}, err
	}
	g, ok := s.st.groups[name]
	if !ok {
		return GroupInfo{}, flotilla.Errorf("group", name, backend.ErrNotFound, "no such group")
	}
	return s.st.groupInfo(g), nil
}

// ListGroups returns every group with its standing, sorted by name.
func (s *Server) ListGroups(ctx context.Context) ([]GroupInfo, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.st.fresh(ctx); err != nil {
		return nil, err
	}
	out := make([]GroupInfo, 0, len(s.st.groups))
	for _, name := range slices.Sorted(maps.Keys(s.st.groups)) {
		out = append(out, s.st.groupInfo(s.st.groups[name]))
	}
	return out, nil
}

// cloneGroup copies a group's quota vectors so that the caller's slices
// are not shared.
func cloneGroup(g flotilla.QueueGroup) flotilla.QueueGroup {
	g.Guaranteed, g.Limit, g.LendingLimit = backend.CloneQuota(g.Guaranteed), backend.CloneQuota(g.Limit), backend.CloneQuota(g.LendingLimit)
	return g
}

// TreeUsage returns the queue tree's usage memory the next cycle of pool
// starts from (Snapshot.Usage before queues deleted since are dropped):
// the pool's last cycle's Result.Usage, or after New the one restored
// from the backend. The caller owns the map.
func (s *Server) TreeUsage(pool string) scheduler.UsageState {
	s.mu.Lock()
	defer s.mu.Unlock()
	u := s.st.last.pool(poolOf(pool)).usage
	u.Usage = maps.Clone(u.Usage)
	return u
}
