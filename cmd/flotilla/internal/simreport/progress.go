package simreport

import (
	"fmt"
	"io"
	"time"

	"github.com/flotilla-sched/flotilla/sim"
)

// Progress-line timing: nothing is printed before progressAfter of real
// time, then at most one line every progressEvery.
const (
	progressAfter = 2 * time.Second
	progressEvery = 250 * time.Millisecond
)

// ProgressLine rewrites one line on w (carriage return) with a run's
// progress once the run has lasted progressAfter; now is the real clock.
type ProgressLine struct {
	w       io.Writer
	now     func() time.Time
	start   time.Time
	last    time.Time
	printed bool
}

func NewProgressLine(w io.Writer, now func() time.Time) *ProgressLine {
	return &ProgressLine{w: w, now: now, start: now()}
}

// Update is sim.Config.Progress.
func (l *ProgressLine) Update(p sim.Progress) {
	t := l.now()
	if t.Sub(l.start) < progressAfter || (l.printed && t.Sub(l.last) < progressEvery) {
		return
	}
	l.last, l.printed = t, true
	done := ""
	switch {
	case p.End > 0:
		done = fmt.Sprintf(" (%3.0f%%)", 100*p.Now.Seconds()/p.End.Seconds())
	case p.Jobs > 0:
		done = fmt.Sprintf(" (%3.0f%% of jobs ended)", 100*float64(p.Ended)/float64(p.Jobs))
	}
	fmt.Fprintf(l.w, "\rsimulate: virtual %s%s, cycle %d, %d/%d jobs submitted, %d ended, %s elapsed ",
		p.Now, done, p.Cycles, p.Submitted, p.Jobs, p.Ended, t.Sub(l.start).Round(time.Second))
}

// Finish ends the line if one was printed.
func (l *ProgressLine) Finish() {
	if l.printed {
		fmt.Fprintln(l.w)
	}
}
