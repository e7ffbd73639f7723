package scenario

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/internal/strictjson"
)

// Expect is a NAME.expect.json file: per round, how many jobs of each queue
// a scenario's run schedules and preempts and, where given, runs at the end
// of the round and the fair shares of queues and groups.
type Expect struct {
	Rounds []ExpectRound `json:"rounds"`
}

// ExpectRound is one round's expected counts by queue name.
type ExpectRound struct {
	// Scheduled and Preempted count entries of the round's scheduled and
	// preempted lists; a queue not named means 0.
	Scheduled map[string]int `json:"scheduled,omitempty"`
	Preempted map[string]int `json:"preempted,omitempty"`
	// RunningAfter, when present (even empty), is checked against
	// queues[].running for every queue, a queue not named meaning 0; when
	// absent (nil) running counts are not checked.
	RunningAfter map[string]int `json:"runningAfter,omitempty"`
	// FairShare and AdjustedFairShare give, by queue or group name, the
	// round's fairShare and adjustedFairShare of that queue or group to 3
	// decimals (rounded half up): a value matches when it is within
	// ShareTolerance of the output's. A name not given is not checked.
	FairShare         map[string]float64 `json:"fairShare,omitempty"`
	AdjustedFairShare map[string]float64 `json:"adjustedFairShare,omitempty"`
}

// ShareTolerance is how far an output's share may be from an expected one
// written to 3 decimals: half the last digit, plus room for float noise.
const ShareTolerance = 0.0005 + 1e-6

// ErrMismatch is the class of every error Check reports.
var ErrMismatch = errors.New("outcome differs from the expected one")

// Mismatch is one difference between expected and actual counts. It wraps
// ErrMismatch.
type Mismatch struct {
	// Round is the round index, or -1 when the numbers of rounds differ.
	Round int
	// Field is "scheduled", "preempted" or "runningAfter", or "rounds" when
	// the numbers of rounds differ.
	Field string
	// Queue is the queue name; empty when Field is "rounds".
	Queue     string
	Want, Got int
}

func (m *Mismatch) Error() string {
	if m.Field == "rounds" {
		return fmt.Sprintf("rounds: want %d rounds, got %d", m.Want, m.Got)
	}
	return fmt.Sprintf("rounds[%d].%s.%s: want %d, got %d", m.Round, m.Field, m.Queue, m.Want, m.Got)
}

// Unwrap returns ErrMismatch.
func (m *Mismatch) Unwrap() error { return ErrMismatch }

// ShareMismatch is an expected fair share or adjusted fair share that the
// output does not give to 3 decimals. It wraps ErrMismatch.
type ShareMismatch struct {
	Round int
	// Field is "fairShare" or "adjustedFairShare".
	Field string
	// Name is the queue or group.
	Name string
	Want float64
	// Got is the output's value; Missing when the round lists no queue or
	// group of that name.
	Got     float64
	Missing bool
}

func (m *ShareMismatch) Error() string {
	if m.Missing {
		return fmt.Sprintf("rounds[%d].%s.%s: want %.3f, but the round has no queue or group of that name", m.Round, m.Field, m.Name, m.Want)
	}
	return fmt.Sprintf("rounds[%d].%s.%s: want %.3f, got %.6f", m.Round, m.Field, m.Name, m.Want, m.Got)
}

// Unwrap returns ErrMismatch.
func (m *ShareMismatch) Unwrap() error { return ErrMismatch }

// ParseExpect decodes an expect file strictly (unknown fields are errors,
// with their JSON path) and checks that every count is ≥ 0 and every queue
// name non-empty, reporting every problem at once: a value of the wrong
// type does not hide the others, as in Parse.
func ParseExpect(data []byte) (*Expect, error) {
	e := new(Expect)
	decodeErr := strictjson.Decode(data, e)
	if strictjson.Fatal(decodeErr) {
		return nil, decodeErr
	}
	var errs []error
	for i, r := range e.Rounds {
		for _, part := range []struct {
			name string
			m    map[string]int
		}{{"scheduled", r.Scheduled}, {"preempted", r.Preempted}, {"runningAfter", r.RunningAfter}} {
			field := fmt.Sprintf("rounds[%d].%s", i, part.name)
			for _, q := range slices.Sorted(maps.Keys(part.m)) {
				if q == "" {
					errs = append(errs, flotilla.Errorf(field, "", flotilla.ErrRequired, "a queue name is empty"))
				}
				if n := part.m[q]; n < 0 {
					errs = append(errs, flotilla.Errorf(strictjson.JoinKey(field, q), strconv.Itoa(n), flotilla.ErrNegative, ""))
				}
			}
		}
		for _, part := range []struct {
			name string
			m    map[string]float64
		}{{"fairShare", r.FairShare}, {"adjustedFairShare", r.AdjustedFairShare}} {
			field := fmt.Sprintf("rounds[%d].%s", i, part.name)
			for _, q := range slices.Sorted(maps.Keys(part.m)) {
				if q == "" {
					errs = append(errs, flotilla.Errorf(field, "", flotilla.ErrRequired, "a queue or group name is empty"))
				}
				if v := part.m[q]; !(v >= 0 && v <= 1) {
					errs = append(errs, flotilla.Errorf(strictjson.JoinKey(field, q), strconv.FormatFloat(v, 'g', -1, 64),
						flotilla.ErrOutOfRange, "a share is in [0, 1]"))
				}
			}
		}
	}
	if err := strictjson.Merge(decodeErr, errors.Join(errs...)); err != nil {
		return nil, err
	}
	return e, nil
}

// Check compares out with the expectation and reports every difference, as
// an errors.Join of *Mismatch and *ShareMismatch values ordered by round,
// field and name. A
// different number of rounds is itself a mismatch; the common rounds are
// still compared.
func (e *Expect) Check(out *Output) error {
	if out == nil {
		out = &Output{}
	}
	c := e.NewCheck()
	for i := range out.Rounds {
		c.Round(&out.Rounds[i])
	}
	return c.Err()
}

// NewCheck starts comparing a run with e round by round, for runs too large
// to keep (RunStream): give it each round in order with Round, then call
// Err. It keeps only the mismatches found, never the rounds.
func (e *Expect) NewCheck() *Check { return &Check{e: e} }

// Check is an incremental Expect.Check; see Expect.NewCheck.
type Check struct {
	e      *Expect
	rounds int
	errs   []error
}

// Round compares the next round of the run with its expectation, if any.
func (c *Check) Round(got *RoundOutput) {
	i := c.rounds
	c.rounds++
	if i >= len(c.e.Rounds) {
		return
	}
	want := &c.e.Rounds[i]
	scheduled := map[string]int{}
	for _, s := range got.Scheduled {
		scheduled[s.Queue]++
	}
	preempted := map[string]int{}
	for _, p := range got.Preempted {
		preempted[p.Queue]++
	}
	c.errs = compareCounts(c.errs, i, "scheduled", want.Scheduled, scheduled)
	c.errs = compareCounts(c.errs, i, "preempted", want.Preempted, preempted)
	if want.RunningAfter != nil {
		running := map[string]int{}
		for _, q := range got.Queues {
			running[q.Name] += q.Running
		}
		c.errs = compareCounts(c.errs, i, "runningAfter", want.RunningAfter, running)
	}
	if want.FairShare != nil || want.AdjustedFairShare != nil {
		fair, adjusted := map[string]float64{}, map[string]float64{}
		for _, q := range got.Queues {
			fair[q.Name], adjusted[q.Name] = q.FairShare, q.AdjustedFairShare
		}
		for _, g := range got.Groups {
			fair[g.Name], adjusted[g.Name] = g.FairShare, g.AdjustedFairShare
		}
		c.errs = compareShares(c.errs, i, "fairShare", want.FairShare, fair)
		c.errs = compareShares(c.errs, i, "adjustedFairShare", want.AdjustedFairShare, adjusted)
	}
}

// compareShares appends a *ShareMismatch for every name of want whose share
// in got is missing or more than ShareTolerance away.
func compareShares(errs []error, round int, field string, want, got map[string]float64) []error {
	for _, name := range slices.Sorted(maps.Keys(want)) {
		g, ok := got[name]
		if !ok || math.Abs(g-want[name]) > ShareTolerance {
			errs = append(errs, &ShareMismatch{Round: round, Field: field, Name: name, Want: want[name], Got: g, Missing: !ok})
		}
	}
	return errs
}

// Err reports every difference found so far, as Expect.Check does: a
// different number of rounds first, then the rounds' mismatches in order.
// nil when the rounds given so far match.
func (c *Check) Err() error {
	if len(c.e.Rounds) != c.rounds {
		return errors.Join(append([]error{&Mismatch{Round: -1, Field: "rounds", Want: len(c.e.Rounds), Got: c.rounds}}, c.errs...)...)
	}
	return errors.Join(c.errs...)
}

// compareCounts appends a *Mismatch for every queue whose counts differ, a
// queue absent from either side counting 0.
func compareCounts(errs []error, round int, field string, want, got map[string]int) []error {
	names := map[string]bool{}
	for q := range want {
		names[q] = true
	}
	for q := range got {
		names[q] = true
	}
	for _, q := range slices.Sorted(maps.Keys(names)) {
		if want[q] != got[q] {
			errs = append(errs, &Mismatch{Round: round, Field: field, Queue: q, Want: want[q], Got: got[q]})
		}
	}
	return errs
}
