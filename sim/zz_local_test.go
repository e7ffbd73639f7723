package sim_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/flotilla-sched/flotilla/sim"
)

func TestLocalDayPart(t *testing.T) {
	d := os.Getenv("SIM_DURATION")
	if d == "" {
		t.Skip()
	}
	cfg := dayConfig(t)
	cfg.Workload.Duration = d
	start := time.Now()
	last := start
	cfg.Progress = func(p sim.Progress) {
		if time.Since(last) > 10*time.Second {
			last = time.Now()
			t.Logf("wall %.0fs virtual %v cycles %d submitted %d ended %d", time.Since(start).Seconds(), p.Now, p.Cycles, p.Submitted, p.Ended)
		}
	}
	out, err := sim.Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("done: virtual %.0fs in wall %.1fs, %d jobs", out.End, time.Since(start).Seconds(), len(out.Jobs))
}
