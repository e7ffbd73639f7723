package postgres

import (
	"context"
	"fmt"
	"testing"

	"github.com/leanovate/gopter"
	"github.com/leanovate/gopter/gen"
	"github.com/leanovate/gopter/prop"

	"github.com/flotilla-sched/flotilla/backend/backendtest"
	"github.com/flotilla-sched/flotilla/events"
)

// stepGen generates the steps of a history (backendtest.Step), as
// backend/memory's property does: mostly events of four jobs, every type
// with submitted and leased twice as often so that histories reach
// leases, expiries and requeues; a write ends after two steps in three;
// one step in eight is a read.
func stepGen() gopter.Gen {
	var types []any
	for _, typ := range events.Types() {
		types = append(types, typ)
	}
	typeGen := gen.OneConstOf(append(types, events.Submitted, events.Leased)...)
	return gopter.CombineGens(
		gen.OneConstOf(0, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4), gen.IntRange(0, 5), gen.IntRange(0, 3),
		gen.IntRange(0, 3), typeGen, gen.Bool(), gen.Bool(), gen.OneConstOf(0, 0, 0, 1), gen.IntRange(0, 2),
		gen.OneConstOf(0, 0, 0, -1, 1), gen.OneConstOf(0, 0, 1, 2), gen.OneConstOf(false, false, false, false, false, false, false, true),
		gen.OneConstOf(true, true, false),
	).Map(func(v []any) backendtest.Step {
		return backendtest.Step{
			Read: v[0].(int), From: v[1].(int), Limit: v[2].(int),
			Job: v[3].(int), Type: v[4].(events.Type), Requeued: v[5].(bool), Reason: v[6].(bool), ExitCode: v[7].(int),
			Cluster: v[8].(int), Attempt: v[9].(int), ClientID: v[10].(int), OtherQueue: v[11].(bool), Last: v[12].(bool),
		}
	})
}

// TestPropertyCommitAndReadsAgreeWithTheModel runs random histories of
// writes (valid and refused: bad transitions, resubmitted jobs, client ids
// used twice, unknown queues and jobs, negative attempts) and reads
// against this backend and backendtest.Model, the oracle backend/memory
// is checked against too: they agree on every write's acceptance, refusal
// class and stored events, every read, and in the end every log, every
// job's record and the live jobs. Every history works in a queue of its
// own in one database schema.
func TestPropertyCommitAndReadsAgreeWithTheModel(t *testing.T) {
	ctx := context.Background()
	pg := open(t, freshSchema(t))
	params := gopter.DefaultTestParameters()
	params.MinSuccessfulTests = 1000
	if testing.Short() {
		params.MinSuccessfulTests = 100
	}
	params.MaxSize = 60
	params.Rng.Seed(11)
	props := gopter.NewProperties(params)
	cases := 0
	props.Property("postgres = backendtest.Model", prop.ForAll(func(steps []backendtest.Step) string {
		cases++
		return backendtest.CheckHistory(ctx, pg, fmt.Sprintf("q%d", cases), steps)
	}, gen.SliceOf(stepGen())))
	props.TestingRun(t)
}
