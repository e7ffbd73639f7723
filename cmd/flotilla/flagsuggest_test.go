package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// A mistyped flag exits 2 with a did-you-mean naming the closest flag of
// the command; a flag like none of them says so.
func TestAMistypedFlagGetsADidYouMean(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"cancel", "-jobst", "s"}, "flotilla cancel: unknown flag -jobst; did you mean -jobset?"},
		{[]string{"serve", "-listne", "127.0.0.1:0"}, "flotilla serve: unknown flag -listne; did you mean -listen?"},
		{[]string{"queue", "create", "A", "-gurantee", "cpu=1"}, "unknown flag -gurantee; did you mean -guaranteed?"},
		{[]string{"schedule", "-exepct", "x.json", "y.json"}, "flotilla schedule: unknown flag -exepct; did you mean -expect?"},
		{[]string{"simulate", "-workolad", "w.json"}, "flotilla simulate: unknown flag -workolad; did you mean -workload?"},
		{[]string{"priority", "-bank-tre", "t.json"}, "flotilla priority: unknown flag -bank-tre; did you mean -bank-tree?"},
		{[]string{"status", "-zzz", "id"}, "flotilla status: unknown flag -zzz; its flags are listed above"},
	} {
		code, _, errOut := runCmd(tc.args...)
		assert.Equal(t, 2, code, "%v", tc.args)
		assert.Contains(t, errOut, tc.want, "%v", tc.args)
	}
}

// A command without a usage text of its own answers -h with its lines of
// the main usage (its arguments: JOB_ID..., NAME) before its flags; one
// with its own keeps it.
func TestHelpNamesTheCommandsArguments(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"cancel", "-h"}, "usage:\n  flotilla cancel   JOB_ID... | -queue Q [-jobset S]"},
		{[]string{"preempt", "-h"}, "  flotilla preempt  JOB_ID... | -queue Q"},
		{[]string{"reprioritize", "-h"}, "  flotilla reprioritize -priority N (JOB_ID..."},
		{[]string{"status", "-h"}, "  flotilla status   JOB_ID... [-v] [-o json]"},
		{[]string{"watch", "-h"}, "  flotilla watch    -queue Q -jobset S"},
		{[]string{"queue", "create", "-h"}, "  flotilla queue    create NAME [-parent G]"},
		{[]string{"cluster", "cordon", "-h"}, "  flotilla cluster  list [-o json] | cordon NAME"},
		{[]string{"executor", "-h"}, "  flotilla executor -cluster NAME -nodes FILE"},
		{[]string{"submit", "-h"}, "usage: flotilla submit FILE\n"},
	} {
		code, _, errOut := runCmd(tc.args...)
		assert.Equal(t, 0, code, "%v", tc.args)
		assert.Contains(t, errOut, tc.want, "%v", tc.args)
	}
	assert.Equal(t, "", synopsis("nosuch"))
}
