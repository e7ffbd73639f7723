package executor

import (
	"context"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"

	"github.com/flotilla-sched/flotilla/api"
)

// Lister reads the cluster's nodes and pods. The executor only reads
// them; it must not modify what they return.
type Lister interface {
	// Nodes returns the nodes that selector selects. It returns (with an
	// error) when ctx ends, the Step's context.
	Nodes(ctx context.Context, selector labels.Selector) ([]*corev1.Node, error)
	// Pods returns every pod of every namespace. It returns (with an
	// error) when ctx ends.
	Pods(ctx context.Context) ([]*corev1.Pod, error)
}

// APILister reads nodes and pods from the apiserver at each call: always
// current, at the cost of two lists per report. Each list is bounded by
// the Step's context (Run gives each Step one Renew period), so a hung
// apiserver holds a report no longer. Tests use it; clusters of many pods
// want InformerLister.
type APILister struct {
	Kube kubernetes.Interface
}

// Nodes lists the selected nodes.
func (l APILister) Nodes(ctx context.Context, selector labels.Selector) ([]*corev1.Node, error) {
	list, err := l.Kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: selector.String()})
	if err != nil {
		return nil, err
	}
	out := make([]*corev1.Node, len(list.Items))
	for i := range list.Items {
		out[i] = &list.Items[i]
	}
	return out, nil
}

// Pods lists every pod.
func (l APILister) Pods(ctx context.Context) ([]*corev1.Pod, error) {
	list, err := l.Kube.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	out := make([]*corev1.Pod, len(list.Items))
	for i := range list.Items {
		out[i] = &list.Items[i]
	}
	return out, nil
}

// InformerLister reads nodes and pods from a shared informer factory's
// caches (it never waits, so it ignores the context).
type InformerLister struct {
	nodes corelisters.NodeLister
	pods  corelisters.PodLister
}

// NewInformerLister registers the Node and Pod informers with factory;
// start the factory and wait for its caches to sync before the first
// Step (a Step on an empty cache would adopt nothing).
func NewInformerLister(factory informers.SharedInformerFactory) *InformerLister {
	return &InformerLister{nodes: factory.Core().V1().Nodes().Lister(), pods: factory.Core().V1().Pods().Lister()}
}

// Nodes lists the selected nodes from the cache.
func (l *InformerLister) Nodes(_ context.Context, selector labels.Selector) ([]*corev1.Node, error) {
	return l.nodes.List(selector)
}

// Pods lists every pod from the cache.
func (l *InformerLister) Pods(context.Context) ([]*corev1.Pod, error) {
	return l.pods.List(labels.Everything())
}

// nodes converts the cluster's nodes for the report, sorted by name (see
// NodeOf), subtracting the pods the executor does not hold, and of the
// pods it holds what they request beyond their lease (beyond).
func (e *Executor) nodes(knodes []*corev1.Node, pods []*corev1.Pod) []api.Node {
	on := make(map[string][]*corev1.Pod, len(knodes))
	extra := make(map[string][]corev1.ResourceList, len(knodes))
	for _, n := range knodes {
		on[n.Name] = nil
	}
	held := make(map[string]*task, len(e.keys))
	for _, k := range e.keys {
		t := e.held[k]
		held[t.pod] = t
	}
	for _, p := range pods {
		if _, ok := on[p.Spec.NodeName]; !ok {
			continue
		}
		if t := held[p.Name]; t != nil && p.Namespace == e.cfg.Namespace && p.Labels[LabelCluster] == e.cfg.Cluster {
			if x := beyond(p, t); len(x) > 0 {
				extra[p.Spec.NodeName] = append(extra[p.Spec.NodeName], x)
			}
			continue
		}
		on[p.Spec.NodeName] = append(on[p.Spec.NodeName], p)
	}
	out := make([]api.Node, len(knodes))
	for i, n := range knodes {
		out[i] = nodeOf(n, on[n.Name], extra[n.Name], e.cfg.Resources)
	}
	slices.SortFunc(out, func(a, b api.Node) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// beyond is what a held lease's pod requests beyond the lease, which the
// service counts itself: the template's other containers, sidecars and
// init containers, the overhead. The lease's requests are the lease's
// when the executor made the pod, and its first container's when it
// adopted it (BuildPod put them there). Nil for an ended pod.
func beyond(p *corev1.Pod, t *task) corev1.ResourceList {
	if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
		return nil
	}
	leased := corev1.ResourceList{}
	if t.lease.Job != "" {
		for name, v := range t.lease.Requests {
			if q, err := resource.ParseQuantity(v); err == nil {
				leased[corev1.ResourceName(name)] = q
			}
		}
	} else if len(p.Spec.Containers) > 0 {
		leased = p.Spec.Containers[0].Resources.Requests
	}
	var out corev1.ResourceList
	for name, q := range resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{UseStatusResources: true}) {
		if l, ok := leased[name]; ok {
			q.Sub(l)
		}
		if q.Sign() > 0 {
			if out == nil {
				out = corev1.ResourceList{}
			}
			out[name] = q
		}
	}
	return out
}

// NodeOf is a node as the executor reports it: for each of the resource
// names, its allocatable minus what the pods that are not Succeeded or
// Failed among others request (resource.PodRequests: the effective
// request of containers, init containers and overhead, and of a pod
// resized in place the larger of its spec and its status, as
// kube-scheduler counts it), never below zero, zeros omitted; its labels and taints; and
// unschedulable when spec.unschedulable is set or its Ready condition is
// False or Unknown. others are the pods bound to the node that Flotilla
// does not account for: every pod but the leases the executor holds.
func NodeOf(n *corev1.Node, others []*corev1.Pod, names []string) api.Node {
	return nodeOf(n, others, nil, names)
}

// nodeOf is NodeOf, also subtracting extra.
func nodeOf(n *corev1.Node, others []*corev1.Pod, extra []corev1.ResourceList, names []string) api.Node {
	free := make(map[string]resource.Quantity, len(names))
	for _, name := range names {
		if q, ok := n.Status.Allocatable[corev1.ResourceName(name)]; ok {
			free[name] = q.DeepCopy()
		}
	}
	for _, p := range others {
		if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		req := resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{UseStatusResources: true})
		for name, q := range free {
			if r, ok := req[corev1.ResourceName(name)]; ok {
				q.Sub(r)
				free[name] = q
			}
		}
	}
	for _, req := range extra {
		for name, q := range free {
			if r, ok := req[corev1.ResourceName(name)]; ok {
				q.Sub(r)
				free[name] = q
			}
		}
	}
	out := api.Node{Name: n.Name, Resources: make(map[string]string, len(free)), Unschedulable: n.Spec.Unschedulable}
	for name, q := range free {
		if q.Sign() > 0 {
			out.Resources[name] = q.String()
		}
	}
	if len(n.Labels) > 0 {
		out.Labels = make(map[string]string, len(n.Labels))
		for k, v := range n.Labels {
			out.Labels[k] = v
		}
	}
	for _, t := range n.Spec.Taints {
		out.Taints = append(out.Taints, api.Taint{Key: t.Key, Value: t.Value, Effect: string(t.Effect)})
	}
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady && c.Status != corev1.ConditionTrue {
			out.Unschedulable = true
		}
	}
	return out
}
