package httpapi

import (
	"net/http"

	"github.com/flotilla-sched/flotilla/api"
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
