package server

import (
	"github.com/stretchr/testify/require"

	"github.com/flotilla-sched/flotilla/backend"
	"github.com/flotilla-sched/flotilla/events"
)

// Helpers over world for the rule tests of the service (queues_test.go,
// jobs_test.go, executor_test.go, cycle_test.go, restart_test.go).

// events returns the job set's stored log.
func (w *world) log(queue, set string) []events.Event {
	w.t.Helper()
	evs, err := w.srv.Events(w.ctx, queue, set, 0, 0)
	require.NoError(w.t, err)
	return evs
}

// types lists the event types of evs, for readable comparisons.
func types(evs []events.Event) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e.Type.String()
	}
	return out
}

// jobLog returns the events of one job in its set's log.
func (w *world) jobLog(queue, set, id string) []events.Event {
	w.t.Helper()
	var out []events.Event
	for _, e := range w.log(queue, set) {
		if e.Job == id {
			out = append(out, e)
		}
	}
	return out
}

// status returns one job's status.
func (w *world) status(id string) JobStatus {
	w.t.Helper()
	st, err := w.srv.Status(w.ctx, id)
	require.NoError(w.t, err)
	return st[0]
}

// record returns one job's stored record.
func (w *world) record(id string) backend.Record {
	w.t.Helper()
	r, err := w.be.Job(w.ctx, id)
	require.NoError(w.t, err)
	return r
}

// leasesOf reports for cluster listing nothing and returns the leases
// delivered.
func (w *world) leasesOf(cluster string) []Lease {
	w.t.Helper()
	return w.report(Report{Cluster: cluster}).Leases
}

// one is a single job of cpu cores.
func one(cpu string) JobTemplate { return JobTemplate{Requests: map[string]string{"cpu": cpu}} }

// clusterOf returns the cluster of a job's live lease ("" when none).
func (w *world) clusterOf(id string) string {
	w.t.Helper()
	return w.status(id).Cluster
}

// storedState is what a bad request must leave unchanged: every job set's
// log of the given sets, the stored executors, and the queued jobs.
type storedState struct {
	logs      map[[2]string][]events.Event
	executors []backend.Executor
	queued    map[string]int
}

// stored captures the state of the given job sets (queue, set pairs).
func (w *world) stored(sets ...[2]string) storedState {
	w.t.Helper()
	st := storedState{logs: map[[2]string][]events.Event{}, queued: map[string]int{}}
	for _, s := range sets {
		st.logs[s] = w.log(s[0], s[1])
	}
	es, err := w.be.ListExecutors(w.ctx)
	require.NoError(w.t, err)
	st.executors = es
	qs, err := w.srv.ListQueues(w.ctx)
	require.NoError(w.t, err)
	for _, q := range qs {
		st.queued[q.Name] = q.Queued
	}
	return st
}

// requireUnchanged requires the state captured by stored to be as it was.
func (w *world) requireUnchanged(before storedState) {
	w.t.Helper()
	sets := make([][2]string, 0, len(before.logs))
	for s := range before.logs {
		sets = append(sets, s)
	}
	after := w.stored(sets...)
	require.Equal(w.t, before, after)
}

// nodeNames lists the in-memory nodes of a cluster.
func (w *world) nodeNames(cluster string) []string {
	w.t.Helper()
	w.srv.mu.Lock()
	defer w.srv.mu.Unlock()
	c := w.srv.st.clusters[cluster]
	if c == nil {
		return nil
	}
	out := make([]string, len(c.nodes))
	for i, n := range c.nodes {
		out[i] = n.Name
	}
	return out
}

// submitErr submits and returns the error.
func (w *world) submitErr(queue, set string, ts ...JobTemplate) ([]string, error) {
	return w.srv.Submit(w.ctx, &SubmitRequest{Queue: queue, JobSet: set, Jobs: ts})
}
