package httpapi

import (
	"errors"
	"net/http"
	"strconv"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/api"
	"github.com/flotilla-sched/flotilla/events"
	"github.com/flotilla-sched/flotilla/server"
	"github.com/flotilla-sched/flotilla/webui"
)

// The web UI: its pages (package webui, at /ui/, served to anyone: the
// page asks for a token and sends it with each call) and the paged reads
// its pages make. Rights: the overview, the cycles and a cluster's nodes
// need the right to list queues (Principal.MayList), and show only the
// queues the principal may read; a queue's job sets and a job set's jobs
// need the right to read the queue.

// Default page sizes of the UI's reads.
const (
	defaultOverviewLimit = 500
	defaultPageLimit     = 100
)

func (h *Handler) uiRoutes() []route {
	return []route{
		{"GET /v1/overview", h.authed(h.overview)},
		{"GET /v1/cycles", h.authed(h.cycles)},
		{"GET /v1/queues/{queue}/jobsets", h.authed(h.jobSets)},
		{"GET /v1/queues/{queue}/jobsets/{jobSet}/jobs", h.authed(h.jobs)},
		{"GET /v1/clusters/{cluster}/nodes", h.authed(h.nodes)},
	}
}

// mountUI serves the UI's pages at /ui/ (deep links included) and
// redirects /ui there.
func (h *Handler) mountUI() {
	h.mux.Handle("GET /ui/", webui.Handler())
	h.mux.Handle("GET /ui", http.RedirectHandler("/ui/", http.StatusMovedPermanently))
}

// limitParam reads ?limit= (def when absent): 1 to server.UIMaxLimit.
func limitParam(r *http.Request, def int) (int, error) {
	s := r.URL.Query().Get("limit")
	if s == "" {
		return def, nil
	}
	v, err := strconv.Atoi(s)
	if err != nil || v < 1 || v > server.UIMaxLimit {
		return 0, flotilla.Errorf("limit", s, flotilla.ErrOutOfRange, "want a count from 1 to %d", server.UIMaxLimit)
	}
	return v, nil
}

func (h *Handler) overview(w http.ResponseWriter, r *http.Request) {
	p := principal(r)
	if h.forbid(w, r, p.MayList(), "list queues") {
		return
	}
	limit, err := limitParam(r, defaultOverviewLimit)
	if err != nil {
		h.fail(w, r, err, false)
		return
	}
	ov, err := h.srv.Overview(r.Context(), r.URL.Query().Get("after"), limit, p.MayWatch)
	if err != nil {
		h.fail(w, r, err, false)
		return
	}
	if ov.LastCycle != nil {
		ov.LastCycle.Queues = watchable(p, ov.LastCycle.Queues)
	}
	writeJSON(w, http.StatusOK, ov)
}

// watchable keeps the queues of a cycle the principal may read.
func watchable(p *Principal, qs []api.CycleQueue) []api.CycleQueue {
	out := make([]api.CycleQueue, 0, len(qs))
	for _, q := range qs {
		if p.MayWatch(q.Name) {
			out = append(out, q)
		}
	}
	return out
}

func (h *Handler) cycles(w http.ResponseWriter, r *http.Request) {
	p := principal(r)
	if h.forbid(w, r, p.MayList(), "read cycles") {
		return
	}
	limit, err := limitParam(r, server.UICycles)
	if err != nil {
		h.fail(w, r, err, false)
		return
	}
	out := api.CyclesPage{Cycles: h.srv.Cycles(limit)}
	for i := range out.Cycles {
		out.Cycles[i].Queues = watchable(p, out.Cycles[i].Queues)
	}
	writeJSON(w, http.StatusOK, out)
}

func (h *Handler) jobSets(w http.ResponseWriter, r *http.Request) {
	q := r.PathValue("queue")
	if h.forbid(w, r, principal(r).MayWatch(q), "read queue "+q) {
		return
	}
	limit, err := limitParam(r, defaultPageLimit)
	if err != nil {
		h.fail(w, r, err, false)
		return
	}
	page, err := h.srv.JobSets(r.Context(), q, r.URL.Query().Get("after"), limit)
	if err != nil {
		h.fail(w, r, err, true)
		return
	}
	writeJSON(w, http.StatusOK, page)
}

// jobsQuery reads a job set's page query: ?state= (queued, leased,
// running; absent: every live job; or an ended state: succeeded, failed,
// cancelled, preempted), ?sort= (submitted, the default, or priority,
// for live jobs), ?cursor= and ?limit=, every problem at once.
func jobsQuery(r *http.Request) (server.JobsQuery, error) {
	query := r.URL.Query()
	q := server.JobsQuery{Queue: r.PathValue("queue"), JobSet: r.PathValue("jobSet"), Cursor: query.Get("cursor")}
	var errs []error
	switch s := query.Get("state"); {
	case s == "":
		q.AnyState = true
	case q.State.UnmarshalText([]byte(s)) != nil || q.State == events.None:
		errs = append(errs, flotilla.Errorf("state", s, flotilla.ErrMalformed,
			"want queued, leased or running (the live states) or succeeded, failed, cancelled or preempted (the ended ones)"))
	}
	switch s := query.Get("sort"); s {
	case "", "submitted":
	case "priority":
		q.ByPriority = true
	default:
		errs = append(errs, flotilla.Errorf("sort", s, flotilla.ErrMalformed, "want submitted or priority"))
	}
	limit, err := limitParam(r, defaultPageLimit)
	errs = append(errs, err)
	q.Limit = limit
	return q, errors.Join(errs...)
}

func (h *Handler) jobs(w http.ResponseWriter, r *http.Request) {
	qn := r.PathValue("queue")
	if h.forbid(w, r, principal(r).MayWatch(qn), "read queue "+qn) {
		return
	}
	q, err := jobsQuery(r)
	if err != nil {
		h.fail(w, r, err, false)
		return
	}
	page, err := h.srv.Jobs(r.Context(), q)
	if err != nil {
		h.fail(w, r, err, true)
		return
	}
	writeJSON(w, http.StatusOK, page)
}

func (h *Handler) nodes(w http.ResponseWriter, r *http.Request) {
	if h.forbid(w, r, principal(r).MayList(), "list clusters") {
		return
	}
	limit, err := limitParam(r, defaultPageLimit)
	if err != nil {
		h.fail(w, r, err, false)
		return
	}
	page, err := h.srv.Nodes(r.Context(), r.PathValue("cluster"), r.URL.Query().Get("after"), limit)
	if err != nil {
		h.fail(w, r, err, true)
		return
	}
	writeJSON(w, http.StatusOK, page)
}
