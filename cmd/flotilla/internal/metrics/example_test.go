package metrics_test

import (
	"bufio"
	"fmt"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/flotilla-sched/flotilla/cmd/flotilla/internal/metrics"
	"github.com/flotilla-sched/flotilla/server"
)

// ExampleNew records a cycle and a refused submission and scrapes them.
func ExampleNew() {
	m := metrics.New(func() *server.Server { return nil }, func() bool { return true })
	m.Cycle(&server.CycleReport{Leased: 3}, 20*time.Millisecond, nil)
	m.Observe("POST /v1/jobs", 400, time.Millisecond)
	w := httptest.NewRecorder()
	m.Handler().ServeHTTP(w, httptest.NewRequest("GET", "/metrics", nil))
	sc := bufio.NewScanner(w.Body)
	for sc.Scan() {
		for _, name := range []string{"flotilla_leases_total ", "flotilla_submit_rejections_total ", "flotilla_leader "} {
			if strings.HasPrefix(sc.Text(), name) {
				fmt.Println(sc.Text())
			}
		}
	}
	// Output:
	// flotilla_leader 1
	// flotilla_leases_total 3
	// flotilla_submit_rejections_total 1
}
