package batch

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	typedpolicyv1 "k8s.io/client-go/kubernetes/typed/policy/v1"
	"k8s.io/client-go/rest"

	"github.com/flotilla-sched/flotilla/kube/kubeconv"
)

// restSplit is a fake clientset (the informers read it) whose REST
// clients are real ones on a test apiserver: the writes the scheduler
// makes through them reach that server.
type restSplit struct {
	*fake.Clientset
	core   coreREST
	policy policyREST
}

func (c *restSplit) CoreV1() typedcorev1.CoreV1Interface       { return c.core }
func (c *restSplit) PolicyV1() typedpolicyv1.PolicyV1Interface { return c.policy }

type coreREST struct {
	typedcorev1.CoreV1Interface
	rc rest.Interface
}

func (c coreREST) RESTClient() rest.Interface { return c.rc }

type policyREST struct {
	typedpolicyv1.PolicyV1Interface
	rc rest.Interface
}

func (c policyREST) RESTClient() rest.Interface { return c.rc }

// throttled is a scheduler whose writes reach an apiserver that answers
// 429 with Retry-After: 30 (an overloaded apiserver, a budget), except
// the requests ok accepts (201). Requests are counted by method and path.
// A request made a second time within one cycle (client-go's retry)
// cancels the cycle's context, so that code that retries fails the test
// at once instead of sleeping.
type throttled struct {
	t   *testing.T
	s   *Scheduler
	fc  *fake.Clientset
	mu  sync.Mutex
	got map[string]int
	// cycleGot are the requests of the running cycle.
	cycleGot map[string]int
	cancel   context.CancelFunc
}

func newThrottled(t *testing.T, ok func(req string, n int) bool, objs ...runtime.Object) *throttled {
	t.Helper()
	th := &throttled{t: t, got: map[string]int{}, fc: fake.NewClientset(objs...)}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		req := r.Method + " " + r.URL.Path
		th.mu.Lock()
		th.got[req]++
		n := th.got[req]
		th.cycleGot[req]++
		if th.cycleGot[req] > 1 && th.cancel != nil {
			th.cancel()
		}
		th.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if ok != nil && ok(req, n) {
			w.WriteHeader(http.StatusCreated)
			_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Success"}`))
			return
		}
		st := apierrors.NewTooManyRequests("slow down", 30).Status()
		st.APIVersion, st.Kind = "v1", "Status"
		w.Header().Set("Retry-After", "30")
		w.WriteHeader(http.StatusTooManyRequests)
		_ = json.NewEncoder(w).Encode(st)
	}))
	t.Cleanup(srv.Close)
	real, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL, QPS: -1})
	if err != nil {
		t.Fatal(err)
	}
	cs := &restSplit{Clientset: th.fc,
		core:   coreREST{CoreV1Interface: th.fc.CoreV1(), rc: real.CoreV1().RESTClient()},
		policy: policyREST{PolicyV1Interface: th.fc.PolicyV1(), rc: real.PolicyV1().RESTClient()}}
	th.s, err = New(cs, Config{Now: func() time.Time { return time.Unix(1000, 0) }})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	if err := th.s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	return th
}

// cycle runs a cycle and returns its report and the requests it made.
func (th *throttled) cycle() (*Report, map[string]int) {
	th.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	th.mu.Lock()
	th.cycleGot, th.cancel = map[string]int{}, cancel
	th.mu.Unlock()
	rep, err := th.s.Cycle(ctx)
	if err != nil {
		th.t.Fatal(err)
	}
	th.mu.Lock()
	defer th.mu.Unlock()
	got := th.cycleGot
	th.cycleGot, th.cancel = map[string]int{}, nil
	return rep, got
}

// Every write of a cycle (binding, a gang's rollback delete, a condition,
// an eviction) is one request: an answer asking to retry after 30 s fails
// the call at once, and the pod is dealt with as after any failed call
// (pending again, its condition written by a later cycle).
func TestEveryWriteOfACycleIsOneRequestWhateverItsRetryAfter(t *testing.T) {
	const pods = "/api/v1/namespaces/default/pods/"
	gang := func(p *corev1.Pod) {
		p.Annotations = map[string]string{kubeconv.AnnotationGangID: "g", kubeconv.AnnotationGangCardinality: "2"}
	}
	low := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "low"}, Value: 10}
	high := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "high"}, Value: 1000}
	firstBinding := func(req string, n int) bool {
		return strings.HasSuffix(req, "/binding") && strings.Contains(req, "/g-0/")
	}
	for _, tc := range []struct {
		name string
		ok   func(string, int) bool
		objs []runtime.Object
		// want are the requests of the first cycle, each made once.
		want  []string
		check func(t *testing.T, rep *Report, th *throttled)
	}{
		{"binding", nil, []runtime.Object{testNode("n1", "4"), testPod("a", "1", nil)},
			[]string{"POST " + pods + "a/binding"},
			func(t *testing.T, rep *Report, th *throttled) {
				if rep.BindFailed != 1 || rep.Bound != 0 {
					t.Fatalf("bound %d, failed %d: want a failed", rep.Bound, rep.BindFailed)
				}
				if _, got := th.cycle(); got["POST "+pods+"a/binding"] != 1 {
					t.Fatalf("next cycle's requests %v: want a bound again", got)
				}
			}},
		{"a gang's binding, then its rollback", firstBinding,
			[]runtime.Object{testNode("n1", "1"), testNode("n2", "1"), testPod("g-0", "1", gang), testPod("g-1", "1", gang)},
			[]string{"POST " + pods + "g-0/binding", "POST " + pods + "g-1/binding", "DELETE " + pods + "g-0"},
			func(t *testing.T, rep *Report, th *throttled) {
				if rep.BindFailed != 2 || len(rep.Errors) != 1 || !strings.Contains(rep.Errors[0].Error(), "delete default/g-0") {
					t.Fatalf("failed %d, errors %v: want the gang failed and the delete's error", rep.BindFailed, rep.Errors)
				}
			}},
		{"condition", nil, []runtime.Object{testNode("n1", "4"), testPod("huge", "64", nil)},
			[]string{"PATCH " + pods + "huge/status"},
			func(t *testing.T, rep *Report, th *throttled) {
				if rep.Conditions != 0 || len(rep.Errors) != 1 {
					t.Fatalf("conditions %d, errors %v: want the patch failed", rep.Conditions, rep.Errors)
				}
				if _, got := th.cycle(); got["PATCH "+pods+"huge/status"] != 1 {
					t.Fatalf("next cycle's requests %v: want the condition written again", got)
				}
			}},
		{"eviction", nil, []runtime.Object{low, high, testNode("n1", "2"),
			testPod("victim", "2", func(p *corev1.Pod) { p.Spec.PriorityClassName = "low"; p.Spec.NodeName = "n1" }),
			testPod("urgent", "2", func(p *corev1.Pod) { p.Spec.PriorityClassName = "high" })},
			[]string{"POST " + pods + "victim/eviction", "PATCH " + pods + "urgent/status"},
			func(t *testing.T, rep *Report, th *throttled) {
				if rep.EvictFailed != 1 {
					t.Fatalf("evictions failed %d, want 1", rep.EvictFailed)
				}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			th := newThrottled(t, tc.ok, tc.objs...)
			rep, got := th.cycle()
			want := map[string]int{}
			for _, r := range tc.want {
				want[r] = 1
			}
			if len(got) != len(want) {
				t.Fatalf("requests %v, want each of %v once", got, tc.want)
			}
			for r, n := range got {
				if want[r] != n {
					t.Fatalf("requests %v, want each of %v once", got, tc.want)
				}
			}
			tc.check(t, rep, th)
		})
	}
}
