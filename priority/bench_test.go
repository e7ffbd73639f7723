package priority_test

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	flotilla "github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/priority"
)

// BenchmarkLease leases from Q queues of J/Q jobs each (1–4 cpu, 1–8Gi) an
// offer big enough for about half of them; half the queues have no usage
// yet (priority 0, floored).
func BenchmarkLease(b *testing.B) {
	for _, c := range []struct{ queues, jobs int }{{10, 10_000}, {100, 100_000}} {
		b.Run(fmt.Sprintf("queues=%d/jobs=%d", c.queues, c.jobs), func(b *testing.B) {
			queues := make([]priority.LeaseQueue, c.queues)
			var demand flotilla.Resources = make(flotilla.Resources, 2)
			for q := range queues {
				jobs := make([]flotilla.Resources, c.jobs/c.queues)
				for j := range jobs {
					jobs[j] = flotilla.Resources{int64(1+(q+j)%4) * 1000, int64(1+(q*7+j)%8) * gi}
					demand.Add(jobs[j])
				}
				queues[q] = priority.LeaseQueue{Name: "q" + strconv.Itoa(q), EffectivePriority: float64(q%2) * float64(q), Jobs: jobs}
			}
			offer := flotilla.Resources{demand[0] / 2, demand[1] / 2}
			rng := seeded(1)
			b.ReportAllocs()
			b.ResetTimer()
			leased := 0
			for b.Loop() {
				res, err := priority.Lease(queues, offer, priority.LeaseOptions{}, rng)
				if err != nil {
					b.Fatal(err)
				}
				leased = len(res.Leased)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(max(leased, 1)), "ns/leased-job")
		})
	}
}

func BenchmarkSlices(b *testing.B) {
	offer := flotilla.Resources{32_000_000, 128_000 * gi, 800}
	prios := make([]float64, 100)
	for i := range prios {
		prios[i] = float64(i)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := priority.Slices(offer, prios, 0); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRecompute ranks N associations spread over N/10 banks under 10
// top-level banks.
func BenchmarkRecompute(b *testing.B) {
	for _, n := range []int{1_000, 10_000} {
		b.Run("associations="+strconv.Itoa(n), func(b *testing.B) {
			tree, _ := priority.NewBankTree(time.Hour, t0)
			for top := range 10 {
				_ = tree.AddBank("org"+strconv.Itoa(top), "", int64(1+top%3), 0)
			}
			for bank := range n / 10 {
				_ = tree.AddBank("bank"+strconv.Itoa(bank), "org"+strconv.Itoa(bank%10), int64(1+bank%5), 0)
			}
			for u := range n {
				user, bank := "user"+strconv.Itoa(u), "bank"+strconv.Itoa(u%(n/10))
				_ = tree.AddAssociation(user, bank, int64(1+u%4))
				_ = tree.AddUsage(user, bank, float64(u%97+1), t0)
			}
			now := t0
			b.ReportAllocs()
			for b.Loop() {
				now = now.Add(time.Second)
				if err := tree.Recompute(now); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkPrioritize(b *testing.B) {
	tree := seedTree(b)
	_ = tree.SetQueuePriority("bronze", 1)
	job := priority.JobRef{ID: "j", User: "user2", Bank: "C", Queue: "bronze"}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := tree.Prioritize(job, priority.DefaultUrgency, t0); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkCalculate(b *testing.B) {
	w := priority.DefaultWeights()
	f := priority.Factors{FairShare: 0.5, Queue: 1, Bank: 100, Urgency: 16}
	var sink uint32
	b.ReportAllocs()
	for b.Loop() {
		sink += priority.Calculate(f, w).Priority
	}
	_ = sink
}
