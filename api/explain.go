package api

import (
	"strconv"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/priority"
	"github.com/flotilla-sched/flotilla/scheduler"
	"github.com/flotilla-sched/flotilla/server"
)

// JobExplain is the long form of a job's status (GET /v1/jobs with
// explain=true; `flotilla status -v`). Its field names are those of
// `flotilla explain -o json` where the two say the same thing.
type JobExplain struct {
	Priority JobPriority `json:"priority"`
	// Place is a queued job's place in its queue now.
	Place *QueuePlace `json:"place,omitempty"`
	// QueueShare is the last cycle's report of the job's queue.
	QueueShare *QueueShare `json:"queueShare,omitempty"`
	// Unscheduled is why the last cycle left a queued job queued, when
	// it examined the job.
	Unscheduled *Unscheduled `json:"unscheduled,omitempty"`
	// Flux is the job's flux priority breakdown, with flux priorities.
	Flux *FluxBreakdown `json:"flux,omitempty"`
}

// JobPriority orders a job in its queue: higher class priority first,
// then lower priority.
type JobPriority struct {
	Class         string `json:"class"`
	ClassPriority int32  `json:"classPriority"`
	Priority      uint32 `json:"priority"`
}

// QueuePlace is a job's place in its queue's scheduling order.
type QueuePlace struct {
	// Position is 1 for the job the queue offers next.
	Position int `json:"position"`
	Queued   int `json:"queued"`
	Ahead    int `json:"ahead"`
	// AheadRequests is what the jobs ahead request, summed.
	AheadRequests map[string]string `json:"aheadRequests"`
	// Partial: the service stopped counting at Ahead jobs (its limit);
	// Position, Ahead and AheadRequests are lower bounds.
	Partial bool `json:"partial,omitempty"`
	// GangIncomplete: the job's gang is not all queued; the queue offers
	// it only whole, so Ahead counts every job the queue offers now.
	GangIncomplete bool `json:"gangIncomplete,omitempty"`
}

// QueueShare is a queue's standing in a cycle.
type QueueShare struct {
	Share             float64 `json:"share"`
	FairShare         float64 `json:"fairShare"`
	AdjustedFairShare float64 `json:"adjustedFairShare"`
	Demand            float64 `json:"demand"`
	Running           int     `json:"running"`
	Queued            int     `json:"queued"`
}

// Unscheduled is a scheduler.Reason: its code, its sentence and what the
// node search found, per group of nodes.
type Unscheduled struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	// SameAs names the job whose search this repeats (same requirements);
	// SameAsQueue its queue, when another queue's.
	SameAs        string      `json:"sameAs,omitempty"`
	SameAsQueue   string      `json:"sameAsQueue,omitempty"`
	NodesSearched int         `json:"nodesSearched,omitempty"`
	NodeGroups    []NodeGroup `json:"nodeGroups,omitempty"`
	// GangMember is, for a gang, the member that did not fit.
	GangMember *GangMember `json:"gangMember,omitempty"`
}

// NodeGroup counts the nodes one filter excluded (Filter: selector, taint
// or cordoned, with Detail the term or taint) or that lack one resource
// (ShortOf, by at least Short; WhenEmpty: even when empty).
type NodeGroup struct {
	Nodes     int    `json:"nodes"`
	Filter    string `json:"filter,omitempty"`
	Detail    string `json:"detail,omitempty"`
	ShortOf   string `json:"shortOf,omitempty"`
	Short     string `json:"short,omitempty"`
	WhenEmpty *bool  `json:"whenEmpty,omitempty"`
}

// GangMember is the gang member that did not fit, after PlacedBefore of
// its Members were placed.
type GangMember struct {
	Job          string `json:"job"`
	PlacedBefore int    `json:"placedBefore"`
	Members      int    `json:"members,omitempty"`
}

// FluxBreakdown is flux-accounting's multi-factor priority of a job, as
// `flotilla priority` prints it: each term's factor, weight and product,
// and the priority they give.
type FluxBreakdown struct {
	User          string   `json:"user"`
	Bank          string   `json:"bank"`
	Queue         string   `json:"queue"`
	FairShare     FluxTerm `json:"fairShare"`
	BankTerm      FluxTerm `json:"bankTerm"`
	QueueTerm     FluxTerm `json:"queueTerm"`
	Urgency       FluxTerm `json:"urgency"`
	QueuePriority int64    `json:"queuePriority"`
	// Override is "", "hold" or "expedite".
	Override string `json:"override,omitempty"`
	Priority uint32 `json:"priority"`
}

// FluxTerm is one term of a flux priority.
type FluxTerm struct {
	Factor  float64 `json:"factor"`
	Weight  int64   `json:"weight"`
	Product float64 `json:"product"`
}

// JobExplainOf is the wire form of a job's detail and, for a queued job,
// the last cycle's reason for it (st.Why).
func JobExplainOf(d server.JobDetail, st server.JobStatus, schema *flotilla.ResourceSchema) *JobExplain {
	e := &JobExplain{Priority: JobPriority{Class: d.Class, ClassPriority: d.ClassPriority, Priority: d.Priority}}
	if p := d.Position; p != nil {
		e.Place = &QueuePlace{Position: p.Ahead + 1, Queued: p.Queued, Ahead: p.Ahead, AheadRequests: map[string]string{}, Partial: p.Partial,
			GangIncomplete: p.GangIncomplete}
		if p.AheadRequests != nil {
			e.Place.AheadRequests = schema.Format(p.AheadRequests)
		}
	}
	if q := d.Queue; q != nil {
		e.QueueShare = &QueueShare{Share: q.Share, FairShare: q.FairShare, AdjustedFairShare: q.AdjustedFairShare,
			Demand: q.Demand, Running: q.Running, Queued: q.Queued}
	}
	if st.Why != nil {
		e.Unscheduled = UnscheduledOf(*st.Why, schema)
	}
	if f := d.Flux; f != nil {
		c := f.Calculation
		term := func(t priority.Term) FluxTerm {
			return FluxTerm{Factor: t.Factor, Weight: t.Weight, Product: t.Product}
		}
		e.Flux = &FluxBreakdown{User: f.User, Bank: f.Bank, Queue: f.Queue,
			FairShare: term(c.FairShare), BankTerm: term(c.Bank), QueueTerm: term(c.Queue), Urgency: term(c.Urgency),
			QueuePriority: c.QueuePriority, Override: c.Override.String(), Priority: c.Priority}
	}
	return e
}

// UnscheduledOf is the wire form of a Reason, each shortfall a quantity
// of its resource.
func UnscheduledOf(r scheduler.Reason, schema *flotilla.ResourceSchema) *Unscheduled {
	u := &Unscheduled{Code: r.Code.String(), Message: r.Message}
	s := r.Search
	if s == nil {
		return u
	}
	u.SameAs, u.SameAsQueue, u.NodesSearched = s.SameAs, s.SameAsQueue, s.Nodes
	for _, f := range s.Filtered {
		u.NodeGroups = append(u.NodeGroups, NodeGroup{Nodes: f.Nodes, Filter: string(f.Filter), Detail: f.Detail})
	}
	for _, sf := range s.Shortfall {
		amount := strconv.FormatInt(sf.Amount, 10)
		if i, ok := schema.Index(sf.Resource); ok {
			amount = schema.Quantity(i, sf.Amount)
		}
		we := sf.WhenEmpty
		u.NodeGroups = append(u.NodeGroups, NodeGroup{Nodes: sf.Nodes, ShortOf: sf.Resource, Short: amount, WhenEmpty: &we})
	}
	if s.Member != "" {
		u.GangMember = &GangMember{Job: s.Member, PlacedBefore: s.PlacedBefore}
	}
	return u
}

// Breakdown is the priority package's form of a flux breakdown, for its
// tables (priority.WriteJobsTable).
func (f *FluxBreakdown) Breakdown(job string) priority.Breakdown {
	term := func(t FluxTerm) priority.Term {
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
