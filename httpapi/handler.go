package httpapi

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/api"
	"github.com/flotilla-sched/flotilla/backend"
	"github.com/flotilla-sched/flotilla/events"
	"github.com/flotilla-sched/flotilla/internal/strictjson"
	"github.com/flotilla-sched/flotilla/scheduler"
	"github.com/flotilla-sched/flotilla/server"
)

// DefaultMaxBodyBytes bounds a request body: a submit file of 100,000 jobs
// fits.
const DefaultMaxBodyBytes = 64 << 20

// Options configure the handler.
type Options struct {
	// Auth checks bearer tokens; nil lets every request do everything
	// (serve then listens on loopback only).
	Auth *Auth
	// Logger receives refusals and failures; nil discards them.
	Logger *slog.Logger
	// MaxBodyBytes bounds request bodies (413 beyond); 0 means
	// DefaultMaxBodyBytes.
	MaxBodyBytes int64
	// Ready reports whether the service is ready (GET /readyz); nil means
	// always.
	Ready func() error
	// Observe, when set, hears of every request once it is answered: its
	// route pattern (as Routes lists it), status code and duration. The
	// flotilla command counts requests and submit rejections with it.
	Observe func(route string, status int, d time.Duration)
	// Clock times the requests Observe hears of and sets the deadlines
	// of stream writes; nil means the service's server.SystemClock.
	Clock server.Clock
	// MaxStreams and MaxStreamsPerPrincipal bound the event streams
	// served at once, in total and per principal: past either, a request
	// for one gets 503 with Retry-After. 0 means DefaultMaxStreams,
	// DefaultMaxStreamsPerPrincipal.
	MaxStreams, MaxStreamsPerPrincipal int
	// StreamWriteTimeout bounds how long one event of a stream may take
	// to be written to the connection; past it the stream ends. 0 means
	// DefaultStreamWriteTimeout.
	StreamWriteTimeout time.Duration
}

// Handler serves the HTTP API of a server.Server (openapi.json).
type Handler struct {
	srv  *server.Server
	opts Options
	mux  *http.ServeMux
	// anon is the principal of every request when Options.Auth is nil: it
	// may do everything.
	anon    *Principal
	streams *streamSlots
}

// New returns the API handler over srv.
func New(srv *server.Server, opts Options) *Handler {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.MaxBodyBytes == 0 {
		opts.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if opts.Clock == nil {
		opts.Clock = server.SystemClock{}
	}
	if opts.MaxStreams <= 0 {
		opts.MaxStreams = DefaultMaxStreams
	}
	if opts.MaxStreamsPerPrincipal <= 0 {
		opts.MaxStreamsPerPrincipal = DefaultMaxStreamsPerPrincipal
	}
	if opts.StreamWriteTimeout <= 0 {
		opts.StreamWriteTimeout = DefaultStreamWriteTimeout
	}
	h := &Handler{srv: srv, opts: opts, mux: http.NewServeMux(), anon: &Principal{Name: "anonymous", admin: true, submit: everything, watch: everything, executor: everything},
		streams: &streamSlots{max: opts.MaxStreams, perPrincipal: opts.MaxStreamsPerPrincipal, byPrincipal: map[string]int{}}}
	for _, r := range h.routes() {
		h.mux.HandleFunc(r.pattern, h.observed(r.pattern, r.fn))
	}
	h.mountUI()
	return h
}

// everything is the list that names every queue or cluster.
var everything = []string{"*"}

// route is one pattern of the API; Routes lists them for the OpenAPI
// check.
type route struct {
	pattern string
	fn      http.HandlerFunc
}

func (h *Handler) routes() []route {
	return append([]route{
		{"GET /healthz", h.healthz},
		{"GET /readyz", h.readyz},
		{"GET /openapi.json", h.openapi},
		{"GET /v1/queues", h.authed(h.listQueues)},
		{"POST /v1/queues", h.authed(h.createQueue)},
		{"GET /v1/queues/{queue}", h.authed(h.getQueue)},
		{"PUT /v1/queues/{queue}", h.authed(h.updateQueue)},
		{"DELETE /v1/queues/{queue}", h.authed(h.deleteQueue)},
		{"POST /v1/queues/{queue}/cordon", h.authed(h.cordon(backend.CordonQueue, true))},
		{"POST /v1/queues/{queue}/uncordon", h.authed(h.cordon(backend.CordonQueue, false))},
		{"GET /v1/groups", h.authed(h.listGroups)},
		{"POST /v1/groups", h.authed(h.createGroup)},
		{"GET /v1/groups/{group}", h.authed(h.getGroup)},
		{"PUT /v1/groups/{group}", h.authed(h.updateGroup)},
		{"DELETE /v1/groups/{group}", h.authed(h.deleteGroup)},
		{"POST /v1/jobs", h.authed(h.submit)},
		{"POST /v1/jobs/cancel", h.authed(h.cancel)},
		{"POST /v1/jobs/reprioritize", h.authed(h.reprioritize)},
		{"POST /v1/jobs/preempt", h.authed(h.preempt)},
		{"GET /v1/jobs", h.authed(h.status)},
		{"GET /v1/queues/{queue}/jobsets/{jobSet}/events", h.authed(h.events)},
		{"POST /v1/clusters/{cluster}/report", h.authed(h.report)},
		{"GET /v1/clusters", h.authed(h.listClusters)},
		{"POST /v1/clusters/{cluster}/cordon", h.authed(h.cordon(backend.CordonCluster, true))},
		{"POST /v1/clusters/{cluster}/uncordon", h.authed(h.cordon(backend.CordonCluster, false))},
	}, h.uiRoutes()...)
}

// Routes lists the API's method and path patterns.
func (h *Handler) Routes() []string {
	var out []string
	for _, r := range h.routes() {
		out = append(out, r.pattern)
	}
	return out
}

// ServeHTTP serves one request.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if mh, pattern := h.mux.Handler(r); pattern == "" {
		h.noRoute(w, r, mh)
		return
	}
	h.mux.ServeHTTP(w, r)
}

// noRoute answers a request no route takes (404, or 405 with Allow when
// the path has routes for other methods) with an api.Error body, as every
// other refusal is: mh is the mux's own answer, whose status and headers
// are kept and whose plain-text body is not.
func (h *Handler) noRoute(w http.ResponseWriter, r *http.Request, mh http.Handler) {
	c := &statusOnly{header: w.Header(), code: http.StatusNotFound}
	mh.ServeHTTP(c, r)
	writeJSON(w, c.code, api.Error{Error: fmt.Sprintf("%s %s: %s", r.Method, r.URL.Path, strings.ToLower(http.StatusText(c.code)))})
}

// statusOnly is a ResponseWriter that keeps the status and headers a
// handler sets and drops its body.
type statusOnly struct {
	header http.Header
	code   int
}

func (c *statusOnly) Header() http.Header         { return c.header }
func (c *statusOnly) Write(b []byte) (int, error) { return len(b), nil }
func (c *statusOnly) WriteHeader(code int)        { c.code = code }

type principalKey struct{}

// authed resolves the request's principal (401 without a known bearer
// token when auth is on) and bounds its body.
func (h *Handler) authed(fn http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		p, ok := h.principalOf(w, r)
		if !ok {
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, h.opts.MaxBodyBytes)
		fn(w, r.WithContext(context.WithValue(r.Context(), principalKey{}, p)))
	}
}

// principalOf resolves the request's principal, answering 401 (and
// reporting false) when auth is on and the request has no known bearer
// token.
func (h *Handler) principalOf(w http.ResponseWriter, r *http.Request) (*Principal, bool) {
	if h.opts.Auth == nil {
		return h.anon, true
	}
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	var p *Principal
	var known bool
	if ok {
		p, known = h.opts.Auth.Lookup(strings.TrimSpace(tok))
	}
	if !known {
		h.refuse(w, r, http.StatusUnauthorized, "", "a known bearer token is required")
	}
	return p, known
}

// Authenticated guards a handler served beside the API (the flotilla
// command's /metrics): with Options.Auth, a request without a known bearer
// token is refused with 401 and logged, whatever the token's rights;
// without Auth every request passes.
func (h *Handler) Authenticated(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, ok := h.principalOf(w, r); ok {
			next.ServeHTTP(w, r)
		}
	})
}

func principal(r *http.Request) *Principal { return r.Context().Value(principalKey{}).(*Principal) }

// refuse answers 401 or 403 and logs the refusal.
func (h *Handler) refuse(w http.ResponseWriter, r *http.Request, code int, who, why string) {
	h.opts.Logger.Warn("request refused", "method", r.Method, "path", r.URL.Path, "principal", who, "status", code, "why", why)
	writeJSON(w, code, api.Error{Error: why})
}

// forbid answers 403 unless ok.
func (h *Handler) forbid(w http.ResponseWriter, r *http.Request, ok bool, what string) bool {
	if ok {
		return false
	}
	p := principal(r)
	h.refuse(w, r, http.StatusForbidden, p.Name, "principal "+p.Name+" may not "+what)
	return true
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

// fail answers an error with its status: 400 for bad input (field
// errors), 404 not found, 409 conflicts, 413 too large, 503 when storage
// is unavailable (with Retry-After: 1), 500 otherwise.
func (h *Handler) fail(w http.ResponseWriter, r *http.Request, err error, notFound bool) {
	code := statusOf(err, notFound)
	if code >= 500 {
		h.opts.Logger.Error("request failed", "method", r.Method, "path", r.URL.Path, "status", code, "err", err)
	}
	if code == http.StatusServiceUnavailable {
		w.Header().Set("Retry-After", "1")
	}
	writeJSON(w, code, api.ErrorOf(err))
}

func statusOf(err error, notFound bool) int {
	var tooLarge *http.MaxBytesError
	var fe *flotilla.FieldError
	switch {
	case errors.As(err, &tooLarge):
		return http.StatusRequestEntityTooLarge
	case notFound && errors.Is(err, backend.ErrNotFound):
		return http.StatusNotFound
	case errors.Is(err, backend.ErrExists), errors.Is(err, backend.ErrNotEmpty), errors.Is(err, server.ErrCycleRunning):
		return http.StatusConflict
	case errors.Is(err, backend.ErrClosed), errors.Is(err, backend.ErrOutcomeUnknown), errors.Is(err, backend.ErrFenced),
		errors.Is(err, backend.ErrUnavailable),
		errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return http.StatusServiceUnavailable
	case errors.As(err, &fe), errors.Is(err, events.ErrRefused):
		return http.StatusBadRequest
	}
	return http.StatusInternalServerError
}

// readBody reads a bounded body; decode decodes it strictly into v.
func readBody(r *http.Request) ([]byte, error) { return io.ReadAll(r.Body) }

func decode(r *http.Request, v any) error {
	data, err := readBody(r)
	if err != nil {
		return err
	}
	return strictjson.Decode(data, v)
}

func (h *Handler) healthz(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain")
	_, _ = io.WriteString(w, "ok\n")
}

func (h *Handler) readyz(w http.ResponseWriter, r *http.Request) {
	if h.opts.Ready != nil {
		if err := h.opts.Ready(); err != nil {
			writeJSON(w, http.StatusServiceUnavailable, api.Error{Error: err.Error()})
			return
		}
	}
	w.Header().Set("Content-Type", "text/plain")
	_, _ = io.WriteString(w, "ok\n")
}

// listQueues lists the queues the principal may read.
func (h *Handler) listQueues(w http.ResponseWriter, r *http.Request) {
	p := principal(r)
	if h.forbid(w, r, p.MayList(), "list queues") {
		return
	}
	qs, err := h.srv.ListQueues(r.Context())
	if err != nil {
		h.fail(w, r, err, false)
		return
	}
	out := make([]api.Queue, 0, len(qs))
	for _, q := range qs {
		if p.MayWatch(q.Name) {
			out = append(out, QueueOf(q, h.srv.Schema()))
		}
	}
	writeJSON(w, http.StatusOK, out)
}

func (h *Handler) getQueue(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("queue")
	if h.forbid(w, r, principal(r).MayWatch(name), "read queue "+name) {
		return
	}
	q, err := h.srv.Queue(r.Context(), name)
	if err != nil {
		h.fail(w, r, err, true)
		return
	}
	writeJSON(w, http.StatusOK, QueueOf(q, h.srv.Schema()))
}

func (h *Handler) createQueue(w http.ResponseWriter, r *http.Request) {
	if h.forbid(w, r, principal(r).Admin(), "manage queues") {
		return
	}
	var q api.Queue
	if err := decode(r, &q); err != nil {
		h.fail(w, r, err, false)
		return
	}
	def, err := h.definition(&q)
	if err != nil {
		h.fail(w, r, err, false)
		return
	}
	if err := h.srv.CreateQueue(r.Context(), def, server.WithRetryPolicy(q.RetryPolicy)); err != nil {
		h.fail(w, r, err, false)
		return
	}
	h.getQueueAfter(w, r, q.Name, http.StatusCreated)
}

func (h *Handler) updateQueue(w http.ResponseWriter, r *http.Request) {
	if h.forbid(w, r, principal(r).Admin(), "manage queues") {
		return
	}
	var q api.Queue
	if err := decode(r, &q); err != nil {
		h.fail(w, r, err, false)
		return
	}
	name := r.PathValue("queue")
	if q.Name == "" {
		q.Name = name
	}
	if q.Name != name {
		h.fail(w, r, flotilla.Errorf("name", q.Name, flotilla.ErrInconsistent, "the path names queue %q", name), false)
		return
	}
	def, err := h.definition(&q)
	if err != nil {
		h.fail(w, r, err, false)
		return
	}
	if err := h.srv.UpdateQueue(r.Context(), def, server.WithRetryPolicy(q.RetryPolicy)); err != nil {
		h.fail(w, r, err, true)
		return
	}
	h.getQueueAfter(w, r, q.Name, http.StatusOK)
}

// definition is q's definition; its quotas' problems come with its retry
// policy's, so that a refusal names every problem at once.
func (h *Handler) definition(q *api.Queue) (flotilla.Queue, error) {
	def, err := q.Definition(h.srv.Schema())
	if err != nil && q.RetryPolicy != nil {
		err = errors.Join(err, q.RetryPolicy.Check(fmt.Sprintf("queue %q.retryPolicy", q.Name)))
	}
	return def, err
}

func (h *Handler) getQueueAfter(w http.ResponseWriter, r *http.Request, name string, code int) {
	q, err := h.srv.Queue(r.Context(), name)
	if err != nil {
		h.fail(w, r, err, true)
		return
	}
	writeJSON(w, code, QueueOf(q, h.srv.Schema()))
}

func (h *Handler) deleteQueue(w http.ResponseWriter, r *http.Request) {
	if h.forbid(w, r, principal(r).Admin(), "manage queues") {
		return
	}
	if err := h.srv.DeleteQueue(r.Context(), r.PathValue("queue")); err != nil {
		h.fail(w, r, err, true)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (h *Handler) submit(w http.ResponseWriter, r *http.Request) {
	data, err := readBody(r)
	if err != nil {
		h.fail(w, r, err, false)
		return
	}
	// The queue decides the right. A body that names no queue is refused
	// by the submission rules (400) and stores nothing; one that names a
	// queue twice is refused by the strict decoder the same way.
	var head struct {
		Queue string `json:"queue"`
	}
	_ = json.Unmarshal(data, &head)
	if head.Queue != "" && h.forbid(w, r, principal(r).MaySubmit(head.Queue), "submit to queue "+head.Queue) {
		return
	}
	who := principal(r).Name
	if h.opts.Auth == nil {
		who = "" // no auth: the service's default user
	}
	res, err := h.srv.SubmitJSONResult(r.Context(), who, data)
	if err != nil {
		h.fail(w, r, err, false)
		return
	}
	out := api.SubmitResponse{JobIDs: res.IDs}
	for _, wn := range res.Warnings {
		out.Warnings = append(out.Warnings, api.SubmitWarning{Field: wn.Field, Resource: wn.Resource, Node: wn.Node, Message: wn.Message})
	}
	writeJSON(w, http.StatusOK, out)
}

func (h *Handler) cancel(w http.ResponseWriter, r *http.Request) {
	var req api.CancelRequest
	if err := decode(r, &req); err != nil {
		h.fail(w, r, err, false)
		return
	}
	if err := req.Validate(); err != nil {
		h.fail(w, r, err, false)
		return
	}
	p := principal(r)
	var res server.CancelResult
	var err error
	if len(req.JobIDs) == 0 {
		if h.forbid(w, r, p.MayCancel(req.Queue), "cancel in queue "+req.Queue) {
			return
		}
		res, err = h.srv.CancelJobSet(r.Context(), req.Queue, req.JobSet)
	} else {
		if !p.Admin() {
			sts, err := h.srv.Status(r.Context(), req.JobIDs...)
			if err != nil {
				h.fail(w, r, err, true)
				return
			}
			for _, st := range sts {
				if h.forbid(w, r, p.MayCancel(st.Queue), "cancel in queue "+st.Queue) {
					return
				}
			}
		}
		res, err = h.srv.Cancel(r.Context(), req.JobIDs...)
	}
	if err != nil {
		h.fail(w, r, err, true) // an unknown job or queue is 404, as for status
		return
	}
	writeJSON(w, http.StatusOK, CancelResponseOf(res))
}

func (h *Handler) status(w http.ResponseWriter, r *http.Request) {
	query := r.URL.Query()
	ids := query["id"]
	var errs []error
	if len(ids) == 0 {
		errs = append(errs, flotilla.Errorf("id", "", flotilla.ErrRequired, "name jobs with ?id=…"))
	}
	explain := false
	if s := query.Get("explain"); s != "" {
		v, err := strconv.ParseBool(s)
		if err != nil {
			errs = append(errs, flotilla.Errorf("explain", s, flotilla.ErrMalformed, "want true or false"))
		}
		explain = v
	}
	if len(errs) > 0 {
		h.fail(w, r, errors.Join(errs...), false)
		return
	}
	sts, err := h.srv.Status(r.Context(), ids...)
	if err != nil {
		h.fail(w, r, err, true)
		return
	}
	out := api.StatusResponse{Jobs: make([]api.JobStatus, len(sts))}
	for i, st := range sts {
		if h.forbid(w, r, principal(r).MayWatch(st.Queue), "read queue "+st.Queue) {
			return
		}
		out.Jobs[i] = JobStatusOf(st)
	}
	if explain {
		ds, err := h.srv.Detail(r.Context(), ids...)
		if err != nil {
			h.fail(w, r, err, true)
			return
		}
		for i := range ds {
			out.Jobs[i].Explain = JobExplainOf(ds[i], sts[i], h.srv.Schema())
		}
	}
	for i := range out.Jobs {
		hideSameAs(principal(r), &out.Jobs[i], sts[i].Why)
	}
	writeJSON(w, http.StatusOK, out)
}

// hideSameAs keeps a job's reason from naming a job of a queue the
// principal may not read: the scheduler says which job (and queue) a job
// skipped as having the same requirements was compared with; for a
// queue the principal may not read, the reason says "a job of another
// queue" and the explanation names neither.
func hideSameAs(p *Principal, js *api.JobStatus, why *scheduler.Reason) {
	var id, queue string
	if why != nil && why.Search != nil {
		id, queue = why.Search.SameAs, why.Search.SameAsQueue
	}
	var u *api.Unscheduled
	if js.Explain != nil {
		u = js.Explain.Unscheduled
	}
	if u != nil && u.SameAsQueue != "" {
		id, queue = u.SameAs, u.SameAsQueue
	}
	if queue == "" || p.MayWatch(queue) {
		return
	}
	named, hidden := "same requirements as job "+id+" of queue "+queue, "same requirements as a job of another queue"
	js.Reason = strings.Replace(js.Reason, named, hidden, 1)
	if u != nil {
		u.Message = strings.Replace(u.Message, named, hidden, 1)
		u.SameAs, u.SameAsQueue = "", ""
	}
}

// events writes a job set's events as JSON lines from ?from= (default the
// first); with ?watch=true it then follows new events until the client
// goes away, flushing each line.
func (h *Handler) events(w http.ResponseWriter, r *http.Request) {
	q, set := r.PathValue("queue"), r.PathValue("jobSet")
	if h.forbid(w, r, principal(r).MayWatch(q), "read queue "+q) {
		return
	}
	query := r.URL.Query()
	var errs []error
	from, limit := uint64(0), 0
	if s := query.Get("from"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			errs = append(errs, flotilla.Errorf("from", s, flotilla.ErrMalformed, "want a sequence number"))
		}
		from = v
	}
	if s := query.Get("limit"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v < 0 {
			errs = append(errs, flotilla.Errorf("limit", s, flotilla.ErrMalformed, "want a count ≥ 0"))
		}
		limit = v
	}
	watch := false
	if s := query.Get("watch"); s != "" {
		v, err := strconv.ParseBool(s)
		if err != nil {
			errs = append(errs, flotilla.Errorf("watch", s, flotilla.ErrMalformed, "want true or false"))
		}
		watch = v
	}
	if len(errs) > 0 {
		h.fail(w, r, errors.Join(errs...), false)
		return
	}
	if _, err := h.srv.Queue(r.Context(), q); err != nil {
		h.fail(w, r, err, true)
		return
	}
	release, ok := h.openStream(w, r)
	if !ok {
		return
	}
	defer release()
	if !watch {
		// A job set that never had an event is not found, as an unknown
		// job is not (a watch may start before the set's first job).
		evs, err := h.srv.Events(r.Context(), q, set, 1, 1)
		if err == nil && len(evs) == 0 {
			err = flotilla.Errorf("jobSet", set, backend.ErrNotFound, "queue %s has no job set of that name", q)
		}
		if err != nil {
			h.fail(w, r, err, true)
			return
		}
	}
	rc := http.NewResponseController(w)
	dw := &deadlineWriter{w: w, rc: rc, clock: h.opts.Clock, timeout: h.opts.StreamWriteTimeout}
	defer dw.clear()
	w.Header().Set("Content-Type", "application/x-ndjson")
	enc := json.NewEncoder(dw)
	if !watch {
		h.eventPages(w, r, enc, q, set, from, limit)
		return
	}
	w.WriteHeader(http.StatusOK)
	_ = dw.flush()
	err := h.srv.Watch(r.Context(), q, set, from, func(e events.Event) error {
		if err := enc.Encode(e); err != nil {
			return err
		}
		return rc.Flush()
	})
	if err != nil && r.Context().Err() == nil {
		h.opts.Logger.Info("watch ended", "queue", q, "jobSet", set, "err", err)
	}
}

// eventsPage is how many events a read of a job set's log asks the
// service for at a time: a long log is streamed page by page, never held
// in memory whole.
const eventsPage = 4096

// eventPages writes the job set's events from `from` on, at most limit of
// them (0: all), reading them a page at a time. An error before the first
// event is the response's status; one after it ends the stream early (the
// client sees fewer events than the log holds and may read on from the
// last sequence number it got).
func (h *Handler) eventPages(w http.ResponseWriter, r *http.Request, enc *json.Encoder, q, set string, from uint64, limit int) {
	started := false
	for {
		n := eventsPage
		if limit > 0 && limit < n {
			n = limit
		}
		evs, err := h.srv.Events(r.Context(), q, set, from, n)
		if err != nil {
			if !started {
				h.fail(w, r, err, true)
			} else if r.Context().Err() == nil {
				h.opts.Logger.Info("events ended early", "queue", q, "jobSet", set, "from", from, "err", err)
			}
			return
		}
		if !started {
			w.WriteHeader(http.StatusOK)
			started = true
		}
		for _, e := range evs {
			if err := enc.Encode(e); err != nil {
				return
			}
		}
		if len(evs) < n {
			return
		}
		from = evs[len(evs)-1].Seq + 1
		if limit > 0 {
			if limit -= len(evs); limit == 0 {
				return
			}
		}
	}
}

func (h *Handler) report(w http.ResponseWriter, r *http.Request) {
	cluster := r.PathValue("cluster")
	if h.forbid(w, r, principal(r).MayReport(cluster), "report for cluster "+cluster) {
		return
	}
	var body api.Report
	if err := decode(r, &body); err != nil {
		h.fail(w, r, err, false)
		return
	}
	rep, err := ServerReport(&body, cluster, h.srv.Schema())
	if err != nil {
		h.fail(w, r, err, false)
		return
	}
	reply, err := h.srv.Report(r.Context(), rep)
	if err != nil {
		h.fail(w, r, err, false)
		return
	}
	writeJSON(w, http.StatusOK, ReportReplyOf(reply, h.srv.Schema()))
}

//go:embed openapi.json
var openapiDoc []byte

// OpenAPI returns the API's OpenAPI document (a copy).
func OpenAPI() []byte { return slices.Clone(openapiDoc) }

func (h *Handler) openapi(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(openapiDoc)
}

// statusWriter records the status a handler answers with.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection (Flush).
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// observed reports each request to Options.Observe.
func (h *Handler) observed(route string, fn http.HandlerFunc) http.HandlerFunc {
	if h.opts.Observe == nil {
		return fn
	}
	return func(w http.ResponseWriter, r *http.Request) {
		start := h.opts.Clock.Now()
		sw := &statusWriter{ResponseWriter: w}
		fn(sw, r)
		if sw.status == 0 {
			sw.status = http.StatusOK
		}
		h.opts.Observe(route, sw.status, h.opts.Clock.Now().Sub(start))
	}
}
