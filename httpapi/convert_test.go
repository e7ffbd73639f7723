package httpapi_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/api"
	"github.com/flotilla-sched/flotilla/httpapi"
	"github.com/flotilla-sched/flotilla/priority"
	"github.com/flotilla-sched/flotilla/scheduler"
	"github.com/flotilla-sched/flotilla/server"
)

// A flux breakdown on the wire comes back as the priority package's
// Breakdown it was made from, every term and the override kept, so the
// client prints the table `flotilla priority` prints.
func TestFluxBreakdownOnTheWireGivesBackTheBreakdown(t *testing.T) {
	schema := flotilla.MustResourceSchema("cpu")
	for _, urgency := range []int{0, 16, 31} {
		c := priority.Calculate(priority.Factors{FairShare: 0.25, Queue: 7, Bank: 0.5, Urgency: urgency}, priority.DefaultWeights())
		want := priority.Breakdown{JobID: "j", User: "alice", Bank: "b", Queue: "A", Calculation: c}
		flux := want
		e := httpapi.JobExplainOf(server.JobDetail{Flux: &flux}, server.JobStatus{}, schema)
		require.NotNil(t, e.Flux)
		assert.Equal(t, want, httpapi.PriorityBreakdown("j", e.Flux), "urgency %d", urgency)
	}
}

// A reason on the wire keeps every node group, each shortfall a quantity
// of its resource, the gang member that did not fit, and the job (and its
// queue, another queue's) whose search it repeats.
func TestUnscheduledOfKeepsEveryNodeGroupWithQuantities(t *testing.T) {
	schema := flotilla.MustResourceSchema("cpu", "memory")
	r := scheduler.Reason{Code: scheduler.ReasonNoRoom, Message: "m", Search: &scheduler.NodeSearch{
		Nodes: 4, Member: "g-3", PlacedBefore: 2, SameAs: "c-10", SameAsQueue: "C",
		Filtered:  []scheduler.NodeFilter{{Filter: scheduler.FilterTaint, Detail: "gpu:NoSchedule", Nodes: 1}},
		Shortfall: []scheduler.Shortfall{{Resource: "cpu", Amount: 1500, Nodes: 2}, {Resource: "memory", Amount: 1 << 30, Nodes: 1, WhenEmpty: true}},
	}}
	yes, no := true, false
	assert.Equal(t, &api.Unscheduled{Code: "no-room", Message: "m", NodesSearched: 4, SameAs: "c-10", SameAsQueue: "C",
		NodeGroups: []api.NodeGroup{
			{Nodes: 1, Filter: "taint", Detail: "gpu:NoSchedule"},
			{Nodes: 2, ShortOf: "cpu", Short: "1500m", WhenEmpty: &no},
			{Nodes: 1, ShortOf: "memory", Short: "1Gi", WhenEmpty: &yes},
		},
		GangMember: &api.GangMember{Job: "g-3", PlacedBefore: 2},
	}, httpapi.UnscheduledOf(r, schema))
}
