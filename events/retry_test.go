package events

import (
	"errors"
	"testing"

	"github.com/flotilla-sched/flotilla"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestParseRetryPolicyReadsServiceForm: SERVICE.md's example is read as
// written.
func TestParseRetryPolicyReadsServiceForm(t *testing.T) {
	p, err := ParseRetryPolicy("retryPolicy", []byte(`{"maxAttempts": 5, "rules": [{"onExitCodes": [137, 143],
  "onReasons": ["oom", "evicted", "deadline", "lease-expired", "lease-returned"],
  "retryLimit": 3, "avoidSameNode": true}]}`))
	require.NoError(t, err)
	assert.Equal(t, &RetryPolicy{MaxAttempts: 5, Rules: []RetryRule{{OnExitCodes: []int{137, 143},
		OnReasons: FailureReasons(), RetryLimit: 3, AvoidSameNode: true}}}, p)
}

// TestRetryPolicyCheckNamesEveryProblemByFieldAndValue: each bad field is
// reported with its path, its value and its class, all at once.
func TestRetryPolicyCheckNamesEveryProblemByFieldAndValue(t *testing.T) {
	type problem struct {
		field, value string
		class        error
	}
	for _, tc := range []struct {
		name string
		doc  string
		want []problem
	}{
		{"negative maxAttempts", `{"maxAttempts": -1, "rules": []}`, []problem{{"rp.maxAttempts", "-1", flotilla.ErrOutOfRange}}},
		{"maxAttempts too big", `{"maxAttempts": 101}`, []problem{{"rp.maxAttempts", "101", flotilla.ErrOutOfRange}}},
		{"empty rule", `{"rules": [{}]}`, []problem{{"rp.rules[0].onExitCodes", "[]", flotilla.ErrRequired}}},
		{"exit code 0", `{"rules": [{"onExitCodes": [0]}]}`, []problem{{"rp.rules[0].onExitCodes[0]", "0", flotilla.ErrOutOfRange}}},
		{"exit code 256 and a duplicate", `{"rules": [{"onExitCodes": [1, 256, 1]}]}`, []problem{
			{"rp.rules[0].onExitCodes[1]", "256", flotilla.ErrOutOfRange}, {"rp.rules[0].onExitCodes[2]", "1", flotilla.ErrDuplicate}}},
		{"unknown reason and a duplicate", `{"rules": [{"onReasons": ["oom", "bored", "oom"]}]}`, []problem{
			{"rp.rules[0].onReasons[1]", "bored", flotilla.ErrUnknownName}, {"rp.rules[0].onReasons[2]", "oom", flotilla.ErrDuplicate}}},
		{"negative limit in the second rule", `{"rules": [{"onReasons": ["oom"]}, {"onExitCodes": [2], "retryLimit": -2}]}`, []problem{
			{"rp.rules[1].retryLimit", "-2", flotilla.ErrOutOfRange}}},
		{"every problem at once", `{"maxAttempts": -3, "rules": [{"retryLimit": 1000}]}`, []problem{
			{"rp.maxAttempts", "-3", flotilla.ErrOutOfRange}, {"rp.rules[0].onExitCodes", "[]", flotilla.ErrRequired},
			{"rp.rules[0].retryLimit", "1000", flotilla.ErrOutOfRange}}},
		{"unknown field", `{"rules": [], "retries": 3}`, []problem{{"rp", `{"rules": [], "retries": 3}`, flotilla.ErrMalformed}}},
		{"two documents", `{} {}`, []problem{{"rp", `{} {}`, flotilla.ErrMalformed}}},
		{"wrong type", `{"maxAttempts": "5"}`, []problem{{"rp", `{"maxAttempts": "5"}`, flotilla.ErrMalformed}}},
	} {
		p, err := ParseRetryPolicy("rp", []byte(tc.doc))
		require.Error(t, err, tc.name)
		assert.Nil(t, p, tc.name)
		var got []problem
		for _, e := range flattenErr(err) {
			var fe *flotilla.FieldError
			require.True(t, errors.As(e, &fe), "%s: %v", tc.name, e)
			got = append(got, problem{fe.Field, fe.Value, nil})
		}
		require.Len(t, got, len(tc.want), "%s: %v", tc.name, err)
		for i, w := range tc.want {
			assert.Equal(t, w.field, got[i].field, tc.name)
			assert.Equal(t, w.value, got[i].value, tc.name)
			assert.ErrorIs(t, flattenErr(err)[i], w.class, tc.name)
		}
	}
	tooMany := RetryPolicy{Rules: make([]RetryRule, MaxRules+1)}
	for i := range tooMany.Rules {
		tooMany.Rules[i].OnExitCodes = []int{1}
	}
	err := tooMany.Check("rp")
	var fe *flotilla.FieldError
	require.True(t, errors.As(err, &fe))
	assert.Equal(t, "rp.rules", fe.Field)
}

// flattenErr lists the errors a joined error holds, in order.
func flattenErr(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range j.Unwrap() {
			out = append(out, flattenErr(e)...)
		}
		return out
	}
	return []error{err}
}

// TestRetryPolicyDecideFirstMatchLimitsAndMaxAttempts: the first rule
// matching the exit code or the reason decides; its retry limit and
// maxAttempts (or the default) bound the retries.
func TestRetryPolicyDecideFirstMatchLimitsAndMaxAttempts(t *testing.T) {
	p := &RetryPolicy{MaxAttempts: 4, Rules: []RetryRule{
		{OnExitCodes: []int{137}, OnReasons: []FailureReason{ReasonOOM}, RetryLimit: 2, AvoidSameNode: true},
		{OnExitCodes: []int{137, 3}, OnReasons: []FailureReason{ReasonEvicted}},
	}}
	for _, tc := range []struct {
		name     string
		job      Job
		f        Failure
		max      int
		want     Decision
		wantWhy  string
		policyMA int
	}{
		{"137 matches rule 1", Job{Attempts: 1}, Failure{ExitCode: 137}, 3,
			Decision{Rule: 1, Retry: true, AvoidNode: true}, "exit code 137: rule 1 retries it (retry 1 of 2, attempt 2 of 4 next)", 4},
		{"oom by reason matches rule 1", Job{Attempts: 1}, Failure{ExitCode: 1, Reason: ReasonOOM}, 3,
			Decision{Rule: 1, Retry: true, AvoidNode: true}, "exit code 1 (oom): rule 1 retries it (retry 1 of 2, attempt 2 of 4 next)", 4},
		{"rule 1's limit reached", Job{Attempts: 3, Retries: []int{2}}, Failure{ExitCode: 137}, 3,
			Decision{Rule: 1}, "rule 1 matched exit code 137; its retry limit is reached (2 of 2)", 4},
		{"3 matches rule 2, no limit of its own", Job{Attempts: 3, Retries: []int{2, 0}}, Failure{ExitCode: 3}, 3,
			Decision{Rule: 2, Retry: true}, "exit code 3: rule 2 retries it (retry 1, attempt 4 of 4 next)", 4},
		{"maxAttempts reached", Job{Attempts: 4, Retries: []int{0, 3}}, Failure{ExitCode: 3}, 3,
			Decision{Rule: 2}, "rule 2 matched exit code 3; attempts exhausted (4 of maxAttempts 4)", 4},
		{"default maxAttempts", Job{Attempts: 3}, Failure{Reason: ReasonEvicted}, 3,
			Decision{Rule: 2}, "rule 2 matched evicted; attempts exhausted (3 of maxAttempts 3)", 0},
		{"no rule matches", Job{Attempts: 1}, Failure{ExitCode: 1}, 3,
			Decision{}, "no retry rule matches exit code 1", 4},
		{"a reason no rule names", Job{Attempts: 1}, Failure{Reason: ReasonLeaseExpired}, 3,
			Decision{}, "no retry rule matches lease-expired", 4},
	} {
		q := *p
		q.MaxAttempts = tc.policyMA
		got := q.Decide(&tc.job, tc.f, tc.max)
		assert.Equal(t, tc.wantWhy, got.Why, tc.name)
		got.Why = ""
		assert.Equal(t, tc.want, got, tc.name)
	}
}

func TestRetryPolicyCloneSharesNothing(t *testing.T) {
	p := &RetryPolicy{Rules: []RetryRule{{OnExitCodes: []int{1}, OnReasons: []FailureReason{ReasonOOM}}}}
	c := p.Clone()
	c.Rules[0].OnExitCodes[0], c.Rules[0].OnReasons[0] = 2, ReasonEvicted
	assert.Equal(t, 1, p.Rules[0].OnExitCodes[0])
	assert.Equal(t, ReasonOOM, p.Rules[0].OnReasons[0])
	assert.Nil(t, (*RetryPolicy)(nil).Clone())
}

// FuzzParseRetryPolicy: any document is accepted (and then checks clean
// and round-trips) or refused with field errors, never a panic.
func FuzzParseRetryPolicy(f *testing.F) {
	for _, s := range []string{
		`{"maxAttempts": 5, "rules": [{"onExitCodes": [137, 143], "onReasons": ["oom", "evicted", "deadline", "lease-expired", "lease-returned"], "retryLimit": 3, "avoidSameNode": true}]}`,
		`{"rules": []}`, `{}`, `null`, `[]`, `{"rules": [{}]}`, `{"maxAttempts": -1}`, `{"rules": [{"onExitCodes": [0, 256]}]}`,
		`{"rules": [{"onReasons": ["x"]}]}`, `{"rules": null} {}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := ParseRetryPolicy("rp", b)
		if err != nil {
			for _, e := range flattenErr(err) {
				var fe *flotilla.FieldError
				if !errors.As(e, &fe) {
					t.Fatalf("not a field error: %v", e)
				}
			}
			return
		}
		if err := p.Check("rp"); err != nil {
			t.Fatalf("accepted a policy that does not check: %v", err)
		}
		p.Decide(&Job{Attempts: 1}, Failure{ExitCode: 137, Reason: ReasonOOM}, 3)
	})
}
