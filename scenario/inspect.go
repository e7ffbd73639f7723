package scenario

import (
	"context"

	"github.com/flotilla-sched/flotilla/queue"
	"github.com/flotilla-sched/flotilla/scheduler"
)

// Decision is one round's decision as the scheduler made it, before the
// runner applies it: what `flotilla explain` reads to explain one job.
type Decision struct {
	// Round counts from 0.
	Round int
	// Snapshot is what the cycle decided over: the nodes, the queues, the
	// jobs running when the round started (after its finish and cancel
	// lists) and the queued jobs (Store).
	Snapshot *scheduler.Snapshot
	// Store holds the queued jobs as the cycle read them: the round's
	// submissions in, nothing it scheduled out yet.
	Store *queue.Store
	// Result is the scheduler's decision, with every unscheduled job's
	// reason (Config.ReportEveryUnscheduled).
	Result *scheduler.Result
}

// RunInspect plays a built scenario as RunStream does and, for each round,
// calls decided with the round's Decision right after the scheduler made
// it and before the runner applies it, then emit with the round's output.
// Neither may keep its argument's store or snapshot past its return, nor
// modify them; an error from either stops the run and is returned as it is.
func RunInspect(ctx context.Context, b *Built, decided func(d *Decision) error, emit func(r *RoundOutput) error) error {
	return runStream(ctx, b, decided, emit)
}
