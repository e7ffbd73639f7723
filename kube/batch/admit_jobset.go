package batch

import (
	"errors"
	"fmt"

	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/flotilla-sched/flotilla"
)

// jobSets is the JobSet resource the suspend path watches.
var jobSets = schema.GroupVersionResource{Group: "jobset.x-k8s.io", Version: "v1alpha2", Resource: "jobsets"}

// fromJobSet reads a JobSet for the suspend path: its pods are each
// replicated job's replicas (default 1) × its Job template's pods at once.
// A spec it cannot read is the suspendable's err, naming the field.
func fromJobSet(u *unstructured.Unstructured) suspendable {
	w := fromCustom(u)
	where := w.where()
	w.suspended, _, _ = unstructured.NestedBool(u.Object, "spec", "suspend")
	rjs, _, err := unstructured.NestedSlice(u.Object, "spec", "replicatedJobs")
	if err != nil {
		w.err = errors.Join(flotilla.Errorf(where+"spec.replicatedJobs", rawAt(u, "spec", "replicatedJobs"), flotilla.ErrMalformed, "want a list"))
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
