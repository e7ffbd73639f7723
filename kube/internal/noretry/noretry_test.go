package noretry

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
)

// throttling is an apiserver that answers every request 429 with
// Retry-After: 30, as an overloaded apiserver or a PodDisruptionBudget
// does, and counts the requests by method and path.
func throttling(t *testing.T) (kubernetes.Interface, func() map[string]int) {
	t.Helper()
	var mu sync.Mutex
	got := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got[r.Method+" "+r.URL.Path]++
		mu.Unlock()
		st := apierrors.NewTooManyRequests("slow down", 30).Status()
		st.APIVersion, st.Kind = "v1", "Status"
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Retry-After", "30")
		w.WriteHeader(http.StatusTooManyRequests)
		_ = json.NewEncoder(w).Encode(st)
	}))
	t.Cleanup(srv.Close)
	cs, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL, QPS: -1})
	if err != nil {
		t.Fatal(err)
	}
	return cs, func() map[string]int {
		mu.Lock()
		defer mu.Unlock()
		out := map[string]int{}
		for k, v := range got {
			out[k] = v
		}
		return out
	}
}

// calls are every call of the package, each with the request it makes.
func calls() []struct {
	req  string
	call func(context.Context, kubernetes.Interface) error
} {
	pod := "/api/v1/namespaces/ns/pods/p"
	return []struct {
		req  string
		call func(context.Context, kubernetes.Interface) error
	}{
		{"POST " + pod + "/eviction", func(ctx context.Context, cs kubernetes.Interface) error {
			return Evict(ctx, cs, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}})
		}},
		{"POST " + pod + "/binding", func(ctx context.Context, cs kubernetes.Interface) error {
			return Bind(ctx, cs, &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"},
				Target: corev1.ObjectReference{Kind: "Node", Name: "n1"}})
		}},
		{"PATCH " + pod + "/status", func(ctx context.Context, cs kubernetes.Interface) error {
			return PatchPodStatus(ctx, cs, "ns", "p", types.StrategicMergePatchType, []byte(`{"status":{}}`))
		}},
		{"DELETE " + pod, func(ctx context.Context, cs kubernetes.Interface) error {
			return DeletePod(ctx, cs, "ns", "p", metav1.DeleteOptions{})
		}},
		{"POST /api/v1/namespaces/ns/pods", func(ctx context.Context, cs kubernetes.Interface) error {
			return CreatePod(ctx, cs, "ns", &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}})
		}},
		{"GET " + pod, func(ctx context.Context, cs kubernetes.Interface) error {
			_, err := GetPod(ctx, cs, "ns", "p")
			return err
		}},
		{"PATCH /apis/batch/v1/namespaces/ns/jobs/j", func(ctx context.Context, cs kubernetes.Interface) error {
			return PatchJob(ctx, cs, "ns", "j", types.MergePatchType, []byte(`{"spec":{"suspend":false}}`))
		}},
	}
}

// Every call is one request: a 429 with Retry-After comes back at once as
// the error, its delay readable, where client-go would sleep 30 s and send
// it again, up to 10 times.
func TestEveryCallIsOneRequestWhateverItsRetryAfter(t *testing.T) {
	for _, c := range calls() {
		t.Run(c.req, func(t *testing.T) {
			cs, got := throttling(t)
			err := c.call(context.Background(), cs)
			if !apierrors.IsTooManyRequests(err) {
				t.Fatalf("error %v, want the 429", err)
			}
			if secs, ok := apierrors.SuggestsClientDelay(err); !ok || secs != 30 {
				t.Fatalf("suggested delay %d (%v), want 30", secs, ok)
			}
			if n := got(); len(n) != 1 || n[c.req] != 1 {
				t.Fatalf("requests %v, want exactly one %s", n, c.req)
			}
		})
	}
}

// A fake clientset, which has no REST client, is called through its typed
// client.
func TestAFakeClientsetIsCalledThroughItsTypedClient(t *testing.T) {
	for _, c := range calls() {
		t.Run(c.req, func(t *testing.T) {
			cs := fake.NewClientset(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}})
			_ = c.call(context.Background(), cs)
			if n := len(cs.Actions()); n != 1 {
				t.Fatalf("%d actions on the fake clientset, want 1: %v", n, cs.Actions())
			}
		})
	}
}
