package submit

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flotilla-sched/flotilla"
)

// member is a gang member template: count jobs of gang id with cardinality card.
func member(id string, card, count int, label, class string) JobTemplate {
	t := cpuJob()
	t.Count, t.PriorityClass = intp(count), class
	t.Gang = &GangSpec{ID: id, Cardinality: card, NodeUniformityLabel: label}
	return t
}

// inPools is t accepting pools.
func inPools(t JobTemplate, pools ...string) JobTemplate {
	t.Pools = pools
	return t
}

func TestGangMembersAllComeInTheRequestAndTheirNumberEqualsTheCardinality(t *testing.T) {
	for _, tc := range []struct {
		name string
		ts   []JobTemplate
		want []problem
	}{
		{name: "one template", ts: []JobTemplate{member("g", 4, 4, "zone", "")}},
		{name: "split across templates, mixed classes", ts: []JobTemplate{
			member("g", 4, 1, "zone", flotilla.ArmadaDefault), cpuJob(), member("g", 4, 3, "zone", flotilla.ArmadaPreemptible)}},
		{name: "two gangs", ts: []JobTemplate{member("g", 2, 2, "", ""), member("h", 1, 1, "", "")}},
		{name: "too few", ts: []JobTemplate{member("g", 4, 3, "", "")},
			want: []problem{{"jobs[0].gang.cardinality", "4", flotilla.ErrInconsistent}}},
		{name: "too many", ts: []JobTemplate{member("g", 2, 1, "", ""), member("g", 2, 2, "", "")},
			want: []problem{{"jobs[0].gang.cardinality", "2", flotilla.ErrInconsistent}}},
		{name: "cardinality disagrees", ts: []JobTemplate{member("g", 2, 1, "", ""), member("g", 3, 1, "", "")},
			want: []problem{{"jobs[1].gang.cardinality", "3", flotilla.ErrInconsistent}}},
		{name: "label disagrees", ts: []JobTemplate{member("g", 2, 1, "zone", ""), member("g", 2, 1, "rack", "")},
			want: []problem{{"jobs[1].gang.nodeUniformityLabel", "rack", flotilla.ErrInconsistent}}},
		{name: "pools agree in another order", ts: []JobTemplate{inPools(member("g", 2, 1, "", ""), "b", "a"), inPools(member("g", 2, 1, "", ""), "a", "b")}},
		{name: "pools disagree", ts: []JobTemplate{inPools(member("g", 2, 1, "", ""), "a"), inPools(member("g", 2, 1, "", ""), "a", "b")},
			want: []problem{{"jobs[1].pools", "[a b]", flotilla.ErrInconsistent}}},
		{name: "one member names pools, the first every pool", ts: []JobTemplate{member("g", 2, 1, "", ""), inPools(member("g", 2, 1, "", ""), "a")},
			want: []problem{{"jobs[1].pools", "[a]", flotilla.ErrInconsistent}}},
		{name: "the first names pools, another every pool", ts: []JobTemplate{inPools(member("g", 2, 1, "", ""), "a"), member("g", 2, 1, "", "")},
			want: []problem{{"jobs[1].pools", "", flotilla.ErrInconsistent}}},
		{name: "no id", ts: []JobTemplate{member("", 1, 1, "", "")},
			want: []problem{{"jobs[0].gang.id", "", flotilla.ErrRequired}}},
		{name: "cardinality zero", ts: []JobTemplate{member("g", 0, 1, "", "")},
			want: []problem{{"jobs[0].gang.cardinality", "0", flotilla.ErrOutOfRange}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.want == nil {
				specs := accept(t, request(tc.ts...))
				require.NoError(t, gangCheck(specs))
				return
			}
			reject(t, request(tc.ts...), tc.want...)
		})
	}
}
