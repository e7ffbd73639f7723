package httpapi

import (
	"net/http"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/api"
)

// The queue tree's groups. Rights: reading the groups (names, quotas and
// shares summed over their queues) needs the right to list queues
// (Principal.MayList); creating, updating and deleting them is admin only,
// as for queues.

func (h *Handler) listGroups(w http.ResponseWriter, r *http.Request) {
	if h.forbid(w, r, principal(r).MayList(), "list groups") {
		return
	}
	gs, err := h.srv.ListGroups(r.Context())
	if err != nil {
		h.fail(w, r, err, false)
		return
	}
	out := make([]api.Group, 0, len(gs))
	for _, g := range gs {
		out = append(out, GroupOf(g, h.srv.Schema()))
	}
	writeJSON(w, http.StatusOK, out)
}

func (h *Handler) getGroup(w http.ResponseWriter, r *http.Request) {
	if h.forbid(w, r, principal(r).MayList(), "read groups") {
		return
	}
	h.getGroupAfter(w, r, r.PathValue("group"), http.StatusOK)
}

func (h *Handler) getGroupAfter(w http.ResponseWriter, r *http.Request, name string, code int) {
	g, err := h.srv.Group(r.Context(), name)
	if err != nil {
		h.fail(w, r, err, true)
		return
	}
	writeJSON(w, code, GroupOf(g, h.srv.Schema()))
}

// groupBody decodes a group's body, whose name must be the path's when
// the path names one (update); the answer is false when it was refused.
func (h *Handler) groupBody(w http.ResponseWriter, r *http.Request, path string) (flotilla.QueueGroup, bool) {
	var g api.Group
	if err := decode(r, &g); err != nil {
		h.fail(w, r, err, false)
		return flotilla.QueueGroup{}, false
	}
	if path != "" && g.Name == "" {
		g.Name = path
	}
	if path != "" && g.Name != path {
		h.fail(w, r, flotilla.Errorf("name", g.Name, flotilla.ErrInconsistent, "the path names group %q", path), false)
		return flotilla.QueueGroup{}, false
	}
	def, err := g.Definition(h.srv.Schema())
	if err != nil {
		h.fail(w, r, err, false)
		return flotilla.QueueGroup{}, false
	}
	return def, true
}

func (h *Handler) createGroup(w http.ResponseWriter, r *http.Request) {
	if h.forbid(w, r, principal(r).Admin(), "manage groups") {
		return
	}
	g, ok := h.groupBody(w, r, "")
	if !ok {
		return
	}
	if err := h.srv.CreateGroup(r.Context(), g); err != nil {
		h.fail(w, r, err, false)
		return
	}
	h.getGroupAfter(w, r, g.Name, http.StatusCreated)
}

func (h *Handler) updateGroup(w http.ResponseWriter, r *http.Request) {
	if h.forbid(w, r, principal(r).Admin(), "manage groups") {
		return
	}
	g, ok := h.groupBody(w, r, r.PathValue("group"))
	if !ok {
		return
	}
	if err := h.srv.UpdateGroup(r.Context(), g); err != nil {
		h.fail(w, r, err, true)
		return
	}
	h.getGroupAfter(w, r, g.Name, http.StatusOK)
}

func (h *Handler) deleteGroup(w http.ResponseWriter, r *http.Request) {
	if h.forbid(w, r, principal(r).Admin(), "manage groups") {
		return
	}
	if err := h.srv.DeleteGroup(r.Context(), r.PathValue("group")); err != nil {
		h.fail(w, r, err, true)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
