package scenario

import (
	"errors"
	"testing"

	"github.com/flotilla-sched/flotilla"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const seedExpect = `{"rounds": [
  {"scheduled": {"A": 32}, "runningAfter": {"A": 32}},
  {"scheduled": {"B": 32}, "preempted": {"A": 8}, "runningAfter": {"A": 32, "B": 32}}
]}`

// seedOutput is what the worked example of seeds/armada-scheduler.md must
// produce.
func seedOutput() *Output {
	out := &Output{Rounds: []RoundOutput{{Round: 0}, {Round: 1}}}
	for i := range 32 {
		out.Rounds[0].Scheduled = append(out.Rounds[0].Scheduled, Placement{Job: "a", Queue: "A", Node: "node-0"})
		out.Rounds[1].Scheduled = append(out.Rounds[1].Scheduled, Placement{Job: "b", Queue: "B", Node: "node-1"})
		if i < 8 {
			out.Rounds[1].Preempted = append(out.Rounds[1].Preempted, Preemption{Job: "a", Queue: "A", Node: "node-1", Reason: ReasonFairShare})
		}
	}
	out.Rounds[0].Queues = []QueueReport{{Name: "A", Running: 32, Queued: 8}, {Name: "B"}}
	out.Rounds[1].Queues = []QueueReport{{Name: "A", Running: 32, Queued: 0}, {Name: "B", Running: 32, Queued: 18}}
	return out
}

func TestParseExpect(t *testing.T) {
	e, err := ParseExpect([]byte(seedExpect))
	require.NoError(t, err)
	assert.Equal(t, &Expect{Rounds: []ExpectRound{
		{Scheduled: map[string]int{"A": 32}, RunningAfter: map[string]int{"A": 32}},
		{Scheduled: map[string]int{"B": 32}, Preempted: map[string]int{"A": 8}, RunningAfter: map[string]int{"A": 32, "B": 32}},
	}}, e)
}

func TestParseExpectRejects(t *testing.T) {
	cases := []struct {
		name, data, field string
		err               error
	}{
		{"unknown field", `{"rounds": [{"schedueld": {"A": 1}}]}`, "rounds[0].schedueld", flotilla.ErrUnknownName},
		{"negative count", `{"rounds": [{}, {"preempted": {"A": -1}}]}`, "rounds[1].preempted.A", flotilla.ErrNegative},
		{"fractional count", `{"rounds": [{"runningAfter": {"A": 0.5}}]}`, "rounds[0].runningAfter.A", flotilla.ErrMalformed},
		{"empty queue name", `{"rounds": [{"scheduled": {"": 1}}]}`, "rounds[0].scheduled", flotilla.ErrRequired},
		{"not JSON", `{"rounds": [}`, RootField, flotilla.ErrMalformed},
		{"trailing data", `{"rounds": []}]`, RootField, flotilla.ErrMalformed},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e, err := ParseExpect([]byte(tc.data))
			assert.Nil(t, e)
			requireFieldError(t, err, tc.field, tc.err)
			requireAllFieldErrors(t, err)
		})
	}
}

// A value of the wrong type does not hide the file's other problems, as in
// a scenario file.
func TestParseExpectReportsTypeErrorsWithEveryOtherProblem(t *testing.T) {
	_, err := ParseExpect([]byte(`{"rounds": [{"scheduled": {"A": "3", "B": -1}, "preempted": {"": 1}}]}`))
	requireFieldError(t, err, "rounds[0].scheduled.A", flotilla.ErrMalformed)
	requireFieldError(t, err, "rounds[0].scheduled.B", flotilla.ErrNegative)
	requireFieldError(t, err, "rounds[0].preempted", flotilla.ErrRequired)
	requireAllFieldErrors(t, err)
}

func TestCheckPasses(t *testing.T) {
	e, err := ParseExpect([]byte(seedExpect))
	require.NoError(t, err)
	assert.NoError(t, e.Check(seedOutput()))
}

func TestCheckReportsEveryMismatch(t *testing.T) {
	e, err := ParseExpect([]byte(seedExpect))
	require.NoError(t, err)
	out := seedOutput()
	out.Rounds[0].Scheduled = out.Rounds[0].Scheduled[:30]
	out.Rounds[0].Preempted = []Preemption{{Job: "x", Queue: "C", Reason: ReasonUrgency}}
	out.Rounds[1].Queues[1].Running = 31
	out.Rounds = append(out.Rounds, RoundOutput{Round: 2})

	err = e.Check(out)
	require.ErrorIs(t, err, ErrMismatch)
	var got []Mismatch
	for _, l := range leaves(err) {
		var m *Mismatch
		require.True(t, errors.As(l, &m))
		got = append(got, *m)
	}
	assert.Equal(t, []Mismatch{
		{Round: -1, Field: "rounds", Want: 2, Got: 3},
		{Round: 0, Field: "scheduled", Queue: "A", Want: 32, Got: 30},
		{Round: 0, Field: "preempted", Queue: "C", Want: 0, Got: 1},
		{Round: 1, Field: "runningAfter", Queue: "B", Want: 32, Got: 31},
	}, got)
	assert.Equal(t, "rounds: want 2 rounds, got 3\n"+
		"rounds[0].scheduled.A: want 32, got 30\n"+
		"rounds[0].preempted.C: want 0, got 1\n"+
		"rounds[1].runningAfter.B: want 32, got 31", err.Error())
}

func TestCheckRunningAfterOnlyWhenGiven(t *testing.T) {
	out := seedOutput()
	e := &Expect{Rounds: []ExpectRound{
		{Scheduled: map[string]int{"A": 32}},
		{Scheduled: map[string]int{"B": 32}, Preempted: map[string]int{"A": 8}, RunningAfter: map[string]int{}},
	}}
	err := e.Check(out)
	var m *Mismatch
	require.ErrorAs(t, err, &m)
	assert.Equal(t, Mismatch{Round: 1, Field: "runningAfter", Queue: "A", Want: 0, Got: 32}, *m)
	assert.Len(t, leaves(err), 2, "an empty runningAfter means every queue runs 0")
}

func TestCheckNilOutput(t *testing.T) {
	e := &Expect{Rounds: []ExpectRound{{}}}
	var m *Mismatch
	require.ErrorAs(t, e.Check(nil), &m)
	assert.Equal(t, Mismatch{Round: -1, Field: "rounds", Want: 1, Got: 0}, *m)
}

// TestCheckRoundByRoundKeepsNoRoundAndAgreesWithCheck: the incremental check
// reports exactly what Check reports, round by round, each round given once
// and dropped (here: a reused RoundOutput overwritten after each call).
func TestCheckRoundByRoundKeepsNoRoundAndAgreesWithCheck(t *testing.T) {
	e, err := ParseExpect([]byte(seedExpect))
	require.NoError(t, err)
	out := seedOutput()
	out.Rounds[0].Scheduled = out.Rounds[0].Scheduled[:30]
	out.Rounds = append(out.Rounds, RoundOutput{Round: 2})
	c := e.NewCheck()
	var reused RoundOutput
	for _, r := range out.Rounds {
		reused = r
		c.Round(&reused)
		reused = RoundOutput{}
	}
	require.Error(t, c.Err())
	assert.Equal(t, e.Check(out).Error(), c.Err().Error())

	c = e.NewCheck()
	c.Round(&seedOutput().Rounds[0])
	var m *Mismatch
	require.ErrorAs(t, c.Err(), &m, "one round of two so far")
	assert.Equal(t, Mismatch{Round: -1, Field: "rounds", Want: 2, Got: 1}, *m)
}

// shareOutput is one round with queues nlp and vision and group research.
func shareOutput() *Output {
	return &Output{Rounds: []RoundOutput{{
		Queues: []QueueReport{
			{Name: "nlp", Parent: "research", FairShare: 0.26388888, AdjustedFairShare: 0.40625},
			{Name: "vision", Parent: "research", FairShare: 0.3194444, AdjustedFairShare: 0.1875},
		},
		Groups: []GroupReport{{Name: "research", FairShare: 0.5833333, AdjustedFairShare: 0.59375}},
	}}}
}

func TestParseExpectShares(t *testing.T) {
	e, err := ParseExpect([]byte(`{"rounds": [{"fairShare": {"nlp": 0.264, "research": 0.583}, "adjustedFairShare": {"vision": 0.188}}]}`))
	require.NoError(t, err)
	assert.Equal(t, &Expect{Rounds: []ExpectRound{{
		FairShare:         map[string]float64{"nlp": 0.264, "research": 0.583},
		AdjustedFairShare: map[string]float64{"vision": 0.188},
	}}}, e)
	for name, tc := range map[string]struct{ data, field string }{
		"negative":   {`{"rounds": [{"fairShare": {"A": -0.1}}]}`, "rounds[0].fairShare.A"},
		"above one":  {`{"rounds": [{}, {"adjustedFairShare": {"A": 1.5}}]}`, "rounds[1].adjustedFairShare.A"},
		"empty name": {`{"rounds": [{"fairShare": {"": 0.5}}]}`, "rounds[0].fairShare"},
	} {
		t.Run(name, func(t *testing.T) {
			e, err := ParseExpect([]byte(tc.data))
			assert.Nil(t, e)
			requireAllFieldErrors(t, err)
			var fe *flotilla.FieldError
			require.ErrorAs(t, err, &fe)
			assert.Equal(t, tc.field, fe.Field)
		})
	}
}

// TestCheckSharesByQueueOrGroupTo3Decimals: names are queues or groups;
// an expected value is the output's rounded half up to 3 decimals, so
// 0.1875 matches 0.188 and 0.18749 does not.
func TestCheckSharesByQueueOrGroupTo3Decimals(t *testing.T) {
	pass := &Expect{Rounds: []ExpectRound{{
		FairShare:         map[string]float64{"nlp": 0.264, "vision": 0.319, "research": 0.583},
		AdjustedFairShare: map[string]float64{"nlp": 0.406, "vision": 0.188, "research": 0.594},
	}}}
	require.NoError(t, pass.Check(shareOutput()))

	out := shareOutput()
	out.Rounds[0].Queues[1].AdjustedFairShare = 0.18749
	out.Rounds[0].Groups[0].FairShare = 0.58
	fail := &Expect{Rounds: []ExpectRound{{
		FairShare:         map[string]float64{"research": 0.583, "nobody": 0.1},
		AdjustedFairShare: map[string]float64{"vision": 0.188, "nlp": 0.406},
	}}}
	err := fail.Check(out)
	require.ErrorIs(t, err, ErrMismatch)
	var got []string
	for _, e := range leaves(err) {
		var m *ShareMismatch
		require.ErrorAs(t, e, &m)
		got = append(got, e.Error())
	}
	assert.Equal(t, []string{
		"rounds[0].fairShare.nobody: want 0.100, but the round has no queue or group of that name",
		"rounds[0].fairShare.research: want 0.583, got 0.580000",
		"rounds[0].adjustedFairShare.vision: want 0.188, got 0.187490",
	}, got)
}

// TestCheckSharesToleranceEdges: within half a unit of the third decimal
// (plus float noise) matches, beyond it does not, on either side.
func TestCheckSharesToleranceEdges(t *testing.T) {
	for _, tc := range []struct {
		got, want float64
		ok        bool
	}{
		{0.1875, 0.188, true}, {0.1875, 0.187, true}, {0.18749, 0.188, false},
		{0.1885, 0.188, true}, {0.18851, 0.188, false}, {0, 0, true}, {1, 0.999, false},
	} {
		out := &Output{Rounds: []RoundOutput{{Queues: []QueueReport{{Name: "A", FairShare: tc.got}}}}}
		e := &Expect{Rounds: []ExpectRound{{FairShare: map[string]float64{"A": tc.want}}}}
		assert.Equal(t, tc.ok, e.Check(out) == nil, "got %v want %v", tc.got, tc.want)
	}
}
