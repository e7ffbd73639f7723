package api

import (
	"time"

	"github.com/flotilla-sched/flotilla"
)

// ReprioritizeRequest gives queued jobs a new per-job priority: JobIDs,
// or every job of Queue and JobSet (not both). Priority is required
// (lower runs first within a class, as at submit).
type ReprioritizeRequest struct {
	JobIDs   []string `json:"jobIds,omitempty"`
	Queue    string   `json:"queue,omitempty"`
	JobSet   string   `json:"jobSet,omitempty"`
	Priority *uint32  `json:"priority"`
}

// Validate checks that the request gives a priority; the service checks
// how it names jobs.
func (r *ReprioritizeRequest) Validate() error {
	if r.Priority == nil {
		return flotilla.Errorf("priority", "", flotilla.ErrRequired, "the new priority, a number ≥ 0")
	}
	return nil
}

// ReprioritizeResponse says what a reprioritization did
// (server.ReprioritizeResult): the queued jobs that got the priority, the
// leased or running ones left alone, those that had ended.
type ReprioritizeResponse struct {
	Reprioritized []string `json:"reprioritized"`
	Live          []string `json:"live"`
	Finished      []string `json:"finished"`
}

// PreemptRequest names the leased or running jobs to preempt: JobIDs, or
// the jobs of Queue (of JobSet only when set), or those leased on Cluster
// (on Node only when set); one way. Reason is the operator's, kept on
// the events.
type PreemptRequest struct {
	JobIDs  []string `json:"jobIds,omitempty"`
	Queue   string   `json:"queue,omitempty"`
	JobSet  string   `json:"jobSet,omitempty"`
	Cluster string   `json:"cluster,omitempty"`
	Node    string   `json:"node,omitempty"`
	Reason  string   `json:"reason,omitempty"`
}

// PreemptResponse says what a preemption did (server.PreemptResult): the
// jobs preempted (gang mates included), the queued ones named (nothing to
// preempt), those that had ended.
type PreemptResponse struct {
	Preempted []string `json:"preempted"`
	Queued    []string `json:"queued"`
	Finished  []string `json:"finished"`
}

// Cluster is one executor's cluster as the service knows it (GET
// /v1/clusters).
type Cluster struct {
	Name string `json:"name"`
	// Nodes counts the nodes last reported.
	Nodes int `json:"nodes"`
	// Reported is when its executor last reported to the serving process
	// (absent when it has not since the process started); Alive whether
	// that was within the lease timeout (the cluster takes part in cycles).
	Reported *time.Time `json:"reported,omitempty"`
	Alive    bool       `json:"alive"`
	// Cordoned: no new leases go to it.
	Cordoned bool `json:"cordoned"`
	// Pool is the cluster's pool.
	Pool    string `json:"pool"`
	Leased  int    `json:"leased"`
	Running int    `json:"running"`
}
