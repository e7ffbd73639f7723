// Command priority shows Flotilla's two priority models on a small fake
// cluster.
//
// First, flux-accounting's multi-factor job priority: a bank tree (the one in
// seeds/flux-accounting-job-priorities.rst, user2 under banks A and C) is
// loaded from JSON, every association submits a job, and the breakdown table
// is printed — once while every association is new (fair-share 0.5), and again
// after a day of usage has been accrued and fair-shares recomputed. The first
// table's rows are kept as they were: a breakdown records the moment it was
// computed.
//
// Second, Armada's legacy queue priority and slice-and-lottery leasing: two
// queues' priorities follow their usage with a half-life, and an executor's
// offer is leased out in proportion to 1/priority.
//
//	go run ./examples/priority
package main

import (
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"os"
	"strings"
	"time"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/fairness"
	"github.com/flotilla-sched/flotilla/priority"
)

const bankTree = `{
  "usageHalfLife": "168h",
  "banks": [
    {"name": "A", "shares": 1, "priority": 300},
    {"name": "B", "shares": 1, "priority": 100},
    {"name": "C", "shares": 1, "priority": -5}
  ],
  "associations": [
    {"user": "user1", "bank": "A"},
    {"user": "user2", "bank": "A"},
    {"user": "user3", "bank": "B"},
    {"user": "user4", "bank": "B"},
    {"user": "user2", "bank": "C"},
    {"user": "user5", "bank": "C"}
  ],
  "queues": [{"name": "bronze", "priority": 1}, {"name": "gold", "priority": 5}]
}`

const weights = `{"fairshare": 100000, "queue": 10000, "bank": 10, "urgency": 1000}`

func main() {
	if err := run(os.Stdout); err != nil {
		log.Fatal(err)
	}
}

func run(w io.Writer) error {
	start := time.Date(2024, 1, 1, 9, 0, 0, 0, time.UTC)
	if err := jobPriorities(w, start); err != nil {
		return err
	}
	fmt.Fprintln(w)
	return leasing(w, start)
}

type submission struct {
	user, bank, queue string
	urgency           int
}

func jobPriorities(w io.Writer, start time.Time) error {
	tree, err := priority.LoadBankTree(strings.NewReader(bankTree), start)
	if err != nil {
		return err
	}
	wts, err := priority.LoadWeights(strings.NewReader(weights))
	if err != nil {
		return err
	}
	if err := tree.SetWeights(wts); err != nil {
		return err
	}

	subs := []submission{
		{"user1", "A", "bronze", 16},
		{"user2", "A", "gold", 16},
		{"user2", "C", "gold", 16},
		{"user3", "B", "bronze", 20},
		{"user4", "B", "", 16},
		{"user5", "C", "bronze", 10},
	}
	submit := func(round string, now time.Time) error {
		for i, s := range subs {
			id := fmt.Sprintf("%s-%d", round, i+1)
			if _, err := tree.Prioritize(priority.JobRef{ID: id, User: s.user, Bank: s.bank, Queue: s.queue}, s.urgency, now); err != nil {
				return err
			}
		}
		return nil
	}

	if err := submit("mon", start); err != nil {
		return err
	}
	fmt.Fprintln(w, "== before any usage: every association is new, fair-share 0.5")
	if err := priority.WriteJobsTable(w, tree.Breakdowns()); err != nil {
		return err
	}

	// A day of work, in cpu-hours: user1 and user2@A run big jobs; bank C
	// little; user4 nothing.
	usage := []struct {
		user, bank string
		hours      int
		amount     float64
	}{
		{"user1", "A", 2, 64}, {"user2", "A", 3, 32}, {"user3", "B", 5, 16},
		{"user1", "A", 8, 128}, {"user2", "C", 12, 4}, {"user5", "C", 20, 8},
	}
	for _, u := range usage {
		if err := tree.AddUsage(u.user, u.bank, u.amount, start.Add(time.Duration(u.hours)*time.Hour)); err != nil {
			return err
		}
	}
	next := start.Add(24 * time.Hour)
	if err := tree.Recompute(next); err != nil {
		return err
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "== fair-share after a day of usage (half-life 1 week)")
	for _, a := range tree.Associations() {
		fmt.Fprintf(w, "%-6s %-2s usage %7.2f  rank %d  fair-share %.6g\n", a.User, a.Bank, a.Usage, a.Rank, a.FairShare)
	}

	if err := submit("tue", next); err != nil {
		return err
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "== after usage: Monday's rows keep the priorities they were given")
	return priority.WriteJobsTable(w, tree.Breakdowns())
}

func leasing(w io.Writer, start time.Time) error {
	schema := flotilla.MustResourceSchema("cpu", "memory", "nvidia.com/gpu")
	gi := int64(1) << 30 // bytes: memory is counted in bytes, cpu in milli-cpu, GPUs whole
	cluster := flotilla.Resources{64_000, 256 * gi, 8}
	model, err := fairness.NewAsset(schema, cluster, map[string]float64{"cpu": 1, "memory": 1, "nvidia.com/gpu": 1})
	if err != nil {
		return err
	}
	qp, err := priority.NewQueuePriorities(30*time.Minute, start)
	if err != nil {
		return err
	}
	if err := qp.SetFactors([]flotilla.Queue{{Name: "research", PriorityFactor: 1}, {Name: "prod", PriorityFactor: 0.5}}); err != nil {
		return err
	}
	// An hour of usage, reported every 10 minutes: research holds 16 cpu
	// and 2 GPUs, prod 8 cpu.
	for m := 10; m <= 60; m += 10 {
		now := start.Add(time.Duration(m) * time.Minute)
		err := qp.UpdateResources(now, &model, map[string]flotilla.Resources{
			"research": {16_000, 64 * gi, 2},
			"prod":     {8_000, 16 * gi, 0},
		})
		if err != nil {
			return err
		}
	}
	fmt.Fprintln(w, "== Armada queue priorities after an hour (half-time 30m)")
	for _, q := range qp.Queues() {
		fmt.Fprintf(w, "%-8s priority %6.2f × factor %.1f = effective %6.2f\n", q.Name, q.Priority, q.Factor, q.Effective)
	}

	job := func(cpu, memGi, gpu int64) flotilla.Resources {
		return flotilla.Resources{cpu * 1000, memGi * gi, gpu}
	}
	many := func(n int, r flotilla.Resources) []flotilla.Resources {
		out := make([]flotilla.Resources, n)
		for i := range out {
			out[i] = r
		}
		return out
	}
	queues := []priority.LeaseQueue{
		{Name: "prod", EffectivePriority: qp.EffectivePriority("prod"), Jobs: many(20, job(2, 4, 0))},
		{Name: "research", EffectivePriority: qp.EffectivePriority("research"), Jobs: many(20, job(4, 16, 1))},
	}
	offer := job(24, 96, 4)
	res, err := priority.Lease(queues, offer, priority.LeaseOptions{Usage: &model}, rand.New(rand.NewPCG(2024, 1)))
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "\n== leasing an offer of %s, worth %.2f cpu-equivalents\n", schema.String(offer), model.Usage(offer))
	for q, s := range res.Slices {
		fmt.Fprintf(w, "%-8s slice worth %5.2f (1/%.2f of 1/%.2f + 1/%.2f)\n", queues[q].Name, model.Usage(s),
			queues[q].EffectivePriority, queues[0].EffectivePriority, queues[1].EffectivePriority)
	}
	count := map[string]map[priority.Round]int{}
	for _, l := range res.Leased {
		name := queues[l.Queue].Name
		if count[name] == nil {
			count[name] = map[priority.Round]int{}
		}
		count[name][l.Round]++
	}
	for _, q := range queues {
		fmt.Fprintf(w, "%-8s leased %d in the slice round, %d by lottery\n", q.Name, count[q.Name][priority.SliceRound], count[q.Name][priority.LotteryRound])
	}
	fmt.Fprintf(w, "left over: %s (%v)\n", schema.String(res.Remaining), res.Stop)
	return nil
}
