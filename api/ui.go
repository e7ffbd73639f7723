package api

import "time"

// The read models of the web UI's pages (GET /v1/overview, /v1/cycles,
// /v1/queues/{queue}/jobsets, /v1/queues/{queue}/jobsets/{jobSet}/jobs,
// /v1/clusters/{cluster}/nodes). Every list of them is a page: at most
// the limit asked for, with the cursor of the next page in Next (absent
// on the last).

// Overview is the queue tree's standing: the queues a principal may read
// (a page of them, by name), every group, and the last cycle.
type Overview struct {
	// Time is the service's clock when the overview was read.
	Time time.Time `json:"time"`
	// Cycles counts the cycles decided since the process started.
	Cycles uint64 `json:"cycles"`
	// LastCycle is the last cycle's summary; absent before the first.
	LastCycle *CycleSummary   `json:"lastCycle,omitempty"`
	Queues    []QueueOverview `json:"queues"`
	Groups    []GroupOverview `json:"groups"`
	// Next is the cursor of the next page of queues (?after=).
	Next string `json:"next,omitempty"`
}

// QueueOverview is one queue of the overview: its place in the tree, its
// counts and shares now, and its shares over the last hour.
type QueueOverview struct {
	Name           string      `json:"name"`
	Parent         string      `json:"parent,omitempty"`
	PriorityFactor float64     `json:"priorityFactor,omitempty"`
	Status         QueueStatus `json:"status"`
	// History holds a sample of the queue's shares per minute of the
	// last hour, oldest first: with several pools, the first pool's.
	History []SharePoint `json:"history"`
	// PoolHistory is the history in each pool of Status.Pools, in its
	// order; absent with one pool.
	PoolHistory []PoolHistory `json:"poolHistory,omitempty"`
}

// GroupOverview is one group of the overview.
type GroupOverview struct {
	Name    string       `json:"name"`
	Parent  string       `json:"parent,omitempty"`
	Status  GroupStatus  `json:"status"`
	History []SharePoint `json:"history"`
	// PoolHistory is as QueueOverview's, for Status.Pools.
	PoolHistory []PoolHistory `json:"poolHistory,omitempty"`
}

// PoolHistory is a queue's or group's shares over the last hour in one
// pool's cycles, a sample per minute, oldest first.
type PoolHistory struct {
	Pool    string       `json:"pool"`
	History []SharePoint `json:"history"`
}

// SharePoint is a queue's or group's shares at one cycle.
type SharePoint struct {
	Time              time.Time `json:"time"`
	Share             float64   `json:"share"`
	FairShare         float64   `json:"fairShare"`
	AdjustedFairShare float64   `json:"adjustedFairShare"`
}

// CycleSummary is one scheduling cycle as the UI shows it.
type CycleSummary struct {
	// Seq numbers the cycles of the process, 1 for the first.
	Seq  uint64    `json:"seq"`
	Time time.Time `json:"time"`
	// DurationMs is how long the cycle took, start to written decision,
	// in milliseconds.
	DurationMs float64 `json:"durationMs"`
	Leased     int     `json:"leased"`
	Preempted  int     `json:"preempted"`
	Expired    int     `json:"expired"`
	// Queues are the per-queue counts of the cycle's queues, by name
	// (and pool, with several pools).
	Queues []CycleQueue `json:"queues"`
}

// CycleQueue is one queue's part of a cycle.
type CycleQueue struct {
	Name string `json:"name"`
	// Pool is the pool whose decision these counts are, when the cycle
	// decided for several pools (a queue has a line per pool then).
	Pool      string `json:"pool,omitempty"`
	Leased    int    `json:"leased"`
	Preempted int    `json:"preempted"`
	Queued    int    `json:"queued"`
	Running   int    `json:"running"`
}

// CyclesPage is the last cycles, newest first.
type CyclesPage struct {
	Cycles []CycleSummary `json:"cycles"`
}

// JobSetSummary is one job set of a queue with its live jobs' counts.
type JobSetSummary struct {
	Name    string `json:"name"`
	Queued  int    `json:"queued"`
	Leased  int    `json:"leased"`
	Running int    `json:"running"`
	// Ended: every job of the set has ended (a queue's listing only; the
	// counts are then 0).
	Ended bool `json:"ended,omitempty"`
}

// JobSetsPage is a page of a queue's job sets, by name: those with live
// jobs, and those whose jobs all ended (marked Ended) when the backend
// lists its job sets.
type JobSetsPage struct {
	Queue    string          `json:"queue"`
	Cordoned bool            `json:"cordoned"`
	JobSets  []JobSetSummary `json:"jobSets"`
	Next     string          `json:"next,omitempty"`
}

// JobRow is one job of a job set's page.
type JobRow struct {
	ID        string    `json:"id"`
	State     string    `json:"state"`
	Priority  uint32    `json:"priority"`
	Submitted time.Time `json:"submitted"`
	Attempts  int       `json:"attempts"`
	Cluster   string    `json:"cluster,omitempty"`
	Node      string    `json:"node,omitempty"`
	// CancelRequested: the job was asked to stop.
	CancelRequested bool `json:"cancelRequested,omitempty"`
	// Finished is when an ended job ended (its terminal event's time);
	// absent on a live job's row.
	Finished *time.Time `json:"finished,omitempty"`
}

// EndedCounts are a job set's ended jobs per terminal state.
type EndedCounts struct {
	Succeeded int `json:"succeeded"`
	Failed    int `json:"failed"`
	Cancelled int `json:"cancelled"`
	Preempted int `json:"preempted"`
}

// JobsPage is a page of a job set's live jobs, or of its ended jobs in
// one state (?state=succeeded, failed, cancelled or preempted).
type JobsPage struct {
	Queue  string `json:"queue"`
	JobSet string `json:"jobSet"`
	// Counts are the job set's live jobs now.
	Counts JobSetSummary `json:"counts"`
	// EndedCounts are the job set's ended jobs per terminal state, when
	// the backend counts them (absent otherwise).
	EndedCounts *EndedCounts `json:"endedCounts,omitempty"`
	Jobs        []JobRow     `json:"jobs"`
	// Next is the cursor of the next page (?cursor=); absent on the last.
	Next string `json:"next,omitempty"`
	// Partial: the page stopped at the server's bound on the jobs one
	// request may look at, with fewer than the limit; Next goes on.
	Partial bool `json:"partial,omitempty"`
	// LastSeq is the job set's last event's sequence number now (0 when
	// it has none): a page follows new events with
	// GET …/events?watch=true&from=LastSeq+1.
	LastSeq uint64 `json:"lastSeq"`
}

// NodeRow is one node of a cluster with its room.
type NodeRow struct {
	Name          string            `json:"name"`
	Unschedulable bool              `json:"unschedulable,omitempty"`
	Total         map[string]string `json:"total"`
	Allocated     map[string]string `json:"allocated"`
	Free          map[string]string `json:"free"`
	Jobs          int               `json:"jobs"`
}

// NodesPage is a page of a cluster's nodes, by name.
type NodesPage struct {
	Cluster  string     `json:"cluster"`
	Reported *time.Time `json:"reported,omitempty"`
	Alive    bool       `json:"alive"`
	Cordoned bool       `json:"cordoned"`
	Nodes    []NodeRow  `json:"nodes"`
	Next     string     `json:"next,omitempty"`
}
