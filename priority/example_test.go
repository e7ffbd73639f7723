package priority_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"time"

	flotilla "github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/fairness"
	"github.com/flotilla-sched/flotilla/priority"
)

func ExampleDecay() {
	// A queue at priority 2 using 10 cpu-equivalents: after one half-time
	// it is half way there, A + (B − A)/2.
	p := priority.Decay(2, 10, time.Hour, time.Hour)
	fmt.Println(p)
	// Output: 6
}

func ExampleQueuePriorities() {
	schema := flotilla.MustResourceSchema("cpu", "memory", "nvidia.com/gpu")
	gib := int64(1) << 30
	// The cluster of seeds/armada-priority.md, every resource weighted 1.
	model, _ := fairness.NewAsset(schema, flotilla.Resources{10000, 20 * gib, 5},
		map[string]float64{"cpu": 1, "memory": 1, "nvidia.com/gpu": 1})

	start := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	qp, _ := priority.NewQueuePriorities(time.Hour, start)
	_ = qp.SetFactor("batch", 2)
	usage := map[string]flotilla.Resources{
		"batch":       {5000, 2 * gib, 1}, // worth 8
		"interactive": {1000, 0, 0},       // worth 1
	}
	_ = qp.UpdateResources(start.Add(time.Hour), &model, usage)
	for _, q := range qp.Queues() {
		fmt.Printf("%s priority %.1f × factor %g = %.1f\n", q.Name, q.Priority, q.Factor, q.Effective)
	}
	// Output:
	// batch priority 4.0 × factor 2 = 8.0
	// interactive priority 0.5 × factor 1 = 0.5
}

func ExampleSlices() {
	// seeds/armada-priority.md: A at priority 1 gets 2/3, B at 2 gets 1/3.
	s, _ := priority.Slices(flotilla.Resources{3000}, []float64{1, 2}, 0)
	fmt.Println(s)
	// Output: [[2000] [1000]]
}

func ExampleLease() {
	cpu := func(n int64) flotilla.Resources { return flotilla.Resources{n * 1000} }
	queues := []priority.LeaseQueue{
		{Name: "a", EffectivePriority: 1, Jobs: []flotilla.Resources{cpu(2), cpu(2), cpu(2)}},
		{Name: "b", EffectivePriority: 2, Jobs: []flotilla.Resources{cpu(1), cpu(3)}},
	}
	// 7 cpu: slices of 4.67 and 2.33. a fills 4 of its slice, b 1 of its;
	// the 2 cpu left go by lottery.
	res, err := priority.Lease(queues, cpu(7), priority.LeaseOptions{}, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, l := range res.Leased {
		fmt.Printf("%s job %d (%v)\n", queues[l.Queue].Name, l.Job, l.Round)
	}
	fmt.Println("left:", res.Remaining, "stop:", res.Stop)
	// Output:
	// a job 0 (slice)
	// a job 1 (slice)
	// b job 0 (slice)
	// a job 2 (lottery)
	// left: [0] stop: nothing fits
}

func ExampleCalculate() {
	w := priority.DefaultWeights()
	w.Bank = 10
	c := priority.Calculate(priority.Factors{FairShare: 0.5, Bank: -5, Urgency: priority.DefaultUrgency}, w)
	fmt.Println(c.FairShare.Product, c.Bank.Product, c.Priority)
	// Output: 50000 -50 49950
}

func ExampleJobPriority() {
	// A job with multi-factor priority 160000 runs before one with 50000:
	// flotilla orders lower Job.Priority first.
	fmt.Println(priority.JobPriority(160000) < priority.JobPriority(50000))
	// Output: true
}

func ExampleBankTree_Prioritize() {
	now := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	tree, _ := priority.NewBankTree(priority.DefaultUsageHalfLife, now)
	_ = tree.AddBank("A", "", 1, 100)
	_ = tree.AddAssociation("bonds", "A", 1)
	_ = tree.SetQueuePriority("bronze", 1)
	w := tree.Weights()
	w.Bank = 1000
	_ = tree.SetWeights(w)

	b, err := tree.Prioritize(priority.JobRef{ID: "fnYtwBV", User: "bonds", Queue: "bronze"}, priority.DefaultUrgency, now)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(b.Calculation.Priority)
	// Output: 160000
}

func ExampleBankTree_Recompute() {
	now := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	tree, _ := priority.NewBankTree(24*time.Hour, now)
	_ = tree.AddBank("A", "", 1, 0)
	for _, u := range []string{"ann", "bob", "cy"} {
		_ = tree.AddAssociation(u, "A", 1)
	}
	_ = tree.AddUsage("ann", "A", 30, now)
	_ = tree.AddUsage("bob", "A", 10, now)
	_ = tree.Recompute(now.Add(time.Hour))
	for _, a := range tree.Associations() {
		fmt.Printf("%s rank %d fair-share %.3f\n", a.User, a.Rank, a.FairShare)
	}
	// Output:
	// cy rank 3 fair-share 1.000
	// bob rank 2 fair-share 0.667
	// ann rank 1 fair-share 0.333
}

func ExampleLoadBankTree() {
	now := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	tree, err := priority.LoadBankTree(strings.NewReader(`{
	  "banks": [{"name": "A", "priority": 300}, {"name": "C", "priority": -5}],
	  "associations": [{"user": "user2", "bank": "A"}, {"user": "user2", "bank": "C"}]
	}`), now)
	if err != nil {
		fmt.Println(err)
		return
	}
	w, err := priority.LoadWeights(strings.NewReader(`{"bank": 10}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	_ = tree.SetWeights(w)
	for _, bank := range []string{"A", "C"} {
		b, _ := tree.Prioritize(priority.JobRef{ID: "job_" + bank, User: "user2", Bank: bank}, priority.DefaultUrgency, now)
		fmt.Println(b.JobID, b.Calculation.Priority)
	}
	// Output:
	// job_A 53000
	// job_C 49950
}

func ExampleLoadWeights() {
	w, err := priority.LoadWeights(strings.NewReader(`{"fairshare": 1000, "queue": 100000, "bank": 500}`))
	fmt.Printf("%+v %v\n", w, err)
	_, err = priority.LoadWeights(strings.NewReader(`{"bank": -1}`))
	fmt.Println(err)
	// Output:
	// {FairShare:1000 Queue:100000 Bank:500 Urgency:1000} <nil>
	// weights.bank "-1": must not be negative
}

func ExampleWriteJobsTable() {
	now := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	tree, _ := priority.NewBankTree(priority.DefaultUsageHalfLife, now)
	_ = tree.AddBank("A", "", 1, 100)
	_ = tree.AddAssociation("bonds", "A", 1)
	_ = tree.SetQueuePriority("bronze", 1)
	_ = tree.SetWeights(priority.Weights{FairShare: 100000, Queue: 10000, Bank: 1000, Urgency: 1000})
	_, _ = tree.Prioritize(priority.JobRef{ID: "fnYtwBV", User: "bonds", Queue: "bronze"}, priority.DefaultUrgency, now)
	_ = priority.WriteJobsTable(os.Stdout, tree.Breakdowns())
	// Output:
	// JOBID    USER   BANK  BANKPRIO  BANKFACT  QUEUE   QPRIO  QFACT  FAIRSHARE  FSFACTOR  URGENCY  URGFACT  PRIORITY
	// fnYtwBV  bonds  A     100.0     1000      bronze  1      10000  0.5        100000    16       1000     160000
}
