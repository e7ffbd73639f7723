// Package simreport writes what `flotilla simulate` shows of a run of
// package sim besides its tables: four plots made with gonum/plot (each
// queue's share against its fair share, cluster utilisation per resource,
// queueing-delay percentiles per queue, preemptions per cycle), each as PNG
// and SVG, and an index.html with a per-queue summary (Write); for a run
// with queue groups, a fifth plot (GroupPlot: each group's share against
// its fair share over time, and its usage with usage memory on) and a
// per-group summary; and the progress line a long run prints on a
// terminal (ProgressLine).
//
// It lives in the command's module because gonum/plot is not one of the
// core module's dependencies.
package simreport
