// Package kubeconv converts Kubernetes objects into Flotilla's vocabulary:
// a Node into a flotilla.Node, a Pod into a flotilla.Job, a PriorityClass
// into a flotilla.PriorityClass. It is shared by the batch scheduler
// (package batch) and the executor; it reads no clock, starts no
// goroutines and keeps no state.
//
// # Resources
//
// Resources are converted by name through the caller's
// *flotilla.ResourceSchema (Schema gives the default: cpu in milli-cpu,
// memory in bytes, nvidia.com/gpu whole). A resource the schema lacks is
// ignored; a pod's request is its effective request exactly as
// kube-scheduler computes it (k8s.io/component-helpers/resource.PodRequests:
// the larger of the containers' sum and each init container's request,
// restartable init containers (sidecars) added, plus the pod overhead;
// with UseStatusResources, as kube-scheduler counts the pods on a node, so
// that a pod resized in place holds the larger of its spec and its status
// until the kubelet has resized it). A
// node's capacity is its status.allocatable.
//
// # Jobs
//
// A pod's job is identified by "namespace/name" (JobID). Its queue is the
// label, or else the annotation, LabelQueue (flotilla.dev/queue), and
// without either the pod's namespace; its job set is the label or
// annotation LabelJobSet (flotilla.dev/job-set), empty without one. Its
// priority within its queue and class (flotilla.Job.Priority, LOWER runs
// first, Armada's convention) is the annotation AnnotationPriority
// (flotilla.dev/priority), a uint32 in decimal, 0 without it. Its
// priority class is spec.priorityClassName (empty: the scheduler's default
// class); its submit time is the pod's creation time; its node selector is
// spec.nodeSelector and its tolerations spec.tolerations (tolerationSeconds
// is ignored). Its required node affinity
// (spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution)
// is flotilla.Job.NodeAffinity: terms ORed, each a conjunction of In, NotIn,
// Exists and DoesNotExist over node labels. Gt, Lt and matchFields are
// refused, so that a pod is never placed on a node it would refuse;
// preferred affinity is ignored.
//
// Gangs use Armada's annotations: AnnotationGangID
// (armadaproject.io/gangId), AnnotationGangCardinality
// (armadaproject.io/gangCardinality, a positive integer, required with a
// gang id) and AnnotationGangNodeUniformityLabel
// (armadaproject.io/gangNodeUniformityLabel). A gang's ID is namespaced
// ("namespace/gangId"): a gang never spans namespaces. A gang member's
// AnnotationTopologyRequired (flotilla.dev/topology-required) and
// AnnotationTopologyPreferred (flotilla.dev/topology-preferred), or Kueue's
// kueue.x-k8s.io/podset-required-topology and -preferred-topology, name a
// level (a node label key) of the scheduler's default topology
// (scheduler.Config.Topologies) that its gang requires or prefers
// (flotilla.GangTopology); a pod outside a gang may not set them.
//
// # Workloads
//
// JobOf converts a pod of a workload: the Owner that OwnerOf reads from the
// pod's owner chain (a Job, a JobSet over its child Jobs, a PyTorchJob or
// MPIJob, a RayCluster possibly under a RayJob, as unstructured objects, so
// no CRD's Go types are needed) gives the gang (an Indexed Job with
// parallelism = completions; a JobSet's replicated jobs together, or each
// alone under startupPolicyOrder InOrder; a training job's replica specs;
// a RayCluster's head and minimum workers), and the job set
// "namespace/Kind/name" of the top owner. The queue is LabelQueue on the
// pod, else Kueue's LabelKueueQueue on the pod, else either on the top
// owner, else the namespace; the priority is AnnotationPriority on the pod,
// else on the owner, else the value of the Kueue WorkloadPriorityClass
// that LabelKueuePriorityClass names (KueuePriority: higher Kueue values
// become lower Flotilla priorities, order kept over all of int32). Armada's
// gang annotations on the pod win over the owner's gang. A spec OwnerOf
// cannot read is an error naming the owner and the field
// ("Job ml/train spec.parallelism").
//
// Every problem of a pod is reported at once, as an errors.Join of
// *flotilla.FieldError whose Field names the pod field or annotation
// ("metadata.annotations[armadaproject.io/gangCardinality]") and whose
// Value is the value found.
//
// # Priority classes
//
// A PriorityClass object becomes the Flotilla class of the same name, with
// its value as the priority, preemptible unless its preemptionPolicy is
// Never. (Kubernetes' preemptionPolicy says whether the pod may preempt
// others; Flotilla reads Never as "never preempted either", the mapping
// issue 12 asks for.) Pods that name no class get the class of the
// PriorityClass with globalDefault, or else DefaultClass (priority 0,
// preemptible), which Classes always adds.
package kubeconv
