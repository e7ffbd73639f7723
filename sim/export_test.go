package sim

import (
	"context"
	"time"

	"github.com/flotilla-sched/flotilla/scheduler"
)

// RunObserved is Run with observe called after every cycle that decided,
// with the cycle's virtual time and the scheduler's result.
func RunObserved(ctx context.Context, cfg Config, observe func(now time.Duration, res *scheduler.Result)) (*Output, error) {
	r, err := newRun(ctx, cfg)
	if err != nil {
		return nil, err
	}
	r.observe = observe
	if err := r.loop(ctx); err != nil {
		return nil, err
	}
	return r.out, nil
}
