package batch

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
)

// parallel runs f(0..n-1) with w workers and returns the first error.
func parallel(n, w int, f func(i int) error) error {
	var next atomic.Int64
	var first error
	var once sync.Once
	var wg sync.WaitGroup
	for range w {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				if err := f(i); err != nil {
					once.Do(func() { first = err })
					return
				}
			}
		}()
	}
	wg.Wait()
	return first
}

// BenchmarkLiveBindTenThousandPodsOnAThousandNodes creates 1,000 Node
// objects and 10,000 pending pods on the real apiserver and reports how
// fast the scheduler binds them all (issue 12's goal: within 15 s), as
// pods/s and the seconds to bind them all. It runs the whole world once
// whatever b.N is (run it with -benchtime 1x); FLOTILLA_KUBE_SPEED_PODS
// and _NODES scale it.
func BenchmarkLiveBindTenThousandPodsOnAThousandNodes(b *testing.B) {
	t := b
	nodes, pods := 1000, 10000
	if v, err := strconv.Atoi(os.Getenv("FLOTILLA_KUBE_SPEED_NODES")); err == nil {
		nodes = v
	}
	if v, err := strconv.Atoi(os.Getenv("FLOTILLA_KUBE_SPEED_PODS")); err == nil {
		pods = v
	}
	l := newLive(t)
	rc := *l.c.Config
	rc.QPS, rc.Burst = 10000, 20000
	cs, err := kubernetes.NewForConfig(&rc)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	err = parallel(nodes, 32, func(i int) error { return createNode(ctx, cs, fmt.Sprintf("n%04d", i), "32") })
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(cs, Config{})
	if err != nil {
		t.Fatal(err)
	}
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if err := s.Start(sctx); err != nil {
		t.Fatal(err)
	}
	created := time.Now()
	err = parallel(pods, 32, func(i int) error {
		p := testPod(fmt.Sprintf("p%05d", i), "1", nil)
		p.UID = ""
		_, err := cs.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("created %d nodes and %d pods (pods in %v)", nodes, pods, time.Since(created))
	if err := waitState(s, func(st *state) bool { return len(st.pods) >= pods }); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	bound, cycles := 0, 0
	for bound < pods && time.Since(start) < 60*time.Second {
		rep, err := s.Cycle(ctx)
		if err != nil {
			t.Fatal(err)
		}
		bound += rep.Bound
		cycles++
		if len(rep.Errors) > 0 {
			t.Logf("cycle %d: %d errors, first %v", cycles, len(rep.Errors), rep.Errors[0])
		}
	}
	d := time.Since(start)
	t.Logf("bound %d pods on %d nodes in %v over %d cycles: %.0f pods/s", bound, nodes, d, cycles, float64(bound)/d.Seconds())
	if bound < pods {
		t.Fatalf("bound %d of %d pods in %v", bound, pods, d)
	}
	b.ReportMetric(float64(bound)/d.Seconds(), "pods/s")
	b.ReportMetric(d.Seconds(), "s-to-bind-all")
}

// waitState polls the scheduler's state until cond holds, for at most 2 min.
func waitState(s *Scheduler, cond func(st *state) bool) error {
	return wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, 2*time.Minute, true, func(context.Context) (bool, error) {
		s.mu.Lock()
		defer s.mu.Unlock()
		return cond(&s.st), nil
	})
}

// BenchmarkLiveFairShareRebalanceEvictsAThousandPods fills 100 nodes of 20
// cpu with 2,000 pods of queue a, then submits 2,000 of queue b: the
// cycle that rebalances to fair share evicts 1,000 of a's pods; it
// reports how long the evictions took and the whole cycle (issue 12's
// goal: within 5 s). It runs the whole world once whatever b.N is (run it
// with -benchtime 1x).
func BenchmarkLiveFairShareRebalanceEvictsAThousandPods(b *testing.B) {
	t := b
	l := newLive(t)
	rc := *l.c.Config
	rc.QPS, rc.Burst = 10000, 20000
	cs, err := kubernetes.NewForConfig(&rc)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := parallel(100, 32, func(i int) error { return createNode(ctx, cs, fmt.Sprintf("n%03d", i), "20") }); err != nil {
		t.Fatal(err)
	}
	submit := func(q string, n int) {
		t.Helper()
		err := parallel(n, 32, func(i int) error {
			p := testPod(fmt.Sprintf("%s%04d", q, i), "1", nil)
			p.UID, p.Labels = "", map[string]string{"flotilla.dev/queue": q}
			_, err := cs.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{})
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	submit("a", 2000)
	s, err := New(cs, Config{})
	if err != nil {
		t.Fatal(err)
	}
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if err := s.Start(sctx); err != nil {
		t.Fatal(err)
	}
	running := func(n int) func(st *state) bool {
		return func(st *state) bool {
			c := 0
			for _, ps := range st.pods {
				if ps.kind == kindRunning {
					c++
				}
			}
			return c >= n
		}
	}
	if err := waitState(s, func(st *state) bool { return len(st.pods) >= 2000 }); err != nil {
		t.Fatal(err)
	}
	for bound := 0; bound < 2000; {
		rep, err := s.Cycle(ctx)
		if err != nil {
			t.Fatal(err)
		}
		bound += rep.Bound
	}
	if err := waitState(s, running(2000)); err != nil {
		t.Fatal(err)
	}
	submit("b", 2000)
	if err := waitState(s, func(st *state) bool { return len(st.pods) >= 4000 }); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	rep, err := s.Cycle(ctx)
	if err != nil {
		t.Fatal(err)
	}
	d := time.Since(start)
	t.Logf("fair-share rebalance: evicted %d pods (%d refused), evictions done after %v (%.0f evictions/s); the whole cycle, with %d conditions written, took %v",
		rep.Evicted, rep.EvictFailed, rep.EvictionsTook, float64(rep.Evicted)/rep.EvictionsTook.Seconds(), rep.Conditions, d)
	if rep.Evicted < 1000 {
		t.Fatalf("evicted %d pods, want 1000", rep.Evicted)
	}
	b.ReportMetric(rep.EvictionsTook.Seconds(), "s-evicting")
	b.ReportMetric(d.Seconds(), "s-cycle")
}

// BenchmarkLiveThousandJobsOfTenPods creates 1,000 Node objects and then
// 1,000 Indexed Jobs of 10 pods (each one gang), which a real Job
// controller turns into 10,000 pods, and reports how long after the last
// Job's creation every pod is bound (issue 21's goal: within 20 s), with
// the cycles' own time (deciding) apart from the API's (owner reads,
// binds). Scheduling runs cycle after cycle from before the first Job.
// FLOTILLA_KUBE_SPEED_JOBS and _NODES scale it; run with -benchtime 1x.
func BenchmarkLiveThousandJobsOfTenPods(b *testing.B) {
	t := b
	nodes, jobs, per := 1000, 1000, int32(10)
	if v, err := strconv.Atoi(os.Getenv("FLOTILLA_KUBE_SPEED_NODES")); err == nil {
		nodes = v
	}
	if v, err := strconv.Atoi(os.Getenv("FLOTILLA_KUBE_SPEED_JOBS")); err == nil {
		jobs = v
	}
	l := newLive(t)
	l.c.Controllers(t, "job")
	rc := *l.c.Config
	rc.QPS, rc.Burst = 10000, 20000
	cs, err := kubernetes.NewForConfig(&rc)
	if err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(&rc)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := parallel(nodes, 32, func(i int) error { return createNode(ctx, cs, fmt.Sprintf("n%04d", i), "32") }); err != nil {
		t.Fatal(err)
	}
	s, err := New(cs, Config{Dynamic: dyn})
	if err != nil {
		t.Fatal(err)
	}
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if err := s.Start(sctx); err != nil {
		t.Fatal(err)
	}
	var bound, cycles atomic.Int64
	var owners, decided, acted atomic.Int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		for sctx.Err() == nil {
			rep, err := s.Cycle(sctx)
			if err != nil {
				return
			}
			bound.Add(int64(rep.Bound))
			cycles.Add(1)
			owners.Add(int64(rep.Owners))
			decided.Add(int64(rep.Decided))
			acted.Add(int64(rep.Acted))
		}
	}()
	created := time.Now()
	err = parallel(jobs, 32, func(i int) error {
		_, err := cs.BatchV1().Jobs("default").Create(ctx, jobOf(fmt.Sprintf("j%04d", i), per, per, true, "1"), metav1.CreateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	last := time.Now()
	t.Logf("created %d nodes and %d Jobs of %d pods (Jobs in %v)", nodes, jobs, per, last.Sub(created))
	want := int64(jobs) * int64(per)
	var allCreated time.Duration // when the informer held every pod
	for bound.Load() < want && time.Since(last) < 3*time.Minute {
		if allCreated == 0 {
			s.mu.Lock()
			n := len(s.st.pods) // every pod here is a Job's (no kubelet ends one)
			s.mu.Unlock()
			if int64(n) >= want {
				allCreated = time.Since(last)
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	d := time.Since(last)
	t.Logf("the Job controller had created every pod %v after the last Job's creation (0: not before the last bind)", allCreated)
	cancel()
	<-done
	t.Logf("bound %d of %d pods %v after the last Job's creation (%v after the first), %d cycles: owners %v, deciding %v, acting %v in all",
		bound.Load(), want, d, time.Since(created), cycles.Load(), time.Duration(owners.Load()), time.Duration(decided.Load()), time.Duration(acted.Load()))
	if bound.Load() < want {
		t.Fatalf("bound %d of %d pods", bound.Load(), want)
	}
	b.ReportMetric(d.Seconds(), "s-after-last-job")
	b.ReportMetric(time.Duration(decided.Load()).Seconds(), "s-deciding")
	b.ReportMetric(time.Duration(acted.Load()).Seconds(), "s-acting")
}
