package events

import (
	"errors"
	"fmt"
	"iter"
	"maps"
	"slices"
)

// ErrSequence classifies an event whose sequence number is not the next one
// of its log (a gap, a repeat, or out of order).
var ErrSequence = errors.New("out of sequence")

// ErrWrongLog classifies an event of another queue or job set.
var ErrWrongLog = errors.New("belongs to another log")

// JobSet is the state of one job set rebuilt from its log: every job's
// state and the next sequence number. The zero JobSet is not usable; call
// NewJobSet. It is not safe for concurrent use.
type JobSet struct {
	queue, name string
	next        uint64
	jobs        map[string]*Job
	// live counts jobs in a non-terminal state.
	live int
}

// NewJobSet returns an empty job set whose log starts at sequence 1.
func NewJobSet(queue, name string) *JobSet {
	return &JobSet{queue: queue, name: name, next: 1, jobs: map[string]*Job{}}
}

// Queue and Name identify the job set.
func (s *JobSet) Queue() string { return s.queue }
func (s *JobSet) Name() string  { return s.name }

// Next is the sequence number the next event must carry.
func (s *JobSet) Next() uint64 { return s.next }

// Len is the number of jobs; Live the number not in a terminal state.
func (s *JobSet) Len() int  { return len(s.jobs) }
func (s *JobSet) Live() int { return s.live }

// Job returns one job's state, a copy (its slices too) that the caller
// may change; false when the job set has no such job.
func (s *JobSet) Job(id string) (Job, bool) {
	if j, ok := s.jobs[id]; ok {
		return j.clone(), true
	}
	return Job{}, false
}

// Jobs yields every job (copies, as Job returns), in job-id order. It sorts the ids: O(n log n).
func (s *JobSet) Jobs() iter.Seq[Job] {
	return func(yield func(Job) bool) {
		for _, id := range slices.Sorted(maps.Keys(s.jobs)) {
			if !yield(s.jobs[id].clone()) {
				return
			}
		}
	}
}

// Check reports whether Apply would accept e, without applying it, and
// returns the job's state after it.
func (s *JobSet) Check(e Event) (Job, error) {
	n, _, err := s.check(&e)
	return n, err
}

// check is Check, also returning the stored job (nil for a new one), so
// that Apply looks the job up once.
func (s *JobSet) check(e *Event) (Job, *Job, error) {
	if e.Queue != s.queue || e.JobSet != s.name {
		return Job{}, nil, fmt.Errorf("event %d of %s/%s in the log of %s/%s: %w", e.Seq, e.Queue, e.JobSet, s.queue, s.name, ErrWrongLog)
	}
	if e.Seq != s.next {
		return Job{}, nil, fmt.Errorf("event %d of %s/%s: want sequence %d: %w", e.Seq, s.queue, s.name, s.next, ErrSequence)
	}
	j := s.jobs[e.Job]
	var prev Job
	if j != nil {
		prev = *j
	}
	n, err := Transition(prev, *e)
	return n, j, err
}

// Apply appends e to the job set: e must be the log's next event (Seq ==
// Next()) and a transition the state machine allows. On error nothing
// changes. It costs one map lookup and, for a new job, one allocation.
func (s *JobSet) Apply(e Event) error {
	n, j, err := s.check(&e)
	if err != nil {
		return err
	}
	switch {
	case j == nil:
		j = new(Job)
		s.jobs[e.Job] = j
		s.live++
	case !j.State.Terminal() && n.State.Terminal():
		s.live--
	}
	*j = n
	s.next++
	return nil
}

// Replay rebuilds a job set from its whole log, in order from sequence 1.
// It stops at the first event refused, returning the job set as the events
// before it left it, and an error naming the event.
func Replay(queue, name string, log iter.Seq[Event]) (*JobSet, error) {
	s := NewJobSet(queue, name)
	for e := range log {
		if err := s.Apply(e); err != nil {
			return s, err
		}
	}
	return s, nil
}

// clone copies j, its FailedClusters, Retries and AvoidNodes included (no
// allocation when empty).
func (j *Job) clone() Job {
	c := *j
	c.FailedClusters = slices.Clone(j.FailedClusters)
	c.Retries = slices.Clone(j.Retries)
	c.AvoidNodes = slices.Clone(j.AvoidNodes)
	return c
}
