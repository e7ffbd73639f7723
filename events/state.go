package events

import (
	"errors"
	"fmt"
	"slices"
	"time"
)

// State is where a job stands. The zero State means the job does not exist
// yet (before its submitted event).
type State uint8

// The states of docs/job-lifecycle.md's life cycle.
const (
	None State = iota
	Queued
	LeasedState
	RunningState
	SucceededState
	FailedState
	CancelledState
	PreemptedState
)

var stateNames = [...]string{
	None:           "none",
	Queued:         "queued",
	LeasedState:    "leased",
	RunningState:   "running",
	SucceededState: "succeeded",
	FailedState:    "failed",
	CancelledState: "cancelled",
	PreemptedState: "preempted",
}

// String is the state's name as docs/job-lifecycle.md writes it.
func (s State) String() string {
	if int(s) < len(stateNames) {
		return stateNames[s]
	}
	return fmt.Sprintf("state(%d)", uint8(s))
}

// MarshalText encodes the state's name.
func (s State) MarshalText() ([]byte, error) {
	if int(s) >= len(stateNames) {
		return nil, fmt.Errorf("events: invalid state %d", uint8(s))
	}
	return []byte(stateNames[s]), nil
}

// UnmarshalText decodes a state's name.
func (s *State) UnmarshalText(b []byte) error {
	for i, n := range stateNames {
		if n == string(b) {
			*s = State(i)
			return nil
		}
	}
	return fmt.Errorf("events: unknown state %q", b)
}

// Terminal reports whether no event may follow: succeeded, failed,
// cancelled, preempted.
func (s State) Terminal() bool { return s >= SucceededState && s <= PreemptedState }

// Live reports whether the job holds a lease: leased or running.
func (s State) Live() bool { return s == LeasedState || s == RunningState }

// Job is one job's state as its events left it. It is a value: Transition
// returns a new Job and never modifies the one it was given (FailedClusters,
// Retries and AvoidNodes are copied before they change).
type Job struct {
	ID, Queue, JobSet string
	State             State
	// Attempts counts the job's leases so far.
	Attempts int
	// CancelRequested is set when a leased or running job was asked to
	// stop; its next event is cancelled (or another ending).
	CancelRequested bool
	// Cluster and Node are the live lease's; empty when the job holds none.
	Cluster, Node string
	// FailedClusters are the clusters where a lease expired or was
	// returned, first failure first, each once.
	FailedClusters []string
	// Submitted, Leased and Finished are the times of the submitted event,
	// the latest leased event and the terminal event (zero when none).
	Submitted, Leased, Finished time.Time
	// Reason and ExitCode are the last event's that carried them.
	Reason   string
	ExitCode int
	// Reprioritized is set once a reprioritized event changed the job's
	// priority; Priority is then the priority it gave, which replaces the
	// one submitted (the spec's, which never changes).
	Reprioritized bool
	Priority      uint32
	// Retries counts, per rule of the queue's retry policy, the failed
	// runs it let the job retry: Retries[i] for rule i+1 (run-failed
	// events, and lease-expired, lease-returned and preempted events that
	// requeue and name a rule: a gang member's preempted event names the
	// rule that retried the gang, so that a gang's retries count once per
	// gang failure on every member). Rule is the rule the last event naming one named
	// (0 when none has).
	Retries []int
	Rule    int
	// AvoidNodes are the nodes, NodeName(cluster, node), where a run
	// failed under a rule that says avoidSameNode (Event.AvoidNode),
	// first failure first, each once.
	AvoidNodes []string
}

// NodeName names a cluster's node across clusters: "cluster/node" (a
// cluster's name has no '/'), as the service's snapshots name nodes.
func NodeName(cluster, node string) string { return cluster + "/" + node }

// ErrRefused classifies every refused transition: errors.Is(err,
// ErrRefused) holds for a *TransitionError.
var ErrRefused = errors.New("transition refused")

// TransitionError says why an event was refused for a job.
type TransitionError struct {
	Job   string
	From  State
	Event Type
	Why   string
}

func (e *TransitionError) Error() string {
	return fmt.Sprintf("job %q: %s in state %s refused: %s", e.Job, e.Event, e.From, e.Why)
}

// Unwrap returns ErrRefused.
func (e *TransitionError) Unwrap() error { return ErrRefused }

// Transition is the state machine: the job after e, or a *TransitionError
// and j unchanged. j is the job's state before e (the zero Job for a
// submitted event); e must be about j (same job, queue and job set).
func Transition(j Job, e Event) (Job, error) {
	refuse := func(format string, args ...any) (Job, error) {
		return j, &TransitionError{Job: e.Job, From: j.State, Event: e.Type, Why: fmt.Sprintf(format, args...)}
	}
	if e.Job == "" {
		return refuse("the event names no job")
	}
	if e.Attempt < 0 {
		return refuse("attempt %d is negative", e.Attempt)
	}
	if j.State != None && (e.Job != j.ID || e.Queue != j.Queue || e.JobSet != j.JobSet) {
		return refuse("the event is about %s/%s/%s", e.Queue, e.JobSet, e.Job)
	}
	if j.State.Live() && e.Type != Leased && e.Type != Submitted {
		// Events about a lease must be about the live one.
		if e.Attempt != 0 && e.Attempt != j.Attempts {
			return refuse("attempt %d is not the live lease (attempt %d)", e.Attempt, j.Attempts)
		}
		if e.Cluster != "" && e.Cluster != j.Cluster {
			return refuse("cluster %q does not hold the lease (%q does)", e.Cluster, j.Cluster)
		}
		if e.Node != "" && e.Node != j.Node {
			return refuse("node %q does not hold the lease (%q does)", e.Node, j.Node)
		}
	}
	if e.Priority != 0 && e.Type != Reprioritized {
		return refuse("only a reprioritized event carries a priority")
	}
	if e.Requeued && e.Type != Preempted && e.Type != LeaseExpired && e.Type != LeaseReturned {
		return refuse("only preempted, lease-expired and lease-returned events requeue")
	}
	if e.Rule < 0 || e.Rule > MaxRules {
		return refuse("rule %d is outside 0 to %d", e.Rule, MaxRules)
	}
	if e.Rule != 0 && e.Type != RunFailed && e.Type != Failed && e.Type != LeaseExpired && e.Type != LeaseReturned &&
		(e.Type != Preempted || !e.Requeued) {
		return refuse("only failed, run-failed, lease-expired, lease-returned and requeuing preempted events name a retry rule")
	}
	requeues := e.Type == RunFailed || e.Requeued && (e.Type == LeaseExpired || e.Type == LeaseReturned || e.Type == Preempted)
	if e.AvoidNode && (!requeues || e.Rule == 0) {
		return refuse("only an event that retries the job under a rule avoids its node")
	}
	n := j
	switch e.Type {
	case Submitted:
		if j.State != None {
			return refuse("the job exists already")
		}
		if e.Queue == "" || e.JobSet == "" {
			return refuse("a job needs a queue and a job set")
		}
		n = Job{ID: e.Job, Queue: e.Queue, JobSet: e.JobSet, State: Queued, Submitted: e.Time}
	case Leased:
		if j.State != Queued {
			return refuse("only a queued job is leased")
		}
		if e.Cluster == "" || e.Node == "" {
			return refuse("a lease names a cluster and a node")
		}
		if e.Attempt != j.Attempts+1 {
			return refuse("attempt %d, want %d", e.Attempt, j.Attempts+1)
		}
		n.State, n.Attempts, n.Cluster, n.Node, n.Leased = LeasedState, e.Attempt, e.Cluster, e.Node, e.Time
	case Running:
		if j.State != LeasedState {
			return refuse("only a leased job starts running")
		}
		n.State = RunningState
	case Succeeded:
		if j.State != RunningState {
			return refuse("only a running job succeeds")
		}
		if e.ExitCode != 0 {
			return refuse("exit code %d is not success", e.ExitCode)
		}
		n.State = SucceededState
	case Failed:
		if !j.State.Live() {
			return refuse("only a leased or running job fails")
		}
		n.State = FailedState
	case LeaseExpired, LeaseReturned:
		if !j.State.Live() {
			return refuse("the job holds no lease")
		}
		if j.CancelRequested && e.Requeued {
			return refuse("a job whose cancellation was requested is not queued again")
		}
		if !slices.Contains(j.FailedClusters, j.Cluster) {
			n.FailedClusters = append(slices.Clip(j.FailedClusters), j.Cluster)
		}
		n.State = FailedState
		if e.Requeued {
			n.State = Queued
		}
	case RunFailed:
		if !j.State.Live() {
			return refuse("only a leased or running job's run fails")
		}
		if j.CancelRequested {
			return refuse("a job whose cancellation was requested is not queued again")
		}
		if e.Rule == 0 {
			return refuse("a run-failed event names the rule that retries the job")
		}
		n.State = Queued
	case Preempted:
		if !j.State.Live() {
			return refuse("only a leased or running job is preempted")
		}
		if j.CancelRequested && e.Requeued {
			return refuse("a job whose cancellation was requested is not queued again")
		}
		n.State = PreemptedState
		if e.Requeued {
			n.State = Queued
		}
	case Cancelled:
		switch {
		case j.State == Queued:
		case j.State.Live() && j.CancelRequested:
		case j.State.Live():
			return refuse("a leased or running job is cancelled after cancel-requested")
		default:
			return refuse("only a queued, leased or running job is cancelled")
		}
		n.State = CancelledState
	case CancelRequested:
		if !j.State.Live() {
			return refuse("only a leased or running job is asked to stop")
		}
		if j.CancelRequested {
			return refuse("cancellation was requested already")
		}
		n.CancelRequested = true
	case Reprioritized:
		if j.State != Queued {
			return refuse("only a queued job is reprioritized")
		}
		n.Reprioritized, n.Priority = true, e.Priority
	default:
		return refuse("unknown event type")
	}
	if e.Rule != 0 {
		n.Rule = e.Rule
		if requeues {
			n.Retries = slices.Clone(j.Retries)
			if len(n.Retries) < e.Rule {
				n.Retries = append(n.Retries, make([]int, e.Rule-len(n.Retries))...)
			}
			n.Retries[e.Rule-1]++
		}
	}
	if e.AvoidNode {
		if name := NodeName(j.Cluster, j.Node); !slices.Contains(j.AvoidNodes, name) {
			n.AvoidNodes = append(slices.Clip(j.AvoidNodes), name)
		}
	}
	if !n.State.Live() {
		n.Cluster, n.Node, n.CancelRequested = "", "", false
	}
	if n.State.Terminal() {
		n.Finished = e.Time
	}
	if e.Reason != "" {
		n.Reason = e.Reason
	}
	if e.Type.HasExitCode() {
		n.ExitCode = e.ExitCode
	}
	return n, nil
}
