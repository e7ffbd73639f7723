// Package scenario reads, checks and expands the scenario files of
// `flotilla schedule` (docs/scenarios.md describes the format), reads
// and checks their expected outcomes (NAME.expect.json), runs them through
// the scheduler, and writes what a run decided as JSON or as tables.
//
// Typical use, for small scenarios:
//
//	f, err := scenario.Parse(data)      // strict JSON + validation
//	b, err := f.Build()                 // schema, nodes, queues, jobs per round
//	out, err := scenario.Run(ctx, b)    // every round, kept
//	err = scenario.WriteTable(os.Stdout, out)
//	exp, err := scenario.ParseExpect(expectData)
//	err = exp.Check(out)                // every mismatch, errors.Join'ed
//
// Every round lists every job still queued, so keeping all rounds costs
// rounds × queued jobs. RunStream hands each round over as soon as it is
// decided and keeps none; JSONStream and TableStream write the same bytes as
// WriteJSON and WriteTable a round at a time, and Expect.NewCheck compares
// round by round. `flotilla schedule` works this way, in the memory of one
// round:
//
//	js := scenario.NewJSONStream(os.Stdout)
//	check := exp.NewCheck()
//	err = scenario.RunStream(ctx, b, func(r *scenario.RoundOutput) error {
//		check.Round(r)
//		return js.WriteRound(r)
//	})
//	err = js.Close()
//	err = check.Err()
//
// RunInspect runs as RunStream does and also hands over each round's raw
// decision (the snapshot, the queued store and the scheduler's Result)
// before the runner applies it: `flotilla explain` reads one job's
// explanation from it.
//
// # Errors
//
// Every problem in a file is reported at once: Parse, Validate, Build and
// ParseExpect return an errors.Join of *flotilla.FieldError values, each
// wrapping one of flotilla's sentinels (ErrUnknownName, ErrDuplicate, …)
// for errors.Is, with Field the JSON path of the offending value, such as
// nodes[0].resources.cpu or rounds[1].submit[0].priorityClass (map keys are
// appended after a dot, as written). Problems with the document as a whole
// (invalid JSON, with its line and column; empty input; data after the
// top-level object) have Field RootField and stop the check.
//
// # Strictness
//
// Object keys must name a field of the format exactly: matching is
// case-sensitive, unlike encoding/json, and an unknown key is an
// ErrUnknownName naming its path and suggesting the nearest known field. A
// key repeated within one object is an ErrDuplicate. A value of the wrong
// JSON type, a fractional or out-of-range number where a whole number is
// expected, and a negative one where only non-negative ones make sense are
// reported at their path. JSON null is accepted for any field and means the
// field is absent.
//
// # Rules where docs/scenarios.md is silent
//
//   - One validation path: every value the library also takes is judged by
//     the library's own validator, its problems renamed to the file's
//     paths: the config and priority classes by scheduler.Config.Validate
//     (the check scheduler.New makes; under asset fairness also
//     fairness.NewAsset over the cluster's total), each node template by
//     flotilla's Node.Validate (name, label keys, taints), each queue by
//     Queue.Validate, each job template by Job.Validate (id, queue, node
//     selector, tolerations). The format checks only what is its own: JSON shape,
//     strings it parses (quantities, durations), counts and expansion,
//     unique names, references between fields, gangs and rounds.
//   - Resource schema: the union of the resource names of all node
//     templates (count 0 included), in byte order with "cpu" moved first
//     when present. A request naming any other resource is an
//     ErrUnknownResource (this catches typos such as "cpus"; a job asking
//     for a resource no node has cannot run anyway). A resource weight,
//     indexed resource, round fraction, class cap or queue limit naming a
//     resource no node has is accepted: that resource has capacity 0
//     everywhere, so it weighs nothing, orders no nodes and caps nothing
//     (Armada's default config indexes nvidia.com/gpu on CPU-only
//     clusters, as docs/scenarios.md's example does).
//     Each resource has its flotilla.DefaultUnit, as in Kubernetes: cpu in
//     milli-units, every other resource in whole units (bytes of memory),
//     a finer quantity rounding up to one unit. So a node may hold up to
//     8 EiB of memory and a cluster of MaxNodes nodes of 4 TiB (2^42 bytes)
//     totals 4.4·10^17 bytes, well inside an int64.
//   - Nodes: at least one template; each needs a name and a non-empty
//     resources map. "count": 0 is allowed and makes no nodes. A node
//     template may carry "cluster" (Flotilla's addition to the format): nodes
//     with the same cluster form one cluster, a gang lands within one.
//     Taints need a key and an effect (NoSchedule, PreferNoSchedule or
//     NoExecute).
//   - Jobs: id, queue and a non-empty requests map are required;
//     "count": 0 submits nothing. jobSet defaults to "". Tolerations follow
//     Kubernetes: operator Equal (default) or Exists, no key only with
//     Exists (an empty key with Equal is reported at the operator), no
//     value with Exists. A job template may carry "avoidClusters"
//     (Flotilla's addition to the format), a list of cluster names: flotilla.Job's
//     AvoidClusters for each of its jobs, which go to a listed cluster
//     only when no other can take them. A name no node carries, or one
//     listed twice, changes nothing; an empty name is an error.
//   - Gangs: every member of a gang is submitted in one round with the same
//     queue, jobSet, cardinality and nodeUniformityLabel; members may have
//     different priority classes (Armada orders the gang by its members'
//     lowest class priority and binds each member at its own class); the number of members must equal the
//     cardinality; a gang id is never reused in a later round. An absent
//     (or 0) cardinality means "the number of members submitted".
//   - Ids: node names after expansion are unique; job ids after expansion
//     are unique across all rounds.
//   - finish and cancel: they apply at the start of their round, before
//     its submissions, so each id must have been submitted in an earlier
//     round, and must not have been finished or cancelled before (nor be
//     named twice in one round). Whether the job is running (finish) or
//     queued or running (cancel) when the round starts is checked by Run.
//   - Submit order: the k-th job submitted in a round has submit time
//     round time + k ns, so jobs otherwise equal are ordered as submitted
//     (templates in file order, a template's jobs by index).
//   - Config: protectedFractionOfFairShare is any finite value ≥ 0 (values
//     above 1 are meaningful); evictionProbability and every resource
//     fraction are in [0, 1]; rates and bursts are ≥ 0 and a positive rate
//     needs a burst ≥ 1; resourceWeights are finite and ≥ 0 and validated
//     under either fairness model though only "asset" uses them; at most
//     binpack.MaxIndexedResources indexed resources, each named once, and
//     one without a resolution has resolution 1 unit (exact); roundDuration
//     is a Go duration ≥ 0 (0 puts every round at the same instant).
//   - Queues: priorityFactor absent or 0 means 1 (as for flotilla.Queue);
//     otherwise it is at least flotilla.MinPriorityFactor (1e-6), so that
//     every weight 1/factor, and their sum, is finite.
//   - Strategy (Flotilla's addition to the format): config.strategy is
//     "progressive-filling" (default) or "lottery", Armada's legacy
//     slice-and-lottery leasing by half-life queue priority. "lottery"
//     needs config.priorityHalftime, a Go duration > 0 such as "10m"
//     (a negative one is an error under either strategy), and
//     cpu on some node (usage is valued in cpu); it may set
//     config.useProbabilisticSchedulingForAllResources to skip the slice
//     round, which is an error under progressive filling. The runner
//     carries queue priorities from round to round, as it carries rate
//     limits; each round decays them toward the usage of the jobs running
//     when it starts. The lottery never preempts and leaves gang members
//     queued.
//   - Queue trees: groups[] and the queues' parent, guaranteed, limit,
//     lendingLimit and usage, with config.usageHalfLife and
//     config.usageWeight, are judged by fairness.NewTree (the scheduler's
//     own check) with the file's paths, a problem the queue's own check
//     already reported (a duplicate name, a priority factor) once. Quota
//     maps parse with ResourceSchema.ParsePartial: a resource left out is
//     flotilla.Absent (not given), and a resource no node has is an
//     ErrUnknownResource, as in requests. usageWeight absent or 0 means 1;
//     usage seeds are accepted without a half-life and then unused. The
//     runner hands the groups to every cycle, the seeds to round 0's
//     Snapshot.Usage (no time passed before it) and each Result.Usage to
//     the next round. Output: queues[].parent (omitted at the root),
//     rounds[].groups[] (only when the file has groups: running, queued
//     and allocated summed over the queues below, shares from
//     Result.Groups), and usage on queues and groups only with usage on.
//   - Priority classes: absent or empty means flotilla.DefaultPriorityClasses();
//     defaultPriorityClass (default "armada-default") must name one.
//   - Size: at most MaxNodes nodes and MaxJobs jobs after expansion.
//
// # Expansion
//
// Build expands templates with a count N into items named <name>-0 …
// <name>-(N-1) (without a count the item is named <name>), keeps file order,
// applies every default, and stamps each job with its round's time: round 0
// is the Unix epoch in UTC and each round adds config.roundDuration.
//
// # Expected outcomes
//
// An expect file lists, per round, the number of jobs per queue in the
// round's scheduled and preempted lists (a queue not named means 0) and,
// when runningAfter is present, the number running per queue at the end of
// the round (again a queue not named means 0). The numbers of rounds must
// match. A round may also give fairShare and adjustedFairShare by queue or
// group name, compared with the output's to 3 decimals (ShareTolerance).
package scenario
