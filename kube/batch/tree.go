package batch

import (
	"fmt"
	"strings"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/fairness"
	"github.com/flotilla-sched/flotilla/scheduler"
)

// hasTree reports whether a queue hangs from a group or has a quota.
func hasTree(qs []*flotilla.Queue) bool {
	for _, q := range qs {
		if q != nil && q.InTree() {
			return true
		}
	}
	return false
}

// checkTree judges the configured queue tree as the scheduler will every
// cycle (fairness.NewTree: every problem at once, by groups[i]… and
// queues[i]… paths).
func checkTree(cfg Config) error {
	spec := fairness.TreeSpec{}
	for _, g := range cfg.Groups {
		spec.Groups = append(spec.Groups, fairness.GroupSpec(g))
	}
	for _, q := range cfg.Queues {
		spec.Queues = append(spec.Queues, fairness.QueueSpec(q))
	}
	_, err := fairness.NewTree(cfg.Schema, spec)
	return err
}

// relay lays a quota vector of schema from out by resource name into
// schema to (Absent where to's resource is not in from); nil stays nil.
func relay(r flotilla.Resources, from, to *flotilla.ResourceSchema) flotilla.Resources {
	if r == nil {
		return nil
	}
	out := make(flotilla.Resources, to.Len())
	for i := range out {
		out[i] = flotilla.Absent
		if j, ok := from.Index(to.Name(i)); ok {
			out[i] = r[j]
		}
	}
	return out
}

// treeView is what a cycle's result says about the queue tree, for the
// conditions of waiting pods: each queue's and group's line, and the
// configured limits.
type treeView struct {
	schema *flotilla.ResourceSchema
	queues map[string]*scheduler.QueueReport
	groups map[string]*scheduler.GroupReport
	limits map[string]flotilla.Resources
	// shares caches each queue's share text.
	shares map[string]string
}

// newTreeView returns nil when the configuration has no tree.
func (s *Scheduler) newTreeView(res *scheduler.Result) *treeView {
	if len(s.cfg.Groups) == 0 && !hasTree(s.cfg.Queues) {
		return nil
	}
	tv := &treeView{schema: s.schema, queues: map[string]*scheduler.QueueReport{}, groups: map[string]*scheduler.GroupReport{},
		limits: map[string]flotilla.Resources{}, shares: map[string]string{}}
	for i := range res.Queues {
		tv.queues[res.Queues[i].Name] = &res.Queues[i]
	}
	for i := range res.Groups {
		tv.groups[res.Groups[i].Name] = &res.Groups[i]
	}
	for _, g := range s.cfg.Groups {
		tv.limits[g.Name] = g.Limit
	}
	for _, q := range s.cfg.Queues {
		tv.limits[q.Name] = q.Limit
	}
	return tv
}

// sharesOf is the fair shares along queue q's path, to two decimals (so
// that a condition is rewritten only when they move visibly): "queue nlp:
// fair share 0.26, adjusted 0.41; group research: 0.58, 0.59".
func (tv *treeView) sharesOf(q string) string {
	if s, ok := tv.shares[q]; ok {
		return s
	}
	qr := tv.queues[q]
	if qr == nil {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "queue %s: fair share %.2f, adjusted %.2f", q, qr.FairShare, qr.AdjustedFairShare)
	for p, n := qr.Parent, 0; p != "" && n < 64; n++ {
		g := tv.groups[p]
		if g == nil {
			break
		}
		fmt.Fprintf(&b, "; group %s: %.2f, %.2f", p, g.FairShare, g.AdjustedFairShare)
		p = g.Parent
	}
	tv.shares[q] = b.String()
	return tv.shares[q]
}

// limitText says which resource holds node (a queue or group) at its
// limit for a job requesting req: "group research holds 24 of its limit
// of 24 nvidia.com/gpu".
func (tv *treeView) limitText(node string, req flotilla.Resources) string {
	lim := tv.limits[node]
	var alloc flotilla.Resources
	kind := "queue"
	if g := tv.groups[node]; g != nil {
		alloc, kind = g.Allocated, "group"
	} else if q := tv.queues[node]; q != nil {
		alloc = q.Allocated
	}
	if lim == nil || len(alloc) != len(lim) {
		return ""
	}
	best, worst := -1, -1.0
	for r, l := range lim {
		if l == flotilla.Absent {
			continue
		}
		if r < len(req) && alloc[r]+req[r] > l {
			best = r
			break
		}
		if f := float64(alloc[r]) / float64(max(l, 1)); f > worst {
			best, worst = r, f
		}
	}
	if best < 0 {
		return ""
	}
	return fmt.Sprintf("%s %s holds %s of its limit of %s %s", kind, node,
		tv.schema.Quantity(best, alloc[best]), tv.schema.Quantity(best, lim[best]), tv.schema.Name(best))
}

// message adds the tree's view to a waiting pod's condition message.
func (tv *treeView) message(msg string, u scheduler.Unscheduled) string {
	if tv == nil || u.Job == nil {
		return msg
	}
	if u.Reason.Code == scheduler.ReasonLimit {
		if t := tv.limitText(u.Reason.Message, u.Job.Requests); t != "" {
			msg += " (" + t + ")"
		}
	}
	if s := tv.sharesOf(u.Job.Queue); s != "" {
		msg += "; " + s
	}
	return msg
}
