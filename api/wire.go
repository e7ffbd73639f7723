package api

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/events"
	"github.com/flotilla-sched/flotilla/textform"
)

// The types below are the JSON bodies of the HTTP API (openapi.json). Their
// JSON names are a public interface. Durations are Go duration strings,
// quantities Kubernetes quantity strings, times RFC 3339 in UTC.

// Queue is a queue definition, and in lists its counts and standing.
type Queue struct {
	Name string `json:"name"`
	// PriorityFactor scales the queue's claim (weight 1/factor); absent or
	// 0 means 1.
	PriorityFactor float64 `json:"priorityFactor,omitempty"`
	// LimitsByPriorityClass caps, per class and resource, the fraction of
	// the cluster the queue may hold at that class.
	LimitsByPriorityClass map[string]map[string]float64 `json:"limitsByPriorityClass,omitempty"`
	// Parent names the group the queue hangs from in the queue tree;
	// absent is the root.
	Parent string `json:"parent,omitempty"`
	// Guaranteed, Limit and LendingLimit are the queue's quotas in the
	// tree, resource name to quantity; a resource left out is not given
	// (no guarantee, no limit, all of the guarantee lendable).
	Guaranteed   map[string]string `json:"guaranteed,omitempty"`
	Limit        map[string]string `json:"limit,omitempty"`
	LendingLimit map[string]string `json:"lendingLimit,omitempty"`
	// RetryPolicy is the queue's retry policy (docs/operator-commands.md's form); absent
	// is none. A write replaces the queue's policy with it (absent
	// removes it).
	RetryPolicy *RetryPolicy `json:"retryPolicy,omitempty"`
	// Status is filled in by the server on reads and ignored on writes.
	Status *QueueStatus `json:"status,omitempty"`
}

// RetryPolicy is a queue's retry policy, docs/operator-commands.md's `-retry-policy`
// file: {"maxAttempts": 5, "rules": [{"onExitCodes": [137, 143],
// "onReasons": ["oom"], "retryLimit": 3, "avoidSameNode": true}]}.
type RetryPolicy = events.RetryPolicy

// RetryRule is one rule of a RetryPolicy.
type RetryRule = events.RetryRule

// QueueStatus is a queue's jobs counted and its shares in the last cycle.
type QueueStatus struct {
	Queued int `json:"queued"`
	// NeverFit counts those of the queued jobs that no node the service
	// knows can run; their requests do not count in the queue's demand.
	NeverFit          int     `json:"neverFit,omitempty"`
	Leased            int     `json:"leased"`
	Running           int     `json:"running"`
	Share             float64 `json:"share"`
	FairShare         float64 `json:"fairShare"`
	AdjustedFairShare float64 `json:"adjustedFairShare"`
	// Usage is the queue's decayed average share (the scheduler's usage
	// memory; 0 when it is off).
	Usage float64 `json:"usage"`
	// Cordoned: an operator cordoned the queue; its queued jobs are not
	// leased until it is uncordoned.
	Cordoned bool `json:"cordoned,omitempty"`
	// Pools are the queue's standing in each pool's last cycle, in pool
	// name order, when the service knows more than one pool (the fields
	// above are then the first pool's where the queue has jobs, the
	// default pool first).
	Pools []QueueShare `json:"pools,omitempty"`
}

// Definition is the queue definition the server stores, its quotas
// parsed against schema. Every problem is a *flotilla.FieldError named
// `queue "NAME".guaranteed.cpu` and the like, all joined.
func (q *Queue) Definition(schema *flotilla.ResourceSchema) (flotilla.Queue, error) {
	g, l, ll, err := parseQuotas(schema, fmt.Sprintf("queue %q", q.Name), q.Guaranteed, q.Limit, q.LendingLimit)
	return flotilla.Queue{Name: q.Name, PriorityFactor: q.PriorityFactor, LimitsByPriorityClass: q.LimitsByPriorityClass,
		Parent: q.Parent, Guaranteed: g, Limit: l, LendingLimit: ll}, err
}

// SubmitResponse answers a submission: the job ids in file order, and
// warnings about its templates.
type SubmitResponse struct {
	JobIDs []string `json:"jobIds"`
	// Warnings name each template whose jobs no node the service knows
	// can run (docs/submit-file.md): they are stored all the same, and wait
	// for a large enough node. Absent when there are none.
	Warnings []SubmitWarning `json:"warnings,omitempty"`
}

// SubmitWarning is a warning about one template of a submit file.
type SubmitWarning struct {
	// Field is the template, jobs[i].
	Field string `json:"field"`
	// Resource is the resource no node of the jobs' pools has enough of
	// (or the one the node named lacks, when some node has enough of
	// each resource but none of all); absent when no node of the jobs'
	// pools is known.
	Resource string `json:"resource,omitempty"`
	// Node is the node (cluster/node) with the most of Resource among the
	// jobs' pools.
	Node string `json:"node,omitempty"`
	// Message is the whole warning, starting with Field.
	Message string `json:"message"`
}

// CancelRequest names the jobs to cancel: JobIDs, or every job of Queue
// (of JobSet only when it is set), not both.
type CancelRequest struct {
	JobIDs []string `json:"jobIds,omitempty"`
	Queue  string   `json:"queue,omitempty"`
	JobSet string   `json:"jobSet,omitempty"`
}

// Validate checks that the request names jobs one way.
func (r *CancelRequest) Validate() error {
	switch {
	case len(r.JobIDs) > 0 && (r.Queue != "" || r.JobSet != ""):
		return flotilla.Errorf("jobIds", fmt.Sprint(r.JobIDs), flotilla.ErrInconsistent, "name jobs by id or by queue (and job set), not both")
	case len(r.JobIDs) == 0 && r.Queue == "":
		return flotilla.Errorf("queue", "", flotilla.ErrRequired, "without jobIds, a queue (and a job set) names the jobs")
	}
	return nil
}

// CancelResponse says what a cancellation did (server.CancelResult).
type CancelResponse struct {
	Cancelled []string `json:"cancelled"`
	Requested []string `json:"requested"`
	Finished  []string `json:"finished"`
}

// JobStatus is docs/http-api.md's `status -o json` object for one job.
type JobStatus struct {
	Job      string `json:"job"`
	Queue    string `json:"queue"`
	JobSet   string `json:"jobSet"`
	State    string `json:"state"`
	Attempts int    `json:"attempts"`
	// Cluster and Node are the live lease's; empty (never omitted: a
	// script reads every field docs/http-api.md names) when there is none.
	Cluster string `json:"cluster"`
	Node    string `json:"node"`
	// Reason: for a queued job, why it is not running yet (quantified);
	// otherwise the reason of its last event that gave one.
	Reason          string `json:"reason"`
	CancelRequested bool   `json:"cancelRequested,omitempty"`
	// Rule is the retry policy's rule (1 for the first) that last
	// retried or failed the job, absent when none did; Retries counts the
	// failed runs each rule retried (Retries[0] for rule 1).
	Rule    int   `json:"rule,omitempty"`
	Retries []int `json:"retries,omitempty"`
	// Explain is the long form, given when asked for (explain=true).
	Explain *JobExplain `json:"explain,omitempty"`
}

// RetryText says which retry rule last retried or failed the job and how
// often each rule retried it ("rule 1, retries 2" or "rule 2, retries
// 1+3"); "" when no rule did.
func (s *JobStatus) RetryText() string {
	if s.Rule == 0 {
		return ""
	}
	var counts []string
	for _, n := range s.Retries {
		counts = append(counts, strconv.Itoa(n))
	}
	if len(counts) == 0 {
		counts = []string{"0"}
	}
	return fmt.Sprintf("rule %d, retries %s", s.Rule, strings.Join(counts, "+"))
}

// StatusResponse lists job statuses in the order asked.
type StatusResponse struct {
	Jobs []JobStatus `json:"jobs"`
}

// Node is one node of an executor's cluster: docs/scenarios.md's node without
// count and cluster.
type Node struct {
	Name          string            `json:"name"`
	Resources     map[string]string `json:"resources"`
	Labels        map[string]string `json:"labels,omitempty"`
	Unschedulable bool              `json:"unschedulable,omitempty"`
	Taints        []Taint           `json:"taints,omitempty"`
}

// Taint repels jobs that do not tolerate it (docs/scenarios.md's taint).
type Taint = textform.Taint

// JobReport is one job an executor holds (server.JobReport).
type JobReport struct {
	Job      string `json:"job"`
	Attempt  int    `json:"attempt"`
	Phase    string `json:"phase"`
	ExitCode int    `json:"exitCode,omitempty"`
	Reason   string `json:"reason,omitempty"`
	// FailureReason classifies a failed job: one of
	// ReportedFailureReasons (oom, evicted, deadline), absent for none.
	FailureReason string `json:"failureReason,omitempty"`
}

// Report is an executor's report (server.Report); the cluster is the
// route's. Nodes absent (null) keeps the nodes last reported.
type Report struct {
	Nodes []Node      `json:"nodes"`
	Jobs  []JobReport `json:"jobs,omitempty"`
	// Pool is the cluster's pool (`executor -pool`). With nodes, absent
	// is the default pool; without, absent keeps the cluster's pool. A
	// report naming another pool moves the cluster.
	Pool string `json:"pool,omitempty"`
}

// Lease hands a job to an executor.
type Lease struct {
	Job           string            `json:"job"`
	Queue         string            `json:"queue"`
	JobSet        string            `json:"jobSet"`
	Attempt       int               `json:"attempt"`
	Node          string            `json:"node"`
	PriorityClass string            `json:"priorityClass,omitempty"`
	Requests      map[string]string `json:"requests"`
	// TerminationGracePeriod, ActiveDeadline and Runtime are durations.
	TerminationGracePeriod string `json:"terminationGracePeriod"`
	ActiveDeadline         string `json:"activeDeadline,omitempty"`
	Runtime                string `json:"runtime,omitempty"`
	ExitCode               int    `json:"exitCode,omitempty"`
}

// Kill tells an executor to stop a job.
type Kill struct {
	Job         string `json:"job"`
	Attempt     int    `json:"attempt"`
	Reason      string `json:"reason"`
	GracePeriod string `json:"gracePeriod"`
}

// ReportReply is the answer to a report.
type ReportReply struct {
	Leases []Lease `json:"leases"`
	Kill   []Kill  `json:"kill"`
	// Cordoned: an operator cordoned the cluster; it gets no new lease
	// until it is uncordoned (its running jobs go on).
	Cordoned bool `json:"cordoned,omitempty"`
}

// CycleReport is what a cycle did, for operators.
type CycleReport struct {
	Time             time.Time `json:"time"`
	Expired          int       `json:"expired"`
	DeadlineExceeded int       `json:"deadlineExceeded"`
	Leased           int       `json:"leased"`
	Preempted        int       `json:"preempted"`
}

// Event is one event in docs/job-lifecycle.md's JSON form (events.Event marshals
// itself so).
type Event = events.Event

// Problem is one problem of a refused request.
type Problem struct {
	Field string `json:"field,omitempty"`
	Value string `json:"value,omitempty"`
	// Error is the problem's class and detail.
	Error string `json:"error"`
}

// Error is the body of every refusal (4xx and 5xx).
type Error struct {
	// Error is the whole message.
	Error string `json:"error"`
	// Problems lists each problem of bad input.
	Problems []Problem `json:"problems,omitempty"`
}

// ErrorOf is the wire form of an error: each problem of a
// *flotilla.FieldError join named by field and value.
func ErrorOf(err error) Error {
	out := Error{Error: err.Error()}
	for _, p := range flotilla.Problems(err) {
		var fe *flotilla.FieldError
		if errors.As(p, &fe) {
			out.Problems = append(out.Problems, Problem{Field: fe.Field, Value: fe.Value, Error: fe.Err.Error()})
		} else {
			out.Problems = append(out.Problems, Problem{Error: p.Error()})
		}
	}
	return out
}
