package main

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

// progressLine rewrites one line on w (carriage return) with a run's
// progress once the run has lasted progressAfter; now is the real clock.
type progressLine struct {
	w       io.Writer
	now     func() time.Time
	start   time.Time
	last    time.Time
	printed bool
}

func newProgressLine(w io.Writer, now func() time.Time) *progressLine {
	return &progressLine{w: w, now: now, start: now()}
}

// update is sim.Config.Progress.
func (l *progressLine) update(p sim.Progress) {
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

// finish ends the line if one was printed.
func (l *progressLine) finish() {
	if l.printed {
		fmt.Fprintln(l.w)
	}
}
