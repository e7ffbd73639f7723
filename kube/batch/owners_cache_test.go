package batch

import (
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
)

// A JobSet of 4 replicated jobs × 2 pods: its 8 pods are read through 4
// child Jobs, whose controller is the one JobSet. A cycle reads each
// child Job once (its pods share it) and the JobSet once (its children
// share it): 5 reads, where reading each chain whole took 8.
func TestOwnerAboveSeveralControllersIsReadOncePerCycle(t *testing.T) {
	var objs []runtime.Object
	for i := range 4 {
		objs = append(objs, uobj(t, fmt.Sprintf(`
apiVersion: batch/v1
kind: Job
metadata:
  name: js-w-%d
  namespace: default
  uid: u-child-%d
  ownerReferences: [{apiVersion: jobset.x-k8s.io/v1alpha2, kind: JobSet, name: js, uid: u-js, controller: true}]
spec: {completionMode: Indexed, parallelism: 2, completions: 2}`, i, i)))
	}
	objs = append(objs, uobj(t, `
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata: {name: js, namespace: default, uid: u-js}
spec:
  replicatedJobs:
  - name: w
    replicas: 4
    template: {spec: {completionMode: Indexed, parallelism: 2, completions: 2}}`))
	kube := []runtime.Object{testNode("n1", "8")}
	for i := range 8 {
		kube = append(kube, testPod(fmt.Sprintf("js-w-%d-%d", i/2, i%2), "1",
			ownedBy("batch/v1", "Job", fmt.Sprintf("js-w-%d", i/2), fmt.Sprintf("u-child-%d", i/2))))
	}
	f := newOwnerFixture(t, objs, kube...)
	if rep := f.cycle(); rep.Bound != 8 {
		t.Fatalf("bound %d, want the JobSet's gang of 8 (%v)", rep.Bound, rep.Errors)
	}
	if n := f.gets.Load(); n != 5 {
		t.Fatalf("%d reads for 8 pods under 4 Jobs under 1 JobSet, want 5", n)
	}
	f.cycle()
	if n := f.gets.Load(); n != 5 {
		t.Fatalf("%d reads after a second cycle, want still 5 (cached while the pods exist)", n)
	}
}
