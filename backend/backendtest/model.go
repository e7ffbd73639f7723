package backendtest

import (
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/backend"
	"github.com/flotilla-sched/flotilla/events"
)

// Model is the oracle of backend.Jobs: the naive reading of its contract,
// with maps and nothing clever, that a backend's Commit and reads are
// compared with (see CheckHistory). It is not safe for concurrent use and
// knows no fences, executors or usage.
//
// A write is checked in two stages, as the backends of this repository
// check it, so that a refused write's error class can be compared too:
// first the write on its own (an event attempt below zero is bad input,
// flotilla.ErrOutOfRange; a job without its submitted event, a submitted
// event without its job or in another job set, flotilla.ErrInconsistent; a
// job id or a client id twice in the write, a second submitted event,
// backend.ErrDuplicate), then, when that found nothing, against the stored
// state (a job id or a queue's client id stored already,
// backend.ErrDuplicate; an event's queue or job unknown,
// backend.ErrNotFound; a transition events.Transition refuses,
// events.ErrRefused). The error joins one *flotilla.FieldError per
// problem of the first stage that found any; nothing is applied then.
// An accepted write appends its events to their job sets' logs in order,
// each with the log's next sequence number (from 1), and leaves each job
// in the state its events' transitions give.
type Model struct {
	queues  map[string]bool
	jobs    map[string]*modelJob
	clients map[[2]string]string // (queue, client id) → job id
	logs    map[[2]string][]events.Event
}

type modelJob struct {
	spec  backend.JobSpec
	state events.Job
}

// NewModel returns an empty model: no queue, no job.
func NewModel() *Model {
	return &Model{queues: map[string]bool{}, jobs: map[string]*modelJob{},
		clients: map[[2]string]string{}, logs: map[[2]string][]events.Event{}}
}

// CreateQueue defines a queue (again: its logs and client ids are kept).
func (m *Model) CreateQueue(name string) { m.queues[name] = true }

// Commit applies w as the contract says, or refuses it whole (see Model).
// It returns w's events as stored, in a slice of its own: each with its
// sequence number. w is not modified.
func (m *Model) Commit(w *backend.Write) ([]events.Event, error) {
	if errs := m.checkWrite(w); len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	staged, errs := m.checkStored(w)
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	for _, s := range w.Jobs {
		m.jobs[s.Job.ID] = &modelJob{spec: s}
		if s.ClientID != "" {
			m.clients[[2]string{s.Job.Queue, s.ClientID}] = s.Job.ID
		}
	}
	for id, st := range staged {
		m.jobs[id].state = st
	}
	out := slices.Clone(w.Events)
	for i := range out {
		k := [2]string{out[i].Queue, out[i].JobSet}
		out[i].Seq = uint64(len(m.logs[k]) + 1)
		m.logs[k] = append(m.logs[k], out[i])
	}
	return out, nil
}

// checkWrite is the first stage: w on its own.
func (m *Model) checkWrite(w *backend.Write) []error {
	var errs []error
	for i, e := range w.Events {
		if e.Attempt < 0 {
			errs = append(errs, flotilla.Errorf(fmt.Sprintf("events[%d].attempt", i), fmt.Sprint(e.Attempt), flotilla.ErrOutOfRange, ""))
		}
	}
	newJob := map[string]int{}
	clients := map[[2]string]bool{}
	for i, s := range w.Jobs {
		if _, dup := newJob[s.Job.ID]; dup {
			errs = append(errs, flotilla.Errorf(fmt.Sprintf("jobs[%d].job.id", i), s.Job.ID, backend.ErrDuplicate, "twice in one write"))
		} else {
			newJob[s.Job.ID] = i
		}
		if s.ClientID != "" {
			k := [2]string{s.Job.Queue, s.ClientID}
			if clients[k] {
				errs = append(errs, flotilla.Errorf(fmt.Sprintf("jobs[%d].clientId", i), s.ClientID, backend.ErrDuplicate, "twice in one write"))
			}
			clients[k] = true
		}
	}
	submitted := map[int]bool{}
	for i, e := range w.Events {
		if e.Type != events.Submitted {
			continue
		}
		k, ok := newJob[e.Job]
		switch {
		case !ok:
			errs = append(errs, flotilla.Errorf(fmt.Sprintf("events[%d].job", i), e.Job, flotilla.ErrInconsistent, "no job"))
		case submitted[k]:
			errs = append(errs, flotilla.Errorf(fmt.Sprintf("events[%d].job", i), e.Job, backend.ErrDuplicate, "submitted twice"))
		default:
			submitted[k] = true
			if j := w.Jobs[k].Job; j.Queue != e.Queue || j.JobSet != e.JobSet {
				errs = append(errs, flotilla.Errorf(fmt.Sprintf("events[%d].jobSet", i), e.JobSet, flotilla.ErrInconsistent, "another job set"))
			}
		}
	}
	for i, s := range w.Jobs {
		if !submitted[i] && newJob[s.Job.ID] == i {
			errs = append(errs, flotilla.Errorf(fmt.Sprintf("jobs[%d].job.id", i), s.Job.ID, flotilla.ErrInconsistent, "no submitted event"))
		}
	}
	return errs
}

// checkStored is the second stage: w against the stored state. It returns
// the state w leaves each job it names in.
func (m *Model) checkStored(w *backend.Write) (map[string]events.Job, []error) {
	var errs []error
	for i, s := range w.Jobs {
		if _, ok := m.jobs[s.Job.ID]; ok {
			errs = append(errs, flotilla.Errorf(fmt.Sprintf("jobs[%d].job.id", i), s.Job.ID, backend.ErrDuplicate, "stored"))
		}
		if _, ok := m.clients[[2]string{s.Job.Queue, s.ClientID}]; ok && s.ClientID != "" {
			errs = append(errs, flotilla.Errorf(fmt.Sprintf("jobs[%d].clientId", i), s.ClientID, backend.ErrDuplicate, "stored"))
		}
	}
	isNew := map[string]bool{}
	for _, s := range w.Jobs {
		isNew[s.Job.ID] = true
	}
	staged := map[string]events.Job{}
	for i, e := range w.Events {
		if !m.queues[e.Queue] {
			errs = append(errs, flotilla.Errorf(fmt.Sprintf("events[%d].queue", i), e.Queue, backend.ErrNotFound, ""))
			continue
		}
		st, ok := staged[e.Job]
		if !ok {
			if j, stored := m.jobs[e.Job]; stored && !isNew[e.Job] {
				st = j.state
			} else if !isNew[e.Job] {
				errs = append(errs, flotilla.Errorf(fmt.Sprintf("events[%d].job", i), e.Job, backend.ErrNotFound, ""))
				continue
			}
		}
		n, err := events.Transition(st, e)
		if err != nil {
			errs = append(errs, fmt.Errorf("events[%d]: %w", i, err))
			continue
		}
		staged[e.Job] = n
	}
	return staged, errs
}

// Job returns the record of job id: its spec as committed and its state.
func (m *Model) Job(id string) (backend.Record, bool) {
	j, ok := m.jobs[id]
	if !ok {
		return backend.Record{}, false
	}
	return backend.Record{Spec: j.spec, State: j.state}, true
}

// JobByClientID returns the id of the job submitted to queue with
// clientID.
func (m *Model) JobByClientID(queue, clientID string) (string, bool) {
	id, ok := m.clients[[2]string{queue, clientID}]
	return id, ok
}

// Events returns a job set's log from sequence number from on (0 and 1
// both the first), at most limit events (limit ≤ 0: all), as
// backend.Jobs.Events does.
func (m *Model) Events(queue, jobSet string, from uint64, limit int) []events.Event {
	log := m.logs[[2]string{queue, jobSet}]
	start := min(max(from, 1)-1, uint64(len(log)))
	out := log[start:]
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return slices.Clone(out)
}

// JobSets returns the job sets of queue that have a log, sorted.
func (m *Model) JobSets(queue string) []string {
	var out []string
	for k := range m.logs {
		if k[0] == queue {
			out = append(out, k[1])
		}
	}
	slices.Sort(out)
	return out
}

// LiveJobs returns the ids of queue's jobs not in a terminal state, sorted.
func (m *Model) LiveJobs(queue string) []string {
	var out []string
	for _, id := range slices.Sorted(maps.Keys(m.jobs)) {
		if j := m.jobs[id]; j.spec.Job.Queue == queue && !j.state.State.Terminal() {
			out = append(out, id)
		}
	}
	return out
}
