package priority_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/priority"
)

var reviewNow = time.Unix(0, 0).UTC()

// A key given twice silently keeps the last value: here the second "banks"
// discards bank A, and the user is told that association's bank "A" does
// not exist. The scenario decoder reports ErrDuplicate for the same input.
func TestReviewLoadBankTreeDuplicateKey(t *testing.T) {
	_, err := priority.LoadBankTree(strings.NewReader(
		`{"banks": [{"name": "A"}], "associations": [{"user": "u", "bank": "A"}], "banks": []}`), reviewNow)
	if !errors.Is(err, flotilla.ErrDuplicate) {
		t.Errorf("err = %v, want ErrDuplicate for the repeated key banks", err)
	}
}

// "Unknown keys are errors" (BankTreeFile doc), but keys are matched
// case-insensitively, so "Name"/"Shares"/"User" are taken as known; the
// jobs file of the same command rejects "ID".
func TestReviewLoadBankTreeKeyCase(t *testing.T) {
	_, err := priority.LoadBankTree(strings.NewReader(
		`{"banks": [{"Name": "A", "SHARES": 2}], "associations": [{"User": "u", "Bank": "A"}]}`), reviewNow)
	if !errors.Is(err, flotilla.ErrUnknownName) {
		t.Errorf("err = %v, want ErrUnknownName for keys that are not the format's", err)
	}
}

// An unknown key deep in the file is reported with Field "banktree"; the
// error should name the key's path (banks[0].prio) as the scenario
// decoder does.
func TestReviewLoadBankTreeUnknownKeyPath(t *testing.T) {
	_, err := priority.LoadBankTree(strings.NewReader(
		`{"banks": [{"name": "A", "prio": 3}], "associations": []}`), reviewNow)
	var fe *flotilla.FieldError
	if !errors.As(err, &fe) || fe.Field != "banks[0].prio" {
		t.Errorf("err = %v, want Field banks[0].prio", err)
	}
}

// Slices documents that "a floor of exactly 0 can only be had with a tiny
// positive value". A valid floor below ~5.6e-309 makes 1/floor +Inf,
// Inf/Inf is NaN, and the offer is split evenly instead of going (almost)
// all to the priority-0 queue.
func TestReviewSlicesTinyFloor(t *testing.T) {
	s, err := priority.Slices(flotilla.Resources{1000}, []float64{0, 1}, 1e-310)
	if err != nil {
		t.Fatal(err)
	}
	if s[0][0] < 999 {
		t.Errorf("slices %v, want queue 0 (priority 0 under floor 1e-310) to get ~all of 1000", s)
	}
}

// Seed numbers that must hold (sanity, expected to pass).
func TestReviewSeedNumbers(t *testing.T) {
	s, err := priority.Slices(flotilla.Resources{3000}, []float64{1, 2}, 0)
	if err != nil || s[0][0] != 2000 || s[1][0] != 1000 {
		t.Errorf("A priority 1, B priority 2: slices %v, %v; want 2/3, 1/3", s, err)
	}
	w := priority.DefaultWeights()
	if p := priority.Calculate(priority.Factors{FairShare: 0.5, Urgency: 16}, w).Priority; p != 50000 {
		t.Errorf("new association: %d, want 50000", p)
	}
	w.Bank = 10
	if p := priority.Calculate(priority.Factors{FairShare: 0.5, Bank: 300, Urgency: 16}, w).Priority; p != 53000 {
		t.Errorf("bank A: %d, want 53000", p)
	}
	if p := priority.Calculate(priority.Factors{FairShare: 0.5, Bank: -5, Urgency: 16}, w).Priority; p != 49950 {
		t.Errorf("bank C: %d, want 49950", p)
	}
	w.Bank = 1000
	if p := priority.Calculate(priority.Factors{FairShare: 0.5, Queue: 1, Bank: 100, Urgency: 16}, w).Priority; p != 160000 {
		t.Errorf("bonds: %d, want 160000", p)
	}
	if p := priority.Calculate(priority.Factors{FairShare: 0, Urgency: 0}, w).Priority; p != 0 {
		t.Errorf("negative sum: %d, want 0", p)
	}
	if p := priority.Calculate(priority.Factors{FairShare: 1, Queue: 1 << 40, Urgency: 31}, w).Priority; p != 4294967295 {
		t.Errorf("huge sum: %d, want 4294967295", p)
	}
	if got := priority.Decay(10, 20, time.Hour, time.Hour); got != 15 {
		t.Errorf("one half-time from 10 toward 20: %v, want 15", got)
	}
}

// QPRIO is an int64 in the tree but is stored in the breakdown as a
// float64, so the table prints a queue priority above 2^53 wrongly.
func TestReviewTableQueuePriorityExact(t *testing.T) {
	tree, err := priority.LoadBankTree(strings.NewReader(
		`{"banks": [], "associations": [{"user": "u", "bank": "root"}], "queues": [{"name": "q", "priority": 9007199254740993}]}`), reviewNow)
	if err != nil {
		t.Fatal(err)
	}
	b, err := tree.Prioritize(priority.JobRef{ID: "j", User: "u", Queue: "q"}, priority.DefaultUrgency, reviewNow)
	if err != nil {
		t.Fatal(err)
	}
	var sb strings.Builder
	if err := priority.WriteJobsTable(&sb, []priority.Breakdown{b}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(sb.String(), "9007199254740993") {
		t.Errorf("table does not show the queue priority 9007199254740993:\n%s", sb.String())
	}
}
