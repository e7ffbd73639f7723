package backendtest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/backend"
	"github.com/flotilla-sched/flotilla/events"
)

// Step is one step of a history CheckHistory runs: a read, or an event
// added to the write being built (a write is committed after a step with
// Last set, and after the history's last step). A test generates steps at
// random (with gopter, in the test: this package imports no test
// library); every combination of values is meaningful, good or bad input.
type Step struct {
	// Read, when not 0, makes the step a read compared with the model:
	// 1 a page of Job's job set's log (from From, at most Limit events),
	// 2 Job's record, 3 the job of client id c<ClientID>, 4 the live
	// jobs. The fields below Read but Job, From, Limit and ClientID are
	// then unused.
	Read        int
	From, Limit int
	// Job numbers the job (job id <queue>-j<Job>, job set s<Job%2>); the
	// event is of Type.
	Job  int
	Type events.Type
	// Requeued, Reason (a reason of the step's own) and ExitCode are
	// the event's fields; Cluster numbers its cluster (c<Cluster>, node
	// c<Cluster>-n0).
	Requeued bool
	Reason   bool
	ExitCode int
	Cluster  int
	// Attempt offsets the event's attempt from the job's live one: a
	// lease's is attempts+1+Attempt, another event's (with a cluster)
	// attempts+Attempt when Attempt is not 0 (a negative attempt is bad
	// input); 0 leaves the attempt out otherwise.
	Attempt int
	// ClientID, when not 0, gives a submitted job client id c<ClientID>
	// (so that repeats are duplicates).
	ClientID int
	// OtherQueue puts the event (and its job) in a queue never created.
	OtherQueue bool
	Last       bool
}

// errorClasses are the classes a refused write's error is compared by: a
// backend's error must match the first of these the model's matches.
var errorClasses = []error{backend.ErrDuplicate, backend.ErrNotFound, events.ErrRefused, flotilla.ErrInconsistent, flotilla.ErrOutOfRange}

func errorClass(err error) error {
	for _, c := range errorClasses {
		if errors.Is(err, c) {
			return c
		}
	}
	return err
}

// CheckHistory creates queue in b (empty, with no job whose id starts
// with queue+"-") and in a fresh Model, runs steps against both, and
// returns the first disagreement, or "" when there is none. It compares
// every write's acceptance, refusal class (see Model) and events as
// stored, every read, and at the end every job set's log, every job's
// record and the queue's live jobs. Job ids are prefixed by queue, so
// that histories in queues of their own share one backend.
func CheckHistory(ctx context.Context, b backend.Backend, queue string, steps []Step) string {
	m := NewModel()
	if err := b.CreateQueue(ctx, flotilla.Queue{Name: queue}); err != nil {
		return "CreateQueue: " + err.Error()
	}
	m.CreateQueue(queue)
	h := history{ctx: ctx, b: b, m: m, queue: queue}
	w := &backend.Write{}
	for k, st := range steps {
		if st.Read != 0 {
			if d := h.read(st); d != "" {
				return fmt.Sprintf("step %d: %s", k, d)
			}
		} else {
			h.add(w, st, k)
		}
		if (st.Last || k == len(steps)-1) && len(w.Events) > 0 {
			if d := h.commit(w); d != "" {
				return fmt.Sprintf("write ending at step %d: %s", k, d)
			}
			w = &backend.Write{}
		}
	}
	return h.final()
}

type history struct {
	ctx   context.Context
	b     backend.Backend
	m     *Model
	queue string
}

func (h *history) jobID(queue string, n int) string { return fmt.Sprintf("%s-j%d", queue, n) }

// add appends st's event (and its job, for a submitted event) to w.
func (h *history) add(w *backend.Write, st Step, k int) {
	q := h.queue
	if st.OtherQueue {
		q += "-missing"
	}
	id := h.jobID(q, st.Job)
	e := events.Event{Queue: q, JobSet: fmt.Sprintf("s%d", st.Job%2), Job: id, Type: st.Type, Requeued: st.Requeued,
		ExitCode: st.ExitCode, Time: time.Date(2026, 11, 22, 10, 0, k, k, time.UTC)}
	// The live attempt: as stored, or as this write's events leave it.
	var j events.Job
	if r, ok := h.m.Job(id); ok {
		j = r.State
	}
	for _, p := range w.Events {
		if p.Job == id {
			if n, err := events.Transition(j, p); err == nil {
				j = n
			}
		}
	}
	cluster := fmt.Sprintf("c%d", st.Cluster)
	switch {
	case st.Type == events.Leased:
		e.Cluster, e.Node, e.Attempt = cluster, cluster+"-n0", j.Attempts+1+st.Attempt
	case st.Attempt != 0:
		e.Attempt, e.Cluster = j.Attempts+st.Attempt, cluster
	}
	if st.Reason {
		e.Reason = fmt.Sprintf("reason %d", k)
	}
	if e.Type == events.Submitted {
		s := backend.JobSpec{Job: &flotilla.Job{ID: id, Queue: q, JobSet: e.JobSet, Requests: flotilla.Resources{1000, 0}}}
		if st.ClientID != 0 {
			s.ClientID = fmt.Sprintf("c%d", st.ClientID)
		}
		w.Jobs = append(w.Jobs, s)
	}
	w.Events = append(w.Events, e)
}

// commit commits w to both and compares.
func (h *history) commit(w *backend.Write) string {
	want, werr := h.m.Commit(w)
	// The backend may return w.Events itself, changed: give it a copy.
	cp := &backend.Write{Jobs: w.Jobs, Events: slices.Clone(w.Events)}
	got, gerr := h.b.Commit(h.ctx, cp)
	if (gerr == nil) != (werr == nil) || errorClass(gerr) != errorClass(werr) {
		return fmt.Sprintf("Commit error %v, the model's %v", gerr, werr)
	}
	if len(got) != len(want) {
		return fmt.Sprintf("%d events stored, the model's %d", len(got), len(want))
	}
	for i := range want {
		if d := sameEvent(got[i], want[i]); d != "" {
			return fmt.Sprintf("event %d: %s", i, d)
		}
	}
	return ""
}

// read runs the read st names on both and compares.
func (h *history) read(st Step) string {
	id := h.jobID(h.queue, st.Job)
	switch st.Read {
	case 1:
		set := fmt.Sprintf("s%d", st.Job%2)
		got, err := h.b.Events(h.ctx, h.queue, set, uint64(st.From), st.Limit)
		if err != nil {
			return fmt.Sprintf("Events(%s, %d, %d): %v", set, st.From, st.Limit, err)
		}
		return sameEvents(fmt.Sprintf("Events(%s, %d, %d)", set, st.From, st.Limit), got, h.m.Events(h.queue, set, uint64(st.From), st.Limit))
	case 2:
		return h.sameJob(id)
	case 3:
		c := fmt.Sprintf("c%d", st.ClientID)
		got, err := h.b.JobByClientID(h.ctx, h.queue, c)
		want, ok := h.m.JobByClientID(h.queue, c)
		if !ok {
			if !errors.Is(err, backend.ErrNotFound) {
				return fmt.Sprintf("JobByClientID(%s): %q, %v; the model has none", c, got, err)
			}
			return ""
		}
		if err != nil || got != want {
			return fmt.Sprintf("JobByClientID(%s): %q, %v; the model's %q", c, got, err, want)
		}
	case 4:
		return h.sameLive()
	}
	return ""
}

// final compares every log, job and the live jobs.
func (h *history) final() string {
	for _, set := range []string{"s0", "s1"} {
		got, err := h.b.Events(h.ctx, h.queue, set, 1, 0)
		if err != nil {
			return err.Error()
		}
		if d := sameEvents("log "+set, got, h.m.Events(h.queue, set, 1, 0)); d != "" {
			return d
		}
	}
	for _, set := range h.m.JobSets(h.queue) {
		for _, e := range h.m.Events(h.queue, set, 1, 0) {
			if d := h.sameJob(e.Job); d != "" {
				return d
			}
		}
	}
	return h.sameLive()
}

func (h *history) sameJob(id string) string {
	got, err := h.b.Job(h.ctx, id)
	want, ok := h.m.Job(id)
	if !ok {
		if !errors.Is(err, backend.ErrNotFound) {
			return fmt.Sprintf("Job(%s): %v; the model has none", id, err)
		}
		return ""
	}
	if err != nil {
		return fmt.Sprintf("Job(%s): %v", id, err)
	}
	if gj, wj := got.Spec.Job, want.Spec.Job; gj == nil || gj.ID != wj.ID || gj.Queue != wj.Queue || gj.JobSet != wj.JobSet ||
		got.Spec.ClientID != want.Spec.ClientID {
		return fmt.Sprintf("Job(%s): spec %+v, the model's %+v", id, got.Spec, want.Spec)
	}
	if d := sameJob(got.State, want.State); d != "" {
		return fmt.Sprintf("Job(%s): %s", id, d)
	}
	return ""
}

func (h *history) sameLive() string {
	var got []string
	err := h.b.LiveJobs(h.ctx, func(r backend.Record) error {
		if r.Spec.Job.Queue == h.queue {
			got = append(got, r.Spec.Job.ID)
		}
		return nil
	})
	if err != nil {
		return "LiveJobs: " + err.Error()
	}
	slices.Sort(got)
	if want := h.m.LiveJobs(h.queue); !slices.Equal(got, want) {
		return fmt.Sprintf("LiveJobs: %v, the model's %v", got, want)
	}
	return ""
}

func sameEvents(what string, got, want []events.Event) string {
	if len(got) != len(want) {
		return fmt.Sprintf("%s: %d events, the model's %d", what, len(got), len(want))
	}
	for i := range got {
		if d := sameEvent(got[i], want[i]); d != "" {
			return fmt.Sprintf("%s: event %d: %s", what, i, d)
		}
	}
	return ""
}
