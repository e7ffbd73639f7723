package priority_test

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	flotilla "github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/priority"
)

func newTree(t testing.TB) *priority.BankTree {
	t.Helper()
	tree, err := priority.NewBankTree(priority.DefaultUsageHalfLife, t0)
	require.NoError(t, err)
	return tree
}

// seedTree is the hierarchy of seeds/flux-accounting-job-priorities.rst:
// banks A (300), B (100), C (−5); user2 under A and C.
func seedTree(t testing.TB) *priority.BankTree {
	tree := newTree(t)
	require.NoError(t, tree.AddBank("A", "", 1, 300))
	require.NoError(t, tree.AddBank("B", "", 1, 100))
	require.NoError(t, tree.AddBank("C", "", 1, -5))
	for _, a := range [][2]string{{"user1", "A"}, {"user2", "A"}, {"user3", "B"}, {"user4", "B"}, {"user2", "C"}, {"user5", "C"}} {
		require.NoError(t, tree.AddAssociation(a[0], a[1], 1))
	}
	return tree
}

func TestBankTreeSeedExamples(t *testing.T) {
	tree := seedTree(t)
	b, err := tree.Prioritize(priority.JobRef{ID: "first", User: "user1", Bank: "A"}, priority.DefaultUrgency, t0)
	require.NoError(t, err)
	assert.Equal(t, uint32(50000), b.Calculation.Priority, "bank weight 0 by default: bank priority does not count")

	w := tree.Weights()
	w.Bank = 10
	require.NoError(t, tree.SetWeights(w))
	jobA, err := tree.Prioritize(priority.JobRef{ID: "job_A", User: "user2", Bank: "A"}, priority.DefaultUrgency, t0)
	require.NoError(t, err)
	jobC, err := tree.Prioritize(priority.JobRef{ID: "job_C", User: "user2", Bank: "C"}, priority.DefaultUrgency, t0)
	require.NoError(t, err)
	assert.Equal(t, uint32(53000), jobA.Calculation.Priority)
	assert.Equal(t, uint32(49950), jobC.Calculation.Priority, "the seed's 48500 multiplies 300 × −5")

	// No bank given: the user's first association (A) is the default.
	def, err := tree.Prioritize(priority.JobRef{ID: "job_def", User: "user2"}, priority.DefaultUrgency, t0)
	require.NoError(t, err)
	assert.Equal(t, "A", def.Bank)
	assert.Equal(t, uint32(53000), def.Calculation.Priority)
}

func TestBankTreeFluxAccountJobsExample(t *testing.T) {
	tree := newTree(t)
	require.NoError(t, tree.AddBank("A", "", 1, 100))
	require.NoError(t, tree.AddAssociation("bonds", "A", 1))
	require.NoError(t, tree.SetQueuePriority("bronze", 1))
	w := tree.Weights()
	w.Bank = 1000
	require.NoError(t, tree.SetWeights(w))
	b, err := tree.Prioritize(priority.JobRef{ID: "fnYtwBV", User: "bonds", Bank: "A", Queue: "bronze"}, priority.DefaultUrgency, t0)
	require.NoError(t, err)
	assert.Equal(t, uint32(160000), b.Calculation.Priority)
	assert.Equal(t, int64(1), tree.QueuePriority("bronze"))
	assert.Zero(t, tree.QueuePriority("gold"))
}

func TestBreakdownKeepsItsWeights(t *testing.T) {
	tree := seedTree(t)
	w := tree.Weights()
	w.Bank = 10
	require.NoError(t, tree.SetWeights(w))
	_, err := tree.Prioritize(priority.JobRef{ID: "j1", User: "user2", Bank: "A"}, priority.DefaultUrgency, t0)
	require.NoError(t, err)
	before, _ := tree.Breakdown("j1")

	w.Bank = 1000
	w.FairShare = 1
	require.NoError(t, tree.SetWeights(w))
	after, ok := tree.Breakdown("j1")
	require.True(t, ok)
	assert.Equal(t, before, after, "changing weights does not rewrite a stored breakdown")
	assert.Equal(t, int64(10), after.Calculation.Bank.Weight)
	assert.Equal(t, uint32(53000), after.Calculation.Priority)

	// An explicit priority update recomputes, recording the new time.
	later := t0.Add(time.Hour)
	require.NoError(t, tree.Reprioritize(later))
	re, _ := tree.Breakdown("j1")
	assert.Equal(t, later, re.ComputedAt)
	assert.Equal(t, int64(1000), re.Calculation.Bank.Weight)
	assert.Equal(t, uint32(300001), re.Calculation.Priority, "0.5·1 + 300·1000, rounded half up")
	assert.Equal(t, float64(16), re.Calculation.Urgency.Factor, "urgency is kept")

	assert.True(t, tree.Forget("j1"))
	assert.False(t, tree.Forget("j1"))
	assert.Empty(t, tree.Breakdowns())
}

func TestBreakdownsKeepSubmissionOrder(t *testing.T) {
	tree := seedTree(t)
	for _, id := range []string{"z", "a", "m"} {
		_, err := tree.Prioritize(priority.JobRef{ID: id, User: "user1"}, priority.DefaultUrgency, t0)
		require.NoError(t, err)
	}
	_, err := tree.Prioritize(priority.JobRef{ID: "a", User: "user1"}, 20, t0)
	require.NoError(t, err)
	var ids []string
	for _, b := range tree.Breakdowns() {
		ids = append(ids, b.JobID)
	}
	assert.Equal(t, []string{"z", "a", "m"}, ids)
	a, _ := tree.Breakdown("a")
	assert.Equal(t, float64(20), a.Calculation.Urgency.Factor, "re-prioritizing replaces in place")
}

// TestReprioritizeKeepsHeldAndExpeditedJobs: the stored breakdown of a held
// or expedited job keeps its factors and its override, and a priority update
// under new weights leaves it held or expedited.
func TestReprioritizeKeepsHeldAndExpeditedJobs(t *testing.T) {
	tree := seedTree(t)
	held, err := tree.Prioritize(priority.JobRef{ID: "held", User: "user1"}, priority.MinUrgency, t0)
	require.NoError(t, err)
	fast, err := tree.Prioritize(priority.JobRef{ID: "fast", User: "user1"}, priority.MaxUrgency, t0)
	require.NoError(t, err)
	assert.Equal(t, priority.Held, held.Calculation.Override)
	assert.Equal(t, uint32(0), held.Calculation.Priority)
	assert.Equal(t, 0.5, held.Calculation.FairShare.Factor, "the factors are still stored")
	assert.Equal(t, priority.Expedited, fast.Calculation.Override)
	assert.Equal(t, uint32(priority.MaxJobPriority), fast.Calculation.Priority)

	w := tree.Weights()
	w.FairShare = 1 << 40
	require.NoError(t, tree.SetWeights(w))
	require.NoError(t, tree.Reprioritize(t0.Add(time.Hour)))
	held, _ = tree.Breakdown("held")
	fast, _ = tree.Breakdown("fast")
	assert.Equal(t, priority.Held, held.Calculation.Override)
	assert.Equal(t, uint32(0), held.Calculation.Priority)
	assert.Equal(t, int64(1<<40), held.Calculation.FairShare.Weight)
	assert.Equal(t, priority.Expedited, fast.Calculation.Override)
	assert.Equal(t, uint32(priority.MaxJobPriority), fast.Calculation.Priority)
}

// TestFairShareFluxDocExample is the worked example of flux-accounting's
// doc/components/fair-share.rst: 3 accounts, 7 users.
func TestFairShareFluxDocExample(t *testing.T) {
	tree := newTree(t)
	require.NoError(t, tree.AddBank("account1", "", 1000, 0))
	require.NoError(t, tree.AddBank("account2", "", 100, 0))
	require.NoError(t, tree.AddBank("account3", "", 10, 0))
	leaves := []struct {
		bank, user string
		shares     int64
		usage      float64
		want       float64
	}{
		{"account1", "leaf.1.1", 10000, 100, 2.0 / 7},
		{"account1", "leaf.1.2", 1000, 11, 1.0 / 7},
		{"account1", "leaf.1.3", 100000, 10, 3.0 / 7},
		{"account2", "leaf.2.1", 100000, 8, 5.0 / 7},
		{"account2", "leaf.2.2", 10000, 3, 4.0 / 7},
		{"account3", "leaf.3.1", 100, 0, 7.0 / 7},
		{"account3", "leaf.3.2", 10, 1, 6.0 / 7},
	}
	for _, l := range leaves {
		require.NoError(t, tree.AddAssociation(l.user, l.bank, l.shares))
		require.NoError(t, tree.AddUsage(l.user, l.bank, l.usage, t0))
	}
	require.NoError(t, tree.Recompute(t0))
	for _, l := range leaves {
		a, ok := tree.Association(l.user, l.bank)
		require.True(t, ok)
		assert.InDelta(t, l.want, a.FairShare, 1e-12, l.user)
		assert.Equal(t, int(math.Round(l.want*7)), a.Rank, l.user)
	}
	banks := tree.Banks()
	require.Len(t, banks, 3)
	assert.Equal(t, priority.BankInfo{Name: "account1", Parent: "root", Shares: 1000, Usage: 121}, banks[0])
	assert.Equal(t, 11.0, banks[1].Usage)
	assert.Equal(t, 1.0, banks[2].Usage)

	all := tree.Associations()
	assert.Equal(t, "leaf.3.1", all[0].User, "highest fair-share first")
	assert.Equal(t, "leaf.1.2", all[6].User)
}

func TestFairShareNewAssociationIsHalf(t *testing.T) {
	tree := seedTree(t)
	for _, a := range tree.Associations() {
		assert.Equal(t, 0.5, a.FairShare)
		assert.Zero(t, a.Rank)
	}
	require.NoError(t, tree.AddUsage("user1", "A", 10, t0))
	require.NoError(t, tree.Recompute(t0))
	a, _ := tree.Association("user1", "A")
	assert.Equal(t, 1, a.Rank, "the only association with usage ranks last")
	assert.InDelta(t, 1.0/6, a.FairShare, 1e-12)

	require.NoError(t, tree.AddBank("D", "", 1, 0))
	require.NoError(t, tree.AddAssociation("user6", "D", 1))
	n, _ := tree.Association("user6", "D")
	assert.Equal(t, 0.5, n.FairShare, "new until the next Recompute")
	require.NoError(t, tree.Recompute(t0))
	n, _ = tree.Association("user6", "D")
	assert.NotZero(t, n.Rank)
}

func TestFairShareTies(t *testing.T) {
	t.Run("tied users share the higher rank", func(t *testing.T) {
		tree := newTree(t)
		require.NoError(t, tree.AddBank("A", "", 1, 0))
		for _, u := range []string{"u1", "u2", "u3"} {
			require.NoError(t, tree.AddAssociation(u, "A", 1))
		}
		require.NoError(t, tree.AddUsage("u1", "A", 5, t0))
		require.NoError(t, tree.AddUsage("u2", "A", 5, t0))
		require.NoError(t, tree.AddUsage("u3", "A", 1, t0))
		require.NoError(t, tree.Recompute(t0))
		ranks := map[string]int{}
		for _, a := range tree.Associations() {
			ranks[a.User] = a.Rank
		}
		assert.Equal(t, map[string]int{"u3": 3, "u1": 2, "u2": 2}, ranks)
	})
	t.Run("no usage anywhere: everyone ties at 1", func(t *testing.T) {
		tree := seedTree(t)
		require.NoError(t, tree.Recompute(t0))
		for _, a := range tree.Associations() {
			assert.Equal(t, 1.0, a.FairShare)
		}
	})
	t.Run("tied banks interleave their members", func(t *testing.T) {
		// A and B tie (equal shares, equal usage 4). Within A, a1 weighs 2
		// and a2 2/3; within B, b1 weighs 1. Walked as one virtual bank the
		// order is a1, b1, a2 — not a1, a2, b1 as walking A then B would be.
		tree := newTree(t)
		require.NoError(t, tree.AddBank("A", "", 1, 0))
		require.NoError(t, tree.AddBank("B", "", 1, 0))
		require.NoError(t, tree.AddAssociation("a1", "A", 1))
		require.NoError(t, tree.AddAssociation("a2", "A", 1))
		require.NoError(t, tree.AddAssociation("b1", "B", 1))
		require.NoError(t, tree.AddUsage("a1", "A", 1, t0))
		require.NoError(t, tree.AddUsage("a2", "A", 3, t0))
		require.NoError(t, tree.AddUsage("b1", "B", 4, t0))
		require.NoError(t, tree.Recompute(t0))
		ranks := map[string]int{}
		for _, a := range tree.Associations() {
			ranks[a.User] = a.Rank
		}
		assert.Equal(t, map[string]int{"a1": 3, "b1": 2, "a2": 1}, ranks)
	})
	t.Run("zero shares rank last", func(t *testing.T) {
		tree := newTree(t)
		require.NoError(t, tree.AddBank("A", "", 1, 0))
		require.NoError(t, tree.AddAssociation("none", "A", 0))
		require.NoError(t, tree.AddAssociation("some", "A", 1))
		require.NoError(t, tree.AddUsage("some", "A", 100, t0))
		require.NoError(t, tree.Recompute(t0))
		a, _ := tree.Association("none", "A")
		assert.Equal(t, 1, a.Rank)
	})
}

func TestNestedBanks(t *testing.T) {
	tree := newTree(t)
	require.NoError(t, tree.AddBank("org", "", 1, 0))
	require.NoError(t, tree.AddBank("team1", "org", 1, 0))
	require.NoError(t, tree.AddBank("team2", "org", 1, 0))
	require.NoError(t, tree.AddBank("other", "", 1, 0))
	require.NoError(t, tree.AddAssociation("x", "team1", 1))
	require.NoError(t, tree.AddAssociation("y", "team2", 1))
	require.NoError(t, tree.AddAssociation("z", "other", 1))
	require.NoError(t, tree.AddUsage("x", "team1", 10, t0))
	require.NoError(t, tree.AddUsage("y", "team2", 1, t0))
	require.NoError(t, tree.AddUsage("z", "other", 1, t0))
	require.NoError(t, tree.Recompute(t0))
	// org used 11 of 12 with half the shares: other ranks first; inside
	// org, team2 (1) beats team1 (10).
	r := map[string]int{}
	for _, a := range tree.Associations() {
		r[a.User] = a.Rank
	}
	assert.Equal(t, map[string]int{"z": 3, "y": 2, "x": 1}, r)
	b := tree.Banks()
	assert.Equal(t, []string{"org", "team1", "team2", "other"}, []string{b[0].Name, b[1].Name, b[2].Name, b[3].Name})
	assert.Equal(t, 11.0, b[0].Usage)
}

func TestUsageDecaysWithHalfLife(t *testing.T) {
	tree, err := priority.NewBankTree(time.Hour, t0)
	require.NoError(t, err)
	require.NoError(t, tree.AddBank("A", "", 1, 0))
	require.NoError(t, tree.AddAssociation("u", "A", 1))
	require.NoError(t, tree.AddUsage("u", "A", 8, t0))
	require.NoError(t, tree.Decay(t0.Add(time.Hour)))
	a, _ := tree.Association("u", "A")
	assert.InDelta(t, 4.0, a.Usage, 1e-12)
	require.NoError(t, tree.AddUsage("u", "A", 1, t0.Add(3*time.Hour)))
	a, _ = tree.Association("u", "A")
	assert.InDelta(t, 2.0, a.Usage, 1e-12, "4 halves twice, then +1")
	assert.Equal(t, t0.Add(3*time.Hour), tree.Now())
	assert.Equal(t, time.Hour, tree.HalfLife())
}

func TestBankTreeRejectsBadInputWithoutChange(t *testing.T) {
	tree := seedTree(t)
	require.NoError(t, tree.AddUsage("user1", "A", 3, t0.Add(time.Hour)))
	require.NoError(t, tree.Recompute(t0.Add(time.Hour)))
	_, err := tree.Prioritize(priority.JobRef{ID: "keep", User: "user1"}, priority.DefaultUrgency, t0)
	require.NoError(t, err)
	snapshot := func() any {
		return []any{tree.Associations(), tree.Banks(), tree.Breakdowns(), tree.Weights(), tree.Now()}
	}
	before := snapshot()

	cases := []struct {
		name  string
		err   error
		field string
		run   func() error
	}{
		{"bank without name", flotilla.ErrRequired, "bank.name", func() error { return tree.AddBank("", "", 1, 0) }},
		{"duplicate bank", flotilla.ErrDuplicate, "bank.name", func() error { return tree.AddBank("A", "", 1, 0) }},
		{"root again", flotilla.ErrDuplicate, "bank.name", func() error { return tree.AddBank("root", "", 1, 0) }},
		{"unknown parent", flotilla.ErrUnknownName, "bank.parent", func() error { return tree.AddBank("X", "nope", 1, 0) }},
		{"negative bank shares", flotilla.ErrNegative, "bank.shares", func() error { return tree.AddBank("X", "", -1, 0) }},
		{"NaN bank priority", flotilla.ErrMalformed, "bank.priority", func() error { return tree.AddBank("X", "", 1, math.NaN()) }},
		{"association without user", flotilla.ErrRequired, "association.user", func() error { return tree.AddAssociation("", "A", 1) }},
		{"association to unknown bank", flotilla.ErrUnknownName, "association.bank", func() error { return tree.AddAssociation("u", "Z", 1) }},
		{"duplicate association", flotilla.ErrDuplicate, "association", func() error { return tree.AddAssociation("user1", "A", 1) }},
		{"negative association shares", flotilla.ErrNegative, "association.shares", func() error { return tree.AddAssociation("u", "A", -3) }},
		{"set shares of unknown association", flotilla.ErrUnknownName, "association", func() error { return tree.SetAssociationShares("user1", "B", 2) }},
		{"set negative bank shares", flotilla.ErrNegative, "bank.shares", func() error { return tree.SetBankShares("A", -2) }},
		{"set priority of unknown bank", flotilla.ErrUnknownName, "bank", func() error { return tree.SetBankPriority("Z", 2) }},
		{"infinite bank priority", flotilla.ErrMalformed, "bank.priority", func() error { return tree.SetBankPriority("A", math.Inf(-1)) }},
		{"queue without name", flotilla.ErrRequired, "queue.name", func() error { return tree.SetQueuePriority("", 2) }},
		{"negative weight", flotilla.ErrNegative, "weights.fairshare", func() error { return tree.SetWeights(priority.Weights{FairShare: -1}) }},
		{"usage back in time", flotilla.ErrOutOfRange, "now", func() error { return tree.AddUsage("user1", "A", 1, t0) }},
		{"negative usage", flotilla.ErrNegative, "usage", func() error { return tree.AddUsage("user1", "A", -1, t0.Add(2*time.Hour)) }},
		{"NaN usage", flotilla.ErrMalformed, "usage", func() error { return tree.AddUsage("user1", "A", math.NaN(), t0.Add(2*time.Hour)) }},
		{"usage for unknown association", flotilla.ErrUnknownName, "association", func() error { return tree.AddUsage("user1", "C", 1, t0.Add(2*time.Hour)) }},
		{"usage beyond MaxUsage", flotilla.ErrOutOfRange, "usage", func() error { return tree.AddUsage("user1", "A", 2e300, t0.Add(2*time.Hour)) }},
		{"decay back in time", flotilla.ErrOutOfRange, "now", func() error { return tree.Decay(t0) }},
		{"recompute back in time", flotilla.ErrOutOfRange, "now", func() error { return tree.Recompute(t0) }},
		{"job without id", flotilla.ErrRequired, "job.id", func() error {
			_, err := tree.Prioritize(priority.JobRef{User: "user1"}, 16, t0)
			return err
		}},
		{"job without user", flotilla.ErrRequired, "job.user", func() error {
			_, err := tree.Prioritize(priority.JobRef{ID: "j"}, 16, t0)
			return err
		}},
		{"urgency 32", flotilla.ErrOutOfRange, "job.urgency", func() error {
			_, err := tree.Prioritize(priority.JobRef{ID: "j", User: "user1"}, 32, t0)
			return err
		}},
		{"urgency -1", flotilla.ErrOutOfRange, "job.urgency", func() error {
			_, err := tree.Prioritize(priority.JobRef{ID: "j", User: "user1"}, -1, t0)
			return err
		}},
		{"unknown user", flotilla.ErrUnknownName, "job.user", func() error {
			_, err := tree.Prioritize(priority.JobRef{ID: "j", User: "nobody"}, 16, t0)
			return err
		}},
		{"user not in bank", flotilla.ErrUnknownName, "job.bank", func() error {
			_, err := tree.Prioritize(priority.JobRef{ID: "j", User: "user1", Bank: "B"}, 16, t0)
			return err
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.run()
			var fe *flotilla.FieldError
			require.ErrorAs(t, err, &fe)
			assert.ErrorIs(t, err, c.err)
			assert.Equal(t, c.field, fe.Field)
			assert.Equal(t, before, snapshot())
		})
	}

	_, err = priority.NewBankTree(0, t0)
	assert.ErrorIs(t, err, flotilla.ErrOutOfRange)
}

func TestBankTreeSetters(t *testing.T) {
	tree := seedTree(t)
	w := tree.Weights()
	w.Bank = 10
	require.NoError(t, tree.SetWeights(w))
	require.NoError(t, tree.SetBankPriority("C", 100))
	b, err := tree.Prioritize(priority.JobRef{ID: "j", User: "user2", Bank: "C"}, priority.DefaultUrgency, t0)
	require.NoError(t, err)
	assert.Equal(t, uint32(51000), b.Calculation.Priority)

	// Equal usage under A: shares decide. user1 with 3 shares ranks above
	// user2 with 1.
	require.NoError(t, tree.AddUsage("user1", "A", 5, t0))
	require.NoError(t, tree.AddUsage("user2", "A", 5, t0))
	require.NoError(t, tree.SetAssociationShares("user1", "A", 3))
	require.NoError(t, tree.Recompute(t0))
	u1, _ := tree.Association("user1", "A")
	u2, _ := tree.Association("user2", "A")
	assert.Greater(t, u1.FairShare, u2.FairShare)
	assert.Equal(t, int64(3), u1.Shares)

	// With 1000 shares, bank A (usage 10) outweighs bank C (usage 1, one
	// share), so A's members now rank above C's.
	require.NoError(t, tree.AddUsage("user5", "C", 1, t0))
	require.NoError(t, tree.SetBankShares("A", 1000))
	require.NoError(t, tree.Recompute(t0))
	u5, _ := tree.Association("user5", "C")
	u1, _ = tree.Association("user1", "A")
	assert.Greater(t, u1.FairShare, u5.FairShare)
	assert.Equal(t, int64(1000), tree.Banks()[0].Shares)

	_, ok := tree.Association("user1", "B")
	assert.False(t, ok)
}
