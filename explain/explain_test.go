package explain

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A member of a gang its queue does not hold whole (a library's store can
// hold one; scenarios and the service queue gangs whole) is placed after
// every job the queue offers, not at a numbered place.
func TestExplainTextPlacesAMemberOfAnIncompleteGangAfterEveryJobOffered(t *testing.T) {
	var out strings.Builder
	ex := &Explanation{Job: "g-0", Queue: "A", State: "unschedulable",
		Place: &Place{Position: 4, Queued: 5, Ahead: 3, AheadRequests: map[string]string{"cpu": "6"}, GangIncomplete: true}}
	require.NoError(t, ex.WriteText(&out))
	assert.Contains(t, out.String(), "last of 5 queued in A when the round started; 3 ahead, requesting cpu 6 in total; its gang is not all queued, and a queue offers a gang only whole\n")
}
