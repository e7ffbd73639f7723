package sim

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/backend"
	"github.com/flotilla-sched/flotilla/internal/strictjson"
	"github.com/flotilla-sched/flotilla/submit"
	"github.com/flotilla-sched/flotilla/textform"
)

// Workload is what the simulation submits: queues and job templates.
type Workload struct {
	// Seed seeds the runtimes and arrival times drawn, and the service's
	// cycles; the same seed gives the same run.
	Seed uint64 `json:"seed,omitempty"`
	// Duration, when set, ends the simulation at that virtual time (a Go
	// duration, e.g. "4h"); absent means when every job has ended or
	// nothing can change any more.
	Duration string `json:"duration,omitempty"`
	// Groups are the inner nodes of the queue tree (docs/queue-tree.md): queues
	// and groups name them as parent. None, with no queue naming a parent
	// or giving a quota, is the flat model.
	Groups []GroupSpec `json:"groups,omitempty"`
	// Queues are created before anything is submitted; at least one.
	Queues []QueueSpec `json:"queues"`
	// UsageHalfLife turns on the queue tree's usage memory (docs/queue-tree.md
	// §8): a Go duration ≥ 0 such as "3h"; empty or 0 means off. It sets
	// the scheduler's Config.UsageHalfLife.
	UsageHalfLife string `json:"usageHalfLife,omitempty"`
	// UsageWeight is how far usage moves a weight (k ≥ 0); absent or 0
	// means 1. Only with usageHalfLife.
	UsageWeight float64 `json:"usageWeight,omitempty"`
	// JobTemplates are the jobs; at least one.
	JobTemplates []JobTemplate `json:"jobTemplates"`
}

// QueueSpec is a queue with its weight: its priority factor is 1/Weight.
type QueueSpec struct {
	// Name is required and unique.
	Name string `json:"name"`
	// Weight is positive; absent means 1.
	Weight *float64 `json:"weight,omitempty"`
	// Parent names the group the queue hangs from; empty means the root.
	Parent string `json:"parent,omitempty"`
	// Guaranteed, Limit and LendingLimit are the queue's quotas, as a
	// group's (GroupSpec).
	Guaranteed   flotilla.Quantities `json:"guaranteed,omitempty"`
	Limit        flotilla.Quantities `json:"limit,omitempty"`
	LendingLimit flotilla.Quantities `json:"lendingLimit,omitempty"`
	// Usage seeds the queue's decayed average share, in [0, 1], at the
	// simulation's start (Start), as a scenario file's queues[].usage
	// does at round 0: the history the run begins with (1: the queue held
	// the whole cluster lately). It matters only with usage memory on
	// (usageHalfLife here or in the scheduler's configuration); each pool
	// starts from it.
	Usage float64 `json:"usage,omitempty"`
}

// JobTemplate is Count jobs submitted together (or at Arrival.Rate), and
// again Repeat.NumTimes times.
type JobTemplate struct {
	// ID names the template (unique, required); dependencies refer to it.
	ID string `json:"id"`
	// Queue names a queue of the workload.
	Queue string `json:"queue"`
	// JobSet is the jobs' job set; empty means ID.
	JobSet string `json:"jobSet,omitempty"`
	// Count is how many jobs each submission makes, at least 1.
	Count int `json:"count"`
	// PriorityClass names a class of the scheduler's configuration; empty
	// means its default class.
	PriorityClass string `json:"priorityClass,omitempty"`
	// Priority orders the jobs within their queue and class: lower runs
	// first (Armada's queuePriority).
	Priority uint32 `json:"priority,omitempty"`
	// NodeSelector and Tolerations restrict the nodes the jobs may use, with
	// the library's rules (flotilla.Job).
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`
	Tolerations  []Toleration      `json:"tolerations,omitempty"`
	// Requests maps resource name to quantity; required and non-empty,
	// every name a resource of the cluster file.
	Requests flotilla.Quantities `json:"requests"`
	// Gang, when set, groups the jobs in gangs of Cardinality (which
	// divides Count); a gang arrives whole.
	Gang *Gang `json:"gang,omitempty"`
	// Pools names the pools whose clusters (Cluster.Pool) may run the
	// jobs, each once (docs/submit-file.md's job template pools); absent accepts
	// every pool.
	Pools []string `json:"pools,omitempty"`
	// Arrival says when the jobs are submitted.
	Arrival Arrival `json:"arrival,omitempty"`
	// Runtime is how long each job runs once leased.
	Runtime Runtime `json:"runtime"`
	// Repeat, when set, submits the template again.
	Repeat *Repeat `json:"repeat,omitempty"`
}

// Gang is a gang's size.
type Gang struct {
	// Cardinality is at least 1.
	Cardinality int `json:"cardinality"`
	// NodeUniformityLabel, when set, places each gang on nodes sharing one
	// value of this label.
	NodeUniformityLabel string `json:"nodeUniformityLabel,omitempty"`
	// Topology, when set, places each gang in one domain of a level of a
	// topology of the scheduler's configuration (the config file's
	// topologies: docs/scenarios.md); not with NodeUniformityLabel.
	Topology *GangTopology `json:"topology,omitempty"`
}

// GangTopology is a gang's topology request (flotilla.GangTopology): the
// topology's name (empty: the one named "default", else the first
// configured) and the level label keys it requires or prefers, at least
// one.
type GangTopology = submit.GangTopologySpec

// Toleration lets a template's jobs onto tainted nodes: Operator is
// "Equal" (default) or "Exists"; an empty Key needs Exists, Exists takes
// no Value; an empty Effect matches every effect.
type Toleration = textform.Toleration

// Arrival is when a template's jobs are submitted.
type Arrival struct {
	// At is the virtual time of the first submission (a Go duration; absent
	// means 0), counted from the start, or from when the last template of
	// After ended.
	At string `json:"at,omitempty"`
	// Rate, when positive, submits the jobs (gangs) one at a time as a
	// Poisson process of that many per virtual second from At; 0 submits
	// all of them at At.
	Rate float64 `json:"rate,omitempty"`
	// After names templates whose jobs must all have ended (every
	// repetition) before this template starts.
	After []string `json:"after,omitempty"`
}

// Runtime is Armada's shifted exponential distribution: Minimum plus an
// exponentially distributed tail of mean TailMean (both Go durations;
// absent means 0).
type Runtime struct {
	Minimum  string `json:"minimum,omitempty"`
	TailMean string `json:"tailMean,omitempty"`
}

// Repeat submits a template NumTimes more times, each Period after the
// previous submission started.
type Repeat struct {
	// NumTimes is at least 1.
	NumTimes int `json:"numTimes"`
	// Period is a positive Go duration.
	Period string `json:"period"`
}

// Clusters is the cluster file: each cluster gets one fake executor.
type Clusters struct {
	// Clusters are at least one, with unique names.
	Clusters []Cluster `json:"clusters"`
}

// Cluster is one executor's nodes.
type Cluster struct {
	// Name is required and unique.
	Name string `json:"name"`
	// Nodes are docs/scenarios.md's node templates; at least one node in all.
	Nodes []NodeTemplate `json:"nodes"`
	// Pool is the cluster's pool (`executor -pool`); empty is the default
	// pool. Each pool has its own fair shares and cycle.
	Pool string `json:"pool,omitempty"`
}

// Pools counts the distinct pools of the clusters.
func (c *Clusters) Pools() int { return len(c.poolNames()) }

// poolNames are the distinct pools of the clusters, in the order they
// first appear (backend.DefaultPool for a cluster that names none).
func (c *Clusters) poolNames() []string {
	var names []string
	seen := map[string]bool{}
	for _, cl := range c.Clusters {
		p := cl.Pool
		if p == "" {
			p = backend.DefaultPool
		}
		if !seen[p] {
			seen[p] = true
			names = append(names, p)
		}
	}
	return names
}

// NodeTemplate is docs/scenarios.md's node form: Count nodes named
// <name>-0 … <name>-(Count-1), or one named Name when Count is absent.
type NodeTemplate struct {
	Name          string              `json:"name"`
	Count         *int                `json:"count,omitempty"`
	Resources     flotilla.Quantities `json:"resources"`
	Labels        map[string]string   `json:"labels,omitempty"`
	Unschedulable bool                `json:"unschedulable,omitempty"`
	Taints        []Taint             `json:"taints,omitempty"`
}

// Taint repels jobs that do not tolerate it; Key and Effect are required.
type Taint = textform.Taint

// Limits keep a file from asking for more than a run can hold.
const (
	// MaxJobs bounds the jobs of a workload, repetitions included.
	MaxJobs = 10_000_000
	// MaxNodes bounds the nodes of a cluster file.
	MaxNodes = 100_000
)

// ParseWorkload decodes a workload file strictly (see package strictjson)
// and checks it (Validate); every problem is a *flotilla.FieldError at
// its JSON path, all joined.
func ParseWorkload(data []byte) (*Workload, error) {
	var w Workload
	err := strictjson.Decode(data, &w)
	if strictjson.Fatal(err) {
		return nil, err
	}
	if err = strictjson.Merge(err, w.Validate()); err != nil {
		return nil, err
	}
	return &w, nil
}

// ParseClusters decodes a cluster file strictly and checks it (Validate).
func ParseClusters(data []byte) (*Clusters, error) {
	var c Clusters
	err := strictjson.Decode(data, &c)
	if strictjson.Fatal(err) {
		return nil, err
	}
	if err = strictjson.Merge(err, c.Validate()); err != nil {
		return nil, err
	}
	return &c, nil
}

// duration parses an optional non-negative Go duration at field.
func duration(errs *[]error, field, s string) time.Duration {
	if s == "" {
		return 0
	}
	d, err := time.ParseDuration(s)
	switch {
	case err != nil:
		*errs = append(*errs, flotilla.Errorf(field, s, flotilla.ErrMalformed, "want a duration such as 90s or 1h30m"))
	case d < 0:
		*errs = append(*errs, flotilla.Errorf(field, s, flotilla.ErrNegative, ""))
	}
	return d
}

// Validate reports every problem of w that needs no cluster file: names,
// counts, durations, gangs, dependencies (unknown or cyclic) and the queue
// tree (fairness.NewTree's rules: parents, cycles, names unique across
// groups and queues, quotas against each other, the usage settings).
// Resource names and priority classes are checked by Run against the
// clusters and the scheduler's configuration.
func (w *Workload) Validate() error {
	var errs []error
	duration(&errs, "duration", w.Duration)
	duration(&errs, "usageHalfLife", w.UsageHalfLife)
	for i, g := range w.Groups {
		if g.Weight != nil && !(*g.Weight > 0 && !math.IsInf(*g.Weight, 1)) {
			errs = append(errs, flotilla.Errorf(fmt.Sprintf("groups[%d].weight", i), fmt.Sprint(*g.Weight), flotilla.ErrOutOfRange, "want a positive finite weight"))
		}
	}
	if len(w.Queues) == 0 {
		errs = append(errs, flotilla.Errorf("queues", "", flotilla.ErrRequired, "at least one queue"))
	}
	queues := map[string]bool{}
	for i, q := range w.Queues {
		f := fmt.Sprintf("queues[%d]", i)
		switch {
		case q.Name == "":
			errs = append(errs, flotilla.Errorf(f+".name", "", flotilla.ErrRequired, ""))
		case queues[q.Name]:
			errs = append(errs, flotilla.Errorf(f+".name", q.Name, flotilla.ErrDuplicate, ""))
		}
		queues[q.Name] = true
		if q.Weight != nil && !(*q.Weight > 0 && !math.IsInf(*q.Weight, 1)) {
			errs = append(errs, flotilla.Errorf(f+".weight", fmt.Sprint(*q.Weight), flotilla.ErrOutOfRange, "want a positive finite weight"))
		}
	}
	if len(w.JobTemplates) == 0 {
		errs = append(errs, flotilla.Errorf("jobTemplates", "", flotilla.ErrRequired, "at least one job template"))
	}
	ids := map[string]int{}
	for i, t := range w.JobTemplates {
		if t.ID == "" {
			continue
		}
		if _, dup := ids[t.ID]; dup {
			errs = append(errs, flotilla.Errorf(fmt.Sprintf("jobTemplates[%d].id", i), t.ID, flotilla.ErrDuplicate, ""))
			continue
		}
		ids[t.ID] = i
	}
	total := 0
	for i, t := range w.JobTemplates {
		f := fmt.Sprintf("jobTemplates[%d]", i)
		if t.ID == "" {
			errs = append(errs, flotilla.Errorf(f+".id", "", flotilla.ErrRequired, ""))
		}
		switch {
		case t.Queue == "":
			errs = append(errs, flotilla.Errorf(f+".queue", "", flotilla.ErrRequired, ""))
		case !queues[t.Queue]:
			errs = append(errs, flotilla.Errorf(f+".queue", t.Queue, flotilla.ErrUnknownName, "not a queue of the workload"))
		}
		if t.Count < 1 || t.Count > MaxJobs {
			errs = append(errs, flotilla.Errorf(f+".count", fmt.Sprint(t.Count), flotilla.ErrOutOfRange, "want 1 to %d", MaxJobs))
		}
		if len(t.Requests) == 0 {
			errs = append(errs, flotilla.Errorf(f+".requests", "", flotilla.ErrRequired, "at least one resource"))
		}
		if t.Gang != nil {
			switch {
			case t.Gang.Cardinality < 1:
				errs = append(errs, flotilla.Errorf(f+".gang.cardinality", fmt.Sprint(t.Gang.Cardinality), flotilla.ErrOutOfRange, "want at least 1"))
			case t.Count >= 1 && t.Count%t.Gang.Cardinality != 0:
				errs = append(errs, flotilla.Errorf(f+".gang.cardinality", fmt.Sprint(t.Gang.Cardinality), flotilla.ErrInconsistent, "does not divide count %d", t.Count))
			}
		}
		if t.Gang != nil && t.Gang.Topology != nil {
			tp := t.Gang.Topology
			gt := flotilla.GangTopology{Required: tp.Required, Preferred: tp.Preferred}
			for _, err := range gt.LevelProblems(f+".gang.topology", t.Gang.NodeUniformityLabel) {
				errs = append(errs, err)
			}
		}
		if t.Pools != nil {
			errs = append(errs, checkPools(f+".pools", t.Pools)...)
		}
		errs = append(errs, t.placement(f)...)
		duration(&errs, f+".arrival.at", t.Arrival.At)
		if !(t.Arrival.Rate >= 0 && !math.IsInf(t.Arrival.Rate, 1)) {
			errs = append(errs, flotilla.Errorf(f+".arrival.rate", fmt.Sprint(t.Arrival.Rate), flotilla.ErrOutOfRange, "want a finite rate ≥ 0 per second"))
		}
		for k, dep := range t.Arrival.After {
			if _, ok := ids[dep]; !ok {
				errs = append(errs, flotilla.Errorf(fmt.Sprintf("%s.arrival.after[%d]", f, k), dep, flotilla.ErrUnknownName, "not a job template id"))
			}
		}
		duration(&errs, f+".runtime.minimum", t.Runtime.Minimum)
		duration(&errs, f+".runtime.tailMean", t.Runtime.TailMean)
		times := 1
		if t.Repeat != nil {
			if t.Repeat.NumTimes < 1 || t.Repeat.NumTimes > MaxJobs {
				errs = append(errs, flotilla.Errorf(f+".repeat.numTimes", fmt.Sprint(t.Repeat.NumTimes), flotilla.ErrOutOfRange, "want 1 to %d", MaxJobs))
			} else {
				times += t.Repeat.NumTimes
			}
			if t.Repeat.Period == "" {
				errs = append(errs, flotilla.Errorf(f+".repeat.period", "", flotilla.ErrRequired, ""))
			} else if d, err := time.ParseDuration(t.Repeat.Period); err == nil && d == 0 {
				errs = append(errs, flotilla.Errorf(f+".repeat.period", t.Repeat.Period, flotilla.ErrOutOfRange, "want a positive duration"))
			} else {
				duration(&errs, f+".repeat.period", t.Repeat.Period)
			}
		}
		if t.Count >= 1 && t.Count <= MaxJobs {
			total += t.Count * times
		}
	}
	if total > MaxJobs {
		errs = append(errs, flotilla.Errorf("jobTemplates", fmt.Sprint(total), flotilla.ErrOutOfRange, "%d jobs with repetitions; at most %d", total, MaxJobs))
	}
	errs = append(errs, w.cycles(ids)...)
	reported := map[string]bool{}
	for _, e := range errs {
		var fe *flotilla.FieldError
		if errors.As(e, &fe) {
			reported[fe.Field] = true
		}
	}
	_, _, treeErrs := w.tree(w.quotaSchema(), reported)
	errs = append(errs, treeErrs...)
	return errors.Join(errs...)
}

// checkPools reports the problems of a template's pools (non-nil) at
// field: none named, a name that is not a pool name, one named twice.
func checkPools(field string, pools []string) []error {
	if len(pools) == 0 {
		return []error{flotilla.Errorf(field, "[]", flotilla.ErrRequired, "name at least one pool, or leave pools out to accept every pool")}
	}
	var errs []error
	seen := map[string]bool{}
	for i, p := range pools {
		f := fmt.Sprintf("%s[%d]", field, i)
		if err := submit.CheckPool(f, p); err != nil {
			errs = append(errs, err)
		} else if seen[p] {
			errs = append(errs, flotilla.Errorf(f, p, flotilla.ErrDuplicate, "a pool is named once"))
		}
		seen[p] = true
	}
	return errs
}

// placement reports the problems of t's node selector and tolerations,
// judged by flotilla.Job's rules, at the template's paths (f is the
// template's path).
func (t *JobTemplate) placement(f string) []error {
	if len(t.NodeSelector) == 0 && len(t.Tolerations) == 0 {
		return nil
	}
	tols := make([]flotilla.Toleration, len(t.Tolerations))
	for i, tol := range t.Tolerations {
		tols[i] = tol.Flotilla() // as written: Job.Validate names an empty operator ""
	}
	// A one-resource prototype job: only its selector and tolerations can
	// be wrong.
	schema, err := flotilla.NewResourceSchema("cpu")
	if err != nil {
		return []error{err}
	}
	proto := &flotilla.Job{ID: "t", Queue: "q", Requests: schema.Zero(), NodeSelector: t.NodeSelector, Tolerations: tols}
	const prefix = `job "t".`
	return flotilla.Problems(flotilla.RenameFields(proto.Validate(schema), func(field string) string {
		if len(field) > len(prefix) && field[:len(prefix)] == prefix {
			return f + "." + field[len(prefix):]
		}
		return f + "." + field
	}))
}

// cycles reports templates that depend on themselves through After: those
// from which a cycle of After can be reached. One depth-first search
// remembers each template's answer, so the cost is linear in templates
// and dependencies.
func (w *Workload) cycles(ids map[string]int) []error {
	const (
		unseen = iota
		open
		closed
	)
	mark := make([]int, len(w.JobTemplates))
	reaches := make([]bool, len(w.JobTemplates)) // of closed templates
	var errs []error
	var visit func(i int) bool
	visit = func(i int) bool {
		switch mark[i] {
		case open:
			return true
		case closed:
			return reaches[i]
		}
		mark[i] = open
		cyclic := false
		for _, dep := range w.JobTemplates[i].Arrival.After {
			if j, ok := ids[dep]; ok && visit(j) {
				cyclic = true
			}
		}
		mark[i], reaches[i] = closed, cyclic
		return cyclic
	}
	for i, t := range w.JobTemplates {
		if ids[t.ID] != i {
			continue
		}
		if visit(i) {
			errs = append(errs, flotilla.Errorf(fmt.Sprintf("jobTemplates[%d].arrival.after", i), t.ID, flotilla.ErrInconsistent, "the template depends on itself"))
		}
	}
	return errs
}

// Validate reports every problem of c that needs no workload: names,
// counts, resources (each quantity must parse), taints.
func (c *Clusters) Validate() error {
	var errs []error
	if len(c.Clusters) == 0 {
		errs = append(errs, flotilla.Errorf("clusters", "", flotilla.ErrRequired, "at least one cluster"))
	}
	names := map[string]bool{}
	nodeNames := map[string]bool{}
	total := 0
	schema := c.schema()
	for i, cl := range c.Clusters {
		f := fmt.Sprintf("clusters[%d]", i)
		switch {
		case cl.Name == "":
			errs = append(errs, flotilla.Errorf(f+".name", "", flotilla.ErrRequired, ""))
		case names[cl.Name]:
			errs = append(errs, flotilla.Errorf(f+".name", cl.Name, flotilla.ErrDuplicate, ""))
		}
		names[cl.Name] = true
		if cl.Pool != "" {
			if err := submit.CheckPool(f+".pool", cl.Pool); err != nil {
				errs = append(errs, err)
			}
		}
		if len(cl.Nodes) == 0 {
			errs = append(errs, flotilla.Errorf(f+".nodes", "", flotilla.ErrRequired, "at least one node template"))
		}
		for k, n := range cl.Nodes {
			nf := fmt.Sprintf("%s.nodes[%d]", f, k)
			if n.Name == "" {
				errs = append(errs, flotilla.Errorf(nf+".name", "", flotilla.ErrRequired, ""))
			}
			if n.Count != nil && (*n.Count < 0 || *n.Count > MaxNodes) {
				errs = append(errs, flotilla.Errorf(nf+".count", fmt.Sprint(*n.Count), flotilla.ErrOutOfRange, "want 0 to %d", MaxNodes))
			} else if n.Name != "" {
				for _, name := range n.names() {
					if nodeNames[name] {
						errs = append(errs, flotilla.Errorf(nf+".name", name, flotilla.ErrDuplicate, "node %q is named twice", name))
						break
					}
					nodeNames[name] = true
				}
				total += len(n.names())
			}
			if len(n.Resources) == 0 {
				errs = append(errs, flotilla.Errorf(nf+".resources", "", flotilla.ErrRequired, ""))
			} else if schema != nil {
				if _, err := schema.Parse(nf+".resources", n.Resources); err != nil {
					errs = append(errs, err)
				}
			}
			for t, taint := range n.Taints {
				if taint.Key == "" {
					errs = append(errs, flotilla.Errorf(fmt.Sprintf("%s.taints[%d].key", nf, t), "", flotilla.ErrRequired, ""))
				}
				if taint.Effect == "" {
					errs = append(errs, flotilla.Errorf(fmt.Sprintf("%s.taints[%d].effect", nf, t), "", flotilla.ErrRequired, ""))
				}
			}
		}
	}
	if total > MaxNodes {
		errs = append(errs, flotilla.Errorf("clusters", fmt.Sprint(total), flotilla.ErrOutOfRange, "%d nodes; at most %d", total, MaxNodes))
	}
	return errors.Join(errs...)
}

// names are the template's node names.
func (n *NodeTemplate) names() []string {
	if n.Count == nil {
		return []string{n.Name}
	}
	out := make([]string, *n.Count)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%d", n.Name, i)
	}
	return out
}

// schema is the resource schema of the clusters: every resource a node
// names, sorted; nil when a name is empty or there are none.
func (c *Clusters) schema() *flotilla.ResourceSchema {
	seen := map[string]bool{}
	var names []string
	for _, cl := range c.Clusters {
		for _, n := range cl.Nodes {
			for r := range n.Resources {
				if !seen[r] {
					seen[r] = true
					names = append(names, r)
				}
			}
		}
	}
	sort.Strings(names)
	s, err := flotilla.NewResourceSchema(names...)
	if err != nil {
		return nil
	}
	return s
}
