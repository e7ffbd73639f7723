// Package batch is Flotilla's batch scheduler for one Kubernetes cluster:
// pods whose spec.schedulerName is Config.SchedulerName ("flotilla" by
// default) and that have no spec.nodeName are jobs; Flotilla decides each
// cycle (scheduler.Schedule), Kubernetes runs.
//
// # State
//
// Informers on Nodes, Pods and PriorityClasses keep the state up to date
// between cycles: a queue.Store of the pending pods (added, changed and
// removed as the informers report, never rebuilt per cycle, except when
// the PriorityClass objects change, which changes the store's classes),
// the nodes (package kubeconv), and the bound pods. A cycle snapshots
// them under a lock the event handlers also take.
//
//   - A pending pod of ours is a queued job (kubeconv.Job: the queue from
//     the flotilla.dev/queue label or annotation, else the namespace; the
//     job set from flotilla.dev/job-set; the order within its queue and
//     class from the flotilla.dev/priority annotation, a uint32, lower
//     first, 0 without it; gangs from Armada's armadaproject.io/gang*
//     annotations). A pod that is not a valid job
//     (a bad annotation, an unknown priority class, a required node
//     affinity with Gt, Lt or matchFields) gets PodScheduled=False, reason FlotillaInvalidPod, with
//     every problem named with its field or annotation and value, and a
//     Warning event.
//   - With Config.Dynamic set, a pod of ours whose controller is a
//     workload (a Job, JobSet, PyTorchJob, MPIJob, RayCluster or RayJob)
//     is read as a job of that workload (kubeconv.JobOf: its gang, job
//     set, queue and priority from the owner when the pod has none).
//     Owner chains are read through the dynamic client at the start of
//     the cycle after the pod appears, at most Config.BindWorkers reads
//     in flight and never under the lock, once per controller while any
//     of its pods exists (a chain that could not be read, or read as a
//     workload, is read again every cycle), an object above several
//     controllers (a JobSet above its Jobs) once per cycle, as are Kueue's
//     WorkloadPriorityClasses by name; until then the pod is neither
//     queued nor preempted (a running one holds its node's room). A kind
//     whose CRD is not installed is a NotFound: its pods are bare pods.
//     A gang whose pods are not all created is reported incomplete by
//     the scheduler: none is bound, and each pod's Unschedulable message
//     adds that it waits for the rest of its workload's pods. The pending
//     pods of a gang that already has running pods of ours (not being
//     deleted) finish it as one unit or roll it back (see Replicas and
//     gang safety). The members a failed gang binding deletes are held,
//     not running, from before the deletes, so they never count as its
//     running members.
//   - A bound, non-terminal pod of ours is a running job, which Flotilla
//     may preempt.
//   - A bound, non-terminal pod of another scheduler, and a pod of ours
//     being deleted or evicted, holds its request on its node: it is
//     subtracted from the node's allocatable, belongs to no queue, and is
//     never preempted. (A node whose running jobs exceed what is left is
//     treated as full, not as an error.)
//   - Succeeded and Failed pods hold nothing.
//
// Priority classes are the PriorityClass objects (kubeconv.Classes: the
// value as priority, preemptible unless preemptionPolicy is Never; pods
// naming none get the globalDefault class or kubeconv.DefaultClass).
// Queues are Config.Queues; a queue a pod names that is not configured
// has priority factor 1.
//
// # Acting
//
// Each cycle's Result is carried out with at most Config.BindWorkers API
// calls in flight:
//
//   - Every API call of a cycle (eviction, binding, a gang's rollback
//     delete, condition patch) is one request, made without client-go's
//     own retries, which would sleep through a 429's or 5xx's Retry-After
//     (up to 10 times) inside the cycle: a failed call is dealt with as
//     below and made again by a later cycle. Events go through client-go's
//     event broadcaster, which writes them in the background (and retries
//     there), never inside the cycle.
//   - Preempted pods are evicted through the Eviction API (policy/v1) with
//     DeleteOptions.GracePeriodSeconds set to the pod's
//     terminationGracePeriodSeconds, and get a Normal "Preempted" event.
//   - An eviction a PodDisruptionBudget refuses (429 TooManyRequests)
//     leaves the pod running, and is remembered per pod UID until the
//     answer's Retry-After (DefaultRefusalRetry, 10 s, without one; at
//     most MaxRefusalRetry, 5 minutes), counted from the cycle's time
//     (Config.Now). Until then the pod is passed over as a victim
//     (scheduler.Running.Protected; Report.EvictDeferred counts them), as
//     kube-scheduler prefers victims whose eviction violates no budget:
//     the cycle preempts other pods when they make room, and when none
//     does the preemptor is unschedulable. The entry is forgotten when its
//     retry time comes (the pod may then be chosen, and its eviction
//     tried, again) or its pod goes.
//   - The pods placed on a node where a budget has just refused a
//     victim's eviction stay queued with PodScheduled=False, reason
//     PreemptionBlocked, and a Warning event of that reason, naming the
//     victim, the budget's reason and the time before which its eviction
//     is not tried again: conditions are written after the cycle's
//     evictions and bindings have returned, so the pod says so at once.
//     Once its other victims are gone it is scheduled again.
//   - A pod the scheduler leaves unschedulable (no-room) while refused
//     victims run keeps reason Unschedulable and its Warning
//     FailedScheduling event, as kube-scheduler's pods and the
//     cluster autoscaler expect, and its message adds, after the
//     scheduler's reason, "room not counted: " and the refused victims
//     that could have made room for it, each with its node, the budget's
//     reason and retry time (Report.Blocked). A refused victim could
//     have made room when the pod's node selector, tolerations and the
//     node's cordon admit its node, the node's free room does not hold the
//     pod, and the free room plus the requests of the running pods the
//     pod could preempt there (a preemptible class, and a lower priority,
//     or another queue for fair share; refused victims among them) does.
//     The rule is cheap, not exact: a pod may be named a victim the
//     scheduler would not have taken for other reasons (another queue
//     below its fair share). Pods no refused victim could help are not
//     rewritten when refusals come and go.
//   - Scheduled pods are bound through the Binding subresource and get a
//     Normal "Scheduled" event. A gang is bound all or none: its members
//     are bound one after another, and if one binding fails, the members
//     already bound are deleted (with their grace period; their owner
//     recreates them) and the rest are pending again.
//   - A pod (or gang) placed on a node where this cycle preempted pods is
//     not bound yet, as kube-scheduler's nominated pods: the kubelet would
//     refuse it while the victims terminate. It is held out of the queue,
//     with PodScheduled=False, reason WaitingForPreemption, until its
//     victims are gone (or for their grace period plus 30 s), then
//     scheduled again (it finds the room its victims left). So the
//     preemptor preempts nothing else meanwhile.
//   - Every examined pod not placed gets PodScheduled=False, reason
//     Unschedulable, with the scheduler's reason ("never-fits: 0/6 nodes
//     fit: 2 untolerated taint gpu=true:NoSchedule, 4 short of cpu by at
//     least 3"), and a Warning FailedScheduling event; a condition is only
//     written when its reason or message changed. The message leaves out
//     the identical job whose search the scheduling-key cache repeated
//     ("same requirements as job ..."): that job changes as pods come and
//     go, which would rewrite every identical pending pod each cycle.
//
// Decisions are idempotent over informer lag: a pod bound (or evicted) by
// a cycle is held on its node until the informer shows spec.nodeName (or
// the deletion), so the next cycle neither offers it again nor uses its
// room; a failed call returns the pod to its previous state.
//
// # Suspended Jobs
//
// With Config.AdmitSuspended, a batch/v1 Job created suspended, whose pod
// template names this scheduler and which carries a queue label, is
// admitted Kueue's way: its pods' placeholders (one gang of
// min(parallelism, completions), read from the template as a pod would
// be, IDs "namespace/job#admit-i") are queued; a cycle that places them
// holds them on their nodes and unsuspends the Job (a merge patch, one
// request; a failure queues them again). The first cycle that finds all
// the Job's pods pending binds them into the held room (pod i on
// placeholder i's node, when its request fits); after AdmitHold, or when
// a pod asks more, the room is let go and the pods are queued as any.
// Until admitted, a Warning event (EventNotAdmitted) on the Job gives the
// reason when it changes. With Config.Dynamic set, the custom kinds the
// apiserver serves at Start take the same path, read as unstructured
// objects, each pod later bound into the first held placeholder its
// request fits: a JobSet (spec.suspend; one gang of all its replicated
// jobs' pods), a PyTorchJob or MPIJob (spec.runPolicy.suspend; one gang
// of its replica specs' replicas, master or launcher and workers), a
// RayJob (spec.suspend; one gang of its cluster's head and each worker
// group's minReplicas × numOfHosts; its submitter pod is queued as any;
// into its held room go its head and, per worker group, its oldest
// workers up to the group's count, by KubeRay's ray.io/group label, the
// room waiting for the head; workers beyond minReplicas are lone jobs).
// A RayCluster has no suspend: its pods take the pods path.
//
// # Replicas and gang safety
//
// A gang with running members and pending ones is partly bound: a leader
// lost its lease between two members' bindings (or its rollback deletes
// failed), or a member failed or was deleted and its controller created a
// replacement. Every cycle, of the same leader or the next, finishes it
// or rolls it back, never leaves it:
//
//   - its pending members, up to the members it lacks, are queued as one
//     gang of their own ("rest#" + its ID), placed all or none, on the
//     nodes of its running members' uniformity label value; pods beyond
//     are lone jobs of its job set;
//   - when they cannot be placed (unscheduled for any reason but a
//     cycle's own limits: rate limits, the round's limit, the lookback),
//     when a running member's Node object is gone, when its running
//     members' nodes share no value of its uniformity label, or when a
//     pending member is deleted while the gang is partly bound, the gang
//     is rolled back: its running members are evicted as preempted pods
//     are (the Eviction API, their grace period, a Warning
//     EventGangRolledBack event naming why; Report.RolledBack counts the
//     gangs), so that their controller recreates them, and its pending
//     members wait for the whole gang again. An eviction that fails (a budget's refusal) leaves
//     the member running, and a later cycle rolls the gang back again
//     (after a budget's refusal, at its retry time, as for a preemption).
//
// An Indexed Job's Succeeded pods count as members that ran: the Job
// controller's replacement for a failed index is the rest of its gang,
// not a gang waiting for all its pods again (Kueue's way).
//
// A workload's gang with more pending pods than its cardinality (a
// RayCluster's workers beyond minReplicas) is its first cardinality pods,
// the Ray head first and then the oldest; the others are lone jobs of its
// job set.
//
// RunWithLeaderElection cycles only while the replica holds a
// coordination.k8s.io Lease (client-go's leaderelection with a
// resourcelock.LeaseLock, released when its context ends); every replica
// keeps its informers warm.
//
// # Configuration
//
// ParseConfig reads a queue configuration file: the `config`, `queues`
// and `priorityClasses` blocks of a scenario file (docs/scenarios.md),
// validated by package scenario.
package batch
