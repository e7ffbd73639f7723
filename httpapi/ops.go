package httpapi

import (
	"net/http"

	"github.com/flotilla-sched/flotilla/api"
	"github.com/flotilla-sched/flotilla/backend"
	"github.com/flotilla-sched/flotilla/server"
)

// The operator's verbs: reprioritize and preempt (POST /v1/jobs/…).

// mayChangeJobs checks that the principal may change the jobs ids name
// (those of queues it submits to, every job for an admin), answering 403
// or the status error and reporting false when not.
func (h *Handler) mayChangeJobs(w http.ResponseWriter, r *http.Request, ids []string, verb string) bool {
	p := principal(r)
	if p.Admin() || len(ids) == 0 {
		return true
	}
	sts, err := h.srv.Status(r.Context(), ids...)
	if err != nil {
		h.fail(w, r, err, true)
		return false
	}
	for _, st := range sts {
		if h.forbid(w, r, p.MayCancel(st.Queue), verb+" in queue "+st.Queue) {
			return false
		}
	}
	return true
}

func (h *Handler) reprioritize(w http.ResponseWriter, r *http.Request) {
	var req api.ReprioritizeRequest
	if err := decode(r, &req); err != nil {
		h.fail(w, r, err, false)
		return
	}
	if err := req.Validate(); err != nil {
		h.fail(w, r, err, false)
		return
	}
	p := principal(r)
	if req.Queue != "" && h.forbid(w, r, p.MayCancel(req.Queue), "reprioritize in queue "+req.Queue) {
		return
	}
	if !h.mayChangeJobs(w, r, req.JobIDs, "reprioritize") {
		return
	}
	res, err := h.srv.Reprioritize(r.Context(), server.Selection{IDs: req.JobIDs, Queue: req.Queue, JobSet: req.JobSet},
		*req.Priority, p.Name)
	if err != nil {
		h.fail(w, r, err, true)
		return
	}
	writeJSON(w, http.StatusOK, api.ReprioritizeResponse{Reprioritized: nonNil(res.Reprioritized), Live: nonNil(res.Live),
		Finished: nonNil(res.Finished)})
}

func (h *Handler) preempt(w http.ResponseWriter, r *http.Request) {
	var req api.PreemptRequest
	if err := decode(r, &req); err != nil {
		h.fail(w, r, err, false)
		return
	}
	p := principal(r)
	if (req.Cluster != "" || req.Node != "") && h.forbid(w, r, p.Admin(), "preempt by cluster or node") {
		return
	}
	if req.Queue != "" && h.forbid(w, r, p.MayCancel(req.Queue), "preempt in queue "+req.Queue) {
		return
	}
	if !h.mayChangeJobs(w, r, req.JobIDs, "preempt") {
		return
	}
	res, err := h.srv.Preempt(r.Context(), server.Selection{IDs: req.JobIDs, Queue: req.Queue, JobSet: req.JobSet,
		Cluster: req.Cluster, Node: req.Node}, p.Name, req.Reason)
	if err != nil {
		h.fail(w, r, err, true)
		return
	}
	writeJSON(w, http.StatusOK, api.PreemptResponse{Preempted: nonNil(res.Preempted), Queued: nonNil(res.Queued),
		Finished: nonNil(res.Finished)})
}

// cordon answers POST /v1/queues/{queue}/cordon and …/uncordon, and the
// same under /v1/clusters/{cluster}: admin only; 204 when done.
func (h *Handler) cordon(kind backend.CordonKind, on bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		verb := "cordon"
		if !on {
			verb = "uncordon"
		}
		if h.forbid(w, r, principal(r).Admin(), verb+" a "+string(kind)) {
			return
		}
		name := r.PathValue(string(kind))
		if err := h.srv.Cordon(r.Context(), backend.Cordon{Kind: kind, Name: name}, on); err != nil {
			h.fail(w, r, err, true)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}
}

// listClusters answers GET /v1/clusters: for an admin, or a principal
// that may list queues.
func (h *Handler) listClusters(w http.ResponseWriter, r *http.Request) {
	if h.forbid(w, r, principal(r).MayList(), "list clusters") {
		return
	}
	cs, err := h.srv.ListClusters(r.Context())
	if err != nil {
		h.fail(w, r, err, false)
		return
	}
	out := make([]api.Cluster, len(cs))
	for i, c := range cs {
		out[i] = api.Cluster{Name: c.Name, Nodes: len(c.Nodes), Alive: c.Alive, Cordoned: c.Cordoned, Leased: c.Leased, Running: c.Running,
			Pool: c.Pool}
		if !c.Reported.IsZero() {
			t := c.Reported.UTC()
			out[i].Reported = &t
		}
	}
	writeJSON(w, http.StatusOK, out)
}
