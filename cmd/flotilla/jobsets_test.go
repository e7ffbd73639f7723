package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// cancel -jobset, events and watch -until-done on a job set the queue
// never had exit 1 saying it is not found, as for an unknown job id.
func TestCommandsOnAJobSetThatDoesNotExistSaySoAndExit1(t *testing.T) {
	p := newInProcess(t)
	for _, args := range [][]string{
		{"cancel", "-queue", "A", "-jobset", "nosuch"},
		{"events", "-queue", "A", "-jobset", "nosuch"},
		{"watch", "-queue", "A", "-jobset", "nosuch", "-until-done"},
	} {
		code, out, errOut := runCmd(append(args, "-server", p.url)...)
		assert.Equal(t, 1, code, "%v: %s", args, errOut)
		assert.Empty(t, out, "%v", args)
		assert.Contains(t, errOut, `jobSet "nosuch": not found: queue A has no job set of that name`, "%v", args)
	}
}
