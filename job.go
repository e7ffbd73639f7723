package flotilla

import (
	"fmt"
	"math"
	"time"
)

// Job is one unit of work waiting for, or holding, a place on a node.
//
// Within a queue, jobs are ordered: evicted jobs first; then priority-class
// priority, higher first; then Priority, LOWER number first (Armada's
// convention: priority 1 runs before priority 10); then, for evicted jobs, the
// earliest start; then submit time; then ID.
type Job struct {
	ID     string
	Queue  string
	JobSet string
	// PriorityClass names a configured class; empty means the scheduler's
	// default class.
	PriorityClass string
	// Priority orders jobs within a queue and class: lower runs first.
	Priority   uint32
	SubmitTime time.Time
	// Requests is what the job needs, in the scheduler's ResourceSchema.
	Requests     Resources
	NodeSelector map[string]string
	// NodeAffinity is a required node affinity: the job goes only to a
	// node matching one of the terms (AffinityMatches), together with
	// NodeSelector and the tolerations. Nil means any node.
	NodeAffinity []NodeSelectorTerm
	Tolerations  []Toleration
	Gang         Gang
	// AvoidClusters names clusters (Node.Cluster) the job should not be
	// placed in (a service lists those where the job's lease expired or was
	// returned). It is a preference, not a constraint: the scheduler places
	// the job in an avoided cluster only when no node of any other cluster
	// can take it in that cycle, by any search the job may make: free
	// capacity, capacity evicted jobs hold, and, for a class that may
	// preempt, capacity lower-priority preemptible jobs hold (such a job
	// preempts in another cluster rather than take free room in an avoided
	// one). A gang avoids every cluster any member avoids. The list is a
	// set (order and repeats do not matter); a name no node carries changes
	// nothing; the default cluster "" cannot be listed (Validate rejects
	// it). Nil means no preference.
	//
	// A search outside the avoided clusters that found nothing is
	// remembered for the rest of the cycle by scheduling key, which covers
	// this list, as failures are: a job with the same requirements and
	// avoided clusters goes straight to every node, even if a preemption
	// later in the cycle freed room elsewhere.
	AvoidClusters []string
	// AvoidNodes names nodes (Node.Name) the job should not be placed on: a
	// service lists the node where its last run failed (a retry policy's
	// avoidSameNode). A preference, as AvoidClusters is and together with
	// it: the job goes to an avoided node only when no other node can take
	// it in that cycle by any search it may make. A gang avoids every node
	// any member avoids. A set; a name no node carries changes nothing; ""
	// cannot be listed. Nil means no preference.
	AvoidNodes []string
}

// Gang groups jobs that must be placed all together or not at all. The zero
// value means the job is not part of a gang.
type Gang struct {
	// ID is shared by every member; it must never be reused.
	ID string
	// Cardinality is the number of members; every member carries the same.
	Cardinality int
	// NodeUniformityLabel, when set, requires all members on nodes sharing
	// one value of this label: a one-level Topology.Required.
	NodeUniformityLabel string
	// Topology places the gang in a domain of a configured Topology. The
	// zero value means no topology (today's placement). A gang cannot have
	// both a Topology and a NodeUniformityLabel.
	Topology GangTopology
}

// GangTopology is a gang's request to be placed close together in a
// configured Topology (a hierarchy of node labels, scheduler.Config's
// Topologies).
//
// Required names a level: every member lands in one domain of it, or the
// gang is not placed. Preferred names a level: the gang goes to the
// innermost level, at or below Preferred, where one domain holds it whole;
// failing that, to the next level up, and so on (never above Required when
// both are set); failing every level, it is placed as a gang without a
// topology. When both are set, Preferred must be Required or a level below
// it. Levels are named by their full label key.
type GangTopology struct {
	// Name names the topology; "" means the one named "default", else the
	// first configured.
	Name string
	// Required and Preferred are level label keys of the topology; at
	// least one is set when Name is.
	Required, Preferred string
}

// IsZero reports whether the gang asks for no topology.
func (t GangTopology) IsZero() bool { return t == GangTopology{} }

// Fields are t's fields by the names the files and the API give them,
// with their values: name, required, preferred.
func (t GangTopology) Fields() [3][2]string {
	return [3][2]string{{"name", t.Name}, {"required", t.Required}, {"preferred", t.Preferred}}
}

// Problems returns a *FieldError for each field of t that is set, at
// field + "." + its name (Fields) with its own value, of kind and with the
// reason format gives; none when t is zero. Checks that refuse a topology
// as a whole name each of its fields this way, not one value of its
// fields run together.
func (t GangTopology) Problems(field string, kind error, format string, args ...any) []*FieldError {
	var errs []*FieldError
	for _, f := range t.Fields() {
		if f[1] != "" {
			errs = append(errs, Errorf(field+"."+f[0], f[1], kind, format, args...))
		}
	}
	return errs
}

// Disagreements returns a *FieldError for each field of t whose value
// differs from other's (a gang member's topology against its first
// member's), at field + "." + its name with t's value, of kind
// ErrInconsistent, the reason saying otherPath's value.
func (t GangTopology) Disagreements(field, gang, otherPath string, other GangTopology) []*FieldError {
	var errs []*FieldError
	mine, theirs := t.Fields(), other.Fields()
	for i, f := range mine {
		if f[1] != theirs[i][1] {
			errs = append(errs, Errorf(field+"."+f[0], f[1], ErrInconsistent, "gang %q: %s.%s is %q", gang, otherPath, f[0], theirs[i][1]))
		}
	}
	return errs
}

// Topology is a named hierarchy of node labels, outermost first (a block,
// then a rack, then a host). A domain of level k is a cluster and a path of
// values (v0, …, vk): the nodes of that cluster whose labels Levels[0..k]
// have exactly those values. A node lacking the label of a level is outside
// every domain of that level and of the levels below it.
type Topology struct {
	Name string
	// Levels are node label keys, outermost first; at least one, none
	// empty or repeated.
	Levels []string
}

// Level returns the index of the level whose label key is key, or -1.
func (t *Topology) Level(key string) int {
	for i, l := range t.Levels {
		if l == key {
			return i
		}
	}
	return -1
}

// DefaultTopologyName is the topology a gang gets when its
// GangTopology.Name is empty (else the first configured).
const DefaultTopologyName = "default"

// FindTopology returns the topology a gang naming name uses among ts: the
// one with that name, or for "" the one named DefaultTopologyName, else
// the first; nil when there is none. O(len(ts)); it allocates nothing.
func FindTopology(ts []Topology, name string) *Topology {
	want := name
	if want == "" {
		want = DefaultTopologyName
	}
	for i := range ts {
		if ts[i].Name == want {
			return &ts[i]
		}
	}
	if name == "" && len(ts) > 0 {
		return &ts[0]
	}
	return nil
}

// LevelProblems returns the problems of a gang's topology request (at
// field) that need no configured topology: it names a level to require or
// prefer, and comes without a node-uniformity label (itself a one-level
// required topology).
func (g GangTopology) LevelProblems(field, uniformity string) []*FieldError {
	var errs []*FieldError
	if g.Required == "" && g.Preferred == "" {
		errs = append(errs, Errorf(field+".required", "", ErrRequired, "a gang topology names a required or a preferred level"))
	}
	if uniformity != "" {
		levels := GangTopology{Required: g.Required, Preferred: g.Preferred}
		errs = append(errs, levels.Problems(field, ErrInconsistent,
			"with nodeUniformityLabel %q: give one or the other (the label is a one-level required topology)", uniformity)...)
	}
	return errs
}

// ResolveTopology checks a gang's topology request against the configured
// topologies and returns the topology and the indices of its Required and
// Preferred levels (-1 for none). A request naming no topology there, or a
// level the topology does not have, or Preferred above Required, is an
// error naming field (the path of the gang's topology, such as
// job "a".gang.topology) and the value (ErrUnknownName, ErrInconsistent).
// The zero request gives nil, -1, -1.
func ResolveTopology(ts []Topology, field string, gt GangTopology) (t *Topology, required, preferred int, err error) {
	if gt.IsZero() {
		return nil, -1, -1, nil
	}
	t = FindTopology(ts, gt.Name)
	if t == nil {
		return nil, -1, -1, Errorf(field+".name", gt.Name, ErrUnknownName, "no such topology (%d configured)", len(ts))
	}
	required, preferred = -1, -1
	if gt.Required != "" {
		if required = t.Level(gt.Required); required < 0 {
			return nil, -1, -1, Errorf(field+".required", gt.Required, ErrUnknownName, "not a level of topology %q", t.Name)
		}
	}
	if gt.Preferred != "" {
		if preferred = t.Level(gt.Preferred); preferred < 0 {
			return nil, -1, -1, Errorf(field+".preferred", gt.Preferred, ErrUnknownName, "not a level of topology %q", t.Name)
		}
	}
	if required >= 0 && preferred >= 0 && preferred < required {
		return nil, -1, -1, Errorf(field+".preferred", gt.Preferred, ErrInconsistent,
			"above the required level %q: preferred must be the required level or below it", gt.Required)
	}
	return t, required, preferred, nil
}

// ValidateTopologies checks configured topologies: each has a name, unique
// among them, and at least one level; no level is empty or repeated within
// a topology. path prefixes the fields named (topologies[0].levels[1]).
// Every problem is reported, joined.
func ValidateTopologies(path string, ts []Topology) error {
	var v validator
	seen := make(map[string]bool, len(ts))
	for i, t := range ts {
		p := fmt.Sprintf("%s[%d]", path, i)
		v.required(p+".name", t.Name)
		if t.Name != "" && seen[t.Name] {
			v.add(Errorf(p+".name", t.Name, ErrDuplicate, "two topologies have this name"))
		}
		seen[t.Name] = true
		if len(t.Levels) == 0 {
			v.add(Errorf(p+".levels", "", ErrRequired, "a topology has at least one level"))
		}
		for k, l := range t.Levels {
			lp := fmt.Sprintf("%s.levels[%d]", p, k)
			v.required(lp, l)
			if l != "" && t.Level(l) < k {
				v.add(Errorf(lp, l, ErrDuplicate, "the level is listed twice"))
			}
		}
	}
	return v.err()
}

// IsGang reports whether the job is a member of a gang.
func (j *Job) IsGang() bool { return j.Gang.ID != "" }

// Queue is a tenant whose jobs compete for a fair share of the cluster.
type Queue struct {
	Name string
	// PriorityFactor scales the queue's claim: weight = 1/PriorityFactor, so
	// a factor of 2 gets half the share of a factor of 1. Zero means 1;
	// negative is invalid.
	PriorityFactor float64
	// LimitsByPriorityClass caps, per priority class name and per resource
	// name, the fraction of the cluster this queue may hold at that class. It
	// overrides the class's MaximumResourceFractionPerQueue.
	LimitsByPriorityClass map[string]map[string]float64
	// Parent names the QueueGroup the queue hangs from; "" is the root. A
	// flat list of queues (no Parent, no groups, no quota vectors) is
	// Armada's model exactly.
	Parent string
	// Guaranteed, Limit and LendingLimit are the queue's contract on
	// quantities in the queue tree (see QueueGroup), laid out by the
	// scheduler's schema. Nil, or an Absent entry, means not given: a
	// guarantee of 0, no limit, all of the guarantee lendable.
	Guaranteed, Limit, LendingLimit Resources
}

// InTree reports whether the queue takes part in a queue tree beyond a flat
// list: it hangs from a group or has a quota vector.
func (q *Queue) InTree() bool {
	return q.Parent != "" || q.Guaranteed != nil || q.Limit != nil || q.LendingLimit != nil
}

// QueueGroup is an inner node of the queue tree: it holds no jobs, only
// queues and other groups (those whose Parent names it). A group's share is
// the sum of its children's shares; its fair share is divided among its
// active children by their guarantees first and then by weight, each capped
// at its demand and limit.
//
// Guaranteed is what the group's subtree may always claim (its children's
// guarantees when not given); Limit caps what the subtree may hold at once;
// LendingLimit caps how much of an idle guarantee others may borrow: the rest
// (Guaranteed − LendingLimit) stays free for the subtree. Each vector is laid
// out by the scheduler's schema, with Absent for "not given".
type QueueGroup struct {
	Name string
	// Parent names the enclosing group; "" is the root.
	Parent string
	// PriorityFactor: weight = 1/PriorityFactor among the group's siblings,
	// as for a queue. Zero means 1.
	PriorityFactor                  float64
	Guaranteed, Limit, LendingLimit Resources
}

// Absent marks one resource of a quota vector (Queue.Guaranteed, .Limit,
// .LendingLimit and QueueGroup's) as not given. ResourceSchema.ParsePartial
// fills it in for the names a map leaves out.
const Absent int64 = math.MinInt64

// Weight is 1/PriorityFactor, with a zero factor read as 1.
func (g *QueueGroup) Weight() float64 {
	if g.PriorityFactor == 0 {
		return 1
	}
	return 1 / g.PriorityFactor
}

// Weight is 1/PriorityFactor, with a zero factor read as 1.
func (q *Queue) Weight() float64 {
	if q.PriorityFactor == 0 {
		return 1
	}
	return 1 / q.PriorityFactor
}

// PriorityClass is Armada's (name, priority, preemptible) triple.
type PriorityClass struct {
	Name string
	// Priority is the urgency: higher classes go first and may preempt
	// preemptible jobs of strictly lower priority.
	Priority int32
	// Preemptible jobs may be preempted by urgency or to fair share;
	// non-preemptible jobs never are.
	Preemptible bool
	// MaximumResourceFractionPerQueue caps, per resource name, the fraction of
	// the cluster one queue may hold at this class. Nil means no cap.
	MaximumResourceFractionPerQueue map[string]float64
}

// Names of Armada's default priority classes.
const (
	ArmadaDefault     = "armada-default"
	ArmadaPreemptible = "armada-preemptible"
)

// DefaultPriorityClasses returns Armada's two classes: armada-default
// (30000, non-preemptible) and armada-preemptible (20000, preemptible).
func DefaultPriorityClasses() []PriorityClass {
	return []PriorityClass{
		{Name: ArmadaDefault, Priority: 30000},
		{Name: ArmadaPreemptible, Priority: 20000, Preemptible: true},
	}
}
