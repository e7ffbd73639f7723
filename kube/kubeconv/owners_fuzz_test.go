package kubeconv

import (
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/flotilla-sched/flotilla"
)

// OwnerOf reads whatever an owner's spec holds (any JSON a CRD without
// validation accepts) without panicking: either a workload whose gang, if
// any, has an ID and 1 to 2^20 members, or errors that are all
// *flotilla.FieldError.
func FuzzOwnerOf(f *testing.F) {
	for _, seed := range []string{
		`{"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"j","namespace":"ns","uid":"u"},"spec":{"completionMode":"Indexed","parallelism":4,"completions":4}}`,
		`{"apiVersion":"jobset.x-k8s.io/v1alpha2","kind":"JobSet","metadata":{"name":"js","namespace":"ns"},"spec":{"startupPolicy":{"startupPolicyOrder":"InOrder"},"replicatedJobs":[{"name":"w","replicas":2,"template":{"spec":{"parallelism":4}}}]}}`,
		`{"apiVersion":"kubeflow.org/v1","kind":"PyTorchJob","metadata":{"name":"p"},"spec":{"pytorchReplicaSpecs":{"Master":{"replicas":1},"Worker":{"replicas":-3}}}}`,
		`{"apiVersion":"kubeflow.org/v2beta1","kind":"MPIJob","metadata":{"name":"m"},"spec":{"mpiReplicaSpecs":{"Worker":"x"}}}`,
		`{"apiVersion":"ray.io/v1","kind":"RayCluster","metadata":{"name":"r"},"spec":{"headGroupSpec":{},"workerGroupSpecs":[{"minReplicas":1e300,"numOfHosts":2}]}}`,
		`{"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"j"},"spec":{"completionMode":"Indexed","completions":1.5}}`,
	} {
		f.Add(seed, "w")
	}
	f.Fuzz(func(t *testing.T, js, replicatedJob string) {
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON([]byte(js)); err != nil {
			return
		}
		pod := &corev1.Pod{}
		pod.Labels = map[string]string{LabelJobSetReplicatedJob: replicatedJob}
		o, err := OwnerOf(pod, []*unstructured.Unstructured{u})
		if err != nil {
			for _, e := range flotilla.Problems(err) {
				var fe *flotilla.FieldError
				if !errors.As(e, &fe) {
					t.Fatalf("problem %v (%T) is not a FieldError", e, e)
				}
			}
			return
		}
		if o == nil {
			t.Fatal("no owner and no error for a chain of one")
		}
		if g := o.Gang; g.ID != "" && (g.Cardinality < 1 || g.Cardinality > 1<<20) || g.ID == "" && g.Cardinality != 0 {
			t.Fatalf("gang %+v", g)
		}
	})
}
