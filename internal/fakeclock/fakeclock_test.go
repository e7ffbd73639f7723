package fakeclock_test

import (
	"testing"
	"time"

	"github.com/flotilla-sched/flotilla/internal/fakeclock"
)

func TestClockReadsItsTimeUntilAdvanced(t *testing.T) {
	t0 := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	c := fakeclock.New(t0)
	if got := c.Now(); !got.Equal(t0) {
		t.Fatalf("Now = %v, want %v", got, t0)
	}
	c.Advance(90 * time.Second)
	if got := c.Now(); !got.Equal(t0.Add(90 * time.Second)) {
		t.Fatalf("after Advance, Now = %v", got)
	}
}
