package flotilla

import (
	"errors"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// problem is one expected *FieldError: its exact field path and its class.
type problem struct {
	field string
	class error
}

// fieldErrors flattens an errors.Join tree into its *FieldError leaves.
func fieldErrors(t *testing.T, err error) []*FieldError {
	t.Helper()
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []*FieldError
		for _, e := range j.Unwrap() {
			out = append(out, fieldErrors(t, e)...)
		}
		return out
	}
	var fe *FieldError
	require.True(t, errors.As(err, &fe), "not a *FieldError: %v", err)
	return []*FieldError{fe}
}

// checkProblems asserts that err reports exactly want, in order, and that
// each leaf satisfies errors.Is and errors.As on the joined error too.
func checkProblems(t *testing.T, name string, err error, want []problem) {
	t.Helper()
	if len(want) == 0 {
		assert.NoError(t, err, name)
		return
	}
	require.Error(t, err, name)
	got := fieldErrors(t, err)
	require.Len(t, got, len(want), "%s: %v", name, err)
	for i, w := range want {
		assert.Equal(t, w.field, got[i].Field, "%s: problem %d", name, i)
		assert.ErrorIs(t, got[i], w.class, "%s: %s", name, w.field)
		assert.ErrorIs(t, err, w.class, name)
	}
	var first *FieldError
	require.ErrorAs(t, err, &first, name)
	assert.Equal(t, want[0].field, first.Field, name)
}

var testSchema = MustResourceSchema("cpu", "memory", "nvidia.com/gpu")

func validJob() *Job {
	return &Job{
		ID: "a-1", Queue: "A", JobSet: "s1", PriorityClass: ArmadaDefault,
		Requests:     Resources{1000, 4 << 30, 0},
		NodeSelector: map[string]string{"zone": "a"},
		Tolerations: []Toleration{
			{Key: "gpu", Operator: TolerationEqual, Value: "true", Effect: TaintNoSchedule},
			{Key: "spot", Operator: TolerationExists},
			{Operator: TolerationExists},
			{Key: "x", Value: "y"},
		},
		Gang: Gang{ID: "g1", Cardinality: 4, NodeUniformityLabel: "zone"},
	}
}

func TestJobValidate(t *testing.T) {
	cases := []struct {
		name string
		edit func(j *Job)
		want []problem
	}{
		{"valid", func(j *Job) {}, nil},
		{"valid without gang", func(j *Job) { j.Gang = Gang{} }, nil},
		{"valid without job set", func(j *Job) { j.JobSet = "" }, nil},
		{"valid gang of one", func(j *Job) { j.Gang.Cardinality = 1 }, nil},
		{"missing id", func(j *Job) { j.ID = "" }, []problem{{`job "".id`, ErrRequired}}},
		{"missing queue", func(j *Job) { j.Queue = "" }, []problem{{`job "a-1".queue`, ErrRequired}}},
		{"requests nil", func(j *Job) { j.Requests = nil }, []problem{{`job "a-1".requests`, ErrRequired}}},
		{"requests short", func(j *Job) { j.Requests = Resources{1, 2} }, []problem{{`job "a-1".requests`, ErrInconsistent}}},
		{"requests long", func(j *Job) { j.Requests = Resources{1, 2, 3, 4} }, []problem{{`job "a-1".requests`, ErrInconsistent}}},
		{"requests negative", func(j *Job) { j.Requests[0] = -1; j.Requests[2] = -1000 }, []problem{
			{`job "a-1".requests.cpu`, ErrNegative}, {`job "a-1".requests.nvidia.com/gpu`, ErrNegative}}},
		{"gang cardinality zero", func(j *Job) { j.Gang.Cardinality = 0 }, []problem{{`job "a-1".gang.cardinality`, ErrOutOfRange}}},
		{"gang cardinality negative", func(j *Job) { j.Gang.Cardinality = -3 }, []problem{{`job "a-1".gang.cardinality`, ErrOutOfRange}}},
		{"cardinality without gang", func(j *Job) { j.Gang.ID = ""; j.Gang.NodeUniformityLabel = "" }, []problem{{`job "a-1".gang.cardinality`, ErrInconsistent}}},
		{"uniformity without gang", func(j *Job) { j.Gang.ID = ""; j.Gang.Cardinality = 0 }, []problem{{`job "a-1".gang.nodeUniformityLabel`, ErrInconsistent}}},
		{"empty selector key", func(j *Job) { j.NodeSelector[""] = "x" }, []problem{{`job "a-1".nodeSelector`, ErrRequired}}},
		{"unknown operator", func(j *Job) { j.Tolerations[0].Operator = "In" }, []problem{{`job "a-1".tolerations[0].operator`, ErrUnknownName}}},
		{"exists with value", func(j *Job) { j.Tolerations[1].Value = "v" }, []problem{{`job "a-1".tolerations[1].value`, ErrInconsistent}}},
		{"empty key with equal", func(j *Job) { j.Tolerations[2].Operator = TolerationEqual }, []problem{{`job "a-1".tolerations[2].operator`, ErrInconsistent}}},
		{"empty key with empty operator", func(j *Job) { j.Tolerations[3].Key = "" }, []problem{{`job "a-1".tolerations[3].operator`, ErrInconsistent}}},
		{"unknown effect", func(j *Job) { j.Tolerations[3].Effect = "NoRun" }, []problem{{`job "a-1".tolerations[3].effect`, ErrUnknownName}}},
		{"avoided clusters", func(j *Job) { j.AvoidClusters = []string{"c1", "c2"} }, nil},
		{"avoided clusters repeated", func(j *Job) { j.AvoidClusters = []string{"c1", "c1"} }, nil},
		{"avoided cluster unnamed", func(j *Job) { j.AvoidClusters = []string{"c1", "", "c2", ""} }, []problem{
			{`job "a-1".avoidClusters[1]`, ErrRequired}, {`job "a-1".avoidClusters[3]`, ErrRequired}}},
		{"avoided nodes", func(j *Job) { j.AvoidNodes = []string{"n1", "n1"} }, nil},
		{"avoided node unnamed", func(j *Job) { j.AvoidNodes = []string{"n1", ""} }, []problem{{`job "a-1".avoidNodes[1]`, ErrRequired}}},
		{"every problem at once", func(j *Job) {
			j.ID, j.Queue = "", ""
			j.Requests = Resources{-1, 0, -2}
			j.Gang.Cardinality = 0
			j.NodeSelector[""] = ""
			j.Tolerations[0] = Toleration{Key: "k", Operator: "Bogus", Effect: "Bogus"}
			j.Tolerations[1].Value = "v"
			j.AvoidClusters = []string{""}
		}, []problem{
			{`job "".id`, ErrRequired},
			{`job "".queue`, ErrRequired},
			{`job "".requests.cpu`, ErrNegative},
			{`job "".requests.nvidia.com/gpu`, ErrNegative},
			{`job "".gang.cardinality`, ErrOutOfRange},
			{`job "".nodeSelector`, ErrRequired},
			{`job "".tolerations[0].operator`, ErrUnknownName},
			{`job "".tolerations[0].effect`, ErrUnknownName},
			{`job "".tolerations[1].value`, ErrInconsistent},
			{`job "".avoidClusters[0]`, ErrRequired},
		}},
	}
	for _, c := range cases {
		j := validJob()
		c.edit(j)
		checkProblems(t, c.name, j.Validate(testSchema), c.want)
	}
	checkProblems(t, "no schema", validJob().Validate(nil), []problem{{`job "a-1".requests`, ErrRequired}})
	checkProblems(t, "nil job", (*Job)(nil).Validate(testSchema), []problem{{"job", ErrRequired}})
}

func TestJobValidateValues(t *testing.T) {
	j := validJob()
	j.Requests[1] = -1536 // memory, in bytes
	j.Gang.Cardinality = -2
	errs := fieldErrors(t, j.Validate(testSchema))
	require.Len(t, errs, 2)
	assert.Equal(t, "-1536", errs[0].Value)
	assert.Equal(t, "-2", errs[1].Value)
	assert.Contains(t, errs[0].Error(), `job "a-1".requests.memory "-1536": must not be negative`)
}

func validNode() *Node {
	return &Node{
		Name:   "n-3",
		Labels: map[string]string{"zone": "a"},
		Taints: []Taint{
			{Key: "gpu", Value: "true", Effect: TaintNoSchedule},
			{Key: "spot", Effect: TaintPreferNoSchedule},
			{Key: "maint", Effect: TaintNoExecute},
		},
		Total: Resources{32000, 128 << 30, 0},
	}
}

func TestNodeValidate(t *testing.T) {
	cases := []struct {
		name string
		edit func(n *Node)
		want []problem
	}{
		{"valid", func(n *Node) {}, nil},
		{"valid bare", func(n *Node) { n.Labels, n.Taints = nil, nil }, nil},
		{"missing name", func(n *Node) { n.Name = "" }, []problem{{`node "".name`, ErrRequired}}},
		{"total nil", func(n *Node) { n.Total = nil }, []problem{{`node "n-3".total`, ErrRequired}}},
		{"total short", func(n *Node) { n.Total = Resources{1} }, []problem{{`node "n-3".total`, ErrInconsistent}}},
		{"total negative", func(n *Node) { n.Total[1] = -1 }, []problem{{`node "n-3".total.memory`, ErrNegative}}},
		{"empty label key", func(n *Node) { n.Labels[""] = "x" }, []problem{{`node "n-3".labels`, ErrRequired}}},
		{"taint without key", func(n *Node) { n.Taints[1].Key = "" }, []problem{{`node "n-3".taints[1].key`, ErrRequired}}},
		{"taint without effect", func(n *Node) { n.Taints[0].Effect = "" }, []problem{{`node "n-3".taints[0].effect`, ErrRequired}}},
		{"taint unknown effect", func(n *Node) { n.Taints[0].Effect = "noschedule" }, []problem{{`node "n-3".taints[0].effect`, ErrUnknownName}}},
		{"every problem at once", func(n *Node) {
			n.Name = ""
			n.Total[0] = -5
			n.Taints[0] = Taint{}
			n.Taints[2].Effect = "Later"
		}, []problem{
			{`node "".name`, ErrRequired},
			{`node "".total.cpu`, ErrNegative},
			{`node "".taints[0].key`, ErrRequired},
			{`node "".taints[0].effect`, ErrRequired},
			{`node "".taints[2].effect`, ErrUnknownName},
		}},
	}
	for _, c := range cases {
		n := validNode()
		c.edit(n)
		checkProblems(t, c.name, n.Validate(testSchema), c.want)
	}
	checkProblems(t, "nil node", (*Node)(nil).Validate(testSchema), []problem{{"node", ErrRequired}})
}

func TestQueueValidate(t *testing.T) {
	cases := []struct {
		name string
		q    Queue
		want []problem
	}{
		{"valid zero factor", Queue{Name: "A"}, nil},
		{"valid factor", Queue{Name: "A", PriorityFactor: 2.5}, nil},
		{"valid limits", Queue{Name: "A", LimitsByPriorityClass: map[string]map[string]float64{
			ArmadaPreemptible: {"cpu": 0.5, "memory": 0, "nvidia.com/gpu": 1}}}, nil},
		{"missing name", Queue{}, []problem{{`queue "".name`, ErrRequired}}},
		{"negative factor", Queue{Name: "A", PriorityFactor: -1}, []problem{{`queue "A".priorityFactor`, ErrNegative}}},
		{"NaN factor", Queue{Name: "A", PriorityFactor: math.NaN()}, []problem{{`queue "A".priorityFactor`, ErrOutOfRange}}},
		{"+Inf factor", Queue{Name: "A", PriorityFactor: math.Inf(1)}, []problem{{`queue "A".priorityFactor`, ErrOutOfRange}}},
		{"-Inf factor", Queue{Name: "A", PriorityFactor: math.Inf(-1)}, []problem{{`queue "A".priorityFactor`, ErrOutOfRange}}},
		{"limit above one", Queue{Name: "A", LimitsByPriorityClass: map[string]map[string]float64{
			"pc": {"cpu": 1.5}}}, []problem{{`queue "A".limitsByPriorityClass.pc.cpu`, ErrOutOfRange}}},
		{"limit negative", Queue{Name: "A", LimitsByPriorityClass: map[string]map[string]float64{
			"pc": {"cpu": -0.1}}}, []problem{{`queue "A".limitsByPriorityClass.pc.cpu`, ErrOutOfRange}}},
		{"limit NaN", Queue{Name: "A", LimitsByPriorityClass: map[string]map[string]float64{
			"pc": {"cpu": math.NaN()}}}, []problem{{`queue "A".limitsByPriorityClass.pc.cpu`, ErrOutOfRange}}},
		{"limit empty names", Queue{Name: "A", LimitsByPriorityClass: map[string]map[string]float64{
			"": {"cpu": 0.5}, "pc": {"": 0.5}}}, []problem{
			{`queue "A".limitsByPriorityClass`, ErrRequired},
			{`queue "A".limitsByPriorityClass.pc`, ErrRequired}}},
		{"bad limits under empty names", Queue{Name: "A", LimitsByPriorityClass: map[string]map[string]float64{
			"": {"cpu": 2}, "pc": {"": -1}}}, []problem{
			{`queue "A".limitsByPriorityClass`, ErrRequired},
			{`queue "A".limitsByPriorityClass."".cpu`, ErrOutOfRange},
			{`queue "A".limitsByPriorityClass.pc`, ErrRequired},
			{`queue "A".limitsByPriorityClass.pc.""`, ErrOutOfRange}}},
		{"every problem at once", Queue{PriorityFactor: -2, LimitsByPriorityClass: map[string]map[string]float64{
			"b": {"memory": 2, "cpu": math.Inf(1)}, "a": {"gpu": -1}}}, []problem{
			{`queue "".name`, ErrRequired},
			{`queue "".priorityFactor`, ErrNegative},
			{`queue "".limitsByPriorityClass.a.gpu`, ErrOutOfRange},
			{`queue "".limitsByPriorityClass.b.cpu`, ErrOutOfRange},
			{`queue "".limitsByPriorityClass.b.memory`, ErrOutOfRange},
		}},
	}
	for _, c := range cases {
		checkProblems(t, c.name, c.q.Validate(), c.want)
	}
	checkProblems(t, "nil queue", (*Queue)(nil).Validate(), []problem{{"queue", ErrRequired}})
}

// A priority factor is 0 (meaning 1) or at least MinPriorityFactor: below it
// the weight 1/f is +Inf (1e-310) or so large that two queues' weights sum
// to +Inf (1e-308), and fair shares come out NaN or 0.
func TestQueuePriorityFactorBelowMinimumIsOutOfRange(t *testing.T) {
	cases := []struct {
		name   string
		factor float64
		ok     bool
	}{
		{"zero means 1", 0, true},
		{"minimum", MinPriorityFactor, true},
		{"large", 1e300, true},
		{"weight is +Inf", 1e-310, false},
		{"two weights sum to +Inf", 1e-308, false},
		{"just below the minimum", MinPriorityFactor * 0.99, false},
		{"smallest positive float", math.SmallestNonzeroFloat64, false},
	}
	for _, c := range cases {
		q := Queue{Name: "A", PriorityFactor: c.factor}
		if c.ok {
			checkProblems(t, c.name, q.Validate(), nil)
			assert.False(t, math.IsInf(q.Weight()+q.Weight(), 0), c.name)
			continue
		}
		checkProblems(t, c.name, q.Validate(), []problem{{`queue "A".priorityFactor`, ErrOutOfRange}})
	}
}

func TestPriorityClassValidate(t *testing.T) {
	for _, pc := range DefaultPriorityClasses() {
		assert.NoError(t, pc.Validate(), pc.Name)
	}
	cases := []struct {
		name string
		pc   PriorityClass
		want []problem
	}{
		{"valid negative priority", PriorityClass{Name: "low", Priority: -5}, nil},
		{"valid fractions", PriorityClass{Name: "p", MaximumResourceFractionPerQueue: map[string]float64{"cpu": 0.5, "memory": 1}}, nil},
		{"missing name", PriorityClass{}, []problem{{`priorityClass "".name`, ErrRequired}}},
		{"fraction out of range", PriorityClass{Name: "p", MaximumResourceFractionPerQueue: map[string]float64{"cpu": 1.01}},
			[]problem{{`priorityClass "p".maximumResourceFractionPerQueue.cpu`, ErrOutOfRange}}},
		{"every problem at once", PriorityClass{MaximumResourceFractionPerQueue: map[string]float64{
			"cpu": math.NaN(), "memory": -1, "": 0.5}}, []problem{
			{`priorityClass "".name`, ErrRequired},
			{`priorityClass "".maximumResourceFractionPerQueue`, ErrRequired},
			{`priorityClass "".maximumResourceFractionPerQueue.cpu`, ErrOutOfRange},
			{`priorityClass "".maximumResourceFractionPerQueue.memory`, ErrOutOfRange},
		}},
	}
	for _, c := range cases {
		checkProblems(t, c.name, c.pc.Validate(), c.want)
	}
	checkProblems(t, "nil class", (*PriorityClass)(nil).Validate(), []problem{{"priorityClass", ErrRequired}})
}

// TestPriorityClassValidateRejectsReservedPriority: math.MinInt32 is
// reserved (the scheduler holds evicted jobs' capacity below every class),
// so Validate rejects it rather than accept a class scheduler.New refuses.
func TestPriorityClassValidateRejectsReservedPriority(t *testing.T) {
	pc := PriorityClass{Name: "x", Priority: math.MinInt32}
	if err := pc.Validate(); err == nil {
		t.Errorf("Validate accepted priority %d, which the scheduler rejects", pc.Priority)
	}
	checkProblems(t, "reserved priority", pc.Validate(), []problem{{`priorityClass "x".priority`, ErrOutOfRange}})
}
