package armada

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/internal/strictjson"
	"github.com/flotilla-sched/flotilla/sim"
)

// Armada's simulator files (internal/scheduler/simulator in Armada): a
// WorkloadSpec for -workload and a ClusterSpec for -cluster, read into
// package sim's Workload and Clusters. README.md's "Armada simulator
// files" says, field by field, what maps and what does not.

// armadaClusterLabel is the label Armada's simulator gives every node,
// its cluster's name; a gang without gangNodeUniformityLabel is placed on
// nodes sharing one value of it, i.e. within one cluster.
const armadaClusterLabel = "armadaproject.io/clusterName"

// Field names of Armada's messages, as its files spell them.
var (
	armadaWorkloadFields    = []string{"name", "randomSeed", "queues"}
	armadaQueueFields       = []string{"name", "weight", "jobTemplates"}
	armadaJobTemplateFields = []string{"number", "numberSuccessful", "queue", "id", "jobSet", "queuePriority",
		"priorityClassName", "requirements", "dependencies", "earliestSubmitTime",
		"earliestSubmitTimeFromDependencyCompletion", "runtimeDistribution", "gangCardinality",
		"gangNodeUniformityLabel", "repeat"}
	armadaRequirementsFields = []string{"nodeSelector", "affinity", "tolerations", "annotations",
		"preemptionPolicy", "resourceRequirements"}
	armadaResourceFields     = []string{"limits", "requests", "claims"}
	armadaTolerationFields   = []string{"key", "operator", "value", "effect", "tolerationSeconds"}
	armadaDistributionFields = []string{"minimum", "tailMean"}
	armadaRepeatFields       = []string{"numTimes", "period"}
)

// Workload is a WorkloadSpec read into a sim.Workload.
type Workload struct {
	Workload *sim.Workload
	// Paths puts sim's field paths (jobTemplates[3].count) in the file's
	// terms (queues[1].jobTemplates[0].number).
	Paths PathRenamer
}

// ParseWorkload reads Armada's WorkloadSpec YAML into a
// sim.Workload and checks it (sim's Validate included); every problem is
// a *flotilla.FieldError at its YAML path, all joined. The template of
// queue q at index j with no id gets Armada's id "<q>-<j>".
func ParseWorkload(data []byte) (*Workload, error) {
	var r yamlReader
	root := r.yamlRoot(data)
	if root == nil {
		return nil, r.err()
	}
	top := r.object(root, "", armadaWorkloadFields...)
	if top == nil {
		return nil, r.err()
	}
	w := &sim.Workload{}
	out := &Workload{Workload: w}
	// randomSeed is an int64 in Armada; its bits are the seed.
	w.Seed = uint64(r.integer(top["randomSeed"], "randomSeed", math.MinInt64, math.MaxInt64))
	queues := r.list(top["queues"], "queues")
	if len(queues) == 0 && top["queues"] != nil {
		r.add("queues", "", flotilla.ErrRequired, "at least one queue")
	}
	repeats := map[string]bool{} // ids of templates with repeat
	var tplPaths []string        // each template's YAML path
	for qi, qn := range queues {
		qp := yamlIndex("queues", qi)
		q := r.object(qn, qp, armadaQueueFields...)
		if q == nil {
			continue
		}
		name := r.str(q["name"], qp+".name")
		spec := sim.QueueSpec{Name: name}
		if q["weight"] == nil || yamlNull(q["weight"]) {
			r.add(qp+".weight", "", flotilla.ErrRequired, "Armada reads an absent weight as 0, which gives the queue no share")
		} else {
			wt := r.number(q["weight"], qp+".weight")
			spec.Weight = &wt
		}
		out.Paths = append(out.Paths, [2]string{yamlIndex("queues", len(w.Queues)), qp})
		w.Queues = append(w.Queues, spec)
		for ji, jn := range r.list(q["jobTemplates"], qp+".jobTemplates") {
			jp := yamlIndex(qp+".jobTemplates", ji)
			t, repeated, ok := r.jobTemplate(jn, jp, name, ji)
			if !ok {
				continue
			}
			if repeated {
				repeats[t.ID] = true
			}
			tplPaths = append(tplPaths, jp)
			sp := yamlIndex("jobTemplates", len(w.JobTemplates))
			out.Paths = append(out.Paths, templatePaths(sp, jp)...)
			w.JobTemplates = append(w.JobTemplates, t)
		}
	}
	out.Paths = append(out.Paths, [2]string{"jobTemplates", "queues"})
	r.repetitionDependencies(w, tplPaths, repeats)
	// Every problem at once: sim's checks of what could be read, less
	// those about values the reader already refused.
	if err := strictjson.Merge(r.err(), flotilla.RenameFields(w.Validate(), out.Paths.Rename)); err != nil {
		return nil, err
	}
	return out, nil
}

// templatePaths maps the fields of sim's template at sp to those of
// Armada's template at jp, longest prefix first.
func templatePaths(sp, jp string) [][2]string {
	return [][2]string{
		{sp + ".count", jp + ".number"},
		{sp + ".requests", jp + ".requirements.resourceRequirements.requests"},
		{sp + ".priorityClass", jp + ".priorityClassName"},
		{sp + ".priority", jp + ".queuePriority"},
		{sp + ".nodeSelector", jp + ".requirements.nodeSelector"},
		{sp + ".tolerations", jp + ".requirements.tolerations"},
		{sp + ".gang.cardinality", jp + ".gangCardinality"},
		{sp + ".gang.nodeUniformityLabel", jp + ".gangNodeUniformityLabel"},
		{sp + ".arrival.at", jp + ".earliestSubmitTime"},
		{sp + ".arrival.after", jp + ".dependencies"},
		{sp + ".runtime", jp + ".runtimeDistribution"},
		{sp, jp},
	}
}

// repetitionDependencies refuses a dependency on one repetition of a
// repeated template by Armada's name for it, <id>-repeat-<i>: Flotilla
// waits for every repetition of <id>. paths are the templates' YAML
// paths, repeats the ids of the templates with repeat.
func (r *yamlReader) repetitionDependencies(w *sim.Workload, paths []string, repeats map[string]bool) {
	ids := make(map[string]bool, len(w.JobTemplates))
	for _, t := range w.JobTemplates {
		ids[t.ID] = true
	}
	for i, t := range w.JobTemplates {
		for k, d := range t.Arrival.After {
			cut := strings.LastIndex(d, "-repeat-")
			if ids[d] || cut < 0 || !repeats[d[:cut]] {
				continue
			}
			if _, err := strconv.ParseUint(d[cut+len("-repeat-"):], 10, 32); err == nil {
				r.add(yamlIndex(paths[i]+".dependencies", k), d, flotilla.ErrUnsupported,
					"Armada's name for one repetition of %s; Flotilla waits for every repetition: name %s", d[:cut], d[:cut])
			}
		}
	}
}

// jobTemplate reads one of Armada's job templates, the j-th of queue;
// repeated is whether it has repeat, ok false when it could not be read at
// all.
func (r *yamlReader) jobTemplate(n *yaml.Node, jp, queue string, j int) (t sim.JobTemplate, repeated, ok bool) {
	f := r.object(n, jp, armadaJobTemplateFields...)
	if f == nil {
		return sim.JobTemplate{}, false, false
	}
	repeated = f["repeat"] != nil && !yamlNull(f["repeat"])
	t.Queue = queue
	t.ID = r.str(f["id"], jp+".id")
	if t.ID == "" {
		t.ID = fmt.Sprintf("%s-%d", queue, j)
	}
	t.JobSet = r.str(f["jobSet"], jp+".jobSet")
	t.Count = int(r.integer(f["number"], jp+".number", 0, sim.MaxJobs))
	if ns := r.integer(f["numberSuccessful"], jp+".numberSuccessful", math.MinInt64, math.MaxInt64); ns != 0 {
		r.add(jp+".numberSuccessful", fmt.Sprint(ns), flotilla.ErrUnsupported, "Armada's simulator keeps this count itself; leave it out")
	}
	if q := r.str(f["queue"], jp+".queue"); q != "" && q != queue {
		r.add(jp+".queue", q, flotilla.ErrInconsistent, "a template belongs to the queue it is listed under, %q", queue)
	}
	t.Priority = uint32(r.integer(f["queuePriority"], jp+".queuePriority", 0, math.MaxUint32))
	t.PriorityClass = r.str(f["priorityClassName"], jp+".priorityClassName")
	r.requirements(f["requirements"], jp+".requirements", &t)

	deps := r.list(f["dependencies"], jp+".dependencies")
	for k, d := range deps {
		t.Arrival.After = append(t.Arrival.After, r.str(d, yamlIndex(jp+".dependencies", k)))
	}
	est := r.duration(f["earliestSubmitTime"], jp+".earliestSubmitTime")
	at := est
	afterDeps := r.duration(f["earliestSubmitTimeFromDependencyCompletion"], jp+".earliestSubmitTimeFromDependencyCompletion")
	// Armada submits a template without dependencies at
	// earliestSubmitTime; one with dependencies, once they have all
	// succeeded, that long after, or earliestSubmitTimeFromDependencyCompletion
	// after, whichever is later.
	if len(deps) > 0 && afterDeps > at {
		at = afterDeps
	}
	if at > 0 {
		t.Arrival.At = at.String()
	}

	rd := r.object(f["runtimeDistribution"], jp+".runtimeDistribution", armadaDistributionFields...)
	minimum := r.duration(rd["minimum"], jp+".runtimeDistribution.minimum")
	tail := r.duration(rd["tailMean"], jp+".runtimeDistribution.tailMean")
	gang := r.integer(f["gangCardinality"], jp+".gangCardinality", 0, math.MaxUint32)
	label := r.str(f["gangNodeUniformityLabel"], jp+".gangNodeUniformityLabel")
	switch {
	case gang > 0:
		if label == "" {
			label = armadaClusterLabel
		}
		t.Gang = &sim.Gang{Cardinality: int(gang), NodeUniformityLabel: label}
		// Armada's simulator runs every job of a gang template for the
		// minimum: it sets the tail mean of gang templates to zero.
		tail = 0
	case label != "":
		r.add(jp+".gangNodeUniformityLabel", label, flotilla.ErrInconsistent, "set without gangCardinality")
	}
	if minimum > 0 {
		t.Runtime.Minimum = minimum.String()
	}
	if tail > 0 {
		t.Runtime.TailMean = tail.String()
	}

	if repeated {
		rp := r.object(f["repeat"], jp+".repeat", armadaRepeatFields...)
		times := r.integer(rp["numTimes"], jp+".repeat.numTimes", 0, math.MaxUint32)
		period := r.duration(rp["period"], jp+".repeat.period")
		switch {
		case times < 1:
			r.add(jp+".repeat.numTimes", fmt.Sprint(times), flotilla.ErrOutOfRange, "want at least 1 (Armada's rule)")
		case rp["period"] == nil || yamlNull(rp["period"]):
			r.add(jp+".repeat.period", "", flotilla.ErrRequired, "Armada's rule")
		case times == 1:
			// One submission: the template as it is.
		case period == 0:
			// Every repetition at once: one submission of them all.
			t.Count *= int(min(times, sim.MaxJobs))
		case len(deps) > 0 && afterDeps > est:
			// Armada submits repetition i at the later of
			// earliestSubmitTime + i·period and this, after the
			// dependencies: not evenly spaced.
			r.add(jp+".earliestSubmitTimeFromDependencyCompletion", afterDeps.String(), flotilla.ErrUnsupported,
				"with repeat and dependencies, only when it is at most earliestSubmitTime")
		default:
			// Armada's numTimes counts every submission; sim's, those
			// after the first.
			t.Repeat = &sim.Repeat{NumTimes: int(times - 1), Period: period.String()}
		}
	}
	return t, repeated, true
}

// requirements reads Armada's PodRequirements into t.
func (r *yamlReader) requirements(n *yaml.Node, p string, t *sim.JobTemplate) {
	f := r.object(n, p, armadaRequirementsFields...)
	if f == nil {
		return
	}
	t.NodeSelector = r.stringMap(f["nodeSelector"], p+".nodeSelector")
	if a := f["affinity"]; a != nil && !yamlNull(a) {
		r.add(p+".affinity", yamlValue(a), flotilla.ErrUnsupported, "Flotilla has node selectors and tolerations, not affinities")
	}
	for i, tn := range r.list(f["tolerations"], p+".tolerations") {
		tp := yamlIndex(p+".tolerations", i)
		tf := r.object(tn, tp, armadaTolerationFields...)
		if tf == nil {
			continue
		}
		// tolerationSeconds bounds how long a job stays on a node after a
		// NoExecute taint appears; a simulation's taints never change.
		r.integer(tf["tolerationSeconds"], tp+".tolerationSeconds", math.MinInt64, math.MaxInt64)
		t.Tolerations = append(t.Tolerations, sim.Toleration{
			Key: r.str(tf["key"], tp+".key"), Operator: r.str(tf["operator"], tp+".operator"),
			Value: r.str(tf["value"], tp+".value"), Effect: r.str(tf["effect"], tp+".effect"),
		})
	}
	for k := range r.stringMap(f["annotations"], p+".annotations") {
		// Other annotations are metadata; Armada's own steer scheduling.
		if strings.HasPrefix(k, "armadaproject.io/") {
			r.add(p+".annotations."+k, k, flotilla.ErrUnsupported, "Armada's own annotations are not read; use the template's fields (gangCardinality, …)")
		}
	}
	switch pp := r.str(f["preemptionPolicy"], p+".preemptionPolicy"); pp {
	case "", "PreemptLowerPriority", "Never":
		// Armada's simulator does not pass it on to the job: ignored.
	default:
		r.add(p+".preemptionPolicy", pp, flotilla.ErrUnknownName, "want PreemptLowerPriority or Never")
	}
	rr := r.object(f["resourceRequirements"], p+".resourceRequirements", armadaResourceFields...)
	if rr == nil {
		return
	}
	t.Requests = r.stringMap(rr["requests"], p+".resourceRequirements.requests")
	// Armada schedules by requests; limits are read (they must be a
	// mapping) and ignored.
	r.stringMap(rr["limits"], p+".resourceRequirements.limits")
	if c := rr["claims"]; c != nil && !yamlNull(c) {
		if items := r.list(c, p+".resourceRequirements.claims"); len(items) > 0 {
			r.add(p+".resourceRequirements.claims", yamlValue(c), flotilla.ErrUnsupported, "dynamic resource claims have no counterpart")
		}
	}
}

// ApplyPendingDelay adds a cluster file's pendingDelayDistribution (the
// time from lease to start, which Armada's simulator adds to every job's
// runtime) to w's runtimes. The sum of two shifted exponentials is one
// when at most one has a tail; a tail on both is refused at the cluster
// file's field.
func ApplyPendingDelay(w *sim.Workload, minimum, tail time.Duration) error {
	if minimum == 0 && tail == 0 {
		return nil
	}
	var errs []error
	for i := range w.JobTemplates {
		rt := &w.JobTemplates[i].Runtime
		m, _ := time.ParseDuration(orZero(rt.Minimum))
		tm, _ := time.ParseDuration(orZero(rt.TailMean))
		if tail > 0 && tm > 0 {
			errs = append(errs, flotilla.Errorf("pendingDelayDistribution.tailMean", tail.String(), flotilla.ErrUnsupported,
				"template %s has a runtime tail too; only one of the two may have a tail", w.JobTemplates[i].ID))
			continue
		}
		rt.Minimum = (m + minimum).String()
		if tail > 0 {
			rt.TailMean = tail.String()
		}
	}
	return errors.Join(errs...)
}

// orZero is s, or "0s" when empty.
func orZero(s string) string {
	if s == "" {
		return "0s"
	}
	return s
}
