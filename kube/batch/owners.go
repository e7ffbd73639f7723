package batch

import (
	"context"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/flotilla-sched/flotilla/kube/kubeconv"
)

// ownerEntry is what the scheduler read of one pod controller's chain.
type ownerEntry struct {
	// owner is nil when the controller is gone or its kind is not served
	// (a CRD that is not installed): its pods are bare pods.
	owner *kubeconv.Owner
	// err is why the chain could not be read as a workload; transient
	// marks an API error (not a bad spec) that the next cycle retries.
	err       error
	transient bool
}

// prioEntry is a Kueue WorkloadPriorityClass's value, or why it has none.
type prioEntry struct {
	value     int32
	err       error
	transient bool
}

// workload is what the pod's owner chain and Kueue priority class say;
// ready is false until the scheduler has read them (the next cycle reads
// them; the pod is neither queued nor running meanwhile).
type workload struct {
	owner *kubeconv.Owner
	kueue *int32
	err   error
	ready bool
}

// workloadOf looks up p's workload in the owner cache. Called with mu
// held.
func (s *Scheduler) workloadOf(p *corev1.Pod) workload {
	if s.cfg.Dynamic == nil {
		return workload{ready: true}
	}
	var w workload
	if ref := kubeconv.ControllerRef(p.OwnerReferences); ref != nil {
		if _, known := kubeconv.OwnerResource(*ref); known {
			e, ok := s.st.owners[ref.UID]
			if !ok {
				return workload{}
			}
			if e.err != nil {
				return workload{err: e.err, ready: true}
			}
			w.owner = e.owner
		}
	}
	if class := kubeconv.KueuePriorityClass(p, w.owner); class != "" {
		e, ok := s.st.prios[class]
		if !ok {
			return workload{}
		}
		if e.err != nil {
			return workload{err: e.err, ready: true}
		}
		v := e.value
		w.kueue = &v
	}
	w.ready = true
	return w
}

// ownerFetch is one controller chain, or one priority class, to read.
type ownerFetch struct {
	ns    string
	ref   metav1.OwnerReference
	class string
	pod   *corev1.Pod
	entry ownerEntry
	prio  prioEntry
}

// resolveOwners reads the owner chains and Kueue priority classes that
// pods wait for (at most Config.BindWorkers reads in flight, without the
// lock), then classifies those pods again. Entries no pod uses any more
// are forgotten, and entries a transient API error left are read again.
func (s *Scheduler) resolveOwners(ctx context.Context) {
	if s.cfg.Dynamic == nil {
		return
	}
	s.mu.Lock()
	s.sweepOwners()
	var todo []*ownerFetch
	seenRef, seenClass := map[types.UID]bool{}, map[string]bool{}
	for key := range s.st.unresolved {
		ps := s.st.pods[key]
		if ps == nil {
			delete(s.st.unresolved, key)
			continue
		}
		p := ps.pod
		var owner *kubeconv.Owner
		if ref := kubeconv.ControllerRef(p.OwnerReferences); ref != nil {
			if _, known := kubeconv.OwnerResource(*ref); known {
				if e, ok := s.st.owners[ref.UID]; ok {
					owner = e.owner
				} else if !seenRef[ref.UID] {
					seenRef[ref.UID] = true
					todo = append(todo, &ownerFetch{ns: p.Namespace, ref: *ref, pod: p})
				}
			}
		}
		if class := kubeconv.KueuePriorityClass(p, owner); class != "" && !seenClass[class] {
			if _, ok := s.st.prios[class]; !ok {
				seenClass[class] = true
				todo = append(todo, &ownerFetch{class: class})
			}
		}
	}
	var waiting []suspendable
	for _, sj := range s.st.suspended {
		for _, key := range sj.keys {
			// A placeholder waiting for its Kueue priority class (not
			// read yet, or forgotten after a transient error).
			ps := s.st.virtual[key]
			if ps == nil || ps.kind != kindInvalid {
				continue
			}
			class := kubeconv.KueuePriorityClass(ps.pod, ps.owner)
			if _, cached := s.st.prios[class]; class == "" || cached {
				continue
			}
			waiting = append(waiting, sj.w)
			if !seenClass[class] {
				seenClass[class] = true
				todo = append(todo, &ownerFetch{class: class})
			}
			break
		}
	}
	s.mu.Unlock()
	if len(todo) > 0 {
		s.fetchOwners(ctx, todo)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, f := range todo {
		if f.class != "" {
			s.st.prios[f.class] = f.prio
		} else {
			s.st.owners[f.ref.UID] = f.entry
		}
	}
	for _, w := range waiting {
		s.syncWorkload(w, false)
	}
	keys := make([]string, 0, len(s.st.unresolved))
	for key := range s.st.unresolved {
		keys = append(keys, key)
	}
	for _, key := range keys {
		delete(s.st.unresolved, key)
		if ps := s.st.pods[key]; ps != nil {
			s.sync(ps.pod)
		}
	}
}

// sweepOwners forgets the cache entries no pod refers to and those a
// transient error left (their pods wait for them again). Called with mu
// held.
func (s *Scheduler) sweepOwners() {
	usedRef, usedClass := map[types.UID]bool{}, map[string]bool{}
	for key, ps := range s.st.pods {
		p := ps.pod
		var owner *kubeconv.Owner
		if ref := kubeconv.ControllerRef(p.OwnerReferences); ref != nil {
			usedRef[ref.UID] = true
			if e, ok := s.st.owners[ref.UID]; ok {
				owner = e.owner
				if e.transient {
					s.st.unresolved[key] = true
				}
			}
		}
		if c := kubeconv.KueuePriorityClass(p, owner); c != "" {
			usedClass[c] = true
			if e, ok := s.st.prios[c]; ok && e.transient {
				s.st.unresolved[key] = true
			}
		}
	}
	for _, ps := range s.st.virtual {
		if c := kubeconv.KueuePriorityClass(ps.pod, ps.owner); c != "" {
			usedClass[c] = true
		}
	}
	for uid, e := range s.st.owners {
		if !usedRef[uid] || e.transient {
			delete(s.st.owners, uid)
		}
	}
	for c, e := range s.st.prios {
		if !usedClass[c] || e.transient {
			delete(s.st.prios, c)
		}
	}
}

// fetchOwners reads every fetch, at most Config.BindWorkers at once.
// An object on several chains (a JobSet above its child Jobs, a RayJob
// above its RayCluster and submitter Job) is read once per cycle.
func (s *Scheduler) fetchOwners(ctx context.Context, todo []*ownerFetch) {
	objs := &objectCache{m: map[string]*objectGet{}}
	sem := make(chan struct{}, s.cfg.BindWorkers)
	var wg sync.WaitGroup
	for _, f := range todo {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			if f.class != "" {
				f.prio = s.fetchClass(ctx, f.class)
			} else {
				f.entry = s.fetchChain(ctx, objs, f.ns, f.ref, f.pod)
			}
		}()
	}
	wg.Wait()
}

// fetchChain reads the controller chain from ref up, while each object is
// a workload kind, and reads it as a workload (kubeconv.OwnerOf).
func (s *Scheduler) fetchChain(ctx context.Context, objs *objectCache, ns string, ref metav1.OwnerReference, pod *corev1.Pod) ownerEntry {
	var chain []*unstructured.Unstructured
	cur := &ref
	for len(chain) < kubeconv.MaxOwnerDepth && cur != nil {
		gvr, known := kubeconv.OwnerResource(*cur)
		if !known {
			break
		}
		o, err := objs.get(ctx, s.cfg.Dynamic, gvr, ns, cur.Name)
		if apierrors.IsNotFound(err) {
			// Gone, or its CRD is not installed: the chain stops below.
			break
		}
		if err != nil {
			return ownerEntry{err: fmt.Errorf("reading the pod's owner %s %s/%s: %w", cur.Kind, ns, cur.Name, err), transient: true}
		}
		if o.GetUID() != cur.UID && cur.UID != "" {
			// A namesake replaced the owner: the pod's owner is gone.
			break
		}
		chain = append(chain, o)
		cur = kubeconv.ControllerRef(o.GetOwnerReferences())
	}
	owner, err := kubeconv.OwnerOf(pod, chain)
	if err != nil {
		// Read again next cycle: the spec may be fixed.
		return ownerEntry{err: err, transient: true}
	}
	return ownerEntry{owner: owner}
}

// fetchClass reads a Kueue WorkloadPriorityClass's value.
func (s *Scheduler) fetchClass(ctx context.Context, name string) prioEntry {
	o, err := s.cfg.Dynamic.Resource(kubeconv.WorkloadPriorityClasses).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return prioEntry{err: fmt.Errorf("label %s: no WorkloadPriorityClass %q (or Kueue's CRDs are not installed)", kubeconv.LabelKueuePriorityClass, name)}
	}
	if err != nil {
		return prioEntry{err: fmt.Errorf("reading WorkloadPriorityClass %q: %w", name, err), transient: true}
	}
	v, err := kubeconv.WorkloadPriorityValue(o)
	return prioEntry{value: v, err: err}
}

// objectCache holds the owner objects one cycle read, by resource,
// namespace and name, so that concurrent chain reads share them: the
// first reader reads, the others wait for its answer (the object or the
// error). The objects are shared, never changed.
type objectCache struct {
	mu sync.Mutex
	m  map[string]*objectGet
}

type objectGet struct {
	done chan struct{}
	obj  *unstructured.Unstructured
	err  error
}

func (c *objectCache) get(ctx context.Context, d dynamic.Interface, gvr schema.GroupVersionResource, ns, name string) (*unstructured.Unstructured, error) {
	key := gvr.String() + "|" + ns + "/" + name
	c.mu.Lock()
	g, ok := c.m[key]
	if !ok {
		g = &objectGet{done: make(chan struct{})}
		c.m[key] = g
	}
	c.mu.Unlock()
	if ok {
		select {
		case <-g.done:
			return g.obj, g.err
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
	}
	g.obj, g.err = d.Resource(gvr).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
	close(g.done)
	return g.obj, g.err
}
