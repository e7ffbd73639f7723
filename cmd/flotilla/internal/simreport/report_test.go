package simreport

import (
	"bytes"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flotilla-sched/flotilla/sim"
)

func TestSummaryPercentileIsNearestRank(t *testing.T) {
	vals := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	for _, tc := range []struct {
		p, want float64
	}{{50, 5}, {95, 10}, {90, 9}, {1, 1}, {100, 10}, {0, 1}} {
		assert.Equal(t, tc.want, percentile(vals, tc.p), "p%g", tc.p)
	}
	assert.True(t, math.IsNaN(percentile(nil, 50)))
}

func TestSummaryMeansOverCyclesAndDelaysOverLeasedJobs(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	w := &sim.Workload{Queues: []sim.QueueSpec{{Name: "A"}, {Name: "B"}}}
	out := &sim.Output{
		Queues: []sim.QueueRow{
			{Cycle: 0, Queue: "A", Share: 1, FairShare: 0.5},
			{Cycle: 0, Queue: "B", Share: 0, FairShare: 0.5},
			{Cycle: 1, Queue: "A", Share: 0.5, FairShare: 0.5},
			{Cycle: 1, Queue: "B", Share: 0.5, FairShare: 0.5},
		},
		Jobs: []sim.JobRow{
			{Queue: "A", Submitted: f(0), Leased: f(4), Preemptions: 1},
			{Queue: "A", Submitted: f(2), Leased: f(3)},
			{Queue: "B", Submitted: f(1)},
		},
	}
	sums := summarise(w, out)
	require.Len(t, sums, 2)
	assert.Equal(t, "A", sums[0].Name)
	assert.InDelta(t, 0.75, sums[0].MeanShare, 1e-12)
	assert.InDelta(t, 0.5, sums[0].MeanFairShare, 1e-12)
	assert.Equal(t, 1.0, sums[0].P50)
	assert.Equal(t, 4.0, sums[0].P95)
	assert.Equal(t, 1, sums[0].Preemptions)
	assert.Equal(t, 2, sums[0].Leased)
	assert.True(t, math.IsNaN(sums[1].P50), "B has no leased job")
	assert.Equal(t, 1, sums[1].Jobs)
}

func TestProgressLineStartsAfterTwoSecondsAndIsThrottled(t *testing.T) {
	var buf bytes.Buffer
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	now := t0
	l := NewProgressLine(&buf, func() time.Time { return now })
	p := sim.Progress{Now: time.Minute, End: 4 * time.Minute, Cycles: 6, Jobs: 10, Submitted: 4, Ended: 2}
	for _, step := range []struct {
		at    time.Duration
		lines int
	}{{0, 0}, {time.Second, 0}, {2 * time.Second, 1}, {2*time.Second + 100*time.Millisecond, 1}, {2*time.Second + 300*time.Millisecond, 2}} {
		now = t0.Add(step.at)
		l.Update(p)
		assert.Equal(t, step.lines, strings.Count(buf.String(), "\r"), "at %s", step.at)
	}
	assert.Contains(t, buf.String(), "virtual 1m0s ( 25%), cycle 6, 4/10 jobs submitted, 2 ended")
	l.Finish()
	assert.True(t, strings.HasSuffix(buf.String(), "\n"))

	var quiet bytes.Buffer
	q := NewProgressLine(&quiet, func() time.Time { return t0 })
	q.Update(p)
	q.Finish()
	assert.Empty(t, quiet.String(), "a run under two seconds prints nothing")
}
