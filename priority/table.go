package priority

import (
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/flotilla-sched/flotilla/internal/safetext"
)

// jobsTableHeader is the header row of WriteJobsTable, tab-separated, with
// the columns of `flux account jobs`.
const jobsTableHeader = "JOBID\tUSER\tBANK\tBANKPRIO\tBANKFACT\tQUEUE\tQPRIO\tQFACT\t" +
	"FAIRSHARE\tFSFACTOR\tURGENCY\tURGFACT\tPRIORITY\n"

// WriteJobsTable prints breakdowns as a table in the layout of
// flux-accounting's `flux account jobs`:
//
//	JOBID USER BANK BANKPRIO BANKFACT QUEUE QPRIO QFACT FAIRSHARE FSFACTOR URGENCY URGFACT PRIORITY
//
// As there, the *FACT/FSFACTOR columns show the weight each factor had when
// the job's priority was computed — taken from the breakdown, so the table is
// right even after the weights have changed (the warning in
// seeds/flux-accounting-job-priorities.rst does not apply). BANKPRIO always
// shows a decimal point (100.0); FAIRSHARE shows up to 6 significant digits.
// A job with no queue shows "-". A held or expedited job shows its override
// beside its urgency, "0(hold)" or "31(expedite)", with every factor and
// weight still shown and PRIORITY 0 or 4294967295. Rows are printed in the
// order given.
func WriteJobsTable(w io.Writer, rows []Breakdown) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	line := make([]string, 0, 13)
	write := func(cells []string) error {
		_, err := io.WriteString(tw, strings.Join(cells, "\t")+"\n")
		return err
	}
	if _, err := io.WriteString(tw, jobsTableHeader); err != nil {
		return err
	}
	for _, b := range rows {
		c := &b.Calculation
		queue := b.Queue
		if queue == "" {
			queue = "-"
		}
		line = append(line[:0],
			cell(b.JobID),
			cell(b.User),
			cell(b.Bank),
			bankPrio(c.Bank.Factor),
			strconv.FormatInt(c.Bank.Weight, 10),
			cell(queue),
			strconv.FormatInt(c.QueuePriority, 10),
			strconv.FormatInt(c.Queue.Weight, 10),
			strconv.FormatFloat(c.FairShare.Factor, 'g', 6, 64),
			strconv.FormatInt(c.FairShare.Weight, 10),
			urgency(c),
			strconv.FormatInt(c.Urgency.Weight, 10),
			strconv.FormatUint(uint64(c.Priority), 10),
		)
		if err := write(line); err != nil {
			return err
		}
	}
	return tw.Flush()
}

// cell keeps user-supplied names from breaking the table: "-" for an empty
// name, the name Go-quoted when it holds control characters or invalid UTF-8
// (safetext.Name).
func cell(s string) string {
	if s == "" {
		return "-"
	}
	return safetext.Name(s)
}

// urgency is the URGENCY cell: the urgency, and the override it caused.
func urgency(c *Calculation) string {
	s := strconv.FormatFloat(c.Urgency.Factor, 'f', -1, 64)
	if c.Override != NotOverridden {
		s += "(" + c.Override.String() + ")"
	}
	return s
}

func bankPrio(p float64) string {
	s := strconv.FormatFloat(p, 'f', -1, 64)
	if !strings.ContainsAny(s, ".eEnN") {
		s += ".0"
	}
	return s
}
