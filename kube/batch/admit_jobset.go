package batch

import (
	"context"
	"errors"
	"fmt"

	batchv1 "k8s.io/api/batch/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"

	"github.com/flotilla-sched/flotilla"
)

// jobSets is the JobSet resource the suspend path watches.
var jobSets = schema.GroupVersionResource{Group: "jobset.x-k8s.io", Version: "v1alpha2", Resource: "jobsets"}

// startJobSets starts watching JobSets for the suspend path when the
// apiserver serves them (their CRD is installed when Start runs) and
// waits for the informer to sync. Without them it does nothing: a CRD
// installed later is seen after a restart.
func (s *Scheduler) startJobSets(ctx context.Context) error {
	if !s.cfg.AdmitSuspended || s.cfg.Dynamic == nil {
		return nil
	}
	list, err := s.client.Discovery().ServerResourcesForGroupVersion(jobSets.GroupVersion().String())
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("batch: discovering %s: %w", jobSets.GroupVersion(), err)
	}
	served := false
	for _, r := range list.APIResources {
		served = served || r.Name == jobSets.Resource
	}
	if !served {
		return nil
	}
	f := dynamicinformer.NewDynamicSharedInformerFactory(s.cfg.Dynamic, 0)
	inf := f.ForResource(jobSets).Informer()
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { s.onJobSet(o, false) },
		UpdateFunc: func(_, o any) { s.onJobSet(o, false) },
		DeleteFunc: func(o any) { s.onJobSet(o, true) },
	})
	f.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		return fmt.Errorf("batch: JobSet informer did not sync: %w", context.Cause(ctx))
	}
	s.mu.Lock()
	s.jobSetStore = inf.GetStore()
	s.st.classesDirty = true // the next cycle reads them all
	s.mu.Unlock()
	return nil
}

func (s *Scheduler) onJobSet(o any, deleted bool) {
	if t, ok := o.(cache.DeletedFinalStateUnknown); ok {
		o = t.Obj
	}
	u, _ := o.(*unstructured.Unstructured)
	if u == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.syncWorkload(fromJobSet(u), deleted)
}

// listJobSets lists the JobSets in the informer's cache. Called with mu
// held.
func (s *Scheduler) listJobSets() []suspendable {
	if s.jobSetStore == nil {
		return nil
	}
	var out []suspendable
	for _, o := range s.jobSetStore.List() {
		if u, ok := o.(*unstructured.Unstructured); ok {
			out = append(out, fromJobSet(u))
		}
	}
	return out
}

// fromJobSet reads a JobSet for the suspend path: its pods are each
// replicated job's replicas (default 1) × its Job template's pods at once.
// A spec it cannot read is the suspendable's err, naming the field.
func fromJobSet(u *unstructured.Unstructured) suspendable {
	w := suspendable{
		kind: "JobSet", namespace: u.GetNamespace(), name: u.GetName(), uid: u.GetUID(),
		labels: u.GetLabels(), annotations: u.GetAnnotations(), created: u.GetCreationTimestamp(),
		deleting: u.GetDeletionTimestamp() != nil, obj: u,
	}
	where := "JobSet " + w.namespace + "/" + w.name + " "
	w.suspended, _, _ = unstructured.NestedBool(u.Object, "spec", "suspend")
	rjs, _, err := unstructured.NestedSlice(u.Object, "spec", "replicatedJobs")
	if err != nil {
		w.err = errors.Join(flotilla.Errorf(where+"spec.replicatedJobs", "", flotilla.ErrMalformed, "%v", err))
		return w
	}
	var errs []error
	for i, x := range rjs {
		f := fmt.Sprintf("%sspec.replicatedJobs[%d]", where, i)
		rj, ok := x.(map[string]any)
		if !ok {
			errs = append(errs, flotilla.Errorf(f, fmt.Sprint(x), flotilla.ErrMalformed, "want an object"))
			continue
		}
		replicas := int64(1)
		if v, found, err := unstructured.NestedFieldNoCopy(rj, "replicas"); err == nil && found {
			n, isInt := v.(int64)
			if !isInt || n < 0 || n > maxPlaceholders {
				errs = append(errs, flotilla.Errorf(f+".replicas", fmt.Sprint(v), flotilla.ErrOutOfRange, "want an integer from 0 to %d", maxPlaceholders))
				continue
			}
			replicas = n
		}
		spec, _, _ := unstructured.NestedMap(rj, "template", "spec")
		var js batchv1.JobSpec
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(spec, &js); err != nil {
			errs = append(errs, flotilla.Errorf(f+".template.spec", "", flotilla.ErrMalformed, "%v", err))
			continue
		}
		per := int64(podsAtOnce(&batchv1.Job{Spec: js}))
		if per < 0 || replicas*per > maxPlaceholders {
			errs = append(errs, flotilla.Errorf(f, fmt.Sprint(replicas*per), flotilla.ErrOutOfRange, "want at most %d pods", maxPlaceholders))
			continue
		}
		w.groups = append(w.groups, podGroup{template: js.Template, n: replicas * per})
	}
	if n := w.pods(); n > maxPlaceholders {
		errs = append(errs, flotilla.Errorf(where+"spec.replicatedJobs", fmt.Sprint(n), flotilla.ErrOutOfRange, "want at most %d pods", maxPlaceholders))
	}
	if len(errs) > 0 {
		w.err = errors.Join(errs...)
	}
	return w
}

// maxPlaceholders bounds the pods of one suspended workload.
const maxPlaceholders = 1 << 16
