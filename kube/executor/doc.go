// Package executor is the cluster side of docs/http-api.md's executor protocol
// for a real Kubernetes cluster: one Executor per cluster reports the
// cluster's nodes and the Flotilla pods it holds to a `flotilla serve`,
// creates a pod for every new lease, deletes the pods the service cancels
// or preempts (their grace period honoured), and reports each pod's phase
// from its status.
//
// What maps (README.md has the long form):
//
//   - Nodes: every Node the Lister returns (optionally a label selector's
//     share, so that several Flotilla clusters can split one apiserver),
//     sorted by name. A node's resources are its allocatable, for the
//     resource names configured (the service's schema), minus the requests
//     (k8s.io/component-helpers PodRequests: containers, init containers,
//     overhead) of every pod bound to it that is not terminal and that the
//     executor does not hold: Flotilla accounts for its own leases, the
//     executor for everything else, including what a lease's pod requests
//     beyond its lease (the template's other containers, sidecars,
//     overhead). Labels and taints are the node's;
//     it is unschedulable when spec.unschedulable is set or its Ready
//     condition is False or Unknown.
//   - A lease becomes a pod named from the job id and attempt (PodName),
//     pinned to the leased node with spec.nodeName, restartPolicy Never,
//     terminationGracePeriodSeconds from the lease, the lease's requests
//     on the first container (also as limits for extended resources), and
//     labels and annotations naming the cluster, job, attempt, queue and
//     job set. The containers come from a pod template, by default one
//     busybox container that sleeps for the job's runtime and exits with
//     its exit code.
//   - Pod phases: Pending is pending, Running running, Succeeded
//     succeeded; Failed is failed with the first non-zero exit code of
//     its containers, or returned when the pod was evicted or disrupted
//     (reason Evicted, or DisruptionTarget=True: its containers' exit
//     codes are the kill's) or no container exited non-zero (the kubelet
//     refused the pod). A pod killed on the service's
//     order is stopped once it is gone or terminal; a pod that vanished
//     otherwise before ending is returned.
//   - Pods reported terminal are deleted once the service has taken the
//     report, except the Keep most recent ones, kept for debugging.
//
// Restart safety: an executor's first Step adopts the pods labelled with
// its cluster, so a restarted executor reports them instead of losing
// them.
//
// A Step never waits on the apiserver beyond its context: the Lister is
// given it (APILister lists with it; Run gives each Step until shortly
// before the oldest lease it renews would expire, at least one Renew
// period: executor.Every), and each create, delete and get is one request, without
// client-go's own retries, which would sleep through a 429's or 5xx's
// Retry-After up to 10 times. A call that fails is made again by a later
// Step: a lease whose pod was not created is created again, a kill whose
// delete failed is sent again while the pod is not deleting, and a
// retired pod whose delete failed is left (it is no longer held).
//
// Step makes one report and starts no goroutine; Run starts the
// informers and loops on the real clock (executor.Every).
package executor
