package priority_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flotilla-sched/flotilla/priority"
)

func TestWriteJobsTableFormats(t *testing.T) {
	w := priority.DefaultWeights()
	w.Bank = 10
	rows := []priority.Breakdown{
		{JobID: "j1", User: "user2", Bank: "C",
			Calculation: priority.Calculate(priority.Factors{FairShare: 6.0 / 7, Bank: -5, Urgency: 20}, w)},
		{JobID: "j\t2", User: "odd\nname", Bank: "A", Queue: "gold",
			Calculation: priority.Calculate(priority.Factors{FairShare: 0.5, Queue: 3, Bank: 2.5, Urgency: 16}, w)},
	}
	var b strings.Builder
	require.NoError(t, priority.WriteJobsTable(&b, rows))
	assert.Equal(t, strings.Join([]string{
		"JOBID   USER         BANK  BANKPRIO  BANKFACT  QUEUE  QPRIO  QFACT  FAIRSHARE  FSFACTOR  URGENCY  URGFACT  PRIORITY",
		"j1      user2        C     -5.0      10        -      0      10000  0.857143   100000    20       1000     89664",
		"\"j\\t2\"  \"odd\\nname\"  A     2.5       10        gold   3      10000  0.5        100000    16       1000     80025",
		"",
	}, "\n"), b.String())
}

func TestWriteJobsTableEmpty(t *testing.T) {
	var b strings.Builder
	require.NoError(t, priority.WriteJobsTable(&b, nil))
	assert.Equal(t, "JOBID  USER  BANK  BANKPRIO  BANKFACT  QUEUE  QPRIO  QFACT  FAIRSHARE  FSFACTOR  URGENCY  URGFACT  PRIORITY\n", b.String())
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestWriteJobsTablePropagatesWriteErrors(t *testing.T) {
	err := priority.WriteJobsTable(failingWriter{}, []priority.Breakdown{{JobID: "x"}})
	assert.EqualError(t, err, "disk full")
}

// TestWriteJobsTableEscapesNamesWithControlCharacters: job, user, bank and
// queue names holding ESC, newline or tab come out Go-quoted, one line per
// job, with no raw control character left.
func TestWriteJobsTableEscapesNamesWithControlCharacters(t *testing.T) {
	evil := "x\x1b[31m\nforged\ty"
	rows := []priority.Breakdown{{JobID: evil, User: evil, Bank: evil, Queue: evil}}
	var b strings.Builder
	require.NoError(t, priority.WriteJobsTable(&b, rows))
	out := b.String()
	assert.Equal(t, 2, strings.Count(out, "\n"), out)
	assert.NotContains(t, out, "\x1b")
	assert.NotContains(t, out, "\t")
	assert.Equal(t, 4, strings.Count(out, `"x\x1b[31m\nforged\ty"`), out)
}
