package executor_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/flotilla-sched/flotilla/kube/executor"
)

// hungAPIServer accepts every request and never answers it; each request
// is announced on the returned channel.
func hungAPIServer(t *testing.T) (kubernetes.Interface, <-chan string) {
	t.Helper()
	got := make(chan string, 16)
	stop := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.Method + " " + r.URL.Path
		select {
		case <-r.Context().Done():
		case <-stop:
		}
	}))
	t.Cleanup(func() { close(stop); srv.Close() })
	kube, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL, QPS: -1})
	require.NoError(t, err)
	return kube, got
}

// The default lister (APILister) lists with the report's context: a hung
// apiserver holds a Step only until its context ends.
func TestAPIListerReturnsWhenTheReportsContextEnds(t *testing.T) {
	kube, got := hungAPIServer(t)
	ex := newExecutor(t, newService(t), "c1", kube)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := ex.Step(ctx)
		done <- err
	}()
	require.Equal(t, "GET /api/v1/pods", <-got, "the step lists the pods first")
	cancel()
	select {
	case err := <-done:
		require.ErrorIs(t, err, context.Canceled)
	case <-time.After(10 * time.Second):
		t.Fatal("the step is still waiting for the apiserver after its context ended")
	}
}

// APILister's lists return when their context ends.
func TestAPIListerListsReturnWhenTheirContextEnds(t *testing.T) {
	kube, got := hungAPIServer(t)
	l := executor.APILister{Kube: kube}
	for _, tc := range []struct {
		path string
		list func(context.Context) error
	}{
		{"GET /api/v1/nodes", func(ctx context.Context) error { _, err := l.Nodes(ctx, labels.Everything()); return err }},
		{"GET /api/v1/pods", func(ctx context.Context) error { _, err := l.Pods(ctx); return err }},
	} {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- tc.list(ctx) }()
		require.Equal(t, tc.path, <-got)
		cancel()
		select {
		case err := <-done:
			require.ErrorIs(t, err, context.Canceled, tc.path)
		case <-time.After(10 * time.Second):
			t.Fatalf("%s still waiting for the apiserver after its context ended", tc.path)
		}
	}
}
