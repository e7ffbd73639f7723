package httpapi

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/api"
	"github.com/flotilla-sched/flotilla/priority"
	"github.com/flotilla-sched/flotilla/scheduler"
	"github.com/flotilla-sched/flotilla/server"
	"github.com/flotilla-sched/flotilla/textform"
)

// The functions in this file convert between the JSON bodies (package
// api, which imports nothing of the service) and the service's types. The
// handler uses them, and so does an in-process executor
// (httpapi.Local), so that both speak the same protocol.

// QueueOf is the wire form of a queue with its status; schema formats
// its quotas.
func QueueOf(q server.QueueInfo, schema *flotilla.ResourceSchema) api.Queue {
	out := api.Queue{
		Name: q.Name, PriorityFactor: q.PriorityFactor, LimitsByPriorityClass: q.LimitsByPriorityClass,
		Parent: q.Parent, Guaranteed: api.FormatQuota(schema, q.Guaranteed), Limit: api.FormatQuota(schema, q.Limit),
		LendingLimit: api.FormatQuota(schema, q.LendingLimit), RetryPolicy: q.RetryPolicy,
		Status: &api.QueueStatus{
			Queued: q.Queued, NeverFit: q.NeverFit, Leased: q.Leased, Running: q.Running,
			Share: q.Report.Share, FairShare: q.Report.FairShare, AdjustedFairShare: q.Report.AdjustedFairShare,
			Usage: q.Report.Usage, Cordoned: q.Cordoned,
		},
	}
	for _, p := range q.Pools {
		out.Status.Pools = append(out.Status.Pools, queueShareOf(p.Report, p.Pool))
	}
	return out
}

// queueShareOf is a queue's line in pool's last cycle.
func queueShareOf(q scheduler.QueueReport, pool string) api.QueueShare {
	return api.QueueShare{Share: q.Share, FairShare: q.FairShare, AdjustedFairShare: q.AdjustedFairShare,
		Demand: q.Demand, Running: q.Running, Queued: q.Queued, Pool: pool}
}

// GroupOf is the wire form of a group with its status; schema formats its
// quotas.
func GroupOf(g server.GroupInfo, schema *flotilla.ResourceSchema) api.Group {
	r := g.Report
	out := api.Group{
		Name: g.Name, Parent: g.Parent, PriorityFactor: g.PriorityFactor,
		Guaranteed: api.FormatQuota(schema, g.Guaranteed), Limit: api.FormatQuota(schema, g.Limit),
		LendingLimit: api.FormatQuota(schema, g.LendingLimit),
		Status: &api.GroupStatus{Queued: r.Queued, Running: r.Running, Share: r.Share, FairShare: r.FairShare,
			AdjustedFairShare: r.AdjustedFairShare, Demand: r.Demand, Usage: r.Usage},
	}
	for _, p := range g.Pools {
		r := p.Report
		out.Status.Pools = append(out.Status.Pools, api.QueueShare{Share: r.Share, FairShare: r.FairShare,
			AdjustedFairShare: r.AdjustedFairShare, Demand: r.Demand, Running: r.Running, Queued: r.Queued, Pool: p.Pool})
	}
	return out
}

// CancelResponseOf is the wire form of a cancellation's result.
func CancelResponseOf(r server.CancelResult) api.CancelResponse {
	return api.CancelResponse{Cancelled: nonNil(r.Cancelled), Requested: nonNil(r.Requested), Finished: nonNil(r.Finished)}
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// JobStatusOf is the wire form of a job's status.
func JobStatusOf(s server.JobStatus) api.JobStatus {
	return api.JobStatus{Job: s.Job, Queue: s.Queue, JobSet: s.JobSet, State: s.State.String(), Attempts: s.Attempts,
		Cluster: s.Cluster, Node: s.Node, Reason: s.Reason, CancelRequested: s.CancelRequested,
		Rule: s.Record.State.Rule, Retries: s.Record.State.Retries}
}

// ServerReport converts a report for cluster into the service's form,
// parsing quantities against schema. Every problem is a
// *flotilla.FieldError at the body's path (nodes[2].resources.cpu), all
// joined.
func ServerReport(r *api.Report, cluster string, schema *flotilla.ResourceSchema) (*server.Report, error) {
	return ServerReportReusing(r, cluster, schema, nil)
}

// ServerReportReusing is ServerReport with the service's form of the jobs
// in jobs's array when it is long enough (a caller reporting often reuses
// one array; the report's Jobs are then valid until it reuses it again).
func ServerReportReusing(r *api.Report, cluster string, schema *flotilla.ResourceSchema, jobs []server.JobReport) (*server.Report, error) {
	if cap(jobs) < len(r.Jobs) {
		jobs = make([]server.JobReport, len(r.Jobs))
	}
	out := &server.Report{Cluster: cluster, Pool: r.Pool, Jobs: jobs[:len(r.Jobs)]}
	var errs []error
	if r.Nodes != nil {
		out.Nodes = make([]flotilla.Node, len(r.Nodes))
		for i, n := range r.Nodes {
			p := fmt.Sprintf("nodes[%d]", i)
			total, err := schema.Parse(p+".resources", n.Resources)
			if err != nil {
				errs = append(errs, err)
			}
			out.Nodes[i] = flotilla.Node{Name: n.Name, Cluster: cluster, Labels: n.Labels, Taints: textform.Taints(n.Taints), Total: total,
				Unschedulable: n.Unschedulable}
		}
	}
	for i, j := range r.Jobs {
		out.Jobs[i] = server.JobReport{Job: j.Job, Attempt: j.Attempt, Phase: server.JobPhase(j.Phase), ExitCode: j.ExitCode, Reason: j.Reason,
			FailureReason: j.FailureReason}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return out, nil
}

// ReportReplyOf is the wire form of the answer to a report.
func ReportReplyOf(r *server.ReportReply, schema *flotilla.ResourceSchema) api.ReportReply {
	out := api.ReportReply{Leases: make([]api.Lease, len(r.Leases)), Kill: make([]api.Kill, len(r.Kill)), Cordoned: r.Cordoned}
	for i, l := range r.Leases {
		out.Leases[i] = api.Lease{
			Job: l.Job.ID, Queue: l.Job.Queue, JobSet: l.Job.JobSet, Attempt: l.Attempt, Node: l.Node,
			PriorityClass: l.Job.PriorityClass, Requests: schema.Format(l.Job.Requests),
			TerminationGracePeriod: l.TerminationGracePeriod.String(), ActiveDeadline: durationString(l.ActiveDeadline),
			Runtime: durationString(l.Runtime), ExitCode: l.ExitCode,
		}
	}
	for i, k := range r.Kill {
		out.Kill[i] = api.Kill{Job: k.Job, Attempt: k.Attempt, Reason: k.Reason, GracePeriod: k.GracePeriod.String()}
	}
	return out
}

func durationString(d time.Duration) string {
	if d == 0 {
		return ""
	}
	return d.String()
}

// JobExplainOf is the wire form of a job's detail and, for a queued job,
// the last cycle's reason for it (st.Why).
func JobExplainOf(d server.JobDetail, st server.JobStatus, schema *flotilla.ResourceSchema) *api.JobExplain {
	e := &api.JobExplain{Priority: api.JobPriority{Class: d.Class, ClassPriority: d.ClassPriority, Priority: d.Priority}}
	if p := d.Position; p != nil {
		e.Place = &api.QueuePlace{Position: p.Ahead + 1, Queued: p.Queued, Ahead: p.Ahead, AheadRequests: map[string]string{}, Partial: p.Partial,
			GangIncomplete: p.GangIncomplete}
		if p.AheadRequests != nil {
			e.Place.AheadRequests = schema.Format(p.AheadRequests)
		}
	}
	if q := d.Queue; q != nil {
		s := queueShareOf(*q, d.Pool)
		e.QueueShare = &s
	}
	if st.Why != nil {
		e.Unscheduled = UnscheduledOf(*st.Why, schema)
	}
	if f := d.Flux; f != nil {
		c := f.Calculation
		term := func(t priority.Term) api.FluxTerm {
			return api.FluxTerm{Factor: t.Factor, Weight: t.Weight, Product: t.Product}
		}
		e.Flux = &api.FluxBreakdown{User: f.User, Bank: f.Bank, Queue: f.Queue,
			FairShare: term(c.FairShare), BankTerm: term(c.Bank), QueueTerm: term(c.Queue), Urgency: term(c.Urgency),
			QueuePriority: c.QueuePriority, Override: c.Override.String(), Priority: c.Priority}
	}
	return e
}

// UnscheduledOf is the wire form of a Reason, each shortfall a quantity
// of its resource.
func UnscheduledOf(r scheduler.Reason, schema *flotilla.ResourceSchema) *api.Unscheduled {
	u := &api.Unscheduled{Code: r.Code.String(), Message: r.Message}
	s := r.Search
	if s == nil {
		return u
	}
	u.SameAs, u.SameAsQueue, u.NodesSearched = s.SameAs, s.SameAsQueue, s.Nodes
	for _, f := range s.Filtered {
		u.NodeGroups = append(u.NodeGroups, api.NodeGroup{Nodes: f.Nodes, Filter: string(f.Filter), Detail: f.Detail})
	}
	for _, sf := range s.Shortfall {
		amount := strconv.FormatInt(sf.Amount, 10)
		if i, ok := schema.Index(sf.Resource); ok {
			amount = schema.Quantity(i, sf.Amount)
		}
		we := sf.WhenEmpty
		u.NodeGroups = append(u.NodeGroups, api.NodeGroup{Nodes: sf.Nodes, ShortOf: sf.Resource, Short: amount, WhenEmpty: &we})
	}
	if s.Member != "" {
		u.GangMember = &api.GangMember{Job: s.Member, PlacedBefore: s.PlacedBefore}
	}
	return u
}

// PriorityBreakdown is the priority package's form of job's flux
// breakdown f, for its tables (priority.WriteJobsTable).
func PriorityBreakdown(job string, f *api.FluxBreakdown) priority.Breakdown {
	term := func(t api.FluxTerm) priority.Term {
		return priority.Term{Factor: t.Factor, Weight: t.Weight, Product: t.Product}
	}
	c := priority.Calculation{FairShare: term(f.FairShare), Queue: term(f.QueueTerm), Bank: term(f.BankTerm), Urgency: term(f.Urgency),
		QueuePriority: f.QueuePriority, Priority: f.Priority}
	switch f.Override {
	case priority.Held.String():
		c.Override = priority.Held
	case priority.Expedited.String():
		c.Override = priority.Expedited
	}
	return priority.Breakdown{JobID: job, User: f.User, Bank: f.Bank, Queue: f.Queue, Calculation: c}
}
