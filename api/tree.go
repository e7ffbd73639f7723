package api

import (
	"errors"
	"fmt"

	"github.com/flotilla-sched/flotilla"
)

// Group is a group of the queue tree (docs/queue-tree.md), and in lists its
// standing.
type Group struct {
	Name string `json:"name"`
	// Parent names the enclosing group; absent is the root.
	Parent string `json:"parent,omitempty"`
	// PriorityFactor scales the group's claim among its siblings (weight
	// 1/factor); absent or 0 means 1.
	PriorityFactor float64 `json:"priorityFactor,omitempty"`
	// Guaranteed, Limit and LendingLimit are the group's quotas, resource
	// name to quantity; a resource left out is not given (the children's
	// guarantees, no limit, all of the guarantee lendable).
	Guaranteed   map[string]string `json:"guaranteed,omitempty"`
	Limit        map[string]string `json:"limit,omitempty"`
	LendingLimit map[string]string `json:"lendingLimit,omitempty"`
	// Status is filled in by the server on reads and ignored on writes.
	Status *GroupStatus `json:"status,omitempty"`
}

// GroupStatus is a group's standing in the last cycle: its queues' jobs
// and shares summed, and its part of its parent's fair shares.
type GroupStatus struct {
	Queued            int     `json:"queued"`
	Running           int     `json:"running"`
	Share             float64 `json:"share"`
	FairShare         float64 `json:"fairShare"`
	AdjustedFairShare float64 `json:"adjustedFairShare"`
	Demand            float64 `json:"demand"`
	Usage             float64 `json:"usage"`
	// Pools are the group's standing in each pool's last cycle, as a
	// queue's (QueueStatus.Pools).
	Pools []QueueShare `json:"pools,omitempty"`
}

// Definition is the group definition the server stores, its quotas
// parsed against schema. Every problem is a *flotilla.FieldError named
// `group "NAME".limit.cpu` and the like, all joined.
func (g *Group) Definition(schema *flotilla.ResourceSchema) (flotilla.QueueGroup, error) {
	gr, l, ll, err := parseQuotas(schema, fmt.Sprintf("group %q", g.Name), g.Guaranteed, g.Limit, g.LendingLimit)
	return flotilla.QueueGroup{Name: g.Name, Parent: g.Parent, PriorityFactor: g.PriorityFactor,
		Guaranteed: gr, Limit: l, LendingLimit: ll}, err
}

// parseQuotas parses the three quota maps of the node at path p
// (ResourceSchema.ParsePartial: a resource left out is flotilla.Absent).
func parseQuotas(schema *flotilla.ResourceSchema, p string, g, l, ll map[string]string) (gr, lr, llr flotilla.Resources, err error) {
	var errs [3]error
	gr, errs[0] = schema.ParsePartial(p+".guaranteed", g)
	lr, errs[1] = schema.ParsePartial(p+".limit", l)
	llr, errs[2] = schema.ParsePartial(p+".lendingLimit", ll)
	return gr, lr, llr, errors.Join(errs[:]...)
}

// FormatQuota is a quota vector's wire form: resource name to quantity,
// the resources not given left out; nil when none is.
func FormatQuota(schema *flotilla.ResourceSchema, r flotilla.Resources) map[string]string {
	if r == nil {
		return nil
	}
	m := schema.FormatPartial(r)
	if len(m) == 0 {
		return nil
	}
	return m
}
