package batch

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"

	"github.com/flotilla-sched/flotilla"
)

// customKind is a custom workload kind the suspend path admits: read as
// unstructured objects, so a CRD that is not installed costs one
// discovery request at Start.
type customKind struct {
	kind string
	// resources are tried in order at Start; the first served is watched.
	resources []schema.GroupVersionResource
	read      func(*unstructured.Unstructured) suspendable
	// unsuspend is the merge patch that admits an object.
	unsuspend []byte
}

var (
	pyTorchJobs = schema.GroupVersionResource{Group: "kubeflow.org", Version: "v1", Resource: "pytorchjobs"}
	mpiJobs     = schema.GroupVersionResource{Group: "kubeflow.org", Version: "v2beta1", Resource: "mpijobs"}
	mpiJobsV1   = schema.GroupVersionResource{Group: "kubeflow.org", Version: "v1", Resource: "mpijobs"}
	rayJobs     = schema.GroupVersionResource{Group: "ray.io", Version: "v1", Resource: "rayjobs"}
)

// customKinds are the custom kinds of the suspend path: JobSet and RayJob
// by spec.suspend, PyTorchJob and MPIJob by spec.runPolicy.suspend.
var customKinds = []customKind{
	{kind: "JobSet", resources: []schema.GroupVersionResource{jobSets}, read: fromJobSet, unsuspend: []byte(`{"spec":{"suspend":false}}`)},
	{kind: "PyTorchJob", resources: []schema.GroupVersionResource{pyTorchJobs}, read: fromReplicaSpecs("pytorchReplicaSpecs"), unsuspend: []byte(`{"spec":{"runPolicy":{"suspend":false}}}`)},
	{kind: "MPIJob", resources: []schema.GroupVersionResource{mpiJobs, mpiJobsV1}, read: fromReplicaSpecs("mpiReplicaSpecs"), unsuspend: []byte(`{"spec":{"runPolicy":{"suspend":false}}}`)},
	{kind: "RayJob", resources: []schema.GroupVersionResource{rayJobs}, read: fromRayJob, unsuspend: []byte(`{"spec":{"suspend":false}}`)},
}

// customWatch is one custom kind's informer cache.
type customWatch struct {
	kind  *customKind
	gvr   schema.GroupVersionResource
	store cache.Store
}

// startCustomKinds starts watching, for the suspend path, each custom
// kind the apiserver serves when Start runs, and waits for the informers
// to sync. A CRD installed later is seen after a restart.
func (s *Scheduler) startCustomKinds(ctx context.Context) error {
	if !s.cfg.AdmitSuspended || s.cfg.Dynamic == nil {
		return nil
	}
	f := dynamicinformer.NewDynamicSharedInformerFactory(s.cfg.Dynamic, 0)
	var watches []customWatch
	var synced []cache.InformerSynced
	for i := range customKinds {
		k := &customKinds[i]
		gvr, ok, err := s.served(k.resources)
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		inf := f.ForResource(gvr).Informer()
		_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    func(o any) { s.onCustom(k, gvr, o, false) },
			UpdateFunc: func(_, o any) { s.onCustom(k, gvr, o, false) },
			DeleteFunc: func(o any) { s.onCustom(k, gvr, o, true) },
		})
		watches = append(watches, customWatch{kind: k, gvr: gvr, store: inf.GetStore()})
		synced = append(synced, inf.HasSynced)
	}
	if len(watches) == 0 {
		return nil
	}
	f.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), synced...) {
		return fmt.Errorf("batch: custom workload informers did not sync: %w", context.Cause(ctx))
	}
	s.mu.Lock()
	s.custom = watches
	s.st.classesDirty = true // the next cycle reads them all
	s.mu.Unlock()
	return nil
}

// served is the first of the resources the apiserver serves.
func (s *Scheduler) served(resources []schema.GroupVersionResource) (schema.GroupVersionResource, bool, error) {
	for _, gvr := range resources {
		list, err := s.client.Discovery().ServerResourcesForGroupVersion(gvr.GroupVersion().String())
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return gvr, false, fmt.Errorf("batch: discovering %s: %w", gvr.GroupVersion(), err)
		}
		for _, r := range list.APIResources {
			if r.Name == gvr.Resource {
				return gvr, true, nil
			}
		}
	}
	return schema.GroupVersionResource{}, false, nil
}

func (s *Scheduler) onCustom(k *customKind, gvr schema.GroupVersionResource, o any, deleted bool) {
	if t, ok := o.(cache.DeletedFinalStateUnknown); ok {
		o = t.Obj
	}
	u, _ := o.(*unstructured.Unstructured)
	if u == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.syncWorkload(readCustom(k, gvr, u), deleted)
}

func readCustom(k *customKind, gvr schema.GroupVersionResource, u *unstructured.Unstructured) suspendable {
	w := k.read(u)
	w.gvr, w.unsuspend = gvr, k.unsuspend
	return w
}

// listCustom lists the custom workloads in the informers' caches. Called
// with mu held.
func (s *Scheduler) listCustom() []suspendable {
	var out []suspendable
	for _, c := range s.custom {
		for _, o := range c.store.List() {
			if u, ok := o.(*unstructured.Unstructured); ok {
				out = append(out, readCustom(c.kind, c.gvr, u))
			}
		}
	}
	return out
}

// fromCustom is what every custom kind's reader starts from.
func fromCustom(u *unstructured.Unstructured) suspendable {
	return suspendable{
		kind: u.GetKind(), namespace: u.GetNamespace(), name: u.GetName(), uid: u.GetUID(),
		labels: u.GetLabels(), annotations: u.GetAnnotations(), created: u.GetCreationTimestamp(),
		deleting: u.GetDeletionTimestamp() != nil, obj: u,
	}
}

// where names the workload in a field's path: "PyTorchJob ns/name ".
func (w *suspendable) where() string { return w.kind + " " + w.namespace + "/" + w.name + " " }

// fromReplicaSpecs reads a PyTorchJob or MPIJob (the replica specs under
// spec.<field>) for the suspend path: suspended by
// spec.runPolicy.suspend; each replica spec's replicas (default 1) pods
// of its template, master or launcher and workers together, as its gang.
func fromReplicaSpecs(field string) func(*unstructured.Unstructured) suspendable {
	return func(u *unstructured.Unstructured) suspendable {
		w := fromCustom(u)
		w.suspended, _, _ = unstructured.NestedBool(u.Object, "spec", "runPolicy", "suspend")
		path := w.where() + "spec." + field
		specs, found, err := unstructured.NestedMap(u.Object, "spec", field)
		switch {
		case err != nil:
			w.err = errors.Join(flotilla.Errorf(path, rawAt(u, "spec", field), flotilla.ErrMalformed, "want an object of replica specs"))
			return w
		case !found || len(specs) == 0:
			w.err = errors.Join(flotilla.Errorf(path, "", flotilla.ErrRequired, "at least one replica spec"))
			return w
		}
		var errs []error
		for _, name := range slices.Sorted(maps.Keys(specs)) {
			f := path + "." + name
			rs, ok := specs[name].(map[string]any)
			if !ok {
				errs = append(errs, flotilla.Errorf(f, fmt.Sprint(specs[name]), flotilla.ErrMalformed, "want an object"))
				continue
			}
			n, err := placeholderCount(rs, f+".replicas", 1, "replicas")
			if err != nil {
				errs = append(errs, err)
				continue
			}
			t, err := podTemplate(rs, f+".template", "template")
			if err != nil {
				errs = append(errs, err)
				continue
			}
			w.groups = append(w.groups, podGroup{template: t, n: n})
		}
		return finishCustom(w, errs, path)
	}
}

// fromRayJob reads a RayJob for the suspend path: suspended by
// spec.suspend; the cluster it creates is its gang, as a RayCluster's:
// the head and each worker group's minReplicas × numOfHosts (the
// submitter pod is left out: it is not a member).
func fromRayJob(u *unstructured.Unstructured) suspendable {
	w := fromCustom(u)
	w.suspended, _, _ = unstructured.NestedBool(u.Object, "spec", "suspend")
	path := w.where() + "spec.rayClusterSpec"
	head, found, err := unstructured.NestedMap(u.Object, "spec", "rayClusterSpec", "headGroupSpec")
	switch {
	case err != nil:
		w.err = errors.Join(flotilla.Errorf(path+".headGroupSpec", rawAt(u, "spec", "rayClusterSpec", "headGroupSpec"), flotilla.ErrMalformed, "want an object"))
		return w
	case !found:
		w.err = errors.Join(flotilla.Errorf(path+".headGroupSpec", "", flotilla.ErrRequired, "a RayJob's cluster has a head group"))
		return w
	}
	var errs []error
	if t, err := podTemplate(head, path+".headGroupSpec.template", "template"); err != nil {
		errs = append(errs, err)
	} else {
		w.groups = append(w.groups, podGroup{template: t, n: 1, rayHead: true})
	}
	groups, _, err := unstructured.NestedSlice(u.Object, "spec", "rayClusterSpec", "workerGroupSpecs")
	if err != nil {
		errs = append(errs, flotilla.Errorf(path+".workerGroupSpecs", rawAt(u, "spec", "rayClusterSpec", "workerGroupSpecs"), flotilla.ErrMalformed, "want a list"))
	}
	for i, x := range groups {
		f := fmt.Sprintf("%s.workerGroupSpecs[%d]", path, i)
		g, ok := x.(map[string]any)
		if !ok {
			errs = append(errs, flotilla.Errorf(f, fmt.Sprint(x), flotilla.ErrMalformed, "want an object"))
			continue
		}
		n, err := placeholderCount(g, f+".minReplicas", 0, "minReplicas")
		if err != nil {
			errs = append(errs, err)
			continue
		}
		hosts, err := placeholderCount(g, f+".numOfHosts", 1, "numOfHosts")
		if err != nil {
			errs = append(errs, err)
			continue
		}
		t, err := podTemplate(g, f+".template", "template")
		if err != nil {
			errs = append(errs, err)
			continue
		}
		name, _ := g["groupName"].(string)
		if n*max(hosts, 1) > 0 {
			w.groups = append(w.groups, podGroup{template: t, n: n * max(hosts, 1), rayGroup: name})
		}
	}
	return finishCustom(w, errs, path)
}

func finishCustom(w suspendable, errs []error, path string) suspendable {
	if n := w.pods(); n > maxPlaceholders {
		errs = append(errs, flotilla.Errorf(path, fmt.Sprint(n), flotilla.ErrOutOfRange, "want at most %d pods", maxPlaceholders))
	}
	if len(errs) > 0 {
		w.err = errors.Join(errs...)
	}
	return w
}

// placeholderCount reads a count from 0 to maxPlaceholders at key of m,
// def when absent.
func placeholderCount(m map[string]any, field string, def int64, key string) (int64, error) {
	v, found := m[key]
	if !found || v == nil {
		return def, nil
	}
	n, isInt := v.(int64)
	if !isInt || n < 0 || n > maxPlaceholders {
		return 0, flotilla.Errorf(field, fmt.Sprint(v), flotilla.ErrOutOfRange, "want an integer from 0 to %d", maxPlaceholders)
	}
	return n, nil
}

// podTemplate reads the pod template at key of m.
func podTemplate(m map[string]any, field, key string) (corev1.PodTemplateSpec, error) {
	var t corev1.PodTemplateSpec
	raw, ok := m[key].(map[string]any)
	if !ok {
		return t, flotilla.Errorf(field, fmt.Sprint(m[key]), flotilla.ErrRequired, "a pod template")
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(raw, &t); err != nil {
		return t, flotilla.Errorf(field, "", flotilla.ErrMalformed, "%v", err)
	}
	return t, nil
}

// rawAt is the value at path in u, for an error's message.
func rawAt(u *unstructured.Unstructured, path ...string) string {
	v, _, _ := unstructured.NestedFieldNoCopy(u.Object, path...)
	return fmt.Sprint(v)
}
