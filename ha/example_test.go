package ha_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"time"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/api"
	"github.com/flotilla-sched/flotilla/backend"
	"github.com/flotilla-sched/flotilla/backend/memory"
	"github.com/flotilla-sched/flotilla/client"
	"github.com/flotilla-sched/flotilla/ha"
	"github.com/flotilla-sched/flotilla/scheduler"
	"github.com/flotilla-sched/flotilla/server"
)

// Example runs two processes' nodes over one backend with a lease (the
// memory backend's; PostgreSQL's in `flotilla serve -db`). The first to
// start leads; the other forwards the API to it, so a client may use
// either address.
func Example() {
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	schema := flotilla.MustResourceSchema("cpu")
	shared := memory.New(schema)
	shared.SetLeaseClock(time.Now) // the database's now(), for PostgreSQL
	newServer := func(ctx context.Context, be backend.Backend, fence uint64) (*server.Server, error) {
		return server.New(ctx, server.Config{Scheduler: scheduler.DefaultConfig(schema), Backend: be,
			Clock: server.SystemClock{}, Fence: fence})
	}
	start := func(name string) (*ha.Node, *httptest.Server) {
		ts := httptest.NewUnstartedServer(nil)
		n, err := ha.New(ha.Config{Backend: shared, Leases: shared, NewServer: newServer,
			Holder: name, Advertise: "http://" + ts.Listener.Addr().String(), TTL: 3 * time.Second, Cycle: time.Second})
		if err != nil {
			panic(err)
		}
		if err := n.Start(ctx); err != nil {
			panic(err)
		}
		ts.Config.Handler = n.Handler()
		ts.Start()
		go n.Run(ctx)
		return n, ts
	}
	a, aURL := start("a")
	defer aURL.Close()
	b, bURL := start("b")
	defer bURL.Close()
	fmt.Println("a leads:", a.Leading(), "b leads:", b.Leading())

	// A queue created through the follower is created by the leader.
	cl, err := client.New(bURL.URL, "", nil)
	if err != nil {
		panic(err)
	}
	if _, err := cl.CreateQueue(ctx, api.Queue{Name: "A"}); err != nil {
		fmt.Println(err)
		return
	}
	qs, err := a.Current().ListQueues(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("the leader's queues:", len(qs), qs[0].Name)
	// Output:
	// a leads: true b leads: false
	// the leader's queues: 1 A
}
