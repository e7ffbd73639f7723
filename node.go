package flotilla

// TaintEffect is what a taint does to jobs that do not tolerate it, with the
// Kubernetes meanings: NoSchedule and NoExecute keep new jobs off the node;
// PreferNoSchedule is a preference only and never blocks a placement.
type TaintEffect string

const (
	TaintNoSchedule       TaintEffect = "NoSchedule"
	TaintPreferNoSchedule TaintEffect = "PreferNoSchedule"
	TaintNoExecute        TaintEffect = "NoExecute"
)

// Taint marks a node as repelling jobs that do not tolerate it.
type Taint struct {
	Key    string
	Value  string
	Effect TaintEffect
}

// TolerationOperator is Equal (the default when empty) or Exists.
type TolerationOperator string

const (
	TolerationEqual  TolerationOperator = "Equal"
	TolerationExists TolerationOperator = "Exists"
)

// Toleration lets a job onto nodes with matching taints, with Kubernetes
// matching rules: an empty Key with Exists matches every taint; an empty
// Effect matches every effect; Equal compares values, Exists ignores them.
type Toleration struct {
	Key      string
	Operator TolerationOperator
	Value    string
	Effect   TaintEffect
}

// Node is one machine the scheduler may place jobs on.
type Node struct {
	Name string
	// Cluster groups nodes; a gang lands within one cluster. Empty is the
	// default cluster.
	Cluster string
	Labels  map[string]string
	Taints  []Taint
	// Total is the node's allocatable capacity.
	Total Resources
	// Unschedulable cordons the node: no new jobs, but running jobs stay and
	// evicted ones may return to it.
	Unschedulable bool
}
