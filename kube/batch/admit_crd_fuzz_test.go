package batch

import (
	"errors"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/flotilla-sched/flotilla"
)

// The suspend path's readers (JobSet, PyTorchJob, MPIJob, RayJob) read
// whatever a workload's spec holds (any JSON a CRD without validation
// accepts) without panicking: either groups of 0 to maxPlaceholders pods
// in all, or errors that are all *flotilla.FieldError.
func FuzzCustomWorkloadReaders(f *testing.F) {
	for _, seed := range []string{
		`{"apiVersion":"kubeflow.org/v1","kind":"PyTorchJob","metadata":{"name":"p","namespace":"d"},"spec":{"runPolicy":{"suspend":true},"pytorchReplicaSpecs":{"Master":{"replicas":1,"template":{}},"Worker":{"replicas":3,"template":{"spec":{"containers":[{"name":"c"}]}}}}}}`,
		`{"apiVersion":"kubeflow.org/v2beta1","kind":"MPIJob","metadata":{"name":"m"},"spec":{"mpiReplicaSpecs":{"Worker":"x","Launcher":{"template":[]}}}}`,
		`{"apiVersion":"ray.io/v1","kind":"RayJob","metadata":{"name":"r"},"spec":{"suspend":true,"rayClusterSpec":{"headGroupSpec":{"template":{}},"workerGroupSpecs":[{"minReplicas":65536,"numOfHosts":65536,"template":{}},{"minReplicas":1e300},"x"]}}}`,
		`{"apiVersion":"ray.io/v1","kind":"RayJob","metadata":{"name":"r"},"spec":{"rayClusterSpec":{"headGroupSpec":"x","workerGroupSpecs":{}}}}`,
		`{"apiVersion":"jobset.x-k8s.io/v1alpha2","kind":"JobSet","metadata":{"name":"js"},"spec":{"replicatedJobs":[{"replicas":65536,"template":{"spec":{"parallelism":65536}}},{"template":{"spec":{"parallelism":-1}}}]}}`,
		`{"apiVersion":"kubeflow.org/v1","kind":"PyTorchJob","metadata":{"name":"p","labels":"x","creationTimestamp":5},"spec":{"runPolicy":"x","pytorchReplicaSpecs":{"W":{"replicas":null,"template":{"metadata":{"labels":{"a":1}},"spec":{"containers":"x"}}}}}}`,
	} {
		f.Add(seed)
	}
	readers := map[string]func(*unstructured.Unstructured) suspendable{
		"JobSet": fromJobSet, "PyTorchJob": fromReplicaSpecs("pytorchReplicaSpecs"),
		"MPIJob": fromReplicaSpecs("mpiReplicaSpecs"), "RayJob": fromRayJob,
	}
	f.Fuzz(func(t *testing.T, js string) {
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON([]byte(js)); err != nil {
			return
		}
		for kind, read := range readers {
			w := read(u)
			if w.err != nil {
				for _, e := range flotilla.Problems(w.err) {
					var fe *flotilla.FieldError
					if !errors.As(e, &fe) {
						t.Fatalf("%s: problem %v (%T) is not a FieldError", kind, e, e)
					}
				}
				continue
			}
			if n := w.pods(); n < 0 || n > maxPlaceholders {
				t.Fatalf("%s: %d pods without an error", kind, n)
			}
		}
	})
}
