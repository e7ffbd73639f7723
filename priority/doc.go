// Package priority holds Flotilla's two priority models: Armada's legacy queue
// priority with slice-and-lottery leasing, and flux-accounting's multi-factor
// job priority with a bank hierarchy and a weighted-tree fair-share factor.
//
// # Queue priority (Armada)
//
// A queue's priority follows its resource usage with a half-life:
//
//	priority = beta·priority + (1 − beta)·usage,  beta = 0.5^(Δt / halfTime)
//
// so after one half-time a priority A under usage B becomes A + (B − A)/2, and
// under constant usage it converges to that usage. (seeds/armada-priority.md
// prints the two weights swapped; the README's errata explain why we do not copy it.)
// Usage is a scalar in resource-factor units — pass the fairness package's
// asset model (&m from fairness.NewAsset) wherever a UsageModel is asked for. The effective
// priority is priority × priority factor: lower is more important. Decay is
// the pure formula; QueuePriorities keeps the state for many queues, with time
// always an argument.
//
// Lease is the leasing strategy of Armada's first server: the resources an
// executor offers are sliced among non-empty queues in proportion to
// 1/effective priority, each queue fills its slice from its head in queue
// order, and what remains is handed out one job at a time by a lottery whose
// odds are the queues' unused slices. It works over plain inputs (queues with
// effective priorities and ordered job requests, an offer vector, a seeded
// *rand.Rand, a budget of attempts and an optional placement callback) and
// returns the jobs leased, in order.
//
// # Job priority (flux-accounting)
//
// A job's urgency (0–31, default 16) is looked at first: urgency 0 holds the
// job (priority 0) and urgency 31 expedites it (priority 4294967295), as in
// flux-accounting's multi-factor plugin. Any other urgency gives the integer
// priority
//
//	P = F_fairshare·W_fairshare + F_queue·W_queue + F_bank·W_bank + (F_urgency − 16)·W_urgency
//
// rounded and clamped to [0, 4294967295]; Calculate is that rule, and its
// Calculation keeps every term even when the urgency overrode the sum. BankTree
// holds the root → banks → associations hierarchy (an association is a user
// under one bank; a user may sit under several), per-bank and per-queue
// priority values, half-life-decayed historical usage, the factor weights
// (editable at any time) and each job's Breakdown as it was when computed, so
// a later weight change never rewrites an old breakdown. Recompute runs
// flux-accounting's weighted tree walk to rank associations: a fresh
// association has fair-share 0.5 until the next Recompute. WriteJobsTable
// prints breakdowns like `flux account jobs`. LoadBankTree and LoadWeights read
// JSON, reporting every problem at once: a value of the wrong type together
// with what a check of the rest finds.
//
// Flux-accounting's P is "higher runs first"; flotilla.Job.Priority is "lower
// runs first". JobPriority maps one onto the other. Because the scheduler
// orders jobs by priority class first and by Job.Priority only within a
// class, using it keeps every order rule of queue.Less.
//
// # Determinism and concurrency
//
// Nothing here reads the clock, uses global randomness or starts goroutines.
// Types with methods that change them (QueuePriorities, BankTree) are not safe
// for concurrent use; guard them with a lock if you share them. Every method
// validates its input first and returns a *flotilla.FieldError without
// changing anything when the input is bad.
package priority
