package submit

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flotilla-sched/flotilla"
)

func TestPoolsAbsentAcceptEveryPoolAndGivenAreSortedAndEachAPoolNameNamedOnce(t *testing.T) {
	long := strings.Repeat("a", MaxPoolBytes+1)
	for _, tc := range []struct {
		name  string
		pools []string
		want  []string // when accepted
		bad   *problem
	}{
		{name: "absent", pools: nil, want: nil},
		{name: "one", pools: []string{"a100"}, want: []string{"a100"}},
		{name: "sorted", pools: []string{"h100", "a100"}, want: []string{"a100", "h100"}},
		{name: "dots dashes underscores inside", pools: []string{"gpu.a-100_x"}, want: []string{"gpu.a-100_x"}},
		{name: "at the limit", pools: []string{long[1:]}, want: []string{long[1:]}},
		{name: "empty list", pools: []string{}, bad: &problem{"jobs[0].pools", "[]", flotilla.ErrRequired}},
		{name: "empty name", pools: []string{"a100", ""}, bad: &problem{"jobs[0].pools[1]", "", flotilla.ErrRequired}},
		{name: "twice", pools: []string{"a100", "a100"}, bad: &problem{"jobs[0].pools[1]", "a100", flotilla.ErrDuplicate}},
		{name: "space", pools: []string{"a 100"}, bad: &problem{"jobs[0].pools[0]", "a 100", flotilla.ErrMalformed}},
		{name: "leading dash", pools: []string{"-a"}, bad: &problem{"jobs[0].pools[0]", "-a", flotilla.ErrMalformed}},
		{name: "trailing dot", pools: []string{"a."}, bad: &problem{"jobs[0].pools[0]", "a.", flotilla.ErrMalformed}},
		{name: "slash", pools: []string{"a/b"}, bad: &problem{"jobs[0].pools[0]", "a/b", flotilla.ErrMalformed}},
		{name: "too long", pools: []string{long}, bad: &problem{"jobs[0].pools[0]", Shown(long), flotilla.ErrOutOfRange}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tpl := cpuJob()
			tpl.Pools = tc.pools
			if tc.bad != nil {
				reject(t, request(tpl), *tc.bad)
				return
			}
			specs := accept(t, request(tpl))
			require.Equal(t, tc.want, specs[0].Pools)
		})
	}
}

func TestPoolsParseFromTheSubmitFile(t *testing.T) {
	req, err := Parse([]byte(`{"queue": "A", "jobSet": "s", "jobs": [{"requests": {"cpu": "1"}, "pools": ["a100", "h100"]}]}`))
	require.NoError(t, err)
	require.Equal(t, []string{"a100", "h100"}, req.Jobs[0].Pools)
}
