package executor_test

import (
	"strings"
	"testing"

	"github.com/leanovate/gopter"
	"github.com/leanovate/gopter/gen"
	"github.com/leanovate/gopter/prop"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/flotilla-sched/flotilla/api"
	"github.com/flotilla-sched/flotilla/kube/executor"
)

func TestPhaseOfMapsPodStatusToTheProtocolsPhases(t *testing.T) {
	term := func(name string, code int32) corev1.ContainerStatus {
		return corev1.ContainerStatus{Name: name, State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code, Reason: "Error"}}}
	}
	spec := corev1.PodSpec{Containers: []corev1.Container{{Name: "job"}, {Name: "sidecar"}}}
	for _, tc := range []struct {
		name   string
		status corev1.PodStatus
		phase  api.JobPhase
		exit   int
		reason string
	}{
		{"no phase yet", corev1.PodStatus{}, api.PhasePending, 0, ""},
		{"pending", corev1.PodStatus{Phase: corev1.PodPending}, api.PhasePending, 0, ""},
		{"running", corev1.PodStatus{Phase: corev1.PodRunning}, api.PhaseRunning, 0, ""},
		{"unknown keeps running", corev1.PodStatus{Phase: corev1.PodUnknown}, api.PhaseRunning, 0, ""},
		{"succeeded", corev1.PodStatus{Phase: corev1.PodSucceeded}, api.PhaseSucceeded, 0, ""},
		{"failed: the first non-zero exit code in spec order", corev1.PodStatus{Phase: corev1.PodFailed,
			ContainerStatuses: []corev1.ContainerStatus{term("sidecar", 9), term("job", 3)}}, api.PhaseFailed, 3, "container job"},
		{"failed in an init container", corev1.PodStatus{Phase: corev1.PodFailed,
			InitContainerStatuses: []corev1.ContainerStatus{term("init", 4)}}, api.PhaseFailed, 4, "container init"},
		{"refused by the kubelet: returned", corev1.PodStatus{Phase: corev1.PodFailed, Reason: "OutOfcpu", Message: "Node didn't have enough resource"},
			api.PhaseReturned, 0, "OutOfcpu"},
		{"evicted after exit 0: returned", corev1.PodStatus{Phase: corev1.PodFailed, Reason: "Evicted",
			ContainerStatuses: []corev1.ContainerStatus{term("job", 0)}}, api.PhaseReturned, 0, "Evicted"},
		// The kubelet kills the containers of a pod it evicts (node
		// pressure): their exit code is the kill's, not the job's.
		{"evicted, its containers killed: returned", corev1.PodStatus{Phase: corev1.PodFailed, Reason: "Evicted",
			Message:           "The node was low on resource: memory.",
			ContainerStatuses: []corev1.ContainerStatus{term("job", 137)}}, api.PhaseReturned, 0, "Evicted"},
		{"a disruption target (taint manager, pod GC, kubelet): returned", corev1.PodStatus{Phase: corev1.PodFailed,
			Conditions: []corev1.PodCondition{{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue,
				Reason: "DeletionByTaintManager", Message: "Taint manager: deleting due to NoExecute taint"}},
			ContainerStatuses: []corev1.ContainerStatus{term("job", 143)}}, api.PhaseReturned, 0, "DeletionByTaintManager"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			phase, exit, reason := executor.PhaseOf(&corev1.Pod{Spec: spec, Status: tc.status})
			require.Equal(t, tc.phase, phase)
			require.Equal(t, tc.exit, exit)
			require.Contains(t, reason, tc.reason)
		})
	}
}

// Every job id and attempt gives a valid pod name, always the same, and
// ids of the service's form (ULIDs) give distinct names.
func TestPodNameIsAValidDeterministicNameDistinctPerLease(t *testing.T) {
	params := gopter.DefaultTestParameters()
	params.MinSuccessfulTests = 500
	props := gopter.NewProperties(params)
	props.Property("valid and deterministic", prop.ForAll(func(id string, attempt int) bool {
		n := executor.PodName(id, attempt)
		return len(validation.IsDNS1123Subdomain(n)) == 0 && n == executor.PodName(id, attempt)
	}, gen.AnyString(), gen.IntRange(1, 1000)))
	ulid := gen.RegexMatch(`^[0-9A-Z]{26}$`)
	props.Property("distinct leases, distinct names", prop.ForAll(func(a, b string, x, y int) bool {
		return (a == b && x == y) == (executor.PodName(a, x) == executor.PodName(b, y))
	}, ulid, gen.OneGenOf(ulid, gen.AnyString()), gen.IntRange(1, 3), gen.IntRange(1, 3)))
	props.TestingRun(t)
}

func TestParsePodTemplateReadsYAMLAndJSONAndRefusesWithoutContainers(t *testing.T) {
	for _, doc := range []string{
		"kind: Pod\nmetadata:\n  labels: {team: ml}\nspec:\n  containers:\n  - name: main\n    image: alpine\n",
		`{"apiVersion": "v1", "kind": "Pod", "metadata": {"labels": {"team": "ml"}}, "spec": {"containers": [{"name": "main", "image": "alpine"}]}}`,
	} {
		p, err := executor.ParsePodTemplate([]byte(doc))
		require.NoError(t, err)
		require.Equal(t, "main", p.Spec.Containers[0].Name)
		pod, err := executor.BuildPod(p, "c1", "jobs", api.Lease{Job: "J1", Attempt: 2, Node: "n1", Requests: map[string]string{"cpu": "2", "nvidia.com/gpu": "1"}})
		require.NoError(t, err)
		require.Equal(t, "ml", pod.Labels["team"], "the template's labels are kept")
		require.Equal(t, "jobs", pod.Namespace)
		require.Equal(t, "1", pod.Spec.Containers[0].Resources.Limits.Name("nvidia.com/gpu", "").String(), "an extended resource's limit equals its request")
		_, cpuLimit := pod.Spec.Containers[0].Resources.Limits["cpu"]
		require.False(t, cpuLimit, "cpu is not limited")
	}
	for doc, field := range map[string]string{
		"kind: Pod\nspec: {}\n":                               "template.spec.containers",
		"kind: Deployment\nspec: {containers: [{name: a}]}\n": "template.kind",
		"kind: Pod\nspek: {}\n":                               "template",
	} {
		_, err := executor.ParsePodTemplate([]byte(doc))
		require.ErrorContains(t, err, field)
	}
}

func FuzzParsePodTemplate(f *testing.F) {
	f.Add([]byte("kind: Pod\nspec:\n  containers:\n  - name: main\n"))
	f.Add([]byte(`{"spec": {"containers": [{"name": "a", "resources": {"requests": {"cpu": "1"}}}]}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := executor.ParsePodTemplate(data)
		if err != nil {
			return
		}
		if len(p.Spec.Containers) == 0 {
			t.Fatal("a template without containers was accepted")
		}
		pod, err := executor.BuildPod(p, "c", "default", api.Lease{Job: "J", Attempt: 1, Node: "n", Requests: map[string]string{"cpu": "1"}})
		if err != nil || pod.Spec.NodeName != "n" || !strings.HasPrefix(pod.Name, "flotilla-") {
			t.Fatalf("BuildPod on an accepted template: %v", err)
		}
	})
}

// FailureReasonOf: an OOMKilled container is oom, an evicted pod evicted,
// a pod cut at its active deadline deadline; any other pod, and one that
// has not failed, none.
func TestFailureReasonOfClassifiesFailedPodsForRetryPolicies(t *testing.T) {
	killed := func(reason string, code int32) corev1.ContainerStatus {
		return corev1.ContainerStatus{Name: "job", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code, Reason: reason}}}
	}
	for _, tc := range []struct {
		name   string
		status corev1.PodStatus
		want   string
	}{
		{"OOMKilled container", corev1.PodStatus{Phase: corev1.PodFailed, ContainerStatuses: []corev1.ContainerStatus{killed("OOMKilled", 137)}}, "oom"},
		{"OOMKilled init container", corev1.PodStatus{Phase: corev1.PodFailed, InitContainerStatuses: []corev1.ContainerStatus{killed("OOMKilled", 137)}}, "oom"},
		{"evicted", corev1.PodStatus{Phase: corev1.PodFailed, Reason: "Evicted", ContainerStatuses: []corev1.ContainerStatus{killed("Error", 137)}}, "evicted"},
		{"deadline", corev1.PodStatus{Phase: corev1.PodFailed, Reason: "DeadlineExceeded"}, "deadline"},
		{"an exit code alone", corev1.PodStatus{Phase: corev1.PodFailed, ContainerStatuses: []corev1.ContainerStatus{killed("Error", 137)}}, ""},
		{"refused by the kubelet", corev1.PodStatus{Phase: corev1.PodFailed, Reason: "OutOfcpu"}, ""},
		{"running, once OOMKilled", corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{killed("OOMKilled", 137)}}, ""},
	} {
		require.Equal(t, tc.want, executor.FailureReasonOf(&corev1.Pod{Status: tc.status}), tc.name)
	}
}
