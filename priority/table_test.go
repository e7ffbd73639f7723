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

// TestWriteJobsTableShowsHoldAndExpedite: a held or expedited job shows the
// override beside its urgency, its factors and weights as for any job, and
// PRIORITY 0 or 4294967295.
func TestWriteJobsTableShowsHoldAndExpedite(t *testing.T) {
	w := priority.DefaultWeights()
	rows := []priority.Breakdown{
		{JobID: "held", User: "u", Bank: "A",
			Calculation: priority.Calculate(priority.Factors{FairShare: 0.5, Queue: 2, Urgency: 0}, w)},
		{JobID: "fast", User: "u", Bank: "A",
			Calculation: priority.Calculate(priority.Factors{FairShare: 0.5, Queue: 2, Urgency: 31}, w)},
	}
	var b strings.Builder
	require.NoError(t, priority.WriteJobsTable(&b, rows))
	assert.Equal(t, strings.Join([]string{
		"JOBID  USER  BANK  BANKPRIO  BANKFACT  QUEUE  QPRIO  QFACT  FAIRSHARE  FSFACTOR  URGENCY       URGFACT  PRIORITY",
		"held   u     A     0.0       0         -      2      10000  0.5        100000    0(hold)       1000     0",
		"fast   u     A     0.0       0         -      2      10000  0.5        100000    31(expedite)  1000     4294967295",
		"",
	}, "\n"), b.String())
}

// TestWriteJobsTableShowsQueuePriorityExactly: QPRIO is an int64 in the
// tree, and the table prints it exactly even above 2^53, where a float64
// copy would round it.
func TestWriteJobsTableShowsQueuePriorityExactly(t *testing.T) {
	tree, err := priority.LoadBankTree(strings.NewReader(
		`{"banks": [], "associations": [{"user": "u", "bank": "root"}], "queues": [{"name": "q", "priority": 9007199254740993}]}`), t0)
	if err != nil {
		t.Fatal(err)
	}
	b, err := tree.Prioritize(priority.JobRef{ID: "j", User: "u", Queue: "q"}, priority.DefaultUrgency, t0)
	if err != nil {
		t.Fatal(err)
	}
	var sb strings.Builder
	if err := priority.WriteJobsTable(&sb, []priority.Breakdown{b}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(sb.String(), "9007199254740993") {
		t.Errorf("table does not show the queue priority 9007199254740993:\n%s", sb.String())
	}
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
