package events

import (
	"encoding/json"
	"fmt"
	"time"
)

// Type is the kind of an event. The zero Type is invalid.
type Type uint8

// The event types of docs/job-lifecycle.md's life cycle.
const (
	Submitted Type = iota + 1
	Leased
	Running
	Succeeded
	Failed
	Cancelled
	Preempted
	LeaseExpired
	LeaseReturned
	CancelRequested
	// Reprioritized changes a queued job's priority (Event.Priority).
	Reprioritized
	// RunFailed ends a failed run that the queue's retry policy lets the
	// job retry: the job is queued again (Event.Rule names the rule).
	RunFailed
)

// lastType is the last declared type.
const lastType = RunFailed

// MaxRules bounds a retry policy's rules, and so Event.Rule.
const MaxRules = 32

var typeNames = [...]string{
	Submitted:       "submitted",
	Leased:          "leased",
	Running:         "running",
	Succeeded:       "succeeded",
	Failed:          "failed",
	Cancelled:       "cancelled",
	Preempted:       "preempted",
	LeaseExpired:    "lease-expired",
	LeaseReturned:   "lease-returned",
	CancelRequested: "cancel-requested",
	Reprioritized:   "reprioritized",
	RunFailed:       "run-failed",
}

// Types lists every valid Type in declaration order.
func Types() []Type {
	ts := make([]Type, 0, len(typeNames)-1)
	for t := Submitted; t <= lastType; t++ {
		ts = append(ts, t)
	}
	return ts
}

// HasExitCode reports whether events of type t carry an exit code:
// succeeded, failed and run-failed.
func (t Type) HasExitCode() bool { return t == Succeeded || t == Failed || t == RunFailed }

// Valid reports whether t is one of the declared types.
func (t Type) Valid() bool { return t >= Submitted && t <= lastType }

// String is the type's wire name ("lease-expired"), or "type(N)" for an
// invalid value.
func (t Type) String() string {
	if t.Valid() {
		return typeNames[t]
	}
	return fmt.Sprintf("type(%d)", uint8(t))
}

// ParseType returns the Type with this wire name.
func ParseType(s string) (Type, error) {
	for t := Submitted; t <= lastType; t++ {
		if typeNames[t] == s {
			return t, nil
		}
	}
	return 0, fmt.Errorf("events: unknown event type %q", s)
}

// MarshalText encodes the wire name; an invalid Type is an error.
func (t Type) MarshalText() ([]byte, error) {
	if !t.Valid() {
		return nil, fmt.Errorf("events: invalid event type %d", uint8(t))
	}
	return []byte(typeNames[t]), nil
}

// UnmarshalText decodes a wire name.
func (t *Type) UnmarshalText(b []byte) error {
	v, err := ParseType(string(b))
	if err != nil {
		return err
	}
	*t = v
	return nil
}

// Event is one entry of a job set's log. Fields that do not apply to the
// event's type are zero.
type Event struct {
	// Seq orders the events of one job set: 1, 2, 3, … with no gaps.
	Seq  uint64
	Time time.Time
	// Queue and JobSet name the log; Job the job it is about.
	Queue, JobSet, Job string
	Type               Type
	// Cluster and Node name the lease (leased, and the events of a leased
	// or running job, where each, when set, must be the live lease's).
	Cluster, Node string
	// Attempt is the lease's attempt number, 1 for the first lease; on
	// the events of a leased or running job it names the lease they are
	// about. Zero on other events (and accepted as "the current lease").
	Attempt int
	// Reason is a sentence for people: why a job failed, was preempted
	// (and for which job), or how long its lease went unrenewed.
	Reason string
	// ExitCode is the job's exit code, for succeeded, failed and
	// run-failed.
	ExitCode int
	// Requeued is set on preempted, lease-expired and lease-returned when
	// the job goes back to its queue rather than ending.
	Requeued bool
	// Priority is the job's new priority, on reprioritized (lower runs
	// first within a class, as Job.Priority at submit).
	Priority uint32
	// Rule is the retry policy's rule (1 for the first) that matched the
	// failed run: on run-failed (the rule that allowed another attempt),
	// on failed (the rule whose limit was reached), and on lease-expired
	// and lease-returned when a rule matched them; on a requeuing
	// preempted event of a gang member, the rule that retried its gang
	// (the retry counts on every member). Zero when none did.
	Rule int
	// AvoidNode is set on run-failed, and on lease-expired and
	// lease-returned that requeue, when the matched rule says
	// avoidSameNode: the job's later attempts avoid the lease's node.
	AvoidNode bool
}

// timeLayout is RFC 3339 with milliseconds, as in docs/job-lifecycle.md.
const timeLayout = "2006-01-02T15:04:05.000Z07:00"

// wire is the JSON form of an Event (docs/job-lifecycle.md): fields that do not apply
// are omitted.
type wire struct {
	Seq       uint64  `json:"seq"`
	Time      string  `json:"time"`
	Queue     string  `json:"queue"`
	JobSet    string  `json:"jobSet"`
	Job       string  `json:"job"`
	Type      Type    `json:"type"`
	Cluster   string  `json:"cluster,omitempty"`
	Node      string  `json:"node,omitempty"`
	Attempt   int     `json:"attempt,omitempty"`
	Reason    string  `json:"reason,omitempty"`
	ExitCode  *int    `json:"exitCode,omitempty"`
	Requeued  bool    `json:"requeued,omitempty"`
	Priority  *uint32 `json:"priority,omitempty"`
	Rule      int     `json:"rule,omitempty"`
	AvoidNode bool    `json:"avoidNode,omitempty"`
}

// fourDigitYear reports whether t, in UTC, has a year the time form can
// write: 0 to 9999.
func fourDigitYear(t time.Time) bool {
	y := t.UTC().Year()
	return y >= 0 && y <= 9999
}

// MarshalJSON writes docs/job-lifecycle.md's form of one event, time in UTC with
// milliseconds; exitCode appears on succeeded, failed and run-failed
// events only, priority on reprioritized events only; rule and avoidNode
// when set. A
// time whose year in UTC is outside 0 to 9999 is an error.
func (e Event) MarshalJSON() ([]byte, error) {
	if !fourDigitYear(e.Time) {
		return nil, fmt.Errorf("events: event %d: time %s has no four-digit year in UTC", e.Seq, e.Time.UTC())
	}
	w := wire{
		Seq: e.Seq, Time: e.Time.UTC().Format(timeLayout),
		Queue: e.Queue, JobSet: e.JobSet, Job: e.Job, Type: e.Type,
		Cluster: e.Cluster, Node: e.Node, Attempt: e.Attempt,
		Reason: e.Reason, Requeued: e.Requeued, Rule: e.Rule, AvoidNode: e.AvoidNode,
	}
	if e.Type.HasExitCode() {
		code := e.ExitCode
		w.ExitCode = &code
	}
	if e.Type == Reprioritized {
		p := e.Priority
		w.Priority = &p
	}
	return json.Marshal(w)
}

// UnmarshalJSON reads the form MarshalJSON writes. An unknown type, a
// malformed time, a time whose year in UTC is outside 0 to 9999 (which
// MarshalJSON could not write), a negative attempt or a rule outside 0 to
// MaxRules is an error.
func (e *Event) UnmarshalJSON(b []byte) error {
	var w wire
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	t, err := time.Parse(time.RFC3339Nano, w.Time)
	if err != nil {
		return fmt.Errorf("events: time %q: %w", w.Time, err)
	}
	if !fourDigitYear(t) {
		return fmt.Errorf("events: time %q has no four-digit year in UTC", w.Time)
	}
	if !w.Type.Valid() {
		return fmt.Errorf("events: event %d has no type", w.Seq)
	}
	if w.Attempt < 0 {
		return fmt.Errorf("events: attempt %d is negative", w.Attempt)
	}
	if w.Rule < 0 || w.Rule > MaxRules {
		return fmt.Errorf("events: rule %d is outside 0 to %d", w.Rule, MaxRules)
	}
	*e = Event{
		Seq: w.Seq, Time: t, Queue: w.Queue, JobSet: w.JobSet, Job: w.Job, Type: w.Type,
		Cluster: w.Cluster, Node: w.Node, Attempt: w.Attempt, Reason: w.Reason, Requeued: w.Requeued,
		Rule: w.Rule, AvoidNode: w.AvoidNode,
	}
	if w.ExitCode != nil {
		e.ExitCode = *w.ExitCode
	}
	if w.Priority != nil && w.Type == Reprioritized {
		e.Priority = *w.Priority
	}
	return nil
}
