package flotilla

import (
	"errors"
	"fmt"
	"math"
	"strconv"
)

// The validators in this file report every problem they find at once: the
// result is nil or an errors.Join of *FieldError values, each naming the
// offending field with a path such as
//
//	job "a-1".requests.cpu
//	node "n-3".taints[0].effect
//	queue "A".priorityFactor
//	priorityClass "armada-default".maximumResourceFractionPerQueue.cpu
//
// Problems are reported in a deterministic order (fields in declaration
// order, map entries by sorted key), so messages are stable across runs.
// Every error satisfies errors.Is with one of the sentinels of errors.go.

// Validate checks a job against the resource schema of the scheduler that
// will run it: ID and Queue are required; Requests has exactly schema.Len()
// entries, none negative; a gang member (Gang.ID set) has Cardinality ≥ 1,
// and a job outside a gang has Cardinality 0, no NodeUniformityLabel and no
// Topology; a gang Topology names a required or a preferred level and comes
// without a NodeUniformityLabel (ResolveTopology checks it against the
// configured topologies);
// node-selector keys are non-empty; every toleration has an operator of ""
// (Equal), Equal or Exists, no value with Exists, an empty key only with
// Exists (as Kubernetes requires), and an effect of "" (all), NoSchedule,
// PreferNoSchedule or NoExecute; every AvoidClusters entry names a cluster
// (the default cluster "" cannot be avoided). An AvoidClusters entry naming
// no cluster the scheduler knows, or repeating another, is valid: it
// changes nothing.
//
// Validate does not check that PriorityClass names a configured class, nor
// that gang members agree with each other: those need more than one job or
// the scheduler's configuration.
func (j *Job) Validate(schema *ResourceSchema) error {
	if j == nil {
		return errors.Join(Errorf("job", "", ErrRequired, "nil job"))
	}
	if j.valid(schema) {
		return nil
	}
	return j.report(schema)
}

// report is the full check behind Validate, naming every problem.
func (j *Job) report(schema *ResourceSchema) error {
	var v validator
	p := fmt.Sprintf("job %q", j.ID)
	v.required(p+".id", j.ID)
	v.required(p+".queue", j.Queue)
	v.resources(p+".requests", j.Requests, schema)
	if j.Gang.ID != "" {
		if j.Gang.Cardinality < 1 {
			v.add(Errorf(p+".gang.cardinality", strconv.Itoa(j.Gang.Cardinality), ErrOutOfRange, "a gang has at least 1 member"))
		}
	} else {
		if j.Gang.Cardinality != 0 {
			v.add(Errorf(p+".gang.cardinality", strconv.Itoa(j.Gang.Cardinality), ErrInconsistent, "set without gang.id"))
		}
		if j.Gang.NodeUniformityLabel != "" {
			v.add(Errorf(p+".gang.nodeUniformityLabel", j.Gang.NodeUniformityLabel, ErrInconsistent, "set without gang.id"))
		}
		if !j.Gang.Topology.IsZero() {
			for _, err := range j.Gang.Topology.Problems(p+".gang.topology", ErrInconsistent, "set without gang.id") {
				v.add(err)
			}
		}
	}
	if t := j.Gang.Topology; !t.IsZero() {
		for _, err := range t.LevelProblems(p+".gang.topology", j.Gang.NodeUniformityLabel) {
			v.add(err)
		}
	}
	if _, empty := j.NodeSelector[""]; empty {
		v.add(Errorf(p+".nodeSelector", "", ErrRequired, "label key must not be empty"))
	}
	validateAffinity(&v, p, j.NodeAffinity)
	for i, t := range j.Tolerations {
		tp := fmt.Sprintf("%s.tolerations[%d]", p, i)
		switch t.Operator {
		case "", TolerationEqual:
			if t.Key == "" {
				v.add(Errorf(tp+".operator", string(t.Operator), ErrInconsistent, "an empty key needs operator Exists"))
			}
		case TolerationExists:
			if t.Value != "" {
				v.add(Errorf(tp+".value", t.Value, ErrInconsistent, "operator Exists takes no value"))
			}
		default:
			v.add(Errorf(tp+".operator", string(t.Operator), ErrUnknownName, "want Equal or Exists"))
		}
		switch t.Effect {
		case "", TaintNoSchedule, TaintPreferNoSchedule, TaintNoExecute:
		default:
			v.add(Errorf(tp+".effect", string(t.Effect), ErrUnknownName, "want empty (all), NoSchedule, PreferNoSchedule or NoExecute"))
		}
	}
	for i, c := range j.AvoidClusters {
		if c == "" {
			v.add(Errorf(fmt.Sprintf("%s.avoidClusters[%d]", p, i), "", ErrRequired, "a cluster name; the default cluster \"\" cannot be avoided"))
		}
	}
	for i, n := range j.AvoidNodes {
		if n == "" {
			v.add(Errorf(fmt.Sprintf("%s.avoidNodes[%d]", p, i), "", ErrRequired, "a node name"))
		}
	}
	return v.err()
}

// valid is Validate's answer without the report: it allocates nothing, so
// a scheduler can check every running job on each cycle. It must accept
// exactly what Validate accepts (a property test holds them together).
func (j *Job) valid(schema *ResourceSchema) bool {
	if schema == nil || j.ID == "" || j.Queue == "" || len(j.Requests) != schema.Len() || j.Requests.AnyNegative() {
		return false
	}
	if j.Gang.ID != "" {
		if j.Gang.Cardinality < 1 {
			return false
		}
	} else if j.Gang.Cardinality != 0 || j.Gang.NodeUniformityLabel != "" || !j.Gang.Topology.IsZero() {
		return false
	}
	if t := j.Gang.Topology; !t.IsZero() && ((t.Required == "" && t.Preferred == "") || j.Gang.NodeUniformityLabel != "") {
		return false
	}
	if _, empty := j.NodeSelector[""]; empty {
		return false
	}
	if !affinityValid(j.NodeAffinity) {
		return false
	}
	for _, t := range j.Tolerations {
		switch t.Operator {
		case "", TolerationEqual:
			if t.Key == "" {
				return false
			}
		case TolerationExists:
			if t.Value != "" {
				return false
			}
		default:
			return false
		}
		switch t.Effect {
		case "", TaintNoSchedule, TaintPreferNoSchedule, TaintNoExecute:
		default:
			return false
		}
	}
	for _, c := range j.AvoidClusters {
		if c == "" {
			return false
		}
	}
	for _, n := range j.AvoidNodes {
		if n == "" {
			return false
		}
	}
	return true
}

// Validate checks a node against the resource schema: Name is required;
// Total has exactly schema.Len() entries, none negative; label keys are
// non-empty; every taint has a key and an effect of NoSchedule,
// PreferNoSchedule or NoExecute (a taint's effect may not be empty).
func (n *Node) Validate(schema *ResourceSchema) error {
	if n == nil {
		return errors.Join(Errorf("node", "", ErrRequired, "nil node"))
	}
	if n.valid(schema) {
		return nil
	}
	return n.report(schema)
}

// report is Validate's full check, naming every problem.
func (n *Node) report(schema *ResourceSchema) error {
	var v validator
	p := fmt.Sprintf("node %q", n.Name)
	v.required(p+".name", n.Name)
	v.resources(p+".total", n.Total, schema)
	if _, empty := n.Labels[""]; empty {
		v.add(Errorf(p+".labels", "", ErrRequired, "label key must not be empty"))
	}
	for i, t := range n.Taints {
		tp := fmt.Sprintf("%s.taints[%d]", p, i)
		v.required(tp+".key", t.Key)
		switch t.Effect {
		case TaintNoSchedule, TaintPreferNoSchedule, TaintNoExecute:
		case "":
			v.add(Errorf(tp+".effect", "", ErrRequired, "want NoSchedule, PreferNoSchedule or NoExecute"))
		default:
			v.add(Errorf(tp+".effect", string(t.Effect), ErrUnknownName, "want NoSchedule, PreferNoSchedule or NoExecute"))
		}
	}
	return v.err()
}

// valid is Node.Validate's answer without the report: it allocates
// nothing, so a scheduler can check every node on each cycle. It must
// accept exactly what Validate accepts (a property test holds them
// together).
func (n *Node) valid(schema *ResourceSchema) bool {
	if schema == nil || n.Name == "" || len(n.Total) != schema.Len() || n.Total.AnyNegative() {
		return false
	}
	if _, empty := n.Labels[""]; empty {
		return false
	}
	for _, t := range n.Taints {
		if t.Key == "" {
			return false
		}
		switch t.Effect {
		case TaintNoSchedule, TaintPreferNoSchedule, TaintNoExecute:
		default:
			return false
		}
	}
	return true
}

// MinPriorityFactor is the smallest priority factor a queue may have (0
// aside, which means 1). A queue's weight is 1/PriorityFactor, so weights
// are at most 1e6 and the sum of the weights of any number of queues a
// program can hold stays finite; below it 1/f grows toward +Inf (1e-310
// already gives +Inf), and fair shares computed from such weights are NaN
// or 0.
const MinPriorityFactor = 1e-6

// Validate checks a queue: Name is required; PriorityFactor is finite and
// either 0 (meaning 1) or at least MinPriorityFactor, so that its weight
// 1/PriorityFactor is finite and the sum of all queues' weights cannot
// overflow; every LimitsByPriorityClass entry has a
// non-empty class and resource name and a fraction in [0, 1]. Class names
// are checked against the configuration by the scheduler, not here; a
// resource name no node has is a resource of capacity 0, on which a cap is
// harmless.
func (q *Queue) Validate() error {
	if q == nil {
		return errors.Join(Errorf("queue", "", ErrRequired, "nil queue"))
	}
	var v validator
	p := fmt.Sprintf("queue %q", q.Name)
	v.required(p+".name", q.Name)
	f := q.PriorityFactor
	switch {
	case math.IsNaN(f) || math.IsInf(f, 0):
		v.add(Errorf(p+".priorityFactor", formatFloat(f), ErrOutOfRange, "must be finite"))
	case f < 0:
		v.add(Errorf(p+".priorityFactor", formatFloat(f), ErrNegative, ""))
	case f != 0 && f < MinPriorityFactor:
		v.add(Errorf(p+".priorityFactor", formatFloat(f), ErrOutOfRange,
			"want 0 (meaning 1) or at least %g, so that the weight 1/factor stays finite", MinPriorityFactor))
	}
	for _, class := range sortedKeys(q.LimitsByPriorityClass) {
		cp := keyPath(p+".limitsByPriorityClass", class)
		if class == "" {
			v.add(Errorf(p+".limitsByPriorityClass", "", ErrRequired, "priority class name must not be empty"))
		}
		v.fractions(cp, q.LimitsByPriorityClass[class])
	}
	return v.err()
}

// Validate checks a priority class: Name is required; every
// MaximumResourceFractionPerQueue entry has a non-empty resource name and a
// fraction in [0, 1]. Any Priority but math.MinInt32 (reserved: the
// scheduler holds evicted jobs' capacity below every class) is valid.
func (pc *PriorityClass) Validate() error {
	if pc == nil {
		return errors.Join(Errorf("priorityClass", "", ErrRequired, "nil priority class"))
	}
	var v validator
	p := fmt.Sprintf("priorityClass %q", pc.Name)
	v.required(p+".name", pc.Name)
	if pc.Priority == math.MinInt32 {
		v.add(Errorf(p+".priority", strconv.Itoa(int(pc.Priority)), ErrOutOfRange, "reserved for evicted jobs"))
	}
	v.fractions(p+".maximumResourceFractionPerQueue", pc.MaximumResourceFractionPerQueue)
	return v.err()
}

// validator accumulates problems.
type validator struct{ errs []error }

func (v *validator) add(err *FieldError) { v.errs = append(v.errs, err) }

func (v *validator) err() error { return errors.Join(v.errs...) }

func (v *validator) required(field, value string) {
	if value == "" {
		v.add(Errorf(field, "", ErrRequired, ""))
	}
}

// resources checks a vector's length against the schema and its entries for
// negatives; entries are named by resource (field.cpu).
func (v *validator) resources(field string, r Resources, schema *ResourceSchema) {
	if schema == nil {
		v.add(Errorf(field, "", ErrRequired, "no resource schema to check against"))
		return
	}
	if len(r) != schema.Len() {
		if len(r) == 0 {
			v.add(Errorf(field, "", ErrRequired, "want %d resources", schema.Len()))
		} else {
			v.add(Errorf(field, strconv.Itoa(len(r)), ErrInconsistent, "has %d resources, schema has %d", len(r), schema.Len()))
		}
		return
	}
	for i, x := range r {
		if x < 0 {
			v.add(Errorf(field+"."+schema.Name(i), schema.Quantity(i, x), ErrNegative, ""))
		}
	}
}

// fractions checks a resource-name → fraction map: names non-empty,
// fractions in [0, 1].
func (v *validator) fractions(field string, m map[string]float64) {
	for _, name := range sortedKeys(m) {
		f := m[name]
		if name == "" {
			v.add(Errorf(field, "", ErrRequired, "resource name must not be empty"))
		}
		if !(f >= 0 && f <= 1) { // also catches NaN
			v.add(Errorf(keyPath(field, name), formatFloat(f), ErrOutOfRange, "want a fraction in [0, 1]"))
		}
	}
}

// keyPath appends a map key to a field path; an empty key is written "",
// so that a problem under it has a path of its own (limitsByPriorityClass."".cpu,
// not limitsByPriorityClass..cpu).
func keyPath(field, key string) string {
	if key == "" {
		key = `""`
	}
	return field + "." + key
}

func formatFloat(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }
