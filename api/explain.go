package api

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
	// Pool is the pool whose cycle this is (absent where the service
	// knows one pool).
	Pool string `json:"pool,omitempty"`
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
