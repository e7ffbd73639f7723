package priority_test

import (
	"math"
	"slices"
	"strconv"
	"testing"

	"github.com/leanovate/gopter"
	"github.com/leanovate/gopter/gen"
	"github.com/leanovate/gopter/prop"

	"github.com/flotilla-sched/flotilla/priority"
)

// treeSpec describes a random two-level tree: bank b has sizes[b] users
// named u0, u1, … (so one user sits under several banks), user shares from
// {1, 2} so that equal-share siblings are common, and usages drawn from a
// continuous range so that exact ties have probability zero.
type treeSpec struct {
	BankShares []int64
	Sizes      []int
	Shares     []int64
	Usages     []float64
}

const maxBanks, maxUsers = 4, 5

func genTreeSpec(minUsage float64) gopter.Gen {
	return gopter.CombineGens(
		gen.SliceOfN(maxBanks, gen.Int64Range(1, 3)),
		gen.SliceOfN(maxBanks, gen.IntRange(0, maxUsers)).SuchThat(func(v []int) bool { return len(v) > 0 }),
		gen.SliceOfN(maxBanks*maxUsers, gen.Int64Range(1, 2)),
		gen.SliceOfN(maxBanks*maxUsers, gen.Float64Range(minUsage, 100)),
	).Map(func(v []any) treeSpec {
		return treeSpec{BankShares: v[0].([]int64), Sizes: v[1].([]int), Shares: v[2].([]int64), Usages: v[3].([]float64)}
	})
}

func (s treeSpec) build() (*priority.BankTree, int) {
	tree, _ := priority.NewBankTree(priority.DefaultUsageHalfLife, t0)
	n := 0
	for b, size := range s.Sizes {
		bank := "b" + strconv.Itoa(b)
		_ = tree.AddBank(bank, "", s.BankShares[b%len(s.BankShares)], 0)
		for u := range size {
			k := b*maxUsers + u
			user := "u" + strconv.Itoa(u)
			_ = tree.AddAssociation(user, bank, s.Shares[k%len(s.Shares)])
			_ = tree.AddUsage(user, bank, s.Usages[k%len(s.Usages)], t0)
			n++
		}
	}
	_ = tree.Recompute(t0)
	return tree, n
}

func TestWeightedTreeProperties(t *testing.T) {
	props := gopter.NewProperties(gopterParams())

	props.Property("ranks are a permutation of 1..N and fair-share = rank/N", prop.ForAll(
		func(s treeSpec) bool {
			tree, n := s.build()
			all := tree.Associations()
			if len(all) != n {
				return false
			}
			ranks := make([]int, 0, n)
			for _, a := range all {
				if a.FairShare != float64(a.Rank)/float64(n) {
					return false
				}
				ranks = append(ranks, a.Rank)
			}
			slices.Sort(ranks)
			for i, r := range ranks {
				if r != i+1 {
					return false
				}
			}
			return true
		}, genTreeSpec(0.01)))

	props.Property("ties aside, ranks follow competition ranking", prop.ForAll(
		// Usages drawn from a handful of values, zeros included: ties are
		// common. Sorted high to low, each rank equals the one before it
		// (a tie) or N − its position.
		func(s treeSpec) bool {
			for i := range s.Usages {
				s.Usages[i] = math.Floor(s.Usages[i] / 34)
			}
			tree, n := s.build()
			ranks := make([]int, 0, n)
			for _, a := range tree.Associations() {
				ranks = append(ranks, a.Rank)
			}
			slices.Sort(ranks)
			slices.Reverse(ranks)
			for i, r := range ranks {
				if r < 1 || r > n {
					return false
				}
				if i == 0 && r != n {
					return false
				}
				if i > 0 && r != ranks[i-1] && r != n-i {
					return false
				}
			}
			return true
		}, genTreeSpec(0)))

	props.Property("at equal shares, less usage ranks higher", prop.ForAll(
		func(s treeSpec) bool {
			tree, _ := s.build()
			all := tree.Associations()
			for _, a := range all {
				for _, b := range all {
					if a.Bank != b.Bank || a.Shares != b.Shares || a.User == b.User {
						continue
					}
					if a.Usage < b.Usage && a.FairShare <= b.FairShare {
						return false
					}
				}
			}
			return true
		}, genTreeSpec(0.01)))

	props.Property("a single bank with equal shares ranks by usage alone", prop.ForAll(
		func(usages []float64) bool {
			tree, _ := priority.NewBankTree(priority.DefaultUsageHalfLife, t0)
			_ = tree.AddBank("A", "", 1, 0)
			for i, u := range usages {
				name := "u" + strconv.Itoa(i)
				_ = tree.AddAssociation(name, "A", 1)
				_ = tree.AddUsage(name, "A", u, t0)
			}
			_ = tree.Recompute(t0)
			all := tree.Associations() // highest fair-share first
			for i := 1; i < len(all); i++ {
				if !(all[i-1].Usage < all[i].Usage) {
					return false
				}
			}
			return true
		}, gen.SliceOfN(8, gen.Float64Range(0.01, 1000))))

	props.TestingRun(t, gopter.ConsoleReporter(false))
}
