package submit

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/backend"
	"github.com/flotilla-sched/flotilla/gang"
	"github.com/flotilla-sched/flotilla/internal/strictjson"
	"github.com/flotilla-sched/flotilla/textform"
)

// This file holds the Rules and the Catalog a submission is checked
// against, the entry points (ParseJobs, Jobs and their variants), and the
// checker that judges a request template by template and expands it into
// jobs. count.go holds the rules of count expansion and client ids, gang.go
// those of gangs, names.go those of names, ids and labels.

// Defaults of Rules (Armada's scheduler, "Graceful
// termination" and "Job deadlines").
const (
	// DefaultMaxTerminationGracePeriod is Armada's default maximum.
	DefaultMaxTerminationGracePeriod = 5 * time.Minute
	// DefaultActiveDeadline is the deadline of a job that requests no GPU.
	DefaultActiveDeadline = 3 * 24 * time.Hour
	// DefaultGPUActiveDeadline is the deadline of a job that requests one.
	DefaultGPUActiveDeadline = 14 * 24 * time.Hour
	// DefaultGPUResource is the resource that counts as a GPU.
	DefaultGPUResource = "nvidia.com/gpu"
	// DefaultMaxJobsPerRequest bounds one request's jobs after count
	// expansion.
	DefaultMaxJobsPerRequest = 100_000
	// MinTerminationGracePeriod is the shortest grace period a job may
	// have: 0 means a Kubernetes force delete, so it is read as this.
	MinTerminationGracePeriod = time.Second
	// MaxExitCode is the largest exit code a job may ask the fake executor
	// for (POSIX exit statuses are 0 … 255).
	MaxExitCode = 255
)

// Rules is the service's submission configuration. The zero value of
// a field means its default (DefaultRules).
type Rules struct {
	// MaxTerminationGracePeriod is the longest grace period a job may ask
	// for; 0 means DefaultMaxTerminationGracePeriod. At least
	// MinTerminationGracePeriod.
	MaxTerminationGracePeriod time.Duration
	// DefaultActiveDeadline and DefaultGPUActiveDeadline are given to jobs
	// that name no deadline, the second when the job requests a GPU; 0
	// means the package defaults (3 days, 14 days).
	DefaultActiveDeadline, DefaultGPUActiveDeadline time.Duration
	// GPUResource names the resource that counts as a GPU; "" means
	// DefaultGPUResource. A schema without it has no GPU jobs.
	GPUResource string
	// MaxJobsPerRequest bounds a request's jobs after count expansion; 0
	// means DefaultMaxJobsPerRequest.
	MaxJobsPerRequest int
}

// DefaultRules returns the rules with every default written out.
func DefaultRules() Rules {
	return Rules{
		MaxTerminationGracePeriod: DefaultMaxTerminationGracePeriod,
		DefaultActiveDeadline:     DefaultActiveDeadline,
		DefaultGPUActiveDeadline:  DefaultGPUActiveDeadline,
		GPUResource:               DefaultGPUResource,
		MaxJobsPerRequest:         DefaultMaxJobsPerRequest,
	}
}

// withDefaults fills zero fields with their defaults.
func (r Rules) withDefaults() Rules {
	d := DefaultRules()
	if r.MaxTerminationGracePeriod == 0 {
		r.MaxTerminationGracePeriod = d.MaxTerminationGracePeriod
	}
	if r.DefaultActiveDeadline == 0 {
		r.DefaultActiveDeadline = d.DefaultActiveDeadline
	}
	if r.DefaultGPUActiveDeadline == 0 {
		r.DefaultGPUActiveDeadline = d.DefaultGPUActiveDeadline
	}
	if r.GPUResource == "" {
		r.GPUResource = d.GPUResource
	}
	if r.MaxJobsPerRequest == 0 {
		r.MaxJobsPerRequest = d.MaxJobsPerRequest
	}
	return r
}

// Validate checks the rules themselves: no negative field, and a maximum
// grace period of at least MinTerminationGracePeriod. Fields are named
// submitRules.<field>.
func (r Rules) Validate() error {
	var errs []error
	d := r.withDefaults()
	if d.MaxTerminationGracePeriod < MinTerminationGracePeriod {
		errs = append(errs, flotilla.Errorf("submitRules.maxTerminationGracePeriod", r.MaxTerminationGracePeriod.String(),
			flotilla.ErrOutOfRange, "want at least %s", MinTerminationGracePeriod))
	}
	if d.DefaultActiveDeadline < 0 {
		errs = append(errs, flotilla.Errorf("submitRules.defaultActiveDeadline", r.DefaultActiveDeadline.String(), flotilla.ErrNegative, ""))
	}
	if d.DefaultGPUActiveDeadline < 0 {
		errs = append(errs, flotilla.Errorf("submitRules.defaultGPUActiveDeadline", r.DefaultGPUActiveDeadline.String(), flotilla.ErrNegative, ""))
	}
	if d.MaxJobsPerRequest < 0 {
		errs = append(errs, flotilla.Errorf("submitRules.maxJobsPerRequest", strconv.Itoa(r.MaxJobsPerRequest), flotilla.ErrNegative, ""))
	}
	return errors.Join(errs...)
}

// Catalog is what of the service's configuration a submission is checked
// against: the resource schema, the priority classes and the default class.
type Catalog struct {
	Schema          *flotilla.ResourceSchema
	PriorityClasses []flotilla.PriorityClass
	// DefaultPriorityClass is the class of jobs that name none; it must
	// name one of PriorityClasses.
	DefaultPriorityClass string
	// Topologies are the topologies a gang may name (the scheduler's
	// Config.Topologies); nil means none, and a gang asking for one is
	// refused.
	Topologies []flotilla.Topology
}

// IDSource returns a new job id on each call, never one returned before.
// The service uses ULID-like ids (time-ordered, random-suffixed); tests
// pass a counter so that results are deterministic.
type IDSource func() string

// IDBatch returns n new job ids on each call, never one returned before
// (the service's own ULIDs come as slices of one string).
type IDBatch func(n int) []string

// Batch is f as a source of n ids at a time (n calls); nil when f is nil.
func (f IDSource) Batch() IDBatch {
	if f == nil {
		return nil
	}
	return func(n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = f()
		}
		return out
	}
}

// ParseJobs is Parse followed by Jobs, with every problem of the file
// reported together: values of the wrong JSON type and unknown keys beside
// the submission rules' problems (a value reported as mistyped is not
// reported again as missing).
func (r Rules) ParseJobs(data []byte, cat *Catalog, now time.Time, newID IDSource) ([]backend.JobSpec, error) {
	return r.ParseJobsBatch(data, cat, now, newID.Batch())
}

// ParseJobsBatch is ParseJobs with the ids drawn all at once (see
// JobsBatch).
func (r Rules) ParseJobsBatch(data []byte, cat *Catalog, now time.Time, newIDs IDBatch) ([]backend.JobSpec, error) {
	specs, _, err := r.ParseJobsCounted(data, cat, now, newIDs)
	return specs, err
}

// ParseJobsCounted is ParseJobsBatch that also returns how many jobs each
// template made (JobsCounted).
func (r Rules) ParseJobsCounted(data []byte, cat *Catalog, now time.Time, newIDs IDBatch) ([]backend.JobSpec, []int, error) {
	req := new(Request)
	decodeErr := strictjson.Decode(data, req)
	if strictjson.Fatal(decodeErr) {
		return nil, nil, decodeErr
	}
	specs, counts, err := r.JobsCounted(req, cat, now, newIDs)
	if err := strictjson.Merge(decodeErr, err); err != nil {
		return nil, nil, err
	}
	return specs, counts, nil
}

// Jobs applies docs/submit-file.md's submission rules to req and expands it into the
// jobs to store, in file order: template by template, the k-th job of a
// template with count N having client id <clientId>-k. Every job gets a
// fresh id from newID (called only when the request is accepted, once per
// job), SubmitTime now, req's queue and job set, and its grace period and
// deadline as the rules settle them:
//
//   - terminationGracePeriod: absent or exactly 0 → 1s; between 0 and 1s,
//     negative, or above MaxTerminationGracePeriod → rejected;
//   - activeDeadline: absent → DefaultActiveDeadline, or
//     DefaultGPUActiveDeadline when the job requests a positive amount of
//     GPUResource; given, it must be positive;
//   - count ≥ 0 (absent = 1), and the request holds at most
//     MaxJobsPerRequest jobs;
//   - the priority class is configured (empty = the default class);
//     requests are non-empty, name resources of the schema, with
//     well-formed non-negative quantities, at least one of them above
//     zero; tolerations and node selectors as flotilla.Job.Validate
//     requires;
//   - queue and jobSet are path segments (CheckSegment: text, not "." or
//     "..", at most MaxNameBytes); client ids, gang ids, label
//     keys and values within their limits (names.go);
//   - client ids are unique within the request (the service checks them
//     against those already used in the queue);
//   - a gang's members are all in this request and their number equals
//     its cardinality, every member agreeing on cardinality,
//     nodeUniformityLabel (gang.ValidateSubmission), topology and pools
//     (a gang runs whole in one pool); members may mix
//     classes and priorities;
//   - runtime ≥ 0, exitCode in 0 … MaxExitCode; queue, jobSet and at
//     least one template are required.
//
// Whether the queue exists, whether a client id or gang id was used by an
// earlier request, is the service's to check, not this function's.
//
// Any problem rejects the whole request: Jobs returns nil and every
// problem, an errors.Join of *flotilla.FieldError values whose Field is the
// file's path (jobs[2].requests.cpu) and which satisfy errors.Is with the
// sentinels of package flotilla. A misconfigured rules value or catalog is
// reported the same way (fields submitRules.… and catalog.…). It never
// panics.
func (r Rules) Jobs(req *Request, cat *Catalog, now time.Time, newID IDSource) ([]backend.JobSpec, error) {
	return r.JobsBatch(req, cat, now, newID.Batch())
}

// JobsBatch is Jobs with the ids drawn all at once: newIDs(n) returns n
// fresh ids, called only when the request is accepted.
func (r Rules) JobsBatch(req *Request, cat *Catalog, now time.Time, newIDs IDBatch) ([]backend.JobSpec, error) {
	specs, _, err := r.JobsCounted(req, cat, now, newIDs)
	return specs, err
}

// JobsCounted is JobsBatch that also returns, when req is accepted, how
// many jobs each of its templates made, in req.Jobs' order: the first
// counts[0] specs are jobs[0]'s, the next counts[1] jobs[1]'s, and so on
// (a template of count 0 made none).
func (r Rules) JobsCounted(req *Request, cat *Catalog, now time.Time, newIDs IDBatch) ([]backend.JobSpec, []int, error) {
	c := &checker{rules: r.withDefaults()}
	c.add(r.Validate())
	c.catalog(cat)
	if newIDs == nil {
		c.add(flotilla.Errorf("newID", "<nil>", flotilla.ErrRequired, "an id source is required"))
	}
	if req == nil {
		c.add(flotilla.Errorf(strictjson.RootField, "<nil>", flotilla.ErrRequired, "no request"))
	}
	if len(c.errs) > 0 {
		return nil, nil, errors.Join(c.errs...)
	}
	specs, counts := c.request(req, now)
	if len(c.errs) > 0 {
		return nil, nil, errors.Join(c.errs...)
	}
	for i, id := range newIDs(len(specs)) {
		specs[i].Job.ID = id
	}
	return specs, counts, nil
}

// checker accumulates problems while it expands a request.
type checker struct {
	rules      Rules
	schema     *flotilla.ResourceSchema
	classes    map[string]bool
	classNames []string
	defClass   string
	topologies []flotilla.Topology
	gpu        int // index of the GPU resource, -1 when the schema has none
	errs       []error
}

// add records err, flattened so that every problem is one element of the
// final join.
func (c *checker) add(err error) { c.errs = append(c.errs, flotilla.Problems(err)...) }

// catalog checks cat and indexes its classes.
func (c *checker) catalog(cat *Catalog) {
	if cat == nil {
		c.add(flotilla.Errorf("catalog", "<nil>", flotilla.ErrRequired, ""))
		return
	}
	if cat.Schema == nil {
		c.add(flotilla.Errorf("catalog.schema", "<nil>", flotilla.ErrRequired, ""))
	}
	c.schema = cat.Schema
	c.classes = make(map[string]bool, len(cat.PriorityClasses))
	for _, pc := range cat.PriorityClasses {
		c.classes[pc.Name] = true
		c.classNames = append(c.classNames, pc.Name)
	}
	if !c.classes[cat.DefaultPriorityClass] {
		c.add(flotilla.Errorf("catalog.defaultPriorityClass", cat.DefaultPriorityClass, flotilla.ErrUnknownName,
			"known: %s", knownList(c.classNames)))
	}
	c.defClass = cat.DefaultPriorityClass
	c.topologies = cat.Topologies
	c.gpu = -1
	if c.schema != nil {
		if i, ok := c.schema.Index(c.rules.GPUResource); ok {
			c.gpu = i
		}
	}
}

// tmpl is one checked template, ready to expand.
type tmpl struct {
	n            int
	class        string
	requests     flotilla.Resources
	tolerations  []flotilla.Toleration
	grace, dl    time.Duration
	runtime      time.Duration
	gang         flotilla.Gang
	nodeSelector map[string]string
	pools        []string
}

// request checks req and expands it, with the number of jobs each template
// made; the result is meaningful only when no problem was recorded.
func (c *checker) request(req *Request, now time.Time) ([]backend.JobSpec, []int) {
	if req.Queue == "" {
		c.add(flotilla.Errorf("queue", "", flotilla.ErrRequired, ""))
	}
	c.add(CheckSegment("queue", "queue", req.Queue))
	if req.JobSet == "" {
		c.add(flotilla.Errorf("jobSet", "", flotilla.ErrRequired, ""))
	}
	c.add(CheckSegment("jobSet", "job set", req.JobSet))
	if len(req.Jobs) == 0 {
		c.add(flotilla.Errorf("jobs", "", flotilla.ErrRequired, "a request holds at least one job template"))
	}
	ts := make([]tmpl, len(req.Jobs))
	gangs := map[string]*gangAcc{}
	var gangOrder []string
	total := 0
	for i := range req.Jobs {
		t := &req.Jobs[i]
		p := fmt.Sprintf("jobs[%d]", i)
		ts[i] = c.template(p, t, &total)
		if t.Gang != nil {
			if c.gangMember(p, t, ts[i].n, gangs) {
				gangOrder = append(gangOrder, t.Gang.ID)
			}
		}
	}
	for _, id := range gangOrder {
		g := gangs[id]
		if g.card >= 1 && g.members != g.card {
			c.add(flotilla.Errorf(g.path+".gang.cardinality", strconv.Itoa(g.card), flotilla.ErrInconsistent,
				"gang %q has %d members in this request; all members are submitted together", id, g.members))
		}
	}
	cids := c.clientIDs(req, total)
	if len(c.errs) > 0 {
		return nil, nil
	}
	counts := make([]int, len(ts))
	for i := range ts {
		counts[i] = ts[i].n
	}
	return c.expand(req, ts, cids, total, now), counts
}

// template checks one template and returns it resolved; n counts its jobs
// toward total.
func (c *checker) template(p string, t *JobTemplate, total *int) tmpl {
	out := tmpl{n: c.count(p+".count", t.Count, total)}
	out.class = t.PriorityClass
	if out.class == "" {
		out.class = c.defClass
	} else if !c.classes[out.class] {
		c.add(flotilla.Errorf(p+".priorityClass", out.class, flotilla.ErrUnknownName, "no such priority class; known: %s", knownList(c.classNames)))
	}
	if len(t.Requests) == 0 {
		c.add(flotilla.Errorf(p+".requests", "", flotilla.ErrRequired, "a job needs at least one resource request"))
	}
	req, err := c.schema.Parse(p+".requests", t.Requests)
	c.add(err)
	if req == nil {
		req = c.schema.Zero()
	} else if len(t.Requests) > 0 && !slices.ContainsFunc(req, func(q int64) bool { return q != 0 }) {
		// A job that requests nothing fits any node any number of times:
		// one cycle would lease every such job to the first node.
		c.add(flotilla.Errorf(p+".requests", requestsText(t.Requests), flotilla.ErrOutOfRange,
			"a job requests more than zero of at least one resource"))
	}
	c.names(p, t)
	out.requests = req
	out.tolerations = textform.Tolerations(t.Tolerations)
	out.nodeSelector = maps.Clone(t.NodeSelector)
	// The library's rules for one job (node selector, tolerations), its
	// paths put in the file's terms; id, queue and requests are judged
	// above.
	proto := &flotilla.Job{ID: "template", Queue: "queue", Requests: out.requests, NodeSelector: t.NodeSelector, Tolerations: out.tolerations}
	c.add(flotilla.RenameFields(proto.Validate(c.schema), func(f string) string {
		if rest, ok := strings.CutPrefix(f, `job "template"`); ok {
			return p + rest
		}
		return f
	}))
	out.grace = c.grace(p+".terminationGracePeriod", t.TerminationGracePeriod)
	out.dl = c.deadline(p+".activeDeadline", t.ActiveDeadline, c.gpu >= 0 && out.requests[c.gpu] > 0)
	if d, ok := c.duration(p+".runtime", t.Runtime); ok && d < 0 {
		c.add(flotilla.Errorf(p+".runtime", t.Runtime, flotilla.ErrNegative, ""))
	} else {
		out.runtime = d
	}
	if t.ExitCode < 0 || t.ExitCode > MaxExitCode {
		c.add(flotilla.Errorf(p+".exitCode", strconv.Itoa(t.ExitCode), flotilla.ErrOutOfRange, "want 0 … %d", MaxExitCode))
	}
	if g := t.Gang; g != nil {
		out.gang = flotilla.Gang{ID: g.ID, Cardinality: g.Cardinality, NodeUniformityLabel: g.NodeUniformityLabel, Topology: g.Topology.topology()}
	}
	if t.Pools != nil {
		out.pools = c.pools(p+".pools", t.Pools)
	}
	return out
}

// pools checks a template's pools (non-nil) and returns them sorted.
func (c *checker) pools(field string, pools []string) []string {
	if len(pools) == 0 {
		c.add(flotilla.Errorf(field, "[]", flotilla.ErrRequired, "name at least one pool, or leave pools out to accept every pool"))
		return nil
	}
	seen := make(map[string]bool, len(pools))
	for i, p := range pools {
		f := fmt.Sprintf("%s[%d]", field, i)
		if err := CheckPool(f, p); err != nil {
			c.add(err)
		} else if seen[p] {
			c.add(flotilla.Errorf(f, p, flotilla.ErrDuplicate, "a pool is named once"))
		}
		seen[p] = true
	}
	return slices.Sorted(maps.Keys(seen))
}

// requestsText writes requests as name=quantity pairs in name order.
func requestsText(r map[string]string) string {
	var b strings.Builder
	for i, k := range slices.Sorted(maps.Keys(r)) {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(k + "=" + r[k])
	}
	return b.String()
}

// duration parses a Go duration; "" is absent (0, ok).
func (c *checker) duration(field, s string) (time.Duration, bool) {
	if s == "" {
		return 0, true
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		c.add(flotilla.Errorf(field, s, flotilla.ErrMalformed, "want a duration such as \"30s\" or \"1h\""))
		return 0, false
	}
	return d, true
}

// grace settles a termination grace period.
func (c *checker) grace(field, s string) time.Duration {
	d, ok := c.duration(field, s)
	switch {
	case !ok:
	case d < 0:
		c.add(flotilla.Errorf(field, s, flotilla.ErrNegative, ""))
	case d == 0:
		return MinTerminationGracePeriod
	case d < MinTerminationGracePeriod:
		c.add(flotilla.Errorf(field, s, flotilla.ErrOutOfRange, "want 0 (meaning %s) or at least %s", MinTerminationGracePeriod, MinTerminationGracePeriod))
	case d > c.rules.MaxTerminationGracePeriod:
		c.add(flotilla.Errorf(field, s, flotilla.ErrOutOfRange, "want at most %s", c.rules.MaxTerminationGracePeriod))
	}
	return d
}

// deadline settles an active deadline.
func (c *checker) deadline(field, s string, gpu bool) time.Duration {
	if s == "" {
		if gpu {
			return c.rules.DefaultGPUActiveDeadline
		}
		return c.rules.DefaultActiveDeadline
	}
	d, ok := c.duration(field, s)
	switch {
	case !ok:
	case d < 0:
		c.add(flotilla.Errorf(field, s, flotilla.ErrNegative, ""))
	case d == 0:
		c.add(flotilla.Errorf(field, s, flotilla.ErrOutOfRange, "want a positive duration, or none for the default"))
	}
	return d
}

// expand builds the accepted request's jobs: one allocation for the Jobs
// and one for all their request vectors. cids are clientIDs' result.
func (c *checker) expand(req *Request, ts []tmpl, cids []string, total int, now time.Time) []backend.JobSpec {
	specs := make([]backend.JobSpec, 0, total)
	jobs := make([]flotilla.Job, total)
	width := c.schema.Len()
	vec := make([]int64, total*width)
	for i := range ts {
		t, src := &ts[i], &req.Jobs[i]
		for range t.n {
			j := &jobs[len(specs)]
			r := vec[len(specs)*width : (len(specs)+1)*width : (len(specs)+1)*width]
			copy(r, t.requests)
			// Field by field, and only what is set: the arrays are zero
			// already, and a composite literal would write every field
			// (each pointer through a write barrier while the collector
			// marks).
			j.Queue, j.JobSet, j.SubmitTime, j.Requests, j.Priority = req.Queue, req.JobSet, now, r, src.Priority
			if t.class != "" {
				j.PriorityClass = t.class
			}
			if t.nodeSelector != nil {
				j.NodeSelector = t.nodeSelector
			}
			if t.tolerations != nil {
				j.Tolerations = t.tolerations
			}
			if t.gang != (flotilla.Gang{}) {
				j.Gang = t.gang
			}
			specs = specs[:len(specs)+1]
			sp := &specs[len(specs)-1]
			sp.Job = j
			if src.ClientID != "" {
				sp.ClientID, cids = cids[0], cids[1:]
			}
			sp.TerminationGracePeriod, sp.ActiveDeadline, sp.Runtime, sp.ExitCode = t.grace, t.dl, t.runtime, src.ExitCode
			if t.pools != nil {
				sp.Pools = t.pools
			}
		}
	}
	// The library's gang rule is the final word; the checks above report
	// the same problems at the file's paths, so this finds nothing unless
	// the two disagree. It has nothing to judge in a request without a
	// gang.
	if !slices.ContainsFunc(ts, func(t tmpl) bool { return t.gang.ID != "" }) {
		return specs
	}
	ptrs := make([]*flotilla.Job, len(specs))
	for i := range specs {
		ptrs[i] = specs[i].Job
	}
	c.add(gang.ValidateSubmission(ptrs, nil))
	return specs
}

func knownList(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(slices.Sorted(slices.Values(names)), ", ")
}

func more(n int) string {
	if n <= 1 {
		return ""
	}
	return fmt.Sprintf(" (and %d more)", n-1)
}
